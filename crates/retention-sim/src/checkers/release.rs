//! Giving the lease back: `release-latest`, `release-after-ownership`, `release-on-exit`.
//!
//! Terminology:
//! - *release*: a `Call` with `Request::Release`; it carries the lease it gives back.
//! - *ownership*: the open term's acquire answered `Lease(Some(..))`.
//! - *excused*: a renewal of the term answered `None`; the lease is gone, so nothing is left
//!   to release. A renewal error does not excuse (the lease may still be held).

use crate::Retention;
use crate::events::Stamped;
use crate::events::{Event, EventKind, Note, Request};

use leasesim_events::mask;

use super::kinds;
use super::track::replica_of;
use super::words::{At, answer_words, end_words};
use super::{Checker, Facts, Invariant, Violation};
use crate::events::notes;

/// `release-latest`: a release carries the latest token received in the term.
#[derive(Debug, Default)]
pub struct ReleaseLatest;

impl ReleaseLatest {
    pub fn new() -> ReleaseLatest {
        ReleaseLatest
    }
}

impl Checker<Retention> for ReleaseLatest {
    fn wants(&self, kind: &EventKind) -> bool {
        // The term flow comes from the run's facts: only the kinds judged here.
        kinds::any_of(kind, mask::CALL)
    }

    fn invariant(&self) -> Invariant {
        Invariant::ReleaseLatest
    }

    #[inline(always)]
    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = replica_of(event)?;
        // Judged on the replica's term including this event (the run's after view).
        let ledger = &facts.after(replica).ledger;
        let EventKind::Call {
            request: Request::Release { lease },
            ..
        } = event.event.kind
        else {
            return None;
        };
        // A release outside ownership is `release-after-ownership`'s verdict, not this one's.
        let latest = ledger.latest_token().filter(|_| ledger.open)?;
        if lease.token == latest {
            return None;
        }
        let received_ms = ledger.latest_answer().map_or(0, |answer| answer.at_ms);
        let sentence = format!(
            "{replica} released token {} at {}, but had received token {latest} at {} in the \
             same term",
            lease.token,
            At(event.at_ms),
            At(received_ms)
        );
        let context = [ledger.started.as_ref(), ledger.latest_answer()];
        Some(Violation::new(
            Invariant::ReleaseLatest,
            event,
            context,
            sentence,
        ))
    }
}

/// `release-after-ownership`: a release only inside a term whose acquire succeeded.
#[derive(Debug, Default)]
pub struct ReleaseAfterOwnership;

impl ReleaseAfterOwnership {
    pub fn new() -> ReleaseAfterOwnership {
        ReleaseAfterOwnership
    }
}

impl Checker<Retention> for ReleaseAfterOwnership {
    fn wants(&self, kind: &EventKind) -> bool {
        // The term flow comes from the run's facts: only the kinds judged here.
        kinds::any_of(kind, mask::CALL)
    }

    fn invariant(&self) -> Invariant {
        Invariant::ReleaseAfterOwnership
    }

    #[inline(always)]
    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = replica_of(event)?;
        // Judged on the replica's term including this event (the run's after view).
        let ledger = &facts.after(replica).ledger;
        let EventKind::Call {
            request: Request::Release { lease },
            ..
        } = event.event.kind
        else {
            return None;
        };
        if ledger.open && ledger.acquired {
            return None;
        }
        let sent = format!(
            "{replica} sent release with token {} at {}",
            lease.token,
            At(event.at_ms)
        );
        let term = ledger.term();
        let sentence = match (ledger.open, &ledger.acquire_answer) {
            (false, _) => format!("{sent}, outside any term"),
            (true, Some(answer)) => {
                let EventKind::Answered { answer: words, .. } = answer.event.kind else {
                    return None;
                };
                let words = answer_words(&words);
                format!(
                    "{sent} in term {term}, whose acquire answered {words} at {}",
                    At(answer.at_ms)
                )
            }
            (true, None) => format!("{sent} in term {term}, before its acquire had answered"),
        };
        let context = [
            ledger.started.as_ref(),
            ledger.ended.as_ref(),
            ledger.acquire_answer.as_ref(),
        ];
        Some(Violation::new(
            Invariant::ReleaseAfterOwnership,
            event,
            context,
            sentence,
        ))
    }
}

/// `release-on-exit`: a term that acquired releases its latest lease before it ends.
#[derive(Debug, Default)]
pub struct ReleaseOnExit;

impl ReleaseOnExit {
    pub fn new() -> ReleaseOnExit {
        ReleaseOnExit
    }
}

impl Checker<Retention> for ReleaseOnExit {
    fn wants(&self, kind: &EventKind) -> bool {
        // The term flow comes from the run's facts: only the kinds judged here.
        kinds::any_of(kind, notes::TERM_ENDED)
    }

    fn invariant(&self) -> Invariant {
        Invariant::ReleaseOnExit
    }

    #[inline(always)]
    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = replica_of(event)?;
        // Judged on the replica's term including this event (the run's after view).
        let ledger = &facts.after(replica).ledger;
        let EventKind::Note(Note::TermEnded { term, end, .. }) = event.event.kind else {
            return None;
        };
        if !ledger.acquired || ledger.lost_by_none.is_some() {
            return None;
        }
        let latest = ledger.latest_token()?;
        let released = ledger.released.as_ref().map(|(token, _)| *token);
        if released == Some(latest) {
            return None;
        }
        let received_ms = ledger.latest_answer().map_or(0, |answer| answer.at_ms);
        let head = format!(
            "{replica}'s term {term} ended ({}) at {} without releasing token {latest}, received \
             at {}",
            end_words(end),
            At(event.at_ms),
            At(received_ms)
        );
        let sentence = match released {
            Some(token) => format!("{head}; its release carried token {token}"),
            None => format!("{head}; it sent no release"),
        };
        let context = [
            ledger.started.as_ref(),
            ledger.latest_answer(),
            ledger.lost.as_ref(),
            ledger.release_call(),
        ];
        Some(Violation::new(
            Invariant::ReleaseOnExit,
            event,
            context,
            sentence,
        ))
    }
}

#[cfg(test)]
mod tests {
    use crate::events::{Answer, Applied, EndKind, Failure, OpKind};

    use super::*;
    use crate::checkers::testkit::{R1, R2, Script, assert_broken, assert_holds, lease};

    /// A term of r1 that acquires token 1, renews to 2, then `finish` ends it.
    fn renewed_term(script: &mut Script) {
        script.at(1000).start(R1, 3);
        script.acquire(R1, 1);
        script.clock(R1, 1010);
        script.delete(R1, 0, 1, 200);
        script.at(2000).renew(R1, 1, 2);
    }

    #[test]
    fn release_latest_holds_for_a_correct_run() {
        assert_holds(Invariant::ReleaseLatest, &Script::correct_run());
    }

    #[test]
    fn release_latest_breaks_on_a_superseded_lease() {
        let mut script = Script::new();
        renewed_term(&mut script);
        script.at(2500).release(R1, 1);
        let seq = script.last_seq() - 2;
        let words = [
            "r1 released token 1 at t=2500ms",
            "received token 2 at t=2010ms",
        ];
        assert_broken(Invariant::ReleaseLatest, &script, seq, &words);
    }

    #[test]
    fn release_after_ownership_holds_for_a_correct_run() {
        assert_holds(Invariant::ReleaseAfterOwnership, &Script::correct_run());
    }

    #[test]
    fn release_after_ownership_breaks_after_a_refused_acquire() {
        let mut script = Script::new();
        script.at(500).start(R2, 1);
        let call = script.send(R2, Request::Acquire);
        script.apply(call, Applied::Busy { holder_token: 4 });
        script
            .at(520)
            .answer(R2, call, OpKind::Acquire, Answer::Lease(None));
        script
            .at(600)
            .send(R2, Request::Release { lease: lease(4) });
        let seq = script.last_seq();
        let words = [
            "r2 sent release with token 4 at t=600ms in term 1",
            "answered None at t=520ms",
        ];
        assert_broken(Invariant::ReleaseAfterOwnership, &script, seq, &words);
    }

    #[test]
    fn release_after_ownership_breaks_outside_a_term() {
        let mut script = Script::new();
        script.at(1000).correct_term(R1, 1, 1);
        script
            .at(9000)
            .send(R1, Request::Release { lease: lease(2) });
        let seq = script.last_seq();
        assert_broken(
            Invariant::ReleaseAfterOwnership,
            &script,
            seq,
            &["outside any term"],
        );
    }

    #[test]
    fn release_on_exit_holds_for_correct_terms_and_a_term_lost_by_none() {
        assert_holds(Invariant::ReleaseOnExit, &Script::correct_run());
        let mut script = Script::new();
        renewed_term(&mut script);
        script.renew_lost(R1, 2, Answer::Lease(None));
        script.end(R1, 3, EndKind::LostByNone, 200);
        assert_holds(Invariant::ReleaseOnExit, &script);
    }

    #[test]
    fn release_on_exit_breaks_on_an_error_path_without_release() {
        let mut script = Script::new();
        renewed_term(&mut script);
        script.renew_lost(R1, 2, Answer::Failed(Failure::Timeout));
        let seq = script.at(3000).end(R1, 3, EndKind::LostByError, 200);
        let words = [
            "r1's term 3 ended (lost by error) at t=3000ms",
            "token 2",
            "no release",
        ];
        assert_broken(Invariant::ReleaseOnExit, &script, seq, &words);
    }

    #[test]
    fn release_on_exit_breaks_when_a_renewal_supersedes_the_release() {
        let mut script = Script::new();
        renewed_term(&mut script);
        let renew = script.send(R1, Request::Renew { lease: lease(2) });
        script.release(R1, 2);
        script.answer(R1, renew, OpKind::Renew, Answer::Lease(Some(lease(3))));
        let seq = script.end(R1, 3, EndKind::Stopped, 200);
        let words = ["without releasing token 3", "its release carried token 2"];
        assert_broken(Invariant::ReleaseOnExit, &script, seq, &words);
    }
}
