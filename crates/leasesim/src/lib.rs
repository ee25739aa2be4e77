//! leasesim: deterministic simulation testing for lease-fenced cleanup workers.
//!
//! Terminology:
//! - *scenario*: a TOML description of the world and its faults (`scenarios/`).
//! - *worker*: the system under test: `correct` (the production core), a defective worker,
//!   or your own type implementing [`WorkerUnderTest`].
//! - *seed*: one run. The same scenario, worker, strategy and seed give the same run, byte for
//!   byte, on every machine.
//! - *check*: many seeds of one scenario against one worker, from a test:
//!
//! ```no_run
//! # use leasesim::{WorkerPorts, WorkerUnderTest};
//! # fn my_worker(ports: WorkerPorts) -> impl WorkerUnderTest { leasesim::correct_worker_of(ports) }
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
pub mod overrides;
pub mod runner;
pub mod shrink;
pub mod timeline;
pub mod trace;

mod check;

pub use check::{Check, CheckFailure, CheckSummary, IntoScenario, check};
pub use leasesim_check::{Invariant, Violation};
pub use leasesim_rt::Strategy;
pub use leasesim_world::{Scenario, SimWorker, WorkerPorts, WorkerUnderTest};
pub use runner::Outcome;

/// The production worker built on simulated ports (handy as a starting point and in docs).
pub fn correct_worker_of(ports: WorkerPorts) -> SimWorker {
    lease_worker::RetentionWorker::new(
        ports.owner_id,
        ports.config,
        ports.clock,
        ports.leases,
        ports.records,
    )
    .expect("scenario loading validated the worker configuration")
}
