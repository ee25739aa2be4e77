//! When a term stops deleting, and what it reports: `short-batch-ends`, `delete-error-ends`,
//! `no-early-stop`, `term-report`.
//!
//! Terminology:
//! - *short batch*: a delete answered with fewer rows than its limit; the backlog is (as far
//!   as the worker can tell) drained, so the term deletes no more.
//! - *delete error*: a delete answered an error (refused, timed out, stale token); the term
//!   ends and the delete is not retried.
//! - *reason to stop*: the cap reached (answered rows), a short batch, a delete error, a
//!   renewal that answered `None` or an error, or a `stop()` call. A term that acquired and
//!   releases (or ends) with none of these, and no delete in flight, stopped early.
//! - *report*: the `TermEnded` event carries what `run()` returned: how the term ended and
//!   how many rows it deleted; both must match what the term's answers show.

use crate::Retention;
use crate::events::Stamped;
use crate::events::{Answer, EndKind, Event, EventKind, Note, Request};

use leasesim_events::mask;

use super::kinds;
use super::track::{PerReplica, TermFlow, replica_of};
use super::words::{At, answer_words, end_words};
use super::{CheckConfig, Checker, Facts, Invariant, Violation};
use crate::events::notes;

/// The answer that ended deletion: a short batch or an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ender {
    ShortBatch,
    DeleteError,
}

/// `short-batch-ends` and `delete-error-ends`: no delete after the answer that ends deletion.
#[derive(Debug)]
pub struct DeletionEnds {
    ender: Ender,
}

impl DeletionEnds {
    pub fn short_batch() -> DeletionEnds {
        DeletionEnds {
            ender: Ender::ShortBatch,
        }
    }

    pub fn delete_error() -> DeletionEnds {
        DeletionEnds {
            ender: Ender::DeleteError,
        }
    }

    /// The answer that ended `flow`'s deletion, and how it reads.
    fn ended_by(ender: Ender, flow: &TermFlow) -> Option<(Stamped<Event>, String)> {
        let (answer, limit) = match ender {
            Ender::ShortBatch => flow
                .short
                .clone()
                .map(|(answer, limit)| (answer, Some(limit)))?,
            Ender::DeleteError => (flow.delete_error.clone()?, None),
        };
        let EventKind::Answered { answer: got, .. } = answer.event.kind else {
            return None;
        };
        let words = match limit {
            Some(limit) => format!("{} of the {limit} it asked", answer_words(&got)),
            None => answer_words(&got),
        };
        Some((answer, words))
    }
}

impl Checker<Retention> for DeletionEnds {
    fn wants(&self, kind: &EventKind) -> bool {
        // The term flow comes from the run's facts: only the kinds judged here.
        kinds::any_of(kind, mask::CALL)
    }

    fn invariant(&self) -> Invariant {
        match self.ender {
            Ender::ShortBatch => Invariant::ShortBatchEnds,
            Ender::DeleteError => Invariant::DeleteErrorEnds,
        }
    }

    #[inline(always)]
    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = replica_of(event)?;
        let (ender, invariant) = (self.ender, self.invariant());
        let EventKind::Call {
            request: Request::Delete { token, .. },
            ..
        } = event.event.kind
        else {
            return None;
        };
        // Judged on the term before this delete; reported with it.
        let before = facts.before(replica);
        let verdict = match before.ledger.open {
            true => DeletionEnds::ended_by(ender, before),
            false => None,
        };
        let (answer, words) = verdict?;
        let flow = facts.after(replica);
        let sentence = format!(
            "{replica} sent delete_batch with token {token} at {}, after a delete_batch of its \
             term {} answered {words} at {}",
            At(event.at_ms),
            flow.ledger.term(),
            At(answer.at_ms)
        );
        let context = [flow.ledger.started.as_ref(), Some(&answer)];
        Some(Violation::new(invariant, event, context, sentence))
    }
}

/// `short-batch-ends`: no delete after a short batch.
pub type ShortBatchEnds = DeletionEnds;

/// `delete-error-ends`: no delete after a delete error.
pub type DeleteErrorEnds = DeletionEnds;

/// `no-early-stop`: a term that acquired stops deleting only for a reason.
#[derive(Debug)]
pub struct NoEarlyStop {
    cap_rows: u64,
    /// Per replica: its latest term was judged.
    judged: PerReplica<bool>,
}

impl NoEarlyStop {
    pub fn new(config: &CheckConfig) -> NoEarlyStop {
        NoEarlyStop {
            cap_rows: u64::from(config.cap_rows),
            judged: PerReplica::default(),
        }
    }

    /// True when `flow`'s term had a reason to stop deleting (or a delete is still out).
    fn excused(&self, flow: &TermFlow) -> bool {
        let ledger = &flow.ledger;
        !ledger.acquired
            || flow.stop.is_some()
            || ledger.lost.is_some()
            || flow.short.is_some()
            || flow.delete_error.is_some()
            || ledger.rows_answered >= self.cap_rows
            || flow.deleting()
    }

    fn early(&self, flow: &TermFlow, event: &Stamped<Event>) -> Option<String> {
        let replica = replica_of(event)?;
        let ledger = &flow.ledger;
        let what = match event.event.kind {
            EventKind::Call { .. } => "released its lease",
            _ => "ended",
        };
        Some(format!(
            "{replica}'s term {} {what} at {} after {} rows although nothing ended its deletion: \
             the cap of {} rows was not reached, no delete answered short or failed, no renewal \
             was lost and no stop() was called",
            ledger.term(),
            At(event.at_ms),
            ledger.rows_answered,
            self.cap_rows
        ))
    }
}

impl Checker<Retention> for NoEarlyStop {
    fn wants(&self, kind: &EventKind) -> bool {
        // The term flow comes from the run's facts: only the kinds judged here.
        kinds::any_of(kind, notes::TERM_STARTED | mask::CALL | notes::TERM_ENDED)
    }

    fn invariant(&self) -> Invariant {
        Invariant::NoEarlyStop
    }

    #[inline(always)]
    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = replica_of(event)?;
        // Judged on the term before this event; reported with it.
        let before = facts.before(replica);
        let judged = self.judged.at(replica);
        let at_release_point = match event.event.kind {
            EventKind::Note(Note::TermStarted { .. }) => {
                *judged = false;
                false
            }
            EventKind::Call {
                request: Request::Release { .. },
                ..
            } => before.ledger.open,
            EventKind::Note(Note::TermEnded { .. }) => true,
            _ => false,
        };
        if !at_release_point || *judged {
            return None;
        }
        *judged = true;
        // invariant: a term is judged once, at its first release point.
        debug_assert!(self.judged.get(replica) == Some(&true));
        let sentence = match self.excused(before) {
            true => None,
            false => self.early(before, event),
        };
        let sentence = sentence?;
        let flow = facts.after(replica);
        let ledger = &flow.ledger;
        let context = [
            ledger.started.as_ref(),
            ledger.acquire_answer.as_ref(),
            ledger.latest_answer(),
        ];
        Some(Violation::new(
            Invariant::NoEarlyStop,
            event,
            context,
            sentence,
        ))
    }
}

/// `term-report`: the term's end and rows, as `run()` reported them, match its answers.
#[derive(Debug)]
pub struct TermReport {
    cap_rows: u64,
}

impl TermReport {
    pub fn new(config: &CheckConfig) -> TermReport {
        TermReport {
            cap_rows: u64::from(config.cap_rows),
        }
    }

    /// Why the term's answers do not explain `end`, if they do not.
    fn unexplained(&self, flow: &TermFlow, end: EndKind) -> Option<&'static str> {
        let ledger = &flow.ledger;
        let acquire = ledger
            .acquire_answer
            .as_ref()
            .and_then(|answer| match answer.event.kind {
                EventKind::Answered { answer, .. } => Some(answer),
                _ => None,
            });
        let lost = ledger.lost.as_ref().map(|answer| answer.event.kind);
        let lost_by_error = matches!(
            lost,
            Some(EventKind::Answered {
                answer: Answer::Failed(_),
                ..
            })
        );
        let (explained, why) = match end {
            EndKind::NotLeader => (
                acquire == Some(Answer::Lease(None)),
                "its acquire did not answer None",
            ),
            EndKind::FailedAcquire => (
                matches!(acquire, Some(Answer::Failed(_))),
                "its acquire did not answer an error",
            ),
            EndKind::CapReached => (
                ledger.rows_answered >= self.cap_rows,
                "its deletes answered fewer rows than the cap",
            ),
            EndKind::Drained => (flow.short.is_some(), "no delete answered short"),
            EndKind::LostByNone => (ledger.lost_by_none.is_some(), "no renewal answered None"),
            EndKind::LostByError => (lost_by_error, "no renewal answered an error"),
            EndKind::FailedDelete => (flow.delete_error.is_some(), "no delete answered an error"),
            EndKind::Stopped => (flow.stop.is_some(), "stop() was not called"),
            EndKind::StoppedBeforeStart => (
                flow.stop.is_some() && flow.first_call.is_none(),
                "it was not stopped before it began, or it sent a call",
            ),
            EndKind::AlreadyRunning => (true, ""),
        };
        (!explained).then_some(why)
    }

    fn report(&self, flow: &TermFlow, event: &Stamped<Event>) -> Option<String> {
        let EventKind::Note(Note::TermEnded { term, end, rows }) = event.event.kind else {
            return None;
        };
        let answered = flow.ledger.rows_answered;
        let why = match rows == answered {
            true => self.unexplained(flow, end)?.to_owned(),
            false => format!("its deletes answered {answered} rows"),
        };
        Some(format!(
            "{}'s term {term} reported at {} that it ended ({}) after {rows} rows, but {why}",
            replica_of(event)?,
            At(event.at_ms),
            end_words(end)
        ))
    }
}

impl Checker<Retention> for TermReport {
    fn wants(&self, kind: &EventKind) -> bool {
        // The term flow comes from the run's facts: only the kinds judged here.
        kinds::any_of(kind, notes::TERM_ENDED)
    }

    fn invariant(&self) -> Invariant {
        Invariant::TermReport
    }

    #[inline(always)]
    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = replica_of(event)?;
        if !matches!(event.event.kind, EventKind::Note(Note::TermEnded { .. })) {
            return None;
        }
        // Judged on the term before its end; reported with it.
        let sentence = self.report(facts.before(replica), event)?;
        let flow = facts.after(replica);
        let ledger = &flow.ledger;
        let context = [
            ledger.started.as_ref(),
            ledger.acquire_answer.as_ref(),
            ledger.lost.as_ref(),
            flow.short.as_ref().map(|(answer, _)| answer),
            flow.delete_error.as_ref(),
        ];
        Some(Violation::new(
            Invariant::TermReport,
            event,
            context,
            sentence,
        ))
    }
}

#[cfg(test)]
mod tests {
    use crate::events::{Applied, Failure, OpKind};

    use super::*;
    use crate::checkers::testkit::{R1, R2, Script, assert_broken, assert_holds};

    fn delete(limit: u32) -> Request {
        Request::Delete {
            older_than_ms: 5000,
            limit,
            token: 1,
        }
    }

    /// A delete of `limit` answered `answer` (applied in between when it removed rows).
    fn answered(
        script: &mut Script,
        replica: crate::events::ReplicaId,
        limit: u32,
        answer: Answer,
    ) {
        let call = script.send(replica, delete(limit));
        if let Answer::Rows(rows) = answer {
            let applied = Applied::Deleted {
                rows,
                token_current: true,
                current_token: Some(1),
                newest_created_ms: None,
                held_back: 0,
            };
            script.apply(call, applied);
        }
        script.answer(replica, call, OpKind::Delete, answer);
    }

    /// r1 acquires token 1 in term 2 and reads its clock.
    fn leading(script: &mut Script) {
        script.at(1000).start(R1, 2);
        script.acquire(R1, 1);
        script.clock(R1, 8000);
    }

    #[test]
    fn short_batch_ends_holds_for_a_correct_run() {
        assert_holds(Invariant::ShortBatchEnds, &Script::correct_run());
    }

    #[test]
    fn short_batch_ends_breaks_on_a_delete_after_a_short_batch() {
        let mut script = Script::new();
        leading(&mut script);
        answered(&mut script, R1, 200, Answer::Rows(200));
        script.at(1200);
        answered(&mut script, R1, 200, Answer::Rows(37));
        script.at(1300).send(R1, delete(200));
        let seq = script.last_seq();
        let words = [
            "r1 sent delete_batch with token 1 at t=1300ms",
            "term 2 answered 37 rows of the 200 it asked at t=1200ms",
        ];
        assert_broken(Invariant::ShortBatchEnds, &script, seq, &words);
    }

    #[test]
    fn delete_error_ends_holds_for_a_correct_run_and_a_term_that_ends() {
        assert_holds(Invariant::DeleteErrorEnds, &Script::correct_run());
        let mut script = Script::new();
        leading(&mut script);
        answered(&mut script, R1, 200, Answer::Failed(Failure::Rejected));
        script.release(R1, 1);
        script.end(R1, 2, EndKind::FailedDelete, 0);
        assert_holds(Invariant::DeleteErrorEnds, &script);
    }

    #[test]
    fn delete_error_ends_breaks_on_a_retried_delete() {
        let mut script = Script::new();
        leading(&mut script);
        script.at(1100);
        answered(&mut script, R1, 200, Answer::Failed(Failure::StaleToken));
        script.at(1400).send(R1, delete(200));
        let seq = script.last_seq();
        let words = ["at t=1400ms", "answered an error (stale token) at t=1100ms"];
        assert_broken(Invariant::DeleteErrorEnds, &script, seq, &words);
    }

    #[test]
    fn no_early_stop_holds_for_every_reason_to_stop() {
        assert_holds(Invariant::NoEarlyStop, &Script::correct_run());
        let capped = |script: &mut Script| {
            (0..5).for_each(|_| answered(script, R1, 200, Answer::Rows(200)));
        };
        let lost = |script: &mut Script| script.renew_lost(R1, 1, Answer::Lease(None));
        let stopped = |script: &mut Script| {
            answered(script, R1, 200, Answer::Rows(200));
            script.on(R1, EventKind::StopCalled);
        };
        let failed = |script: &mut Script| {
            answered(script, R1, 200, Answer::Failed(Failure::Timeout));
        };
        let reasons: [&dyn Fn(&mut Script); 4] = [&capped, &lost, &stopped, &failed];
        for reason in reasons {
            let mut script = Script::new();
            leading(&mut script);
            reason(&mut script);
            script.release(R1, 1);
            script.end(R1, 2, EndKind::Stopped, 0);
            assert_holds(Invariant::NoEarlyStop, &script);
        }
    }

    #[test]
    fn no_early_stop_breaks_on_a_release_after_full_batches_below_the_cap() {
        let mut script = Script::new();
        leading(&mut script);
        (0..4).for_each(|_| answered(&mut script, R1, 200, Answer::Rows(200)));
        script.at(2000).release(R1, 1);
        let seq = script.last_seq() - 2;
        let words = [
            "r1's term 2 released its lease at t=2000ms after 800 rows",
            "cap of 1000 rows was not reached",
        ];
        assert_broken(Invariant::NoEarlyStop, &script, seq, &words);
    }

    #[test]
    fn no_early_stop_breaks_on_a_term_that_ends_without_deleting() {
        let mut script = Script::new();
        leading(&mut script);
        let seq = script.at(1500).end(R1, 2, EndKind::CapReached, 0);
        let words = ["r1's term 2 ended at t=1500ms after 0 rows"];
        assert_broken(Invariant::NoEarlyStop, &script, seq, &words);
    }

    #[test]
    fn term_report_holds_for_a_correct_run_and_every_honest_end() {
        assert_holds(Invariant::TermReport, &Script::correct_run());
        let mut script = Script::new();
        script.at(100).on(R2, EventKind::StopCalled);
        script.start(R2, 1);
        script.end(R2, 1, EndKind::StoppedBeforeStart, 0);
        script.on(R2, EventKind::Restarted);
        script.start(R2, 2);
        script.acquire(R2, 3);
        script.renew_lost(R2, 3, Answer::Failed(Failure::Rejected));
        script.release(R2, 3);
        script.end(R2, 2, EndKind::LostByError, 0);
        assert_holds(Invariant::TermReport, &script);
    }

    #[test]
    fn term_report_breaks_on_wrong_rows_and_on_an_unexplained_end() {
        let mut script = Script::new();
        leading(&mut script);
        answered(&mut script, R1, 200, Answer::Rows(200));
        script.release(R1, 1);
        let seq = script.at(3000).end(R1, 2, EndKind::Drained, 250);
        let words = [
            "r1's term 2 reported at t=3000ms that it ended (drained) after 250 rows",
            "its deletes answered 200 rows",
        ];
        assert_broken(Invariant::TermReport, &script, seq, &words);
        let mut script = Script::new();
        leading(&mut script);
        answered(&mut script, R1, 200, Answer::Rows(200));
        script.release(R1, 1);
        let seq = script.at(3000).end(R1, 2, EndKind::CapReached, 200);
        let words = [
            "ended (cap reached) after 200 rows, but its deletes answered fewer rows than the cap",
        ];
        assert_broken(Invariant::TermReport, &script, seq, &words);
        let mut script = Script::new();
        script.start(R1, 1);
        script.acquire(R1, 1);
        script.renew(R1, 1, 2);
        script.release(R1, 2);
        let seq = script.end(R1, 1, EndKind::LostByNone, 0);
        assert_broken(
            Invariant::TermReport,
            &script,
            seq,
            &["no renewal answered None"],
        );
    }
}
