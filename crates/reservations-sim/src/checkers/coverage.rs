//! "Sometimes" properties: situations a fuzz campaign must reach at least once.
//!
//! Terminology:
//! - *situation*: an interesting moment a run may or may not reach (two workers claiming one
//!   reservation across a claim expiry, a consume racing the transition...). Reaching one
//!   proves nothing wrong; never reaching one in a whole campaign means it was not tested.
//! - *coverage*: the situations one run reached, read off its events with a ledger and desks
//!   of its own (see [`super::track`]).

use super::track::{Desks, Ledger, Stamp, is_transient, store_ms};
use crate::Reservations;
use crate::events::{Answer, Applied, EndView, EventKind, Note, OutcomeView, ReasonView, Request};

leasesim_invariants::situations! {
    /// A worker claimed a reservation whose claim by another worker had expired unreleased.
    ReclaimedAfterExpiry = "reclaimed-after-expiry",
        "two workers claimed one due reservation across a claim expiry";
    /// A consume landed on a reservation past its deadline while a worker's claim on it was
    /// live.
    ConsumeRacesExpiry = "consume-races-expiry",
        "an agent's consume landed past the deadline while a worker's claim was live";
    /// A process died after a transition answered expired, before its release.
    KilledAfterUpdate = "killed-after-update",
        "a worker died after the transition answered expired, before its release";
    /// A transition answered expired on a retry after a transient error.
    RetryThenSuccess = "retry-then-success",
        "a transient error was retried and the retry expired the reservation";
    /// The store recorded a dead letter.
    DeadLetter = "dead-letter",
        "the store recorded a dead letter";
    /// A dead letter for an exhausted retry budget was sent.
    BudgetExhausted = "budget-exhausted",
        "a worker gave up after transient errors on every attempt of its budget";
    /// A guarded transition found the reservation already expired.
    DuplicateAttempt = "duplicate-attempt",
        "a guarded transition found the reservation already expired";
    /// A release freed nothing (the claim had expired and moved on, or was gone).
    ReleaseFreedNothing = "release-freed-nothing",
        "a release freed nothing: the claim had expired and moved on";
    /// A request was applied but its reply was lost.
    ReplyLostAfterApply = "reply-lost-after-apply",
        "a request was applied but its reply was lost";
    /// `stop()` was called while a transition of the replica was in flight.
    StopDuringExpire = "stop-during-expire",
        "stop() was called while a transition was in flight";
    /// A supervisor's second `run()` was refused while the first was active.
    SecondRunRefused = "second-run-refused",
        "a second run() while one was active was refused at once";
}

/// The situations one run reached; fed every event of the run.
#[derive(Debug, Default)]
pub struct Coverage {
    reached: SituationSet,
    ledger: Ledger,
    desks: Desks,
}

impl Coverage {
    pub fn new() -> Coverage {
        Coverage::default()
    }

    pub fn reached(&self) -> SituationSet {
        self.reached
    }

    /// Reads one event of the run.
    pub fn on_event(&mut self, event: &Stamp) {
        if let Some(situation) = self.situation(event) {
            self.reached.insert(situation);
        }
        self.ledger.observe(event);
        if let Some(replica) = event.event.replica {
            self.desks.at(replica).observe(event);
        }
    }

    fn situation(&mut self, event: &Stamp) -> Option<Situation> {
        let situation = match event.event.kind {
            EventKind::Applied { applied, .. } => return self.applied(event, applied),
            EventKind::Note(Note::Consumed { id, .. } | Note::ConsumeRefused { id, .. }) => {
                let hold = self.ledger.get(id)?;
                let racing = hold.hold_until_ms <= store_ms(event)
                    && hold.live_claim(store_ms(event)).is_some();
                racing.then_some(Situation::ConsumeRacesExpiry)?
            }
            EventKind::Note(Note::Killed) => Situation::KilledAfterUpdate,
            EventKind::Note(Note::SecondRun {
                end: EndView::AlreadyRunning,
                ..
            }) => Situation::SecondRunRefused,
            EventKind::ReplyLost { .. } => Situation::ReplyLostAfterApply,
            EventKind::Call {
                request: Request::DeadLetter { letter },
                ..
            } => (letter.reason == ReasonView::BudgetExhausted)
                .then_some(Situation::BudgetExhausted)?,
            EventKind::StopCalled => {
                let desk = self.desks.get(event.event.replica?)?;
                let expiring = desk.calls.iter().any(|(_, request, _)| request.is_expire());
                expiring.then_some(Situation::StopDuringExpire)?
            }
            EventKind::Answered {
                call,
                answer: Answer::Expire(OutcomeView::Expired),
                ..
            } => {
                let desk = self.desks.get(event.event.replica?)?;
                let (_, request, _) = desk.request(call)?;
                let held = desk.claimed(request.id()?)?;
                let retried = held.attempts > 1
                    && held
                        .last_answer
                        .as_ref()
                        .is_some_and(|(a, _)| is_transient(a));
                retried.then_some(Situation::RetryThenSuccess)?
            }
            _ => return None,
        };
        Some(situation)
    }

    fn applied(&self, event: &Stamp, applied: Applied) -> Option<Situation> {
        let situation = match applied {
            Applied::Parked { .. } => Situation::DeadLetter,
            Applied::AlreadyDone { .. } => Situation::DuplicateAttempt,
            Applied::Released { freed: false, .. } => Situation::ReleaseFreedNothing,
            Applied::Claimed { ids, .. } => {
                let replica = event.event.replica?;
                let now_ms = store_ms(event);
                let taken = ids.as_slice().iter().any(|&id| {
                    self.ledger
                        .get(id)
                        .and_then(|hold| hold.claim.as_ref())
                        .is_some_and(|claim| claim.replica != replica && claim.until_ms <= now_ms)
                });
                taken.then_some(Situation::ReclaimedAfterExpiry)?
            }
            _ => return None,
        };
        Some(situation)
    }
}

impl leasesim_invariants::Coverage<Reservations> for Coverage {
    fn on_event(&mut self, event: &Stamp) {
        Coverage::on_event(self, event);
    }

    fn reached(&self) -> SituationSet {
        self.reached
    }
}
