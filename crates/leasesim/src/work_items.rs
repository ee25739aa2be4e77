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

use std::rc::Rc;

pub use futures::future::LocalBoxFuture;
pub use leasesim_work_items::work_items_worker::{
    ApplyAck, ClaimError, Clock, ConfigError, Effect, IdempotencyKey, ItemError, ItemId,
    ItemOutcome, ItemReport, ItemWorker, Lease, Lookup, Provider, ProviderAck, ProviderError,
    RunEnd, RunError, RunReport, RunStatus, Step, Store, Transport, WorkerConfig, WriteError,
};
pub use leasesim_work_items::{
    AnyWorker, Scenario, SimClock, SimProvider, SimStore, SimWorker, WorkItems, WorkerFactory,
    WorkerPorts, WorkerUnderTest, correct_worker_of,
};

use crate::check::{Check, IntoScenario};

/// Starts a check of the work-item worker `make` builds, against `scenario` (a work-items
/// scenario: a builtin name such as `"items-steady"`, a path, or a loaded one).
///
/// `make` gets the replica's ports, including `ports.config`: the scenario's worker settings,
/// which the run judges the worker against. The builder is [`crate::check`]'s: `.seeds(n)`
/// panics on the first failing seed with the invariant's sentence and a replay command,
/// `.try_seeds(n)` returns it, `.strategy(..)`, `.trace()`, `.shrink()`, `.html(path)`.
#[track_caller]
pub fn check<W, F>(scenario: impl IntoScenario<WorkItems>, make: F) -> Check<WorkItems>
where
    W: WorkerUnderTest<Report = <AnyWorker as WorkerUnderTest>::Report> + 'static,
    F: Fn(WorkerPorts) -> W + 'static,
{
    let factory: Rc<WorkerFactory> = Rc::new(move |ports| Rc::new(make(ports)) as Rc<AnyWorker>);
    crate::check_system(scenario, factory)
}

/// Everything of [`crate::work_items`], its check entry point and the strategies.
pub mod prelude {
    pub use super::{
        AnyWorker, ApplyAck, ClaimError, Clock, Effect, IdempotencyKey, ItemError, ItemId,
        ItemOutcome, ItemReport, Lease, LocalBoxFuture, Lookup, Provider, ProviderAck,
        ProviderError, RunEnd, RunError, RunReport, RunStatus, SimClock, SimProvider, SimStore,
        Step, Store, Transport, WorkerConfig, WorkerPorts, WorkerUnderTest, WriteError, check,
    };
    pub use crate::{CheckFailure, CheckSummary, Strategy};
}
