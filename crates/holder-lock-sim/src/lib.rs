//! leasesim-holder-lock: the holder-token claim of design 004, as a system of the harness.
//!
//! A job runs under a claim in a volatile key-value store: a key created only if absent,
//! with a lifetime after which the store forgets it. Releasing the claim by deleting the key
//! by name can free a claim somebody else took after the first one's deadline passed mid-job,
//! and let a third worker in. The production core (`holder-lock-worker`) writes a fresh,
//! unguessable holder token with every claim and deletes only while the key still holds it,
//! in one step on the store's side. This crate is everything the harness needs of that
//! system:
//!
//! | module | what |
//! |---|---|
//! | [`events`] | the vocabulary: requests, what the store applied, answers, notes (attempts, job steps, lifetimes' ends) |
//! | [`store`], [`services`] | the volatile store with lifetimes on its own clock, its watcher, the token draws |
//! | [`ports`] | the worker's ports on the simulated world, `WorkerUnderTest`, the factories |
//! | [`driver`] | a replica's loop calling `run()` |
//! | [`settings`] | the system's scenario keys, and what a swarm run draws from them |
//! | [`bounds`] | the checks across keys that refuse a scenario no correct worker could pass |
//! | [`checkers`] | one checker per invariant, the "sometimes" situations, the contract audit |
//! | [`defects`] | the defective workers, each the correct engine with one defect |
//! | [`render`] | how its events read in a trace and draw on a timeline |

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

use leasesim_sim::{ScenarioError, System};

pub use events::HolderLock;
pub use ports::{
    AnyWorker, SimClock, SimJob, SimStore, SimTokens, SimWorker, WorkerFactory, WorkerPorts,
    WorkerUnderTest, correct_worker, correct_worker_of,
};

/// A scenario of the holder-lock system.
pub type Scenario = leasesim_sim::Scenario<HolderLock>;
/// One holder-lock run's drawn faults.
pub type Profile = leasesim_sim::FaultProfile<HolderLock>;

/// Parses a holder-lock scenario from `text` (it must say `system = "holder-lock"`).
pub fn parse_scenario(name: &str, source: &str, text: &str) -> Result<Scenario, ScenarioError> {
    leasesim_sim::scenario::parse_scenario(name, source, text)
}

/// Reads a holder-lock scenario file.
pub fn load_scenario(path: &std::path::Path) -> Result<Scenario, ScenarioError> {
    leasesim_sim::scenario::load_scenario(path)
}

/// The holder-lock system: its name; its components live in [`settings`], [`checkers`],
/// [`services`], [`driver`], [`ports`] and [`render`].
impl System for HolderLock {
    const NAME: &'static str = "holder-lock";
    const DESCRIPTION: &'static str =
        "design 004: a job run under a holder-token claim in a volatile key-value store";
}
