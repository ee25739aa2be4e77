//! The work-items system (design 001): everything a test needs to write a work-item worker of
//! its own and check it, with `leasesim` as its only dependency.
//!
//! A worker is built from [`WorkerPorts`] (the replica's clock, item store and provider,
//! and **the settings the run judges it against**: `ports.config`) and implements
//! [`WorkerUnderTest`]: one pass over the claimable items per `run()`, and `stop()`. The port
//! traits ([`Clock`], [`Store`], [`Provider`]) are the production core's; their simulated
//! implementations ([`SimClock`], [`SimStore`], [`SimProvider`]) say what the simulated
//! services do at the instant a request is applied. `use leasesim::work_items::prelude::*;`
//! brings all of it into scope, with [`check`].
//!
//! ```
//! use leasesim::work_items::prelude::*;
//!
//! // The production core passes; a worker of your own goes where `correct_worker_of` is.
//! check("items-steady", correct_worker_of).seeds(2);
//! // One of the system's defective workers is caught, with the line that replays it.
//! let failure = check_builtin("items-steady", "worker-token")
//!     .try_seeds(20)
//!     .expect_err("the defect is caught")
//!     .into_failure()
//!     .expect("a seed failed, not the input");
//! assert!(failure.replay.starts_with("leasesim replay --scenario items-steady --seed "));
//! ```

pub use futures::future::LocalBoxFuture;

use crate::{Check, IntoScenario};
pub use leasesim_work_items::work_items_worker::{
    ApplyAck, ClaimError, Clock, ConfigError, Effect, IdempotencyKey, ItemError, ItemId,
    ItemOutcome, ItemReport, ItemWorker, Lease, Lookup, Provider, ProviderAck, ProviderError,
    RunEnd, RunError, RunReport, RunStatus, Step, Store, Transport, WorkerConfig, WriteError,
};
pub use leasesim_work_items::{
    AnyWorker, Scenario, SimClock, SimProvider, SimStore, SimWorker, WorkItems, WorkerFactory,
    WorkerPorts, WorkerUnderTest, correct_worker_of,
};

/// Starts a check of the work-item worker `make` builds for each replica, against `scenario` (a
/// work-items scenario: a builtin name such as `"items-steady"`, a path, or a loaded one).
///
/// `make` gets the replica's ports, including `ports.config`: the scenario's settings, which
/// the run judges the worker against. The builder is [`Check`]'s: `.seeds(n)` panics on the
/// first failing seed with the invariant's sentence and how to rerun it, `.try_seeds(n)`
/// returns it; `.strategy(..)`, `.start_seed(..)`, `.trace()`, `.shrink()`, `.html(path)`.
pub fn check<W, F>(scenario: impl IntoScenario<WorkItems>, make: F) -> Check<WorkItems>
where
    W: WorkerUnderTest<Report = <AnyWorker as WorkerUnderTest>::Report> + 'static,
    F: Fn(WorkerPorts) -> W + 'static,
{
    crate::check_system(scenario, make)
}

/// Starts a check of one of the work-items system's own workers by name (`"correct"`, or a
/// defective one: `leasesim list --system work-items` names them), against `scenario`.
pub fn check_builtin(scenario: impl IntoScenario<WorkItems>, worker: &str) -> Check<WorkItems> {
    crate::check_builtin(scenario, worker)
}

/// Everything of [`crate::work_items`] (its ports, their simulated implementations, the
/// production core's types, `check` and `check_builtin`), and the shared check types.
pub mod prelude {
    pub use super::*;
    pub use crate::{Check, CheckError, CheckFailure, CheckSummary, Nondeterminism, Strategy};
}
