//! The work-item worker's ports on the simulated world, and how the world drives a worker.
//!
//! Terminology:
//! - *ports*: [`SimClock`], [`SimStore`], [`SimProvider`]: the worker's view of the world,
//!   built on the shared `leasesim_sim::Port` of one replica (its clock, its gate, the
//!   network).
//! - *unsafe primitives*: [`UnsafeStore`], store writes without a condition (a plain owner
//!   write, an apply and a done-mark without the token predicate). Only the defective workers
//!   call them; the production core has no way to.
//! - *worker under test*: anything with `run()` (one pass over the claimable items) and
//!   `stop()`, built from one replica's ports: the production core (`correct`), a defective
//!   worker, or a user's own.
//! - *factory*: builds a fresh worker for a replica (at start, and when a stopped replica is
//!   restarted in the liveness phase).

use std::future::Future;
use std::rc::Rc;

use futures::future::LocalBoxFuture;
use leasesim_events::{NetFailure, ReplicaId};
use leasesim_invariants::{Built, Readback};
pub use leasesim_sim::WorkerUnderTest;
use leasesim_sim::{Port, WorkerInfo, Workers, World, catalogue};
use work_items_worker::{
    ApplyAck, ClaimError, Clock, Effect, IdempotencyKey, ItemError, ItemId, ItemWorker, Lease,
    Lookup, Provider, ProviderAck, ProviderError, RunError, RunReport, RunStatus, Step, Store,
    Transport, WorkerConfig, WriteError,
};

use crate::events::{
    Answer, ErrorCode, Key, LeaseView, LookupView, Op, ProviderView, Request, WorkItems,
};
use crate::settings::WORKER_SETTINGS;

/// Everything a work-item worker is built from.
///
/// **`config` is what the run judges the worker against**: the scenario's `[worker]` section
/// (lease, renewal interval, attempts, retries, backoff, deadline). A worker that uses other
/// settings breaks invariants such as `give-up-policy`; build yours from `ports.config`.
pub struct WorkerPorts {
    pub replica: ReplicaId,
    /// `r1`, `r2`, ...: the owner id to claim with.
    pub owner_id: String,
    /// The settings the run judges the worker against.
    pub config: WorkerConfig,
    pub clock: SimClock,
    pub store: SimStore,
    pub provider: SimProvider,
}

/// Any worker of this system the world can drive: the production core, a defective
/// worker, or yours (implement [`WorkerUnderTest`] with this `Report`).
pub type AnyWorker = leasesim_sim::WorkerOf<WorkItems>;

/// Builds one work-item worker per replica.
pub type WorkerFactory = leasesim_sim::WorkerFactory<WorkItems>;

/// The production worker on simulated ports (a newtype: the shared `WorkerUnderTest` is
/// implemented here, not on the core crate's type). Its clock comes through an `Rc`, as a process
/// shares one clock between its parts, so a run also goes through the core's forwarding of
/// the clock port for `Rc<T>`.
pub struct SimWorker(pub ItemWorker<Rc<SimClock>, SimStore, SimProvider>);

/// The core's own methods (`config()`, ...) on the wrapped worker.
impl std::ops::Deref for SimWorker {
    type Target = ItemWorker<Rc<SimClock>, SimStore, SimProvider>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl WorkerUnderTest for SimWorker {
    type Report = Result<RunReport, RunError>;

    fn run(&self) -> LocalBoxFuture<'_, Result<RunReport, RunError>> {
        Box::pin(ItemWorker::run(self))
    }

    fn stop(&self) -> LocalBoxFuture<'_, ()> {
        Box::pin(ItemWorker::stop(self))
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

/// Builds the production core from `config` on clones of `ports`, for the construction probe.
fn build_core(ports: &WorkerPorts, config: &WorkerConfig) -> Built {
    let built = ItemWorker::new(
        ports.owner_id.clone(),
        config.clone(),
        ports.clock.clone(),
        ports.store.clone(),
        ports.provider.clone(),
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
        ]),
        Err(error) => Built::Refused(error.to_string()),
    }
}

/// The production worker built on one replica's ports, after its construction probe.
pub fn correct_worker_of(ports: WorkerPorts) -> SimWorker {
    probe_construction(&ports, |config| build_core(&ports, config));
    SimWorker(
        ItemWorker::new(
            ports.owner_id,
            ports.config,
            Rc::new(ports.clock),
            ports.store,
            ports.provider,
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
pub struct SimClock(pub(crate) Port<WorkItems>);

/// The replica's item-store port.
#[derive(Clone)]
pub struct SimStore(pub(crate) Port<WorkItems>);

/// The replica's provider port.
#[derive(Clone)]
pub struct SimProvider(pub(crate) Port<WorkItems>);

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

fn transport(failure: NetFailure) -> Transport {
    match failure {
        NetFailure::Rejected => Transport::Rejected,
        NetFailure::Timeout => Transport::Timeout,
    }
}

/// The operation a step of the core names.
pub fn step_op(step: Step) -> Op {
    match step {
        Step::Renew => Op::Renew,
        Step::Apply => Op::Apply,
        Step::Provider => Op::Provider,
        Step::Lookup => Op::Lookup,
        Step::Done => Op::Done,
    }
}

/// An item error as the trace carries it.
pub fn error_code(error: ItemError) -> ErrorCode {
    match error {
        ItemError::Rejected(step) => ErrorCode::Rejected(step_op(step)),
        ItemError::Timeout(step) => ErrorCode::Timeout(step_op(step)),
        ItemError::ProviderRefused => ErrorCode::ProviderRefused,
        ItemError::Stopped => ErrorCode::Stopped,
    }
}

fn key_view(key: IdempotencyKey) -> Key {
    Key {
        item: key.item.0,
        salt: key.salt,
    }
}

fn lease_of(view: LeaseView) -> Lease {
    Lease {
        item: ItemId(view.item),
        token: view.token,
        expires_at_ms: view.expires_at_ms,
        attempt: view.attempt,
        chunks: view.chunks,
    }
}

fn write_answer(answer: Answer, what: &str) -> Result<(), WriteError> {
    match answer {
        Answer::Ok => Ok(()),
        Answer::LeaseLost => Err(WriteError::LeaseLost),
        Answer::Failed(failure) => Err(WriteError::Transport(transport(failure))),
        other => unreachable!("{what} answered {other:?}"),
    }
}

fn apply_answer(answer: Answer) -> Result<ApplyAck, WriteError> {
    match answer {
        Answer::Applied { fresh: true } => Ok(ApplyAck::Applied),
        Answer::Applied { fresh: false } => Ok(ApplyAck::AlreadyApplied),
        Answer::LeaseLost => Err(WriteError::LeaseLost),
        Answer::Failed(failure) => Err(WriteError::Transport(transport(failure))),
        other => unreachable!("apply answered {other:?}"),
    }
}

fn claim_answer(answer: Answer) -> Result<Lease, ClaimError> {
    match answer {
        Answer::Claimed(view) => Ok(lease_of(view)),
        Answer::Busy => Err(ClaimError::Busy),
        Answer::Closed => Err(ClaimError::Closed),
        Answer::Failed(failure) => Err(ClaimError::Transport(transport(failure))),
        other => unreachable!("claim answered {other:?}"),
    }
}

impl Store for SimStore {
    /// At its apply instant the store scans from the item after `after` (wrapping round) for
    /// the first one that is pending, released, or claimed with its claim expired.
    async fn next_claimable(&self, after: Option<ItemId>) -> Result<Option<ItemId>, Transport> {
        let request = Request::Find {
            after: after.map(|item| item.0),
        };
        match self.0.call(request).await {
            Answer::Found(item) => Ok(item.map(ItemId)),
            Answer::Failed(failure) => Err(transport(failure)),
            other => unreachable!("find answered {other:?}"),
        }
    }

    /// At its apply instant the store grants the item to this replica if it is claimable,
    /// with the next store-wide token, an expiry `lease_for_ms` later (store time) and one
    /// more attempt; the worker's `now_ms` is only recorded.
    async fn claim(
        &self,
        item: ItemId,
        _worker: &str,
        now_ms: u64,
        lease_for_ms: u64,
    ) -> Result<Lease, ClaimError> {
        let request = Request::Claim {
            item: item.0,
            lease_ms: lease_for_ms,
            now_ms,
        };
        claim_answer(self.0.call(request).await)
    }

    /// Extends the claim only if `token` is the item's live claim at the apply instant.
    async fn renew_if_owner(
        &self,
        item: ItemId,
        token: u64,
        now_ms: u64,
        lease_for_ms: u64,
    ) -> Result<u64, WriteError> {
        let request = Request::Renew {
            item: item.0,
            token,
            lease_ms: lease_for_ms,
            now_ms,
        };
        match self.0.call(request).await {
            Answer::Renewed { expires_at_ms } => Ok(expires_at_ms),
            Answer::LeaseLost => Err(WriteError::LeaseLost),
            Answer::Failed(failure) => Err(WriteError::Transport(transport(failure))),
            other => unreachable!("renew answered {other:?}"),
        }
    }

    /// Applies the chunk only if `token` is the item's live claim at the apply instant
    /// (unless the scenario switched the store's fencing off).
    async fn apply_if_owner(
        &self,
        item: ItemId,
        token: u64,
        now_ms: u64,
        effect: Effect,
    ) -> Result<ApplyAck, WriteError> {
        debug_assert_eq!(effect.item, item);
        let request = Request::Apply {
            item: item.0,
            token,
            chunk: effect.chunk,
            now_ms,
        };
        apply_answer(self.0.call(request).await)
    }

    /// Marks the item done only if `token` is its live claim at the apply instant (unless
    /// fencing is off); the same claim marking it again answers `Ok`.
    async fn mark_done_if_owner(
        &self,
        item: ItemId,
        token: u64,
        now_ms: u64,
    ) -> Result<(), WriteError> {
        let request = Request::Done {
            item: item.0,
            token,
            now_ms,
        };
        write_answer(self.0.call(request).await, "done")
    }

    /// Releases the item (claimable again at once, `error` its last error) only if `token`
    /// is its live claim at the apply instant.
    async fn release_if_owner(
        &self,
        item: ItemId,
        token: u64,
        now_ms: u64,
        error: ItemError,
    ) -> Result<(), WriteError> {
        let request = Request::Release {
            item: item.0,
            token,
            error: error_code(error),
            now_ms,
        };
        write_answer(self.0.call(request).await, "release")
    }

    /// Fails the item for good (`error` its last error) only if `token` is its live claim.
    async fn fail_if_owner(
        &self,
        item: ItemId,
        token: u64,
        now_ms: u64,
        error: ItemError,
    ) -> Result<(), WriteError> {
        let request = Request::Fail {
            item: item.0,
            token,
            error: error_code(error),
            now_ms,
        };
        write_answer(self.0.call(request).await, "fail")
    }

    /// The store's count of open, done and failed items at the apply instant.
    async fn status(&self) -> Result<RunStatus, Transport> {
        match self.0.call(Request::Status).await {
            Answer::Status(status) => Ok(RunStatus {
                open: status.open,
                done: status.done,
                failed: status.failed,
            }),
            Answer::Failed(failure) => Err(transport(failure)),
            other => unreachable!("status answered {other:?}"),
        }
    }
}

impl Provider for SimProvider {
    /// At its apply instant the provider carries out the item's effect unless it accepted
    /// `key` before (a duplicate) or refuses the item for good (its own fault, decided at the
    /// item's first apply). It knows no tokens.
    async fn apply(&self, key: IdempotencyKey, item: ItemId) -> Result<ProviderAck, ProviderError> {
        let request = Request::ProviderApply {
            item: item.0,
            key: key_view(key),
        };
        match self.0.call(request).await {
            Answer::Provider(ProviderView::Applied) => Ok(ProviderAck::Applied),
            Answer::Provider(ProviderView::Duplicate) => Ok(ProviderAck::Duplicate),
            Answer::Provider(ProviderView::Refused) => Err(ProviderError::Refused),
            Answer::Failed(failure) => Err(ProviderError::Transport(transport(failure))),
            other => unreachable!("provider apply answered {other:?}"),
        }
    }

    /// What the provider did with `key`, if it accepted it.
    async fn lookup(&self, key: IdempotencyKey) -> Result<Lookup, Transport> {
        let request = Request::Lookup { key: key_view(key) };
        match self.0.call(request).await {
            Answer::Lookup(LookupView::Applied) => Ok(Lookup::Applied),
            Answer::Lookup(LookupView::Refused) => Ok(Lookup::Refused),
            Answer::Lookup(LookupView::Unknown) => Ok(Lookup::Unknown),
            Answer::Failed(failure) => Err(transport(failure)),
            other => unreachable!("lookup answered {other:?}"),
        }
    }
}

/// Store writes without a condition. Only the defective workers use them.
pub trait UnsafeStore {
    /// Writes this replica as the item's owner whatever its state (next token, new expiry).
    fn plain_claim(
        &self,
        item: ItemId,
        now_ms: u64,
        lease_for_ms: u64,
    ) -> impl Future<Output = Result<Lease, Transport>>;
    /// Applies a chunk whatever the item's live claim.
    fn unguarded_apply(
        &self,
        item: ItemId,
        token: u64,
        now_ms: u64,
        effect: Effect,
    ) -> impl Future<Output = Result<ApplyAck, WriteError>>;
    /// Marks the item done whatever its live claim.
    fn unguarded_done(
        &self,
        item: ItemId,
        token: u64,
        now_ms: u64,
    ) -> impl Future<Output = Result<(), WriteError>>;
}

impl UnsafeStore for SimStore {
    async fn plain_claim(
        &self,
        item: ItemId,
        now_ms: u64,
        lease_for_ms: u64,
    ) -> Result<Lease, Transport> {
        let request = Request::PlainClaim {
            item: item.0,
            lease_ms: lease_for_ms,
            now_ms,
        };
        match self.0.call(request).await {
            Answer::Claimed(view) => Ok(lease_of(view)),
            Answer::Failed(failure) => Err(transport(failure)),
            other => unreachable!("plain claim answered {other:?}"),
        }
    }

    async fn unguarded_apply(
        &self,
        item: ItemId,
        token: u64,
        now_ms: u64,
        effect: Effect,
    ) -> Result<ApplyAck, WriteError> {
        let request = Request::UnguardedApply {
            item: item.0,
            token,
            chunk: effect.chunk,
            now_ms,
        };
        apply_answer(self.0.call(request).await)
    }

    async fn unguarded_done(
        &self,
        item: ItemId,
        token: u64,
        now_ms: u64,
    ) -> Result<(), WriteError> {
        let request = Request::UnguardedDone {
            item: item.0,
            token,
            now_ms,
        };
        write_answer(self.0.call(request).await, "unguarded done")
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

replica_of!(SimClock, SimStore, SimProvider);

/// The work-items workers: the production core and the defective ones, on the world's ports.
impl Workers for WorkItems {
    type Report = Result<RunReport, RunError>;
    type Ports = WorkerPorts;

    /// The ports of `replica`, built on the world.
    fn ports(world: &Rc<World<WorkItems>>, replica: ReplicaId) -> WorkerPorts {
        let port = Port::new(world.clone(), replica);
        WorkerPorts {
            replica,
            owner_id: replica.owner_id(),
            config: world.profile().system.worker.clone(),
            clock: SimClock(port.clone()),
            store: SimStore(port.clone()),
            provider: SimProvider(port),
        }
    }

    /// Every worker of the system: `correct` (the production core) first.
    fn workers() -> Vec<WorkerInfo> {
        catalogue(
            "the production worker core (work-items-worker)",
            crate::defects::DEFECTS,
        )
    }

    /// The factory of a worker by name: `correct`, or any name in [`crate::defects::DEFECTS`].
    fn factory(name: &str) -> Option<Rc<WorkerFactory>> {
        if name == "correct" {
            return Some(Rc::new(correct_worker));
        }
        let info = crate::defects::DEFECTS
            .iter()
            .find(|d| d.info.name == name)?
            .info;
        let name = info.name;
        Some(Rc::new(move |ports: WorkerPorts| {
            let parts = (ports.clock, ports.store, ports.provider);
            let worker =
                crate::defects::DefectiveWorker::named(name, ports.owner_id, ports.config, parts)
                    .expect("a catalogued name")
                    .expect("scenario loading validated the worker configuration");
            Rc::new(worker) as Rc<AnyWorker>
        }))
    }
}
