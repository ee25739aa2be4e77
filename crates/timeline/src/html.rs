//! The HTML document around the two SVGs: head, header, violation banner, legend, footer.
//!
//! Terminology:
//! - *header*: the title and the caller's header lines (scenario, feed, worker, strategy,
//!   profile, verdict), verbatim in a `<pre>`.
//! - *banner*: the violated invariant and its sentence, in the violation colour, with a link
//!   to the marker on the timeline.
//! - *legend*: one swatch per drawn element kind, drawn with the same classes as the plot and
//!   named in the system's words (only the mark kinds it says it draws, when it says so).
//! - *footer*: event count, span, scale and how many marks were merged.

use std::fmt::Write as _;

use crate::escape::{escape, push_escaped};
use crate::style::{ALL_KINDS, Shape, css, kind_style};
use crate::svg::{MERGE_GAP_PX, Spot};
use crate::words::Words;
use crate::{TimelineInput, ViolationMark};

/// What the document shows besides the caller's text.
pub(crate) struct Parts<'a> {
    pub names_svg: &'a str,
    pub plot_svg: &'a str,
    pub violation: Option<(&'a ViolationMark, Option<&'a Spot>)>,
    pub end_ms: u64,
    pub px_per_s: u64,
    pub merged_away: usize,
}

pub(crate) fn document(input: &TimelineInput<'_>, parts: &Parts<'_>) -> String {
    let title = escape(&input.title);
    let mut out = String::with_capacity(parts.plot_svg.len() + 16_384);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{title}</title>\n<style>\n{}\n</style>\n</head>\n<body>\n\
         <header>\n<h1>{title}</h1>\n<pre>",
        css()
    );
    for line in &input.header_lines {
        push_escaped(&mut out, line);
        out.push('\n');
    }
    out.push_str("</pre>\n</header>\n");
    if let Some((mark, spot)) = parts.violation {
        banner(&mut out, mark, spot);
    }
    let _ = write!(
        out,
        "<div class=\"tl\">\n{}\n<div class=\"scroll\">\n{}\n</div>\n</div>\n",
        parts.names_svg, parts.plot_svg
    );
    legend(&mut out, input.words);
    let _ = write!(
        out,
        "<p class=\"foot\">{} events over {} ms of virtual time; {} px per second; marks of one \
         kind closer than {MERGE_GAP_PX} px are merged ({} merged). Hover any element for its \
         trace lines.</p>\n</body>\n</html>\n",
        input.moments.len(),
        parts.end_ms,
        parts.px_per_s,
        parts.merged_away
    );
    out
}

fn banner(out: &mut String, mark: &ViolationMark, spot: Option<&Spot>) {
    out.push_str("<div class=\"banner\"><b>VIOLATION ");
    push_escaped(out, &mark.invariant);
    out.push_str("</b>: ");
    push_escaped(out, &mark.sentence);
    match spot {
        Some(spot) => {
            let _ = write!(
                out,
                " <a href=\"#violation\">(event #{} at t={} ms{})</a>",
                mark.seq,
                spot.at_ms,
                spot.lane
                    .map_or(String::new(), |lane| format!(", r{}", lane + 1))
            );
        }
        None => {
            let _ = write!(out, " (event #{} is not in this timeline)", mark.seq);
        }
    }
    out.push_str("</div>\n");
}

/// One legend entry: a small SVG drawn with the plot's classes, and its text.
fn entry(out: &mut String, swatch: &str, text: &str) {
    let _ = writeln!(
        out,
        "<span><svg width=\"22\" height=\"12\">{swatch}</svg>{}</span>",
        escape(text)
    );
}

fn legend(out: &mut String, words: &Words) {
    out.push_str("<div class=\"legend\">\n");
    let bar = |class: &str| {
        format!("<rect class=\"{class}\" x=\"1\" y=\"2\" width=\"20\" height=\"8\"/>")
    };
    let line = |class: &str| {
        format!("<rect class=\"{class}\" x=\"1\" y=\"5\" width=\"20\" height=\"2\"/>")
    };
    entry(out, &bar("tb"), words.held);
    for call in words.calls {
        entry(out, &line(call.class), call.label);
    }
    entry(
        out,
        &line("cf"),
        "call failed (rejected, reply lost, error)",
    );
    for kind in ALL_KINDS.into_iter().filter(|kind| words.lists(*kind)) {
        let style = kind_style(kind);
        let swatch = format!(
            "<g class=\"{}\">{}</g>",
            style.class,
            swatch_shape(style.shape)
        );
        entry(out, &swatch, words.mark(kind).legend);
    }
    entry(out, &bar("pz"), "process paused");
    entry(out, &bar("ps"), "phase: safety (faults on)");
    entry(out, &bar("pl"), "phase: liveness (faults healed)");
    entry(out, &bar("pd"), "phase: shutdown");
    let violation = "<rect class=\"vi\" x=\"10\" y=\"0\" width=\"2\" height=\"12\"/>\
                     <circle class=\"vr\" cx=\"11\" cy=\"6\" r=\"4.5\"/>";
    entry(out, violation, "the violation");
    out.push_str("</div>\n");
}

fn swatch_shape(shape: Shape) -> &'static str {
    match shape {
        Shape::Bar => "<rect x=\"6\" y=\"2\" width=\"10\" height=\"8\"/>",
        Shape::Dot => "<circle cx=\"11\" cy=\"6\" r=\"3.5\"/>",
        Shape::Square | Shape::HollowSquare => {
            "<rect x=\"7.5\" y=\"2.5\" width=\"7\" height=\"7\"/>"
        }
        Shape::Diamond => "<path d=\"M11 2l4 4l-4 4l-4-4z\"/>",
        Shape::Triangle => "<path d=\"M11 2l4.5 8h-9z\"/>",
        Shape::Tick => "<rect x=\"10\" y=\"1\" width=\"2\" height=\"10\"/>",
    }
}
