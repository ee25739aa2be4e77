//! How the reservation system's events read in a trace line and draw on a timeline.
//!
//! Terminology:
//! - *texts*: the system's part of a trace line (`claim_expired limit=8 now=store token=4`,
//!   `expired #7 (deadline +5000ms)`); the shared part (time, replica, `->`, `applied #N:`,
//!   `<-`, faults, stops) is written by `leasesim`'s trace renderer.
//! - *annotations*: a line of its own when a worker claims a reservation another worker's
//!   expired claim still names (a takeover), and the deadline a consume raced.
//! - *timeline*: claims on the first row, releases on the third, transitions on the effect row,
//!   dead letters on the second. Marks reuse the shared drawing vocabulary: an expired hold is
//!   drawn as a `Delete`, a state conflict as a `RefusedDelete`, a consume on the world row as
//!   a `Revoked`, a release that freed nothing as `FreedNothing`, a dead letter as a `Backlog`
//!   mark, a kill as a `StopCalled`; a batch of claims is a held token from its claim's answer
//!   to the worker's next claim. The legend and hover texts name them in this system's words
//!   ([`TIMELINE_WORDS`]).

use leasesim_events::{OpSet, ReplicaId};
use leasesim_timeline::{
    Annotator, CallStyle, CallWords, Draw, MarkKind, MarkWords, Render, Words,
};

use crate::Reservations;
use crate::events::{
    Answer, Applied, ClockMs, EndView, Event, EventKind, Failure, LetterView, MetricsView, Note,
    Op, OutcomeView, ReasonView, ReportView, Request,
};

fn now_text(now: Option<u64>) -> String {
    match now {
        None => "now=store".into(),
        Some(ms) => format!("now={}", ClockMs(ms)),
    }
}

fn reason_text(reason: ReasonView) -> String {
    match reason {
        ReasonView::NotRetryable(class) => format!("not retryable ({})", class.name()),
        ReasonView::BudgetExhausted => "retry budget exhausted".into(),
    }
}

fn letter_text(letter: &LetterView) -> String {
    let replay = letter.replay_id.map_or_else(
        || "names no reservation".into(),
        |id| format!("names h{id}"),
    );
    format!(
        "dead_letter h{} reason={} attempts={} first_seen={} last_error={} replay {replay}",
        letter.id,
        reason_text(letter.reason),
        letter.attempts,
        ClockMs(letter.first_seen_ms),
        letter.last_error.name()
    )
}

/// How reservation events read in a trace and draw on a timeline.
impl Render for Reservations {
    const WORDS: &'static Words = &TIMELINE_WORDS;
    type Annotator = Annotations;

    fn request_text(request: &Request) -> String {
        match *request {
            Request::Claim {
                limit,
                now,
                token,
                claim_for_ms,
            } => format!(
                "claim_expired limit={limit} {} token={token} for={claim_for_ms}ms",
                now_text(now)
            ),
            Request::Expire { id, now } => format!("expire_if_held h{id} {}", now_text(now)),
            Request::Release { id, token } => format!("release_claim h{id} token={token}"),
            Request::DeadLetter { letter } => letter_text(&letter),
            Request::ExpireById { id } => format!("expire_by_id h{id} (no guard)"),
            Request::ReadDue { limit, now } => format!("read_due limit={limit} {}", now_text(now)),
            Request::WriteClaim {
                id,
                token,
                claim_for_ms,
            } => format!("write_claim h{id} token={token} for={claim_for_ms}ms (plain write)"),
            Request::ReleaseAny { id } => format!("release_any h{id} (no token)"),
        }
    }

    fn applied_text(applied: &Applied) -> String {
        match *applied {
            Applied::Claimed { ids, token, .. } if ids.is_empty() => {
                format!("nothing due and unclaimed (token {token} unused)")
            }
            Applied::Claimed {
                ids,
                token,
                until_ms,
            } => format!(
                "claimed {ids} with token {token} until {}",
                ClockMs(until_ms)
            ),
            Applied::Expired { id, hold_until_ms } => {
                format!("expired h{id} (deadline {})", ClockMs(hold_until_ms))
            }
            Applied::AlreadyDone { id } => format!("h{id} already expired: nothing changed"),
            Applied::NotEligible {
                id,
                status,
                hold_until_ms,
            } => format!(
                "h{id} not eligible ({}, deadline {}): nothing changed",
                status.name(),
                ClockMs(hold_until_ms)
            ),
            Applied::Invalid { id } => format!("h{id}: malformed record, refused"),
            Applied::Unknown { id } => format!("h{id}: no such reservation"),
            Applied::StoreTimeout => "statement timed out (fault): nothing applied".into(),
            Applied::Released { id, token, freed } => match freed {
                true => format!("released h{id} (token {token})"),
                false => format!("h{id} not released: its claim is not token {token}"),
            },
            Applied::Parked { id } => format!("dead letter recorded, h{id} parked"),
            Applied::ExpiredById { id, was } => {
                format!("set h{id} to expired by id alone (it was {})", was.name())
            }
            Applied::DueRead { ids } => format!("due and unclaimed: {ids} (nothing claimed)"),
            Applied::ClaimWritten {
                id,
                token,
                until_ms,
                replaced,
            } => {
                let over = replaced.map_or(String::new(), |t| format!(", over live token {t}"));
                format!(
                    "wrote claim of h{id} token {token} until {}{over}",
                    ClockMs(until_ms)
                )
            }
            Applied::ReleasedAny { id, freed } => match freed {
                Some(token) => format!("freed h{id}'s claim (token {token}), whoever's it was"),
                None => format!("h{id} had no claim"),
            },
        }
    }

    fn answer_text(answer: &Answer) -> String {
        match *answer {
            Answer::Claimed { ids, .. } if ids.is_empty() => "nothing due".into(),
            Answer::Claimed { ids, .. } => format!("claimed {ids}"),
            Answer::Expire(OutcomeView::Expired) => "expired".into(),
            Answer::Expire(OutcomeView::AlreadyDone) => "already-done".into(),
            Answer::Expire(OutcomeView::NotEligible) => "not-eligible".into(),
            Answer::Released => "ok".into(),
            Answer::Recorded => "recorded".into(),
            Answer::Due(ids) => format!("due {ids}"),
            Answer::Written => "written".into(),
            Answer::Failed(failure) => format!("error: {}", failure_name(failure)),
        }
    }

    fn note_text(note: &Note) -> String {
        match note {
            Note::Placed {
                id,
                hold_until_ms,
                malformed,
            } => {
                let bad = if *malformed {
                    " (malformed record, fault)"
                } else {
                    ""
                };
                format!(
                    "agent places h{id}, due at {}{bad}",
                    ClockMs(*hold_until_ms)
                )
            }
            Note::Consumed { id, hold_until_ms } => {
                format!(
                    "agent consumes h{id} (deadline {})",
                    ClockMs(*hold_until_ms)
                )
            }
            Note::ConsumeRefused { id, status } => {
                format!("agent cannot consume h{id}: it is {}", status.name())
            }
            Note::RunStarted { run } => format!("run() {run} begins"),
            Note::RunEnded { run, report } => format!("run() {run} ends, {}", report_text(report)),
            Note::SecondRun { run, end } => format!(
                "** supervisor calls run() again while run() {run} is active (fault): {}",
                end_name(*end)
            ),
            Note::Killed => {
                "** process killed (fault): after the update, before the release".into()
            }
            Note::Metrics(metrics) => metrics_text(metrics),
            Note::Construction(finding) => format!("** construction: {finding}"),
        }
    }

    fn note_name(note: &Note) -> &'static str {
        match note {
            Note::Placed { .. } => "placed",
            Note::Consumed { .. } => "consumed",
            Note::ConsumeRefused { .. } => "consume-refused",
            Note::RunStarted { .. } => "run-started",
            Note::RunEnded { .. } => "run-ended",
            Note::SecondRun { .. } => "second-run",
            Note::Killed => "killed",
            Note::Metrics(_) => "metrics",
            Note::Construction(_) => "construction",
        }
    }

    fn answer_is_error(answer: &Answer) -> bool {
        matches!(answer, Answer::Failed(_))
    }

    /// Claims on the first row, dead letters on the second, releases on the third, transitions on
    /// the effect row.
    fn call_style(op: Op) -> CallStyle {
        let (row, class) = match op {
            Op::Claim => (0, "ca"),
            Op::DeadLetter => (1, "cr"),
            Op::Release => (2, "cl"),
            Op::Expire => (3, "cd"),
        };
        CallStyle {
            row,
            class,
            name: op.name(),
        }
    }

    /// What the system's parts of an event draw (see the module docs).
    fn draws(event: &Event, out: &mut Vec<Draw>) {
        let mark = |kind, rows| Draw::Mark { kind, rows };
        match event.kind {
            EventKind::Applied {
                applied: Applied::Claimed { ids, token, .. },
                ..
            } if !ids.is_empty() => out.push(Draw::HoldStart { token }),
            EventKind::Applied { applied, .. } => {
                out.extend(applied_mark(&applied).map(|k| mark(k, 1)))
            }
            EventKind::Call { request, .. } if request.is_poll() => {
                out.push(Draw::HoldEnd { lost: false });
            }
            EventKind::Note(Note::Consumed { .. }) => out.push(mark(MarkKind::Revoked, 0)),
            EventKind::Note(Note::Killed) => {
                out.push(mark(MarkKind::StopCalled, 0));
                out.push(Draw::HoldEnd { lost: true });
            }
            EventKind::Note(Note::RunEnded { .. }) => out.push(Draw::HoldEnd { lost: false }),
            _ => {}
        }
    }
}

fn failure_name(failure: Failure) -> &'static str {
    match failure {
        Failure::Rejected => "connection (rejected)",
        Failure::Timeout => "timeout",
        Failure::StoreTimeout => "timeout (store)",
        Failure::Invalid => "invalid",
    }
}

fn end_name(end: EndView) -> &'static str {
    match end {
        EndView::StoppedBeforeStart => "stopped before start",
        EndView::Stopped => "stopped",
        EndView::AlreadyRunning => "refused (already running)",
    }
}

fn report_text(report: &ReportView) -> String {
    format!(
        "{}: {} polls, {} claimed, {} expired, {} already-done, {} not-eligible, {} retries, {} \
         dead letters, max claim age {}ms",
        end_name(report.end),
        report.polls,
        report.claimed,
        report.expired,
        report.already_done,
        report.not_eligible,
        report.retries,
        report.dead_letters,
        report.max_claim_age_ms
    )
}

fn metrics_text(metrics: &MetricsView) -> String {
    let oldest = metrics
        .oldest_unclaimed_eligible_ms
        .map_or_else(|| "none".into(), |ms| format!("{ms}ms overdue"));
    format!(
        "metrics: {} claimed, max claim age {}ms, {} duplicate attempts, {} state conflicts, {} \
         dead letters, oldest unclaimed eligible: {oldest}, {} due and held",
        metrics.claimed,
        metrics.max_claim_age_ms,
        metrics.duplicate_attempts,
        metrics.state_conflicts,
        metrics.dead_letters,
        metrics.due_held
    )
}

/// Per trace: the latest claim on each reservation, to annotate a takeover.
#[derive(Default)]
pub struct Annotations {
    /// By reservation id: the replica and token of its latest claim.
    claims: Vec<Option<(ReplicaId, u64)>>,
}

impl Annotations {
    /// Records `to`'s claim of `id`; the claim it took over from another replica, if any.
    fn claim(&mut self, id: u32, to: ReplicaId, token: u64) -> Option<(ReplicaId, u64)> {
        let index = id as usize;
        if self.claims.len() <= index {
            self.claims.resize(index + 1, None);
        }
        let before = self.claims[index].replace((to, token));
        before.filter(|(from, _)| *from != to)
    }

    /// One line per previous holder: `** h2 h3 pass from r1 (token 1) to r2 (token 2)`.
    fn takeovers(&mut self, ids: &[u32], to: ReplicaId, token: u64) -> Option<String> {
        let mut from: Vec<((ReplicaId, u64), Vec<String>)> = Vec::new();
        for &id in ids {
            let Some(previous) = self.claim(id, to, token) else {
                continue;
            };
            match from.iter_mut().find(|(holder, _)| *holder == previous) {
                Some((_, moved)) => moved.push(format!("h{id}")),
                None => from.push((previous, vec![format!("h{id}")])),
            }
        }
        let lines: Vec<String> = from
            .into_iter()
            .map(|((replica, old), moved)| {
                let verb = if moved.len() == 1 { "passes" } else { "pass" };
                format!(
                    "** {} {verb} from {replica} (token {old}) to {to} (token {token})",
                    moved.join(" ")
                )
            })
            .collect();
        (!lines.is_empty()).then(|| lines.join("\n                    "))
    }
}

impl Annotator<Reservations> for Annotations {
    fn note(&mut self, event: &Event) -> Option<String> {
        let to = event.replica?;
        match event.kind {
            EventKind::Applied {
                applied: Applied::Claimed { ids, token, .. },
                ..
            } => self.takeovers(ids.as_slice(), to, token),
            EventKind::Applied {
                applied: Applied::ClaimWritten { id, token, .. },
                ..
            } => self.takeovers(&[id], to, token),
            _ => None,
        }
    }
}

fn applied_mark(applied: &Applied) -> Option<MarkKind> {
    let kind = match applied {
        Applied::Expired { .. } => MarkKind::Delete,
        Applied::ExpiredById { .. } => MarkKind::StaleDelete,
        Applied::AlreadyDone { .. } | Applied::NotEligible { .. } | Applied::Invalid { .. } => {
            MarkKind::RefusedDelete
        }
        Applied::Released { freed: true, .. } | Applied::ReleasedAny { freed: Some(_), .. } => {
            MarkKind::Release
        }
        Applied::Released { freed: false, .. } => MarkKind::FreedNothing,
        Applied::Parked { .. } => MarkKind::Backlog,
        Applied::ClaimWritten {
            replaced: Some(_), ..
        } => MarkKind::Takeover,
        _ => return None,
    };
    Some(kind)
}

/// What this system's timeline pieces are called: the meaning `call_style` and `draws` give
/// the shared classes and mark kinds. Kinds drawn the same for every system (rejections, lost
/// replies, stop returns, restarts, clock jumps) and a release that freed nothing keep the
/// shared words.
pub const TIMELINE_WORDS: Words = Words {
    held: "batch claimed, labelled with its claim token (t7: token 7)",
    held_token: "claim token",
    held_lost: "process killed",
    calls: &[
        CallWords {
            class: "ca",
            label: "claim call",
        },
        CallWords {
            class: "cr",
            label: "dead_letter call",
        },
        CallWords {
            class: "cl",
            label: "release_claim call",
        },
        CallWords {
            class: "cd",
            label: "expire call",
        },
    ],
    marks: &[
        MarkWords {
            kind: MarkKind::Delete,
            noun: "expiry",
            legend: "reservation expired (count)",
            count: "{n} expired",
            label: "{n}",
        },
        MarkWords {
            kind: MarkKind::StaleDelete,
            noun: "unguarded expiry",
            legend: "reservation expired by id alone, with NO GUARD",
            count: "{n} expired",
            label: "{n}",
        },
        MarkWords::plain(
            MarkKind::RefusedDelete,
            "state conflict",
            "expire refused: already expired, not eligible or malformed",
        ),
        MarkWords::plain(MarkKind::Release, "release", "release freed the claim"),
        MarkWords::plain(
            MarkKind::Takeover,
            "claim overwrite",
            "plain claim write over a LIVE claim",
        ),
        MarkWords::plain(
            MarkKind::StopCalled,
            "stop called or kill",
            "stop() called, or process killed (fault)",
        ),
        MarkWords::plain(MarkKind::Revoked, "consume", "agent consumed a reservation"),
        MarkWords::plain(
            MarkKind::Backlog,
            "dead letter",
            "dead letter recorded, reservation parked",
        ),
    ],
    drawn: Some(&[
        MarkKind::Delete,
        MarkKind::StaleDelete,
        MarkKind::RefusedDelete,
        MarkKind::Release,
        MarkKind::FreedNothing,
        MarkKind::Takeover,
        MarkKind::Rejected,
        MarkKind::RequestLost,
        MarkKind::ReplyLost,
        MarkKind::StopCalled,
        MarkKind::StopResolved,
        MarkKind::Restarted,
        MarkKind::ClockJump,
        MarkKind::Revoked,
        MarkKind::Backlog,
    ]),
};
