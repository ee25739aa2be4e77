//! What a checker reports, and the wording helpers its sentence is built with.
//!
//! Terminology:
//! - *offending event*: the event at which the invariant was found broken (for a check made at
//!   the end of the run, the last event that concerns the culprit).
//! - *context*: up to [`MAX_CONTEXT`] earlier events that explain the verdict, oldest first.
//! - *sentence*: one plain sentence naming the replica, the values and the times (`t=4100ms`).

use std::fmt;

use leasesim_events::{Answer, EndKind, Event, Failure};
use leasesim_rt::Stamped;

use crate::Invariant;

/// The most context events a violation carries.
pub const MAX_CONTEXT: usize = 6;

/// An invariant broken by a run: where, by which event, and why in one sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The invariant that was broken.
    pub invariant: Invariant,
    /// Virtual time of the verdict: the offending event's time, or the end of the run for a
    /// check made by `finish`.
    pub at_ms: u64,
    /// The offending event.
    pub event: Stamped<Event>,
    /// The few (at most six) earlier events that explain it, oldest first.
    pub context: Vec<Stamped<Event>>,
    /// One plain sentence, e.g. "r2 sent delete_batch with token 7 at t=4100ms, but had
    /// received token 9 at t=3900ms".
    pub sentence: String,
}

impl Violation {
    /// A violation at `event`'s time. `context` may hold `None`s, duplicates, events in any
    /// order and events not earlier than `event`: only distinct earlier ones are kept, oldest
    /// first, the latest [`MAX_CONTEXT`] of them.
    pub(crate) fn new<'a>(
        invariant: Invariant,
        event: &Stamped<Event>,
        context: impl IntoIterator<Item = Option<&'a Stamped<Event>>>,
        sentence: String,
    ) -> Violation {
        let mut kept: Vec<Stamped<Event>> = context
            .into_iter()
            .flatten()
            .filter(|earlier| earlier.seq < event.seq)
            .cloned()
            .collect();
        kept.sort_by_key(|earlier| earlier.seq);
        kept.dedup_by_key(|earlier| earlier.seq);
        let surplus = kept.len().saturating_sub(MAX_CONTEXT);
        kept.drain(..surplus);
        Violation {
            invariant,
            at_ms: event.at_ms,
            event: event.clone(),
            context: kept,
            sentence,
        }
    }

    /// The same violation, dated at `at_ms` (a verdict reached at the end of the run).
    pub(crate) fn dated(mut self, at_ms: u64) -> Violation {
        self.at_ms = at_ms;
        self
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at {} (event #{}): {}",
            self.invariant,
            At(self.at_ms),
            self.event.seq,
            self.sentence
        )
    }
}

/// A virtual instant, shown as `t=4100ms`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct At(pub u64);

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t={}ms", self.0)
    }
}

/// How an answer reads in a sentence ("None", "an error (timeout)", "token 9"...).
pub(crate) fn answer_words(answer: &Answer) -> String {
    match answer {
        Answer::Lease(Some(lease)) => format!("token {}", lease.token),
        Answer::Lease(None) => "None".to_owned(),
        Answer::Released => "released".to_owned(),
        Answer::Rows(rows) => format!("{rows} rows"),
        Answer::Failed(failure) => format!("an error ({})", failure_words(*failure)),
    }
}

fn failure_words(failure: Failure) -> &'static str {
    match failure {
        Failure::Rejected => "rejected",
        Failure::Timeout => "timeout",
        Failure::StaleToken => "stale token",
    }
}

/// How a term's end reads in a sentence.
pub(crate) fn end_words(end: EndKind) -> &'static str {
    match end {
        EndKind::StoppedBeforeStart => "stopped before start",
        EndKind::NotLeader => "not leader",
        EndKind::CapReached => "cap reached",
        EndKind::Drained => "drained",
        EndKind::LostByNone => "lost by None",
        EndKind::LostByError => "lost by error",
        EndKind::Stopped => "stopped",
        EndKind::FailedAcquire => "acquire failed",
        EndKind::FailedDelete => "delete failed",
        EndKind::AlreadyRunning => "already running",
    }
}
