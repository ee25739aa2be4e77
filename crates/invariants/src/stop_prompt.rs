//! `stop-prompt`, for any system: a stopping worker waits on no timer.
//!
//! Terminology:
//! - *stopping*: from a replica's `StopCalled` to its `StopResolved` (one incarnation; a
//!   `Restarted` begins a fresh one).
//! - *cue*: something a stopping worker may legitimately wait for: the `stop()` call itself,
//!   an answer to a call in flight, or the end of a process pause. A stopping worker sends its
//!   calls (its release) and resolves its `stop()` at the instant of its latest cue: it waits
//!   for no timer (not a renewal interval, not a job's next step, not a backoff).
//!
//! - *retried op*: an operation a system's worker keeps retrying, with a backoff, while it
//!   stops (say, the give-back of its claim). A send of a retried op right after an answer of
//!   the same op (no call between, the stop before or during its backoff) is not judged here:
//!   its backoff is a timer by design, and the system's own retry invariant judges its length
//!   ([`StopPrompt::retrying`]).
//!
//! The checker judges instants on the virtual clock, which every event carries; it reads no
//! worker's clock. A system adds it to its checkers with its own invariant value
//! ([`StopPrompt::new`]).

use leasesim_events::{Event, EventKind, OpSet, Stamped, Vocabulary, mask};

use crate::track::PerReplica;
use crate::{At, Checker, Judged, Violation};

/// A stop call and the latest cue after it.
type StopAndCue<V> = (Stamped<Event<V>>, Stamped<Event<V>>);

/// One replica's incarnation.
#[derive(Debug)]
struct Stopping<V: Vocabulary> {
    /// The incarnation's `StopCalled`, until its `StopResolved`.
    stop: Option<Stamped<Event<V>>>,
    /// The latest cue since then.
    cue: Option<Stamped<Event<V>>>,
    /// The op of the latest answer, while no call followed it (stopping or not).
    answered: Option<V::Op>,
}

impl<V: Vocabulary> Default for Stopping<V> {
    fn default() -> Self {
        Stopping {
            stop: None,
            cue: None,
            answered: None,
        }
    }
}

/// `stop-prompt`: a stopping worker sends its calls and resolves `stop()` at the instant of its
/// latest cue (see the module docs).
#[derive(Debug)]
pub struct StopPrompt<V: Judged> {
    invariant: V::Invariant,
    /// The retried ops (see the module docs).
    retried: &'static [V::Op],
    replicas: PerReplica<Stopping<V>>,
}

impl<V: Judged> StopPrompt<V> {
    /// The checker, reporting as the system's `invariant`.
    pub fn new(invariant: V::Invariant) -> StopPrompt<V> {
        StopPrompt {
            invariant,
            retried: &[],
            replicas: PerReplica::default(),
        }
    }

    /// The same checker, leaving alone the resends of `ops` after their own answers (see the
    /// module docs).
    pub fn retrying(self, ops: &'static [V::Op]) -> StopPrompt<V> {
        StopPrompt {
            retried: ops,
            ..self
        }
    }
}

/// `event` resends one of the `retried` ops right after an answer of the same op.
fn retry_of<V: Vocabulary>(
    retried: &[V::Op],
    event: &Stamped<Event<V>>,
    answered: Option<V::Op>,
) -> bool {
    match (&event.event.kind, answered) {
        (EventKind::Call { request, .. }, Some(op)) => {
            V::op(request) == op && retried.contains(&op)
        }
        _ => false,
    }
}

/// How a cue reads in a sentence.
fn cue_words<V: Vocabulary>(cue: &Stamped<Event<V>>) -> String {
    let what = match cue.event.kind {
        EventKind::StopCalled => "its stop() was called".to_owned(),
        EventKind::Answered { call, op, .. } => format!("its {} call {call} answered", op.name()),
        EventKind::Resumed => "its process resumed from a pause".to_owned(),
        _ => "its last cue".to_owned(),
    };
    format!("{what} at {}", At(cue.at_ms))
}

impl<V: Judged> StopPrompt<V> {
    /// Follows stops and cues; the stopping incarnation's `(stop, cue)` when `event` is a
    /// send or a resolution to judge.
    fn follow(&mut self, event: &Stamped<Event<V>>) -> Option<StopAndCue<V>> {
        let replica = event.event.replica?;
        let retried = self.retried;
        let stopping = self.replicas.at(replica);
        match event.event.kind {
            EventKind::StopCalled => {
                if stopping.stop.is_none() {
                    stopping.stop = Some(event.clone());
                    stopping.cue = Some(event.clone());
                }
                return None;
            }
            EventKind::Restarted => {
                *stopping = Stopping::default();
                return None;
            }
            EventKind::Answered { op, .. } => {
                stopping.answered = Some(op);
                if stopping.stop.is_some() {
                    stopping.cue = Some(event.clone());
                }
                return None;
            }
            EventKind::Resumed => {
                if stopping.stop.is_some() {
                    stopping.cue = Some(event.clone());
                }
                return None;
            }
            EventKind::Call { .. } | EventKind::StopResolved => {}
            _ => return None,
        }
        let answered = match event.event.kind {
            EventKind::Call { .. } => stopping.answered.take(),
            _ => stopping.answered,
        };
        // Only a stopping incarnation's sends and resolution are judged.
        stopping.stop.as_ref()?;
        let cue = stopping.cue.as_ref()?;
        let prompt = event.at_ms <= cue.at_ms || retry_of(retried, event, answered);
        match event.event.kind {
            EventKind::StopResolved => {
                let judged = (stopping.stop.take()?, stopping.cue.take()?);
                // invariant: a resolved stop ends the incarnation's stopping.
                debug_assert!(stopping.stop.is_none() && stopping.cue.is_none());
                (!prompt).then_some(judged)
            }
            _ if prompt => None,
            _ => Some((stopping.stop.clone()?, stopping.cue.clone()?)),
        }
    }
}

impl<V: Judged> Checker<V> for StopPrompt<V> {
    fn invariant(&self) -> V::Invariant {
        self.invariant
    }

    fn wants(&self, kind: &EventKind<V>) -> bool {
        let wanted = mask::CALL
            | mask::ANSWERED
            | mask::STOP_CALLED
            | mask::STOP_RESOLVED
            | mask::RESTARTED
            | mask::RESUMED;
        kind.bit() & wanted != 0
    }

    fn on_event(&mut self, event: &Stamped<Event<V>>, _facts: &V::Facts) -> Option<Violation<V>> {
        let (stop, cue) = self.follow(event)?;
        let replica = event.event.replica?;
        let acted = match event.event.kind {
            EventKind::Call { request, .. } => format!(
                "{replica} sent {} at {}",
                V::op(&request).name(),
                At(event.at_ms)
            ),
            _ => format!("{replica}'s stop() resolved at {}", At(event.at_ms)),
        };
        let sentence = format!(
            "{acted} while stopping, {}ms after {}, the latest answer, pause end or stop call \
             it could have waited for: a stopping worker waits on no timer",
            event.at_ms - cue.at_ms,
            cue_words(&cue)
        );
        let context = [Some(&stop), (cue.seq != stop.seq).then_some(&cue)];
        Some(Violation::new(self.invariant, event, context, sentence))
    }
}
