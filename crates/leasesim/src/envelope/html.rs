//! An envelope as a self-contained HTML page: the map as SVG, read without a legend hunt.
//!
//! Terminology:
//! - *cell*: one grid point's square. Safe cells are green, unsafe ones take their outcome's
//!   colour (named in the key beside the map), refused ones grey. A cell that was measured
//!   is solid and carries its share (`3/200`); an inferred one is pale and hatched.
//! - *boundary*: a thick line along every cell edge between two classes.
//! - A cell's tooltip (`title`) says its values, seeds, share with its interval and outcomes.

use std::fmt::Write as _;

use super::render::{cost_line, letters, outcome_at, percent};
use super::{Class, Envelope, Index, Mark, PointResult};

/// The colours of unsafe outcomes, in letter order (distinct from the safe green and the
/// refused grey).
pub const PALETTE: [&str; 8] = [
    "#d62728", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf", "#1f77b4",
];
/// The colour of safe cells.
pub const SAFE: &str = "#2ca02c";
/// The colour of refused cells.
pub const REFUSED: &str = "#9e9e9e";
/// The fill of a point an interrupted envelope did not run.
pub const UNKNOWN: &str = "#ffffff";
/// A cell's side (px).
pub const CELL: usize = 60;
/// The grid's left margin in the SVG (px) with two keys: room for the second key's ticks.
pub const LEFT_TWO_KEYS: usize = 120;
/// The grid's left margin in the SVG (px) with one key.
pub const LEFT_ONE_KEY: usize = 20;
/// The grid's top margin in the SVG (px).
pub const TOP: usize = 10;

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn colour(envelope: &Envelope, letters: &[(char, String)], index: Index) -> &'static str {
    if !envelope.known(index) {
        return UNKNOWN;
    }
    match envelope.map.class(index) {
        Class::Safe => SAFE,
        Class::Refused => REFUSED,
        Class::Unsafe => {
            let outcome = outcome_at(envelope, index);
            let at = letters
                .iter()
                .position(|(_, o)| Some(o) == outcome.as_ref());
            at.map_or(PALETTE[0], |i| PALETTE[i % PALETTE.len()])
        }
    }
}

/// A cell's text and tooltip.
fn cell_text(envelope: &Envelope, index: Index) -> (String, String) {
    let values = envelope.values_text(index);
    if !envelope.known(index) {
        return (
            "?".into(),
            format!("{values}\nnot run: the envelope was interrupted"),
        );
    }
    match envelope.point(index).map(|p| &p.result) {
        None => {
            let class = match envelope.map.class(index) {
                Class::Safe => "safe",
                Class::Unsafe => "unsafe",
                Class::Refused => "refused",
            };
            (
                String::new(),
                format!("{values}\nnot run: {class}, inferred from the nearest point run"),
            )
        }
        Some(PointResult::Refused { key, why }) => (
            "refused".into(),
            format!("{values}\nrefused at {key}: {why}"),
        ),
        Some(PointResult::Ran(runs)) => {
            let (lo, hi) = runs.interval();
            let share = if runs.marked == 0 {
                format!("no seed marked: p < {} at 95 %", percent(hi))
            } else {
                format!(
                    "{} of seeds marked (95 %: {}-{})",
                    percent(runs.share()),
                    percent(lo),
                    percent(hi)
                )
            };
            let outcomes: Vec<String> = runs
                .by_outcome
                .iter()
                .map(|(n, t)| format!("{n}: {} seeds", t.seeds))
                .collect();
            let tip = format!(
                "{values}\n{} seeds, {share}\n{}",
                runs.seeds,
                outcomes.join("\n")
            );
            (format!("{}/{}", runs.marked, runs.seeds), tip)
        }
    }
}

fn cells(
    envelope: &Envelope,
    letters: &[(char, String)],
    left: usize,
    top: usize,
    out: &mut String,
) {
    let (w, h) = (envelope.map.width, envelope.map.height);
    for y in 0..h {
        for x in 0..w {
            let (px, py) = (left + x * CELL, top + (h - 1 - y) * CELL);
            let measured = envelope.map.was_measured((x, y));
            let (text, tip) = cell_text(envelope, (x, y));
            let fill = colour(envelope, letters, (x, y));
            let opacity = if measured { "0.85" } else { "0.3" };
            let _ = write!(
                out,
                "<g><title>{}</title><rect x='{px}' y='{py}' width='{CELL}' height='{CELL}' fill='{fill}' fill-opacity='{opacity}' stroke='#fff'/>",
                escape(&tip)
            );
            if !measured {
                let _ = write!(
                    out,
                    "<rect x='{px}' y='{py}' width='{CELL}' height='{CELL}' fill='url(#hatch)'/>"
                );
            }
            let _ = writeln!(
                out,
                "<text x='{}' y='{}' class='share'>{}</text></g>",
                px + CELL / 2,
                py + CELL / 2 + 4,
                escape(&text)
            );
        }
    }
}

fn boundary(envelope: &Envelope, left: usize, top: usize, out: &mut String) {
    let h = envelope.map.height;
    for (a, b) in envelope.boundary() {
        let (x1, y1, x2, y2) = if a.1 == b.1 {
            // Neighbours in a row: the vertical edge between them.
            let x = left + b.0 * CELL;
            (x, top + (h - 1 - a.1) * CELL, x, top + (h - a.1) * CELL)
        } else {
            let y = top + (h - 1 - a.1) * CELL;
            (left + a.0 * CELL, y, left + (a.0 + 1) * CELL, y)
        };
        let _ = writeln!(
            out,
            "<line x1='{x1}' y1='{y1}' x2='{x2}' y2='{y2}' class='boundary'/>"
        );
    }
}

fn axes(envelope: &Envelope, left: usize, top: usize, out: &mut String) {
    let (w, h) = (envelope.map.width, envelope.map.height);
    let x_axis = &envelope.axes[0];
    let bottom = top + h * CELL;
    for x in 0..w {
        let _ = writeln!(
            out,
            "<text x='{}' y='{}' class='tick'>{}</text>",
            left + x * CELL + CELL / 2,
            bottom + 16,
            x_axis.text(x)
        );
    }
    let _ = writeln!(
        out,
        "<text x='{}' y='{}' class='axis'>{}</text>",
        left + w * CELL / 2,
        bottom + 38,
        escape(&x_axis.key)
    );
    if let Some(y_axis) = envelope.axes.get(1) {
        for y in 0..h {
            let _ = writeln!(
                out,
                "<text x='{}' y='{}' class='ytick'>{}</text>",
                left - 10,
                top + (h - 1 - y) * CELL + CELL / 2 + 4,
                y_axis.text(y)
            );
        }
        let (cx, cy) = (left - 100, top + h * CELL / 2);
        let _ = writeln!(
            out,
            "<text x='{cx}' y='{cy}' class='axis' transform='rotate(-90 {cx} {cy})'>{}</text>",
            escape(&y_axis.key)
        );
    }
}

fn key(envelope: &Envelope, letters: &[(char, String)], out: &mut String) {
    let mut items = vec![(SAFE, "safe: no seed marked".to_string())];
    match &envelope.mark {
        Mark::Situation(name, _) => {
            items.push((PALETTE[0], format!("the situation {name} reached")))
        }
        Mark::Violations => {
            for (i, (_, outcome)) in letters.iter().enumerate() {
                items.push((
                    PALETTE[i % PALETTE.len()],
                    format!("unsafe: {outcome} broken by most seeds"),
                ));
            }
        }
    }
    items.push((
        REFUSED,
        "refused: settings no correct worker could pass".into(),
    ));
    out.push_str("<ul class='key'>");
    for (fill, text) in items {
        let _ = write!(
            out,
            "<li><span style='background:{fill}'></span>{}</li>",
            escape(&text)
        );
    }
    out.push_str("<li><span class='pale'></span>pale, hatched: not run, inferred from the nearest point run</li>");
    out.push_str("<li><span class='line'></span>the boundary between classes</li></ul>\n");
}

/// The page.
pub fn page(envelope: &Envelope) -> String {
    let letters = letters(envelope);
    let (w, h) = (envelope.map.width, envelope.map.height);
    let left = if envelope.axes.len() > 1 {
        LEFT_TWO_KEYS
    } else {
        LEFT_ONE_KEY
    };
    let top = TOP;
    let (width, height) = (left + w * CELL + 20, top + h * CELL + 50);
    let title = format!(
        "envelope of {} `{}`, worker {}",
        envelope.system, envelope.scenario, envelope.worker
    );
    let mut svg = String::new();
    cells(envelope, &letters, left, top, &mut svg);
    boundary(envelope, left, top, &mut svg);
    axes(envelope, left, top, &mut svg);
    let mut out = String::new();
    let _ = write!(
        out,
        "<!doctype html><html><head><meta charset='utf-8'><title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n<p>{} seeds at each point (from seed {}), strategy {}. Each cell is one setting; the number in it is how many of its seeds {}. Hover a cell for its interval and outcomes.</p>\n<div class='row'><svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}'><defs><pattern id='hatch' width='6' height='6' patternUnits='userSpaceOnUse' patternTransform='rotate(45)'><line x1='0' y1='0' x2='0' y2='6' stroke='#fff' stroke-width='2'/></pattern></defs>\n{svg}</svg>\n",
        escape(&title),
        escape(&title),
        envelope.seeds,
        envelope.start_seed,
        envelope.strategy,
        match &envelope.mark {
            Mark::Violations => "broke an invariant".to_string(),
            Mark::Situation(name, _) => format!("reached the situation {name}"),
        }
    );
    key(envelope, &letters, &mut out);
    let interrupted = if envelope.interrupted {
        "<p><strong>Interrupted:</strong> only the points run are drawn (white cells, `?`, were \
         not run), and the last point run may have run fewer seeds.</p>\n"
    } else {
        ""
    };
    let _ = write!(
        out,
        "</div>\n{interrupted}<p>{}</p>\n</body></html>\n",
        escape(&cost_line(envelope))
    );
    out
}

const STYLE: &str = "body{font:14px system-ui,sans-serif;margin:20px;color:#222}h1{font-size:18px}\
.row{display:flex;gap:24px;align-items:flex-start}.share{font-size:11px;text-anchor:middle;fill:#000}\
.tick{font-size:11px;text-anchor:middle}.ytick{font-size:11px;text-anchor:end}.axis{font-size:13px;text-anchor:middle;font-weight:600}\
.boundary{stroke:#000;stroke-width:3;stroke-linecap:round}.key{list-style:none;padding:0}\
.key li{margin:6px 0;display:flex;align-items:center;gap:8px}.key span{display:inline-block;width:18px;height:18px}\
.key .pale{background:repeating-linear-gradient(45deg,#ccc,#ccc 3px,#fff 3px,#fff 6px)}\
.key .line{height:3px;background:#000}";
