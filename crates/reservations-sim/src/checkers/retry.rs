//! The retry policy, worker side: `conflict-not-retried`, `bounded-retry`,
//! `transient-retried`, `dead-letter-record`.
//!
//! Terminology:
//! - *attempt*: a transition call (guarded or not) for a held reservation; attempts are
//!   counted per claim (a new claim of the same reservation starts again at zero).
//! - *class* of an answer: a state conflict (already done, not eligible), transient (refused
//!   by the network: a connection error; no answer or a store timeout: a timeout), or invalid.
//! - *give-up*: the policy's end of trying: an invalid answer, or a transient one on the last
//!   attempt of the budget. A give-up is recorded as a dead letter before the release.
//! - *backoff n*: after the n-th failed attempt, `min(cap, initial * 2^n)` plus a jitter of at
//!   most half of that, on the worker's clock (the pause the trace shows as a timer).

use leasesim_events::mask;
use leasesim_invariants::{At, Checker, Violation};
use reservations_worker::RetryPolicy;

use super::Facts;
use super::track::{Claimed, Desk, Stamp, is_conflict, is_transient};
use super::{CheckConfig, Invariant, WORKER_EVENTS};
use crate::Reservations;
use crate::events::{Answer, ClassView, EventKind, Failure, OutcomeView, ReasonView, Request};
use leasesim_timeline::Render;

type Found = Option<Violation<Reservations>>;

/// The transition a call attempts, if it is one.
fn attempted(event: &Stamp) -> Option<u32> {
    match event.event.kind {
        EventKind::Call { request, .. } if request.is_expire() => request.id(),
        _ => None,
    }
}

/// The reservation a call releases, if it is a release.
fn released(event: &Stamp) -> Option<u32> {
    match event.event.kind {
        EventKind::Call {
            request: Request::Release { id, .. } | Request::ReleaseAny { id },
            ..
        } => Some(id),
        _ => None,
    }
}

/// The class of a transition's answer (`None`: it expired the reservation).
pub fn class_of(answer: &Answer) -> Option<ClassView> {
    match answer {
        Answer::Expire(OutcomeView::Expired) => None,
        Answer::Failed(Failure::Rejected) => Some(ClassView::Connection),
        Answer::Failed(Failure::Timeout | Failure::StoreTimeout) => Some(ClassView::Timeout),
        Answer::Failed(Failure::Invalid) => Some(ClassView::Invalid),
        _ => Some(ClassView::StateConflict),
    }
}

/// Does the policy give up after this answer on attempt `attempts`?
fn gives_up(answer: &Answer, attempts: u32, policy: &RetryPolicy) -> bool {
    match answer {
        Answer::Failed(Failure::Invalid) => true,
        answer => is_transient(answer) && attempts >= policy.max_attempts,
    }
}

/// Runs `judge` on the event's replica's desk as it was before the event (the run's facts
/// feed the desk after every checker has judged).
fn on_desk(facts: &Facts, event: &Stamp, judge: impl FnOnce(&Desk) -> Found) -> Found {
    judge(facts.desk(event.event.replica?))
}

fn violation(
    invariant: Invariant,
    event: &Stamp,
    held: &Claimed,
    sentence: String,
) -> Violation<Reservations> {
    let answer = held.last_answer.as_ref().map(|(_, e)| e);
    let pause = held.pause.as_ref().map(|(_, e)| e);
    let context = [Some(&held.answered), answer, pause];
    Violation::new(invariant, event, context, sentence)
}

fn who(event: &Stamp) -> String {
    event
        .event
        .replica
        .map_or_else(|| "a worker".to_string(), |replica| replica.to_string())
}

/// `conflict-not-retried`: no attempt after a state conflict under the same claim.
#[derive(Debug, Default)]
pub struct ConflictNotRetried {}

impl Checker<Reservations> for ConflictNotRetried {
    fn invariant(&self) -> Invariant {
        Invariant::ConflictNotRetried
    }

    /// Calls only (a call is judged; the facts follow the rest of the worker side).
    fn wants(&self, kind: &EventKind) -> bool {
        kind.bit() & mask::CALL != 0
    }

    fn on_event(&mut self, event: &Stamp, facts: &Facts) -> Found {
        on_desk(facts, event, |desk| {
            let held = desk.claimed(attempted(event)?)?;
            let (answer, answered) = held.last_answer.as_ref()?;
            is_conflict(answer).then(|| {
                let sentence = format!(
                    "{} attempted h{} again at {}, but its attempt had answered {} at {}: a state \
                     conflict is never retried",
                    who(event),
                    held.id,
                    At(event.at_ms),
                    Reservations::answer_text(answer),
                    At(answered.at_ms)
                );
                violation(Invariant::ConflictNotRetried, event, held, sentence)
            })
        })
    }
}

/// The pause backoff `done` allows: from its base, `min(cap, initial * 2^done)`, to the base
/// plus half of it. Worked out here from the policy's numbers, not asked of the core, so a
/// core that computes its backoff wrongly is judged, not copied.
fn backoff_range_ms(policy: &RetryPolicy, done: u32) -> (u64, u64) {
    let factor = 1u64.checked_shl(done).unwrap_or(u64::MAX);
    let base_ms = policy
        .initial_backoff_ms
        .saturating_mul(factor)
        .min(policy.max_backoff_ms);
    (base_ms, base_ms + base_ms / 2)
}

/// `bounded-retry`: another attempt only after a transient error, within the budget, after
/// the policy's backoff.
#[derive(Debug)]
pub struct BoundedRetry {
    policy: RetryPolicy,
}

impl BoundedRetry {
    pub fn new(config: &CheckConfig) -> BoundedRetry {
        BoundedRetry {
            policy: config.retry.clone(),
        }
    }

    /// Why attempt `held.attempts + 1` breaks the policy, if it does.
    fn why(policy: &RetryPolicy, held: &Claimed) -> Option<String> {
        let done = held.attempts;
        if done == 0 {
            return None;
        }
        let Some((answer, _)) = &held.last_answer else {
            return Some(format!("attempt {done} was still unanswered"));
        };
        if !is_transient(answer) {
            return Some(format!(
                "attempt {done} had answered {}",
                Reservations::answer_text(answer)
            ));
        }
        if done >= policy.max_attempts {
            return Some(format!(
                "the budget is {} attempts and {done} were made",
                policy.max_attempts
            ));
        }
        let (low, high) = backoff_range_ms(policy, done);
        match &held.pause {
            Some((pause_ms, _)) if (low..=high).contains(pause_ms) => None,
            Some((pause_ms, _)) => Some(format!(
                "it paused {pause_ms}ms after attempt {done}, and the backoff is {low}..{high}ms"
            )),
            None => Some(format!(
                "it did not pause after attempt {done} (the backoff is {low}..{high}ms)"
            )),
        }
    }
}

impl Checker<Reservations> for BoundedRetry {
    fn invariant(&self) -> Invariant {
        Invariant::BoundedRetry
    }

    /// Calls only (a call is judged; the facts follow the rest of the worker side).
    fn wants(&self, kind: &EventKind) -> bool {
        kind.bit() & mask::CALL != 0
    }

    fn on_event(&mut self, event: &Stamp, facts: &Facts) -> Found {
        let policy = &self.policy;
        on_desk(facts, event, |desk| {
            let held = desk.claimed(attempted(event)?)?;
            let why = Self::why(policy, held)?;
            let sentence = format!(
                "{} sent attempt {} of h{} at {}, but {why}",
                who(event),
                held.attempts + 1,
                held.id,
                At(event.at_ms)
            );
            Some(violation(Invariant::BoundedRetry, event, held, sentence))
        })
    }
}

/// `transient-retried`: a reservation is not released after a transient error with attempts
/// left, unless a stop came.
#[derive(Debug)]
pub struct TransientRetried {
    max_attempts: u32,
}

impl TransientRetried {
    pub fn new(config: &CheckConfig) -> TransientRetried {
        TransientRetried {
            max_attempts: config.retry.max_attempts,
        }
    }
}

impl Checker<Reservations> for TransientRetried {
    fn invariant(&self) -> Invariant {
        Invariant::TransientRetried
    }

    /// Calls only (a call is judged; the facts follow the rest of the worker side).
    fn wants(&self, kind: &EventKind) -> bool {
        kind.bit() & mask::CALL != 0
    }

    fn on_event(&mut self, event: &Stamp, facts: &Facts) -> Found {
        let max = self.max_attempts;
        on_desk(facts, event, |desk| {
            let held = desk.claimed(released(event)?)?;
            let (answer, _) = held.last_answer.as_ref()?;
            if !is_transient(answer) || held.attempts >= max || desk.stop.is_some() {
                return None;
            }
            let sentence = format!(
                "{} released h{} at {} after attempt {} answered {}, with {} of {max} attempts \
                 left and no stop: the transient error was dropped",
                who(event),
                held.id,
                At(event.at_ms),
                held.attempts,
                Reservations::answer_text(answer),
                max - held.attempts
            );
            Some(violation(
                Invariant::TransientRetried,
                event,
                held,
                sentence,
            ))
        })
    }
}

/// `dead-letter-record`: every give-up gets a dead letter, and the letter tells the truth.
#[derive(Debug)]
pub struct DeadLetterRecord {
    policy: RetryPolicy,
}

impl DeadLetterRecord {
    pub fn new(config: &CheckConfig) -> DeadLetterRecord {
        DeadLetterRecord {
            policy: config.retry.clone(),
        }
    }

    /// What is wrong with a letter for `held`, if anything.
    fn wrong(held: &Claimed, letter: &crate::events::LetterView) -> Option<String> {
        let Some((answer, _)) = &held.last_answer else {
            return Some("no attempt of it had answered".into());
        };
        let Some(class) = class_of(answer) else {
            return Some("its last attempt had expired it".into());
        };
        let reason = match is_transient(answer) {
            true => ReasonView::BudgetExhausted,
            false => ReasonView::NotRetryable(class),
        };
        let checks = [
            (
                letter.reason == reason,
                format!("its reason is {:?}, not {reason:?}", letter.reason),
            ),
            (
                letter.attempts == held.attempts,
                format!(
                    "it counts {} attempts, not {}",
                    letter.attempts, held.attempts
                ),
            ),
            (
                letter.last_error == class,
                format!(
                    "its last error is {}, not {}",
                    letter.last_error.name(),
                    class.name()
                ),
            ),
            (
                held.first_seen_ms == Some(letter.first_seen_ms),
                format!(
                    "its first-seen time {}ms is not the clock reading after the claim ({:?})",
                    letter.first_seen_ms, held.first_seen_ms
                ),
            ),
            (
                letter.replay_id == Some(held.id),
                format!("its replay command names {:?}", letter.replay_id),
            ),
        ];
        checks.into_iter().find(|(ok, _)| !ok).map(|(_, why)| why)
    }

    fn judge(&self, desk: &Desk, event: &Stamp) -> Found {
        if let EventKind::Call {
            request: Request::DeadLetter { letter },
            ..
        } = event.event.kind
        {
            let Some(held) = desk.claimed(letter.id) else {
                let sentence = format!(
                    "{} recorded a dead letter for h{} at {}, but held no claim on it",
                    who(event),
                    letter.id,
                    At(event.at_ms)
                );
                return Some(Violation::new(
                    Invariant::DeadLetterRecord,
                    event,
                    desk.recent.iter(),
                    sentence,
                ));
            };
            let why = Self::wrong(held, &letter)?;
            let sentence = format!(
                "{}'s dead letter for h{} at {} is wrong: {why}",
                who(event),
                held.id,
                At(event.at_ms)
            );
            return Some(violation(
                Invariant::DeadLetterRecord,
                event,
                held,
                sentence,
            ));
        }
        let held = desk.claimed(released(event)?)?;
        let (answer, _) = held.last_answer.as_ref()?;
        if !gives_up(answer, held.attempts, &self.policy) || held.letter.is_some() {
            return None;
        }
        let sentence = format!(
            "{} released h{} at {} after giving up on it (attempt {} answered {}) without \
             recording a dead letter",
            who(event),
            held.id,
            At(event.at_ms),
            held.attempts,
            Reservations::answer_text(answer)
        );
        Some(violation(
            Invariant::DeadLetterRecord,
            event,
            held,
            sentence,
        ))
    }
}

impl Checker<Reservations> for DeadLetterRecord {
    fn invariant(&self) -> Invariant {
        Invariant::DeadLetterRecord
    }

    fn wants(&self, kind: &EventKind) -> bool {
        kind.bit() & WORKER_EVENTS != 0
    }

    fn on_event(&mut self, event: &Stamp, facts: &Facts) -> Found {
        let replica = event.event.replica?;
        self.judge(facts.desk(replica), event)
    }
}
