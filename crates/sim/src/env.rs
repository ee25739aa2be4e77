//! The world's only door to time, tasks, randomness and the event stream.
//!
//! Terminology:
//! - *env*: what the world runs on. [`SimEnv`] is the deterministic runtime; the benchmarks
//!   add a tokio env with paused time, so the same world and worker can be compared on both.
//! - *virtual ms*: time since the start of the run. Replica clocks and the lease authority add
//!   [`EPOCH_MS`] so that rows can be created "before" the run started.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use leasesim_events::{Event, EventKind, ReplicaId, Vocabulary};
use leasesim_rt::Handle;

use crate::sink::EventSink;

/// Wall-clock instant (ms) that virtual time 0 corresponds to on every clock of the world.
pub use leasesim_events::EPOCH_MS;

/// A boxed, non-`Send` task future.
pub type LocalTask = Pin<Box<dyn Future<Output = ()>>>;

/// A sleep of any env: the simulator's own timer without allocation, a boxed foreign one, or
/// one whose instant had already come (it completes at once, without yielding).
pub enum EnvSleep {
    Sim(leasesim_rt::Sleep),
    Boxed(LocalTask),
    Ready,
}

impl Future for EnvSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.get_mut() {
            EnvSleep::Sim(sleep) => Pin::new(sleep).poll(cx),
            EnvSleep::Boxed(sleep) => sleep.as_mut().poll(cx),
            EnvSleep::Ready => Poll::Ready(()),
        }
    }
}

/// What the world needs from the runtime it runs on (for a system with vocabulary `V`).
pub trait Env<V: Vocabulary> {
    /// Virtual ms since the start of the run.
    fn now_ms(&self) -> u64;
    /// Completes at virtual instant `at_ms`; at once, without yielding, if it has passed. The
    /// world's own waits (a latency of 0 ms, a stop delay of 0) take no step, as before.
    fn sleep_until(&self, at_ms: u64) -> EnvSleep;
    /// Lets every other ready task run before this one continues (a worker's zero-length
    /// sleep: it must not complete inside the poll that asked for it).
    fn yield_now(&self) -> EnvSleep;
    /// Runs `task` concurrently.
    fn spawn(&self, name: &str, task: LocalTask);
    /// A value in `lo..=hi`, from the run's one choice source.
    fn range(&self, lo: u64, hi: u64) -> u64;
    /// True with probability `p`, from the run's one choice source.
    fn coin(&self, p: f64) -> bool;
    /// Records an event at the current instant.
    fn emit(&self, event: Event<V>);

    /// Records an event at instant `at_ms`, which is not after now: a real run's store call
    /// blocks the thread, and what the store applied is recorded at the instant the call was
    /// applied, not when it returned. A simulated world's time does not move during an apply,
    /// so by default this is [`Env::emit`].
    fn emit_at(&self, at_ms: u64, event: Event<V>) {
        let _ = at_ms;
        self.emit(event);
    }

    /// Completes `duration_ms` after now.
    fn sleep(&self, duration_ms: u64) -> EnvSleep {
        self.sleep_until(self.now_ms().saturating_add(duration_ms))
    }

    /// An index in `0..n`, from the run's one choice source.
    fn pick(&self, n: usize) -> usize {
        assert!(n > 0, "pick from nothing");
        self.range(0, n as u64 - 1) as usize
    }

    /// Records an event of one replica.
    fn emit_for(&self, replica: ReplicaId, kind: EventKind<V>) {
        self.emit(Event::of(replica, kind));
    }

    /// Records a system note of one replica.
    fn note_for(&self, replica: ReplicaId, note: V::Note) {
        self.emit(Event::note_of(replica, note));
    }

    /// Records a system note of the world itself.
    fn note(&self, note: V::Note) {
        self.emit(Event::world_note(note));
    }
}

/// The world on the deterministic runtime.
pub struct SimEnv<V: Vocabulary> {
    handle: Handle,
    events: Rc<EventSink<Event<V>>>,
    /// Virtual time of the latest event emitted.
    last_event_ms: Cell<u64>,
}

impl<V: Vocabulary> SimEnv<V> {
    pub fn new(handle: Handle, events: Rc<EventSink<Event<V>>>) -> SimEnv<V> {
        SimEnv {
            handle,
            events,
            last_event_ms: Cell::new(0),
        }
    }

    pub fn handle(&self) -> &Handle {
        &self.handle
    }
}

impl<V: Vocabulary> Env<V> for SimEnv<V> {
    fn now_ms(&self) -> u64 {
        self.handle.now_ms()
    }

    fn sleep_until(&self, at_ms: u64) -> EnvSleep {
        if at_ms <= self.handle.now_ms() {
            return EnvSleep::Ready;
        }
        EnvSleep::Sim(self.handle.sleep_until(at_ms))
    }

    fn yield_now(&self) -> EnvSleep {
        // A zero-length runtime sleep yields once, then completes.
        EnvSleep::Sim(self.handle.sleep(0))
    }

    fn spawn(&self, name: &str, task: LocalTask) {
        // Detached: the world never joins its tasks; they end with the run.
        self.handle.spawn_detached(name, task);
    }

    fn range(&self, lo: u64, hi: u64) -> u64 {
        self.handle.range(lo, hi)
    }

    fn coin(&self, p: f64) -> bool {
        self.handle.coin(p)
    }

    fn emit(&self, event: Event<V>) {
        let now_ms = self.handle.now_ms();
        // invariant: event time never decreases along a run's stream.
        assert!(
            now_ms >= self.last_event_ms.get(),
            "an event went back in time"
        );
        self.last_event_ms.set(now_ms);
        self.events.emit(event);
    }
}
