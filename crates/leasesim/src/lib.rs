//! leasesim: deterministic simulation testing for lease-fenced workers.
//!
//! Your worker runs inside a single-threaded executor with a virtual clock, against simulated
//! services that inject faults (latency, lost replies, pauses, clock skew, stops); every run
//! is one seed, replayed byte for byte; named invariants judge each run; a failure comes back
//! with its seed, a shrunk trace and the line that replays it.
//!
//! Terminology:
//! - *system*: one protocol the harness knows: its services, events, invariants and
//!   defective workers. Four are built in, one module each: [`retention`] (design 000, a
//!   lease-fenced batch deleter), [`work_items`] (001, claimed work items), [`reservations`]
//!   (002, reservation expiry), [`holder_lock`] (004, a job under a holder-token claim).
//!   (The design documents the built-in systems implement are *designs*.)
//! - *scenario*: a TOML description of one system's world and its faults: a builtin name
//!   (`"steady"`) or a file (`scenarios/SYSTEM/` holds the builtins).
//! - *worker*: the code under test: `correct` (the system's production core), a defective
//!   worker the system ships, or your own type implementing [`WorkerUnderTest`].
//! - *seed*: one run. The same scenario, worker, strategy and seed give the same run, byte for
//!   byte, on every machine.
//! - *check*: many seeds of one scenario against one worker, from a test.
//!
//! # Checking a worker
//!
//! Every system module has the same shape: its ports and their simulated implementations,
//! `check` (your worker), `check_builtin` (one of the system's own by name),
//! `correct_worker_of` (the production core), and a `prelude` with all of it.
//!
//! ```
//! use leasesim::retention::prelude::*;
//!
//! // Your worker is built from each replica's ports; here, the production core.
//! let summary = check("steady", correct_worker_of).seeds(3);
//! assert_eq!(summary.seeds, 3);
//!
//! // A defective worker the system ships, caught at its first seed:
//! let error = check_builtin("slow-deletes", "stale-release").try_seeds(5).unwrap_err();
//! let failure = error.into_failure().expect("a seed failed");
//! assert_eq!(failure.outcome.label(), "release-latest");
//! assert!(failure.replay.contains("leasesim replay --scenario slow-deletes --seed 0"));
//! ```
//!
//! `seeds(n)` panics with the invariant's sentence and how to rerun the seed;
//! [`Check::try_seeds`] returns it as a [`CheckError`] and never panics: bad input (a scenario
//! or worker name, a count of seeds, an environment variable) is [`CheckError::Input`].
//! `LEASESIM_SEED` (and `LEASESIM_SCENARIO`) rerun one seed inside `cargo test`.
//!
//! # What a worker must keep to
//!
//! A seed must make one run. A worker waits, decides and draws only through its ports and
//! the futures it is given: no `futures::select!` (it picks among ready branches at random;
//! `select_biased!` does not), no iteration over `HashMap`/`HashSet` whose order reaches a
//! decision, no wall clock, no OS randomness, no threads, no state kept between runs
//! (statics). A check runs the first seed, every 50th and every failing one twice and
//! compares the runs; two that differ end the check with [`CheckError::Nondeterministic`],
//! naming the first event where they part.
//!
//! No system is the root's: a check names its system in its path
//! (`leasesim::retention::check`), so a scenario name never silently means another system's.
//! The root holds what every system shares: [`Check`] and its results, [`Strategy`],
//! [`UsageError`], the component traits a system implements, and [`check_system`] for a
//! system of your own (docs/adding-a-system.md).
//!
//! # Timing envelopes
//!
//! [`envelope::measure`] maps where a worker's invariants hold as one or two scenario keys
//! vary (a lease's lifetime, its renewal interval, a store's latency, a pause's length): the
//! same seeds at each point, a search for the boundary, each point's share with its interval,
//! and a counterexample at the edge. The command is `leasesim envelope`
//! (docs/envelopes.md).
//!
//! # Features
//!
//! None by default: a crate whose only dependency is `leasesim` builds no database client,
//! tokio or command-line parser. `stores` (the systems' store ports on real databases,
//! bundled SQLite), `real` (real runs on tokio), `postgres`, `redis`, `conformance` (your
//! store adapter against the model), `json` (JSON lines traces).
//!
//! The command (`leasesim fuzz`, `replay`, `shrink`, `detect`) is the `leasesim-cli` package.
//! Modules this documentation does not list are its plumbing and the harness's own tests',
//! not API.

#[doc(hidden)]
pub mod catalog;
#[doc(hidden)]
pub mod choices;
#[doc(hidden)]
pub mod detect;
pub mod envelope;
#[doc(hidden)]
pub mod error;
#[doc(hidden)]
pub mod faildb;
#[doc(hidden)]
pub mod fuzz;
pub mod holder_lock;
#[doc(hidden)]
pub mod html;
#[doc(hidden)]
pub mod overrides;
#[doc(hidden)]
#[cfg(feature = "real")]
pub mod real_world;
pub mod registry;
pub mod reservations;
pub mod retention;
pub mod runner;
#[doc(hidden)]
pub mod shrink;
#[doc(hidden)]
pub mod systems;
pub mod testkit;
#[doc(hidden)]
pub mod trace;
pub mod work_items;

mod check;

pub use check::{
    Check, CheckError, CheckFailure, CheckSummary, IntoScenario, Nondeterminism, check_builtin,
    check_system,
};
pub use error::UsageError;
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
pub use leasesim_rt::Strategy;
/// A system and its components; `Render` is how its events read and draw.
pub use leasesim_sim::{Apply, Checks, Drive, Setup, System, WorkerOf, WorkerUnderTest, Workers};
/// The systems' store ports on real databases, and the models behind them
/// (`leasesim-stores`, feature `stores`): implement a port for your store to check it with
/// the conformance drivers (feature `conformance`).
#[cfg(feature = "stores")]
pub use leasesim_stores as stores;
pub use leasesim_timeline::Render;
pub use registry::Registry;
pub use runner::Outcome;

/// A scenario of system `S` (each system's module names its own: `retention::Scenario`, ...).
pub type Scenario<S> = leasesim_sim::Scenario<S>;
