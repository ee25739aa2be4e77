//! leasesim-work-items: claimed work items (design 001) as a system of the harness.
//!
//! A nightly cleanup run is expanded into small items. Replicas claim an item with a
//! conditional write that changes its owner and takes the next fencing token; each chunk of
//! the item's local effect, its completion mark, its renewals and its release are fenced by
//! that token; its external effect goes to a provider under an idempotency key derived from
//! the item. A worker that loses its lease may finish what it is doing, but it must not
//! commit. This crate is everything the harness needs of that system:
//!
//! | module | what |
//! |---|---|
//! | [`events`] | the vocabulary: requests (the unsafe primitives too), applies, answers, notes |
//! | [`store`], [`provider`], [`services`] | the item store and the provider, applied at the apply instant |
//! | [`ports`] | the worker's ports on the simulated world, `WorkerUnderTest`, the factories |
//! | [`driver`] | a replica's loop calling `run()`, the tally as the liveness phase ends |
//! | [`settings`] | the system's scenario keys, and what a run draws from them |
//! | [`bounds`] | the check across keys that refuses a scenario no correct worker could pass |
//! | [`checkers`] | one checker per invariant, the "sometimes" situations, the contract audit |
//! | [`defects`] | the defective workers, each the correct engine with one defect |
//! | [`render`] | how its events read in a trace and draw on a timeline |
//!
//! The production worker core is its own crate (`work-items-worker`) and depends only on
//! `futures` and its ports.

pub mod bounds;
pub mod checkers;
pub mod defects;
pub mod driver;
pub mod events;
pub mod ports;
pub mod provider;
pub mod render;
pub mod services;
pub mod settings;
pub mod store;

use leasesim_sim::{ScenarioError, System};

pub use events::WorkItems;
pub use ports::{
    AnyWorker, SimClock, SimProvider, SimStore, SimWorker, UnsafeStore, WorkerFactory, WorkerPorts,
    WorkerUnderTest, correct_worker, correct_worker_of,
};
/// The production worker core this system checks.
pub use work_items_worker;

/// A scenario of the work-items system.
pub type Scenario = leasesim_sim::Scenario<WorkItems>;
/// One work-items run's drawn faults.
pub type Profile = leasesim_sim::FaultProfile<WorkItems>;

/// Parses a work-items scenario from `text` (it must say `system = "work-items"`).
pub fn parse_scenario(name: &str, source: &str, text: &str) -> Result<Scenario, ScenarioError> {
    leasesim_sim::scenario::parse_scenario(name, source, text)
}

/// Reads a work-items scenario file.
pub fn load_scenario(path: &std::path::Path) -> Result<Scenario, ScenarioError> {
    leasesim_sim::scenario::load_scenario(path)
}

/// The work-items system: its name; its components live in [`settings`], [`checkers`],
/// [`services`], [`driver`], [`ports`] and [`render`].
impl System for WorkItems {
    const NAME: &'static str = "work-items";
    const DESCRIPTION: &'static str = "design 001: workers claim small cleanup items with a fenced lease and commit \
         only while they own them (apply_if_owner, mark_done_if_owner, idempotent provider)";
}
