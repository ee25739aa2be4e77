//! How the retention system's events read in a trace line.
//!
//! Terminology:
//! - *request*, *applied*, *answer*, *note* texts: the system's part of a trace line; the
//!   shared part (time, replica, `->`, `applied #N:`, `<-`, faults, stops) is written by the
//!   trace renderer of `leasesim`.
//! - *annotations*: the term summary appended to a term's end (`[tokens 3..5, cutoff ...]`)
//!   and a line of its own at each lease handover between replicas.
//!
//! Clock values (cutoffs, expiries, creation times) are shown relative to the epoch.

use std::fmt::Write as _;

use leasesim_timeline::{Annotator, CallWords, MarkKind, MarkWords, Render, Words};

use crate::Retention;
use crate::events::{
    Answer, Applied, ClockMs, EndKind, Event, EventKind, Failure, Note, ReplicaId, Request,
};

/// A clock value relative to the epoch, signed, in ms.
pub fn clock(value_ms: u64) -> String {
    ClockMs(value_ms).to_string()
}

fn end_name(end: EndKind) -> &'static str {
    match end {
        EndKind::StoppedBeforeStart => "stopped-before-start",
        EndKind::NotLeader => "not-leader",
        EndKind::CapReached => "cap-reached",
        EndKind::Drained => "drained",
        EndKind::LostByNone => "leadership-lost (renew answered none)",
        EndKind::LostByError => "leadership-lost (renew failed)",
        EndKind::Stopped => "stopped",
        EndKind::FailedAcquire => "failed (acquire error)",
        EndKind::FailedDelete => "failed (delete error)",
        EndKind::AlreadyRunning => "refused (already running)",
    }
}

fn failure_name(failure: Failure) -> &'static str {
    match failure {
        Failure::Rejected => "rejected",
        Failure::Timeout => "timeout",
        Failure::StaleToken => "stale-token",
    }
}

/// How retention events read in a trace and draw on a timeline.
impl Render for Retention {
    const WORDS: &'static Words = &TIMELINE_WORDS;
    type Annotator = Annotations;

    fn request_text(request: &Request) -> String {
        match request {
            Request::Acquire => "acquire".into(),
            Request::Renew { lease } => format!("renew token={}", lease.token),
            Request::Release { lease } => format!("release token={}", lease.token),
            Request::Delete {
                older_than_ms,
                limit,
                token,
            } => {
                format!(
                    "delete_batch older_than={} limit={limit} token={token}",
                    clock(*older_than_ms)
                )
            }
        }
    }

    fn applied_text(applied: &Applied) -> String {
        match applied {
            Applied::Granted {
                lease,
                replaced: None,
            } => {
                format!(
                    "granted token={} expires={}",
                    lease.token,
                    clock(lease.expires_at_ms)
                )
            }
            Applied::Granted {
                lease,
                replaced: Some(old),
            } => format!(
                "granted token={} expires={} (took over expired token {old})",
                lease.token,
                clock(lease.expires_at_ms)
            ),
            Applied::Busy { holder_token } => format!("busy (token {holder_token} is held)"),
            Applied::Renewed { lease } => {
                format!(
                    "renewed -> token={} expires={}",
                    lease.token,
                    clock(lease.expires_at_ms)
                )
            }
            Applied::RenewRefused => "renew refused (not the live holder)".into(),
            Applied::Released => "released".into(),
            Applied::FreedNothing => "freed nothing (the lease had expired or moved on)".into(),
            Applied::Deleted {
                rows,
                token_current,
                current_token,
                newest_created_ms,
                held_back,
            } => {
                let mut text = format!("deleted {rows} rows");
                if let Some(newest) = newest_created_ms {
                    let _ = write!(text, " (newest created {})", clock(*newest));
                }
                if !token_current {
                    let current = current_token.map_or("none".into(), |t| t.to_string());
                    let _ = write!(text, " WITH A STALE TOKEN (current: {current})");
                }
                if *held_back > 0 {
                    let _ = write!(
                        text,
                        "; short answer (fault): {held_back} more eligible rows held back"
                    );
                }
                text
            }
            Applied::DeleteRefused { current_token } => {
                let current = current_token.map_or("none".into(), |t| t.to_string());
                format!("refused: stale token (current: {current})")
            }
        }
    }

    fn answer_text(answer: &Answer) -> String {
        match answer {
            Answer::Lease(Some(lease)) => format!("lease token={}", lease.token),
            Answer::Lease(None) => "none".into(),
            Answer::Released => "ok".into(),
            Answer::Rows(rows) => format!("{rows} rows"),
            Answer::Failed(failure) => format!("error: {}", failure_name(*failure)),
        }
    }

    /// The text of one of the system's notes.
    fn note_text(note: &Note) -> String {
        match note {
            Note::TermStarted { term } => format!("run() term {term} begins"),
            Note::TermEnded { term, end, rows } => {
                format!("run() term {term} ends: {}, {rows} rows", end_name(*end))
            }
            Note::Revoked { token } => format!("** authority revokes token {token}"),
            Note::Backlog {
                eligible_before_ms,
                remaining,
            } => format!(
                "backlog check: {remaining} rows created before {} remain",
                clock(*eligible_before_ms)
            ),
            Note::Construction(finding) => format!("** construction: {finding}"),
        }
    }

    /// A short stable name of a note, for per-kind counts.
    fn note_name(note: &Note) -> &'static str {
        match note {
            Note::TermStarted { .. } => "term-started",
            Note::TermEnded { .. } => "term-ended",
            Note::Revoked { .. } => "revoked",
            Note::Backlog { .. } => "backlog",
            Note::Construction(_) => "construction",
        }
    }

    fn answer_is_error(answer: &Answer) -> bool {
        matches!(answer, Answer::Failed(_))
    }

    /// How the retention calls are drawn: one row per operation.
    fn call_style(op: crate::events::OpKind) -> leasesim_timeline::CallStyle {
        use crate::events::OpKind;
        let (row, class) = match op {
            OpKind::Acquire => (0, "ca"),
            OpKind::Renew => (1, "cr"),
            OpKind::Release => (2, "cl"),
            OpKind::Delete => (3, "cd"),
        };
        leasesim_timeline::CallStyle {
            row,
            class,
            name: op.name(),
        }
    }

    /// What the retention parts of an event draw: applies as marks, lease answers as held
    /// tokens, term ends, revocations and backlog checks.
    fn draws(event: &Event, out: &mut Vec<leasesim_timeline::Draw>) {
        use leasesim_timeline::{Draw, MarkKind};
        let mark = |kind, rows| Draw::Mark { kind, rows };
        match event.kind {
            EventKind::Applied { applied, .. } => out.extend(applied_mark(&applied)),
            EventKind::Answered { op, answer, .. } => answered_draws(op, answer, out),
            EventKind::Note(Note::TermEnded { .. }) => out.push(Draw::HoldEnd { lost: false }),
            EventKind::Note(Note::Revoked { .. }) => out.push(mark(MarkKind::Revoked, 0)),
            EventKind::Note(Note::Backlog { remaining, .. }) => {
                out.push(mark(MarkKind::Backlog, remaining));
            }
            _ => {}
        }
    }
}

/// Per replica: the tokens its open term received and the cutoff of its first delete, so a
/// term's end can say what it held.
#[derive(Default)]
pub struct TermNotes {
    terms: Vec<TermNote>,
}

/// One replica's open term: first and last token received, cutoff of its first delete.
#[derive(Clone, Copy, Default)]
struct TermNote {
    tokens: Option<(u64, u64)>,
    cutoff: Option<u64>,
}

impl TermNotes {
    /// Text to append to `event`'s line: `tokens 3..5, cutoff -299001ms` at a term's end.
    fn suffix(&mut self, event: &Event) -> Option<String> {
        let replica = event.replica?.index();
        if self.terms.len() <= replica {
            self.terms.resize(replica + 1, TermNote::default());
        }
        let TermNote { tokens, cutoff } = &mut self.terms[replica];
        match &event.kind {
            EventKind::Note(Note::TermStarted { .. }) => self.terms[replica] = TermNote::default(),
            EventKind::Answered {
                answer: Answer::Lease(Some(lease)),
                ..
            } => {
                let (first, _) = tokens.unwrap_or((lease.token, lease.token));
                *tokens = Some((first, lease.token));
            }
            EventKind::Call {
                request: Request::Delete { older_than_ms, .. },
                ..
            } => {
                cutoff.get_or_insert(*older_than_ms);
            }
            EventKind::Note(Note::TermEnded { .. }) => {
                let (first, last) = (*tokens)?;
                let held = if first == last {
                    format!("token {first}")
                } else {
                    format!("tokens {first}..{last}")
                };
                let cut = cutoff.map_or_else(
                    || "no delete".to_string(),
                    |c| format!("cutoff {}", clock(c)),
                );
                return Some(format!(" [{held}, {cut}]"));
            }
            _ => {}
        }
        None
    }
}

/// Tracks who holds the lease so handovers can be annotated.
#[derive(Default)]
pub struct Handover {
    holder: Option<(ReplicaId, u64)>,
}

impl Handover {
    fn note(&mut self, event: &Event) -> Option<String> {
        let (replica, lease) = match (&event.replica, &event.kind) {
            (
                Some(r),
                EventKind::Applied {
                    applied: Applied::Granted { lease, .. },
                    ..
                },
            ) => (*r, lease),
            (
                Some(r),
                EventKind::Applied {
                    applied: Applied::Renewed { lease },
                    ..
                },
            ) => (*r, lease),
            _ => return None,
        };
        let previous = self.holder.replace((replica, lease.token));
        match previous {
            Some((from, token)) if from != replica => Some(format!(
                "** lease handover: {from} (token {token}) -> {replica} (token {})",
                lease.token
            )),
            _ => None,
        }
    }
}

/// The retention annotations of one trace: term summaries and lease handovers.
#[derive(Default)]
pub struct Annotations {
    terms: TermNotes,
    handover: Handover,
}

impl Annotator<Retention> for Annotations {
    fn suffix(&mut self, event: &Event) -> Option<String> {
        self.terms.suffix(event)
    }

    fn note(&mut self, event: &Event) -> Option<String> {
        self.handover.note(event)
    }
}

fn answered_draws(
    op: crate::events::OpKind,
    answer: Answer,
    out: &mut Vec<leasesim_timeline::Draw>,
) {
    use crate::events::OpKind;
    use leasesim_timeline::{Draw, MarkKind};
    match (op, answer) {
        (OpKind::Acquire, Answer::Lease(Some(lease))) => {
            out.push(Draw::HoldStart { token: lease.token });
        }
        (OpKind::Renew, Answer::Lease(Some(lease))) => {
            out.push(Draw::Mark {
                kind: MarkKind::Renewal,
                rows: 0,
            });
            out.push(Draw::HoldRenewed { token: lease.token });
        }
        (OpKind::Renew, Answer::Lease(None)) => {
            out.push(Draw::Mark {
                kind: MarkKind::RenewLost,
                rows: 0,
            });
            out.push(Draw::HoldEnd { lost: true });
        }
        (OpKind::Release, _) => out.push(Draw::HoldEnd { lost: false }),
        _ => {}
    }
}

/// The mark an `Applied` event makes, if any.
fn applied_mark(applied: &Applied) -> Option<leasesim_timeline::Draw> {
    use leasesim_timeline::{Draw, MarkKind};
    let kind = match *applied {
        Applied::Deleted {
            rows,
            token_current,
            ..
        } => {
            let kind = match token_current {
                true => MarkKind::Delete,
                false => MarkKind::StaleDelete,
            };
            return Some(Draw::Mark {
                kind,
                rows: u64::from(rows),
            });
        }
        Applied::DeleteRefused { .. } => MarkKind::RefusedDelete,
        Applied::Released => MarkKind::Release,
        Applied::FreedNothing => MarkKind::FreedNothing,
        Applied::Granted {
            replaced: Some(_), ..
        } => MarkKind::Takeover,
        Applied::Granted { replaced: None, .. }
        | Applied::Busy { .. }
        | Applied::Renewed { .. }
        | Applied::RenewRefused => return None,
    };
    Some(Draw::Mark { kind, rows: 0 })
}

/// The retention system's words of every mark kind, in legend order.
const MARKS: [MarkWords; 17] = {
    use MarkKind as K;
    let plain = MarkWords::plain;
    [
        MarkWords {
            kind: K::Delete,
            noun: "delete",
            legend: "delete applied (rows)",
            count: "{n} rows",
            label: "{n}",
        },
        MarkWords {
            kind: K::StaleDelete,
            noun: "stale delete",
            legend: "delete applied with a STALE token",
            count: "{n} rows",
            label: "{n}",
        },
        plain(
            K::RefusedDelete,
            "refused delete",
            "delete refused: stale token",
        ),
        plain(K::Renewal, "renewal", "renewal (new token)"),
        plain(
            K::RenewLost,
            "renew answered none",
            "renew answered none: leadership lost",
        ),
        plain(K::Release, "release", "release freed the lease"),
        plain(
            K::FreedNothing,
            "release freed nothing",
            "release freed nothing",
        ),
        plain(
            K::Takeover,
            "takeover",
            "acquire took over an expired lease",
        ),
        plain(K::Rejected, "rejected call", "call rejected before apply"),
        plain(K::RequestLost, "lost request", "request lost before apply"),
        plain(K::ReplyLost, "lost reply", "reply lost after apply"),
        plain(K::StopCalled, "stop called", "stop() called"),
        plain(K::StopResolved, "stop returned", "stop() returned"),
        plain(K::Restarted, "restart", "restarted with a fresh worker"),
        plain(K::ClockJump, "clock jump", "clock jump"),
        plain(K::Revoked, "revocation", "lease revoked by the authority"),
        MarkWords {
            kind: K::Backlog,
            noun: "backlog check",
            legend: "backlog check (rows left)",
            count: "{n} rows left",
            label: "backlog {n} left",
        },
    ]
};

/// What the retention system calls its held bars, call rows and marks on a timeline.
pub const TIMELINE_WORDS: Words = Words {
    held: "lease held, labelled with its fencing token (t7: token 7)",
    held_token: "lease token",
    held_lost: "renew answered none",
    calls: &[
        CallWords {
            class: "ca",
            label: "acquire call",
        },
        CallWords {
            class: "cr",
            label: "renew call",
        },
        CallWords {
            class: "cd",
            label: "delete call",
        },
        CallWords {
            class: "cl",
            label: "release call",
        },
    ],
    marks: &MARKS,
    drawn: None,
};
