//! The retention worker's ports on the simulated world, and how the world drives a worker.
//!
//! Terminology:
//! - *ports*: [`SimClock`], [`SimLeases`], [`SimRecords`]: the worker's view of the world,
//!   built on the shared [`Port`] of one replica (its clock, its gate, the network); and
//!   [`SimTasks`], to start tasks of its own (a renewal loop running beside the deletes).
//! - *worker under test*: anything with `run()` (one leadership term) and `stop()`, built from
//!   one replica's ports: the production core (`correct`), a defective worker, or a user's own.
//!   The world only ever calls these two.
//! - *factory*: builds a fresh worker for a replica (at start, and when a stopped replica is
//!   restarted in the liveness phase).

use std::future::Future;
use std::rc::Rc;

use futures::future::LocalBoxFuture;
use leasesim_events::ReplicaId;
use leasesim_invariants::{Built, Readback};
pub use leasesim_sim::WorkerUnderTest;
use leasesim_sim::{Port, TaskHandle, WorkerInfo, Workers, catalogue};
use retention_worker::{
    Clock, Lease, Leases, PortError, Records, RetentionWorker, RunError, TermReport, WorkerConfig,
};

use crate::Retention;
use crate::events::{Answer, Failure, LeaseView, Request};
use crate::settings::WORKER_SETTINGS;

/// Everything a retention worker is built from.
///
/// **`config` is what the run judges the worker against**: the scenario's `[worker]` section
/// (batch size, cap, retention, renewal interval, lease lifetime), or what a swarm run drew
/// from it. A worker that uses its own defaults instead breaks invariants such as
/// `fixed-cutoff` (its cutoff is not the clock read minus the scenario's retention) or
/// `batch-limit`; build your worker from `ports.config`.
pub struct WorkerPorts {
    pub replica: ReplicaId,
    /// `r1`, `r2`, ...: the owner id to acquire the lease with.
    pub owner_id: String,
    /// The settings the run judges the worker against (see above).
    pub config: WorkerConfig,
    /// This replica's clock.
    pub clock: SimClock,
    /// The lease service.
    pub leases: SimLeases,
    /// The record store.
    pub records: SimRecords,
    /// Starts tasks of the worker's own.
    pub tasks: SimTasks,
}

/// Any worker of this system the world can drive: the production core, a defective
/// worker, or yours (implement [`WorkerUnderTest`] with this `Report`).
pub type AnyWorker = leasesim_sim::WorkerOf<Retention>;

/// Builds one retention worker per replica.
pub type WorkerFactory = leasesim_sim::WorkerFactory<Retention>;

/// The production worker on simulated ports (a newtype: the shared `WorkerUnderTest` is
/// implemented here, not on the core crate's type). Its clock comes through an `Rc`, as a process
/// shares one clock between its parts, so a run also goes through the core's forwarding of
/// the clock port for `Rc<T>`.
pub struct SimWorker(pub RetentionWorker<Rc<SimClock>, SimLeases, SimRecords>);

/// The core's own methods (`config()`, ...) on the wrapped worker.
impl std::ops::Deref for SimWorker {
    type Target = RetentionWorker<Rc<SimClock>, SimLeases, SimRecords>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl WorkerUnderTest for SimWorker {
    type Report = Result<TermReport, RunError>;

    fn run(&self) -> LocalBoxFuture<'_, Result<TermReport, RunError>> {
        Box::pin(RetentionWorker::run(self))
    }

    fn stop(&self) -> LocalBoxFuture<'_, ()> {
        Box::pin(RetentionWorker::stop(self))
    }
}

/// Probes the core's constructor against the run's configuration and the worker rules
/// (`settings::WORKER_SETTINGS`), building with `build`; records a finding as a
/// `Note::Construction` of the replica (judged by `construction`).
pub fn probe_construction(ports: &WorkerPorts, build: impl Fn(&WorkerConfig) -> Built) {
    ports
        .clock
        .0
        .probe_construction(&ports.config, &WORKER_SETTINGS, build);
}

/// A clock that reads one fixed instant and never sleeps. The construction probe builds the
/// core on it (borrowed, as a process that lends its ports would) and reads it back through
/// `clock()`, without a read of the run's clock.
struct StillClock;

/// What [`StillClock`] reads: a day after the epoch of its own.
const STILL_NOW_MS: u64 = 86_400_000;

impl Clock for StillClock {
    fn now_ms(&self) -> u64 {
        STILL_NOW_MS
    }

    fn sleep(&self, _ms: u64) -> impl Future<Output = ()> {
        std::future::ready(())
    }
}

/// Builds the production core from `config` on borrowed ports (the replica's leases and
/// records, and a [`StillClock`]), for the construction probe; nothing is called on them.
fn build_core(ports: &WorkerPorts, config: &WorkerConfig) -> Built {
    let clock = StillClock;
    let built = RetentionWorker::new(
        ports.owner_id.clone(),
        config.clone(),
        &clock,
        &ports.leases,
        &ports.records,
    );
    match built {
        Ok(core) => Built::Accepted(vec![
            Readback {
                accessor: "owner_id",
                kept: core.owner_id() == ports.owner_id,
            },
            Readback {
                accessor: "config",
                kept: core.config() == config,
            },
            Readback {
                accessor: "clock",
                kept: core.clock().now_ms() == STILL_NOW_MS,
            },
        ]),
        Err(error) => Built::Refused(error.to_string()),
    }
}

/// The production worker built on one replica's ports, after its construction probe.
pub fn correct_worker_of(ports: WorkerPorts) -> SimWorker {
    probe_construction(&ports, |config| build_core(&ports, config));
    SimWorker(
        RetentionWorker::new(
            ports.owner_id,
            ports.config,
            Rc::new(ports.clock),
            ports.leases,
            ports.records,
        )
        .expect("scenario loading validated the worker configuration"),
    )
}

/// The factory of the production worker (`correct`).
pub fn correct_worker(ports: WorkerPorts) -> Rc<AnyWorker> {
    Rc::new(correct_worker_of(ports))
}

/// The replica's clock port.
#[derive(Clone)]
pub struct SimClock(pub(crate) Port<Retention>);

/// The replica's lease-service port.
#[derive(Clone)]
pub struct SimLeases(pub(crate) Port<Retention>);

/// The replica's record-store port.
#[derive(Clone)]
pub struct SimRecords(pub(crate) Port<Retention>);

/// The replica's spawn port: starts a task of the worker's own.
#[derive(Clone)]
pub struct SimTasks(pub(crate) Port<Retention>);

impl SimTasks {
    /// Starts `future` as a task of the run, named `name` in the trace (`spawns task 1
    /// (renewal)`, then `task 1 finished` or `aborted`). The run's strategy schedules it like
    /// every other task; it reaches the world only through this replica's ports, so a pause
    /// of the process holds it too. The handle joins it ([`TaskHandle::join`]) or aborts it
    /// ([`TaskHandle::abort`]); dropping the handle leaves it running, as a leaked timer in a
    /// real process keeps running (and `renewal-stops` sees its renewals).
    pub fn spawn<T: 'static>(
        &self,
        name: &'static str,
        future: impl Future<Output = T> + 'static,
    ) -> TaskHandle<T> {
        self.0.spawn(name, future)
    }
}

macro_rules! replica_of {
    ($($port:ident),*) => {$(
        impl $port {
            /// The replica this port belongs to.
            pub fn replica(&self) -> ReplicaId {
                self.0.replica()
            }
        }
    )*};
}

replica_of!(SimClock, SimLeases, SimRecords, SimTasks);

fn port_error(failure: Failure, token: u64) -> PortError {
    match failure {
        Failure::Rejected => PortError::Rejected {
            reason: "refused by fault injection".into(),
        },
        Failure::Timeout => PortError::Timeout,
        Failure::StaleToken => PortError::StaleToken { token },
    }
}

fn view(lease: &Lease) -> LeaseView {
    LeaseView {
        token: lease.fencing_token,
        expires_at_ms: lease.expires_at_ms,
    }
}

fn lease_answer(answer: Answer, owner_id: &str) -> Result<Option<Lease>, PortError> {
    match answer {
        Answer::Lease(lease) => Ok(lease.map(|v| Lease {
            owner_id: owner_id.to_string(),
            fencing_token: v.token,
            expires_at_ms: v.expires_at_ms,
        })),
        Answer::Failed(failure) => Err(port_error(failure, 0)),
        other => unreachable!("lease call answered {other:?}"),
    }
}

impl Clock for SimClock {
    /// This replica's clock (skewed, drifting, jumping as the profile says); the read is an
    /// event of the trace.
    fn now_ms(&self) -> u64 {
        self.0.now_ms()
    }

    /// Sleeps `ms` on this replica's clock. The timer starts at the future's first poll, not
    /// at its creation; drift scales it, clock jumps do not end it, a pause holds its
    /// wake-up, and a zero-length sleep still yields once (`leasesim_sim::Port::sleep` says
    /// each exactly).
    fn sleep(&self, ms: u64) -> impl Future<Output = ()> {
        let port = self.0.clone();
        async move { port.sleep(ms).await }
    }
}

impl Leases for SimLeases {
    /// At its apply instant the authority grants the lease if none is live (a new, strictly
    /// higher token, expiring `[lease] ttl_ms` later), else answers `None`.
    fn acquire(&self, owner_id: &str) -> impl Future<Output = Result<Option<Lease>, PortError>> {
        let owner_id = owner_id.to_string();
        async move { lease_answer(self.0.call(Request::Acquire).await, &owner_id) }
    }

    /// At its apply instant the authority rotates the token of the caller's live lease (in
    /// exact-token mode only if the token shown is the current one), else answers `None`.
    fn renew(&self, lease: &Lease) -> impl Future<Output = Result<Option<Lease>, PortError>> {
        let lease = lease.clone();
        async move {
            let request = Request::Renew {
                lease: view(&lease),
            };
            lease_answer(self.0.call(request).await, &lease.owner_id)
        }
    }

    /// Compare-and-set: frees the live lease only if it is still exactly this one (freeing
    /// nothing is recorded as a signal, and answers `Ok` all the same).
    fn release(&self, lease: &Lease) -> impl Future<Output = Result<(), PortError>> {
        let lease = lease.clone();
        async move {
            let request = Request::Release {
                lease: view(&lease),
            };
            match self.0.call(request).await {
                Answer::Released => Ok(()),
                Answer::Failed(failure) => Err(port_error(failure, lease.fencing_token)),
                other => unreachable!("release answered {other:?}"),
            }
        }
    }
}

impl Records for SimRecords {
    /// At its apply instant the store checks the token against the live lease (unless fencing
    /// is off) and deletes up to `limit` of the oldest rows created before the cutoff (fewer
    /// when it answers short, a fault).
    async fn delete_batch(
        &self,
        older_than_ms: u64,
        limit: u32,
        fencing_token: u64,
    ) -> Result<u32, PortError> {
        let request = Request::Delete {
            older_than_ms,
            limit,
            token: fencing_token,
        };
        match self.0.call(request).await {
            Answer::Rows(rows) => Ok(rows),
            Answer::Failed(failure) => Err(port_error(failure, fencing_token)),
            other => unreachable!("delete answered {other:?}"),
        }
    }
}

/// The retention workers: the production core and the defective ones, on the world's ports.
impl Workers for Retention {
    type Report = Result<TermReport, RunError>;
    type Ports = WorkerPorts;

    /// The ports of `replica`, built on the world.
    fn ports(world: &Rc<leasesim_sim::World<Retention>>, replica: ReplicaId) -> WorkerPorts {
        let port = Port::new(world.clone(), replica);
        WorkerPorts {
            replica,
            owner_id: replica.owner_id(),
            config: world.profile().system.worker.clone(),
            clock: SimClock(port.clone()),
            leases: SimLeases(port.clone()),
            records: SimRecords(port.clone()),
            tasks: SimTasks(port),
        }
    }

    /// Every worker of the retention system: `correct` (the production core) first, then the
    /// defective ones.
    fn workers() -> Vec<WorkerInfo> {
        catalogue(
            "the production worker core (retention-worker)",
            crate::defects::DEFECTS,
        )
    }

    /// The factory of a worker by name: `correct`, or any name in [`crate::defects::DEFECTS`].
    fn factory(name: &str) -> Option<Rc<WorkerFactory>> {
        if name == "correct" {
            return Some(Rc::new(correct_worker));
        }
        let build = crate::defects::DEFECTS
            .iter()
            .find(|d| d.info.name == name)?
            .build;
        Some(Rc::new(build))
    }
}
