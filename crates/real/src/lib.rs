//! leasesim-real: judging a run of the production worker against a real store.
//!
//! A simulation proves invariants against models; a real run checks the same invariants on
//! the workers' production cores running on tokio, several replicas against a real database,
//! in real time scaled down (leases of a few hundred milliseconds), with injected process
//! pauses and stops. It records the event stream a simulation emits (calls, what the store
//! applied, answers, clock reads, timers, pauses, stops, terms) and feeds it to the same
//! checkers, which read events only and know nothing of the executor.
//!
//! Terminology:
//! - *run clock*: real time since the run started, in whole milliseconds. It stamps every
//!   event (`at_ms`, as virtual time does in a simulation) and, on the scale of
//!   [`leasesim_events::EPOCH_MS`], is every replica's clock and the store's time.
//! - *apply instant*: the store applies a call inside one transaction; the adapter reads the
//!   run clock for the store's `now` just before it, and the `Applied` event is stamped when
//!   the transaction's answer reaches the run (the facts in it, such as the token that was
//!   current, come from inside the transaction, so they are exact even where the stamp is
//!   late by the commit's latency).
//! - *gate*: a paused replica's process does not run: its requests wait to leave, its answers
//!   and timers wait to be read, its `stop()` waits to be called ([`Gate`]).
//! - *latency*: a drawn delay before a request reaches the store and before its answer reaches
//!   the worker, so calls overlap as they do over a network.
//! - *fault draws*: pauses, stops, latencies and schedule jitter come from one seeded stream
//!   ([`Draws`]); the timing of a real run is not reproducible, its fault plan is.
//!
//! One module per system: [`retention`], [`reservations`], `holder_lock` (feature `redis`);
//! [`record`] holds what they share (the recorder and the serial line of store calls).

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};
use std::cell::{Cell, RefCell};

#[cfg(feature = "redis")]
pub mod holder_lock;
pub mod record;
pub mod reservations;
pub mod retention;
mod run_clock;

pub use run_clock::RunClock;

/// One process's pause state: while paused, nothing of the process runs.
#[derive(Debug, Default)]
pub struct Gate {
    paused_until_ms: Cell<u64>,
}

impl Gate {
    /// Pauses the process until `until_ms` (run clock).
    pub fn pause_until(&self, until_ms: u64) {
        self.paused_until_ms
            .set(self.paused_until_ms.get().max(until_ms));
    }

    /// Is the process paused at `now_ms`?
    pub fn paused(&self, now_ms: u64) -> bool {
        now_ms < self.paused_until_ms.get()
    }

    /// Waits until the process runs.
    pub async fn pass(&self, clock: &RunClock) {
        while self.paused(clock.elapsed_ms()) {
            clock.sleep_until(self.paused_until_ms.get()).await;
        }
        // invariant: the process runs when the gate lets it through.
        debug_assert!(!self.paused(clock.elapsed_ms()));
    }
}

/// The run's fault plan: one seeded stream of draws.
#[derive(Debug)]
pub struct Draws {
    rng: RefCell<ChaCha8Rng>,
}

impl Draws {
    pub fn seeded(seed: u64) -> Draws {
        Draws {
            rng: RefCell::new(ChaCha8Rng::seed_from_u64(seed)),
        }
    }

    /// A whole number in `min..=max` (`min` when the range is empty).
    pub fn range(&self, min: u64, max: u64) -> u64 {
        if max <= min {
            return min;
        }
        let span = max - min + 1;
        min + self.rng.borrow_mut().next_u64() % span
    }

    /// True with probability `p`.
    pub fn coin(&self, p: f64) -> bool {
        let draw = self.rng.borrow_mut().next_u64() >> 11;
        (draw as f64) < p * (1u64 << 53) as f64
    }
}

/// A range of milliseconds, inclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpanMs {
    pub min: u64,
    pub max: u64,
}

impl SpanMs {
    pub const fn new(min: u64, max: u64) -> SpanMs {
        SpanMs { min, max }
    }

    pub fn draw(self, draws: &Draws) -> u64 {
        draws.range(self.min, self.max)
    }
}
