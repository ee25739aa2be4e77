//! leasesim-check: the invariants of the contract as online checkers, and the "sometimes"
//! situations a fuzz campaign has to reach.
//!
//! Terminology:
//! - *checker*: reads the events of one run in order, one at a time, and reports an event that
//!   breaks its invariant as a [`Violation`]. Every checker keeps its own state and derives
//!   everything from the events; none trusts another.
//! - *term*: the span of one replica between `TermStarted` and `TermEnded` (one `run()`).
//! - *in flight*: a call that was sent (`Call`) and not yet answered (`Answered`).
//! - *received lease*: an `Answered` acquire or renew carrying `Lease(Some(..))`, for a call
//!   the replica sent in the same term. The term's *latest token* is the highest one received.
//! - *cutoff*: the `older_than_ms` of a term's first delete; every delete of the term must
//!   carry it.
//! - *incarnation*: a replica's worker from its start, or from `Restarted`, to the next
//!   `Restarted`; stop state belongs to one incarnation.
//! - *situation*: something interesting a run may reach (a stop during a delete, a lost
//!   reply...); [`Coverage`] records which ones a run reached, [`CoverageTally`] sums runs.
//!
//! ## Contract audit
//!
//! Every sentence of section 1 of the contract that a worker could break maps to the
//! invariant that catches it, or to the test that covers it where no run can show it: see
//! [`audit`] (the text of `crates/check/AUDIT.md`). The audit of issue 11 added ten
//! invariants to the contract's fifteen: `renew-latest`, `renewal-pause`, `acquire-first`,
//! `refused-acquire-ends`, `full-batch`, `short-batch-ends`, `delete-error-ends`,
//! `no-early-stop`, `release-last` and `term-report`.
//!
//! The checkers run on every event of every fuzz run: per-replica state lives in `Vec`s
//! indexed by replica, small collections are `Vec`s that keep their capacity, and a
//! [`Violation`] (the only thing that allocates per report) is built only when one is found.
//!
//! ```
//! use leasesim_check::{CheckConfig, CheckerSet, Invariant};
//! use leasesim_events::{Event, EventKind, ReplicaId, Request};
//! use leasesim_rt::{Flow, Stamped};
//!
//! let config =
//!     CheckConfig { batch_rows: 200, cap_rows: 1000, retention_ms: 60_000, term_bound_ms: 30_000 };
//! let mut checkers = CheckerSet::new(&config);
//! let r1 = ReplicaId(0);
//! let stop = Event::of(r1, EventKind::StopCalled);
//! let acquire = Event::of(r1, EventKind::Call { call: 1, request: Request::Acquire });
//! assert_eq!(checkers.on_event(&Stamped { seq: 0, at_ms: 100, event: stop }), Flow::Continue);
//! assert_eq!(checkers.on_event(&Stamped { seq: 1, at_ms: 150, event: acquire }), Flow::Halt);
//! let violation = checkers.violation().expect("stop-quiesces is broken");
//! assert_eq!(violation.invariant, Invariant::StopQuiesces);
//! assert_eq!(violation.sentence, "r1 sent acquire at t=150ms after its stop() was called at t=100ms");
//! ```

mod cap;
mod coverage;
mod cutoff;
mod deletion;
mod flow;
mod invariant;
mod kinds;
mod liveness;
mod release;
mod renewal;
mod set;
mod stop;
mod tokens;
mod track;
mod violation;

#[cfg(test)]
mod testkit;

/// The contract audit: each sentence of the contract's section 1, and what catches it.
#[doc = include_str!("../AUDIT.md")]
pub mod audit {}

use leasesim_events::{Event, ReplicaId};
use leasesim_rt::Stamped;

pub use coverage::{Coverage, CoverageTally, Situation, SituationSet};
pub use invariant::Invariant;
pub use set::{CheckerSet, checker_for};
pub use violation::Violation;

/// The limits the checked worker was configured with, and the bounds of the scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckConfig {
    /// The most rows one delete may ask for (the contract's default is 200).
    pub batch_rows: u32,
    /// The most rows one term may delete (the contract's default is 1,000).
    pub cap_rows: u32,
    /// How old a row must be to be deleted: `cutoff = clock read - retention`.
    pub retention_ms: u64,
    /// Once faults heal, how long a term may stay open: from its start, or from the healing
    /// for a term that was already open then.
    pub term_bound_ms: u64,
}

/// How a run's workers keep time, for `renewal-pause`: the renewal interval they were
/// configured with and each replica's clock drift. Kept apart from [`CheckConfig`] (a run
/// hands it to [`CheckerSet::with_clocks`]); without it `renewal-pause` checks only that a
/// pause was started before each renewal.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClockConfig {
    /// The pause before each renewal, on the worker's own clock.
    pub renew_every_ms: u64,
    /// Each replica's clock drift in parts per million, by replica index (missing: none).
    pub drift_ppm: Vec<i64>,
}

impl ClockConfig {
    /// Virtual ms a sleep of `local_ms` on `replica`'s clock lasts at least: the clock
    /// advances `1 + drift` times as fast as virtual time (rounded up, as the world sleeps).
    pub fn virtual_span_ms(&self, replica: ReplicaId, local_ms: u64) -> u64 {
        let drift_ppm = self.drift_ppm.get(replica.index()).copied().unwrap_or(0);
        let rate = u128::try_from(1_000_000 + drift_ppm).unwrap_or(1).max(1);
        let span_ms = (u128::from(local_ms) * 1_000_000).div_ceil(rate);
        u64::try_from(span_ms).unwrap_or(u64::MAX)
    }
}

/// One invariant's online check over the events of a run.
pub trait Checker {
    /// The invariant this checker enforces.
    fn invariant(&self) -> Invariant;

    /// Does this checker read events of this kind? A [`CheckerSet`] never feeds it the
    /// others (most checkers look only at what workers send and receive, not at the
    /// service's applies or the fault injector). The default reads everything. The answer
    /// must depend on the kind's variant only: a set asks once per variant.
    fn wants(&self, kind: &leasesim_events::EventKind) -> bool {
        let _ = kind;
        true
    }

    /// Reads the next event; returns a violation when this event breaks the invariant.
    fn on_event(&mut self, event: &Stamped<Event>) -> Option<Violation>;

    /// Called once after the last event (end of run, virtual time `end_ms`).
    fn finish(&mut self, end_ms: u64) -> Option<Violation>;
}
