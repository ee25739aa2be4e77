//! leasesim-retention: the retention worker of design 000, as a system of the harness.
//!
//! Several replicas run a retention worker; only the current lease holder may delete old rows;
//! the lease service rotates a fencing token on every renewal and the record store rejects
//! stale tokens. This crate is everything the harness needs of that system, and nothing of the
//! shared layers:
//!
//! | module | what |
//! |---|---|
//! | [`events`] | the vocabulary: requests, applies, answers, notes (terms, revocations, backlog) |
//! | [`authority`], [`store`], [`services`] | the lease authority and the record store, applied at the apply instant |
//! | [`ports`] | the worker's ports on the simulated world, `WorkerUnderTest`, the factories |
//! | [`driver`] | a replica's loop calling `run()`, the authority's revocations, the backlog check |
//! | [`settings`] | the system's scenario keys, and what a swarm run draws from them |
//! | [`bounds`] | the checks across keys that refuse a scenario no correct worker could pass |
//! | [`checkers`] | one checker per invariant, the "sometimes" situations, the contract audit |
//! | [`defects`] | the defective workers, each the correct engine with one defect |
//! | [`render`] | how its events read in a trace |
//!
//! The production worker core is its own crate (`retention-worker`, `crates/retention-worker`)
//! and depends only on `futures` and its ports.

pub mod authority;
pub mod bounds;
pub mod checkers;
pub mod defects;
pub mod driver;
pub mod events;
pub mod ports;
pub mod render;
pub mod services;
pub mod settings;
pub mod store;

use futures::future::LocalBoxFuture;
use leasesim_sim::{ScenarioError, System};

pub use events::Retention;
pub use ports::{
    AnyWorker, SimClock, SimLeases, SimRecords, SimTasks, SimWorker, WorkerFactory, WorkerPorts,
    WorkerUnderTest, correct_worker, correct_worker_of,
};
pub use settings::WorkerDraw;

/// A scenario of the retention system.
pub type Scenario = leasesim_sim::Scenario<Retention>;
/// One retention run's drawn faults.
pub type Profile = leasesim_sim::FaultProfile<Retention>;

/// Parses a retention scenario from `text` (it must say `system = "retention"`).
pub fn parse_scenario(name: &str, source: &str, text: &str) -> Result<Scenario, ScenarioError> {
    leasesim_sim::scenario::parse_scenario(name, source, text)
}

/// Reads a retention scenario file.
pub fn load_scenario(path: &std::path::Path) -> Result<Scenario, ScenarioError> {
    leasesim_sim::scenario::load_scenario(path)
}

/// The retention system: its name; its components live in [`settings`], [`checkers`],
/// [`services`], [`driver`], [`ports`] and [`render`].
impl System for Retention {
    const NAME: &'static str = "retention";
    const DESCRIPTION: &'static str =
        "design 000: a lease-fenced worker deleting old rows in capped batches (fencing tokens)";
}

/// A boxed `run()` future of a worker (what [`WorkerUnderTest::run`] returns).
pub type RunFuture<'a> =
    LocalBoxFuture<'a, Result<retention_worker::TermReport, retention_worker::RunError>>;
