//! leasesim: deterministic simulation testing for lease-fenced workers.
//!
//! Terminology:
//! - *system*: one family member the harness knows (the retention worker, ...): its services,
//!   events, checkers and defective workers, behind [`leasesim_sim::System`]. The registry is
//!   [`systems::SYSTEMS`].
//! - *scenario*: a TOML description of one system's world and its faults (`scenarios/SYSTEM/`).
//! - *worker*: the code under test: `correct` (the system's production core), a defective
//!   worker, or your own type implementing the system's worker trait.
//! - *seed*: one run. The same scenario, worker, strategy and seed give the same run, byte for
//!   byte, on every machine. (The design documents the built-in systems implement are
//!   *designs*: retention is design 000, work-items 001, reservations 002, holder-lock 004.)
//! - *check*: many seeds of one scenario against one worker, from a test:
//!
//! ```no_run
//! # use leasesim::{SimWorker, WorkerPorts};
//! # fn my_worker(ports: WorkerPorts) -> SimWorker { leasesim::correct_worker_of(ports) }
//! leasesim::check("steady", my_worker).seeds(1_000);
//! ```
//!
//! A failing check panics with the invariant's sentence and a replay command. Set
//! `LEASESIM_SEED` (and `LEASESIM_SCENARIO`) to replay one seed inside `cargo test`.

pub mod catalog;
pub mod choices;
pub mod detect;
pub mod error;
pub mod faildb;
pub mod fuzz;
pub mod holder_lock;
pub mod html;
pub mod overrides;
pub mod reservations;
pub mod retention;
pub mod runner;
pub mod shrink;
pub mod systems;
pub mod testkit;
pub mod trace;
pub mod work_items;

mod check;

pub use check::{Check, CheckFailure, CheckSummary, IntoScenario, check, check_system};
/// The `futures` crate the ports are written with (`select`, `join`, channels), so a worker
/// needs no other dependency.
pub use futures;
/// Conformance drivers: your store adapter against the model your worker was fuzzed against
/// (`leasesim-conformance`, feature `conformance`: it brings proptest into the build).
#[cfg(feature = "conformance")]
pub use leasesim_conformance as conformance;
/// Real runs of a system's worker on tokio against a real store (`leasesim-real`, feature
/// `real`).
#[cfg(feature = "real")]
pub use leasesim_real as real;
pub use leasesim_retention::{
    AnyWorker, Retention, SimWorker, WorkerPorts, WorkerUnderTest, correct_worker_of,
};
pub use leasesim_rt::Strategy;
/// A system and its components; `Render` is how its events read and draw.
pub use leasesim_sim::{Apply, Checks, Drive, Setup, System, Workers};
/// The systems' store ports on real databases, and the models behind them
/// (`leasesim-stores`, feature `stores`): implement a port for your store to check it with
/// the conformance drivers (feature `conformance`).
#[cfg(feature = "stores")]
pub use leasesim_stores as stores;
pub use leasesim_timeline::Render;
pub use runner::Outcome;

/// A scenario of the retention system.
pub type Scenario = leasesim_retention::Scenario;
