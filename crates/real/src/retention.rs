//! A real run of the retention system: replicas of a retention worker (the production core or
//! a defective one) on tokio, against the lease authority and record store of a real
//! database, judged by the retention checkers.
//!
//! Terminology:
//! - *replica*: one worker process: its gate, its connections (one for the lease service, one
//!   for the record store, so a renewal never queues behind a delete), its worker, and a
//!   driver calling `run()` on a jittered schedule (as the simulation's driver does).
//! - *phases* ([`crate::phases`]): as in a simulation: safety (pauses, stops and port faults
//!   injected) for the run's duration,
//!   liveness (faults healed, stopped replicas restarted with fresh workers) in which the
//!   backlog must drain, shutdown (every replica stopped), end.
//! - *recorder*: stamps every event with the run clock, numbers it, and feeds it at once to
//!   the checkers and the coverage; the first violation ends the run.
//! - *store time*: the run clock on the epoch scale, read by the adapter's thread just before
//!   each call's transaction (see the crate docs on the apply instant).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use futures::future::{Either, LocalBoxFuture, select};
use leasesim_events::{EventKind, ReplicaId};
use leasesim_invariants::{SituationSet, Violation};
use leasesim_retention::RunFuture;
use leasesim_retention::checkers::{
    CheckConfig, CheckerSet, ClockConfig, Coverage, Invariant, Situation, checker_set,
};
use leasesim_retention::defects;
use leasesim_retention::driver::end_kind;
use leasesim_retention::events::{
    Answer, Applied, EndKind, Event, Failure, LeaseView, Note, Request, Retention, Stamped,
};
use leasesim_stores::StoreError;
use leasesim_stores::retention::{RetentionConnection, Setup, StoreConfig};
use retention_worker::{
    Clock, Lease, Leases, Notify, PortError, Records, RetentionWorker, WorkerConfig,
};

use crate::phases::{Process, ProcessFaults, RealRun, run_phases};
use crate::{Draws, Link, NetFaults, RunClock, SpanMs, round_trip};
pub use crate::{RealError, StoreTarget};

/// A connection a replica's thread-pool calls run on.
pub type Connection = Box<dyn RetentionConnection + Send>;

/// The world of a real run, scaled down so a run of seconds sees many terms.
#[derive(Clone, Debug, PartialEq)]
pub struct RealSettings {
    /// The workers' settings, and what the run judges them against.
    pub worker: WorkerConfig,
    /// Rows in the store when the run starts, created evenly from `backlog_ms` before the
    /// start to the end of the safety phase (later ones become eligible as time passes).
    pub rows: u64,
    pub backlog_ms: u64,
    /// The pause between a replica's terms.
    pub run_every: SpanMs,
    /// One-way latency of lease calls and of deletes.
    pub lease_latency: SpanMs,
    pub delete_latency: SpanMs,
    /// Calls refused, requests lost and replies lost around the store (safety phase only).
    pub net: NetFaults,
    /// Pauses (up to longer than a lease lifetime, so a rival can take over), stops, and
    /// shutdown's bound.
    pub process: ProcessFaults,
    /// Once faults heal, how long a term may stay open.
    pub term_bound_ms: u64,
}

impl Default for RealSettings {
    fn default() -> RealSettings {
        RealSettings {
            worker: WorkerConfig {
                batch_rows: 200,
                cap_rows: 1_000,
                retention_ms: 2_000,
                renew_every_ms: 150,
                lease_ttl_ms: 600,
            },
            rows: 3_000,
            backlog_ms: 30_000,
            run_every: SpanMs::new(50, 250),
            lease_latency: SpanMs::new(1, 8),
            delete_latency: SpanMs::new(10, 50),
            net: NetFaults {
                reject: 0.02,
                request_lost: 0.02,
                reply_lost: 0.03,
                timeout_ms: 300,
            },
            process: ProcessFaults::DEFAULT,
            term_bound_ms: 5_000,
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
    /// Seeds the fault plan (pauses, stops, latencies, port faults, schedule jitter).
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
    pub terms: u64,
    pub rows_deleted: u64,
    /// Deletes the store refused for a stale token.
    pub stale_refused: u64,
    pub pauses: u64,
    pub stops: u64,
    /// Calls the store failed (the worker saw a rejection), and the last such error.
    pub store_errors: u64,
    pub last_store_error: Option<String>,
    /// Real time the run took.
    pub wall_ms: u64,
}

/// What a real run found.
#[derive(Clone, Debug)]
pub struct RealReport {
    /// The first invariant the run broke, if any.
    pub violation: Option<Violation<Retention>>,
    /// The situations the run reached.
    pub coverage: SituationSet<Situation>,
    pub stats: RealStats,
    /// Every event, when kept.
    pub events: Vec<Stamped<Event>>,
}

impl RealReport {
    /// `pass: ...` or `VIOLATION name: sentence`.
    pub fn verdict_line(&self) -> String {
        match &self.violation {
            None => "pass: every invariant held".into(),
            Some(v) if v.invariant == Invariant::Liveness => {
                format!("LIVENESS: {}", v.sentence)
            }
            Some(v) => format!("VIOLATION {}: {}", v.invariant, v.sentence),
        }
    }
}

/// Stamps, checks and counts the events of the run.
struct Recorder {
    clock: RunClock,
    seq: Cell<u64>,
    /// The time of the last event stamped.
    last_at_ms: Cell<u64>,
    next_call: Cell<u64>,
    checkers: RefCell<CheckerSet>,
    coverage: RefCell<Coverage>,
    keep: bool,
    kept: RefCell<Vec<Stamped<Event>>>,
    stats: RefCell<RealStats>,
    /// Set at the first violation; the run ends.
    halted: Cell<bool>,
    changed: Notify,
    /// The store line: one store call at a time, its `Applied` (or `Rejected`) recorded before
    /// the next call begins, so events follow the store's commit order.
    store_line: futures::lock::Mutex<()>,
}

impl Recorder {
    fn emit(&self, event: Event) {
        let stamped = Stamped {
            seq: self.seq.get(),
            at_ms: self.clock.elapsed_ms().max(self.last_at_ms.get()),
            event,
        };
        // invariant: events are numbered in order and their times never go back, as the
        // checkers read them.
        debug_assert!(stamped.at_ms >= self.last_at_ms.get());
        self.seq.set(stamped.seq + 1);
        self.last_at_ms.set(stamped.at_ms);
        self.count(&stamped.event.kind);
        self.coverage.borrow_mut().on_event(&stamped);
        let flow = self.checkers.borrow_mut().on_event(&stamped);
        if self.keep {
            self.kept.borrow_mut().push(stamped);
        }
        if flow == leasesim_events::Flow::Halt && !self.halted.replace(true) {
            self.changed.notify_all();
        }
    }

    fn emit_for(&self, replica: ReplicaId, kind: EventKind<Retention>) {
        self.emit(Event::of(replica, kind));
    }

    fn count(&self, kind: &EventKind<Retention>) {
        let mut stats = self.stats.borrow_mut();
        stats.events += 1;
        match kind {
            EventKind::Call { .. } => stats.calls += 1,
            EventKind::Note(Note::TermStarted { .. }) => stats.terms += 1,
            EventKind::Applied {
                applied: Applied::Deleted { rows, .. },
                ..
            } => stats.rows_deleted += u64::from(*rows),
            EventKind::Applied {
                applied: Applied::DeleteRefused { .. },
                ..
            } => stats.stale_refused += 1,
            EventKind::Paused { .. } => stats.pauses += 1,
            EventKind::StopCalled => stats.stops += 1,
            _ => {}
        }
    }

    fn call_id(&self) -> u64 {
        let id = self.next_call.get();
        self.next_call.set(id + 1);
        id
    }
}

/// One replica of the run.
struct Replica {
    id: ReplicaId,
    process: Process,
    recorder: Rc<Recorder>,
    draws: Rc<Draws>,
    settings: Rc<RealSettings>,
    leases: Arc<Mutex<Connection>>,
    records: Arc<Mutex<Connection>>,
    worker: RefCell<Option<Rc<dyn RealWorker>>>,
}

/// A retention worker a real run can drive (the production core or a defective one, on the
/// real ports).
pub trait RealWorker {
    fn run(&self) -> RunFuture<'_>;
    fn stop(&self) -> LocalBoxFuture<'_, ()>;
}

/// The replica's clock: the run clock on the epoch scale; every read is an event.
#[derive(Clone)]
pub struct RealClock(Rc<Replica>);

/// The replica's lease service on the real store.
#[derive(Clone)]
pub struct RealLeases(Rc<Replica>);

/// The replica's record store on the real store.
#[derive(Clone)]
pub struct RealRecords(Rc<Replica>);

impl Clock for RealClock {
    fn now_ms(&self) -> u64 {
        let now_ms = self.0.recorder.clock.now_ms();
        self.0
            .recorder
            .emit_for(self.0.id, EventKind::ClockRead { now_ms });
        now_ms
    }

    async fn sleep(&self, ms: u64) {
        let recorder = &self.0.recorder;
        recorder.emit_for(self.0.id, EventKind::TimerSet { duration_ms: ms });
        let deadline_ms = recorder.clock.elapsed_ms() + ms;
        recorder.clock.sleep_until(deadline_ms).await;
        self.0.process.gate.pass(&recorder.clock).await;
    }
}

/// Sends `request` on `connection`: the request leaves when the process runs, crosses the
/// drawn latency (or is refused or lost on the way), is applied in one transaction on a pool
/// thread (one store call of the run at a time, recorded in commit order), and its answer
/// crosses back (or is lost, and the caller times out) and is read when the process runs.
async fn call(replica: &Replica, connection: &Arc<Mutex<Connection>>, request: Request) -> Answer {
    let recorder = &replica.recorder;
    let link = Link {
        gate: &replica.process.gate,
        draws: &replica.draws,
        clock: recorder.clock,
        net: replica.settings.net,
    };
    let latency = match request {
        Request::Delete { .. } => replica.settings.delete_latency,
        _ => replica.settings.lease_latency,
    };
    let next_id = || recorder.call_id();
    let emit = |kind| recorder.emit_for(replica.id, kind);
    let apply = |id| apply(replica, connection, id, request);
    round_trip(link, request, latency, next_id, emit, apply).await
}

/// Applies `request` (call `id`) in one transaction and records what the store did: the
/// answer, and whether the store applied the call (a store error refuses it).
async fn apply(
    replica: &Replica,
    connection: &Arc<Mutex<Connection>>,
    id: u64,
    request: Request,
) -> (Answer, bool) {
    let recorder = &replica.recorder;
    let clock = recorder.clock;
    let (connection, owner_id) = (connection.clone(), replica.id.owner_id());
    // The checkers replay the store's history: hold the line from the store's time read to
    // the `Applied` event, so two replicas' calls are recorded in the order they committed.
    let _line = recorder.store_line.lock().await;
    let applied = tokio::task::spawn_blocking(move || {
        let mut connection = connection.lock().unwrap_or_else(|p| p.into_inner());
        leasesim_stores::retention::apply(&mut **connection, &owner_id, request, clock.now_ms())
    })
    .await
    .unwrap_or_else(|panic| std::panic::resume_unwind(panic.into_panic()));
    match applied {
        Ok((applied, answer)) => {
            recorder.emit_for(replica.id, EventKind::Applied { call: id, applied });
            (answer, true)
        }
        Err(error) => {
            let mut stats = recorder.stats.borrow_mut();
            stats.store_errors += 1;
            stats.last_store_error = Some(error.to_string());
            drop(stats);
            let op = request.op();
            recorder.emit_for(replica.id, EventKind::Rejected { call: id, op });
            (Answer::Failed(Failure::Rejected), false)
        }
    }
}

fn port_error(failure: Failure, token: u64) -> PortError {
    match failure {
        Failure::Rejected => PortError::Rejected {
            reason: "the store refused the call".into(),
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
        other => unreachable!("a lease call answered {other:?}"),
    }
}

impl Leases for RealLeases {
    async fn acquire(&self, owner_id: &str) -> Result<Option<Lease>, PortError> {
        let answer = call(&self.0, &self.0.leases, Request::Acquire).await;
        lease_answer(answer, owner_id)
    }

    async fn renew(&self, lease: &Lease) -> Result<Option<Lease>, PortError> {
        let request = Request::Renew { lease: view(lease) };
        lease_answer(
            call(&self.0, &self.0.leases, request).await,
            &lease.owner_id,
        )
    }

    async fn release(&self, lease: &Lease) -> Result<(), PortError> {
        let request = Request::Release { lease: view(lease) };
        match call(&self.0, &self.0.leases, request).await {
            Answer::Released => Ok(()),
            Answer::Failed(failure) => Err(port_error(failure, lease.fencing_token)),
            other => unreachable!("release answered {other:?}"),
        }
    }
}

impl Records for RealRecords {
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
        match call(&self.0, &self.0.records, request).await {
            Answer::Rows(rows) => Ok(rows),
            Answer::Failed(failure) => Err(port_error(failure, fencing_token)),
            other => unreachable!("delete answered {other:?}"),
        }
    }
}

/// Implements [`RealWorker`] for workers on the real ports.
macro_rules! real_workers {
    ($($worker:ident),*) => {$(
        impl RealWorker for $worker<RealClock, RealLeases, RealRecords> {
            fn run(&self) -> RunFuture<'_> {
                Box::pin($worker::run(self))
            }
            fn stop(&self) -> LocalBoxFuture<'_, ()> {
                Box::pin($worker::stop(self))
            }
        }
    )*};
}

use defects::{
    AcquiredTokenWorker, DeleteAfterLossWorker, EarlyCutoffWorker, IntervalRenewalWorker,
    LeakedRenewalWorker, LeftoverReleaseWorker, MovingCutoffWorker, NaiveWorker, NoRenewalWorker,
    RenewErrorNoReleaseWorker, SleepyStopWorker, StaleReleaseWorker, StaleRenewalWorker,
    UncappedWorker, UnjoinedStopWorker, WholeBatchesWorker,
};

real_workers!(
    RetentionWorker,
    NaiveWorker,
    IntervalRenewalWorker,
    StaleReleaseWorker,
    MovingCutoffWorker,
    UncappedWorker,
    UnjoinedStopWorker,
    EarlyCutoffWorker,
    LeakedRenewalWorker,
    DeleteAfterLossWorker,
    RenewErrorNoReleaseWorker,
    AcquiredTokenWorker,
    LeftoverReleaseWorker,
    StaleRenewalWorker,
    WholeBatchesWorker,
    NoRenewalWorker,
    SleepyStopWorker
);

/// The workers a real run can drive: `correct`, then the defective ones.
pub fn workers() -> Vec<&'static str> {
    std::iter::once("correct")
        .chain(defects::DEFECTS.iter().map(|d| d.info.name))
        .collect()
}

/// Every defective worker a real run builds, as `catalogue module => type`, handed to
/// `$then` (the builder's match and the list of built names are made from it).
macro_rules! built_defects {
    ($then:ident) => {
        $then!(
            naive => NaiveWorker,
            interval_renewal => IntervalRenewalWorker,
            stale_release => StaleReleaseWorker,
            moving_cutoff => MovingCutoffWorker,
            uncapped => UncappedWorker,
            unjoined_stop => UnjoinedStopWorker,
            early_cutoff => EarlyCutoffWorker,
            leaked_renewal => LeakedRenewalWorker,
            delete_after_loss => DeleteAfterLossWorker,
            renew_error_no_release => RenewErrorNoReleaseWorker,
            acquired_token => AcquiredTokenWorker,
            leftover_release => LeftoverReleaseWorker,
            stale_renewal => StaleRenewalWorker,
            whole_batches => WholeBatchesWorker,
            no_renewal => NoRenewalWorker,
            sleepy_stop => SleepyStopWorker
        )
    };
}

/// Builds the worker `name` on `replica`'s real ports.
fn build_worker(name: &str, replica: &Rc<Replica>) -> Option<Rc<dyn RealWorker>> {
    let owner = replica.id.owner_id();
    let config = replica.settings.worker.clone();
    let ports = (
        RealClock(replica.clone()),
        RealLeases(replica.clone()),
        RealRecords(replica.clone()),
    );
    macro_rules! pick {
        ($($module:ident => $worker:ident),*) => {
            match name {
                "correct" => Rc::new(RetentionWorker::new(owner, config, ports.0, ports.1, ports.2).ok()?) as Rc<dyn RealWorker>,
                $(defects::$module::NAME => Rc::new($worker::new(owner, config, ports.0, ports.1, ports.2).ok()?),)*
                _ => return None,
            }
        };
    }
    Some(built_defects!(pick))
}

/// The setup of the run's store: fencing on, the workers' lease lifetime, the rows spread
/// from `backlog_ms` before the start to the end of the safety phase.
fn store_setup(config: &RealConfig) -> Setup {
    let settings = &config.settings;
    let from_ms = leasesim_events::EPOCH_MS - settings.backlog_ms;
    let span_ms = settings.backlog_ms + config.duration_ms;
    let steps = settings.rows.saturating_sub(1).max(1);
    let rows_created_ms = (0..settings.rows)
        .map(|i| from_ms + span_ms * i / steps)
        .collect();
    Setup {
        config: StoreConfig {
            ttl_ms: settings.worker.lease_ttl_ms,
            exact_token: false,
            fencing: true,
        },
        rows_created_ms,
    }
}

/// A fresh store at `target`, and `count` connections to it.
fn connect(
    target: &StoreTarget,
    setup: &Setup,
    count: usize,
) -> Result<Vec<Connection>, StoreError> {
    match target {
        StoreTarget::Sqlite { path } => {
            use leasesim_stores::sqlite::{self, retention::SqliteRetention};
            crate::remove_sqlite(path);
            sqlite::retention::create(&mut sqlite::open_file(path)?, setup)?;
            (0..count)
                .map(|_| {
                    let connection = sqlite::open_file(path)?;
                    Ok(
                        Box::new(SqliteRetention::new(connection, setup.config.clone()))
                            as Connection,
                    )
                })
                .collect()
        }
        StoreTarget::Postgres { url, schema } => postgres_connections(url, schema, setup, count),
    }
}

#[cfg(feature = "postgres")]
fn postgres_connections(
    url: &str,
    schema: &str,
    setup: &Setup,
    count: usize,
) -> Result<Vec<Connection>, StoreError> {
    use leasesim_stores::postgres::{self, retention::PgRetention};
    let mut first = postgres::connect(url, schema)?;
    postgres::drop_schema(&mut first, schema)?;
    let mut first = postgres::connect(url, schema)?;
    postgres::retention::create(&mut first, setup)?;
    (0..count)
        .map(|_| {
            let client = postgres::connect(url, schema)?;
            Ok(Box::new(PgRetention::new(client, setup.config.clone())) as Connection)
        })
        .collect()
}

/// Drops what the run left on the server (its schema); a SQLite file stays where it was asked
/// for.
#[cfg(feature = "postgres")]
fn clean_up(target: &StoreTarget) {
    if let StoreTarget::Postgres { url, schema } = target
        && let Ok(mut client) = leasesim_stores::postgres::connect(url, schema)
    {
        let _ = leasesim_stores::postgres::drop_schema(&mut client, schema);
    }
}

#[cfg(not(feature = "postgres"))]
fn clean_up(_target: &StoreTarget) {}

#[cfg(not(feature = "postgres"))]
fn postgres_connections(
    _url: &str,
    _schema: &str,
    _setup: &Setup,
    _count: usize,
) -> Result<Vec<Connection>, StoreError> {
    Err(StoreError::Refused(
        "this build has no PostgreSQL client: build with `--features postgres`".into(),
    ))
}

/// The run: its replicas, its harness connection (backlog checks) and its fault plan.
struct World {
    recorder: Rc<Recorder>,
    draws: Rc<Draws>,
    replicas: Vec<Rc<Replica>>,
    harness: Arc<Mutex<Connection>>,
    config: RealConfig,
    /// Rows created before this instant (store clock) must be gone by the liveness phase's
    /// end: set as the phase starts.
    eligible_before_ms: Cell<u64>,
    changed: Notify,
}

impl RealRun for World {
    type V = Retention;

    fn clock(&self) -> RunClock {
        self.recorder.clock
    }

    fn draws(&self) -> &Draws {
        &self.draws
    }

    fn emit(&self, event: Event) {
        self.recorder.emit(event);
    }

    fn phases_ms(&self) -> (u64, u64) {
        (self.config.duration_ms, self.config.liveness_ms)
    }

    fn process_faults(&self) -> ProcessFaults {
        self.config.settings.process
    }

    fn replicas(&self) -> usize {
        self.replicas.len()
    }

    fn process(&self, replica: usize) -> &Process {
        &self.replicas[replica].process
    }

    fn changed(&self) -> &Notify {
        &self.changed
    }

    fn start_worker(world: &Rc<World>, replica: usize) {
        let replica = &world.replicas[replica];
        let worker = build_worker(&world.config.worker, replica).expect("checked before the run");
        *replica.worker.borrow_mut() = Some(worker.clone());
        let generation = replica.process.generation();
        tokio::task::spawn_local(drive(world.clone(), replica.clone(), worker, generation));
    }

    fn stop_worker(&self, replica: usize) -> Option<LocalBoxFuture<'static, ()>> {
        let worker = self.replicas[replica].worker.borrow().clone()?;
        Some(Box::pin(async move { worker.stop().await }))
    }

    /// The backlog mark: rows eligible when faults heal must be gone by the liveness phase's
    /// end.
    fn faults_heal(&self) {
        let retention_ms = self.config.settings.worker.retention_ms;
        let eligible_before_ms = self.clock().now_ms().saturating_sub(retention_ms);
        self.eligible_before_ms.set(eligible_before_ms);
    }

    fn liveness_ends(world: &Rc<World>) -> LocalBoxFuture<'static, ()> {
        let world = world.clone();
        Box::pin(async move { backlog_check(&world, world.eligible_before_ms.get()).await })
    }
}

/// Calls `run()` on a jittered schedule, recording each term, until the worker reports it
/// was stopped before it started or a fresh worker replaced it.
async fn drive(
    world: Rc<World>,
    replica: Rc<Replica>,
    worker: Rc<dyn RealWorker>,
    generation: u32,
) {
    let clock = world.clock();
    let mut term = 0;
    loop {
        let pause_ms = world.config.settings.run_every.draw(&world.draws);
        tokio::time::sleep(std::time::Duration::from_millis(pause_ms)).await;
        replica.process.gate.pass(&clock).await;
        if replica.process.replaced_since(generation) {
            return;
        }
        term += 1;
        world
            .recorder
            .emit(Event::note_of(replica.id, Note::TermStarted { term }));
        let result = worker.run().await;
        let (end, rows) = end_kind(&result);
        let ended = Note::TermEnded { term, end, rows };
        world.recorder.emit(Event::note_of(replica.id, ended));
        if end == EndKind::StoppedBeforeStart {
            return;
        }
    }
}

/// The rows created before `eligible_before_ms` still in the store (note `Backlog`).
async fn backlog_check(world: &World, eligible_before_ms: u64) {
    let (harness, clock) = (world.harness.clone(), world.clock());
    let state = tokio::task::spawn_blocking(move || {
        let mut connection = harness.lock().unwrap_or_else(|p| p.into_inner());
        connection.state(clock.now_ms())
    })
    .await
    .unwrap_or_else(|panic| std::panic::resume_unwind(panic.into_panic()));
    let remaining = match state {
        Ok(state) => state
            .rows_created_ms
            .iter()
            .filter(|&&created| created < eligible_before_ms)
            .count() as u64,
        // Unknown: the check cannot excuse a backlog it did not see.
        Err(_) => u64::MAX,
    };
    world.recorder.emit(Event::world_note(Note::Backlog {
        eligible_before_ms,
        remaining,
    }));
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

/// Invariants that judge an exact virtual instant: a renewal sent by the instant its interval
/// runs out (`renewal-due`), a release at the instant `stop()` can go on (`stop-prompt`). Real
/// time has scheduling jitter of a few ms, so a real run cannot keep them to the millisecond;
/// it checks every other invariant.
pub const EXACT_INSTANT: [Invariant; 2] = [Invariant::RenewalDue, Invariant::StopPrompt];

/// What a real run checks: every invariant but the [`EXACT_INSTANT`] ones.
pub fn real_time_invariants() -> Vec<Invariant> {
    let checked: Vec<Invariant> = Invariant::ALL
        .iter()
        .copied()
        .filter(|invariant| !EXACT_INSTANT.contains(invariant))
        .collect();
    // invariant: only the exact-instant ones are left out.
    debug_assert_eq!(checked.len() + EXACT_INSTANT.len(), Invariant::ALL.len());
    checked
}

/// The checkers and coverage of the run.
fn recorder(config: &RealConfig, clock: RunClock) -> Recorder {
    let worker = &config.settings.worker;
    let checks = CheckConfig {
        batch_rows: worker.batch_rows,
        cap_rows: worker.cap_rows,
        retention_ms: worker.retention_ms,
        term_bound_ms: config.settings.term_bound_ms,
    };
    let clocks = ClockConfig {
        renew_every_ms: worker.renew_every_ms,
        drift_ppm: vec![0; usize::from(config.replicas)],
    };
    Recorder {
        clock,
        seq: Cell::new(0),
        last_at_ms: Cell::new(0),
        next_call: Cell::new(1),
        checkers: RefCell::new(checker_set(&checks, &real_time_invariants(), Some(&clocks))),
        coverage: RefCell::new(Coverage::default()),
        keep: config.keep_events,
        kept: RefCell::new(Vec::new()),
        stats: RefCell::new(RealStats::default()),
        halted: Cell::new(false),
        changed: Notify::new(),
        store_line: futures::lock::Mutex::new(()),
    }
}

/// The run's replicas, each on two of `connections` (leases, records).
fn replicas_on(
    connections: Vec<Connection>,
    recorder: &Rc<Recorder>,
    draws: &Rc<Draws>,
    settings: &Rc<RealSettings>,
) -> Vec<Rc<Replica>> {
    let count = connections.len() / 2;
    let mut pairs = connections.into_iter();
    let mut take = || Arc::new(Mutex::new(pairs.next().expect("two per replica")));
    (0..count)
        .map(|index| {
            let id = ReplicaId(u16::try_from(index).expect("at most u16::MAX replicas"));
            Rc::new(Replica {
                id,
                process: Process::new(id),
                recorder: recorder.clone(),
                draws: draws.clone(),
                settings: settings.clone(),
                leases: take(),
                records: take(),
                worker: RefCell::new(None),
            })
        })
        .collect()
}

/// Sets up the store, runs the replicas through the phases (ending at the first violation),
/// and reports the checkers' verdict and the coverage.
pub fn run(config: &RealConfig) -> Result<RealReport, RealError> {
    check(config)?;
    let setup = store_setup(config);
    let replicas = usize::from(config.replicas);
    let mut connections =
        connect(&config.target, &setup, 2 * replicas + 1).map_err(RealError::Store)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|error| RealError::BadConfig(format!("cannot start tokio: {error}")))?;
    let local = tokio::task::LocalSet::new();
    let clock = RunClock::start();
    let recorder = Rc::new(recorder(config, clock));
    let draws = Rc::new(Draws::seeded(config.seed));
    let settings = Rc::new(config.settings.clone());
    let harness = Arc::new(Mutex::new(
        connections.pop().expect("one per replica pair, plus one"),
    ));
    let replicas = replicas_on(connections, &recorder, &draws, &settings);
    let world = Rc::new(World {
        recorder: recorder.clone(),
        draws,
        replicas,
        harness,
        config: config.clone(),
        eligible_before_ms: Cell::new(0),
        changed: Notify::new(),
    });
    let halted = recorder.changed.wait_until(|| recorder.halted.get());
    let end_ms = local.block_on(&runtime, async {
        match select(
            std::pin::pin!(run_phases(world.clone())),
            std::pin::pin!(halted),
        )
        .await
        {
            Either::Left(((), _)) | Either::Right(((), _)) => clock.elapsed_ms(),
        }
    });
    drop(local);
    // The workers hold their replicas' ports: break the cycle so connections close now.
    for replica in &world.replicas {
        replica.worker.borrow_mut().take();
    }
    drop(world);
    drop(runtime);
    clean_up(&config.target);
    let verdict = {
        let mut checkers = recorder.checkers.borrow_mut();
        checkers.finish(end_ms);
        checkers.take_violation()
    };
    let mut stats = recorder.stats.borrow().clone();
    stats.wall_ms = end_ms;
    Ok(RealReport {
        violation: verdict,
        coverage: recorder.coverage.borrow().reached(),
        stats,
        events: recorder.kept.take(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names `build_worker` builds: `correct` and `built_defects`'.
    macro_rules! names {
        ($($module:ident => $worker:ident),*) => {
            &["correct", $(defects::$module::NAME),*]
        };
    }
    const BUILT: &[&str] = built_defects!(names);

    /// `--worker NAME` accepts the names `workers()` lists; each must be one `build_worker`
    /// builds, or the run panics after the name was accepted.
    #[test]
    fn every_listed_worker_is_built() {
        let listed = workers();
        let unbuilt: Vec<&&str> = listed.iter().filter(|name| !BUILT.contains(name)).collect();
        assert!(unbuilt.is_empty(), "listed, never built: {unbuilt:?}");
        assert_eq!(listed.len(), BUILT.len(), "built, never listed");
    }
}
