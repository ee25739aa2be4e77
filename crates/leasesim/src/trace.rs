//! Traces reviewers read: one event a line, byte-stable, for any system.
//!
//! Terminology:
//! - *header*: system, scenario, feed (seed or choices file), worker, strategy, the checker
//!   set, the scenario overrides of a shrunk run (`set:`), the fault profile the run drew, and
//!   the verdict.
//! - *line*: virtual time (fixed width), replica, operation, arguments, outcome. Call ids
//!   (`#12`) tie a request to its apply and its answer. The shared parts of a line (`->`,
//!   `applied #N:`, `<-`, faults, pauses, stops, phases) are written here; the system writes
//!   its requests, applies, answers and notes ([`Render::request_text`] and its siblings).
//! - *clock values* (clock reads, cutoffs, expiries, creation times) are shown relative to the
//!   epoch, the instant virtual time 0 corresponds to: `-300000` is five minutes before the
//!   run started.
//! - *annotations*: lines starting `**` (faults, a system's own, e.g. lease handovers) and `!!`
//!   (the violation, right after the event that broke the invariant).
//!
//! Nothing here reads an address, a wall clock or a hash order: the same run renders the same
//! bytes on every machine.

use std::fmt::Write as _;

use leasesim_events::{ClockMs, Event, EventKind, OpSet, Phase, Stamped};
use leasesim_invariants::InvariantName;
use leasesim_sim::System;
use leasesim_timeline::{Annotator, Render};

use crate::runner::{RunReport, RunSpec};

/// What the header says about where a run came from.
#[derive(Clone, Debug)]
pub struct TraceHeader {
    pub system: &'static str,
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
    pub fn of<S: System + Render>(spec: &RunSpec<S>, feed: String) -> TraceHeader {
        TraceHeader {
            system: S::NAME,
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

/// The text of one event (without time and replica).
pub fn event_text<S: System + Render>(kind: &EventKind<S>) -> String {
    match kind {
        EventKind::Phase(Phase::Safety) => "== phase: safety (faults on)".into(),
        EventKind::Phase(Phase::Liveness) => "== phase: liveness (faults healed)".into(),
        EventKind::Phase(Phase::Shutdown) => "== phase: shutdown (stopping every replica)".into(),
        EventKind::Phase(Phase::End) => "== phase: end".into(),
        EventKind::Call { call, request } => format!("-> {} #{call}", S::request_text(request)),
        EventKind::Rejected { call, op } => {
            format!("   {} #{call} rejected before apply (fault)", op.name())
        }
        EventKind::Applied { call, applied } => {
            format!("   applied #{call}: {}", S::applied_text(applied))
        }
        EventKind::ReplyLost { call } => format!("   reply to #{call} lost after apply (fault)"),
        EventKind::RequestLost { call, op } => {
            format!("   {} #{call} lost before apply (fault)", op.name())
        }
        EventKind::Answered { call, op, answer } => {
            format!("<- {} #{call}: {}", op.name(), S::answer_text(answer))
        }
        EventKind::ClockRead { now_ms } => format!("clock reads {}", clock(*now_ms)),
        EventKind::TimerSet { duration_ms } => format!("sleep {duration_ms}ms"),
        EventKind::Paused { until_ms } => format!("** process paused until t={until_ms}ms"),
        EventKind::Resumed => "** process resumed".into(),
        EventKind::ClockJumped { by_ms } => format!("** clock jumps {by_ms:+}ms"),
        EventKind::StopCalled => "stop() called".into(),
        EventKind::StopResolved => "stop() returned".into(),
        EventKind::Restarted => "restarted with a fresh worker".into(),
        EventKind::TaskStarted { task, name } => format!("spawns task {task} ({name})"),
        EventKind::TaskEnded { task, aborted } => match aborted {
            true => format!("task {task} aborted"),
            false => format!("task {task} finished"),
        },
        EventKind::Note(note) => S::note_text(note),
    }
}

/// One rendered line for an event.
pub fn line<S: System + Render>(event: &Stamped<Event<S>>) -> String {
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
pub fn header<S: System + Render>(head: &TraceHeader, report: &RunReport<S>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "system:   {}", head.system);
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
    let _ = writeln!(out, "verdict:  {}", report.outcome.verdict_line());
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

/// The full text trace: header, then one line per event, the violation marked in place.
pub fn render<S: System + Render>(head: &TraceHeader, report: &RunReport<S>) -> String {
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
    let mut annotator = S::Annotator::default();
    for event in &report.events {
        let suffix = annotator.suffix(&event.event).unwrap_or_default();
        let _ = writeln!(out, "{}{suffix}", line(event));
        if let Some(note) = annotator.note(&event.event) {
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
        report.outcome.verdict_line()
    );
    out
}

#[cfg(feature = "json")]
/// The header as one JSON object: what the text header says, keyed.
fn header_json<S: System + Render>(head: &TraceHeader, report: &RunReport<S>) -> serde_json::Value {
    serde_json::json!({
        "kind": "header",
        "system": head.system,
        "scenario": head.scenario,
        "source": head.source,
        "feed": head.feed,
        "worker": head.worker,
        "strategy": head.strategy,
        "pct_steps": head.pct_steps,
        "checkers": head.checkers,
        "set": head.overrides,
        "profile": report.profile.describe(),
        "verdict": report.outcome.verdict_line(),
        "clocks": "clock values (clock reads, cutoffs, expiries, creation times) are ms \
                   relative to the instant the run started, as in the text trace; at_ms and \
                   until_ms are virtual time",
    })
}

#[cfg(feature = "json")]
/// JSON lines for tools: the header object, one object per event, then one verdict object;
/// each says its `kind` (`header`, `event`, `verdict`). Clock values are relative to the
/// epoch, as in the text trace.
pub fn render_json<S: System + Render>(head: &TraceHeader, report: &RunReport<S>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", header_json(head, report));
    for event in &report.events {
        let value = serde_json::json!({
            "kind": "event",
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
        "kind": "verdict",
        "system": S::NAME,
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
pub fn render_digest<S: System + Render>(
    head: &TraceHeader,
    report: &RunReport<S>,
    max_lines: usize,
) -> String {
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

fn kind_name<S: System + Render>(kind: &EventKind<S>) -> &'static str {
    match kind {
        EventKind::Phase(_) => "phase",
        EventKind::Call { .. } => "call",
        EventKind::Rejected { .. } => "rejected",
        EventKind::Applied { .. } => "applied",
        EventKind::ReplyLost { .. } => "reply-lost",
        EventKind::RequestLost { .. } => "request-lost",
        EventKind::Answered { .. } => "answered",
        EventKind::ClockRead { .. } => "clock-read",
        EventKind::TimerSet { .. } => "timer-set",
        EventKind::Paused { .. } => "paused",
        EventKind::Resumed => "resumed",
        EventKind::ClockJumped { .. } => "clock-jumped",
        EventKind::StopCalled => "stop-called",
        EventKind::StopResolved => "stop-resolved",
        EventKind::Restarted => "restarted",
        EventKind::TaskStarted { .. } => "task-started",
        EventKind::TaskEnded { .. } => "task-ended",
        EventKind::Note(note) => S::note_name(note),
    }
}
