//! What a checker reports, and the wording helpers its sentence is built with.
//!
//! Terminology:
//! - *offending event*: the event at which the invariant was found broken (for a check made at
//!   the end of the run, the last event that concerns the culprit).
//! - *context*: up to [`MAX_CONTEXT`] earlier events that explain the verdict, oldest first.
//! - *sentence*: one plain sentence naming the replica, the values and the times (`t=4100ms`).

use std::fmt;

use leasesim_events::{Event, Stamped};

use crate::Judged;

/// The most context events a violation carries.
pub const MAX_CONTEXT: usize = 6;

/// An invariant broken by a run: where, by which event, and why in one sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation<V: Judged> {
    /// The invariant that was broken.
    pub invariant: V::Invariant,
    /// Virtual time of the verdict: the offending event's time, or the end of the run for a
    /// check made by `finish`.
    pub at_ms: u64,
    /// The offending event.
    pub event: Stamped<Event<V>>,
    /// The few (at most six) earlier events that explain it, oldest first.
    pub context: Vec<Stamped<Event<V>>>,
    /// One plain sentence, e.g. "r2 sent delete_batch with token 7 at t=4100ms, but had
    /// received token 9 at t=3900ms".
    pub sentence: String,
}

impl<V: Judged> Violation<V> {
    /// A violation at `event`'s time. `context` may hold `None`s, duplicates, events in any
    /// order and events not earlier than `event`: only distinct earlier ones are kept, oldest
    /// first, the latest [`MAX_CONTEXT`] of them.
    pub fn new<'a>(
        invariant: V::Invariant,
        event: &Stamped<Event<V>>,
        context: impl IntoIterator<Item = Option<&'a Stamped<Event<V>>>>,
        sentence: String,
    ) -> Violation<V> {
        let mut kept: Vec<Stamped<Event<V>>> = context
            .into_iter()
            .flatten()
            .filter(|earlier| earlier.seq < event.seq)
            .cloned()
            .collect();
        kept.sort_by_key(|earlier| earlier.seq);
        kept.dedup_by_key(|earlier| earlier.seq);
        let surplus = kept.len().saturating_sub(MAX_CONTEXT);
        kept.drain(..surplus);
        // invariant: the context is earlier events only, distinct, oldest first.
        debug_assert!(kept.windows(2).all(|pair| pair[0].seq < pair[1].seq));
        Violation {
            invariant,
            at_ms: event.at_ms,
            event: event.clone(),
            context: kept,
            sentence,
        }
    }

    /// The same violation, dated at `at_ms` (a verdict reached at the end of the run).
    pub fn dated(mut self, at_ms: u64) -> Violation<V> {
        self.at_ms = at_ms;
        self
    }
}

impl<V: Judged> fmt::Display for Violation<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at {} (event #{}): {}",
            crate::InvariantName::name(self.invariant),
            At(self.at_ms),
            self.event.seq,
            self.sentence
        )
    }
}

/// A virtual instant, shown as `t=4100ms`.
#[derive(Clone, Copy, Debug)]
pub struct At(pub u64);

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t={}ms", self.0)
    }
}
