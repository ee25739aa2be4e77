//! Where a term's calls may fall: `acquire-first`, `refused-acquire-ends`, `release-last`.
//!
//! Terminology:
//! - *term call*: a `Call` a replica sends while its term is open. Calls outside any term are
//!   judged by the checkers of what they carry (`renewal-stops`, `release-after-ownership`,
//!   `latest-token`), not here.
//! - *refused acquire*: the term's acquire answered `None` or an error; the term is over then,
//!   and may send nothing else.
//! - *release point*: the term's first release call. Before it, every other call of the term
//!   must have been answered (the renewal loop stopped, a renewal in flight awaited); after
//!   it, no acquire, renew or delete may follow.

use crate::Retention;
use crate::events::Stamped;
use crate::events::{Event, EventKind, OpKind, Request};

use leasesim_events::mask;

use super::kinds;
use super::track::{TermFlow, replica_of};
use super::words::{At, answer_words};
use super::{Checker, Facts, Invariant, Violation};

/// `acquire-first`: a term's first call is its acquire, and there is no second acquire.
#[derive(Debug, Default)]
pub struct AcquireFirst;

impl AcquireFirst {
    pub fn new() -> AcquireFirst {
        AcquireFirst
    }

    /// Why the call `event` is out of place in `flow`'s open term, if it is.
    fn misplaced(flow: &TermFlow, event: &Stamped<Event>, request: Request) -> Option<String> {
        let replica = replica_of(event)?;
        let term = flow.ledger.term();
        // Written only when the call is out of place: this runs for every call of every run.
        let sent = || {
            format!(
                "{replica} sent {} at {}",
                request.op().name(),
                At(event.at_ms)
            )
        };
        match (&flow.acquire_call, request) {
            (None, Request::Acquire) => None,
            (None, _) => Some(format!("{} in term {term}, before any acquire", sent())),
            (Some(first), Request::Acquire) => Some(format!(
                "{} in term {term}, a second acquire after the one sent at {}",
                sent(),
                At(first.at_ms)
            )),
            (Some(_), _) => None,
        }
    }
}

impl Checker<Retention> for AcquireFirst {
    fn wants(&self, kind: &EventKind) -> bool {
        // The term flow comes from the run's facts: only the kinds judged here.
        kinds::any_of(kind, mask::CALL)
    }

    fn invariant(&self) -> Invariant {
        Invariant::AcquireFirst
    }

    #[inline(always)]
    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = replica_of(event)?;
        // Judged on the term before this call; reported with it.
        let before = facts.before(replica);
        let sentence = match event.event.kind {
            EventKind::Call { request, .. } if before.ledger.open => {
                AcquireFirst::misplaced(before, event, request)
            }
            _ => None,
        };
        let sentence = sentence?;
        let flow = facts.after(replica);
        let context = [flow.ledger.started.as_ref(), flow.acquire_call.as_ref()];
        Some(Violation::new(
            Invariant::AcquireFirst,
            event,
            context,
            sentence,
        ))
    }
}

/// `refused-acquire-ends`: after a refused acquire, the term sends nothing else.
#[derive(Debug, Default)]
pub struct RefusedAcquireEnds;

impl RefusedAcquireEnds {
    pub fn new() -> RefusedAcquireEnds {
        RefusedAcquireEnds
    }
}

impl Checker<Retention> for RefusedAcquireEnds {
    fn wants(&self, kind: &EventKind) -> bool {
        // The term flow comes from the run's facts: only the kinds judged here.
        kinds::any_of(kind, mask::CALL)
    }

    fn invariant(&self) -> Invariant {
        Invariant::RefusedAcquireEnds
    }

    #[inline(always)]
    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = replica_of(event)?;
        // Judged on the term including this call (the run's after view).
        let flow = facts.after(replica);
        let EventKind::Call { request, .. } = event.event.kind else {
            return None;
        };
        let ledger = &flow.ledger;
        if !ledger.open || ledger.acquired {
            return None;
        }
        let refusal = ledger.acquire_answer.as_ref()?;
        let EventKind::Answered { answer, .. } = refusal.event.kind else {
            return None;
        };
        let sentence = format!(
            "{replica} sent {} at {} in term {}, after its acquire answered {} at {}",
            request.op().name(),
            At(event.at_ms),
            ledger.term(),
            answer_words(&answer),
            At(refusal.at_ms)
        );
        let context = [ledger.started.as_ref(), Some(refusal)];
        Some(Violation::new(
            Invariant::RefusedAcquireEnds,
            event,
            context,
            sentence,
        ))
    }
}

/// `release-last`: nothing of the term in flight at its release, nothing new after it.
#[derive(Debug, Default)]
pub struct ReleaseLast;

impl ReleaseLast {
    pub fn new() -> ReleaseLast {
        ReleaseLast
    }

    /// Why the call `event` breaks the release point of `flow`'s open term, if it does.
    fn out_of_order(flow: &TermFlow, event: &Stamped<Event>, request: Request) -> Option<String> {
        let replica = replica_of(event)?;
        let term = flow.ledger.term();
        if let Request::Release { lease } = request {
            if flow.release_call.is_some() {
                return None;
            }
            let (call, op, sent_ms) = flow
                .ledger
                .in_flight()
                .find(|(_, op, _)| *op != OpKind::Release)?;
            return Some(format!(
                "{replica} sent release with token {} at {} in term {term} while its {} call \
                 {call}, sent at {}, was unanswered",
                lease.token,
                At(event.at_ms),
                op.name(),
                At(sent_ms)
            ));
        }
        let release = flow.release_call.as_ref()?;
        Some(format!(
            "{replica} sent {} at {} in term {term}, after its release at {}",
            request.op().name(),
            At(event.at_ms),
            At(release.at_ms)
        ))
    }
}

impl Checker<Retention> for ReleaseLast {
    fn wants(&self, kind: &EventKind) -> bool {
        // The term flow comes from the run's facts: only the kinds judged here.
        kinds::any_of(kind, mask::CALL)
    }

    fn invariant(&self) -> Invariant {
        Invariant::ReleaseLast
    }

    #[inline(always)]
    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = replica_of(event)?;
        // Judged on the term before this call; reported with it.
        let before = facts.before(replica);
        let sentence = match event.event.kind {
            EventKind::Call { request, .. } if before.ledger.open => {
                ReleaseLast::out_of_order(before, event, request)
            }
            _ => None,
        };
        let sentence = sentence?;
        let flow = facts.after(replica);
        let context = [
            flow.ledger.started.as_ref(),
            flow.release_call.as_ref(),
            flow.ledger.latest_answer(),
        ];
        Some(Violation::new(
            Invariant::ReleaseLast,
            event,
            context,
            sentence,
        ))
    }
}

#[cfg(test)]
mod tests {
    use crate::events::{Answer, Applied, EndKind, Failure};

    use super::*;
    use crate::checkers::testkit::{R1, R2, Script, assert_broken, assert_holds, lease};

    fn delete(token: u64) -> Request {
        Request::Delete {
            older_than_ms: 0,
            limit: 200,
            token,
        }
    }

    #[test]
    fn acquire_first_holds_for_a_correct_run() {
        assert_holds(Invariant::AcquireFirst, &Script::correct_run());
    }

    #[test]
    fn acquire_first_breaks_on_a_call_before_the_acquire() {
        let mut script = Script::new();
        script.at(1000).correct_term(R1, 1, 1);
        script.at(3000).start(R1, 2);
        script
            .at(3100)
            .send(R1, Request::Release { lease: lease(2) });
        let seq = script.last_seq();
        let words = ["r1 sent release at t=3100ms in term 2, before any acquire"];
        assert_broken(Invariant::AcquireFirst, &script, seq, &words);
    }

    #[test]
    fn acquire_first_breaks_on_a_second_acquire() {
        let mut script = Script::new();
        script.at(500).start(R2, 4);
        script.acquire(R2, 3);
        script.at(900).send(R2, Request::Acquire);
        let seq = script.last_seq();
        let words = [
            "r2 sent acquire at t=900ms in term 4, a second acquire after the one sent at t=500ms",
        ];
        assert_broken(Invariant::AcquireFirst, &script, seq, &words);
    }

    fn refused(answer: Answer) -> Script {
        let mut script = Script::new();
        script.at(200).start(R1, 3);
        let call = script.send(R1, Request::Acquire);
        script.apply(call, Applied::Busy { holder_token: 9 });
        script.at(210).answer(R1, call, OpKind::Acquire, answer);
        script
    }

    #[test]
    fn refused_acquire_ends_holds_when_the_term_ends_at_once() {
        assert_holds(Invariant::RefusedAcquireEnds, &Script::correct_run());
        let mut script = refused(Answer::Lease(None));
        script.end(R1, 3, EndKind::NotLeader, 0);
        script.at(900).start(R1, 4);
        script.acquire(R1, 10);
        script.delete(R1, 0, 10, 5);
        assert_holds(Invariant::RefusedAcquireEnds, &script);
    }

    #[test]
    fn refused_acquire_ends_breaks_on_any_call_after_none_or_an_error() {
        let mut script = refused(Answer::Lease(None));
        script.at(300).send(R1, Request::Renew { lease: lease(9) });
        let seq = script.last_seq();
        let words =
            ["r1 sent renew at t=300ms in term 3, after its acquire answered None at t=210ms"];
        assert_broken(Invariant::RefusedAcquireEnds, &script, seq, &words);
        let mut script = refused(Answer::Failed(Failure::Timeout));
        script.at(400).send(R1, delete(9));
        let seq = script.last_seq();
        let words = [
            "r1 sent delete_batch at t=400ms",
            "an error (timeout) at t=210ms",
        ];
        assert_broken(Invariant::RefusedAcquireEnds, &script, seq, &words);
    }

    #[test]
    fn release_last_holds_for_a_correct_run_and_a_retried_release() {
        assert_holds(Invariant::ReleaseLast, &Script::correct_run());
        let mut script = Script::new();
        script.start(R1, 1);
        script.acquire(R1, 1);
        let call = script.send(R1, Request::Release { lease: lease(1) });
        script.answer(R1, call, OpKind::Release, Answer::Failed(Failure::Timeout));
        script.release(R1, 1);
        assert_holds(Invariant::ReleaseLast, &script);
    }

    #[test]
    fn release_last_breaks_on_a_release_while_a_renewal_is_in_flight() {
        let mut script = Script::new();
        script.at(100).start(R2, 1);
        script.acquire(R2, 1);
        let renew = script.at(1100).send(R2, Request::Renew { lease: lease(1) });
        script
            .at(1150)
            .send(R2, Request::Release { lease: lease(1) });
        let seq = script.last_seq();
        let words = [format!(
            "r2 sent release with token 1 at t=1150ms in term 1 while its renew call {renew}, \
             sent at t=1100ms, was unanswered"
        )];
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        assert_broken(Invariant::ReleaseLast, &script, seq, &words);
    }

    #[test]
    fn release_last_breaks_on_a_delete_after_the_release() {
        let mut script = Script::new();
        script.at(100).start(R1, 2);
        script.acquire(R1, 1);
        script.at(300).release(R1, 1);
        script.at(400).send(R1, delete(1));
        let seq = script.last_seq();
        let words = ["r1 sent delete_batch at t=400ms in term 2, after its release at t=300ms"];
        assert_broken(Invariant::ReleaseLast, &script, seq, &words);
    }
}
