//! leasesim-timeline: one self-contained HTML timeline of one simulated run, of any system.
//!
//! The crate knows no system and no executor: it draws *moments* (each event's time and lane)
//! and *strokes* (what each event draws: a call leaving and answering, a mark, a held token
//! starting or ending, a pause, a phase). Each system decides what its events draw.
//!
//! Terminology:
//! - *lane*: one horizontal band per replica (`r1`..`rN`) along virtual time. The *world row*
//!   above the lanes carries the world's own events: phase names, revocations, backlog checks.
//! - *segment*: a stretch during which a worker held one fencing token, drawn as a bar on its
//!   lane and labelled `t<token>`: from the acquire's answer with a lease (or a renewal's
//!   answer that rotated the token) to the next rotation, the release's answer, a renewal
//!   answered `None` (drawn with a warning-coloured end) or the end of the term.
//! - *call line*: a thin line from a call's send to its answer, one row per operation.
//! - *mark*: a small shape at a point event: deletes (with row counts), renewals, releases,
//!   faults and refusals (warning colour), stops, restarts, clock jumps.
//! - *words*: what the system calls its held bars, call rows and marks in the legend and the
//!   hover text ([`Words`]); each system names its own ([`Render::WORDS`]).
//! - *cluster*: consecutive marks of one kind closer than [`MERGE_GAP_PX`] at the chosen scale,
//!   drawn as one (deletes show the summed rows; the hover text lists the first events).
//! - *pause*: a process pause, shaded over the lane from `Paused` to `Resumed`.
//! - *phase band*: safety, liveness and shutdown as translucent bands behind everything.
//! - *scale*: whole pixels per second of virtual time: [`DEFAULT_PX_PER_S`], stretched for
//!   short runs to [`MIN_PLOT_WIDTH_PX`], squeezed for long ones to [`MAX_PLOT_WIDTH_PX`]; the
//!   plot scrolls horizontally.
//!
//! The document needs no network, no external asset and no script: hover text is SVG
//! `<title>`. It is byte-deterministic: no hash-ordered iteration, no clock, and coordinates
//! are integers in tenths of a pixel printed with at most one decimal.

mod cluster;
mod escape;
mod html;
mod layout;
mod model;
pub mod palette;
mod render;
mod scale;
mod style;
mod svg;
mod words;

pub use layout::{LANE_GAP_PX, LANE_HEIGHT_PX, LANE_PROBE_X_PX, NAMES_WIDTH_PX};
pub use model::{CallStyle, Draw, MarkKind, Moment, Stroke};
pub use palette::{LANE_FILL_EVEN, LANE_FILL_EVEN_RGB, LANE_FILL_ODD, LANE_FILL_ODD_RGB};
pub use render::{Annotator, Render};
pub use scale::{DEFAULT_PX_PER_S, MAX_PLOT_WIDTH_PX, MAX_PX_PER_S, MIN_PLOT_WIDTH_PX};
pub use svg::MERGE_GAP_PX;
pub use words::{CallWords, MarkWords, Words};

/// Everything one timeline shows.
#[derive(Clone, Debug)]
pub struct TimelineInput<'a> {
    /// e.g. `steady · seed 42 · worker correct`.
    pub title: String,
    /// Scenario, feed, worker, strategy, profile and verdict lines, shown at the top.
    pub header_lines: Vec<String>,
    /// Number of lanes (`r1..rN`); an event naming a later replica adds lanes up to it.
    pub replicas: u16,
    /// Every event of the run, in order: where and when.
    pub moments: &'a [Moment],
    /// What the events draw, in event order (see [`Draw`]).
    pub strokes: &'a [Stroke],
    /// The trace line of each event (same index as `moments`), shown on hover; a missing line
    /// shows as empty.
    pub lines: &'a [String],
    /// The violation to highlight.
    pub violation: Option<ViolationMark>,
    /// What the system calls its held bars, call rows and marks ([`Render::WORDS`]).
    pub words: &'a Words,
}

/// The event that broke an invariant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViolationMark {
    pub seq: u64,
    pub invariant: String,
    pub sentence: String,
}

/// Renders one self-contained HTML document (inline SVG and CSS).
pub fn render_html(input: &TimelineInput<'_>) -> String {
    let model = model::build(input.moments, input.strokes, input.replicas);
    let scale = scale::Scale::for_end(model.end_ms);
    let spot = input
        .violation
        .as_ref()
        .and_then(|mark| locate(input.moments, mark));
    let mut plot = svg::Plot::new(scale, input.lines, input.words, model.lanes.len());
    let plot_svg = plot.render(&model, spot.as_ref());
    let names_svg = svg::names_svg(model.lanes.len());
    let parts = html::Parts {
        names_svg: &names_svg,
        plot_svg: &plot_svg,
        violation: input.violation.as_ref().map(|mark| (mark, spot.as_ref())),
        end_ms: model.end_ms,
        px_per_s: scale.px_per_s,
        merged_away: plot.merged_away,
    };
    html::document(input, &parts)
}

/// Where the violation's event is, if it is among the moments.
fn locate(moments: &[Moment], mark: &ViolationMark) -> Option<svg::Spot> {
    let index = moments.iter().position(|moment| moment.seq == mark.seq)?;
    let moment = &moments[index];
    Some(svg::Spot {
        index,
        at_ms: moment.at_ms,
        lane: moment.lane.map(usize::from),
        summary: format!("VIOLATION {}: {}", mark.invariant, mark.sentence),
    })
}
