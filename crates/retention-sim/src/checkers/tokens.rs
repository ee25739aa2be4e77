//! Fencing tokens on deletes: `stale-token-delete`, `latest-token`, `no-delete-after-loss`.
//!
//! Terminology:
//! - *stale delete*: a delete the store applied although its token was not the current,
//!   unexpired one at that instant (`Applied::Deleted { token_current: false }`); only
//!   possible when the store's own fencing is off.
//! - *latest token*: the highest token the replica received in its open term.
//! - *loss*: a renewal of the term that answered `None` or an error.

use crate::Retention;
use crate::events::Stamped;
use crate::events::{Applied, Event, EventKind, OpKind, ReplicaId, Request};

use leasesim_events::mask;

use super::kinds;
use super::track::{CallBook, replica_of};
use super::words::{At, answer_words};
use super::{Checker, Facts, Invariant, Violation};

/// `stale-token-delete`: no delete is applied with a token that was not current.
#[derive(Debug, Default)]
pub struct StaleTokenDelete {
    /// Delete calls the store has not acted on yet, with their `Call` event.
    deletes: CallBook<Stamped<Event>>,
}

impl StaleTokenDelete {
    pub fn new() -> StaleTokenDelete {
        StaleTokenDelete::default()
    }

    fn stale(
        &self,
        event: &Stamped<Event>,
        sent: Option<(ReplicaId, Stamped<Event>)>,
        current_token: Option<u64>,
    ) -> Violation {
        let current = match current_token {
            Some(token) => format!("the current token was {token}"),
            None => "no lease was current".to_owned(),
        };
        let sentence = match &sent {
            Some((replica, call)) => {
                let token = match call.event.kind {
                    EventKind::Call {
                        request: Request::Delete { token, .. },
                        ..
                    } => token,
                    _ => 0,
                };
                format!(
                    "{replica}'s delete_batch with token {token} (sent at {}) was applied at {}, \
                     when {current}",
                    At(call.at_ms),
                    At(event.at_ms)
                )
            }
            None => format!(
                "a delete_batch with a stale token was applied at {}, when {current}",
                At(event.at_ms)
            ),
        };
        let call = sent.as_ref().map(|(_, call)| call);
        Violation::new(Invariant::StaleTokenDelete, event, [call], sentence)
    }
}

impl Checker<Retention> for StaleTokenDelete {
    fn wants(&self, kind: &EventKind) -> bool {
        kinds::worker_side(kind) || kinds::service_side(kind)
    }

    fn invariant(&self) -> Invariant {
        Invariant::StaleTokenDelete
    }

    #[inline(always)]
    fn on_event(&mut self, event: &Stamped<Event>, _facts: &Facts) -> Option<Violation> {
        let replica = replica_of(event);
        match event.event.kind {
            EventKind::Call {
                call,
                request: Request::Delete { .. },
            } => {
                self.deletes.insert(call, replica?, event.clone());
            }
            EventKind::Rejected {
                call,
                op: OpKind::Delete,
            }
            | EventKind::RequestLost {
                call,
                op: OpKind::Delete,
            }
            | EventKind::Applied {
                call,
                applied: Applied::DeleteRefused { .. },
            } => {
                self.deletes.take(call, replica);
            }
            EventKind::Applied {
                call,
                applied:
                    Applied::Deleted {
                        token_current,
                        current_token,
                        ..
                    },
            } => {
                let sent = self.deletes.take(call, replica);
                if !token_current {
                    return Some(self.stale(event, sent, current_token));
                }
            }
            _ => {}
        }
        None
    }
}

/// `latest-token`: every delete carries the highest token received in the term.
#[derive(Debug, Default)]
pub struct LatestToken;

impl LatestToken {
    pub fn new() -> LatestToken {
        LatestToken
    }
}

impl Checker<Retention> for LatestToken {
    fn wants(&self, kind: &EventKind) -> bool {
        // The term flow comes from the run's facts: only the kinds judged here.
        kinds::any_of(kind, mask::CALL)
    }

    fn invariant(&self) -> Invariant {
        Invariant::LatestToken
    }

    #[inline(always)]
    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = replica_of(event)?;
        // Judged on the replica's term including this event (the run's after view).
        let ledger = &facts.after(replica).ledger;
        let EventKind::Call {
            request: Request::Delete { token, .. },
            ..
        } = event.event.kind
        else {
            return None;
        };
        if ledger.open && ledger.latest_token() == Some(token) {
            return None;
        }
        let sent = format!(
            "{replica} sent delete_batch with token {token} at {}",
            At(event.at_ms)
        );
        let sentence = if !ledger.open {
            format!("{sent}, outside any term")
        } else {
            match ledger.latest_token() {
                Some(latest) => {
                    let received = ledger.latest_answer().map_or(0, |answer| answer.at_ms);
                    format!(
                        "{sent}, but had received token {latest} at {}",
                        At(received)
                    )
                }
                None => format!(
                    "{sent}, but had received no lease in term {}",
                    ledger.term()
                ),
            }
        };
        let context = [ledger.started.as_ref(), ledger.latest_answer()];
        Some(Violation::new(
            Invariant::LatestToken,
            event,
            context,
            sentence,
        ))
    }
}

/// `no-delete-after-loss`: no delete after a renewal answered `None` or an error.
#[derive(Debug, Default)]
pub struct NoDeleteAfterLoss;

impl NoDeleteAfterLoss {
    pub fn new() -> NoDeleteAfterLoss {
        NoDeleteAfterLoss
    }
}

impl Checker<Retention> for NoDeleteAfterLoss {
    fn wants(&self, kind: &EventKind) -> bool {
        // The term flow comes from the run's facts: only the kinds judged here.
        kinds::any_of(kind, mask::CALL)
    }

    fn invariant(&self) -> Invariant {
        Invariant::NoDeleteAfterLoss
    }

    #[inline(always)]
    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = replica_of(event)?;
        // Judged on the replica's term including this event (the run's after view).
        let ledger = &facts.after(replica).ledger;
        let EventKind::Call {
            request: Request::Delete { token, .. },
            ..
        } = event.event.kind
        else {
            return None;
        };
        if !ledger.open {
            return None;
        }
        let lost = ledger.lost.as_ref()?;
        let EventKind::Answered { answer, .. } = lost.event.kind else {
            return None;
        };
        let sentence = format!(
            "{replica} sent delete_batch with token {token} at {}, after its renew answered {} at \
             {} in the same term (term {})",
            At(event.at_ms),
            answer_words(&answer),
            At(lost.at_ms),
            ledger.term()
        );
        let context = [ledger.started.as_ref(), ledger.latest_answer(), Some(lost)];
        Some(Violation::new(
            Invariant::NoDeleteAfterLoss,
            event,
            context,
            sentence,
        ))
    }
}

#[cfg(test)]
mod tests {
    use crate::events::{Answer, Failure};

    use super::*;
    use crate::checkers::testkit::{R1, R2, Script, assert_broken, assert_holds, lease};

    fn stale_apply(fenced: bool) -> (Script, u64) {
        let mut script = Script::new();
        script.at(1000).correct_term(R1, 1, 1);
        script.at(2000).start(R2, 1);
        script.acquire(R2, 3);
        script.clock(R2, 2010);
        let call = script.send(
            R2,
            Request::Delete {
                older_than_ms: 0,
                limit: 200,
                token: 3,
            },
        );
        script.at(4100);
        let seq = if fenced {
            script.apply(
                call,
                Applied::DeleteRefused {
                    current_token: Some(9),
                },
            )
        } else {
            script.apply(
                call,
                Applied::Deleted {
                    rows: 200,
                    token_current: false,
                    current_token: Some(9),
                    newest_created_ms: None,
                    held_back: 0,
                },
            )
        };
        (script, seq)
    }

    #[test]
    fn stale_token_delete_holds_for_correct_terms_and_refused_deletes() {
        assert_holds(Invariant::StaleTokenDelete, &Script::correct_run());
        assert_holds(Invariant::StaleTokenDelete, &stale_apply(true).0);
    }

    #[test]
    fn stale_token_delete_breaks_on_an_applied_stale_delete() {
        let (script, seq) = stale_apply(false);
        let words = [
            "r2's delete_batch with token 3",
            "t=4100ms",
            "current token was 9",
        ];
        assert_broken(Invariant::StaleTokenDelete, &script, seq, &words);
    }

    #[test]
    fn latest_token_holds_for_a_correct_run() {
        assert_holds(Invariant::LatestToken, &Script::correct_run());
    }

    #[test]
    fn latest_token_breaks_on_a_delete_with_the_superseded_token() {
        let mut script = Script::new();
        script.start(R2, 1);
        script.acquire(R2, 7);
        script.clock(R2, 3000);
        script.at(3900).renew(R2, 7, 9);
        script.at(4100).send(
            R2,
            Request::Delete {
                older_than_ms: 0,
                limit: 200,
                token: 7,
            },
        );
        let seq = script.last_seq();
        let words = [
            "r2 sent delete_batch with token 7 at t=4100ms",
            "received token 9 at t=3910ms",
        ];
        assert_broken(Invariant::LatestToken, &script, seq, &words);
    }

    #[test]
    fn latest_token_breaks_on_a_delete_without_a_lease() {
        let mut script = Script::new();
        script.start(R1, 4);
        script.send(
            R1,
            Request::Delete {
                older_than_ms: 0,
                limit: 200,
                token: 2,
            },
        );
        let seq = script.last_seq();
        assert_broken(
            Invariant::LatestToken,
            &script,
            seq,
            &["no lease in term 4"],
        );
    }

    #[test]
    fn latest_token_ignores_answers_to_calls_of_an_earlier_term() {
        let mut script = Script::new();
        script.start(R1, 1);
        script.acquire(R1, 1);
        let late = script.send(R1, Request::Renew { lease: lease(1) });
        script.end(R1, 1, crate::events::EndKind::Stopped, 0);
        script.start(R1, 2);
        script.acquire(R1, 5);
        script.answer(R1, late, OpKind::Renew, Answer::Lease(Some(lease(6))));
        script.send(
            R1,
            Request::Delete {
                older_than_ms: 0,
                limit: 200,
                token: 5,
            },
        );
        assert_holds(Invariant::LatestToken, &script);
    }

    fn lost_then_delete(answer: Answer) -> Script {
        let mut script = Script::new();
        script.start(R1, 2);
        script.acquire(R1, 4);
        script.clock(R1, 3000);
        script.delete(R1, 0, 4, 200);
        script.at(5000).renew_lost(R1, 4, answer);
        script.at(5200).send(
            R1,
            Request::Delete {
                older_than_ms: 0,
                limit: 200,
                token: 4,
            },
        );
        script
    }

    #[test]
    fn no_delete_after_loss_holds_when_the_term_stops_deleting() {
        assert_holds(Invariant::NoDeleteAfterLoss, &Script::correct_run());
        let mut script = Script::new();
        script.start(R1, 2);
        script.acquire(R1, 4);
        script.renew_lost(R1, 4, Answer::Lease(None));
        script.end(R1, 2, crate::events::EndKind::LostByNone, 0);
        script.start(R1, 3);
        script.acquire(R1, 6);
        script.delete(R1, 0, 6, 10);
        assert_holds(Invariant::NoDeleteAfterLoss, &script);
    }

    #[test]
    fn no_delete_after_loss_breaks_after_none_and_after_an_error() {
        let script = lost_then_delete(Answer::Lease(None));
        let seq = script.last_seq();
        let words = [
            "r1 sent delete_batch with token 4 at t=5200ms",
            "answered None at t=5010ms",
        ];
        assert_broken(Invariant::NoDeleteAfterLoss, &script, seq, &words);
        let script = lost_then_delete(Answer::Failed(Failure::Timeout));
        let seq = script.last_seq();
        assert_broken(
            Invariant::NoDeleteAfterLoss,
            &script,
            seq,
            &["an error (timeout)"],
        );
    }
}
