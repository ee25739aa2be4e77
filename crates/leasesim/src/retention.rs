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

pub use futures::future::LocalBoxFuture;
pub use leasesim_retention::{
    AnyWorker, Retention, Scenario, SimClock, SimLeases, SimRecords, SimTasks, SimWorker,
    WorkerFactory, WorkerPorts, WorkerUnderTest, correct_worker_of,
};
pub use leasesim_sim::TaskHandle;
pub use retention_worker::{
    Clock, ConfigError, Lease, Leases, LossCause, Op, PortError, Records, RetentionWorker,
    RunError, TermEnd, TermReport, WorkerConfig,
};

/// The retention system's check entry, as every system's module has one
/// (`leasesim::retention::check` is [`crate::check`]).
pub use crate::check;

/// Everything of [`crate::retention`], the check entry point and the strategies.
pub mod prelude {
    pub use super::check;
    pub use super::{
        AnyWorker, Clock, Lease, Leases, LocalBoxFuture, LossCause, Op, PortError, Records,
        RunError, SimClock, SimLeases, SimRecords, SimTasks, TaskHandle, TermEnd, TermReport,
        WorkerConfig, WorkerPorts, WorkerUnderTest,
    };
    pub use crate::{CheckFailure, CheckSummary, Strategy};
}
