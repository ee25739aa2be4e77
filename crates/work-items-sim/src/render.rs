//! How the work-items system's events read in a trace line, and what they draw on a timeline.
//!
//! Terminology:
//! - *request*, *applied*, *answer*, *note* texts: the system's part of a trace line; the
//!   shared part (time, replica, `->`, `applied #N:`, `<-`, faults, stops) is written by the
//!   trace renderer of `leasesim`.
//! - *key*: an idempotency key, shown `k3` (item 3's own) or `k3~1` (another key of item 3).
//! - *annotations*: a line of its own when an item passes from one replica to another (a
//!   takeover after expiry, or a plain write overwriting a live claim), and when a worker
//!   learns it lost a claim.
//! - *strokes*: a claim is a held token on its worker's lane (from the claim's answer to its
//!   end mark, its lease-lost answer, or the end of the pass); chunks and provider effects
//!   are effect marks, refusals and stale writes warning marks.
//!
//! The timeline's mark kinds speak the retention system's words; this system maps onto them:
//! an applied chunk or provider effect is a `Delete` (one unit), a stale one a `StaleDelete`,
//! a write refused as lease-lost a `RefusedDelete`, a duplicate provider call `FreedNothing`,
//! a takeover `Takeover`, an end mark `Release`, items open at the tally a `Backlog`. The
//! legend and hover texts name them in this system's words ([`TIMELINE_WORDS`]): a held bar
//! is a claim on an item, the call rows are claims, renewals, end marks and effects.

use leasesim_timeline::{
    Annotator, CallStyle, CallWords, Draw, MarkKind, MarkWords, Render, Words,
};

use crate::events::{
    Answer, Applied, ClockMs, EndKind, ErrorCode, Event, EventKind, ItemState, ItemView, Key,
    LookupView, Mark, Note, Op, PassCounts, Prior, ProviderView, ReplicaId, Request, StatusView,
    WorkItems,
};

/// A clock value relative to the epoch.
fn clock(value_ms: u64) -> ClockMs {
    ClockMs(value_ms)
}

/// `k3`, or `k3~1` for a key that is not the item's own.
pub fn key_text(key: Key) -> String {
    match key.salt {
        0 => format!("k{}", key.item),
        salt => format!("k{}~{salt}", key.item),
    }
}

fn op_name(op: Op) -> &'static str {
    leasesim_events::OpSet::name(op)
}

/// An error code as a release or fail carries it.
pub fn error_text(error: ErrorCode) -> String {
    match error {
        ErrorCode::Rejected(op) => format!("rejected({})", op_name(op)),
        ErrorCode::Timeout(op) => format!("timeout({})", op_name(op)),
        ErrorCode::ProviderRefused => "provider-refused".into(),
        ErrorCode::Stopped => "stopped".into(),
    }
}

fn state_name(state: ItemState) -> &'static str {
    match state {
        ItemState::Pending => "pending",
        ItemState::Claimed => "claimed",
        ItemState::Released => "released",
        ItemState::Done => "done",
        ItemState::Failed => "failed",
    }
}

fn view_text(view: &ItemView) -> String {
    match view.state {
        ItemState::Pending => "pending".into(),
        ItemState::Claimed => format!(
            "claimed (token {}, expires {})",
            view.token,
            clock(view.expires_at_ms)
        ),
        state => format!("{} (last token {})", state_name(state), view.token),
    }
}

fn status_text(status: &StatusView) -> String {
    format!(
        "{} open, {} done, {} failed",
        status.open, status.done, status.failed
    )
}

/// How work-items events read in a trace and draw on a timeline.
impl Render for WorkItems {
    const WORDS: &'static Words = &TIMELINE_WORDS;
    type Annotator = Handovers;

    fn request_text(request: &Request) -> String {
        match *request {
            Request::Find { after: None } => "next_claimable".into(),
            Request::Find { after: Some(item) } => format!("next_claimable after={item}"),
            Request::Claim { item, lease_ms, .. } => {
                format!("claim item={item} lease={lease_ms}ms")
            }
            Request::Renew {
                item,
                token,
                lease_ms,
                ..
            } => format!("renew_if_owner item={item} token={token} lease={lease_ms}ms"),
            Request::Apply {
                item, token, chunk, ..
            } => format!("apply_if_owner item={item} chunk={chunk} token={token}"),
            Request::Done { item, token, .. } => {
                format!("mark_done_if_owner item={item} token={token}")
            }
            Request::Release {
                item, token, error, ..
            } => format!(
                "release_if_owner item={item} token={token} error={}",
                error_text(error)
            ),
            Request::Fail {
                item, token, error, ..
            } => format!(
                "fail_if_owner item={item} token={token} error={}",
                error_text(error)
            ),
            Request::Status => "status".into(),
            Request::ProviderApply { item, key } => {
                format!("provider_apply item={item} key={}", key_text(key))
            }
            Request::Lookup { key } => format!("provider_lookup key={}", key_text(key)),
            Request::PlainClaim { item, lease_ms, .. } => {
                format!("write_owner item={item} lease={lease_ms}ms (plain write, no condition)")
            }
            Request::UnguardedApply {
                item, token, chunk, ..
            } => format!("apply item={item} chunk={chunk} token={token} (no token predicate)"),
            Request::UnguardedDone { item, token, .. } => {
                format!("mark_done item={item} token={token} (no owner check)")
            }
        }
    }

    fn applied_text(applied: &Applied) -> String {
        match *applied {
            Applied::Found { item: Some(item) } => format!("found item {item}"),
            Applied::Found { item: None } => "nothing claimable".into(),
            Applied::Claimed {
                item,
                token,
                expires_at_ms,
                attempt,
                chunks,
                prior,
            } => format!(
                "claimed item {item}: token={token} expires={} attempt {attempt}, {chunks} chunk(s){}",
                clock(expires_at_ms),
                prior_text(prior)
            ),
            Applied::Busy { item, token } => format!("busy: item {item} has live token {token}"),
            Applied::Closed { item, state } => {
                format!("closed: item {item} is {}", state_name(state))
            }
            Applied::Status(status) => format!("status: {}", status_text(&status)),
            Applied::ProviderApplied { .. }
            | Applied::ProviderDuplicate { .. }
            | Applied::ProviderRefused { .. }
            | Applied::LookedUp { .. } => provider_text(applied),
            _ => write_text(applied),
        }
    }

    fn answer_text(answer: &Answer) -> String {
        match answer {
            Answer::Found(Some(item)) => format!("item {item}"),
            Answer::Found(None) => "none".into(),
            Answer::Claimed(lease) => format!(
                "lease item={} token={} attempt={} chunks={}",
                lease.item, lease.token, lease.attempt, lease.chunks
            ),
            Answer::Busy => "busy".into(),
            Answer::Closed => "closed".into(),
            Answer::Renewed { expires_at_ms } => format!("renewed to {}", clock(*expires_at_ms)),
            Answer::Applied { fresh: true } => "applied".into(),
            Answer::Applied { fresh: false } => "already applied".into(),
            Answer::Ok => "ok".into(),
            Answer::LeaseLost => "LEASE LOST".into(),
            Answer::Status(status) => status_text(status),
            Answer::Provider(ProviderView::Applied) => "applied".into(),
            Answer::Provider(ProviderView::Duplicate) => "duplicate (already applied)".into(),
            Answer::Provider(ProviderView::Refused) => "refused for good".into(),
            Answer::Lookup(found) => lookup_name(*found).into(),
            Answer::Failed(leasesim_events::NetFailure::Rejected) => "error: rejected".into(),
            Answer::Failed(leasesim_events::NetFailure::Timeout) => "error: timeout".into(),
        }
    }

    fn note_text(note: &Note) -> String {
        match note {
            Note::PassStarted { pass } => format!("run() pass {pass} begins"),
            Note::PassEnded {
                pass,
                end,
                counts,
                status,
            } => {
                let store =
                    status.map_or(String::new(), |s| format!("; store: {}", status_text(&s)));
                format!(
                    "run() pass {pass} ends: {} [{}]{store}",
                    end_name(*end),
                    counts_text(counts)
                )
            }
            Note::Tally { status, first_open } => {
                let first = first_open.map_or(String::new(), |open| {
                    format!("; first open: item {} {}", open.item, view_text(&open.view))
                });
                format!("tally: {}{first}", status_text(status))
            }
            Note::Construction(finding) => format!("** construction: {finding}"),
        }
    }

    fn note_name(note: &Note) -> &'static str {
        match note {
            Note::PassStarted { .. } => "pass-started",
            Note::PassEnded { .. } => "pass-ended",
            Note::Tally { .. } => "tally",
            Note::Construction(_) => "construction",
        }
    }

    fn answer_is_error(answer: &Answer) -> bool {
        matches!(answer, Answer::LeaseLost | Answer::Failed(_))
    }

    /// How the calls are drawn: claims and reads on the first row, renewals on the second, end
    /// marks on the third, effects (chunks, provider) on the last.
    fn call_style(op: Op) -> CallStyle {
        let (row, class) = match op {
            Op::Find | Op::Claim | Op::Status => (0, "ca"),
            Op::Renew => (1, "cr"),
            Op::Done | Op::Release | Op::Fail => (2, "cl"),
            Op::Apply | Op::Provider | Op::Lookup => (3, "cd"),
        };
        CallStyle {
            row,
            class,
            name: op_name(op),
        }
    }

    /// What the system's parts of an event draw (see the module docs).
    fn draws(event: &Event, out: &mut Vec<Draw>) {
        let mark = |kind, rows| Draw::Mark { kind, rows };
        match event.kind {
            EventKind::Applied { applied, .. } => out.extend(applied_mark(&applied)),
            EventKind::Answered { answer, .. } => match answer {
                Answer::Claimed(lease) => out.push(Draw::HoldStart { token: lease.token }),
                Answer::Ok => out.push(Draw::HoldEnd { lost: false }),
                Answer::LeaseLost => {
                    out.push(mark(MarkKind::RenewLost, 0));
                    out.push(Draw::HoldEnd { lost: true });
                }
                _ => {}
            },
            EventKind::Note(Note::PassEnded { .. }) => out.push(Draw::HoldEnd { lost: false }),
            EventKind::Note(Note::Tally { status, .. }) => {
                out.push(mark(MarkKind::Backlog, u64::from(status.open)));
            }
            _ => {}
        }
    }
}

/// ` WITH A STALE TOKEN (live: 9)` when `token` was not the live claim.
fn stale_suffix(token: u64, live: Option<u64>) -> String {
    if live == Some(token) {
        return String::new();
    }
    let live = live.map_or("none".into(), |t| t.to_string());
    format!(" WITH A STALE TOKEN (live: {live})")
}

fn prior_text(prior: Prior) -> String {
    match prior {
        Prior::Fresh => String::new(),
        Prior::Released { token } => format!(" (released by token {token})"),
        Prior::Expired { token } => format!(" (took over expired token {token})"),
        Prior::Held { token } => format!(" OVERWROTE THE LIVE CLAIM token {token}"),
        Prior::Closed { token, state } => format!(
            " REOPENED A {} ITEM (token {token})",
            state_name(state).to_uppercase()
        ),
    }
}

fn mark_name(mark: Mark) -> &'static str {
    match mark {
        Mark::Done => "done",
        Mark::Released => "released",
        Mark::Failed => "failed",
    }
}

/// A fenced write's apply: a renewal, a chunk, an end mark, a refusal.
fn write_text(applied: &Applied) -> String {
    match *applied {
        Applied::Renewed {
            item,
            token,
            expires_at_ms,
        } => format!(
            "renewed item {item} token {token} -> expires={}",
            clock(expires_at_ms)
        ),
        Applied::ChunkApplied {
            item,
            token,
            chunk,
            fresh,
            live,
        } => format!(
            "chunk {chunk} of item {item} {} under token {token}{}",
            if fresh { "applied" } else { "already applied" },
            stale_suffix(token, live)
        ),
        Applied::Marked {
            item,
            token,
            mark,
            repeat,
            live,
        } => format!(
            "item {item} {} under token {token}{}{}",
            mark_name(mark),
            if repeat { " (repeat)" } else { "" },
            if repeat {
                String::new()
            } else {
                stale_suffix(token, live)
            }
        ),
        Applied::LeaseLost { item, token, live } => {
            let live = live.map_or("none".into(), |t| t.to_string());
            format!("refused: token {token} is not item {item}'s live claim (live: {live})")
        }
        other => unreachable!("not a store write: {other:?}"),
    }
}

/// What the provider did.
fn provider_text(applied: &Applied) -> String {
    match *applied {
        Applied::ProviderApplied { item, key } => {
            format!(
                "provider carried out item {item}'s effect (key {})",
                key_text(key)
            )
        }
        Applied::ProviderDuplicate { item, key } => format!(
            "duplicate key {}: item {item}'s effect not done again",
            key_text(key)
        ),
        Applied::ProviderRefused { item, key } => {
            format!(
                "provider refuses item {item} for good (key {})",
                key_text(key)
            )
        }
        Applied::LookedUp { key, found } => {
            format!("key {}: {}", key_text(key), lookup_name(found))
        }
        other => unreachable!("not the provider's: {other:?}"),
    }
}

fn lookup_name(found: LookupView) -> &'static str {
    match found {
        LookupView::Applied => "applied",
        LookupView::Refused => "refused",
        LookupView::Unknown => "unknown",
    }
}

fn end_name(end: EndKind) -> &'static str {
    match end {
        EndKind::StoppedBeforeStart => "stopped-before-start",
        EndKind::Complete => "complete",
        EndKind::Idle => "idle (items open elsewhere)",
        EndKind::Deadline => "deadline",
        EndKind::Stopped => "stopped",
        EndKind::Unavailable => "store unavailable",
        EndKind::AlreadyRunning => "refused (already running)",
    }
}

fn counts_text(counts: &PassCounts) -> String {
    let parts: Vec<String> = [
        ("done", counts.done),
        ("failed", counts.failed),
        ("released", counts.released),
        ("lost", counts.lost),
        ("abandoned", counts.abandoned),
    ]
    .iter()
    .filter(|(_, n)| *n > 0)
    .map(|(name, n)| format!("{n} {name}"))
    .collect();
    match parts.is_empty() {
        true => "no claim".into(),
        false => parts.join(", "),
    }
}

/// Per trace: which replica holds each token, to say who an item passes from.
#[derive(Default)]
pub struct Handovers {
    /// `(token, replica)` of every claim granted so far, in token order.
    holders: Vec<(u64, ReplicaId)>,
}

impl Handovers {
    fn holder(&self, token: u64) -> Option<ReplicaId> {
        let index = self
            .holders
            .binary_search_by_key(&token, |(t, _)| *t)
            .ok()?;
        Some(self.holders[index].1)
    }
}

impl Annotator<WorkItems> for Handovers {
    fn note(&mut self, event: &Event) -> Option<String> {
        let replica = event.replica?;
        match event.kind {
            EventKind::Applied {
                applied:
                    Applied::Claimed {
                        item, token, prior, ..
                    },
                ..
            } => {
                self.holders.push((token, replica));
                let (from, how) = match prior {
                    Prior::Expired { token } => (token, "its claim expired"),
                    Prior::Held { token } => (token, "ITS CLAIM WAS LIVE"),
                    _ => return None,
                };
                let who = self.holder(from).map_or("?".into(), |r| r.to_string());
                Some(format!(
                    "** item {item} passes {who} (token {from}, {how}) -> {replica} (token {token})"
                ))
            }
            EventKind::Answered {
                answer: Answer::LeaseLost,
                ..
            } => Some(format!(
                "** {replica} lost its claim: it must send no more writes for it"
            )),
            _ => None,
        }
    }
}

/// The mark an `Applied` event makes, if any.
fn applied_mark(applied: &Applied) -> Option<Draw> {
    let (kind, rows) = match *applied {
        Applied::ChunkApplied {
            token, live, fresh, ..
        } => match live == Some(token) {
            true => (MarkKind::Delete, u64::from(fresh)),
            false => (MarkKind::StaleDelete, u64::from(fresh)),
        },
        Applied::ProviderApplied { .. } => (MarkKind::Delete, 1),
        Applied::ProviderDuplicate { .. } => (MarkKind::FreedNothing, 0),
        Applied::ProviderRefused { .. } => (MarkKind::Rejected, 0),
        Applied::LeaseLost { .. } => (MarkKind::RefusedDelete, 0),
        Applied::Marked {
            token,
            live,
            repeat: false,
            ..
        } if live != Some(token) => (MarkKind::StaleDelete, 0),
        Applied::Marked { .. } => (MarkKind::Release, 0),
        Applied::Renewed { .. } => (MarkKind::Renewal, 0),
        Applied::Claimed {
            prior: Prior::Expired { .. },
            ..
        } => (MarkKind::Takeover, 0),
        Applied::Claimed {
            prior: Prior::Held { .. } | Prior::Closed { .. },
            ..
        } => (MarkKind::StaleDelete, 0),
        _ => return None,
    };
    Some(Draw::Mark { kind, rows })
}

/// What this system's timeline pieces are called: the meaning `call_style` and `draws` give
/// the shared classes and mark kinds. Kinds drawn the same for every system (lost replies,
/// stops, restarts, clock jumps) keep the shared words.
pub const TIMELINE_WORDS: Words = Words {
    held: "item claimed, labelled with its fencing token (t7: token 7)",
    held_token: "claim token",
    held_lost: "a write answered LEASE LOST",
    calls: &[
        CallWords {
            class: "ca",
            label: "claim call (and next_claimable, status)",
        },
        CallWords {
            class: "cr",
            label: "renew_if_owner call",
        },
        CallWords {
            class: "cl",
            label: "end-mark call (mark_done_if_owner, release_if_owner, fail_if_owner)",
        },
        CallWords {
            class: "cd",
            label: "effect call (apply_if_owner, provider_apply, provider_lookup)",
        },
    ],
    marks: &[
        MarkWords {
            kind: MarkKind::Delete,
            noun: "effect",
            legend: "chunk or provider effect applied (fresh ones)",
            count: "{n} fresh",
            label: "{n}",
        },
        MarkWords {
            kind: MarkKind::StaleDelete,
            noun: "stale write",
            legend: "write applied with a STALE token, or a claim over a live or closed one",
            count: "{n} fresh",
            label: "{n}",
        },
        MarkWords::plain(
            MarkKind::RefusedDelete,
            "refused write",
            "write refused: its token is not the live claim",
        ),
        MarkWords::plain(
            MarkKind::Renewal,
            "renewal",
            "claim renewed (same token, later expiry)",
        ),
        MarkWords::plain(
            MarkKind::RenewLost,
            "lease lost",
            "write answered LEASE LOST: the claim is gone",
        ),
        MarkWords::plain(
            MarkKind::Release,
            "end mark",
            "item marked done, released or failed",
        ),
        MarkWords::plain(
            MarkKind::FreedNothing,
            "duplicate effect",
            "provider call with a used key: effect not done again",
        ),
        MarkWords::plain(
            MarkKind::Takeover,
            "takeover",
            "claim took over an expired claim",
        ),
        MarkWords::plain(
            MarkKind::Rejected,
            "rejected call or provider refusal",
            "call rejected before apply, or provider refused the item for good",
        ),
        MarkWords {
            kind: MarkKind::Backlog,
            noun: "tally",
            legend: "tally as liveness ends (items open)",
            count: "{n} items open",
            label: "{n} open",
        },
    ],
    drawn: Some(&[
        MarkKind::Delete,
        MarkKind::StaleDelete,
        MarkKind::RefusedDelete,
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
        MarkKind::Backlog,
    ]),
};
