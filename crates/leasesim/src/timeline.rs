//! The HTML timeline of one run (`replay --html FILE`), drawn by `leasesim-timeline` from the
//! same header and event lines as the text trace.

use leasesim_timeline::{TimelineInput, ViolationMark, render_html};

use crate::runner::RunReport;
use crate::trace::{self, TraceHeader};

/// A self-contained HTML document showing `report`'s events on one lane per replica.
pub fn render(head: &TraceHeader, report: &RunReport, replicas: u16) -> String {
    let lines: Vec<String> = report.events.iter().map(trace::line).collect();
    let header_lines: Vec<String> = trace::header(head, report)
        .lines()
        .map(String::from)
        .collect();
    let violation = report.outcome.violation().map(|v| ViolationMark {
        seq: v.event.seq,
        invariant: v.invariant.name().to_string(),
        sentence: v.sentence.clone(),
    });
    let input = TimelineInput {
        title: format!("{} · {} · worker {}", head.scenario, head.feed, head.worker),
        header_lines,
        replicas,
        events: &report.events,
        lines: &lines,
        violation,
    };
    render_html(&input)
}
