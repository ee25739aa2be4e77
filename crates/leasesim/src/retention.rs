//! The retention system (design 000): everything a test needs to write a retention worker of
//! its own and check it, with `leasesim` as its only dependency.
//!
//! A worker is built from [`WorkerPorts`] (the replica's clock, lease service,
//! record store and spawn port, and **the settings the run judges it against**:
//! `ports.config`) and implements [`WorkerUnderTest`]: one leadership term per
//! `run()`, and `stop()`. The port traits ([`Clock`], [`Leases`],
//! [`Records`]) are the production core's; their simulated implementations
//! ([`SimClock`], [`SimLeases`], [`SimRecords`]) say what
//! the simulated service does at the instant a request is applied. `use
//! leasesim::retention::prelude::*;` brings all of it into scope.
//!
//! ```
//! use leasesim::retention::prelude::*;
//!
//! // The production core passes; a worker of your own goes where `correct_worker_of` is.
//! check("steady", correct_worker_of).seeds(2);
//! // One of the system's defective workers is caught, with the line that replays it.
//! let failure = check_builtin("slow-deletes", "stale-release")
//!     .try_seeds(20)
//!     .expect_err("the defect is caught")
//!     .into_failure()
//!     .expect("a seed failed, not the input");
//! assert!(failure.replay.starts_with("leasesim replay --scenario slow-deletes --seed "));
//! ```

pub use futures::future::LocalBoxFuture;

use crate::{Check, IntoScenario};
pub use leasesim_retention::{
    AnyWorker, Retention, Scenario, SimClock, SimLeases, SimRecords, SimTasks, SimWorker,
    WorkerFactory, WorkerPorts, WorkerUnderTest, correct_worker_of,
};
pub use leasesim_sim::TaskHandle;
pub use retention_worker::{
    Clock, ConfigError, Lease, Leases, LossCause, Op, PortError, Records, RetentionWorker,
    RunError, TermEnd, TermReport, WorkerConfig,
};

/// Starts a check of the retention worker `make` builds for each replica, against `scenario` (a
/// retention scenario: a builtin name such as `"steady"`, a path, or a loaded one).
///
/// `make` gets the replica's ports, including `ports.config`: the scenario's settings, which
/// the run judges the worker against. The builder is [`Check`]'s: `.seeds(n)` panics on the
/// first failing seed with the invariant's sentence and how to rerun it, `.try_seeds(n)`
/// returns it; `.strategy(..)`, `.start_seed(..)`, `.trace()`, `.shrink()`, `.html(path)`.
pub fn check<W, F>(scenario: impl IntoScenario<Retention>, make: F) -> Check<Retention>
where
    W: WorkerUnderTest<Report = <AnyWorker as WorkerUnderTest>::Report> + 'static,
    F: Fn(WorkerPorts) -> W + 'static,
{
    crate::check_system(scenario, make)
}

/// Starts a check of one of the retention system's own workers by name (`"correct"`, or a
/// defective one: `leasesim list --system retention` names them), against `scenario`.
pub fn check_builtin(scenario: impl IntoScenario<Retention>, worker: &str) -> Check<Retention> {
    crate::check_builtin(scenario, worker)
}

/// Everything of [`crate::retention`] (its ports, their simulated implementations, the
/// production core's types, `check` and `check_builtin`), and the shared check types.
pub mod prelude {
    pub use super::*;
    pub use crate::{Check, CheckError, CheckFailure, CheckSummary, Nondeterminism, Strategy};
}
