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
//! ```no_run
//! use leasesim::reservations::prelude::*;
//!
//! leasesim::reservations::check("expiry-steady", correct_worker_of).seeds(100);
//! ```

use std::rc::Rc;

pub use futures::future::LocalBoxFuture;
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

use crate::check::{Check, IntoScenario, check_system};

/// Starts a check of the expiry worker `make` builds, against `scenario` (a reservation
/// scenario: a builtin name, a path, or a loaded one). As [`crate::check`], for this system.
///
/// `make` gets the replica's ports, including `ports.config`: the scenario's worker
/// settings, which the run judges the worker against.
#[track_caller]
pub fn check<W, F>(scenario: impl IntoScenario<Reservations>, make: F) -> Check<Reservations>
where
    W: WorkerUnderTest<Report = <AnyWorker as WorkerUnderTest>::Report> + 'static,
    F: Fn(WorkerPorts) -> W + 'static,
{
    let factory: Rc<leasesim_sim::WorkerFactory<Reservations>> =
        Rc::new(move |ports| Rc::new(make(ports)) as Rc<AnyWorker>);
    check_system(scenario, factory)
}

/// Everything of [`crate::reservations`], its check entry point and the strategies.
pub mod prelude {
    pub use super::{
        AnyWorker, Clock, DeadLetter, DeadLetters, ExpireOutcome, LocalBoxFuture, Now, RawStore,
        Reservation, ReservationId, RunError, RunReport, SimClock, SimLetters, SimStore, SimTokens,
        Store, StoreError, Tokens, WorkerConfig, WorkerPorts, WorkerUnderTest, check,
        correct_worker_of,
    };
    pub use crate::{CheckFailure, CheckSummary, Strategy};
}
