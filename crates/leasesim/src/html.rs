//! The HTML timeline of one run (`replay --html FILE`): the run's events turned into the
//! moments and strokes `leasesim-timeline` draws, with the same header and event lines as the
//! text trace.
//!
//! Terminology:
//! - *shared strokes*: what every system's events draw the same way: phases, calls leaving
//!   and answering (failed when refused, lost or answered an error), faults, pauses, stops,
//!   restarts, clock jumps.
//! - *system strokes*: what the system says its applies, answers and notes draw
//!   ([`Render::draws`]): effects, held tokens, refusals, its own faults.

use leasesim_events::{Event, EventKind, NetFailure, Stamped, Vocabulary};
use leasesim_sim::System;
use leasesim_timeline::Render;
use leasesim_timeline::{Draw, MarkKind, Moment, Stroke, TimelineInput, ViolationMark};

use crate::runner::RunReport;
use crate::trace::{self, TraceHeader};

/// Does `answer` say the call failed (a network failure, or the system's own error)?
fn answer_failed<S: System + Render>(answer: &S::Answer) -> bool {
    *answer == S::failed(NetFailure::Rejected)
        || *answer == S::failed(NetFailure::Timeout)
        || S::answer_is_error(answer)
}

/// The shared strokes of one event, then the system's.
fn strokes_of<S: System + Render>(index: usize, event: &Event<S>, out: &mut Vec<Stroke>) {
    let mut draws = Vec::new();
    let mark = |kind| Draw::Mark { kind, rows: 0 };
    match &event.kind {
        EventKind::Phase(phase) => draws.push(Draw::Phase(*phase)),
        EventKind::Call { call, request } => draws.push(Draw::CallSent {
            call: *call,
            style: S::call_style(<S as Vocabulary>::op(request)),
        }),
        EventKind::Rejected { call, .. } => {
            draws.extend([Draw::CallFailed { call: *call }, mark(MarkKind::Rejected)]);
        }
        EventKind::RequestLost { call, .. } => {
            draws.extend([
                Draw::CallFailed { call: *call },
                mark(MarkKind::RequestLost),
            ]);
        }
        EventKind::ReplyLost { call } => {
            draws.extend([Draw::CallFailed { call: *call }, mark(MarkKind::ReplyLost)]);
        }
        EventKind::Answered { call, answer, .. } => draws.push(Draw::CallAnswered {
            call: *call,
            failed: answer_failed::<S>(answer),
        }),
        EventKind::Paused { until_ms } => draws.push(Draw::PauseStart {
            until_ms: *until_ms,
        }),
        EventKind::Resumed => draws.push(Draw::PauseEnd),
        EventKind::StopCalled => draws.push(mark(MarkKind::StopCalled)),
        EventKind::StopResolved => draws.push(mark(MarkKind::StopResolved)),
        EventKind::Restarted => draws.push(mark(MarkKind::Restarted)),
        EventKind::ClockJumped { .. } => draws.push(mark(MarkKind::ClockJump)),
        EventKind::Applied { .. }
        | EventKind::TaskStarted { .. }
        | EventKind::TaskEnded { .. }
        | EventKind::Note(_)
        | EventKind::ClockRead { .. }
        | EventKind::TimerSet { .. } => {}
    }
    S::draws(event, &mut draws);
    out.extend(draws.into_iter().map(|draw| Stroke { event: index, draw }));
}

/// Every event's moment and strokes.
pub fn strokes<S: System + Render>(events: &[Stamped<Event<S>>]) -> (Vec<Moment>, Vec<Stroke>) {
    let mut strokes = Vec::new();
    let moments = events
        .iter()
        .enumerate()
        .map(|(index, stamped)| {
            strokes_of(index, &stamped.event, &mut strokes);
            Moment {
                seq: stamped.seq,
                at_ms: stamped.at_ms,
                lane: stamped.event.replica.map(|replica| replica.0),
            }
        })
        .collect();
    (moments, strokes)
}

/// A self-contained HTML document showing `report`'s events on one lane per replica.
pub fn render<S: System + Render>(
    head: &TraceHeader,
    report: &RunReport<S>,
    replicas: u16,
) -> String {
    let lines: Vec<String> = report.events.iter().map(trace::line).collect();
    let header_lines: Vec<String> = trace::header(head, report)
        .lines()
        .map(String::from)
        .collect();
    let violation = report.outcome.violation().map(|v| ViolationMark {
        seq: v.event.seq,
        invariant: leasesim_invariants::InvariantName::name(v.invariant).to_string(),
        sentence: v.sentence.clone(),
    });
    let (moments, strokes) = strokes(&report.events);
    let input = TimelineInput {
        title: format!("{} · {} · worker {}", head.scenario, head.feed, head.worker),
        header_lines,
        replicas,
        moments: &moments,
        strokes: &strokes,
        lines: &lines,
        violation,
        words: S::WORDS,
    };
    leasesim_timeline::render_html(&input)
}
