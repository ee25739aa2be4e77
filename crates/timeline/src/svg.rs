//! Drawing the model: the name column and the scrolling plot, both inline SVG.
//!
//! Terminology:
//! - *plot*: the wide SVG inside the horizontal scroll container: world row, lanes, phase
//!   bands, grid and axes, all along one [`Scale`].
//! - *name column*: the narrow SVG left of it with the row names on the lane fills.
//! - *title*: an SVG `<title>` child; browsers show it on hover. It holds a summary and the
//!   trace lines of the first `MAX_TITLE_LINES` events the element stands for.
//! - *merge gap*: marks of one kind closer than `MERGE_GAP_PX` are drawn as one cluster.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::cluster::{Cluster, merge_close};
use crate::escape::push_escaped;
use crate::layout::*;
use crate::model::{CallSpan, Lane, Mark, MarkKind, Model, PhaseBand, Segment, Span};
use crate::palette::{LANE_FILL_EVEN, LANE_FILL_ODD, WORLD_ROW_FILL};
use crate::scale::{Scale, px, text_width_tenths, tick_label};
use crate::style::{Row, Shape, kind_style};
use crate::words::{Words, fill};

/// Marks of one kind closer than this are merged into one.
pub const MERGE_GAP_PX: u64 = 4;
/// Call lines of one operation closer than this are merged into one.
const CALL_MERGE_GAP_TENTHS: u64 = 10;
/// Hover text lists at most this many event lines.
const MAX_TITLE_LINES: usize = 6;
/// Smallest drawn width of a bar mark.
const MIN_BAR_TENTHS: u64 = 30;

/// A text under or beside a mark: x (tenths), class, text.
type Label = (u64, &'static str, String);

/// Where the violation is drawn.
#[derive(Clone, Debug)]
pub(crate) struct Spot {
    pub index: usize,
    pub at_ms: u64,
    pub lane: Option<usize>,
    /// Hover summary: `VIOLATION name: sentence`.
    pub summary: String,
}

/// The lane fill of lane `index` (0-based: r1 is odd).
pub(crate) fn lane_fill(index: usize) -> &'static str {
    if index.is_multiple_of(2) {
        LANE_FILL_ODD
    } else {
        LANE_FILL_EVEN
    }
}

/// The name column.
pub(crate) fn names_svg(lanes: usize) -> String {
    let height_px = svg_height_px(lanes);
    let mut out = format!(
        "<svg class=\"names\" width=\"{NAMES_WIDTH_PX}\" height=\"{height_px}\" role=\"img\" \
         aria-label=\"lane names\">\n"
    );
    let world_top = world_row_top_px();
    let _ = writeln!(
        out,
        "<rect x=\"0\" y=\"{world_top}\" width=\"{NAMES_WIDTH_PX}\" height=\"{WORLD_ROW_HEIGHT_PX}\" \
         fill=\"{WORLD_ROW_FILL}\"/><text x=\"5\" y=\"{}\">world</text>",
        world_top + 15
    );
    for index in 0..lanes {
        let top = lane_top_px(index);
        let _ = writeln!(
            out,
            "<rect x=\"0\" y=\"{top}\" width=\"{NAMES_WIDTH_PX}\" height=\"{LANE_HEIGHT_PX}\" \
             fill=\"{}\"/><text class=\"ln\" x=\"9\" y=\"{}\">r{}</text>",
            lane_fill(index),
            top + BAR_TOP_PX + 12,
            index + 1
        );
    }
    out.push_str("</svg>");
    out
}

/// The plot being written.
pub(crate) struct Plot<'a> {
    out: String,
    scale: Scale,
    lines: &'a [String],
    words: &'a Words,
    lanes: usize,
    /// Marks and call lines drawn as part of a cluster rather than on their own.
    pub merged_away: usize,
}

impl<'a> Plot<'a> {
    pub(crate) fn new(
        scale: Scale,
        lines: &'a [String],
        words: &'a Words,
        lanes: usize,
    ) -> Plot<'a> {
        Plot {
            out: String::new(),
            scale,
            lines,
            words,
            lanes,
            merged_away: 0,
        }
    }

    /// Draws the whole plot and returns its SVG.
    pub(crate) fn render(&mut self, model: &Model, violation: Option<&Spot>) -> String {
        let (width_px, height_px) = (self.scale.plot_width_px(), svg_height_px(self.lanes));
        let _ = writeln!(
            self.out,
            "<svg class=\"plot\" width=\"{width_px}\" height=\"{height_px}\" role=\"img\" \
             aria-label=\"timeline\">"
        );
        self.backgrounds(width_px);
        self.phase_bands(&model.phases);
        self.grid_and_axes(height_px);
        for (index, lane) in model.lanes.iter().enumerate() {
            self.lane(index, lane);
        }
        self.world_row(model);
        if let Some(spot) = violation {
            self.violation(spot);
        }
        self.out.push_str("</svg>");
        std::mem::take(&mut self.out)
    }

    fn backgrounds(&mut self, width_px: u64) {
        let world_top = world_row_top_px();
        let _ = writeln!(
            self.out,
            "<rect x=\"0\" y=\"{world_top}\" width=\"{width_px}\" height=\"{WORLD_ROW_HEIGHT_PX}\" \
             fill=\"{WORLD_ROW_FILL}\"/>"
        );
        for index in 0..self.lanes {
            let _ = writeln!(
                self.out,
                "<rect x=\"0\" y=\"{}\" width=\"{width_px}\" height=\"{LANE_HEIGHT_PX}\" \
                 fill=\"{}\"/>",
                lane_top_px(index),
                lane_fill(index)
            );
        }
    }

    fn phase_bands(&mut self, phases: &[PhaseBand]) {
        let (top, bottom) = (world_row_top_px(), lanes_bottom_px(self.lanes));
        for band in phases {
            let class = match band.phase {
                leasesim_events::Phase::Safety => "ps",
                leasesim_events::Phase::Liveness => "pl",
                leasesim_events::Phase::Shutdown | leasesim_events::Phase::End => "pd",
            };
            let (x, end) = (self.x(band.span.start_ms), self.x(band.span.end_ms));
            self.rect(class, x, top, end - x, bottom - top);
            self.title(&phase_summary(band), &band.span.events[..1]);
            self.out.push_str("</rect>\n");
        }
    }

    fn grid_and_axes(&mut self, height_px: u64) {
        let (top, bottom) = (world_row_top_px(), lanes_bottom_px(self.lanes));
        let step_ms = self.scale.tick_step_ms();
        let mut grid = String::new();
        for t_ms in self.scale.ticks_ms() {
            let x = px(self.x(t_ms));
            let _ = write!(grid, "M{x} {top}V{bottom}");
            let label = tick_label(t_ms, step_ms);
            for y in [13, height_px - 5] {
                let _ = writeln!(
                    self.out,
                    "<text class=\"ax\" x=\"{x}\" y=\"{y}\" text-anchor=\"middle\">{label}</text>"
                );
            }
        }
        let _ = writeln!(self.out, "<path class=\"gr\" d=\"{grid}\"/>");
    }

    fn lane(&mut self, index: usize, lane: &Lane) {
        let top = lane_top_px(index);
        for pause in &lane.pauses {
            self.pause(top, pause);
        }
        for segment in &lane.segments {
            self.segment(top, segment);
        }
        self.calls(top, &lane.calls);
        let labels = self.marks(top, &lane.marks);
        self.labels(labels, top + DELETE_LABEL_BASELINE_PX);
    }

    fn pause(&mut self, top: u64, pause: &Span) {
        let (x, end) = (self.x(pause.start_ms), self.x(pause.end_ms));
        self.rect("pz", x, top, (end - x).max(10), LANE_HEIGHT_PX);
        let summary = format!(
            "process paused {} ms (t={}..{} ms)",
            pause.end_ms - pause.start_ms,
            pause.start_ms,
            pause.end_ms
        );
        self.title(&summary, &pause.events);
        self.out.push_str("</rect>\n");
    }

    fn segment(&mut self, top: u64, segment: &Segment) {
        let span = &segment.span;
        let (x, end) = (self.x(span.start_ms), self.x(span.end_ms));
        let width = (end - x).max(10);
        self.rect("tb", x, top + BAR_TOP_PX, width, BAR_HEIGHT_PX);
        let mut summary = format!(
            "{} {} held {} ms (t={}..{} ms)",
            self.words.held_token,
            segment.token,
            span.end_ms - span.start_ms,
            span.start_ms,
            span.end_ms
        );
        if segment.lost {
            let _ = write!(summary, ", lost: {}", self.words.held_lost);
        }
        self.title(&summary, &span.events);
        self.out.push_str("</rect>\n");
        if segment.lost {
            let cap = width.min(30);
            self.rect("lw", x + width - cap, top + BAR_TOP_PX, cap, BAR_HEIGHT_PX);
            self.out.push_str("</rect>\n");
        }
        // `t17` where it fits, else the bare token, else nothing (the hover text has it).
        let label = [format!("t{}", segment.token), segment.token.to_string()]
            .into_iter()
            .find(|label| text_width_tenths(label.len()) + 30 <= width);
        if let Some(label) = label {
            let _ = writeln!(
                self.out,
                "<text class=\"tk\" x=\"{}\" y=\"{}\">{label}</text>",
                px(x + 20),
                top + BAR_TOP_PX + 12
            );
        }
    }

    fn calls(&mut self, top: u64, calls: &[CallSpan]) {
        let mut sorted: Vec<&CallSpan> = calls.iter().collect();
        sorted.sort_by_key(|call| {
            (
                call.op.row,
                call.failed,
                call.span.start_ms,
                call.span.events[0],
            )
        });
        let mut groups: BTreeMap<(u64, bool), Vec<Cluster>> = BTreeMap::new();
        for call in sorted {
            let (x, end) = (self.x(call.span.start_ms), self.x(call.span.end_ms));
            let item = Cluster::new(x, end, 0, call.span.events.clone());
            groups
                .entry((call.op.row, call.failed))
                .or_default()
                .push(item);
        }
        for ((row, failed), items) in groups {
            let op = calls
                .iter()
                .find(|call| call.op.row == row)
                .map(|call| call.op)
                .expect("a group holds calls of its row");
            let class = if failed { "cf" } else { op.class };
            let y = top + CALL_ROW_TOP_PX + row * CALL_ROW_STEP_PX;
            for cluster in self.merged(items, CALL_MERGE_GAP_TENTHS) {
                let noun = format!("{} call{}", op.name, if failed { " (failed)" } else { "" });
                self.rect(
                    class,
                    cluster.start_tenths,
                    y,
                    cluster.width_tenths().max(10),
                    CALL_HEIGHT_PX,
                );
                self.title(&count_summary(cluster.count, &noun), &cluster.events);
                self.out.push_str("</rect>\n");
            }
        }
    }

    /// Draws `marks` (of one lane, or of the world row when `top` is the world row's) and
    /// returns their labels, to be placed once every label of the row is known.
    fn marks(&mut self, top: u64, marks: &[Mark]) -> Vec<Label> {
        let mut groups: BTreeMap<MarkKind, Vec<Cluster>> = BTreeMap::new();
        for mark in marks {
            let x = self.x(mark.at_ms);
            let item = Cluster::new(x, x, mark.rows, vec![mark.event]);
            groups.entry(mark.kind).or_default().push(item);
        }
        let mut labels: Vec<Label> = Vec::new();
        for (kind, mut items) in groups {
            items.sort_by_key(|item| (item.start_tenths, item.events[0]));
            let style = kind_style(kind);
            let row_top = match style.row {
                Row::Control => top + CONTROL_ROW_TOP_PX,
                Row::Delete => top + DELETE_ROW_TOP_PX,
                Row::World => top + 7,
            };
            for cluster in self.merged(items, MERGE_GAP_PX * 10) {
                let summary = mark_summary(self.words, kind, &cluster);
                let _ = write!(self.out, "<g class=\"{}\">", style.class);
                self.title(&summary, &cluster.events);
                self.shape(style.shape, &cluster, row_top);
                self.out.push_str("</g>\n");
                if let Some(label) = mark_label(self.words, kind, &cluster) {
                    let offset = if kind == MarkKind::Backlog { 60 } else { 0 };
                    labels.push((cluster.start_tenths + offset, label_class(kind), label));
                }
            }
        }
        labels
    }

    /// Writes row-count labels left to right, skipping any that would overlap the one before.
    fn labels(&mut self, mut labels: Vec<Label>, baseline: u64) {
        labels.sort();
        let mut free_from = 0;
        for (x, class, text) in labels {
            if x < free_from {
                continue;
            }
            let _ = writeln!(
                self.out,
                "<text class=\"{class}\" x=\"{}\" y=\"{baseline}\">{text}</text>",
                px(x)
            );
            free_from = x + text_width_tenths(text.len()) + 30;
        }
    }

    fn shape(&mut self, shape: Shape, cluster: &Cluster, row_top: u64) {
        let x = cluster.start_tenths;
        let (xs, middle) = (px(x), row_top + MARK_HEIGHT_PX / 2);
        if cluster.count > 1 && shape != Shape::Bar && cluster.width_tenths() >= 20 {
            let _ = write!(
                self.out,
                "<rect x=\"{xs}\" y=\"{}\" width=\"{}\" height=\"2\"/>",
                middle - 1,
                px(cluster.width_tenths())
            );
        }
        let h = MARK_HEIGHT_PX;
        let _ = match shape {
            Shape::Bar => write!(
                self.out,
                "<rect x=\"{xs}\" y=\"{row_top}\" width=\"{}\" height=\"{h}\"/>",
                px(cluster.width_tenths().max(MIN_BAR_TENTHS))
            ),
            Shape::Dot => write!(self.out, "<circle cx=\"{xs}\" cy=\"{middle}\" r=\"3.5\"/>"),
            Shape::Square | Shape::HollowSquare => write!(
                self.out,
                "<rect x=\"{}\" y=\"{}\" width=\"7\" height=\"7\"/>",
                px(x.saturating_sub(35)),
                row_top
            ),
            Shape::Diamond => write!(self.out, "<path d=\"M{xs} {row_top}l4 4l-4 4l-4-4z\"/>"),
            Shape::Triangle => write!(self.out, "<path d=\"M{xs} {row_top}l4.5 {h}h-9z\"/>"),
            Shape::Tick => write!(
                self.out,
                "<rect x=\"{}\" y=\"{}\" width=\"2\" height=\"{}\"/>",
                px(x.saturating_sub(10)),
                row_top - 1,
                h + 2
            ),
        };
    }

    fn world_row(&mut self, model: &Model) {
        let top = world_row_top_px();
        let mut labels = self.marks(top, &model.world_marks);
        for band in &model.phases {
            let x = self.x(band.span.start_ms) + 40;
            labels.push((x, "ax", phase_name(band.phase).to_string()));
        }
        self.labels(labels, top + 15);
    }

    fn violation(&mut self, spot: &Spot) {
        let x = self.x(spot.at_ms);
        let (top, bottom) = (world_row_top_px(), lanes_bottom_px(self.lanes));
        let _ = write!(self.out, "<g id=\"violation\" class=\"vi\">");
        self.title(&spot.summary, &[spot.index]);
        let _ = write!(
            self.out,
            "<rect x=\"{}\" y=\"{top}\" width=\"2\" height=\"{}\"/>",
            px(x.saturating_sub(10)),
            bottom - top
        );
        let centre_y = match spot.lane {
            Some(lane) => lane_top_px(lane) + CONTROL_ROW_TOP_PX + MARK_HEIGHT_PX / 2,
            None => top + WORLD_ROW_HEIGHT_PX / 2,
        };
        let _ = write!(
            self.out,
            "<circle class=\"vr\" cx=\"{}\" cy=\"{centre_y}\" r=\"7\"/>",
            px(x)
        );
        self.out.push_str("</g>\n");
    }

    /// Merges `items` closer than `gap_tenths`, counting what disappeared.
    fn merged(&mut self, items: Vec<Cluster>, gap_tenths: u64) -> Vec<Cluster> {
        let before = items.len();
        let merged = merge_close(items, gap_tenths);
        self.merged_away += before - merged.len();
        merged
    }

    fn x(&self, at_ms: u64) -> u64 {
        self.scale.x_tenths(at_ms)
    }

    /// Opens a `<rect>` (the caller writes its title and closes it).
    fn rect(&mut self, class: &str, x_tenths: u64, y_px: u64, width_tenths: u64, height_px: u64) {
        let _ = write!(
            self.out,
            "<rect class=\"{class}\" x=\"{}\" y=\"{y_px}\" width=\"{}\" height=\"{height_px}\">",
            px(x_tenths),
            px(width_tenths)
        );
    }

    /// Writes a `<title>`: the summary, then the trace lines of the first few events.
    fn title(&mut self, summary: &str, events: &[usize]) {
        self.out.push_str("<title>");
        push_escaped(&mut self.out, summary);
        for &index in events.iter().take(MAX_TITLE_LINES) {
            self.out.push('\n');
            push_escaped(
                &mut self.out,
                self.lines.get(index).map_or("", String::as_str),
            );
        }
        if events.len() > MAX_TITLE_LINES {
            let _ = write!(
                self.out,
                "\n… and {} more events",
                events.len() - MAX_TITLE_LINES
            );
        }
        self.out.push_str("</title>");
    }
}

fn count_summary(count: usize, noun: &str) -> String {
    match count {
        1 => noun.to_string(),
        _ => format!("{count} × {noun} (merged at this scale)"),
    }
}

/// A mark's hover summary: its noun (counted when merged), then its count in the system's
/// words, if they show one (retention's: rows deleted, rows left at backlog checks).
fn mark_summary(words: &Words, kind: MarkKind, cluster: &Cluster) -> String {
    let words = words.mark(kind);
    let summary = count_summary(cluster.count, words.noun);
    match words.count {
        "" => summary,
        count => format!("{summary}: {}", fill(count, cluster.rows)),
    }
}

/// The text under a mark, if the system's words give one (retention's: row counts of
/// deletes, rows left at backlog checks).
fn mark_label(words: &Words, kind: MarkKind, cluster: &Cluster) -> Option<String> {
    match words.mark(kind).label {
        "" => None,
        label => Some(fill(label, cluster.rows)),
    }
}

fn label_class(kind: MarkKind) -> &'static str {
    match kind {
        MarkKind::StaleDelete => "sl",
        MarkKind::Backlog => "bl",
        _ => "dl",
    }
}

fn phase_name(phase: leasesim_events::Phase) -> &'static str {
    match phase {
        leasesim_events::Phase::Safety => "safety (faults on)",
        leasesim_events::Phase::Liveness => "liveness (faults healed)",
        leasesim_events::Phase::Shutdown => "shutdown",
        leasesim_events::Phase::End => "end",
    }
}

fn phase_summary(band: &PhaseBand) -> String {
    format!(
        "phase {}: t={}..{} ms",
        phase_name(band.phase),
        band.span.start_ms,
        band.span.end_ms
    )
}
