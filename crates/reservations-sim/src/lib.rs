//! leasesim-reservations: reservation expiry (design 002) as a system of the harness.
//!
//! Support agents place holds with a deadline and consume some of them at any moment; several
//! worker nodes claim the due holds from the store and expire them with a guarded transition
//! (held and due becomes expired, nothing else), retrying by a policy, releasing every claim,
//! and recording what they give up on as dead letters. A node may die after the update and
//! before the release: its claims expire, and other nodes take the holds over.
//!
//! | module | what |
//! |---|---|
//! | [`events`] | the vocabulary: requests (with the primitives), applies, answers, notes |
//! | [`store`], [`services`] | the store (holds, claims, the guarded transition), applied at the apply instant |
//! | [`agents`] | support agents placing and consuming holds (a world task) |
//! | [`ports`] | the worker's ports on the simulated world, the primitives, `WorkerUnderTest` |
//! | [`driver`] | a replica's loop calling `run()`, kills and restarts, the metrics note |
//! | [`settings`] | the system's scenario keys, and what a swarm run draws from them |
//! | [`bounds`] | what a run can do: the bounds no correct worker could keep are refused |
//! | [`checkers`] | one checker per invariant, the "sometimes" situations, the contract audit |
//! | [`defects`] | the defective workers, each the correct engine with one defect |
//! | [`render`] | how its events read in a trace and draw on a timeline |
//!
//! The production worker core is its own crate (`reservations-worker`) and depends only on
//! `futures` and its ports.

pub mod agents;
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

pub use events::Reservations;
pub use ports::{
    AnyWorker, RawStore, SimClock, SimLetters, SimStore, SimTokens, SimWorker, WorkerFactory,
    WorkerPorts, WorkerUnderTest, correct_worker, correct_worker_of,
};

/// A scenario of the reservation system.
pub type Scenario = leasesim_sim::Scenario<Reservations>;
/// One reservation run's drawn faults.
pub type Profile = leasesim_sim::FaultProfile<Reservations>;

/// Parses a reservation scenario from `text` (it must say `system = "reservations"`).
pub fn parse_scenario(name: &str, source: &str, text: &str) -> Result<Scenario, ScenarioError> {
    leasesim_sim::scenario::parse_scenario(name, source, text)
}

/// Reads a reservation scenario file.
pub fn load_scenario(path: &std::path::Path) -> Result<Scenario, ScenarioError> {
    leasesim_sim::scenario::load_scenario(path)
}

/// The reservation system: its name; its components live in [`settings`], [`checkers`],
/// [`services`], [`driver`], [`ports`] and [`render`].
impl System for Reservations {
    const NAME: &'static str = "reservations";
    const DESCRIPTION: &'static str = "design 002: workers claim due holds and expire them with a guarded \
         transition, a retry policy and dead letters, while agents consume holds";
}
