//! The phases of every real run, written once for every system (as `leasesim_sim::phases` is
//! for simulated runs): safety (each replica's worker and driver, its pauses, a drawn stop),
//! liveness (faults healed, every replica whose stop resolved restarted with a fresh worker),
//! shutdown (every replica stopped, and a bounded wait for the stops to resolve).
//!
//! Terminology:
//! - *process*: what the phases move of one replica ([`Process`]): its gate, the generation of
//!   its worker (bumped by a restart, so an older driver ends), and its stop: pending (waiting
//!   for the paused process), called, resolved (`stop()` returned).
//! - *planned stop*: the safety phase's drawn stop. Real time can carry it past the safety
//!   phase (a pause holds it at the gate, `stop()` waits for the open term): one still at the
//!   gate when faults heal is not made, and one that resolves after they healed restarts its
//!   replica as the liveness phase would have. Shutdown stops every replica once, never beside
//!   a pending stop.
//! - *real run*: one system's run as the phases drive it ([`RealRun`]): its processes, its
//!   recorder and fault plan, and the hooks that are the system's own: starting a worker with
//!   its driver, stopping one, and what happens at the phases' edges (reservations' agents,
//!   retention's backlog mark and check), named as `leasesim_sim`'s phases name them.

use std::cell::Cell;
use std::rc::Rc;

use futures::future::{LocalBoxFuture, select};
use leasesim_events::{Event, EventKind, Phase, ReplicaId, Vocabulary};
use retention_worker::Notify;

use crate::{Draws, Gate, RunClock, SpanMs};

/// One replica's process, as the phases see it (see the module docs).
#[derive(Debug)]
pub struct Process {
    pub id: ReplicaId,
    pub gate: Gate,
    generation: Cell<u32>,
    stop_pending: Cell<bool>,
    stop_called: Cell<bool>,
    stop_resolved: Cell<bool>,
    /// Shutdown has begun for this replica: a planned stop is made whenever it passes.
    shutting_down: Cell<bool>,
}

impl Process {
    pub fn new(id: ReplicaId) -> Process {
        Process {
            id,
            gate: Gate::default(),
            generation: Cell::new(0),
            stop_pending: Cell::new(false),
            stop_called: Cell::new(false),
            stop_resolved: Cell::new(false),
            shutting_down: Cell::new(false),
        }
    }

    /// The generation of the replica's current worker.
    pub fn generation(&self) -> u32 {
        self.generation.get()
    }

    /// Has a fresh worker replaced the one of `generation`? (Its driver then ends.)
    pub fn replaced_since(&self, generation: u32) -> bool {
        self.generation.get() != generation
    }

    fn resolved(&self) -> bool {
        self.stop_called.get() && self.stop_resolved.get()
    }
}

/// What the phases do to processes: pauses, a stop per replica, and shutdown's bound.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProcessFaults {
    /// A pause is drawn every `pause_every`, with `pause_probability`, lasting `pause_for`.
    pub pause_every: SpanMs,
    pub pause_probability: f64,
    pub pause_for: SpanMs,
    /// The chance that a replica is stopped at a drawn instant of the safety phase.
    pub stop_probability: f64,
    /// How long shutdown waits for the stops to return.
    pub stop_bound_ms: u64,
}

impl ProcessFaults {
    /// Pauses of 100 ms to 1.5 s drawn every 0.4 to 1.5 s with p = 0.35, a stop with p = 0.4,
    /// and 5 s for the stops to return: longer than every built-in real run's lifetimes.
    pub const DEFAULT: ProcessFaults = ProcessFaults {
        pause_every: SpanMs::new(400, 1_500),
        pause_probability: 0.35,
        pause_for: SpanMs::new(100, 1_500),
        stop_probability: 0.4,
        stop_bound_ms: 5_000,
    };
}

/// `pauses every 400..1500ms (p=0.35) for 100..1500ms; stop p=0.4` (shutdown's bound is not
/// shown).
impl std::fmt::Display for ProcessFaults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (every, pause) = (self.pause_every, self.pause_for);
        write!(
            f,
            "pauses every {}..{}ms (p={}) for {}..{}ms; stop p={}",
            every.min,
            every.max,
            self.pause_probability,
            pause.min,
            pause.max,
            self.stop_probability
        )
    }
}

/// One system's real run, as the phases drive it (see the module docs).
pub trait RealRun: Sized + 'static {
    type V: Vocabulary;

    fn clock(&self) -> RunClock;
    fn draws(&self) -> &Draws;
    fn emit(&self, event: Event<Self::V>);
    /// The safety and liveness phases' lengths.
    fn phases_ms(&self) -> (u64, u64);
    fn process_faults(&self) -> ProcessFaults;
    fn replicas(&self) -> usize;
    fn process(&self, replica: usize) -> &Process;
    /// Woken when a stop resolves.
    fn changed(&self) -> &Notify;
    /// Installs a fresh worker on `replica` and starts its driver.
    fn start_worker(run: &Rc<Self>, replica: usize);
    /// The stop of `replica`'s current worker, if it has one.
    fn stop_worker(&self, replica: usize) -> Option<LocalBoxFuture<'static, ()>>;
    /// Called as the safety phase starts, before the workers and their faults.
    fn safety_starts(_run: &Rc<Self>) {}
    /// Called at the end of the safety phase, before the liveness phase's event and before
    /// faults heal (where the simulated phases call `faults_heal`).
    fn faults_heal(&self) {}
    /// Awaited when the liveness phase's time is up, before shutdown.
    fn liveness_ends(_run: &Rc<Self>) -> LocalBoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

/// The whole run, phase by phase.
pub async fn run_phases<R: RealRun>(run: Rc<R>) {
    let (duration_ms, liveness_ms) = run.phases_ms();
    let phase = |phase| run.emit(Event::world(EventKind::Phase(phase)));
    phase(Phase::Safety);
    start_safety(&run);
    run.clock().sleep_until(duration_ms).await;
    run.faults_heal();
    phase(Phase::Liveness);
    start_liveness(&run);
    run.clock().sleep_until(duration_ms + liveness_ms).await;
    R::liveness_ends(&run).await;
    phase(Phase::Shutdown);
    shutdown(&run).await;
    phase(Phase::End);
}

/// Every replica's worker and driver, its pauses, and (drawn) its stop.
fn start_safety<R: RealRun>(run: &Rc<R>) {
    let (duration_ms, _) = run.phases_ms();
    R::safety_starts(run);
    for replica in 0..run.replicas() {
        R::start_worker(run, replica);
        tokio::task::spawn_local(pauser(run.clone(), replica));
        if run.draws().coin(run.process_faults().stop_probability) {
            let at_ms = run.draws().range(duration_ms / 4, duration_ms * 3 / 4);
            tokio::task::spawn_local(stopper(run.clone(), replica, at_ms));
        }
    }
}

/// Heals faults and restarts every replica whose stop resolved with a fresh worker.
fn start_liveness<R: RealRun>(run: &Rc<R>) {
    run.draws().heal();
    for replica in 0..run.replicas() {
        if run.process(replica).resolved() {
            restart(run, replica);
        }
    }
}

/// Replaces `replica`'s stopped worker with a fresh one (its old driver ends).
fn restart<R: RealRun>(run: &Rc<R>, replica: usize) {
    let process = run.process(replica);
    // invariant: only a worker whose stop resolved is replaced.
    debug_assert!(process.resolved());
    process.generation.set(process.generation.get() + 1);
    process.stop_called.set(false);
    run.emit(Event::of(process.id, EventKind::Restarted));
    R::start_worker(run, replica);
}

/// Pauses `replica`'s process now and then, until faults heal.
async fn pauser<R: RealRun>(run: Rc<R>, replica: usize) {
    let faults = run.process_faults();
    let (clock, process) = (run.clock(), run.process(replica));
    loop {
        let every_ms = faults.pause_every.draw(run.draws());
        tokio::time::sleep(std::time::Duration::from_millis(every_ms)).await;
        if run.draws().healed() {
            return;
        }
        if run.draws().coin(faults.pause_probability) {
            let until_ms = clock.elapsed_ms() + faults.pause_for.draw(run.draws());
            process.gate.pause_until(until_ms);
            run.emit(Event::of(process.id, EventKind::Paused { until_ms }));
            clock.sleep_until(until_ms).await;
            run.emit(Event::of(process.id, EventKind::Resumed));
        }
    }
}

/// Stops `replica` at `at_ms` of the safety phase (a planned stop, see the module docs).
async fn stopper<R: RealRun>(run: Rc<R>, replica: usize, at_ms: u64) {
    run.clock().sleep_until(at_ms).await;
    stop_now(run, replica, true).await;
}

/// Calls `stop()` on `replica`'s worker once its process runs, and records the call and its
/// resolution.
async fn stop_now<R: RealRun>(run: Rc<R>, replica: usize, planned: bool) {
    let Some(stop) = run.stop_worker(replica) else {
        return;
    };
    let process = run.process(replica);
    process.stop_pending.set(true);
    process.gate.pass(&run.clock()).await;
    let late = || planned && run.draws().healed() && !process.shutting_down.get();
    if late() {
        process.stop_pending.set(false);
        return;
    }
    process.stop_called.set(true);
    process.stop_resolved.set(false);
    run.emit(Event::of(process.id, EventKind::StopCalled));
    stop.await;
    process.stop_resolved.set(true);
    process.stop_pending.set(false);
    run.emit(Event::of(process.id, EventKind::StopResolved));
    run.changed().notify_all();
    if late() {
        restart(&run, replica);
    }
}

/// Stops every replica not stopped or being stopped, and waits (bounded) for every stop to
/// resolve.
async fn shutdown<R: RealRun>(run: &Rc<R>) {
    for replica in 0..run.replicas() {
        let process = run.process(replica);
        process.shutting_down.set(true);
        if !process.stop_called.get() && !process.stop_pending.get() {
            tokio::task::spawn_local(stop_now(run.clone(), replica, false));
        }
    }
    let deadline_ms = run.clock().elapsed_ms() + run.process_faults().stop_bound_ms;
    let all_resolved = || (0..run.replicas()).all(|replica| run.process(replica).resolved());
    let resolved = run.changed().wait_until(all_resolved);
    let _ = select(
        std::pin::pin!(resolved),
        std::pin::pin!(run.clock().sleep_until(deadline_ms)),
    )
    .await;
}
