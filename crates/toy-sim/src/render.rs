//! How the toy's events read in a trace line and draw on a timeline.
//!
//! Terminology:
//! - *texts*: the toy's part of a trace line (`bump token=3`, `granted token=3 expires=...`);
//!   the shared part (time, replica, `->`, `applied #N:`, `<-`, faults) is `leasesim::trace`'s.
//! - *annotation*: a line of its own when a claim passes from one replica to another.

use leasesim_events::{ClockMs, EventKind, NetFailure, ReplicaId};
use leasesim_timeline::{
    Annotator, CallStyle, CallWords, Draw, MarkKind, MarkWords, Render, Words,
};

use super::events::{Answer, Applied, Event, Note, Op, Request, RoundEnd, Toy};

/// How the toy's events read in a trace and draw on a timeline.
impl Render for Toy {
    const WORDS: &'static Words = &Words {
        held: "claim held, labelled with its token (t7: token 7)",
        held_token: "claim token",
        held_lost: "claim lost",
        calls: &[
            CallWords {
                class: "ca",
                label: "claim call",
            },
            CallWords {
                class: "cd",
                label: "bump call",
            },
        ],
        marks: &[
            MarkWords::plain(MarkKind::Delete, "bump", "bump applied"),
            MarkWords::plain(
                MarkKind::RefusedDelete,
                "fenced bump",
                "bump refused: not the live claim",
            ),
            MarkWords::plain(
                MarkKind::Revoked,
                "claim lost",
                "claim dropped by the counter (fault)",
            ),
        ],
        drawn: None,
    };
    type Annotator = Handover;

    fn request_text(request: &Request) -> String {
        match request {
            Request::Claim => "claim".into(),
            Request::Bump { token } => format!("bump token={token}"),
        }
    }

    fn applied_text(applied: &Applied) -> String {
        match applied {
            Applied::Granted {
                token,
                expires_at_ms,
            } => format!("granted token={token} expires={}", ClockMs(*expires_at_ms)),
            Applied::Busy { holder_token } => format!("busy (token {holder_token} is live)"),
            Applied::Bumped { token, count } => format!("bumped to {count} under token {token}"),
            Applied::Fenced { token, live_token } => {
                let live = live_token.map_or("none".into(), |t| t.to_string());
                format!("fenced: token {token} is not live (live: {live})")
            }
        }
    }

    fn answer_text(answer: &Answer) -> String {
        match answer {
            Answer::Granted(token) => format!("claim token={token}"),
            Answer::Busy => "busy".into(),
            Answer::Bumped(count) => format!("counter={count}"),
            Answer::Fenced => "error: fenced".into(),
            Answer::Failed(NetFailure::Rejected) => "error: rejected".into(),
            Answer::Failed(NetFailure::Timeout) => "error: timeout".into(),
        }
    }

    fn note_text(note: &Note) -> String {
        match note {
            Note::RoundStarted { round } => format!("run() round {round} begins"),
            Note::RoundEnded { round, end } => {
                format!("run() round {round} ends: {}", end_name(*end))
            }
            Note::ClaimLost { token } => format!("** counter drops claim token {token} (fault)"),
            Note::Tally { count } => format!("tally: counter = {count}"),
        }
    }

    fn note_name(note: &Note) -> &'static str {
        match note {
            Note::RoundStarted { .. } => "round-started",
            Note::RoundEnded { .. } => "round-ended",
            Note::ClaimLost { .. } => "claim-lost",
            Note::Tally { .. } => "tally",
        }
    }

    fn answer_is_error(answer: &Answer) -> bool {
        matches!(answer, Answer::Fenced)
    }

    /// Claims on the first call row, bumps on the last (the effect row).
    fn call_style(op: Op) -> CallStyle {
        let (row, class) = match op {
            Op::Claim => (0, "ca"),
            Op::Bump => (3, "cd"),
        };
        CallStyle {
            row,
            class,
            name: leasesim_events::OpSet::name(op),
        }
    }

    /// What the toy's parts of an event draw: bumps and refusals as marks, a granted claim as a
    /// held token until the round ends, a dropped claim on the world row.
    fn draws(event: &Event, out: &mut Vec<Draw>) {
        let mark = |kind, rows| Draw::Mark { kind, rows };
        match event.kind {
            EventKind::Applied { applied, .. } => match applied {
                Applied::Bumped { .. } => out.push(mark(MarkKind::Delete, 1)),
                Applied::Fenced { .. } => out.push(mark(MarkKind::RefusedDelete, 0)),
                Applied::Granted { .. } | Applied::Busy { .. } => {}
            },
            EventKind::Answered {
                answer: Answer::Granted(token),
                ..
            } => out.push(Draw::HoldStart { token }),
            EventKind::Note(Note::RoundEnded { .. }) => out.push(Draw::HoldEnd { lost: false }),
            EventKind::Note(Note::ClaimLost { .. }) => out.push(mark(MarkKind::Revoked, 0)),
            _ => {}
        }
    }
}

fn end_name(end: RoundEnd) -> &'static str {
    match end {
        RoundEnd::Stopped => "stopped",
        RoundEnd::Refused => "refused",
        RoundEnd::Bumped => "bumped",
        RoundEnd::BumpFailed => "bump failed",
    }
}

/// Per trace: who was granted the claim last, to annotate a claim passing between replicas.
#[derive(Default)]
pub struct Handover {
    holder: Option<ReplicaId>,
}

impl Annotator<Toy> for Handover {
    fn note(&mut self, event: &Event) -> Option<String> {
        let EventKind::Applied {
            applied: Applied::Granted { token, .. },
            ..
        } = event.kind
        else {
            return None;
        };
        let to = event.replica?;
        match self.holder.replace(to) {
            Some(from) if from != to => {
                Some(format!("** claim passes {from} -> {to} (token {token})"))
            }
            _ => None,
        }
    }
}
