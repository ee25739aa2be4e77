//! A replica's process: its clock, its pauses, its calls in flight, and the port its worker's
//! system-specific ports are built on.
//!
//! Terminology:
//! - *local time*: what this replica's clock reads: [`EPOCH_MS`] + virtual time + offset +
//!   drift (ppm of elapsed time) + the sum of clock jumps so far.
//! - *gate*: a paused process runs no code. Every port crossing (sending a request, receiving
//!   an answer, waking from a sleep) waits at the gate until the pause ends, so a pause between
//!   reading a token and sending a request makes the request leave late, with an old token.
//! - *in flight*: calls of the replica the worker is still waiting for, per operation; a stop
//!   "during an operation" waits for one of them.
//! - *port*: [`Port`], what a system's ports (a clock, a lease service, a store...) are built
//!   on: it sends requests through the shared network, reads and sleeps on the replica's
//!   clock, and records the system's notes.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;

use leasesim_events::{EventKind, OpSet, ReplicaId, Vocabulary};
use leasesim_invariants::{Built, ConstructionNotes, SettingsRules, probe};

use crate::env::{EPOCH_MS, Env};
use crate::faults::ClockSpec;
use crate::scenario::MsRange;
use crate::signal::Signal;
use crate::system::{System, WorkerOf};
use crate::task::{TaskHandle, TaskShared};
use crate::world::World;

/// Per-replica state kept by the world.
pub struct ReplicaState<S: System> {
    pub id: ReplicaId,
    /// The id's owner id (`r1`), made once: services compare it at every apply.
    owner_id: String,
    clock: ClockSpec,
    jumped_ms: Cell<i64>,
    paused_until_ms: Cell<u64>,
    in_flight: RefCell<Vec<u16>>,
    between_terms: Cell<bool>,
    /// Notified whenever a call starts or ends, or a term starts or ends.
    pub changed: Signal,
    pub stop_called: Cell<bool>,
    pub stop_resolved: Cell<bool>,
    worker: RefCell<Option<Rc<WorkerOf<S>>>>,
    /// Bumped each time a worker is installed (at start, and at each restart).
    generation: Cell<u32>,
}

impl<S: System> ReplicaState<S> {
    pub fn new(id: ReplicaId, clock: ClockSpec) -> ReplicaState<S> {
        ReplicaState {
            id,
            owner_id: id.owner_id(),
            clock,
            jumped_ms: Cell::new(0),
            paused_until_ms: Cell::new(0),
            in_flight: RefCell::new(vec![0; S::Op::ALL.len()]),
            between_terms: Cell::new(true),
            changed: Signal::default(),
            stop_called: Cell::new(false),
            stop_resolved: Cell::new(false),
            worker: RefCell::new(None),
            generation: Cell::new(0),
        }
    }

    /// The replica's current worker and its generation (a driver keeps both; see
    /// [`ReplicaState::replaced_since`]).
    pub fn worker(&self) -> Option<(Rc<WorkerOf<S>>, u32)> {
        let worker = self.worker.borrow().clone()?;
        Some((worker, self.generation.get()))
    }

    /// The owner id this replica's worker uses with its services (`r1`, ...).
    pub fn owner_id(&self) -> &str {
        &self.owner_id
    }

    /// Installs a fresh worker (at start, or as the replica restarts).
    pub fn install(&self, worker: Rc<WorkerOf<S>>) {
        let before = self.generation.get();
        *self.worker.borrow_mut() = Some(worker);
        // Each installed worker has a generation of its own: generations never wrap.
        self.generation.set(
            before
                .checked_add(1)
                .expect("worker generations never wrap"),
        );
    }

    /// Lets go of the worker (at the end of a run).
    pub fn drop_worker(&self) {
        self.worker.borrow_mut().take();
    }

    /// Was the worker of `generation` replaced (the replica restarted)? Its driver must then
    /// start no more work: the replica runs its fresh worker only.
    pub fn replaced_since(&self, generation: u32) -> bool {
        self.generation.get() != generation
    }

    /// This replica's clock reading at virtual instant `virtual_ms`.
    pub fn local_ms(&self, virtual_ms: u64) -> u64 {
        let elapsed = virtual_ms as i128;
        let drift = elapsed * i128::from(self.clock.drift_ppm) / 1_000_000;
        let local = i128::from(EPOCH_MS)
            + elapsed
            + i128::from(self.clock.offset_ms)
            + drift
            + i128::from(self.jumped_ms.get());
        local.clamp(0, i128::from(u64::MAX)) as u64
    }

    /// Virtual ms that pass while this clock advances `local_ms`.
    pub fn virtual_span_ms(&self, local_ms: u64) -> u64 {
        leasesim_events::virtual_span_ms(self.clock.drift_ppm, local_ms)
    }

    pub fn jump(&self, by_ms: i64) {
        let before = self.jumped_ms.get();
        // Jumps accumulate, saturating at the extremes.
        self.jumped_ms.set(before.saturating_add(by_ms));
    }

    /// Pauses the process until virtual instant `until_ms` (extends a running pause).
    pub fn pause_until(&self, until_ms: u64) {
        self.paused_until_ms
            .set(self.paused_until_ms.get().max(until_ms));
    }

    /// Is the process paused at virtual instant `now_ms`?
    pub fn paused_at(&self, now_ms: u64) -> bool {
        now_ms < self.paused_until_ms.get()
    }

    /// Waits while the process is paused.
    pub async fn gate(&self, env: &dyn Env<S>) {
        loop {
            let until = self.paused_until_ms.get();
            if env.now_ms() >= until {
                return;
            }
            env.sleep_until(until).await;
        }
    }

    /// Calls of operation `op` the worker is waiting for.
    pub fn in_flight(&self, op: S::Op) -> u16 {
        self.in_flight.borrow()[op.index()]
    }

    fn adjust_in_flight(&self, op: S::Op, up: bool) {
        {
            let mut counts = self.in_flight.borrow_mut();
            let slot = &mut counts[op.index()];
            // invariant: a call leaves flight only after it entered it.
            debug_assert!(up || *slot > 0);
            *slot = if up { *slot + 1 } else { *slot - 1 };
        }
        self.changed.notify();
    }

    pub fn is_between_terms(&self) -> bool {
        self.between_terms.get()
    }

    pub fn set_between_terms(&self, between: bool) {
        self.between_terms.set(between);
        self.changed.notify();
    }

    /// A driver's wait before its next round (term, pass, attempt): marks the replica between
    /// terms, sleeps a pause drawn from `every` (the longest pause is value 0, the simplest
    /// choice: fewer rounds, shorter traces), waits at the gate, then marks it in a round.
    /// False, with the replica left between terms, when it was restarted with a fresh worker
    /// meanwhile (the fresh worker has a driver of its own).
    pub async fn next_round(&self, env: &dyn Env<S>, every: MsRange, generation: u32) -> bool {
        self.set_between_terms(true);
        env.sleep(every.max - env.range(0, every.max - every.min))
            .await;
        self.gate(env).await;
        if self.replaced_since(generation) {
            return false;
        }
        self.set_between_terms(false);
        true
    }
}

/// Marks a call in flight for as long as the worker waits for it (or until it gives up).
struct InFlight<'a, S: System> {
    replica: &'a ReplicaState<S>,
    op: S::Op,
}

impl<'a, S: System> InFlight<'a, S> {
    fn enter(replica: &'a ReplicaState<S>, op: S::Op) -> InFlight<'a, S> {
        replica.adjust_in_flight(op, true);
        InFlight { replica, op }
    }
}

impl<S: System> Drop for InFlight<'_, S> {
    fn drop(&mut self) {
        self.replica.adjust_in_flight(self.op, false);
    }
}

/// One replica's view of the world: what a system's ports are built on.
pub struct Port<S: System> {
    world: Rc<World<S>>,
    replica: ReplicaId,
}

impl<S: System> Clone for Port<S> {
    fn clone(&self) -> Self {
        Port {
            world: self.world.clone(),
            replica: self.replica,
        }
    }
}

impl<S: System> Port<S> {
    pub fn new(world: Rc<World<S>>, replica: ReplicaId) -> Port<S> {
        Port { world, replica }
    }

    /// The replica this port belongs to.
    pub fn replica(&self) -> ReplicaId {
        self.replica
    }

    pub fn world(&self) -> &Rc<World<S>> {
        &self.world
    }

    fn state(&self) -> &ReplicaState<S> {
        self.world.replica(self.replica)
    }

    /// Sends `request` and waits for the answer, as this replica's process: the request waits
    /// at the gate to leave, flies to the service (see the network), and the answer waits at
    /// the gate to be read.
    pub async fn call(&self, request: S::Request) -> S::Answer {
        let env = self.world.env();
        let state = self.state();
        state.gate(env).await;
        let call = self.world.next_call_id();
        // invariant: a request leaves only from a running process.
        debug_assert!(!state.paused_at(env.now_ms()));
        env.emit_for(self.replica, EventKind::Call { call, request });
        let op = <S as Vocabulary>::op(&request);
        let _flight = InFlight::enter(state, op);
        let answer = self.world.clone().send(self.replica, call, request).await;
        state.gate(env).await;
        env.emit_for(self.replica, EventKind::Answered { call, op, answer });
        answer
    }

    /// The replica's clock, read now (recorded as a clock read).
    pub fn now_ms(&self) -> u64 {
        let env = self.world.env();
        let now_ms = self.state().local_ms(env.now_ms());
        env.emit_for(self.replica, EventKind::ClockRead { now_ms });
        now_ms
    }

    /// Sleeps `ms` on the replica's clock, recorded as a timer. What a worker may rely on:
    /// - the timer starts when the future is first polled, not when it is created (the
    ///   future is lazy: nothing is recorded or scheduled before the first poll);
    /// - it completes once the replica's clock has advanced `ms`: under drift the virtual
    ///   time that passes is `ms` scaled by the replica's rate, fixed at the first poll; a
    ///   jump of the replica's clock while it sleeps neither ends nor extends it;
    /// - it never completes while the replica is paused: a wake-up due during a pause
    ///   happens when the pause ends;
    /// - a zero-length sleep still yields once, so a loop of them lets the others run (and
    ///   the executor catches a spin);
    /// - it may be dropped before it completes; nothing is woken for it afterwards.
    pub async fn sleep(&self, ms: u64) {
        let env = self.world.env();
        env.emit_for(self.replica, EventKind::TimerSet { duration_ms: ms });
        let state = self.state();
        match state.virtual_span_ms(ms) {
            0 => env.yield_now().await,
            span_ms => env.sleep(span_ms).await,
        }
        state.gate(env).await;
    }

    /// Records a note of the system for this replica.
    pub fn note(&self, note: S::Note) {
        self.world.env().note_for(self.replica, note);
    }

    /// Probes the production core's construction with the run's settings `run` and the
    /// system's `settings` (see `leasesim_invariants::probe`), building with `build`, and
    /// records a finding as this replica's note (judged by `construction`).
    pub fn probe_construction<C: std::fmt::Debug + Default + PartialEq>(
        &self,
        run: &C,
        settings: &SettingsRules<C>,
        build: impl Fn(&C) -> Built,
    ) where
        S: ConstructionNotes,
    {
        if let Some(finding) = probe(run, settings, build) {
            self.note(S::construction_note(finding));
        }
    }

    /// Starts a task of the worker's own (see [`crate::task`]): a task of the run, scheduled
    /// by the run's strategy, recorded as `TaskStarted` now and `TaskEnded` when it ends.
    pub fn spawn<T: 'static>(
        &self,
        name: &'static str,
        future: impl Future<Output = T> + 'static,
    ) -> TaskHandle<T> {
        let env = self.world.env();
        let task = self.world.next_task_id();
        env.emit_for(self.replica, EventKind::TaskStarted { task, name });
        let (abortable, abort) = futures::future::abortable(future);
        let shared = TaskShared::new(abort);
        let (inner, world, replica) = (shared.clone(), self.world.clone(), self.replica);
        env.spawn(
            name,
            Box::pin(async move {
                let output = abortable.await.ok();
                let aborted = output.is_none();
                world
                    .env()
                    .emit_for(replica, EventKind::TaskEnded { task, aborted });
                inner.end(output);
            }),
        );
        TaskHandle::new(shared)
    }
}
