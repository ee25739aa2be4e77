//! How the holder-lock system's events read in a trace line and draw on a timeline.
//!
//! Terminology:
//! - *texts*: the system's part of a trace line (`create job:nightly-rollup token=00a3f9:4
//!   lifetime=3000ms`); the shared part (time, replica, `->`, `applied #N:`, `<-`) is
//!   `leasesim::trace`'s. Lifetime ends are shown relative to the start of the run.
//! - *annotations*: a line of its own when a claim passes from one replica to another, and
//!   when a delete removes a claim another replica made (the design's third worker walks in
//!   through that door).
//! - *strokes*: a claim the store made starts a held claim on the replica's lane (labelled
//!   with the token's serial), the attempt's end ends it; job steps are effects (drawn as
//!   deletes), a key running out is a revocation mark, a key the store forgot (eviction,
//!   failover, restart) a `RefusedDelete` mark, a release that freed nothing is
//!   `FreedNothing`, a delete of another replica's claim a `StaleDelete`. The legend and
//!   hover texts name them in this system's words ([`TIMELINE_WORDS`]).

use leasesim_events::{ClockMs, EventKind, NetFailure, OpSet, ReplicaId};
use leasesim_timeline::{
    Annotator, CallStyle, CallWords, Draw, MarkKind, MarkWords, Render, Words,
};

use crate::HolderLock;
use crate::events::{
    Answer, Applied, EndKind, Event, Forgetting, Held, Key, Note, Op, ReleaseKind, Request,
    TokenText,
};

fn token(value: u64) -> TokenText {
    TokenText(value)
}

fn held_text(held: Option<Held>) -> String {
    match held {
        Some(held) => format!("token {} ({}) holds it", token(held.token), held.by),
        None => "absent".into(),
    }
}

/// How holder-lock events read in a trace and draw on a timeline.
impl Render for HolderLock {
    const WORDS: &'static Words = &TIMELINE_WORDS;
    type Annotator = Handover;

    fn request_text(request: &Request) -> String {
        let name = request.op().name();
        let key = request.key().name();
        match *request {
            Request::Create {
                token: t,
                lifetime_ms,
                ..
            }
            | Request::Renew {
                token: t,
                lifetime_ms,
                ..
            }
            | Request::Set {
                token: t,
                lifetime_ms,
                ..
            } => format!("{name} {key} token={} lifetime={lifetime_ms}ms", token(t)),
            Request::DeleteIfHolder { token: t, .. } => format!("{name} {key} token={}", token(t)),
            Request::Get { .. } | Request::Delete { .. } => format!("{name} {key}"),
        }
    }

    fn applied_text(applied: &Applied) -> String {
        match *applied {
            Applied::Created {
                token: t,
                expires_at_ms,
                took_over,
                ..
            } => {
                let mut text = format!(
                    "created token={} until {}",
                    token(t),
                    ClockMs(expires_at_ms)
                );
                if let Some(old) = took_over {
                    let over = format!(
                        " (took over {}'s claim {}, run out)",
                        old.by,
                        token(old.token)
                    );
                    text.push_str(&over);
                }
                text
            }
            Applied::Exists { held, .. } => format!("exists: {}", held_text(Some(held))),
            Applied::Renewed {
                token: t,
                expires_at_ms,
                ..
            } => format!(
                "renewed token={} until {}",
                token(t),
                ClockMs(expires_at_ms)
            ),
            Applied::RenewRefused { held, .. } => format!("not renewed: {}", held_text(held)),
            Applied::Deleted {
                key: Key::Claim,
                removed,
            } => format!(
                "deleted {}'s claim token={}",
                removed.by,
                token(removed.token)
            ),
            Applied::Deleted { key, removed } => format!(
                "deleted {}'s token={} from {}",
                removed.by,
                token(removed.token),
                key.name()
            ),
            Applied::NotDeleted { held, .. } => format!("deleted nothing: {}", held_text(held)),
            Applied::Unsupported { .. } => "refused: this store has no compare-and-delete".into(),
            Applied::Read { held, .. } => format!("read: {}", held_text(held)),
            Applied::Written {
                token: t,
                expires_at_ms,
                replaced,
                ..
            } => {
                let mut text = format!("wrote token={} until {}", token(t), ClockMs(expires_at_ms));
                if let Some(old) = replaced {
                    text.push_str(&format!(" over {}'s token {}", old.by, token(old.token)));
                }
                text
            }
        }
    }

    fn answer_text(answer: &Answer) -> String {
        match answer {
            Answer::Created => "created".into(),
            Answer::Exists => "exists".into(),
            Answer::Renewed => "renewed".into(),
            Answer::Deleted => "deleted".into(),
            Answer::NotHolder => "not holder".into(),
            Answer::Absent => "absent".into(),
            Answer::Value(t) => format!("token={}", token(*t)),
            Answer::Written => "ok".into(),
            Answer::Unsupported => "error: unsupported".into(),
            Answer::Failed(NetFailure::Rejected) => "error: rejected".into(),
            Answer::Failed(NetFailure::Timeout) => "error: timeout".into(),
        }
    }

    /// The text of one of the system's notes.
    fn note_text(note: &Note) -> String {
        match *note {
            Note::AttemptStarted { attempt } => format!("run() attempt {attempt} begins"),
            Note::AttemptEnded {
                attempt,
                end,
                release,
                claims_gone,
                renewals,
            } => {
                let renewed = match renewals {
                    0 => String::new(),
                    1 => ", 1 renewal".to_string(),
                    n => format!(", {n} renewals"),
                };
                format!(
                    "run() attempt {attempt} ends: {}{renewed}{}",
                    end_name(end),
                    release_text(release, claims_gone)
                )
            }
            Note::JobStarted { duration_ms, steps } => {
                format!("job starts: {steps} steps, {duration_ms}ms")
            }
            Note::JobStep { step } => format!("job step {step}"),
            Note::JobFinished { steps } => format!("job done after {steps} steps"),
            Note::JobFailed { step } => format!("job fails at step {step} (fault)"),
            Note::Expired { key, held } => format!(
                "** {} runs out: {}'s token {} is gone",
                key.name(),
                held.by,
                token(held.token)
            ),
            Note::Forgot { key, cause, lost } => forgot_text(key, cause, lost),
            Note::Reverted {
                key,
                held,
                expires_at_ms,
            } => format!(
                "** {} holds {}'s token {} again, until {} (as before its last write)",
                key.name(),
                held.by,
                token(held.token),
                ClockMs(expires_at_ms)
            ),
            Note::SlowTimer { drift_ppm } => slow_timer_text(drift_ppm),
            Note::Construction(finding) => format!("** construction: {finding}"),
        }
    }

    /// A short stable name of a note, for per-kind counts.
    fn note_name(note: &Note) -> &'static str {
        match note {
            Note::AttemptStarted { .. } => "attempt-started",
            Note::AttemptEnded { .. } => "attempt-ended",
            Note::JobStarted { .. } => "job-started",
            Note::JobStep { .. } => "job-step",
            Note::JobFinished { .. } => "job-finished",
            Note::JobFailed { .. } => "job-failed",
            Note::Expired { .. } => "expired",
            Note::Forgot { .. } => "forgot",
            Note::Reverted { .. } => "reverted",
            Note::SlowTimer { .. } => "slow-timer",
            Note::Construction(_) => "construction",
        }
    }

    /// Is this answer an error of the store (not a network failure)?
    fn answer_is_error(answer: &Answer) -> bool {
        matches!(answer, Answer::Unsupported)
    }

    /// Creates on the first row, renewals and writes on the second, release calls on the third.
    fn call_style(op: Op) -> CallStyle {
        let (row, class) = match op {
            Op::Create => (0, "ca"),
            Op::Renew | Op::Set => (1, "cr"),
            Op::DeleteIfHolder | Op::Get | Op::Delete => (2, "cl"),
        };
        CallStyle {
            row,
            class,
            name: op.name(),
        }
    }

    /// What the system's parts of an event draw (see the module docs).
    fn draws(event: &Event, out: &mut Vec<Draw>) {
        let mark = |kind| Draw::Mark { kind, rows: 0 };
        match event.kind {
            EventKind::Applied { applied, .. } => match applied {
                Applied::Created {
                    key: Key::Claim,
                    token: t,
                    took_over,
                    ..
                } => {
                    if took_over.is_some() {
                        out.push(mark(MarkKind::Takeover));
                    }
                    // The lane shows the serial part of the token.
                    out.push(Draw::HoldStart {
                        token: t & 0xFFFF_FFFF,
                    });
                }
                Applied::Renewed { .. } => out.push(mark(MarkKind::Renewal)),
                Applied::RenewRefused { .. } => out.push(mark(MarkKind::RenewLost)),
                Applied::Deleted { removed, .. } if Some(removed.by) != event.replica => {
                    out.push(mark(MarkKind::StaleDelete));
                }
                Applied::Deleted { .. } => out.push(mark(MarkKind::Release)),
                Applied::NotDeleted { .. } => out.push(mark(MarkKind::FreedNothing)),
                _ => {}
            },
            EventKind::Note(Note::JobStep { .. }) => out.push(Draw::Mark {
                kind: MarkKind::Delete,
                rows: 1,
            }),
            EventKind::Note(Note::AttemptEnded { .. }) => out.push(Draw::HoldEnd { lost: false }),
            EventKind::Note(Note::Expired { .. }) => out.push(mark(MarkKind::Revoked)),
            EventKind::Note(Note::Forgot { .. }) => out.push(mark(MarkKind::RefusedDelete)),
            _ => {}
        }
    }
}

pub(crate) fn end_name(end: EndKind) -> &'static str {
    match end {
        EndKind::StoppedBeforeStart => "stopped before start",
        EndKind::NotHolder => "not holder",
        EndKind::CreateFailed => "create failed",
        EndKind::TooLate => "create answered too late, no job",
        EndKind::JobDone => "job done",
        EndKind::JobFailed => "job failed",
        EndKind::LostRefused => "claim lost (renewal refused)",
        EndKind::LostFailed => "claim lost (renewal failed)",
        EndKind::LostNotRenewed => "claim lost (not renewed in time)",
        EndKind::Stopped => "stopped",
        EndKind::AlreadyRunning => "refused (already running)",
    }
}

fn release_text(release: ReleaseKind, claims_gone: u64) -> String {
    match release {
        ReleaseKind::None => String::new(),
        ReleaseKind::Deleted => "; released".into(),
        ReleaseKind::LeftToExpire => "; claim left to run out".into(),
        ReleaseKind::GoneForeign => {
            format!("; the release found another token: claim gone (signal #{claims_gone})")
        }
        ReleaseKind::GoneAbsent => {
            format!("; the release found the key absent: claim gone (signal #{claims_gone})")
        }
        ReleaseKind::Failed => "; release failed".into(),
    }
}

/// `** evicted under memory pressure: job:nightly-rollup: r1's token 00a3f9:4 is gone`; a
/// failover names the write it lost (a `Reverted` line follows when the key holds something
/// again).
fn forgot_text(key: Key, cause: Forgetting, lost: Option<Held>) -> String {
    let name = key.name();
    let lost = lost.map(|held| format!("{}'s token {}", held.by, token(held.token)));
    match (cause, lost) {
        (Forgetting::Failover, Some(lost)) => format!(
            "** failover to a replica without the last write of {name}: {lost} as last written \
             is lost"
        ),
        (Forgetting::Failover, None) => format!(
            "** failover to a replica without the last write of {name} (it held nothing live)"
        ),
        (_, Some(lost)) => format!("** {}: {name}: {lost} is gone", cause.describe()),
        (_, None) => format!("** {}: {name} held nothing live", cause.describe()),
    }
}

/// `timers run slower than the store's clock: -150000 ppm (1000ms on them take 1177ms of
/// the store's)`.
fn slow_timer_text(drift_ppm: i64) -> String {
    let rate_ppm = u64::try_from(1_000_000 + drift_ppm).unwrap_or(0).max(1);
    let store_ms = 1_000_000_000u64.div_ceil(rate_ppm);
    format!(
        "timers run slower than the store's clock: {drift_ppm} ppm (1000ms on them take \
         {store_ms}ms of the store's)"
    )
}

/// Per trace: who made the claim key's entry last, to annotate handovers and deletes of
/// another replica's claim.
#[derive(Default)]
pub struct Handover {
    holder: Option<ReplicaId>,
}

impl Annotator<HolderLock> for Handover {
    fn note(&mut self, event: &Event) -> Option<String> {
        let EventKind::Applied { applied, .. } = event.kind else {
            return None;
        };
        let to = event.replica?;
        match applied {
            Applied::Created {
                key: Key::Claim,
                token: t,
                ..
            } => match self.holder.replace(to) {
                Some(from) if from != to => Some(format!(
                    "** claim passes {from} -> {to} (token {})",
                    token(t)
                )),
                _ => None,
            },
            Applied::Deleted {
                key: Key::Claim,
                removed,
            } if removed.by != to => Some(format!(
                "** {to} deleted {}'s live claim: the key is free though {} holds it",
                removed.by, removed.by
            )),
            _ => None,
        }
    }
}

/// What this system's timeline pieces are called: the meaning `call_style` and `draws` give
/// the shared classes and mark kinds. There is no effect call row (job steps are local), and
/// kinds drawn the same for every system (rejections, lost replies, stops, restarts, clock
/// jumps) keep the shared words.
pub const TIMELINE_WORDS: Words = Words {
    held: "claim held, labelled with the serial of its holder token (t4: token 00a3f9:4)",
    held_token: "claim with token serial",
    held_lost: "renew refused",
    calls: &[
        CallWords {
            class: "ca",
            label: "create call",
        },
        CallWords {
            class: "cr",
            label: "renew or set call",
        },
        CallWords {
            class: "cl",
            label: "release or read call (delete_if_holder, get, delete)",
        },
    ],
    marks: &[
        MarkWords {
            kind: MarkKind::Delete,
            noun: "job step",
            legend: "job step done (steps)",
            count: "",
            label: "{n}",
        },
        MarkWords::plain(
            MarkKind::StaleDelete,
            "delete of a token another wrote",
            "delete removed a token ANOTHER replica wrote",
        ),
        MarkWords::plain(
            MarkKind::Renewal,
            "renewal",
            "claim renewed (same token, later lifetime end)",
        ),
        MarkWords::plain(
            MarkKind::RenewLost,
            "renew refused",
            "renew refused: not the holder",
        ),
        MarkWords::plain(
            MarkKind::Release,
            "release",
            "delete removed a token this replica wrote",
        ),
        MarkWords::plain(
            MarkKind::FreedNothing,
            "delete freed nothing",
            "delete_if_holder deleted nothing: another token, or absent",
        ),
        MarkWords::plain(
            MarkKind::Takeover,
            "takeover",
            "create took over a claim that ran out",
        ),
        MarkWords::plain(
            MarkKind::Revoked,
            "run out",
            "a key ran out (lifetime over): its token is gone",
        ),
        MarkWords::plain(
            MarkKind::RefusedDelete,
            "key lost by the store",
            "the store lost a key without a release (eviction, failover, restart)",
        ),
    ],
    drawn: Some(&[
        MarkKind::Delete,
        MarkKind::StaleDelete,
        MarkKind::Renewal,
        MarkKind::RenewLost,
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
        MarkKind::RefusedDelete,
    ]),
};
