//! What an attempt's report says against what happened: `attempt-report`.
//!
//! Terminology:
//! - *attempt*: a replica's `run()`, from `AttemptStarted` to `AttemptEnded` (whose fields
//!   are the report's).
//! - *trust*: the worker trusts its claim for the trusted time on its own timer from the send
//!   of its create, then of each renewal answered `renewed`; in virtual time that lasts
//!   [`leasesim_events::virtual_span_ms`] of the trusted time on the replica's drifting clock.
//!   The trust has *passed* at an instant at or after its start plus that span; it *ran
//!   out* during the attempt if it had passed when a renewal's answer came (a renewal
//!   granted too late does not take that back), or at the attempt's end.
//! - *evidence*: what must have happened for each reported end. `job done` / `job failed`:
//!   the job finished / failed; `stopped`: the replica's `stop()` was called; `lost (renewal
//!   refused)`: a renewal of the claim answered `not holder` or `absent`; `lost (renewal
//!   failed)`: one answered an error; `lost (not renewed in time)` and `too late`: the trust
//!   had passed (for `too late`, when the create's answer came); `not holder` / `create
//!   failed`: the create answered `exists` / an error. And the renewal count is the number of
//!   renewals of the claim answered `renewed`.
//!
//! Once the job ended (done or failed), that is the attempt's end, whatever came with it (a
//! stop, a refused renewal): the report must not hide a finished job.
//!
//! A report that claims an end without its evidence hides what happened from the people who
//! read it (a job given up that the report calls done, a healthy job cut short that it calls
//! lost) and, worse, an attempt that ends for a made-up reason ran less than it could: a job
//! never started, a claim dropped at its first renewal.

use leasesim_events::{ReplicaId, mask, virtual_span_ms};
use leasesim_invariants::{At, PerReplica};

use crate::HolderLock;
use crate::events::{Answer, EndKind, Event, EventKind, Key, Note, Request, Stamped, notes};
use crate::render::end_name;

use super::facts::Facts;
use super::{CheckConfig, Checker, Invariant, Violation};

/// What one replica's open attempt showed so far.
#[derive(Debug, Default)]
struct Shown {
    started: Option<Stamped<Event>>,
    /// The create's call id, and the instant the trust started (the create's send, then the
    /// send of the last renewal answered `renewed`).
    create: Option<u64>,
    trust_from_ms: Option<u64>,
    /// The create's answer, and when it came.
    created: Option<(Answer, u64)>,
    /// Renewals of the claim in flight: call id and send instant.
    renewing: Vec<(u64, u64)>,
    renewals: u32,
    /// The trust in force had passed when a renewal was answered.
    trust_ran_out: bool,
    refused: bool,
    renewal_failed: bool,
    job_done: bool,
    job_failed: bool,
}

/// One replica's incarnation: its stop, and its open attempt.
#[derive(Debug, Default)]
struct Replica {
    stopped: bool,
    shown: Shown,
}

/// `attempt-report`: each attempt's reported end has its evidence, and its renewal count is
/// what the store answered (see the module docs).
#[derive(Debug)]
pub struct AttemptReport {
    trusted_ms: u64,
    drift_ppm: Vec<i64>,
    replicas: PerReplica<Replica>,
}

impl AttemptReport {
    pub fn new(config: &CheckConfig) -> AttemptReport {
        AttemptReport {
            trusted_ms: config.trusted_ms,
            drift_ppm: config.drift_ppm.clone(),
            replicas: PerReplica::default(),
        }
    }

    /// How long `replica`'s trust lasts in virtual time.
    fn trust_span_ms(&self, replica: ReplicaId) -> u64 {
        let drift_ppm = self.drift_ppm.get(replica.index()).copied().unwrap_or(0);
        virtual_span_ms(drift_ppm, self.trusted_ms)
    }

    /// Has `replica`'s trust, started at `from_ms`, passed at `at_ms`?
    fn trust_passed(&self, replica: ReplicaId, from_ms: Option<u64>, at_ms: u64) -> bool {
        passed(from_ms, self.trust_span_ms(replica), at_ms)
    }

    /// Follows the worker's side of `replica`'s attempt through `event`.
    fn follow(&mut self, replica: ReplicaId, event: &Stamped<Event>) {
        let at_ms = event.at_ms;
        let span_ms = self.trust_span_ms(replica);
        let state = self.replicas.at(replica);
        let shown = &mut state.shown;
        match event.event.kind {
            EventKind::Note(Note::AttemptStarted { .. }) => {
                *shown = Shown {
                    started: Some(event.clone()),
                    ..Shown::default()
                };
            }
            EventKind::Restarted => *state = Replica::default(),
            EventKind::StopCalled => state.stopped = true,
            EventKind::Note(Note::JobFinished { .. }) => shown.job_done = true,
            EventKind::Note(Note::JobFailed { .. }) => shown.job_failed = true,
            EventKind::Call { call, request } => match request {
                Request::Create {
                    key: Key::Claim, ..
                } if shown.create.is_none() => {
                    shown.create = Some(call);
                    shown.trust_from_ms = Some(at_ms);
                }
                Request::Renew {
                    key: Key::Claim, ..
                } => shown.renewing.push((call, at_ms)),
                _ => {}
            },
            EventKind::Answered { call, answer, .. } => {
                if shown.create == Some(call) {
                    shown.created = Some((answer, at_ms));
                }
                let Some(index) = shown.renewing.iter().position(|(c, _)| *c == call) else {
                    return;
                };
                let (_, sent_ms) = shown.renewing.swap_remove(index);
                shown.trust_ran_out |= passed(shown.trust_from_ms, span_ms, at_ms);
                match answer {
                    Answer::Renewed => {
                        shown.renewals += 1;
                        shown.trust_from_ms = Some(sent_ms);
                    }
                    Answer::NotHolder | Answer::Absent => shown.refused = true,
                    Answer::Failed(_) => shown.renewal_failed = true,
                    _ => {}
                }
            }
            _ => {}
        }
    }

    /// Why the reported `end` lacks its evidence, if it does.
    fn unsupported(&self, replica: ReplicaId, end: EndKind, at_ms: u64) -> Option<String> {
        let state = self.replicas.get(replica)?;
        let shown = &state.shown;
        let created = shown.created.map(|(answer, _)| answer);
        let job_ended = shown.job_done || shown.job_failed;
        if job_ended && !matches!(end, EndKind::JobDone | EndKind::JobFailed) {
            return Some("its job had already ended, and an ended job is what it reports".into());
        }
        let missing = match end {
            EndKind::JobDone if !shown.job_done => "its job never finished",
            EndKind::JobFailed if !shown.job_failed => "its job never failed",
            EndKind::Stopped if !state.stopped => "its stop() was never called",
            EndKind::LostRefused if !shown.refused => {
                "no renewal of its claim answered not holder or absent"
            }
            EndKind::LostFailed if !shown.renewal_failed => "no renewal of its claim failed",
            EndKind::LostNotRenewed
                if !shown.trust_ran_out
                    && !self.trust_passed(replica, shown.trust_from_ms, at_ms) =>
            {
                "its trusted time had not run out"
            }
            EndKind::TooLate => {
                let answered_ms = shown.created.map_or(0, |(_, at)| at);
                if self.trust_passed(replica, shown.trust_from_ms, answered_ms) {
                    return None;
                }
                "its create was answered within its trusted time"
            }
            EndKind::NotHolder if created != Some(Answer::Exists) => {
                "its create was not answered exists"
            }
            EndKind::CreateFailed if !matches!(created, Some(Answer::Failed(_))) => {
                "its create did not fail"
            }
            _ => return None,
        };
        Some(missing.to_string())
    }
}

/// Has a trust started at `from_ms` and lasting `span_ms` passed at `at_ms`?
fn passed(from_ms: Option<u64>, span_ms: u64, at_ms: u64) -> bool {
    from_ms.is_some_and(|from_ms| at_ms >= from_ms.saturating_add(span_ms))
}

impl Checker<HolderLock> for AttemptReport {
    fn invariant(&self) -> Invariant {
        Invariant::AttemptReport
    }

    fn wants(&self, kind: &EventKind) -> bool {
        let wanted = mask::CALL
            | mask::ANSWERED
            | mask::STOP_CALLED
            | mask::RESTARTED
            | notes::ATTEMPTS
            | notes::JOB;
        kind.bit() & wanted != 0
    }

    fn on_event(&mut self, event: &Stamped<Event>, _facts: &Facts) -> Option<Violation> {
        let replica = event.event.replica?;
        let EventKind::Note(Note::AttemptEnded {
            attempt,
            end,
            renewals,
            ..
        }) = event.event.kind
        else {
            self.follow(replica, event);
            return None;
        };
        let counted = self.replicas.get(replica).map_or(0, |r| r.shown.renewals);
        let why = match self.unsupported(replica, end, event.at_ms) {
            Some(missing) => format!("it reported {} but {missing}", end_name(end)),
            None if renewals != counted => format!(
                "it reported {renewals} renewals but {counted} of its claim were answered renewed"
            ),
            None => return None,
        };
        let started = self.replicas.get(replica)?.shown.started.clone();
        let sentence = format!(
            "{replica}'s attempt {attempt} ended at {}: {why}",
            At(event.at_ms)
        );
        Some(Violation::new(
            Invariant::AttemptReport,
            event,
            [started.as_ref()],
            sentence,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkers::testkit::{
        R1, Script, TRUSTED_MS, assert_broken, assert_holds, config, failed,
    };
    use crate::events::{Held, ReleaseKind};

    /// r1's attempt 1 at t=100: its create (token 7) wins, the job starts.
    fn holding() -> Script {
        let mut s = Script::new();
        s.at(100).start(R1, 1);
        s.create(R1, 7);
        s.note(
            R1,
            Note::JobStarted {
                duration_ms: 400,
                steps: 2,
            },
        );
        s
    }

    fn released(s: &mut Script) {
        s.release(R1, 7, Held { token: 7, by: R1 });
    }

    #[test]
    fn a_report_with_its_evidence_holds() {
        assert_holds(Invariant::AttemptReport, &Script::correct_run());
        let mut stopped = holding();
        stopped.on(R1, EventKind::StopCalled);
        released(&mut stopped);
        stopped.end(R1, 1, EndKind::Stopped, ReleaseKind::Deleted, 0);
        assert_holds(Invariant::AttemptReport, &stopped);
        let mut refused = holding();
        refused.renew_refused(R1, 7, None);
        refused.end(R1, 1, EndKind::LostRefused, ReleaseKind::None, 0);
        assert_holds(Invariant::AttemptReport, &refused);
    }

    /// A job that ended before a stop came: the report names the job's end.
    #[test]
    fn an_ended_job_reported_as_stopped_breaks_attempt_report() {
        let mut s = holding();
        s.note(R1, Note::JobFinished { steps: 2 });
        s.on(R1, EventKind::StopCalled);
        released(&mut s);
        let seq = s.end(R1, 1, EndKind::Stopped, ReleaseKind::Deleted, 0);
        let words = ["it reported stopped but its job had already ended"];
        assert_broken(Invariant::AttemptReport, &s, seq, &words);
    }

    /// Each end without what it claims, at the attempt's end.
    #[test]
    fn an_end_without_its_evidence_breaks_attempt_report() {
        let cases = [
            (EndKind::JobDone, "its job never finished"),
            (EndKind::Stopped, "its stop() was never called"),
            (
                EndKind::LostRefused,
                "no renewal of its claim answered not holder",
            ),
            (EndKind::LostFailed, "no renewal of its claim failed"),
            (EndKind::LostNotRenewed, "its trusted time had not run out"),
            (
                EndKind::TooLate,
                "its create was answered within its trusted time",
            ),
            (EndKind::NotHolder, "its create was not answered exists"),
        ];
        for (end, words) in cases {
            let mut s = holding();
            s.at(300);
            released(&mut s);
            let seq = s.end(R1, 1, end, ReleaseKind::Deleted, 0);
            assert_broken(Invariant::AttemptReport, &s, seq, &[words]);
        }
    }

    #[test]
    fn the_renewal_count_is_the_renewals_answered_renewed() {
        // Two renewals granted, a third failed; the attempt ends reporting `reported`.
        let ended = |reported: u32| {
            let mut s = holding();
            s.renew(R1, 7);
            s.renew(R1, 7);
            let renewal = Request::Renew {
                key: Key::Claim,
                token: 7,
                lifetime_ms: 1_000,
            };
            let call = s.send(R1, renewal);
            s.answer(R1, call, crate::events::Op::Renew, failed());
            let kinds = (EndKind::LostFailed, ReleaseKind::Deleted);
            let seq = s.end_reporting(R1, 1, kinds, 0, reported);
            (s, seq)
        };
        let (wrong, seq) = ended(3);
        let words = ["it reported 3 renewals but 2 of its claim were answered renewed"];
        assert_broken(Invariant::AttemptReport, &wrong, seq, &words);
        assert_holds(Invariant::AttemptReport, &ended(2).0);
    }

    /// The trust from the create (sent at t=100) passes at t=100+TRUSTED_MS; a renewal sent
    /// before that and granted only after it does not take the passing back.
    #[test]
    fn a_trust_that_ran_out_while_a_renewal_flew_is_evidence_of_a_lost_claim() {
        let mut s = holding();
        let renewal = Request::Renew {
            key: Key::Claim,
            token: 7,
            lifetime_ms: 1_000,
        };
        let call = s.at(600).send(R1, renewal);
        s.at(100 + TRUSTED_MS + 5)
            .answer(R1, call, crate::events::Op::Renew, Answer::Renewed);
        released(&mut s);
        s.end(R1, 1, EndKind::LostNotRenewed, ReleaseKind::Deleted, 0);
        assert_holds(Invariant::AttemptReport, &s);
        // On a clock drifting -50%, the same trust lasts twice as long: not run out then.
        let slow = CheckConfig {
            drift_ppm: vec![-500_000],
            ..config()
        };
        let verdict = crate::checkers::testkit::check_with(Invariant::AttemptReport, &slow, &s);
        assert!(verdict.is_some_and(|v| v.sentence.contains("had not run out")));
    }

    #[test]
    fn a_stopping_holder_that_waits_for_its_jobs_next_step_breaks_stop_prompt() {
        let mut s = holding();
        s.at(200).on(R1, EventKind::StopCalled);
        let release = Request::DeleteIfHolder {
            key: Key::Claim,
            token: 7,
        };
        s.at(250).send(R1, release);
        let seq = s.events.last().map_or(0, |e| e.seq);
        let words = ["r1 sent delete_if_holder at t=250ms while stopping, 50ms after its stop()"];
        assert_broken(Invariant::StopPrompt, &s, seq, &words);
        let mut prompt = holding();
        prompt.at(200).on(R1, EventKind::StopCalled);
        released(&mut prompt);
        assert_holds(Invariant::StopPrompt, &prompt);
    }
}
