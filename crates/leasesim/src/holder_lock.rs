//! The holder-lock system (design 004): everything a test needs to write a worker of its own
//! that runs a job under a holder-token claim, and to check it, with `leasesim` as its only
//! dependency.
//!
//! A worker is built from [`WorkerPorts`] (the replica's clock, store, token source and job,
//! and **the settings the run judges it against**: `ports.config`, the claim's key, lifetime
//! and renewal interval) and implements [`WorkerUnderTest`]: one attempt per `run()`, and
//! `stop()`. The port traits ([`Clock`], [`Store`], [`TokenSource`], [`Job`]) are the
//! production core's; their simulated implementations ([`SimClock`], [`SimStore`],
//! [`SimTokens`], [`SimJob`]) say what the simulated world does at the instant a request is
//! applied. `use leasesim::holder_lock::prelude::*;` brings all of it into scope.
//!
//! ```
//! use leasesim::holder_lock::prelude::*;
//!
//! // The production core passes; a worker of your own goes where `correct_worker_of` is.
//! check("holder-steady", correct_worker_of).seeds(2);
//! // One of the system's defective workers is caught, with the line that replays it.
//! let failure = check_builtin("holder-long-jobs", "plain-delete")
//!     .try_seeds(20)
//!     .expect_err("the defect is caught")
//!     .into_failure()
//!     .expect("a seed failed, not the input");
//! assert!(failure.replay.starts_with("leasesim replay --scenario holder-long-jobs --seed "));
//! ```

pub use futures::future::LocalBoxFuture;

use crate::{Check, IntoScenario};
pub use holder_lock_worker::{
    AttemptEnd, AttemptReport, ClaimConfig, Clock, ConfigError, Found, HolderToken, Job, JobError,
    JobRunner, LossCause, Release, Removal, Renewal, RunError, Store, StoreError, TokenSource,
};
pub use leasesim_holder_lock::{
    AnyWorker, HolderLock, Scenario, SimClock, SimJob, SimStore, SimTokens, SimWorker,
    WorkerFactory, WorkerPorts, WorkerUnderTest, correct_worker_of,
};

/// Starts a check of the worker `make` builds for each replica, against `scenario` (a
/// holder-lock scenario: a builtin name such as `"holder-steady"`, a path, or a loaded one).
///
/// `make` gets the replica's ports, including `ports.config`: the scenario's settings, which
/// the run judges the worker against. The builder is [`Check`]'s: `.seeds(n)` panics on the
/// first failing seed with the invariant's sentence and how to rerun it, `.try_seeds(n)`
/// returns it; `.strategy(..)`, `.start_seed(..)`, `.trace()`, `.shrink()`, `.html(path)`.
pub fn check<W, F>(scenario: impl IntoScenario<HolderLock>, make: F) -> Check<HolderLock>
where
    W: WorkerUnderTest<Report = <AnyWorker as WorkerUnderTest>::Report> + 'static,
    F: Fn(WorkerPorts) -> W + 'static,
{
    crate::check_system(scenario, make)
}

/// Starts a check of one of the holder-lock system's own workers by name (`"correct"`, or a
/// defective one: `leasesim list --system holder-lock` names them), against `scenario`.
pub fn check_builtin(scenario: impl IntoScenario<HolderLock>, worker: &str) -> Check<HolderLock> {
    crate::check_builtin(scenario, worker)
}

/// Everything of [`crate::holder_lock`] (its ports, their simulated implementations, the
/// production core's types, `check` and `check_builtin`), and the shared check types.
pub mod prelude {
    pub use super::*;
    pub use crate::{Check, CheckError, CheckFailure, CheckSummary, Nondeterminism, Strategy};
}
