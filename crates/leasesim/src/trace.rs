//! Traces reviewers read: one event a line, byte-stable.
//!
//! Terminology:
//! - *header*: scenario, feed (seed or choices file), worker, strategy, the scenario
//!   overrides of a shrunk run (`set:`), the fault profile the run drew, and the verdict.
//! - *line*: virtual time (fixed width), replica, operation, arguments, outcome. Call ids
//!   (`#12`) tie a request to its apply and its answer.
//! - *clock values* (clock reads, cutoffs, lease expiries, row creation times) are shown
//!   relative to the epoch, the instant virtual time 0 corresponds to: `-300000` is five
//!   minutes before the run started.
//! - *annotations*: lines starting `**` (faults, lease handovers) and `!!` (the violation,
//!   right after the event that broke the invariant).
//!
//! Nothing here reads an address, a wall clock or a hash order: the same run renders the same
//! bytes on every machine.

use std::fmt::Write as _;

use leasesim_events::{
    Answer, Applied, ClockMs, EndKind, Event, EventKind, Failure, OpKind, Phase, ReplicaId, Request,
};
use leasesim_rt::Stamped;

use crate::runner::{Outcome, RunReport};

/// What the header says about where a run came from.
#[derive(Clone, Debug)]
pub struct TraceHeader {
    pub scenario: String,
    pub source: String,
    /// `seed 42` or `choices path/to/file`.
    pub feed: String,
    pub worker: String,
    pub strategy: String,
    /// The PCT step estimate the run used (PCT only).
    pub pct_steps: Option<u64>,
    /// The checker set (see `runner::checker_set`): halting checkers change the stream.
    pub checkers: String,
    /// Scenario overrides the run used (`KEY = VALUE`, from a shrink's choices file); none
    /// for a plain scenario, and then the header has no `set:` line.
    pub overrides: Vec<String>,
}

impl TraceHeader {
    /// The header of a run of `spec`, fed by `feed` (`seed 42`, `choices FILE`, ...).
    pub fn of(spec: &crate::runner::RunSpec, feed: String) -> TraceHeader {
        TraceHeader {
            scenario: spec.scenario.name.clone(),
            source: spec.scenario.source.clone(),
            feed,
            worker: spec.worker.clone(),
            strategy: spec.strategy.to_string(),
            pct_steps: spec.pct_steps,
            checkers: crate::runner::checker_set(&spec.scenario),
            overrides: Vec::new(),
        }
    }
}

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

fn op_name(op: OpKind) -> &'static str {
    op.name()
}

/// The text of one event (without time and replica).
pub fn event_text(kind: &EventKind) -> String {
    match kind {
        EventKind::Phase(Phase::Safety) => "== phase: safety (faults on)".into(),
        EventKind::Phase(Phase::Liveness) => "== phase: liveness (faults healed)".into(),
        EventKind::Phase(Phase::Shutdown) => "== phase: shutdown (stopping every replica)".into(),
        EventKind::Phase(Phase::End) => "== phase: end".into(),
        EventKind::TermStarted { term } => format!("run() term {term} begins"),
        EventKind::TermEnded { term, end, rows } => {
            format!("run() term {term} ends: {}, {rows} rows", end_name(*end))
        }
        EventKind::Call { call, request } => format!("-> {} #{call}", request_text(request)),
        EventKind::Rejected { call, op } => {
            format!("   {} #{call} rejected before apply (fault)", op_name(*op))
        }
        EventKind::Applied { call, applied } => {
            format!("   applied #{call}: {}", applied_text(applied))
        }
        EventKind::ReplyLost { call } => format!("   reply to #{call} lost after apply (fault)"),
        EventKind::Answered { call, op, answer } => {
            format!("<- {} #{call}: {}", op_name(*op), answer_text(answer))
        }
        EventKind::ClockRead { now_ms } => format!("clock reads {}", clock(*now_ms)),
        EventKind::TimerSet { duration_ms } => format!("sleep {duration_ms}ms"),
        EventKind::Paused { until_ms } => format!("** process paused until t={until_ms}ms"),
        EventKind::Resumed => "** process resumed".into(),
        EventKind::ClockJumped { by_ms } => format!("** clock jumps {by_ms:+}ms"),
        EventKind::Revoked { token } => format!("** authority revokes token {token}"),
        EventKind::StopCalled => "stop() called".into(),
        EventKind::StopResolved => "stop() returned".into(),
        EventKind::Restarted => "restarted with a fresh worker".into(),
        EventKind::Backlog {
            eligible_before_ms,
            remaining,
        } => format!(
            "backlog check: {remaining} rows created before {} remain",
            clock(*eligible_before_ms)
        ),
    }
}

/// Per replica: the tokens its open term received and the cutoff of its first delete, so a
/// term's end can say what it held.
#[derive(Default)]
struct TermNotes {
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
            EventKind::TermStarted { .. } => self.terms[replica] = TermNote::default(),
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
            EventKind::TermEnded { .. } => {
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
struct Handover {
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

/// One rendered line for an event.
pub fn line(event: &Stamped<Event>) -> String {
    let replica = event
        .event
        .replica
        .map_or_else(|| "--".to_string(), |r| r.to_string());
    format!(
        "t={:>8}ms  {replica:<3}  {}",
        event.at_ms,
        event_text(&event.event.kind)
    )
}

/// The header block.
pub fn header(head: &TraceHeader, report: &RunReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "scenario: {} ({})", head.scenario, head.source);
    let _ = writeln!(out, "feed:     {}", head.feed);
    let _ = writeln!(out, "worker:   {}", head.worker);
    let _ = writeln!(out, "strategy: {}", head.strategy);
    if let Some(steps) = head.pct_steps {
        let _ = writeln!(out, "pct:      {steps} steps estimated");
    }
    let _ = writeln!(out, "checkers: {}", head.checkers);
    for (index, line) in head.overrides.iter().enumerate() {
        let label = if index == 0 { "set:     " } else { "         " };
        let _ = writeln!(out, "{label} {line}");
    }
    for (index, line) in report.profile.describe().iter().enumerate() {
        let label = if index == 0 { "profile: " } else { "         " };
        let _ = writeln!(out, "{label} {line}");
    }
    let _ = writeln!(out, "verdict:  {}", verdict_line(&report.outcome));
    for expected in &report.expected {
        let _ = writeln!(
            out,
            "expected: {} (declared by the scenario): {}",
            expected.invariant.name(),
            expected.sentence
        );
    }
    out
}

/// `pass`, or `VIOLATION name: sentence`, `DEADLOCK: ...`, etc.
pub fn verdict_line(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Pass => "pass: every invariant held".into(),
        Outcome::Violation(v) => format!("VIOLATION {}: {}", v.invariant.name(), v.sentence),
        Outcome::Deadlock { .. } => format!("DEADLOCK: {}", outcome.sentence()),
        Outcome::Panic { .. } => format!("PANIC: {}", outcome.sentence()),
        Outcome::Spin { .. } => format!("SPIN: {}", outcome.sentence()),
        Outcome::Hang { .. } => format!("HANG: {}", outcome.sentence()),
        Outcome::Liveness { .. } => format!("LIVENESS: {}", outcome.sentence()),
    }
}

/// The full text trace: header, then one line per event, the violation marked in place.
pub fn render(head: &TraceHeader, report: &RunReport) -> String {
    let mut out = header(head, report);
    out.push('\n');
    let marks: Vec<(u64, String)> = report
        .outcome
        .violation()
        .into_iter()
        .chain(report.expected.iter())
        .map(|v| {
            (
                v.event.seq,
                format!("!! {} violated: {}", v.invariant.name(), v.sentence),
            )
        })
        .collect();
    let mut handover = Handover::default();
    let mut terms = TermNotes::default();
    for event in &report.events {
        let suffix = terms.suffix(&event.event).unwrap_or_default();
        let _ = writeln!(out, "{}{suffix}", line(event));
        if let Some(note) = handover.note(&event.event) {
            let _ = writeln!(out, "{:>13}  {:<3}  {note}", "", "");
        }
        for (_, mark) in marks.iter().filter(|(seq, _)| *seq == event.seq) {
            let _ = writeln!(out, "{:>13}  {:<3}  {mark}", "", "");
        }
    }
    let _ = writeln!(
        out,
        "\n{} events; verdict: {}",
        report.events.len(),
        verdict_line(&report.outcome)
    );
    out
}

/// The events as JSON lines (one object per event), then one verdict object, for tools.
pub fn render_json(report: &RunReport) -> String {
    let mut out = String::new();
    for event in &report.events {
        let value = serde_json::json!({
            "seq": event.seq,
            "at_ms": event.at_ms,
            "replica": event.event.replica.map(|r| r.to_string()),
            "event": event.event.kind,
            "text": event_text(&event.event.kind),
        });
        let _ = writeln!(out, "{value}");
    }
    let violation = report.outcome.violation();
    let verdict = serde_json::json!({
        "verdict": report.outcome.label(),
        "pass": report.outcome.is_pass(),
        "sentence": report.outcome.sentence(),
        "event_seq": violation.map(|v| v.event.seq),
        "at_ms": violation.map(|v| v.at_ms),
        "expected": report.expected.iter().map(|v| v.invariant.name()).collect::<Vec<_>>(),
    });
    let _ = writeln!(out, "{verdict}");
    out
}

/// A bounded trace for snapshots: the header, the first `max_lines` event lines, then a
/// summary of the whole run (events per kind, the trace hash) and the verdict. Any change
/// anywhere in the run changes the hash, so a snapshot still catches it; the full trace is
/// one `replay` away.
pub fn render_digest(head: &TraceHeader, report: &RunReport, max_lines: usize) -> String {
    let full = render(head, report);
    let header_end = full.find("\n\n").map_or(0, |i| i + 2);
    let (header, body) = full.split_at(header_end);
    let mut out = String::from(header);
    let lines: Vec<&str> = body.lines().collect();
    let shown = lines.len().min(max_lines);
    for line in &lines[..shown] {
        let _ = writeln!(out, "{line}");
    }
    if shown < lines.len() {
        let _ = writeln!(
            out,
            "... {} more lines (full trace: leasesim replay)",
            lines.len() - shown
        );
    }
    let mut kinds: std::collections::BTreeMap<&'static str, u64> =
        std::collections::BTreeMap::new();
    for event in &report.events {
        *kinds.entry(kind_name(&event.event.kind)).or_insert(0) += 1;
    }
    let counts: Vec<String> = kinds.iter().map(|(k, n)| format!("{k}={n}")).collect();
    let _ = writeln!(
        out,
        "\nsummary: {} events, {} steps, ended at t={}ms, trace hash {:016x}",
        report.stats.events, report.stats.steps, report.stats.end_ms, report.stats.trace_hash
    );
    let _ = writeln!(out, "events by kind: {}", counts.join(" "));
    out
}

fn kind_name(kind: &EventKind) -> &'static str {
    match kind {
        EventKind::Phase(_) => "phase",
        EventKind::TermStarted { .. } => "term-started",
        EventKind::TermEnded { .. } => "term-ended",
        EventKind::Call { .. } => "call",
        EventKind::Rejected { .. } => "rejected",
        EventKind::Applied { .. } => "applied",
        EventKind::ReplyLost { .. } => "reply-lost",
        EventKind::Answered { .. } => "answered",
        EventKind::ClockRead { .. } => "clock-read",
        EventKind::TimerSet { .. } => "timer-set",
        EventKind::Paused { .. } => "paused",
        EventKind::Resumed => "resumed",
        EventKind::ClockJumped { .. } => "clock-jumped",
        EventKind::Revoked { .. } => "revoked",
        EventKind::StopCalled => "stop-called",
        EventKind::StopResolved => "stop-resolved",
        EventKind::Restarted => "restarted",
        EventKind::Backlog { .. } => "backlog",
    }
}
