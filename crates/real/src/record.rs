//! What every real-run module shares: the recorder, and the serial line that applies store
//! calls one at a time in the order the recorder reads them.
//!
//! Terminology:
//! - *recorder*: stamps every event with the run clock (never earlier than the event before),
//!   numbers it, and feeds it at once to the checkers and the coverage; the first violation
//!   halts the run. It also counts what the run's report prints.
//! - *serial line*: every store call of a run (a worker's, an agent's, the harness's) runs on a
//!   pool thread while it holds the line: it reads the store's time there, applies the call,
//!   and hands the events that say what the store did to the line's queue before it lets go.
//!   The queue's order is therefore the order the store applied the calls in, whatever order
//!   their threads finish in, and the checkers' ledgers (which follow the store apply by
//!   apply) see the store's own history.
//! - *ticket*: a call's place on the line; the caller reads its answer only once the pump has
//!   recorded the events of every ticket up to its own, so an `Answered` never comes before
//!   its `Applied`.
//! - *pump*: the local task that takes the line's queue in order and records it.

use std::cell::{Cell, RefCell};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use leasesim_events::{Event, EventKind, Flow, ReplicaId, Stamped};
use leasesim_invariants::{Checker, CheckerSet, Coverage, Judged, SituationSet, Violation};
use retention_worker::Notify;

use crate::RunClock;

/// The line's queue, as the pump reads it: each ticket with the events it recorded.
pub type Queue<V> = UnboundedReceiver<(u64, Vec<Event<V>>)>;

/// Counts one event into a run's statistics.
pub type Count<V, S> = fn(&EventKind<V>, &mut S);

/// Stamps, checks and counts the events of one run (see the module docs).
pub struct Recorder<V: Judged, C, K, S> {
    clock: RunClock,
    seq: Cell<u64>,
    last_at_ms: Cell<u64>,
    next_call: Cell<u64>,
    checkers: RefCell<CheckerSet<V, C>>,
    coverage: RefCell<K>,
    keep: bool,
    kept: RefCell<Vec<Stamped<Event<V>>>>,
    stats: RefCell<S>,
    count: Count<V, S>,
    halted: Cell<bool>,
    /// The last ticket whose events are recorded.
    recorded_ticket: Cell<u64>,
    /// Woken at a halt and whenever a ticket is recorded.
    pub changed: Notify,
}

/// What a recorder found, once the run is over.
pub struct Findings<V: Judged, S> {
    pub violation: Option<Violation<V>>,
    pub coverage: SituationSet<V::Situation>,
    pub stats: S,
    pub events: Vec<Stamped<Event<V>>>,
}

impl<V: Judged, C: Checker<V>, K: Coverage<V>, S: Default> Recorder<V, C, K, S> {
    /// A recorder feeding `checkers` and `coverage`; `keep` keeps every event for a trace.
    pub fn new(
        clock: RunClock,
        checkers: CheckerSet<V, C>,
        coverage: K,
        keep: bool,
        count: Count<V, S>,
    ) -> Self {
        Recorder {
            clock,
            seq: Cell::new(0),
            last_at_ms: Cell::new(0),
            next_call: Cell::new(1),
            checkers: RefCell::new(checkers),
            coverage: RefCell::new(coverage),
            keep,
            kept: RefCell::new(Vec::new()),
            stats: RefCell::new(S::default()),
            count,
            halted: Cell::new(false),
            recorded_ticket: Cell::new(0),
            changed: Notify::new(),
        }
    }

    pub fn clock(&self) -> RunClock {
        self.clock
    }

    /// Records `event` now.
    pub fn emit(&self, event: Event<V>) {
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
        (self.count)(&stamped.event.kind, &mut self.stats.borrow_mut());
        self.coverage.borrow_mut().on_event(&stamped);
        let flow = self.checkers.borrow_mut().on_event(&stamped);
        if self.keep {
            self.kept.borrow_mut().push(stamped);
        }
        if flow == Flow::Halt && !self.halted.replace(true) {
            self.changed.notify_all();
        }
    }

    /// Records `kind` of `replica` now.
    pub fn emit_for(&self, replica: ReplicaId, kind: EventKind<V>) {
        self.emit(Event::of(replica, kind));
    }

    /// A fresh call number.
    pub fn call_id(&self) -> u64 {
        let id = self.next_call.get();
        self.next_call.set(id + 1);
        id
    }

    /// Has a checker reported a violation?
    pub fn halted(&self) -> bool {
        self.halted.get()
    }

    /// The run's statistics so far, to change.
    pub fn stats(&self) -> std::cell::RefMut<'_, S> {
        self.stats.borrow_mut()
    }

    /// Completes once the events of `ticket` (and of every earlier one) are recorded.
    pub async fn recorded(&self, ticket: u64) {
        self.changed
            .wait_until(|| self.recorded_ticket.get() >= ticket)
            .await;
    }

    /// Records the line's queue in order, for the whole run.
    pub async fn pump(&self, mut queue: Queue<V>) {
        while let Some((ticket, events)) = queue.next().await {
            // invariant: tickets arrive in the order the line handed them out.
            debug_assert_eq!(ticket, self.recorded_ticket.get() + 1);
            for event in events {
                self.emit(event);
            }
            self.recorded_ticket.set(ticket);
            self.changed.notify_all();
        }
    }

    /// The checkers' verdict at `end_ms`, the coverage, the counts and the kept events.
    pub fn finish(&self, end_ms: u64) -> Findings<V, S> {
        let violation = {
            let mut checkers = self.checkers.borrow_mut();
            checkers.finish(end_ms);
            checkers.take_violation()
        };
        Findings {
            violation,
            coverage: self.coverage.borrow().reached(),
            stats: self.stats.take(),
            events: self.kept.take(),
        }
    }
}

/// The line's state: the last ticket handed out, and the queue to the pump.
struct LineState<V: Judged> {
    last_ticket: u64,
    queue: UnboundedSender<(u64, Vec<Event<V>>)>,
}

/// The serial line of one run (see the module docs).
pub struct Line<V: Judged> {
    state: Arc<Mutex<LineState<V>>>,
    clock: RunClock,
}

impl<V: Judged> Line<V>
where
    Event<V>: Send,
{
    /// A line, and the queue its pump reads.
    pub fn new(clock: RunClock) -> (Line<V>, Queue<V>) {
        let (queue, pumped) = unbounded();
        let state = LineState {
            last_ticket: 0,
            queue,
        };
        let line = Line {
            state: Arc::new(Mutex::new(state)),
            clock,
        };
        (line, pumped)
    }

    /// Runs `work` on a pool thread while holding the line: it gets the store's time (the
    /// run clock on the epoch scale, read after the line was taken) and answers the events to
    /// record and its result. Answers the call's ticket and the result.
    pub async fn apply<T, F>(&self, work: F) -> (u64, T)
    where
        T: Send + 'static,
        F: FnOnce(u64) -> (Vec<Event<V>>, T) + Send + 'static,
    {
        let (state, clock) = (self.state.clone(), self.clock);
        tokio::task::spawn_blocking(move || {
            let mut state = state.lock().unwrap_or_else(|p| p.into_inner());
            let (events, result) = work(clock.now_ms());
            state.last_ticket += 1;
            let ticket = state.last_ticket;
            // A closed queue means the run is over; its events no longer matter.
            let _ = state.queue.unbounded_send((ticket, events));
            (ticket, result)
        })
        .await
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic.into_panic()))
    }
}
