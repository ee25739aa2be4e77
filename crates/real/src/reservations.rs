//! A real run of the reservations system (design 002): replicas of an expiry worker (the
//! production core or a defective one) on tokio against a reservation store on SQLite or
//! PostgreSQL, while support agents place and consume holds, judged by the reservations
//! checkers.
//!
//! Terminology:
//! - *replica*: one worker process: its gate, its clock skew, its connection, its worker, and
//!   a driver calling `run()` once (the worker polls until it is stopped).
//! - *agents*: the support application (a world task): a backlog of due holds at the start,
//!   then a hold every `place_every` with a deadline `hold_for` ahead, some of them consumed
//!   early or `race` after their deadline (racing the workers' claims and transitions), a few
//!   with a malformed record (`malformed`: every transition of it fails for good, so it ends
//!   in a dead letter). Agents place holds until the liveness phase ends.
//! - *store time*: the run clock on the epoch scale, read on the serial line just before the
//!   call's transaction (see [`crate::record`]) and passed to the adapter as `now_ms`, which
//!   its statements use as the store's `now`: the store's clock is exact, and the `Applied`
//!   event is stamped at or after it.
//! - *skew*: each replica's clock is off the store's by a drawn amount; the correct worker
//!   reads its clock only for metrics and dead letters, a worker that passes its clock as the
//!   store's `now` expires holds early.
//! - *port faults*: a request refused before it reaches the store, lost on its way, or its
//!   answer lost after the store applied it ([`crate::NetFaults`]): transient errors the retry
//!   policy must handle; and a supervisor's second `run()` while one is active.
//! - *phases* ([`crate::phases`]): safety (pauses, stops, port faults) for the run's duration,
//!   liveness (faults
//!   healed, stopped replicas restarted with fresh workers; every due hold must be expired or
//!   parked within `due_bound_ms`), shutdown (every replica stopped), end.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use futures::future::{Either, LocalBoxFuture, select};
use leasesim_events::{EventKind, ReplicaId};
use leasesim_invariants::{SituationSet, Violation};
use leasesim_reservations::checkers::{CheckConfig, Coverage, Invariant, Situation, checker_set};
use leasesim_reservations::defects::engine::Engine;
use leasesim_reservations::defects::{self, DEFECTS};
use leasesim_reservations::driver::report_view;
use leasesim_reservations::events::{
    Answer, Applied, Event, Failure, Note, OutcomeView, Request, Reservations, Stamped,
};
use leasesim_reservations::ports::{RawStore, letter_view};
use leasesim_reservations::services::answer_of;
use leasesim_stores::StoreError as AdapterError;
use leasesim_stores::reservations::{ReservationConnection, ReservationSetup};
use reservations_worker::{
    ClaimToken, Clock, DeadLetter, DeadLetters, ExpireOutcome, ExpiryWorker, Now, Reservation,
    ReservationId, RetryPolicy, RunError, RunReport, Status, Store, StoreError, Tokens,
    WorkerConfig,
};

use crate::phases::{Process, ProcessFaults, RealRun, run_phases};
use crate::record::{Line, Recorder};
use crate::{Draws, Link, NetFaults, RunClock, SpanMs, round_trip};
use crate::{RealError, StoreTarget};

/// A connection the serial line's calls run on.
pub type Connection = Box<dyn ReservationConnection + Send>;

/// The world of a real run, scaled down so a run of seconds sees many holds.
#[derive(Clone, Debug, PartialEq)]
pub struct RealSettings {
    /// Every replica's worker configuration, and what the run judges it against.
    pub worker: WorkerConfig,
    /// Holds placed at the start, already due.
    pub backlog: u32,
    pub place_every: SpanMs,
    /// A hold's deadline after its placement.
    pub hold_for: SpanMs,
    /// The chance a hold is consumed; of those, the chance it is consumed `race` after its
    /// deadline rather than before it.
    pub consume_probability: f64,
    pub at_deadline: f64,
    pub race: SpanMs,
    /// The chance a hold's record is malformed.
    pub malformed: f64,
    /// One-way latency of every store call.
    pub latency: SpanMs,
    /// Calls refused, requests lost and replies lost around the store (safety phase only).
    pub net: NetFaults,
    /// The chance that a supervisor calls a running worker's `run()` a second time (safety
    /// phase only).
    pub second_run_probability: f64,
    /// Each replica's clock is off the store's by up to this much, either way.
    pub skew_ms: u64,
    /// Pauses (up to longer than a claim, so another worker can take the holds over), stops,
    /// and shutdown's bound.
    pub process: ProcessFaults,
    /// Once faults heal, how long a due hold may stay held.
    pub due_bound_ms: u64,
}

impl Default for RealSettings {
    fn default() -> RealSettings {
        RealSettings {
            worker: WorkerConfig {
                batch_size: 4,
                claim_for_ms: 400,
                idle_ms: 100,
                idle_jitter_ms: 200,
                retry: RetryPolicy {
                    initial_backoff_ms: 20,
                    max_backoff_ms: 200,
                    max_attempts: 4,
                },
            },
            backlog: 20,
            place_every: SpanMs::new(20, 80),
            hold_for: SpanMs::new(100, 1_500),
            consume_probability: 0.4,
            at_deadline: 0.6,
            race: SpanMs::new(0, 300),
            malformed: 0.03,
            latency: SpanMs::new(1, 15),
            second_run_probability: 0.3,
            net: NetFaults {
                reject: 0.03,
                request_lost: 0.02,
                reply_lost: 0.03,
                timeout_ms: 250,
            },
            skew_ms: 300,
            process: ProcessFaults::DEFAULT,
            due_bound_ms: 3_000,
        }
    }
}

/// What to run.
#[derive(Clone, Debug, PartialEq)]
pub struct RealConfig {
    pub target: StoreTarget,
    /// `correct` (the production core) or a defective worker's name.
    pub worker: String,
    pub replicas: u16,
    /// The safety phase, then the liveness phase.
    pub duration_ms: u64,
    pub liveness_ms: u64,
    /// Seeds the fault plan (agents, pauses, stops, skews, latencies, port faults).
    pub seed: u64,
    pub settings: RealSettings,
    /// Keep every event (for a trace); otherwise only counted.
    pub keep_events: bool,
}

/// Counters of a real run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RealStats {
    pub events: u64,
    pub calls: u64,
    pub placed: u64,
    pub consumed: u64,
    /// Holds a transition expired (guarded or not).
    pub expired: u64,
    /// Holds claimed, over all claims.
    pub claimed: u64,
    pub dead_letters: u64,
    pub refused: u64,
    pub pauses: u64,
    pub stops: u64,
    /// Calls the store failed, and the last such error.
    pub store_errors: u64,
    pub last_store_error: Option<String>,
    pub wall_ms: u64,
}

fn count(kind: &EventKind<Reservations>, stats: &mut RealStats) {
    stats.events += 1;
    match kind {
        EventKind::Call { .. } => stats.calls += 1,
        EventKind::Rejected { .. } => stats.refused += 1,
        EventKind::Note(Note::Placed { .. }) => stats.placed += 1,
        EventKind::Note(Note::Consumed { .. }) => stats.consumed += 1,
        EventKind::Applied { applied, .. } => match applied {
            Applied::Expired { .. } | Applied::ExpiredById { .. } => stats.expired += 1,
            Applied::Claimed { ids, .. } => stats.claimed += ids.len() as u64,
            Applied::ClaimWritten { .. } => stats.claimed += 1,
            Applied::Parked { .. } => stats.dead_letters += 1,
            _ => {}
        },
        EventKind::Paused { .. } => stats.pauses += 1,
        EventKind::StopCalled => stats.stops += 1,
        _ => {}
    }
}

/// What a real run found.
#[derive(Clone, Debug)]
pub struct RealReport {
    /// The first invariant the run broke, if any.
    pub violation: Option<Violation<Reservations>>,
    pub coverage: SituationSet<Situation>,
    pub stats: RealStats,
    /// Every event, when kept.
    pub events: Vec<Stamped<Event>>,
}

impl RealReport {
    /// `pass: ...`, `LIVENESS: sentence` or `VIOLATION name: sentence`.
    pub fn verdict_line(&self) -> String {
        match &self.violation {
            None => "pass: every invariant held".into(),
            Some(v) if v.invariant == Invariant::Liveness => format!("LIVENESS: {}", v.sentence),
            Some(v) => format!("VIOLATION {}: {}", v.invariant, v.sentence),
        }
    }
}

type Rec = Recorder<Reservations, leasesim_reservations::checkers::AnyChecker, Coverage, RealStats>;

/// One replica of the run.
struct Replica {
    id: ReplicaId,
    process: Process,
    /// This replica's clock minus the store's.
    skew_ms: i64,
    world: Rc<World>,
    connection: Arc<Mutex<Connection>>,
    worker: RefCell<Option<Rc<dyn RealWorker>>>,
}

/// An expiry worker a real run can drive (the production core or a defective one, on the
/// real ports).
pub trait RealWorker {
    fn run(&self) -> LocalBoxFuture<'_, Result<RunReport, RunError>>;
    fn stop(&self) -> LocalBoxFuture<'_, ()>;
}

/// The run: its recorder, its serial line, its fault plan and the agents' connection.
struct World {
    recorder: Rc<Rec>,
    line: Line<Reservations>,
    draws: Draws,
    config: RealConfig,
    agents: Arc<Mutex<Connection>>,
    /// Deadlines of the holds placed, by id (the store answers ids; the worker's
    /// `Reservation` carries its deadline).
    deadlines: RefCell<BTreeMap<u32, u64>>,
    /// The last claim token handed out.
    last_token: Cell<u64>,
    /// Woken when a stop resolves.
    changed: retention_worker::Notify,
}

impl World {
    fn clock(&self) -> RunClock {
        self.recorder.clock()
    }

    fn settings(&self) -> &RealSettings {
        &self.config.settings
    }

    async fn sleep_ms(&self, ms: u64) {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
}

/// The events and the answer of one store call, from what the adapter did.
fn outcome(
    replica: ReplicaId,
    call: u64,
    request: Request,
    applied: Result<Applied, AdapterError>,
) -> (Vec<Event>, Result<Answer, String>) {
    match applied {
        Ok(applied) => {
            let event = Event::of(replica, EventKind::Applied { call, applied });
            (vec![event], Ok(answer_of(&applied)))
        }
        Err(error) => {
            let op = request.op();
            let event = Event::of(replica, EventKind::Rejected { call, op });
            (vec![event], Err(error.to_string()))
        }
    }
}

/// Sends `request` for `replica`: it leaves when the process runs, crosses the drawn
/// latency (or is refused or lost on the way), is applied on the serial line, and its answer
/// crosses back (or is lost, and the caller times out) and is read when the process runs.
async fn call(replica: &Replica, request: Request) -> Answer {
    let (world, recorder) = (&replica.world, &replica.world.recorder);
    let link = Link {
        gate: &replica.process.gate,
        draws: &world.draws,
        clock: world.clock(),
        net: world.settings().net,
    };
    let next_id = || recorder.call_id();
    let emit = |kind| recorder.emit_for(replica.id, kind);
    let apply = |id| apply(replica, id, request);
    round_trip(
        link,
        request,
        world.settings().latency,
        next_id,
        emit,
        apply,
    )
    .await
}

/// Applies `request` (call `id`) on the serial line and records what the store did: the
/// answer, and whether the store applied the call (a store error refuses it).
async fn apply(replica: &Replica, id: u64, request: Request) -> (Answer, bool) {
    let (world, who) = (&replica.world, replica.id);
    let connection = replica.connection.clone();
    let (ticket, answer) = world
        .line
        .apply(move |now_ms| {
            let mut connection = connection.lock().unwrap_or_else(|p| p.into_inner());
            outcome(who, id, request, connection.apply(request, now_ms))
        })
        .await;
    world.recorder.recorded(ticket).await;
    match answer {
        Ok(answer) => (answer, true),
        Err(error) => {
            let mut stats = world.recorder.stats();
            stats.store_errors += 1;
            stats.last_store_error = Some(error);
            (Answer::Failed(Failure::Rejected), false)
        }
    }
}

/// The replica's store port on the real store (both [`Store`] and the primitives).
#[derive(Clone)]
pub struct RealStore(Rc<Replica>);

/// The replica's dead-letter port.
#[derive(Clone)]
pub struct RealLetters(Rc<Replica>);

/// The replica's clock: the store's clock plus the replica's skew; every read is an event.
#[derive(Clone)]
pub struct RealClock(Rc<Replica>);

/// Claim tokens: numbered across the run, so no two claims share one.
#[derive(Clone)]
pub struct RealTokens(Rc<Replica>);

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

fn expire_answer(answer: Answer) -> Result<ExpireOutcome, StoreError> {
    match answer {
        Answer::Expire(OutcomeView::Expired) => Ok(ExpireOutcome::Expired),
        Answer::Expire(OutcomeView::AlreadyDone) => Ok(ExpireOutcome::AlreadyDone),
        Answer::Expire(OutcomeView::NotEligible) => Ok(ExpireOutcome::NotEligible),
        Answer::Failed(failure) => Err(store_error(failure)),
        other => unreachable!("a transition answered {other:?}"),
    }
}

fn release_answer(answer: Answer) -> Result<(), StoreError> {
    match answer {
        Answer::Released => Ok(()),
        Answer::Failed(failure) => Err(store_error(failure)),
        other => unreachable!("a release answered {other:?}"),
    }
}

impl RealStore {
    fn reservations(&self, ids: &[u32], token: ClaimToken, until_ms: u64) -> Vec<Reservation> {
        let deadlines = self.0.world.deadlines.borrow();
        ids.iter()
            .map(|&id| Reservation {
                id: ReservationId(u64::from(id)),
                status: Status::Held,
                hold_until_ms: deadlines.get(&id).copied().unwrap_or(0),
                claim_token: Some(token),
                claim_until_ms: Some(until_ms),
            })
            .collect()
    }
}

impl Store for RealStore {
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
        match call(&self.0, request).await {
            Answer::Claimed { ids, until_ms } => {
                Ok(self.reservations(ids.as_slice(), token, until_ms))
            }
            Answer::Failed(failure) => Err(store_error(failure)),
            other => unreachable!("a claim answered {other:?}"),
        }
    }

    async fn expire_if_held(
        &self,
        id: ReservationId,
        now: Now,
    ) -> Result<ExpireOutcome, StoreError> {
        let request = Request::Expire {
            id: id32(id),
            now: now_arg(now),
        };
        expire_answer(call(&self.0, request).await)
    }

    async fn release_claim(&self, id: ReservationId, token: ClaimToken) -> Result<(), StoreError> {
        let request = Request::Release {
            id: id32(id),
            token: token.0,
        };
        release_answer(call(&self.0, request).await)
    }
}

impl RawStore for RealStore {
    async fn expire_by_id(&self, id: ReservationId) -> Result<ExpireOutcome, StoreError> {
        expire_answer(call(&self.0, Request::ExpireById { id: id32(id) }).await)
    }

    async fn read_due(&self, limit: u32, now: Now) -> Result<Vec<ReservationId>, StoreError> {
        let request = Request::ReadDue {
            limit,
            now: now_arg(now),
        };
        match call(&self.0, request).await {
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
        match call(&self.0, request).await {
            Answer::Written => Ok(()),
            Answer::Failed(failure) => Err(store_error(failure)),
            other => unreachable!("a claim write answered {other:?}"),
        }
    }

    async fn release_any(&self, id: ReservationId) -> Result<(), StoreError> {
        release_answer(call(&self.0, Request::ReleaseAny { id: id32(id) }).await)
    }
}

impl DeadLetters for RealLetters {
    async fn record(&self, letter: DeadLetter) -> Result<(), StoreError> {
        let request = Request::DeadLetter {
            letter: letter_view(&letter),
        };
        match call(&self.0, request).await {
            Answer::Recorded => Ok(()),
            Answer::Failed(failure) => Err(store_error(failure)),
            other => unreachable!("a dead letter answered {other:?}"),
        }
    }
}

impl Clock for RealClock {
    fn now_ms(&self) -> u64 {
        let replica = &self.0;
        let store_ms = replica.world.clock().now_ms();
        let now_ms = store_ms.saturating_add_signed(replica.skew_ms);
        let recorder = &replica.world.recorder;
        recorder.emit_for(replica.id, EventKind::ClockRead { now_ms });
        now_ms
    }

    fn sleep_jittered(&self, base_ms: u64, jitter_ms: u64) -> impl Future<Output = ()> {
        let replica = self.0.clone();
        async move {
            let world = &replica.world;
            let duration_ms = base_ms.saturating_add(world.draws.range(0, jitter_ms));
            let timer = EventKind::TimerSet { duration_ms };
            world.recorder.emit_for(replica.id, timer);
            world.sleep_ms(duration_ms).await;
            replica.process.gate.pass(&world.clock()).await;
        }
    }
}

impl Tokens for RealTokens {
    fn fresh_token(&self) -> ClaimToken {
        let world = &self.0.world;
        let token = world.last_token.get() + 1;
        world.last_token.set(token);
        ClaimToken(token)
    }
}

type RealEngine = Engine<RealStore, RealLetters, RealClock, RealTokens>;
type RealCore = ExpiryWorker<RealStore, RealLetters, RealClock, RealTokens>;

impl RealWorker for RealCore {
    fn run(&self) -> LocalBoxFuture<'_, Result<RunReport, RunError>> {
        Box::pin(ExpiryWorker::run(self))
    }
    fn stop(&self) -> LocalBoxFuture<'_, ()> {
        Box::pin(ExpiryWorker::stop(self))
    }
}

impl RealWorker for RealEngine {
    fn run(&self) -> LocalBoxFuture<'_, Result<RunReport, RunError>> {
        Box::pin(Engine::run(self))
    }
    fn stop(&self) -> LocalBoxFuture<'_, ()> {
        Box::pin(Engine::stop(self))
    }
}

/// The workers a real run can drive: `correct`, then the defective ones.
pub fn workers() -> Vec<&'static str> {
    std::iter::once("correct")
        .chain(DEFECTS.iter().map(|d| d.info.name))
        .collect()
}

/// Builds the worker `name` on `replica`'s real ports.
fn build_worker(name: &str, replica: &Rc<Replica>) -> Option<Rc<dyn RealWorker>> {
    let config = replica.world.settings().worker.clone();
    let ports = (
        RealStore(replica.clone()),
        RealLetters(replica.clone()),
        RealClock(replica.clone()),
        RealTokens(replica.clone()),
    );
    if name == "correct" {
        let core = ExpiryWorker::new(config, ports.0, ports.1, ports.2, ports.3).ok()?;
        return Some(Rc::new(core));
    }
    let flaws = defects::DEFECTS.iter().find(|d| d.info.name == name)?.build;
    Some(Rc::new(Engine::new(config, ports, flaws)))
}

/// Places one hold due `hold_ms` from now (negative: overdue), maybe malformed, and maybe
/// schedules its consume.
async fn place(world: &Rc<World>, hold_ms: i64) {
    let malformed = world.draws.coin(world.settings().malformed);
    let agents = world.agents.clone();
    let (ticket, placed) = world
        .line
        .apply(move |now_ms| {
            let hold_until_ms = now_ms.saturating_add_signed(hold_ms);
            let mut connection = agents.lock().unwrap_or_else(|p| p.into_inner());
            match connection.place(hold_until_ms, malformed) {
                Ok(id) => {
                    let note = Note::Placed {
                        id,
                        hold_until_ms,
                        malformed,
                    };
                    (vec![Event::world_note(note)], Ok((id, hold_until_ms)))
                }
                Err(error) => (Vec::new(), Err(error.to_string())),
            }
        })
        .await;
    world.recorder.recorded(ticket).await;
    let (id, hold_until_ms) = match placed {
        Ok(placed) => placed,
        Err(error) => return agent_error(world, error),
    };
    world.deadlines.borrow_mut().insert(id, hold_until_ms);
    let settings = world.settings();
    if !world.draws.coin(settings.consume_probability) {
        return;
    }
    let now_ms = world.clock().now_ms();
    let at_ms = if world.draws.coin(settings.at_deadline) {
        hold_until_ms + settings.race.draw(&world.draws)
    } else {
        now_ms
            + world
                .draws
                .range(0, hold_until_ms.saturating_sub(now_ms + 1))
    };
    tokio::task::spawn_local(consume_at(world.clone(), id, at_ms));
}

fn agent_error(world: &World, error: String) {
    let mut stats = world.recorder.stats();
    stats.store_errors += 1;
    stats.last_store_error = Some(error);
}

/// An agent consumes `id` at store time `at_ms`.
async fn consume_at(world: Rc<World>, id: u32, at_ms: u64) {
    let clock = world.clock();
    clock
        .sleep_until(at_ms.saturating_sub(leasesim_events::EPOCH_MS))
        .await;
    let agents = world.agents.clone();
    let (ticket, consumed) = world
        .line
        .apply(move |_| {
            let mut connection = agents.lock().unwrap_or_else(|p| p.into_inner());
            match connection.consume(id) {
                Ok(Ok(hold_until_ms)) => {
                    let note = Note::Consumed { id, hold_until_ms };
                    (vec![Event::world_note(note)], Ok(()))
                }
                Ok(Err(status)) => {
                    let note = Note::ConsumeRefused { id, status };
                    (vec![Event::world_note(note)], Ok(()))
                }
                Err(error) => (Vec::new(), Err(error.to_string())),
            }
        })
        .await;
    world.recorder.recorded(ticket).await;
    if let Err(error) = consumed {
        agent_error(&world, error);
    }
}

/// The agents: the backlog, then a hold every `place_every` until the liveness phase ends.
async fn agents(world: Rc<World>) {
    let settings = world.settings().clone();
    for _ in 0..settings.backlog {
        let overdue_ms = world.draws.range(0, settings.hold_for.max);
        place(&world, -i64::try_from(overdue_ms).unwrap_or(i64::MAX)).await;
    }
    let end_ms = world.config.duration_ms + world.config.liveness_ms;
    loop {
        world
            .sleep_ms(settings.place_every.draw(&world.draws))
            .await;
        if world.clock().elapsed_ms() >= end_ms {
            return;
        }
        let hold_ms = settings.hold_for.draw(&world.draws);
        place(&world, i64::try_from(hold_ms).unwrap_or(i64::MAX)).await;
    }
}

/// The run as the shared phases drive it: the world, its agents and its replicas.
struct Run {
    world: Rc<World>,
    replicas: Vec<Rc<Replica>>,
}

impl RealRun for Run {
    type V = Reservations;

    fn clock(&self) -> RunClock {
        self.world.clock()
    }

    fn draws(&self) -> &Draws {
        &self.world.draws
    }

    fn emit(&self, event: Event) {
        self.world.recorder.emit(event);
    }

    fn phases_ms(&self) -> (u64, u64) {
        (self.world.config.duration_ms, self.world.config.liveness_ms)
    }

    fn process_faults(&self) -> ProcessFaults {
        self.world.settings().process
    }

    fn replicas(&self) -> usize {
        self.replicas.len()
    }

    fn process(&self, replica: usize) -> &Process {
        &self.replicas[replica].process
    }

    fn changed(&self) -> &retention_worker::Notify {
        &self.world.changed
    }

    fn start_worker(run: &Rc<Run>, replica: usize) {
        let replica = &run.replicas[replica];
        let name = &replica.world.config.worker;
        let worker = build_worker(name, replica).expect("checked before the run");
        *replica.worker.borrow_mut() = Some(worker.clone());
        let generation = replica.process.generation();
        tokio::task::spawn_local(drive(replica.clone(), worker, generation));
    }

    fn stop_worker(&self, replica: usize) -> Option<LocalBoxFuture<'static, ()>> {
        let worker = self.replicas[replica].worker.borrow().clone()?;
        Some(Box::pin(async move { worker.stop().await }))
    }

    /// The agents place and consume holds until the liveness phase ends.
    fn safety_starts(run: &Rc<Run>) {
        tokio::task::spawn_local(agents(run.world.clone()));
    }
}

/// Calls `run()` once after a drawn delay (the worker polls until it is stopped) and records
/// its report, unless a fresh worker replaced this one first. With `second_run_probability`
/// (safety phase only) a supervisor calls `run()` again while the first call is active.
async fn drive(replica: Rc<Replica>, worker: Rc<dyn RealWorker>, generation: u32) {
    let world = &replica.world;
    world.sleep_ms(world.draws.range(0, 200)).await;
    replica.process.gate.pass(&world.clock()).await;
    if replica.process.replaced_since(generation) {
        return;
    }
    let run = 1;
    let started = Event::note_of(replica.id, Note::RunStarted { run });
    world.recorder.emit(started);
    let result = {
        let running = std::pin::pin!(worker.run());
        let second = std::pin::pin!(second_run(&replica, &*worker, run));
        match select(running, second).await {
            Either::Left((result, _)) => result,
            Either::Right(((), running)) => running.await,
        }
    };
    let report = report_view(&result);
    let ended = Event::note_of(replica.id, Note::RunEnded { run, report });
    world.recorder.emit(ended);
}

/// The second-run fault: a supervisor that takes the running worker for hung calls `run()`
/// again 1 to 200 ms after it started, and notes how that call ended (`SecondRun`); never
/// completes unless drawn.
async fn second_run(replica: &Replica, worker: &dyn RealWorker, run: u32) {
    let world = &replica.world;
    if !world.draws.fault(world.settings().second_run_probability) {
        return std::future::pending().await;
    }
    world.sleep_ms(world.draws.range(1, 200)).await;
    let end = report_view(&worker.run().await).end;
    let note = Note::SecondRun { run, end };
    world.recorder.emit(Event::note_of(replica.id, note));
}

/// Invariants that judge an exact virtual instant. None of the reservation system's do: the
/// store-side ones judge the store's own history (every call applied one at a time, in the
/// order the checkers read, with the store's time as the adapter used it), the pauses and
/// backoffs are judged by the lengths the worker asked for (`TimerSet`), not by when it woke.
pub const EXACT_INSTANT: [Invariant; 0] = [];

/// What a real run checks: every invariant but the [`EXACT_INSTANT`] ones.
pub fn real_time_invariants() -> Vec<Invariant> {
    Invariant::ALL
        .iter()
        .copied()
        .filter(|invariant| !EXACT_INSTANT.contains(invariant))
        .collect()
}

/// Checks `config` before any work.
fn check(config: &RealConfig) -> Result<(), RealError> {
    if !workers().contains(&config.worker.as_str()) {
        return Err(RealError::UnknownWorker {
            given: config.worker.clone(),
            known: workers(),
        });
    }
    if config.replicas == 0 {
        return Err(RealError::BadConfig(
            "a run needs at least one replica".into(),
        ));
    }
    if config.duration_ms < 100 {
        return Err(RealError::BadConfig(
            "a run's duration is at least 100ms".into(),
        ));
    }
    let batch = config.settings.worker.batch_size;
    if batch as usize > leasesim_reservations::events::MAX_BATCH {
        return Err(RealError::BadConfig(format!(
            "worker settings: a batch of {batch} is above the events' {}",
            leasesim_reservations::events::MAX_BATCH
        )));
    }
    config
        .settings
        .net
        .validate()
        .map_err(RealError::BadConfig)?;
    config
        .settings
        .worker
        .validate()
        .map_err(|error| RealError::BadConfig(format!("worker settings: {error}")))
}

fn recorder(config: &RealConfig, clock: RunClock) -> Rec {
    let worker = &config.settings.worker;
    let checks = CheckConfig {
        batch_size: worker.batch_size,
        claim_for_ms: worker.claim_for_ms,
        idle_ms: worker.idle_ms,
        idle_jitter_ms: worker.idle_jitter_ms,
        retry: worker.retry.clone(),
        due_bound_ms: config.settings.due_bound_ms,
    };
    let checkers = checker_set(&checks, &real_time_invariants());
    Recorder::new(clock, checkers, Coverage::new(), config.keep_events, count)
}

/// Whatever must live as long as the run's connections (a PostgreSQL store drops its schema
/// when dropped).
type Guard = Option<Box<dyn std::any::Any>>;

/// A fresh, empty store at `target` (the guard keeps a PostgreSQL schema until dropped), and
/// `count` connections to it.
fn connect(target: &StoreTarget, count: usize) -> Result<(Vec<Connection>, Guard), AdapterError> {
    let setup = ReservationSetup::default();
    match target {
        StoreTarget::Sqlite { path } => {
            use leasesim_stores::sqlite::{self, reservations as sql};
            crate::remove_sqlite(path);
            sql::create(&mut sqlite::open_file(path)?, &setup)?;
            let connections = (0..count)
                .map(|_| {
                    let connection = sqlite::open_file(path)?;
                    let adapter = sql::SqliteReservations::new(connection, Default::default());
                    Ok(Box::new(adapter) as Connection)
                })
                .collect::<Result<_, AdapterError>>()?;
            Ok((connections, None))
        }
        StoreTarget::Postgres { url, schema } => postgres_connections(url, schema, count),
        StoreTarget::Redis { .. } => Err(AdapterError::Refused(
            "the reservations system's store runs on sqlite or postgres, not redis".into(),
        )),
    }
}

#[cfg(feature = "postgres")]
fn postgres_connections(
    url: &str,
    schema: &str,
    count: usize,
) -> Result<(Vec<Connection>, Guard), AdapterError> {
    use leasesim_stores::postgres::reservations::PgReservationStore;
    use leasesim_stores::reservations::ReservationStore;
    let mut store = PgReservationStore::connect(url, schema)?;
    let connections = store
        .open(&ReservationSetup::default(), count)?
        .into_iter()
        .map(|connection| Box::new(connection) as Connection)
        .collect();
    Ok((connections, Some(Box::new(store))))
}

#[cfg(not(feature = "postgres"))]
fn postgres_connections(
    _url: &str,
    _schema: &str,
    _count: usize,
) -> Result<(Vec<Connection>, Guard), AdapterError> {
    Err(AdapterError::Refused(
        "this build has no PostgreSQL client: build with `--features postgres`".into(),
    ))
}

/// The run's replicas, each on one of `connections`, with drawn skews.
fn replicas_on(world: &Rc<World>, connections: Vec<Connection>) -> Vec<Rc<Replica>> {
    let skew_ms = world.settings().skew_ms;
    connections
        .into_iter()
        .enumerate()
        .map(|(index, connection)| {
            let drawn = world.draws.range(0, 2 * skew_ms);
            let id = ReplicaId(u16::try_from(index).expect("at most u16::MAX replicas"));
            Rc::new(Replica {
                id,
                process: Process::new(id),
                skew_ms: i64::try_from(drawn).unwrap_or(0) - i64::try_from(skew_ms).unwrap_or(0),
                world: world.clone(),
                connection: Arc::new(Mutex::new(connection)),
                worker: RefCell::new(None),
            })
        })
        .collect()
}

/// Sets up the store, runs the agents and the replicas through the phases (ending at the
/// first violation), and reports the checkers' verdict and the coverage.
pub fn run(config: &RealConfig) -> Result<RealReport, RealError> {
    check(config)?;
    let replicas = usize::from(config.replicas);
    let (mut connections, guard) =
        connect(&config.target, replicas + 1).map_err(RealError::Store)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|error| RealError::BadConfig(format!("cannot start tokio: {error}")))?;
    let local = tokio::task::LocalSet::new();
    let clock = RunClock::start();
    let recorder = Rc::new(recorder(config, clock));
    let (line, queue) = Line::new(clock);
    let agents = connections.pop().expect("one per replica, plus one");
    let world = Rc::new(World {
        recorder: recorder.clone(),
        line,
        draws: Draws::seeded(config.seed),
        config: config.clone(),
        agents: Arc::new(Mutex::new(agents)),
        deadlines: RefCell::new(BTreeMap::new()),
        last_token: Cell::new(0),
        changed: retention_worker::Notify::new(),
    });
    let replicas = replicas_on(&world, connections);
    let end_ms = local.block_on(&runtime, async {
        let pump = recorder.clone();
        tokio::task::spawn_local(async move { pump.pump(queue).await });
        let halted = recorder.changed.wait_until(|| recorder.halted());
        let run = Rc::new(Run {
            world: world.clone(),
            replicas: replicas.clone(),
        });
        let phases = run_phases(run);
        match select(std::pin::pin!(phases), std::pin::pin!(halted)).await {
            Either::Left(((), _)) | Either::Right(((), _)) => clock.elapsed_ms(),
        }
    });
    drop(local);
    // The workers hold their replicas' ports: break the cycle so connections close now.
    for replica in &replicas {
        replica.worker.borrow_mut().take();
    }
    drop((replicas, world, runtime, guard));
    let findings = recorder.finish(end_ms);
    let mut stats = findings.stats;
    stats.wall_ms = end_ms;
    Ok(RealReport {
        violation: findings.violation,
        coverage: findings.coverage,
        stats,
        events: findings.events,
    })
}
