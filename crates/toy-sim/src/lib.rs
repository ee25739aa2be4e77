//! The toy system: a fenced counter, written outside the harness as a team writes its own.
//!
//! Replicas take turns at a counter. A replica *claims* it (the service grants a claim, with a
//! strictly increasing token and an expiry, when no claim is live), then *bumps* it once with
//! that token; the service applies a bump only under the live claim's token (the *fence*) and
//! answers `fenced` otherwise. Its own fault, `[faults] claim_lost`, drops the live claim as a
//! bump is applied.
//!
//! This crate is the smallest complete example of a system (see `docs/adding-a-system.md`):
//! every component trait of `leasesim_sim::System`, run through exactly the generic paths the
//! harness's own systems take (scenario loader, fault layer, runner, trace, shrink, the
//! library's `check_system`), and, through `leasesim_cli::main_with`, the whole command: its
//! binary `toy-leasesim` lists, fuzzes, replays, shrinks, detects and draws the toy next to
//! the built-in systems (`cargo run -p leasesim-toy -- fuzz --system toy`).
//!
//! | module | what | in a real system |
//! |---|---|---|
//! | [`events`] | the vocabulary: ops, requests, applies, answers, notes | `events.rs` |
//! | [`settings`] | `[claim]`, `[faults] claim_lost`, and what a run draws | `settings.rs` |
//! | [`services`] | the counter, applied at the apply instant | `services.rs` (+ one file per service) |
//! | [`worker`] | the worker core (ports trait, `run`, `stop`) and its defect | the production crate + `defects/` |
//! | [`ports`] | the port on the world, the worker trait, the factories, the driver | `ports.rs`, `driver.rs`, `defects/mod.rs` |
//! | [`checkers`] | invariants, situations, checkers, coverage | `checkers/` |
//! | [`render`] | trace texts, the annotator, timeline strokes | `render.rs` |

pub mod checkers;
pub mod events;
pub mod ports;
pub mod render;
pub mod services;
pub mod settings;
pub mod worker;

use leasesim_sim::System;

pub use events::Toy;

/// The toy's scenarios, `(name, text)`, as a registry embeds them.
pub const SCENARIOS: &[(&str, &str)] = &[("counter", include_str!("../scenarios/counter.toml"))];

/// The toy system: its name; its components live in [`settings`], [`checkers`],
/// [`services`], [`ports`] and [`render`].
impl System for Toy {
    const NAME: &'static str = "toy";
    const DESCRIPTION: &'static str = "the template: a counter bumped under a fenced claim";
}
