//! How the world drives a worker: the real core, a defective one, or a user's own.
//!
//! Terminology:
//! - *worker under test*: anything with `run()` (one leadership term) and `stop()`, built from
//!   one replica's ports. The world only ever calls these two.
//! - *factory*: builds a fresh worker for a replica (at start, and when a stopped replica is
//!   restarted in the liveness phase).

use std::rc::Rc;

use futures::future::LocalBoxFuture;
use lease_worker::{RetentionWorker, RunError, TermReport, WorkerConfig};
use leasesim_events::ReplicaId;

use crate::replica::{SimClock, SimLeases, SimRecords};

/// Everything a worker is built from.
pub struct WorkerPorts {
    pub replica: ReplicaId,
    /// `r1`, `r2`, ...
    pub owner_id: String,
    pub config: WorkerConfig,
    pub clock: SimClock,
    pub leases: SimLeases,
    pub records: SimRecords,
}

/// A worker the world can drive.
pub trait WorkerUnderTest {
    /// One leadership term (see `lease_worker::RetentionWorker::run`).
    fn run(&self) -> LocalBoxFuture<'_, Result<TermReport, RunError>>;
    /// Stops the worker; resolves once it has quiesced.
    fn stop(&self) -> LocalBoxFuture<'_, ()>;
}

/// Builds one worker per replica.
pub type WorkerFactory = dyn Fn(WorkerPorts) -> Rc<dyn WorkerUnderTest>;

/// The production worker on simulated ports.
pub type SimWorker = RetentionWorker<SimClock, SimLeases, SimRecords>;

impl WorkerUnderTest for SimWorker {
    fn run(&self) -> LocalBoxFuture<'_, Result<TermReport, RunError>> {
        Box::pin(RetentionWorker::run(self))
    }

    fn stop(&self) -> LocalBoxFuture<'_, ()> {
        Box::pin(RetentionWorker::stop(self))
    }
}

/// The factory of the production worker (`correct`).
pub fn correct_worker(ports: WorkerPorts) -> Rc<dyn WorkerUnderTest> {
    let worker = RetentionWorker::new(
        ports.owner_id,
        ports.config,
        ports.clock,
        ports.leases,
        ports.records,
    )
    .expect("scenario loading validated the worker configuration");
    Rc::new(worker)
}
