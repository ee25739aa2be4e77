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

use std::rc::Rc;

pub use futures::future::LocalBoxFuture;
pub use holder_lock_worker::{
    AttemptEnd, AttemptReport, ClaimConfig, Clock, ConfigError, Found, HolderToken, Job, JobError,
    JobRunner, LossCause, Release, Removal, Renewal, RunError, Store, StoreError, TokenSource,
};
pub use leasesim_holder_lock::{
    AnyWorker, HolderLock, Scenario, SimClock, SimJob, SimStore, SimTokens, SimWorker,
    WorkerFactory, WorkerPorts, WorkerUnderTest, correct_worker_of,
};

use crate::check::{Check, IntoScenario, check_system};

/// Starts a check of the holder-lock worker `make` builds, against `scenario` (a holder-lock
/// scenario: a builtin name such as `"holder-steady"`, a path, or a loaded one).
///
/// `make` gets the replica's ports, including `ports.config`: the scenario's claim settings,
/// which the run judges the worker against. The builder is the one of [`crate::check`]:
/// `.seeds(n)`, `.strategy(..)`, `.trace()`, `.shrink()`, `.html(..)`, ...
#[track_caller]
pub fn check<W, F>(scenario: impl IntoScenario<HolderLock>, make: F) -> Check<HolderLock>
where
    W: WorkerUnderTest<Report = <AnyWorker as WorkerUnderTest>::Report> + 'static,
    F: Fn(WorkerPorts) -> W + 'static,
{
    let factory: Rc<WorkerFactory> = Rc::new(move |ports| Rc::new(make(ports)) as Rc<AnyWorker>);
    check_system(scenario, factory)
}

/// Everything of [`crate::holder_lock`], its check entry point and the strategies.
pub mod prelude {
    pub use super::{
        AnyWorker, AttemptEnd, AttemptReport, ClaimConfig, Clock, Found, HolderToken, Job,
        JobError, LocalBoxFuture, LossCause, Release, Removal, Renewal, RunError, SimClock, SimJob,
        SimStore, SimTokens, Store, StoreError, TokenSource, WorkerPorts, WorkerUnderTest, check,
    };
    pub use crate::{CheckFailure, CheckSummary, Strategy};
}
