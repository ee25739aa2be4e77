//! The worker's ports on the simulated world, and how the world drives a worker.
//!
//! Terminology:
//! - *ports*: [`SimClock`], [`SimStore`], [`SimTokens`], [`SimJob`]: the production core's
//!   port traits built on the shared [`Port`] of one replica (its clock, its pauses, the
//!   faulty network, the run's one choice source).
//! - *worker under test*: anything with `run()` (one attempt) and `stop()`, built from one
//!   replica's ports: the production core (`correct`), a defective worker, or a user's own.
//! - *factory*: builds a fresh worker for a replica (at start, and on restart).

use std::rc::Rc;

use futures::future::LocalBoxFuture;
use holder_lock_worker::{
    AttemptReport, ClaimConfig, Clock, HolderToken, Job, JobError, JobRunner, Removal, Renewal,
    RunError, Store, StoreError, TokenSource,
};
use leasesim_events::{NetFailure, ReplicaId};
use leasesim_invariants::{Built, Readback};
pub use leasesim_sim::WorkerUnderTest;
use leasesim_sim::{Port, WorkerInfo, Workers, World, catalogue};

use crate::events::{Answer, HolderLock, Key, Note, Request};
use crate::services;
use crate::settings::CLAIM_SETTINGS;

/// Everything a holder-lock worker is built from.
///
/// **`config` is what the run judges the worker against**: the scenario's `[claim]` section
/// (or what a swarm run drew from it): the key, the lifetime, the renewal interval.
pub struct WorkerPorts {
    pub replica: ReplicaId,
    pub config: ClaimConfig,
    pub clock: SimClock,
    pub store: SimStore,
    pub tokens: SimTokens,
    pub job: SimJob,
}

/// Any worker of this system the world can drive: the production core, a defective
/// worker, or yours (implement [`WorkerUnderTest`] with this `Report`).
pub type AnyWorker = leasesim_sim::WorkerOf<HolderLock>;

/// Builds one holder-lock worker per replica.
pub type WorkerFactory = leasesim_sim::WorkerFactory<HolderLock>;

/// The production worker on simulated ports (a newtype: the shared `WorkerUnderTest` is
/// implemented here, not on the core crate's type).
pub struct SimWorker(pub JobRunner<SimClock, SimStore, SimTokens, SimJob>);

/// The core's own methods (`config()`, ...) on the wrapped worker.
impl std::ops::Deref for SimWorker {
    type Target = JobRunner<SimClock, SimStore, SimTokens, SimJob>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl WorkerUnderTest for SimWorker {
    type Report = Result<AttemptReport, RunError>;

    fn run(&self) -> LocalBoxFuture<'_, Result<AttemptReport, RunError>> {
        Box::pin(JobRunner::run(self))
    }

    fn stop(&self) -> LocalBoxFuture<'_, ()> {
        Box::pin(JobRunner::stop(self))
    }
}

/// Probes the core's constructor against the run's configuration and the claim rules
/// (`settings::CLAIM_SETTINGS`), building with `build`; records a finding as a
/// `Note::Construction` of the replica (judged by `construction`).
pub fn probe_construction(ports: &WorkerPorts, build: impl Fn(&ClaimConfig) -> Built) {
    ports
        .clock
        .0
        .probe_construction(&ports.config, &CLAIM_SETTINGS, build);
}

/// Builds the production core from `config` on clones of `ports`, for the construction probe.
fn build_core(ports: &WorkerPorts, config: &ClaimConfig) -> Built {
    let built = JobRunner::new(
        config.clone(),
        ports.clock.clone(),
        ports.store.clone(),
        ports.tokens.clone(),
        ports.job.clone(),
    );
    match built {
        Ok(core) => Built::Accepted(vec![
            Readback {
                accessor: "config",
                kept: core.config() == config,
            },
            Readback {
                accessor: "claims_gone",
                kept: core.claims_gone() == 0,
            },
        ]),
        Err(error) => Built::Refused(error.to_string()),
    }
}

/// The production worker built on one replica's ports, after its construction probe.
pub fn correct_worker_of(ports: WorkerPorts) -> SimWorker {
    probe_construction(&ports, |config| build_core(&ports, config));
    SimWorker(
        JobRunner::new(
            ports.config,
            ports.clock,
            ports.store,
            ports.tokens,
            ports.job,
        )
        .expect("scenario loading validated the claim configuration"),
    )
}

/// The factory of the production worker (`correct`).
pub fn correct_worker(ports: WorkerPorts) -> Rc<AnyWorker> {
    Rc::new(correct_worker_of(ports))
}

/// The replica's timers.
#[derive(Clone)]
pub struct SimClock(pub(crate) Port<HolderLock>);

/// The replica's connection to the store.
#[derive(Clone)]
pub struct SimStore(pub(crate) Port<HolderLock>);

/// The replica's token source: draws from the run's one choice source.
#[derive(Clone)]
pub struct SimTokens(pub(crate) Port<HolderLock>);

/// The replica's job.
#[derive(Clone)]
pub struct SimJob(pub(crate) Port<HolderLock>);

impl Clock for SimClock {
    /// Sleeps `ms` on this replica's clock. The timer starts at the future's first poll, not
    /// at its creation; drift scales it, clock jumps do not end it, a pause holds its
    /// wake-up, and a zero-length sleep still yields once (`leasesim_sim::Port::sleep` says
    /// each exactly).
    fn sleep(&self, ms: u64) -> impl Future<Output = ()> {
        let port = self.0.clone();
        async move { port.sleep(ms).await }
    }
}

/// The store's key called `name`; the simulated store has two.
fn key_of(name: &str) -> Key {
    Key::from_name(name).unwrap_or_else(|| {
        panic!(
            "the simulated store holds only `{}` and `{}`, not `{name}`",
            Key::Claim.name(),
            Key::Holder.name()
        )
    })
}

fn store_error(failure: NetFailure) -> StoreError {
    match failure {
        NetFailure::Rejected => StoreError::Unavailable {
            reason: "refused by fault injection".into(),
        },
        NetFailure::Timeout => StoreError::Timeout,
    }
}

impl SimStore {
    async fn call(&self, request: Request) -> Result<Answer, StoreError> {
        match self.0.call(request).await {
            Answer::Failed(failure) => Err(store_error(failure)),
            Answer::Unsupported => Err(StoreError::Unsupported),
            answer => Ok(answer),
        }
    }
}

impl Store for SimStore {
    /// At its apply instant the store writes the token if the key holds nothing live.
    async fn create_if_absent(
        &self,
        key: &str,
        token: HolderToken,
        lifetime_ms: u64,
    ) -> Result<bool, StoreError> {
        let key = key_of(key);
        let request = Request::Create {
            key,
            token: token.0,
            lifetime_ms,
        };
        match self.call(request).await? {
            Answer::Created => Ok(true),
            Answer::Exists => Ok(false),
            other => unreachable!("create answered {other:?}"),
        }
    }

    /// At its apply instant the store starts the lifetime again if the key holds the token.
    async fn renew_if_holder(
        &self,
        key: &str,
        token: HolderToken,
        lifetime_ms: u64,
    ) -> Result<Renewal, StoreError> {
        let key = key_of(key);
        let request = Request::Renew {
            key,
            token: token.0,
            lifetime_ms,
        };
        match self.call(request).await? {
            Answer::Renewed => Ok(Renewal::Renewed),
            Answer::NotHolder => Ok(Renewal::NotHolder),
            Answer::Absent => Ok(Renewal::Absent),
            other => unreachable!("renew answered {other:?}"),
        }
    }

    /// At its apply instant the store deletes the key if it holds the token, in one step;
    /// a store without compare-and-delete answers `Unsupported`.
    async fn delete_if_holder(&self, key: &str, token: HolderToken) -> Result<Removal, StoreError> {
        let key = key_of(key);
        let request = Request::DeleteIfHolder {
            key,
            token: token.0,
        };
        match self.call(request).await? {
            Answer::Deleted => Ok(Removal::Deleted),
            Answer::NotHolder => Ok(Removal::NotHolder),
            Answer::Absent => Ok(Removal::Absent),
            other => unreachable!("delete_if_holder answered {other:?}"),
        }
    }

    /// What the key holds at the apply instant.
    async fn get(&self, key: &str) -> Result<Option<HolderToken>, StoreError> {
        let key = key_of(key);
        match self.call(Request::Get { key }).await? {
            Answer::Value(token) => Ok(Some(HolderToken(token))),
            Answer::Absent => Ok(None),
            other => unreachable!("get answered {other:?}"),
        }
    }

    /// At its apply instant the store deletes whatever the key holds.
    async fn delete(&self, key: &str) -> Result<bool, StoreError> {
        let key = key_of(key);
        match self.call(Request::Delete { key }).await? {
            Answer::Deleted => Ok(true),
            Answer::Absent => Ok(false),
            other => unreachable!("delete answered {other:?}"),
        }
    }

    /// At its apply instant the store writes the token, whatever the key held.
    async fn set(&self, key: &str, token: HolderToken, lifetime_ms: u64) -> Result<(), StoreError> {
        let key = key_of(key);
        let request = Request::Set {
            key,
            token: token.0,
            lifetime_ms,
        };
        match self.call(request).await? {
            Answer::Written => Ok(()),
            other => unreachable!("set answered {other:?}"),
        }
    }

    /// The scenario's `[store] compare_and_delete` (or what a swarm run drew).
    fn compare_and_delete(&self) -> bool {
        self.0.world().profile().system.compare_and_delete
    }
}

impl TokenSource for SimTokens {
    /// A token drawn from the run's one choice source, distinct from every other of the run.
    fn fresh(&self) -> HolderToken {
        HolderToken(services::fresh_token(self.0.world()))
    }
}

impl Job for SimJob {
    /// Draws the job's length (usual or long), then takes a step every `step_ms` on the
    /// replica's clock (held by the replica's pauses), each one an effect (`Note::JobStep`);
    /// a step fails with the `job_fail` probability. Dropped, it takes no further step.
    async fn run(&self) -> Result<(), JobError> {
        let world: &World<HolderLock> = self.0.world();
        let steps = draw_job(world);
        let duration_ms = steps.iter().sum();
        let count = u32::try_from(steps.len()).expect("fewer than 2^32 steps");
        self.0.note(Note::JobStarted {
            duration_ms,
            steps: count,
        });
        let (env, state) = (world.env(), world.replica(self.0.replica()));
        for (step, ms) in (1..).zip(steps) {
            // The job's own pace, on the replica's clock and held by its pauses; not a timer
            // of the worker, so no `TimerSet` event.
            env.sleep(state.virtual_span_ms(ms)).await;
            state.gate(env).await;
            if world.fault(world.profile().system.job_fail) {
                self.0.note(Note::JobFailed { step });
                return Err(JobError {
                    reason: format!("step {step} of {count} failed"),
                });
            }
            self.0.note(Note::JobStep { step });
        }
        self.0.note(Note::JobFinished { steps: count });
        Ok(())
    }
}

/// A job's steps, by length: usual, or long with the drawn share; the shortest usual job is
/// value 0 of both draws.
fn draw_job(world: &World<HolderLock>) -> Vec<u64> {
    let env = world.env();
    let job = &world.profile().system.job;
    let range = match env.coin(job.long_share.get()) {
        true => job.long_duration_ms,
        false => job.duration_ms,
    };
    let duration_ms = env.range(range.min, range.max).max(1);
    let step_ms = job.step_ms.get();
    let mut steps = vec![step_ms; usize::try_from(duration_ms / step_ms).unwrap_or(0)];
    if duration_ms % step_ms > 0 {
        steps.push(duration_ms % step_ms);
    }
    // invariant: the steps add up to the drawn length.
    debug_assert_eq!(steps.iter().sum::<u64>(), duration_ms);
    steps
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

replica_of!(SimClock, SimStore, SimTokens, SimJob);

/// The holder-lock workers: the production core and the defective ones, on the world's ports.
impl Workers for HolderLock {
    type Report = Result<AttemptReport, RunError>;
    type Ports = WorkerPorts;

    /// The ports of `replica`, built on the world.
    fn ports(world: &Rc<World<HolderLock>>, replica: ReplicaId) -> WorkerPorts {
        let port = Port::new(world.clone(), replica);
        WorkerPorts {
            replica,
            config: world.profile().system.claim.clone(),
            clock: SimClock(port.clone()),
            store: SimStore(port.clone()),
            tokens: SimTokens(port.clone()),
            job: SimJob(port),
        }
    }

    /// Every worker of the system: `correct` (the production core) first.
    fn workers() -> Vec<WorkerInfo> {
        catalogue(
            "the production worker core (holder-lock-worker)",
            crate::defects::DEFECTS,
        )
    }

    /// The factory of a worker by name: `correct`, or any name in [`crate::defects::DEFECTS`].
    fn factory(name: &str) -> Option<Rc<WorkerFactory>> {
        if name == "correct" {
            return Some(Rc::new(correct_worker));
        }
        let flaws_of = crate::defects::DEFECTS
            .iter()
            .find(|d| d.info.name == name)?
            .build;
        Some(Rc::new(move |ports: WorkerPorts| {
            let flaws = flaws_of(ports.replica);
            Rc::new(crate::defects::engine_of(ports, flaws)) as Rc<AnyWorker>
        }))
    }
}
