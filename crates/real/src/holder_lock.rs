//! A real run of the holder-lock system (design 004): replicas of a job runner (the production
//! core or a defective one) on tokio, claiming one key on Redis, judged by the holder-lock
//! checkers.
//!
//! Terminology:
//! - *replica*: one worker process: its gate, its Redis connection, its worker, its job, and
//!   a driver calling `run()` (one attempt) on a jittered schedule.
//! - *observed call*: every store call runs as one Redis script that also answers what the
//!   key held when it ran ([`leasesim_stores::redis::holder_lock::RedisConnection::observe`]),
//!   so each `Applied` carries the exact facts (which token refused a create, which one a
//!   delete removed, which one a write replaced), not a guess from the answer.
//! - *writer*: who wrote a token. Redis keeps only the token; the run knows which replica's
//!   call wrote each entry (every write goes through its serial line), and names it.
//! - *lifetime end*: Redis decides it on its own clock. The run reads its clock on the serial
//!   line just before the command (`t0`) and records `t0 + lifetime` as the entry's end:
//!   Redis set it at `t0 + d` for some `d` between 0 and the command's round trip (well under
//!   a millisecond on one machine; its clock and ours both count real time), so the recorded
//!   end is never later than Redis's. A judgement "the claim had run out" (no second job
//!   before the first's claim ended) can therefore never be wrong; a judgement "the claim was
//!   still live" (job and steps under the claim, claim kept) could be wrong only within that
//!   round trip, and a correct worker stays a fifth of the lifetime (120 ms here) away from
//!   it: it trusts its claim for four fifths of the lifetime from the moment it sent the
//!   create or renewal. No invariant is skipped; the store's own expiry instant is not seen,
//!   so no `Expired` note is recorded (checkers judge lifetimes from the `Applied` events).
//! - *phases* ([`crate::phases`]): safety (pauses, stops, port faults, the store forgetting
//!   keys) for the run's duration, liveness (faults healed,
//!   stopped replicas restarted with fresh workers), shutdown, end.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use futures::future::{Either, LocalBoxFuture, select};
use holder_lock_worker::{
    AttemptEnd, AttemptReport, ClaimConfig, Clock, HolderToken, Job, JobError, JobRunner, Removal,
    Renewal, RunError, Store, StoreError, TokenSource,
};
use leasesim_events::{EventKind, NetFailure, ReplicaId};
use leasesim_holder_lock::checkers::{CheckConfig, Coverage, Invariant, Situation, checker_set};
use leasesim_holder_lock::defects::DEFECTS;
use leasesim_holder_lock::defects::engine::Engine;
use leasesim_holder_lock::driver::ended;
use leasesim_holder_lock::events::{
    Answer, Applied, Event, Forgetting, Held, HolderLock, Key, Note, Request, Stamped,
};
use leasesim_invariants::{SituationSet, Violation};
use leasesim_stores::StoreError as AdapterError;
use leasesim_stores::holder_lock::{ClaimSetup, ClaimStoreKind};
use leasesim_stores::redis::holder_lock::{Observed, RedisConnection, RedisStore};

use crate::RealError;
use crate::phases::{Process, ProcessFaults, RealRun, run_phases};
use crate::record::{Line, Recorder};
use crate::{Draws, Link, NetFaults, RunClock, SpanMs, round_trip};

/// The world of a real run, scaled down so a run of seconds sees many attempts.
#[derive(Clone, Debug, PartialEq)]
pub struct RealSettings {
    /// Every replica's claim: its lifetime and renewal, and what the run judges against.
    pub claim: ClaimConfig,
    /// The pause before each attempt.
    pub run_every: SpanMs,
    /// A job's length: usually `job`, with `long_share` `long_job`; a step every `step_ms`.
    pub job: SpanMs,
    pub long_job: SpanMs,
    pub long_share: f64,
    pub step_ms: u64,
    /// The chance a job step fails.
    pub job_fail: f64,
    /// One-way latency of every store call.
    pub latency: SpanMs,
    /// Calls refused, requests lost and replies lost around the store (safety phase only).
    pub net: NetFaults,
    /// What the store forgets on its own (safety phase only).
    pub forgetting: StoreForgetting,
    /// Pauses (up to longer than a lifetime, so another replica can take the key), stops,
    /// and shutdown's bound.
    pub process: ProcessFaults,
    /// Once faults heal, how long an attempt may run.
    pub attempt_bound_ms: u64,
}

/// What a volatile store does on its own, done to the real Redis until faults heal: a draw
/// every `every`, which with `evict` deletes the claim key (memory pressure) and with
/// `restart` deletes every key (a restart without persistence). Each is noted as the
/// simulated store notes it (`Forgot`, with the claim it held), on the serial line.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StoreForgetting {
    pub every: SpanMs,
    pub evict: f64,
    pub restart: f64,
}

impl StoreForgetting {
    /// Refuses chances outside 0..=1 and an eviction and a restart that add up past 1.
    pub fn validate(&self) -> Result<(), String> {
        let (evict, restart) = (self.evict, self.restart);
        let chance = |p: f64| (0.0..=1.0).contains(&p);
        match chance(evict) && chance(restart) && evict + restart <= 1.0 {
            true => Ok(()),
            false => Err(format!(
                "store forgetting: evict {evict} and restart {restart} are not chances that \
                 add up to at most 1"
            )),
        }
    }
}

/// `every 500..2000ms: evict p=0.25, restart p=0.05`.
impl std::fmt::Display for StoreForgetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (every, evict, restart) = (self.every, self.evict, self.restart);
        write!(
            f,
            "every {}..{}ms: evict p={evict}, restart p={restart}",
            every.min, every.max
        )
    }
}

impl Default for RealSettings {
    fn default() -> RealSettings {
        RealSettings {
            claim: ClaimConfig {
                key: leasesim_holder_lock::events::CLAIM_KEY.into(),
                lifetime_ms: 600,
                renew_every_ms: Some(150),
            },
            run_every: SpanMs::new(20, 150),
            job: SpanMs::new(100, 500),
            long_job: SpanMs::new(800, 2_000),
            long_share: 0.2,
            step_ms: 50,
            job_fail: 0.01,
            latency: SpanMs::new(1, 10),
            forgetting: StoreForgetting {
                every: SpanMs::new(500, 2_000),
                evict: 0.25,
                restart: 0.05,
            },
            net: NetFaults {
                reject: 0.02,
                request_lost: 0.02,
                reply_lost: 0.03,
                timeout_ms: 300,
            },
            process: ProcessFaults::DEFAULT,
            attempt_bound_ms: 5_000,
        }
    }
}

/// What to run.
#[derive(Clone, Debug, PartialEq)]
pub struct RealConfig {
    /// The Redis server (`redis://127.0.0.1:6379/`); the run uses a fresh namespace.
    pub url: String,
    /// `correct` (the production core) or a defective worker's name.
    pub worker: String,
    pub replicas: u16,
    pub duration_ms: u64,
    pub liveness_ms: u64,
    /// Seeds the fault plan (jobs, pauses, stops, latencies, port faults, forgetting, tokens).
    pub seed: u64,
    pub settings: RealSettings,
    pub keep_events: bool,
}

/// Counters of a real run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RealStats {
    pub events: u64,
    pub calls: u64,
    pub attempts: u64,
    /// Creates that won, jobs started, job steps taken.
    pub claims: u64,
    pub jobs: u64,
    pub steps: u64,
    /// Releases that found the claim gone (as the store applied them).
    pub found_gone: u64,
    pub pauses: u64,
    pub stops: u64,
    pub store_errors: u64,
    pub last_store_error: Option<String>,
    pub wall_ms: u64,
}

fn count(kind: &EventKind<HolderLock>, stats: &mut RealStats) {
    stats.events += 1;
    match kind {
        EventKind::Call { .. } => stats.calls += 1,
        EventKind::Note(Note::AttemptStarted { .. }) => stats.attempts += 1,
        EventKind::Note(Note::JobStarted { .. }) => stats.jobs += 1,
        EventKind::Note(Note::JobStep { .. }) => stats.steps += 1,
        EventKind::Applied { applied, .. } => match applied {
            Applied::Created {
                key: Key::Claim, ..
            } => stats.claims += 1,
            Applied::NotDeleted {
                key: Key::Claim, ..
            } => stats.found_gone += 1,
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
    pub violation: Option<Violation<HolderLock>>,
    pub coverage: SituationSet<Situation>,
    pub stats: RealStats,
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

type Rec = Recorder<HolderLock, leasesim_holder_lock::checkers::AnyChecker, Coverage, RealStats>;

/// Who wrote what each key holds, as the run saw the writes (see the module docs).
type Writers = Arc<Mutex<[Option<Held>; 2]>>;

/// The run: its recorder, its serial line, its fault plan.
struct World {
    recorder: Rc<Rec>,
    line: Line<HolderLock>,
    draws: Draws,
    config: RealConfig,
    writers: Writers,
    /// The harness's own connection: what the store forgets is done through it.
    harness: Arc<Mutex<RedisConnection>>,
    /// Token draws so far (the low half of every fresh token).
    serial: Cell<u32>,
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

/// One replica of the run.
struct Replica {
    id: ReplicaId,
    process: Process,
    world: Rc<World>,
    connection: Arc<Mutex<RedisConnection>>,
    worker: RefCell<Option<Rc<dyn RealWorker>>>,
}

/// A job runner a real run can drive.
pub trait RealWorker {
    fn run(&self) -> LocalBoxFuture<'_, Result<AttemptReport, RunError>>;
    fn stop(&self) -> LocalBoxFuture<'_, ()>;
}

/// What the store did, from an observed call of `by` at store time `now_ms`, and the writers
/// after it.
fn applied_of(
    request: Request,
    seen: Observed,
    by: ReplicaId,
    now_ms: u64,
    writers: &mut [Option<Held>; 2],
) -> Applied {
    let key = request.key();
    let writer = &mut writers[key.index()];
    // Every write of the run's namespace went through this line, so a token the key holds is
    // the last one written, and its writer is known.
    let held = seen.held.map(|token| {
        let last = writer.filter(|w| w.token == token);
        debug_assert!(last.is_some(), "the key holds a token nobody wrote");
        Held {
            token,
            by: last.map_or(by, |w| w.by),
        }
    });
    let took_over = match (request, seen.answer) {
        (Request::Create { .. }, Answer::Created) => writer.take(),
        _ => None,
    };
    let applied = applied_for(request, seen.answer, key, held, took_over, now_ms);
    match applied {
        Applied::Created { token, .. } | Applied::Written { token, .. } => {
            *writer = Some(Held { token, by });
        }
        Applied::Deleted { .. } => *writer = None,
        _ => {}
    }
    applied
}

/// What the store did with `request`, answered `answer` on `key` (which held `held`; a
/// create that took the key over from an expired claim names it in `took_over`).
fn applied_for(
    request: Request,
    answer: Answer,
    key: Key,
    held: Option<Held>,
    took_over: Option<Held>,
    now_ms: u64,
) -> Applied {
    match (request, answer) {
        (
            Request::Create {
                token, lifetime_ms, ..
            },
            Answer::Created,
        ) => Applied::Created {
            key,
            token,
            expires_at_ms: now_ms + lifetime_ms,
            took_over,
        },
        (Request::Create { .. }, _) => Applied::Exists {
            key,
            held: held.expect("a refused create saw the live token"),
        },
        (
            Request::Renew {
                token, lifetime_ms, ..
            },
            Answer::Renewed,
        ) => Applied::Renewed {
            key,
            token,
            expires_at_ms: now_ms + lifetime_ms,
        },
        (Request::Renew { .. }, _) => Applied::RenewRefused { key, held },
        (_, Answer::Unsupported) => Applied::Unsupported { key },
        (Request::DeleteIfHolder { .. } | Request::Delete { .. }, Answer::Deleted) => {
            Applied::Deleted {
                key,
                removed: held.expect("a delete saw what it removed"),
            }
        }
        (Request::DeleteIfHolder { .. } | Request::Delete { .. }, _) => {
            Applied::NotDeleted { key, held }
        }
        (Request::Get { .. }, _) => Applied::Read { key, held },
        (
            Request::Set {
                token, lifetime_ms, ..
            },
            _,
        ) => Applied::Written {
            key,
            token,
            expires_at_ms: now_ms + lifetime_ms,
            replaced: held,
        },
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
    let (connection, writers) = (replica.connection.clone(), world.writers.clone());
    let (ticket, answer) = world
        .line
        .apply(move |now_ms| {
            let mut connection = connection.lock().unwrap_or_else(|p| p.into_inner());
            match connection.observe(request) {
                Ok(seen) => {
                    let mut writers = writers.lock().unwrap_or_else(|p| p.into_inner());
                    let applied = applied_of(request, seen, who, now_ms, &mut writers);
                    let event = Event::of(who, EventKind::Applied { call: id, applied });
                    (vec![event], Ok(seen.answer))
                }
                Err(error) => {
                    let op = request.op();
                    let event = Event::of(who, EventKind::Rejected { call: id, op });
                    (vec![event], Err(error.to_string()))
                }
            }
        })
        .await;
    world.recorder.recorded(ticket).await;
    match answer {
        Ok(answer) => (answer, true),
        Err(error) => {
            let mut stats = world.recorder.stats();
            stats.store_errors += 1;
            stats.last_store_error = Some(error);
            (Answer::Failed(NetFailure::Rejected), false)
        }
    }
}

/// The replica's timers (held by its pauses).
#[derive(Clone)]
pub struct RealClock(Rc<Replica>);

/// The replica's connection to Redis.
#[derive(Clone)]
pub struct RealStore(Rc<Replica>);

/// Fresh tokens: a drawn upper half and the run's draw count below it.
#[derive(Clone)]
pub struct RealTokens(Rc<Replica>);

/// The replica's job: steps on the real clock, held by pauses.
#[derive(Clone)]
pub struct RealJob(Rc<Replica>);

impl Clock for RealClock {
    fn sleep(&self, ms: u64) -> impl Future<Output = ()> {
        let replica = self.0.clone();
        async move {
            let world = &replica.world;
            world
                .recorder
                .emit_for(replica.id, EventKind::TimerSet { duration_ms: ms });
            world.sleep_ms(ms).await;
            replica.process.gate.pass(&world.clock()).await;
        }
    }
}

fn key_of(name: &str) -> Result<Key, StoreError> {
    Key::from_name(name).ok_or_else(|| StoreError::Unavailable {
        reason: format!("the run's store holds no key {name:?}"),
    })
}

/// The answer as the worker's port gives it.
fn port_answer(answer: Answer) -> Result<Answer, StoreError> {
    match answer {
        Answer::Failed(NetFailure::Rejected) => Err(StoreError::Unavailable {
            reason: "the store refused the call".into(),
        }),
        Answer::Failed(NetFailure::Timeout) => Err(StoreError::Timeout),
        Answer::Unsupported => Err(StoreError::Unsupported),
        answer => Ok(answer),
    }
}

impl Store for RealStore {
    async fn create_if_absent(
        &self,
        key: &str,
        token: HolderToken,
        lifetime_ms: u64,
    ) -> Result<bool, StoreError> {
        let request = Request::Create {
            key: key_of(key)?,
            token: token.0,
            lifetime_ms,
        };
        match port_answer(call(&self.0, request).await)? {
            Answer::Created => Ok(true),
            Answer::Exists => Ok(false),
            other => unreachable!("create answered {other:?}"),
        }
    }

    async fn renew_if_holder(
        &self,
        key: &str,
        token: HolderToken,
        lifetime_ms: u64,
    ) -> Result<Renewal, StoreError> {
        let request = Request::Renew {
            key: key_of(key)?,
            token: token.0,
            lifetime_ms,
        };
        match port_answer(call(&self.0, request).await)? {
            Answer::Renewed => Ok(Renewal::Renewed),
            Answer::NotHolder => Ok(Renewal::NotHolder),
            Answer::Absent => Ok(Renewal::Absent),
            other => unreachable!("renew answered {other:?}"),
        }
    }

    async fn delete_if_holder(&self, key: &str, token: HolderToken) -> Result<Removal, StoreError> {
        let request = Request::DeleteIfHolder {
            key: key_of(key)?,
            token: token.0,
        };
        match port_answer(call(&self.0, request).await)? {
            Answer::Deleted => Ok(Removal::Deleted),
            Answer::NotHolder => Ok(Removal::NotHolder),
            Answer::Absent => Ok(Removal::Absent),
            other => unreachable!("delete_if_holder answered {other:?}"),
        }
    }

    async fn get(&self, key: &str) -> Result<Option<HolderToken>, StoreError> {
        match port_answer(call(&self.0, Request::Get { key: key_of(key)? }).await)? {
            Answer::Value(token) => Ok(Some(HolderToken(token))),
            Answer::Absent => Ok(None),
            other => unreachable!("get answered {other:?}"),
        }
    }

    async fn delete(&self, key: &str) -> Result<bool, StoreError> {
        match port_answer(call(&self.0, Request::Delete { key: key_of(key)? }).await)? {
            Answer::Deleted => Ok(true),
            Answer::Absent => Ok(false),
            other => unreachable!("delete answered {other:?}"),
        }
    }

    async fn set(&self, key: &str, token: HolderToken, lifetime_ms: u64) -> Result<(), StoreError> {
        let request = Request::Set {
            key: key_of(key)?,
            token: token.0,
            lifetime_ms,
        };
        match port_answer(call(&self.0, request).await)? {
            Answer::Written => Ok(()),
            other => unreachable!("set answered {other:?}"),
        }
    }

    /// Redis runs scripts as one step: it compares and deletes.
    fn compare_and_delete(&self) -> bool {
        true
    }
}

impl TokenSource for RealTokens {
    fn fresh(&self) -> HolderToken {
        let world = &self.0.world;
        let serial = world.serial.get() + 1;
        world.serial.set(serial);
        let random = world.draws.range(1, 0xFF_FFFF);
        HolderToken((random << 32) | u64::from(serial))
    }
}

impl Job for RealJob {
    async fn run(&self) -> Result<(), JobError> {
        let (replica, world) = (&self.0, &self.0.world);
        let settings = world.settings();
        let span = match world.draws.coin(settings.long_share) {
            true => settings.long_job,
            false => settings.job,
        };
        let duration_ms = span.draw(&world.draws).max(1);
        let steps = u32::try_from(duration_ms.div_ceil(settings.step_ms)).unwrap_or(u32::MAX);
        let note = |note| world.recorder.emit(Event::note_of(replica.id, note));
        note(Note::JobStarted { duration_ms, steps });
        let mut left_ms = duration_ms;
        for step in 1..=steps {
            let step_ms = left_ms.min(settings.step_ms);
            left_ms -= step_ms;
            world.sleep_ms(step_ms).await;
            replica.process.gate.pass(&world.clock()).await;
            if world.draws.coin(settings.job_fail) {
                note(Note::JobFailed { step });
                return Err(JobError {
                    reason: format!("step {step} of {steps} failed"),
                });
            }
            note(Note::JobStep { step });
        }
        note(Note::JobFinished { steps });
        Ok(())
    }
}

type RealCore = JobRunner<RealClock, RealStore, RealTokens, RealJob>;
type RealEngine = Engine<RealClock, RealStore, RealTokens, RealJob>;

impl RealWorker for RealCore {
    fn run(&self) -> LocalBoxFuture<'_, Result<AttemptReport, RunError>> {
        Box::pin(JobRunner::run(self))
    }
    fn stop(&self) -> LocalBoxFuture<'_, ()> {
        Box::pin(JobRunner::stop(self))
    }
}

impl RealWorker for RealEngine {
    fn run(&self) -> LocalBoxFuture<'_, Result<AttemptReport, RunError>> {
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
    let config = replica.world.settings().claim.clone();
    let ports = (
        RealClock(replica.clone()),
        RealStore(replica.clone()),
        RealTokens(replica.clone()),
        RealJob(replica.clone()),
    );
    if name == "correct" {
        let core = JobRunner::new(config, ports.0, ports.1, ports.2, ports.3).ok()?;
        return Some(Rc::new(core));
    }
    let flaws_of = DEFECTS.iter().find(|d| d.info.name == name)?.build;
    let flaws = flaws_of(replica.id);
    Some(Rc::new(Engine::new(config, ports, flaws).ok()?))
}

/// The run as the shared phases drive it: the world and its replicas.
struct Run {
    world: Rc<World>,
    replicas: Vec<Rc<Replica>>,
}

impl RealRun for Run {
    type V = HolderLock;

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

    /// The store forgets keys on its own until faults heal.
    fn safety_starts(run: &Rc<Run>) {
        tokio::task::spawn_local(forgetter(run.world.clone()));
    }
}

/// Draws what the store forgets, until faults heal (see [`StoreForgetting`]).
async fn forgetter(world: Rc<World>) {
    let forgetting = world.settings().forgetting;
    loop {
        world.sleep_ms(forgetting.every.draw(&world.draws)).await;
        if world.draws.healed() {
            return;
        }
        let draw = world.draws.range(0, 999_999) as f64 / 1_000_000.0;
        let forgotten: &[Key] = match draw {
            d if d < forgetting.restart => &[Key::Claim, Key::Holder],
            d if d < forgetting.restart + forgetting.evict => &[Key::Claim],
            _ => continue,
        };
        let cause = match forgotten.len() {
            1 => Forgetting::Eviction,
            _ => Forgetting::Restart,
        };
        forget(&world, forgotten, cause).await;
    }
}

/// Deletes `keys` through the harness connection on the serial line, noting `Forgot` for
/// each key that held a claim (and for every key on a restart).
async fn forget(world: &World, keys: &'static [Key], cause: Forgetting) {
    let (connection, writers) = (world.harness.clone(), world.writers.clone());
    let (ticket, ()) = world
        .line
        .apply(move |_now_ms| {
            let mut connection = connection.lock().unwrap_or_else(|p| p.into_inner());
            let mut writers = writers.lock().unwrap_or_else(|p| p.into_inner());
            let mut notes = Vec::new();
            for &key in keys {
                let Ok(seen) = connection.observe(Request::Delete { key }) else {
                    continue;
                };
                // An expired key was already gone: an eviction leaves its last writer for
                // the create that takes it over; a restart forgets it too.
                let restart = cause == Forgetting::Restart;
                let writer = &mut writers[key.index()];
                let last = match seen.held.is_some() || restart {
                    true => writer.take(),
                    false => None,
                };
                let lost = seen.held.map(|token| {
                    let last = last.filter(|w| w.token == token);
                    debug_assert!(last.is_some(), "the key held a token nobody wrote");
                    Held {
                        token,
                        by: last.map_or(ReplicaId(0), |w| w.by),
                    }
                });
                if lost.is_some() || restart {
                    let note = Note::Forgot { key, cause, lost };
                    notes.push(Event::world_note(note));
                }
            }
            (notes, ())
        })
        .await;
    world.recorder.recorded(ticket).await;
}

/// Calls `run()` on a jittered schedule, recording each attempt, until an attempt reports
/// the worker stopped before it started or a fresh worker replaced this one.
async fn drive(replica: Rc<Replica>, worker: Rc<dyn RealWorker>, generation: u32) {
    let world = &replica.world;
    for attempt in 1.. {
        world
            .sleep_ms(world.settings().run_every.draw(&world.draws))
            .await;
        replica.process.gate.pass(&world.clock()).await;
        if replica.process.replaced_since(generation) {
            return;
        }
        let started = Event::note_of(replica.id, Note::AttemptStarted { attempt });
        world.recorder.emit(started);
        let result = worker.run().await;
        world
            .recorder
            .emit(Event::note_of(replica.id, ended(attempt, &result)));
        if matches!(&result, Ok(r) if r.end == AttemptEnd::StoppedBeforeStart) {
            return;
        }
    }
}

/// Invariants a real run on Redis cannot judge honestly: those that compare two instants to
/// the millisecond. `stop-prompt` wants a stopping worker's calls and its return at the
/// instant of its latest cue, and `attempt-report` wants the trust to have passed exactly when
/// the worker's own timer says so; on tokio's timers and a wall clock read after the fact,
/// either would fail a correct worker by a scheduling delay. The lifetime end is not one of
/// them: see the module docs (the recorded end is never later than Redis's, and a correct
/// worker keeps a fifth of the lifetime away from it).
pub const EXACT_INSTANT: [Invariant; 2] = [Invariant::StopPrompt, Invariant::AttemptReport];

/// What a real run checks: every invariant but the [`EXACT_INSTANT`] ones.
pub fn real_time_invariants() -> Vec<Invariant> {
    Invariant::ALL
        .iter()
        .copied()
        .filter(|invariant| !EXACT_INSTANT.contains(invariant))
        .collect()
}

fn check(config: &RealConfig) -> Result<(), RealError> {
    if !workers().contains(&config.worker.as_str()) {
        return Err(RealError::UnknownWorker {
            given: config.worker.clone(),
            known: workers(),
        });
    }
    if config.replicas == 0 || config.duration_ms < 100 {
        return Err(RealError::BadConfig(
            "a run needs at least one replica and 100ms".into(),
        ));
    }
    if config.settings.step_ms == 0 {
        return Err(RealError::BadConfig("a job step lasts at least 1ms".into()));
    }
    config
        .settings
        .net
        .validate()
        .map_err(RealError::BadConfig)?;
    let forgetting = &config.settings.forgetting;
    forgetting.validate().map_err(RealError::BadConfig)?;
    config
        .settings
        .claim
        .validate()
        .map_err(|error| RealError::BadConfig(format!("claim settings: {error}")))
}

fn recorder(config: &RealConfig, clock: RunClock) -> Rec {
    let checks = CheckConfig {
        renewal: config.settings.claim.renew_every_ms.is_some(),
        attempt_bound_ms: config.settings.attempt_bound_ms,
        trusted_ms: config.settings.claim.trusted_ms(),
        // A real run's replicas share the machine's clock.
        drift_ppm: Vec::new(),
    };
    let checkers = checker_set(&checks, &real_time_invariants());
    Recorder::new(clock, checkers, Coverage::new(), config.keep_events, count)
}

/// Connections to a fresh namespace on the server at `url`.
fn connect(url: &str, count: usize) -> Result<Vec<RedisConnection>, AdapterError> {
    let mut store = RedisStore::connect(url)?;
    store.open(&ClaimSetup::default(), count)
}

/// Opens the store, runs the replicas through the phases (ending at the first violation),
/// and reports the checkers' verdict and the coverage.
pub fn run(config: &RealConfig) -> Result<RealReport, RealError> {
    check(config)?;
    let mut connections =
        connect(&config.url, usize::from(config.replicas) + 1).map_err(RealError::Store)?;
    let harness = Arc::new(Mutex::new(
        connections.pop().expect("one per replica, plus one"),
    ));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|error| RealError::BadConfig(format!("cannot start tokio: {error}")))?;
    let local = tokio::task::LocalSet::new();
    let clock = RunClock::start();
    let recorder = Rc::new(recorder(config, clock));
    let (line, queue) = Line::new(clock);
    let world = Rc::new(World {
        recorder: recorder.clone(),
        line,
        draws: Draws::seeded(config.seed),
        config: config.clone(),
        writers: Writers::default(),
        harness,
        serial: Cell::new(0),
        changed: retention_worker::Notify::new(),
    });
    let replicas: Vec<Rc<Replica>> = connections
        .into_iter()
        .enumerate()
        .map(|(index, connection)| {
            let id = ReplicaId(u16::try_from(index).expect("at most u16::MAX replicas"));
            Rc::new(Replica {
                id,
                process: Process::new(id),
                world: world.clone(),
                connection: Arc::new(Mutex::new(connection)),
                worker: RefCell::new(None),
            })
        })
        .collect();
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
    for replica in &replicas {
        replica.worker.borrow_mut().take();
    }
    drop((replicas, world, runtime));
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
