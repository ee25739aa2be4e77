//! The reservation system (design 002): everything a test needs to write an expiry worker of its
//! own and check it, with `leasesim` as its only dependency.
//!
//! A worker is built from [`WorkerPorts`] (the replica's store, dead-letter, clock and token
//! ports, and **the settings the run judges it against**: `ports.config`) and implements
//! [`WorkerUnderTest`]: `run()` polls until `stop()`. The port traits ([`Store`],
//! [`DeadLetters`], [`Clock`], [`Tokens`]) are the production core's; their simulated
//! implementations ([`SimStore`], [`SimLetters`], [`SimClock`], [`SimTokens`]) say what the
//! simulated store does at the instant a request is applied. [`SimStore`] also offers the
//! primitives of [`RawStore`], which the production core never calls. `use
//! leasesim::reservations::prelude::*;` brings all of it into scope.
//!
//! ```
//! use leasesim::reservations::prelude::*;
//!
//! // The production core passes; a worker of your own goes where `correct_worker_of` is.
//! check("expiry-steady", correct_worker_of).seeds(2);
//! // One of the system's defective workers is caught, with the line that replays it.
//! let failure = check_builtin("expiry-consume-race", "unguarded-expire")
//!     .try_seeds(20)
//!     .expect_err("the defect is caught")
//!     .into_failure()
//!     .expect("a seed failed, not the input");
//! assert!(failure.replay.starts_with("leasesim replay --scenario expiry-consume-race --seed "));
//! ```

pub use futures::future::LocalBoxFuture;

use crate::{Check, IntoScenario};
pub use leasesim_reservations::{
    AnyWorker, RawStore, Reservations, Scenario, SimClock, SimLetters, SimStore, SimTokens,
    SimWorker, WorkerFactory, WorkerPorts, WorkerUnderTest, correct_worker_of,
};
pub use reservations_worker::{
    Backoff, ClaimToken, Clock, ConfigError, DeadLetter, DeadLetters, DeadReason, ErrorClass,
    ExpireOutcome, ExpiryWorker, Now, Reservation, ReservationId, RetryDecision, RetryPolicy,
    RunEnd, RunError, RunReport, Status, Store, StoreError, Tokens, WorkerConfig, decide_retry,
    replay_command,
};

/// Starts a check of the expiry worker `make` builds for each replica, against `scenario` (a
/// reservations scenario: a builtin name such as `"expiry-steady"`, a path, or a loaded one).
///
/// `make` gets the replica's ports, including `ports.config`: the scenario's settings, which
/// the run judges the worker against. The builder is [`Check`]'s: `.seeds(n)` panics on the
/// first failing seed with the invariant's sentence and how to rerun it, `.try_seeds(n)`
/// returns it; `.strategy(..)`, `.start_seed(..)`, `.trace()`, `.shrink()`, `.html(path)`.
pub fn check<W, F>(scenario: impl IntoScenario<Reservations>, make: F) -> Check<Reservations>
where
    W: WorkerUnderTest<Report = <AnyWorker as WorkerUnderTest>::Report> + 'static,
    F: Fn(WorkerPorts) -> W + 'static,
{
    crate::check_system(scenario, make)
}

/// Starts a check of one of the reservations system's own workers by name (`"correct"`, or a
/// defective one: `leasesim list --system reservations` names them), against `scenario`.
pub fn check_builtin(
    scenario: impl IntoScenario<Reservations>,
    worker: &str,
) -> Check<Reservations> {
    crate::check_builtin(scenario, worker)
}

/// Everything of [`crate::reservations`] (its ports, their simulated implementations, the
/// production core's types, `check` and `check_builtin`), and the shared check types.
pub mod prelude {
    pub use super::*;
    pub use crate::{Check, CheckError, CheckFailure, CheckSummary, Nondeterminism, Strategy};
}
