//! The expiry worker's ports on the simulated world, the store primitives, and how the world
//! drives a worker.
//!
//! Terminology:
//! - *ports*: [`SimStore`] (the store, through the faulty network), [`SimLetters`] (the dead
//!   letters, a store operation that also parks the reservation), [`SimClock`] (the replica's
//!   skewed clock and its jittered sleeps) and [`SimTokens`] (fresh claim tokens), all built on
//!   the shared [`Port`] of one replica.
//! - *primitives*: [`RawStore`], store operations the production core never calls (an update
//!   by id alone, a read of due ids, a plain claim write, a release without a token). The
//!   defective workers are built on them; so may a user's worker be.
//! - *kill point*: right after a transition answered expired, the `kill` fault may end the
//!   replica's process: the port notes `Killed`, trips the process switch and never returns,
//!   and the driver drops the run (no finally path runs; the claims simply expire).
//! - *worker under test*: anything with `run()` (polls until stopped) and `stop()`, built from
//!   one replica's ports by a *factory*.

use std::future::Future;
use std::rc::Rc;

use futures::future::LocalBoxFuture;
use leasesim_events::ReplicaId;
use leasesim_invariants::{Built, Readback};
pub use leasesim_sim::WorkerUnderTest;
use leasesim_sim::{Port, WorkerInfo, Workers, World, catalogue};
use reservations_worker::{
    ClaimToken, Clock, DeadLetter, DeadLetters, DeadReason, ErrorClass, ExpireOutcome,
    ExpiryWorker, Now, Reservation, ReservationId, RunError, RunReport, Status, Store, StoreError,
    Tokens, WorkerConfig,
};

use crate::Reservations;
use crate::events::{
    Answer, ClassView, Failure, LetterView, Note, OutcomeView, ReasonView, Request,
};
use crate::services::Process;
use crate::settings::WORKER_SETTINGS;

/// Everything an expiry worker is built from.
///
/// **`config` is what the run judges the worker against**: the scenario's `[worker]` section,
/// or what a swarm run drew from it.
pub struct WorkerPorts {
    pub replica: ReplicaId,
    pub config: WorkerConfig,
    pub store: SimStore,
    pub letters: SimLetters,
    pub clock: SimClock,
    pub tokens: SimTokens,
}

/// Any worker of this system the world can drive: the production core, a defective
/// worker, or yours (implement [`WorkerUnderTest`] with this `Report`).
pub type AnyWorker = leasesim_sim::WorkerOf<Reservations>;

/// Builds one expiry worker per replica.
pub type WorkerFactory = leasesim_sim::WorkerFactory<Reservations>;

/// The production worker on simulated ports (a newtype: the shared `WorkerUnderTest` is
/// implemented here, not on the core crate's type).
pub struct SimWorker(pub ExpiryWorker<SimStore, SimLetters, SimClock, SimTokens>);

/// The core's own methods (`config()`, ...) on the wrapped worker.
impl std::ops::Deref for SimWorker {
    type Target = ExpiryWorker<SimStore, SimLetters, SimClock, SimTokens>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl WorkerUnderTest for SimWorker {
    type Report = Result<RunReport, RunError>;

    fn run(&self) -> LocalBoxFuture<'_, Result<RunReport, RunError>> {
        Box::pin(ExpiryWorker::run(self))
    }

    fn stop(&self) -> LocalBoxFuture<'_, ()> {
        Box::pin(ExpiryWorker::stop(self))
    }
}

/// Probes the core's constructor against the run's configuration and the worker rules
/// (`settings::WORKER_SETTINGS`), building with `build`; records a finding as a
/// `Note::Construction` of the replica (judged by `construction`).
pub fn probe_construction(ports: &WorkerPorts, build: impl Fn(&WorkerConfig) -> Built) {
    ports
        .clock
        .port
        .probe_construction(&ports.config, &WORKER_SETTINGS, build);
}

/// Builds the production core from `config` on clones of `ports`, for the construction probe.
fn build_core(ports: &WorkerPorts, config: &WorkerConfig) -> Built {
    let built = ExpiryWorker::new(
        config.clone(),
        ports.store.clone(),
        ports.letters.clone(),
        ports.clock.clone(),
        ports.tokens.clone(),
    );
    match built {
        Ok(core) => Built::Accepted(vec![Readback {
            accessor: "config",
            kept: core.config() == config,
        }]),
        Err(error) => Built::Refused(error.to_string()),
    }
}

/// The production worker built on one replica's ports, after its construction probe.
pub fn correct_worker_of(ports: WorkerPorts) -> SimWorker {
    probe_construction(&ports, |config| build_core(&ports, config));
    SimWorker(
        ExpiryWorker::new(
            ports.config,
            ports.store,
            ports.letters,
            ports.clock,
            ports.tokens,
        )
        .expect("scenario loading validated the worker configuration"),
    )
}

/// The factory of the production worker (`correct`).
pub fn correct_worker(ports: WorkerPorts) -> Rc<AnyWorker> {
    Rc::new(correct_worker_of(ports))
}

/// The store primitives the production core never calls (see the module docs).
pub trait RawStore {
    /// Sets the status to expired by id alone, whatever it was.
    fn expire_by_id(
        &self,
        id: ReservationId,
    ) -> impl Future<Output = Result<ExpireOutcome, StoreError>>;
    /// The ids held, due at `now` and unclaimed; claims nothing.
    fn read_due(
        &self,
        limit: u32,
        now: Now,
    ) -> impl Future<Output = Result<Vec<ReservationId>, StoreError>>;
    /// Writes the claim of `id`, over whatever claim it has.
    fn write_claim(
        &self,
        id: ReservationId,
        token: ClaimToken,
        claim_for_ms: u64,
    ) -> impl Future<Output = Result<(), StoreError>>;
    /// Frees whatever claim `id` has.
    fn release_any(&self, id: ReservationId) -> impl Future<Output = Result<(), StoreError>>;
}

/// The replica's store port (it implements both [`Store`] and [`RawStore`]).
#[derive(Clone)]
pub struct SimStore {
    port: Port<Reservations>,
    process: Rc<Process>,
}

/// The replica's dead-letter port.
#[derive(Clone)]
pub struct SimLetters(Port<Reservations>);

/// The replica's clock port.
#[derive(Clone)]
pub struct SimClock {
    port: Port<Reservations>,
    process: Rc<Process>,
}

/// The claim-token source (shared by the whole run, so tokens never repeat).
#[derive(Clone)]
pub struct SimTokens(Port<Reservations>);

fn store_error(failure: Failure) -> StoreError {
    match failure {
        Failure::Rejected => StoreError::Connection,
        Failure::Timeout | Failure::StoreTimeout => StoreError::Timeout,
        Failure::Invalid => StoreError::Invalid {
            reason: "the reservation's record is malformed or unknown".into(),
        },
    }
}

fn id32(id: ReservationId) -> u32 {
    u32::try_from(id.0).expect("reservation ids of a run fit in u32")
}

fn now_arg(now: Now) -> Option<u64> {
    match now {
        Now::StoreClock => None,
        Now::At(ms) => Some(ms),
    }
}

fn outcome(view: OutcomeView) -> ExpireOutcome {
    match view {
        OutcomeView::Expired => ExpireOutcome::Expired,
        OutcomeView::AlreadyDone => ExpireOutcome::AlreadyDone,
        OutcomeView::NotEligible => ExpireOutcome::NotEligible,
    }
}

impl SimStore {
    /// The replica this port belongs to.
    pub fn replica(&self) -> ReplicaId {
        self.port.replica()
    }

    /// The kill point (see the module docs): after an expired answer the process may die.
    async fn after_update(&self, answered: &Result<ExpireOutcome, StoreError>) {
        let world = self.port.world();
        if answered != &Ok(ExpireOutcome::Expired) || !world.fault(world.profile().system.kill) {
            return;
        }
        self.port.note(Note::Killed);
        self.process.trip();
        // The process is gone: nothing of it runs again; the driver drops the run.
        futures::future::pending::<()>().await;
    }

    async fn expire_call(&self, request: Request) -> Result<ExpireOutcome, StoreError> {
        let answered = match self.port.call(request).await {
            Answer::Expire(view) => Ok(outcome(view)),
            Answer::Failed(failure) => Err(store_error(failure)),
            other => unreachable!("an expire answered {other:?}"),
        };
        self.after_update(&answered).await;
        answered
    }

    async fn release_call(&self, request: Request) -> Result<(), StoreError> {
        let held = self.process.held.get();
        self.process.held.set(held.saturating_sub(1));
        match self.port.call(request).await {
            Answer::Released => Ok(()),
            Answer::Failed(failure) => Err(store_error(failure)),
            other => unreachable!("a release answered {other:?}"),
        }
    }

    fn reservations(&self, ids: &[u32], token: ClaimToken, until_ms: u64) -> Vec<Reservation> {
        let services = self.port.world().services();
        ids.iter()
            .map(|&id| Reservation {
                id: ReservationId(u64::from(id)),
                status: Status::Held,
                hold_until_ms: services.store.row(id).map_or(0, |row| row.hold_until_ms),
                claim_token: Some(token),
                claim_until_ms: Some(until_ms),
            })
            .collect()
    }
}

impl Store for SimStore {
    /// At its apply instant the store claims, atomically, up to `limit` reservations held,
    /// not parked, due at `now` (the store's clock unless given) and not under a live claim.
    async fn claim_expired(
        &self,
        limit: u32,
        now: Now,
        token: ClaimToken,
        claim_for_ms: u64,
    ) -> Result<Vec<Reservation>, StoreError> {
        let request = Request::Claim {
            limit,
            now: now_arg(now),
            token: token.0,
            claim_for_ms,
        };
        match self.port.call(request).await {
            Answer::Claimed { ids, until_ms } => {
                let held = self.process.held.get();
                self.process.held.set(held + ids.len() as u32);
                Ok(self.reservations(ids.as_slice(), token, until_ms))
            }
            Answer::Failed(failure) => Err(store_error(failure)),
            other => unreachable!("a claim answered {other:?}"),
        }
    }

    /// The guarded transition at its apply instant (held and due at `now`).
    async fn expire_if_held(
        &self,
        id: ReservationId,
        now: Now,
    ) -> Result<ExpireOutcome, StoreError> {
        let request = Request::Expire {
            id: id32(id),
            now: now_arg(now),
        };
        self.expire_call(request).await
    }

    /// Frees the claim only if it carries `token` (freeing nothing is not an error).
    async fn release_claim(&self, id: ReservationId, token: ClaimToken) -> Result<(), StoreError> {
        let request = Request::Release {
            id: id32(id),
            token: token.0,
        };
        self.release_call(request).await
    }
}

impl RawStore for SimStore {
    async fn expire_by_id(&self, id: ReservationId) -> Result<ExpireOutcome, StoreError> {
        self.expire_call(Request::ExpireById { id: id32(id) }).await
    }

    async fn read_due(&self, limit: u32, now: Now) -> Result<Vec<ReservationId>, StoreError> {
        let request = Request::ReadDue {
            limit,
            now: now_arg(now),
        };
        match self.port.call(request).await {
            Answer::Due(ids) => Ok(ids
                .as_slice()
                .iter()
                .map(|&id| ReservationId(u64::from(id)))
                .collect()),
            Answer::Failed(failure) => Err(store_error(failure)),
            other => unreachable!("a read of due ids answered {other:?}"),
        }
    }

    async fn write_claim(
        &self,
        id: ReservationId,
        token: ClaimToken,
        claim_for_ms: u64,
    ) -> Result<(), StoreError> {
        let request = Request::WriteClaim {
            id: id32(id),
            token: token.0,
            claim_for_ms,
        };
        match self.port.call(request).await {
            Answer::Written => {
                self.process.held.set(self.process.held.get() + 1);
                Ok(())
            }
            Answer::Failed(failure) => Err(store_error(failure)),
            other => unreachable!("a claim write answered {other:?}"),
        }
    }

    async fn release_any(&self, id: ReservationId) -> Result<(), StoreError> {
        self.release_call(Request::ReleaseAny { id: id32(id) })
            .await
    }
}

fn class_view(class: ErrorClass) -> ClassView {
    match class {
        ErrorClass::StateConflict => ClassView::StateConflict,
        ErrorClass::Timeout => ClassView::Timeout,
        ErrorClass::Connection => ClassView::Connection,
        ErrorClass::Invalid => ClassView::Invalid,
    }
}

/// The reservation a replay command names (`--id N`), if any.
pub fn replay_id(replay: &str) -> Option<u32> {
    let mut words = replay.split_whitespace();
    words.find(|word| *word == "--id")?;
    words.next()?.parse().ok()
}

/// A dead letter as it travels in an event.
pub fn letter_view(letter: &DeadLetter) -> LetterView {
    LetterView {
        id: id32(letter.reservation),
        reason: match letter.reason {
            DeadReason::NotRetryable(class) => ReasonView::NotRetryable(class_view(class)),
            DeadReason::BudgetExhausted => ReasonView::BudgetExhausted,
        },
        attempts: letter.attempts,
        first_seen_ms: letter.first_seen_ms,
        last_error: class_view(letter.last_error),
        replay_id: replay_id(&letter.replay),
    }
}

impl DeadLetters for SimLetters {
    /// At its apply instant the store records the letter and parks the reservation: no claim
    /// takes it any more (a person replays it).
    async fn record(&self, letter: DeadLetter) -> Result<(), StoreError> {
        let request = Request::DeadLetter {
            letter: letter_view(&letter),
        };
        match self.0.call(request).await {
            Answer::Recorded => Ok(()),
            Answer::Failed(failure) => Err(store_error(failure)),
            other => unreachable!("a dead letter answered {other:?}"),
        }
    }
}

/// Marks the replica between terms while it pauses holding no claim; unmarks it when the
/// pause ends or is dropped.
struct BetweenPolls<'a> {
    port: &'a Port<Reservations>,
    marked: bool,
}

impl Drop for BetweenPolls<'_> {
    fn drop(&mut self) {
        if self.marked {
            let world = self.port.world();
            world.replica(self.port.replica()).set_between_terms(false);
        }
    }
}

impl Clock for SimClock {
    /// This replica's clock (skewed, drifting, jumping as the profile says); a read is an
    /// event of the trace.
    fn now_ms(&self) -> u64 {
        self.port.now_ms()
    }

    /// At the future's first poll (not at its creation), draws the jitter from the run's
    /// choices (value 0: none), then sleeps `base_ms` plus the jitter on this replica's clock;
    /// the trace shows the whole pause. Drift scales it, clock jumps do not end it, a pause
    /// holds its wake-up (`leasesim_sim::Port::sleep` says each exactly).
    fn sleep_jittered(&self, base_ms: u64, jitter_ms: u64) -> impl Future<Output = ()> {
        let port = self.port.clone();
        let idle = self.process.held.get() == 0;
        async move {
            let world = port.world().clone();
            let drawn_ms = world.env().range(0, jitter_ms);
            let _between = BetweenPolls {
                port: &port,
                marked: idle,
            };
            if idle {
                world.replica(port.replica()).set_between_terms(true);
            }
            port.sleep(base_ms.saturating_add(drawn_ms)).await;
        }
    }
}

impl Tokens for SimTokens {
    fn fresh_token(&self) -> ClaimToken {
        ClaimToken(self.0.world().services().fresh_token())
    }
}

/// The reservation workers: the production core and the defective ones, on the world's ports.
impl Workers for Reservations {
    type Report = Result<RunReport, RunError>;
    type Ports = WorkerPorts;

    /// The ports of `replica`, built on the world.
    fn ports(world: &Rc<World<Reservations>>, replica: ReplicaId) -> WorkerPorts {
        let port = Port::new(world.clone(), replica);
        let process = world.services().process(replica);
        WorkerPorts {
            replica,
            config: world.profile().system.worker.clone(),
            store: SimStore {
                port: port.clone(),
                process: process.clone(),
            },
            letters: SimLetters(port.clone()),
            clock: SimClock {
                port: port.clone(),
                process,
            },
            tokens: SimTokens(port),
        }
    }

    /// Every worker of the reservation system: `correct` first, then the defective ones.
    fn workers() -> Vec<WorkerInfo> {
        catalogue(
            "the production worker core (reservations-worker)",
            crate::defects::DEFECTS,
        )
    }

    /// The factory of a worker by name: `correct`, or any name in [`crate::defects::DEFECTS`].
    fn factory(name: &str) -> Option<Rc<WorkerFactory>> {
        if name == "correct" {
            return Some(Rc::new(correct_worker));
        }
        let flaws = crate::defects::DEFECTS
            .iter()
            .find(|d| d.info.name == name)?
            .build;
        Some(Rc::new(move |ports: WorkerPorts| {
            Rc::new(crate::defects::engine_of(ports, flaws)) as Rc<AnyWorker>
        }))
    }
}
