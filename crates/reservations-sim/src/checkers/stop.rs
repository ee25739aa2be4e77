//! Stopping: `stop-quiesces`, `stop-joins`; and the run's own account: `run-report`.
//!
//! Terminology:
//! - *new work*: a claim (or a read of due ids, or a claim write) and a transition. Releases
//!   and dead letters are the tail of work already held, allowed after a stop.
//! - *settled stop*: at `StopResolved` the replica has no call pending, no run open (a kill
//!   closes a run too) and holds no claim it has not released.
//! - *run counts*: what a run's calls and answers add up to between `RunStarted` and
//!   `RunEnded`, compared with the report the run returned.
//! - *second run*: a `run()` a supervisor calls while one is active (the `second_run`
//!   fault, note `SecondRun`); the worker must refuse it at once.

use leasesim_events::mask;
use leasesim_invariants::{At, Checker, PerReplica, Violation};

use super::Facts;
use super::track::{Desk, Stamp};
use super::{Invariant, WORKER_EVENTS};
use crate::Reservations;
use crate::events::{Answer, EndView, EventKind, Note, OutcomeView, ReportView, Request};

type Found = Option<Violation<Reservations>>;

/// Runs `judge` on the event's replica's desk as it was before the event.
fn on_desk(facts: &Facts, event: &Stamp, judge: impl FnOnce(&Desk) -> Found) -> Found {
    judge(facts.desk(event.event.replica?))
}

/// `stop-quiesces`: no claim and no transition after `stop()`.
#[derive(Debug, Default)]
pub struct StopQuiesces {}

impl Checker<Reservations> for StopQuiesces {
    fn invariant(&self) -> Invariant {
        Invariant::StopQuiesces
    }

    /// Calls only (a call is judged; the facts follow the rest of the worker side).
    fn wants(&self, kind: &EventKind) -> bool {
        kind.bit() & mask::CALL != 0
    }

    fn on_event(&mut self, event: &Stamp, facts: &Facts) -> Found {
        on_desk(facts, event, |desk| {
            let EventKind::Call { request, .. } = event.event.kind else {
                return None;
            };
            let new_work = request.is_poll()
                || request.is_expire()
                || matches!(request, Request::WriteClaim { .. });
            let stop = desk.stop.as_ref().filter(|_| new_work)?;
            let replica = event.event.replica?;
            let sentence = format!(
                "{replica} sent {} at {}, after its stop() was called at {}",
                <crate::Reservations as leasesim_timeline::Render>::request_text(&request),
                At(event.at_ms),
                At(stop.at_ms)
            );
            Some(Violation::new(
                Invariant::StopQuiesces,
                event,
                [Some(stop)],
                sentence,
            ))
        })
    }
}

/// `stop-joins`: `stop()` returns only once the replica settled.
#[derive(Debug, Default)]
pub struct StopJoins {}

fn unsettled(desk: &Desk) -> Option<(String, Option<&Stamp>)> {
    if let Some((_, request, sent)) = desk.calls.first() {
        let what = format!(
            "its {} sent at {} was unanswered",
            <crate::Reservations as leasesim_timeline::Render>::request_text(request),
            At(sent.at_ms)
        );
        return Some((what, Some(sent)));
    }
    if let Some(run) = &desk.run {
        return Some((
            format!("its run started at {} had not ended", At(run.at_ms)),
            Some(run),
        ));
    }
    let held = desk.claimed.first()?;
    let what = format!(
        "h{} claimed at {} was not released",
        held.id,
        At(held.answered.at_ms)
    );
    Some((what, Some(&held.answered)))
}

impl Checker<Reservations> for StopJoins {
    fn invariant(&self) -> Invariant {
        Invariant::StopJoins
    }

    /// A stop's return only (it is judged; the facts follow the rest).
    fn wants(&self, kind: &EventKind) -> bool {
        kind.bit() & mask::STOP_RESOLVED != 0
    }

    fn on_event(&mut self, event: &Stamp, facts: &Facts) -> Found {
        on_desk(facts, event, |desk| {
            if event.event.kind != EventKind::StopResolved {
                return None;
            }
            let (what, culprit) = unsettled(desk)?;
            let replica = event.event.replica?;
            let stop = desk.stop.as_ref();
            let sentence = format!(
                "{replica}'s stop() returned at {}, but {what}",
                At(event.at_ms)
            );
            let context = [stop, culprit];
            Some(Violation::new(
                Invariant::StopJoins,
                event,
                context,
                sentence,
            ))
        })
    }
}

/// What one run's calls and answers add up to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    polls: u32,
    claim_errors: u32,
    claimed: u32,
    expired: u32,
    already_done: u32,
    not_eligible: u32,
    retries: u32,
    dead_letters: u32,
    dead_letter_errors: u32,
    release_errors: u32,
}

impl Counts {
    fn of(report: &ReportView) -> Counts {
        Counts {
            polls: report.polls,
            claim_errors: report.claim_errors,
            claimed: report.claimed,
            expired: report.expired,
            already_done: report.already_done,
            not_eligible: report.not_eligible,
            retries: report.retries,
            dead_letters: report.dead_letters,
            dead_letter_errors: report.dead_letter_errors,
            release_errors: report.release_errors,
        }
    }

    fn sent(&mut self, desk: &Desk, request: Request) {
        if request.is_poll() {
            self.polls += 1;
        }
        if request.is_expire() {
            let tried = request
                .id()
                .and_then(|id| desk.claimed(id))
                .map(|h| h.attempts);
            self.retries += u32::from(tried.is_some_and(|attempts| attempts > 0));
        }
    }

    fn answered(&mut self, request: Request, answer: Answer) {
        let slot = match (request, answer) {
            (request, Answer::Failed(_)) if request.is_poll() => &mut self.claim_errors,
            (_, Answer::Claimed { ids, .. }) => {
                self.claimed += ids.len() as u32;
                return;
            }
            (Request::WriteClaim { .. }, Answer::Written) => &mut self.claimed,
            (_, Answer::Expire(OutcomeView::Expired)) => &mut self.expired,
            (_, Answer::Expire(OutcomeView::AlreadyDone)) => &mut self.already_done,
            (_, Answer::Expire(OutcomeView::NotEligible)) => &mut self.not_eligible,
            (Request::DeadLetter { .. }, Answer::Recorded) => &mut self.dead_letters,
            (Request::DeadLetter { .. }, Answer::Failed(_)) => &mut self.dead_letter_errors,
            (Request::Release { .. } | Request::ReleaseAny { .. }, Answer::Failed(_)) => {
                &mut self.release_errors
            }
            _ => return,
        };
        *slot += 1;
    }
}

/// `run-report`: the report a run returns matches its calls and answers.
#[derive(Debug, Default)]
pub struct RunReport {
    counts: PerReplica<Counts>,
}

impl RunReport {
    fn judge(&self, desk: &Desk, counts: Counts, event: &Stamp, report: &ReportView) -> Found {
        let told = Counts::of(report);
        let why = if told != counts {
            format!("it reports {told:?}, but its calls add up to {counts:?}")
        } else {
            match (report.end, &desk.stop) {
                (EndView::Stopped | EndView::StoppedBeforeStart, None) => {
                    "it reports a stop, but stop() was not called".to_string()
                }
                (EndView::StoppedBeforeStart, Some(_)) if counts.polls > 0 => {
                    "it reports it stopped before starting, but it polled".to_string()
                }
                _ => return None,
            }
        };
        let replica = event.event.replica?;
        let sentence = format!("{replica}'s run ended at {}: {why}", At(event.at_ms));
        let context = [desk.run.as_ref(), desk.stop.as_ref()];
        Some(Violation::new(
            Invariant::RunReport,
            event,
            context,
            sentence,
        ))
    }
}

/// A second `run()` while run `run` was active must be refused.
fn second_run(desk: &Desk, event: &Stamp, run: u32, end: EndView) -> Found {
    if end == EndView::AlreadyRunning {
        return None;
    }
    let replica = event.event.replica?;
    let sentence = format!(
        "{replica}'s second run() while run() {run} was active ended at {} as {end:?}: a \
         worker runs one run() at a time and refuses another at once",
        At(event.at_ms)
    );
    let context = [desk.run.as_ref()];
    Some(Violation::new(
        Invariant::RunReport,
        event,
        context,
        sentence,
    ))
}

impl Checker<Reservations> for RunReport {
    fn invariant(&self) -> Invariant {
        Invariant::RunReport
    }

    fn wants(&self, kind: &EventKind) -> bool {
        kind.bit() & WORKER_EVENTS != 0
    }

    fn on_event(&mut self, event: &Stamp, facts: &Facts) -> Found {
        let replica = event.event.replica?;
        let desk = facts.desk(replica);
        let counts = self.counts.at(replica);

        match event.event.kind {
            EventKind::Note(Note::RunStarted { .. }) => {
                *counts = Counts::default();
                None
            }
            EventKind::Call { request, .. } => {
                counts.sent(desk, request);
                None
            }
            EventKind::Answered { call, answer, .. } => {
                if let Some((_, request, _)) = desk.request(call) {
                    counts.answered(*request, answer);
                }
                None
            }
            EventKind::Note(Note::RunEnded { report, .. }) => {
                let counts = *counts;
                self.judge(desk, counts, event, &report)
            }
            EventKind::Note(Note::SecondRun { run, end }) => second_run(desk, event, run, end),
            _ => None,
        }
    }
}
