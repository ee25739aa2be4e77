//! What a peer run did, as the holder-lock system's event stream, judged by the system's own
//! checkers as it is recorded.
//!
//! Terminology:
//! - *report*: a peer's ports, driver and store node tell the recorder what happened (a call
//!   sent, applied at the store, answered; a timer set; a job's start, steps and end; an
//!   attempt's start and end; a stop called and returned), each at the peer's virtual time in
//!   ms since the run began. The recorder stamps it (`seq`, `at_ms`) into a
//!   `Stamped<Event<HolderLock>>`, as leasesim's world would have.
//! - *phases*: the recorder adds the world's phase events itself: safety at 0, liveness at
//!   [`SAFETY_MS`], shutdown at [`STOP_AT_MS`] (each before the first event at or after its
//!   instant), end at [`Recorder::finish`].
//! - *verdict*: the first violation of the checkers (`all_checkers`: every invariant the
//!   system declares), and the trace hash (FNV-1a over every event, in order). A side ends
//!   its run there: turmoil's step loop asks [`Recorder::violated`], madsim's supervisor
//!   awaits [`Recorder::first_violation`].
//! - *store node*: [`StoreNode`], the system crate's `ClaimStore` applied at the peer's
//!   virtual time, reporting what it applied. Its keys live in the store process's memory:
//!   when a peer kills the process (a crash; madsim's `Handle::kill` then `Handle::restart`,
//!   turmoil's `Sim::bounce`), the node is dropped with it and reports what it held as lost
//!   (`Note::Forgot` with cause `Restart`, as leasesim's store restart notes it); the process's
//!   next life starts with an empty store.
//!
//! Everything a peer runs is on one thread (turmoil and madsim both run their hosts there),
//! so the recorder is an `Rc<RefCell<..>>`: reports arrive in the order they happen.

use std::cell::RefCell;
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::rc::Rc;

use futures::channel::oneshot;
use leasesim_events::{EPOCH_MS, Event, EventKind, Flow, Phase, ReplicaId, Stamped};
use leasesim_holder_lock::HolderLock;
use leasesim_holder_lock::checkers::{CheckConfig, CheckerSet, all_checkers};
use leasesim_holder_lock::events::{Answer, Applied, Forgetting, Note, Op, Request};
use leasesim_holder_lock::store::ClaimStore;

use crate::workload::{ATTEMPT_BOUND_MS, REPLICAS, SAFETY_MS, STOP_AT_MS, claim};

/// One holder-lock event of a peer run.
pub type HlEvent = Stamped<Event<HolderLock>>;

/// FNV-1a, 64 bits: stable across builds and machines (std's `DefaultHasher` is not).
#[derive(Clone, Copy, Debug)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xCBF2_9CE4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0100_0000_01B3);
        }
    }
}

/// How a run ended, as the checkers judged it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// `invariant: sentence` of the first violation, if any.
    pub violation: Option<String>,
    pub trace_hash: u64,
    pub events: u64,
    /// Every event, when the recorder was asked to keep them.
    pub trace: Vec<String>,
}

struct Inner {
    checkers: CheckerSet,
    hash: Fnv,
    seq: u64,
    next_call: u64,
    next_serial: u32,
    phase: Phase,
    last_ms: u64,
    keep: bool,
    trace: Vec<String>,
    /// The run ended ([`Recorder::finish`]): later reports (a node dropped as the peer winds
    /// down) are not part of it.
    finished: bool,
    /// Who waits for the first violation ([`Recorder::first_violation`]).
    watchers: Vec<oneshot::Sender<()>>,
}

/// The recorder of one peer run (cheap to clone: every clone reports into the same run).
#[derive(Clone)]
pub struct Recorder(Rc<RefCell<Inner>>);

/// The checker configuration of the current workload: its renewal, no drift.
pub fn check_config() -> CheckConfig {
    CheckConfig {
        renewal: claim().renew_every_ms.is_some(),
        attempt_bound_ms: ATTEMPT_BOUND_MS,
        trusted_ms: claim().trusted_ms(),
        drift_ppm: vec![0; usize::from(REPLICAS)],
    }
}

impl Recorder {
    /// A run's recorder; `keep`: keep every event as a trace line (for printing a failure).
    pub fn new(keep: bool) -> Recorder {
        let inner = Inner {
            checkers: all_checkers(&check_config()),
            hash: Fnv::default(),
            seq: 0,
            next_call: 1,
            next_serial: 1,
            phase: Phase::Safety,
            last_ms: 0,
            keep,
            trace: Vec::new(),
            finished: false,
            watchers: Vec::new(),
        };
        let recorder = Recorder(Rc::new(RefCell::new(inner)));
        recorder
            .0
            .borrow_mut()
            .push(0, Event::world(EventKind::Phase(Phase::Safety)));
        recorder
    }

    /// The run's next serial for a fresh token (never the same twice in a run).
    pub fn next_serial(&self) -> u32 {
        let mut inner = self.0.borrow_mut();
        inner.next_serial += 1;
        inner.next_serial - 1
    }

    /// `replica` sent `request`; returns the call's id.
    pub fn call(&self, replica: ReplicaId, request: Request, at_ms: u64) -> u64 {
        let mut inner = self.0.borrow_mut();
        let call = inner.next_call;
        inner.next_call += 1;
        inner.record(at_ms, Event::of(replica, EventKind::Call { call, request }));
        call
    }

    /// The store applied `call` of `replica`.
    pub fn applied(&self, replica: ReplicaId, call: u64, applied: Applied, at_ms: u64) {
        let kind = EventKind::Applied { call, applied };
        self.0.borrow_mut().record(at_ms, Event::of(replica, kind));
    }

    /// `replica` received `answer` to `call` (or `Answer::Failed`: no answer in time).
    pub fn answered(&self, replica: ReplicaId, call: u64, op: Op, answer: Answer, at_ms: u64) {
        let kind = EventKind::Answered { call, op, answer };
        self.0.borrow_mut().record(at_ms, Event::of(replica, kind));
    }

    /// The worker of `replica` set a timer of `duration_ms`.
    pub fn timer_set(&self, replica: ReplicaId, duration_ms: u64, at_ms: u64) {
        let kind = EventKind::TimerSet { duration_ms };
        self.0.borrow_mut().record(at_ms, Event::of(replica, kind));
    }

    /// A note of the world (the store's, here), not of a replica.
    pub fn world_note(&self, note: Note, at_ms: u64) {
        self.0.borrow_mut().record(at_ms, Event::world_note(note));
    }

    /// Has the run ended ([`Recorder::finish`])?
    pub fn finished(&self) -> bool {
        self.0.borrow().finished
    }

    /// A note of `replica`.
    pub fn note(&self, replica: ReplicaId, note: Note, at_ms: u64) {
        self.0
            .borrow_mut()
            .record(at_ms, Event::note_of(replica, note));
    }

    pub fn stop_called(&self, replica: ReplicaId, at_ms: u64) {
        self.0
            .borrow_mut()
            .record(at_ms, Event::of(replica, EventKind::StopCalled));
    }

    pub fn stop_resolved(&self, replica: ReplicaId, at_ms: u64) {
        self.0
            .borrow_mut()
            .record(at_ms, Event::of(replica, EventKind::StopResolved));
    }

    /// Fault: `replica`'s process stops running until `until_ms` (virtual time).
    pub fn paused(&self, replica: ReplicaId, until_ms: u64, at_ms: u64) {
        let kind = EventKind::Paused { until_ms };
        self.0.borrow_mut().record(at_ms, Event::of(replica, kind));
    }

    /// `replica`'s process runs again after a pause.
    pub fn resumed(&self, replica: ReplicaId, at_ms: u64) {
        self.0
            .borrow_mut()
            .record(at_ms, Event::of(replica, EventKind::Resumed));
    }

    /// `replica` was started again with a fresh worker.
    pub fn restarted(&self, replica: ReplicaId, at_ms: u64) {
        self.0
            .borrow_mut()
            .record(at_ms, Event::of(replica, EventKind::Restarted));
    }

    /// Has a checker found a violation yet? (A side may end its run there, as leasesim's
    /// halting checkers end theirs.)
    pub fn violated(&self) -> bool {
        self.0.borrow().checkers.violation().is_some()
    }

    /// Resolves once a checker has found a violation (at once if one has): a side that runs
    /// its world to a deadline ends it there, as leasesim's halting checkers end a run.
    pub fn first_violation(&self) -> impl Future<Output = ()> + use<> {
        let (sender, receiver) = oneshot::channel();
        let mut inner = self.0.borrow_mut();
        match inner.checkers.violation() {
            Some(_) => drop(sender.send(())),
            None => inner.watchers.push(sender),
        }
        async move {
            if receiver.await.is_err() {
                // The recorder is gone without a violation: nothing will ever resolve this.
                futures::future::pending::<()>().await;
            }
        }
    }

    /// The run ended at `end_ms`: the end phase, the checkers' final verdict and the hash.
    pub fn finish(&self, end_ms: u64) -> Verdict {
        let mut inner = self.0.borrow_mut();
        // invariant: a run is judged once; nothing is recorded after its end.
        assert!(!inner.finished, "a run finished twice");
        let end_ms = end_ms.max(inner.last_ms);
        inner.record(end_ms, Event::world(EventKind::Phase(Phase::End)));
        inner.checkers.finish(end_ms);
        inner.finished = true;
        let violation = inner
            .checkers
            .take_violation()
            .map(|violation| format!("{}: {}", violation.invariant.name(), violation.sentence));
        Verdict {
            violation,
            trace_hash: inner.hash.finish(),
            events: inner.seq,
            trace: std::mem::take(&mut inner.trace),
        }
    }
}

impl Inner {
    /// Records `event` at `at_ms`, after the phase events due at or before it.
    fn record(&mut self, at_ms: u64, event: Event<HolderLock>) {
        if self.finished {
            return;
        }
        if self.phase == Phase::Safety && at_ms >= SAFETY_MS {
            self.phase = Phase::Liveness;
            self.push(SAFETY_MS, Event::world(EventKind::Phase(Phase::Liveness)));
        }
        if self.phase == Phase::Liveness && at_ms >= STOP_AT_MS {
            self.phase = Phase::Shutdown;
            self.push(STOP_AT_MS, Event::world(EventKind::Phase(Phase::Shutdown)));
        }
        self.push(at_ms, event);
    }

    fn push(&mut self, at_ms: u64, event: Event<HolderLock>) {
        // invariant: a peer reports in the order things happen, on one virtual clock.
        debug_assert!(
            at_ms >= self.last_ms,
            "event at {at_ms} after {}",
            self.last_ms
        );
        self.last_ms = at_ms;
        let stamped = Stamped {
            seq: self.seq,
            at_ms,
            event,
        };
        self.seq += 1;
        stamped.hash(&mut self.hash);
        if self.keep {
            self.trace
                .push(format!("t={at_ms:>8}ms {:?}", stamped.event));
        }
        if self.checkers.violation().is_none() {
            let _: Flow = self.checkers.on_event(&stamped);
            if self.checkers.violation().is_some() {
                for watcher in self.watchers.drain(..) {
                    let _ = watcher.send(());
                }
            }
        }
    }
}

/// The store as a node of a peer: the system crate's `ClaimStore`, on the store's clock
/// (`EPOCH_MS` + the peer's virtual time), reporting each apply, and what it held when its
/// process ends (see the module docs).
pub struct StoreNode {
    store: ClaimStore,
    recorder: Recorder,
    /// The peer's virtual time in ms, read when the node is dropped while the run goes on.
    now_ms: Box<dyn Fn() -> u64>,
}

impl StoreNode {
    /// A store with compare-and-delete, reporting to `recorder`, on the peer's clock `now_ms`.
    pub fn new(recorder: Recorder, now_ms: impl Fn() -> u64 + 'static) -> StoreNode {
        StoreNode {
            store: ClaimStore::new(true),
            recorder,
            now_ms: Box::new(now_ms),
        }
    }

    /// Applies `call` of `replica` at virtual time `at_ms` and reports it.
    pub fn apply(&mut self, replica: ReplicaId, call: u64, request: Request, at_ms: u64) -> Answer {
        let (applied, answer) = self.store.apply(replica, request, EPOCH_MS + at_ms);
        self.recorder.applied(replica, call, applied, at_ms);
        answer
    }
}

impl Drop for StoreNode {
    /// The store's process ended: a crash while the run goes on loses every key, noted as
    /// leasesim's store restart notes it. Nothing is noted once the run has ended (the peer
    /// winds down), nor while a panic unwinds it (the clock may be gone, and the run is lost).
    fn drop(&mut self) {
        if std::thread::panicking() || self.recorder.finished() {
            return;
        }
        let at_ms = (self.now_ms)();
        for loss in self.store.restart(EPOCH_MS + at_ms).into_iter().flatten() {
            // invariant: a restart forgets; it restores nothing.
            debug_assert!(loss.restored.is_none());
            let (key, lost) = (loss.key, loss.lost);
            let cause = Forgetting::Restart;
            self.recorder
                .world_note(Note::Forgot { key, cause, lost }, at_ms);
        }
    }
}
