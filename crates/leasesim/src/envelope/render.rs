//! An envelope as plain text: what was measured, the map, the points, the cost.
//!
//! Terminology:
//! - *map*: one character per grid point, the second axis rising upwards: `o` safe, `.` safe
//!   and inferred, a capital letter unsafe (the outcome most of its seeds showed, listed
//!   under the map; `#` for a situation), the same in lower case (or `+`) when inferred, `X`
//!   refused (every point's refusal is known: none is inferred), `?` not run when the
//!   envelope was interrupted (nothing is inferred then).
//! - *letters*: the outcomes of the unsafe points, `A` onwards, in name order.

use std::fmt::Write as _;

use super::axis::number_text;
use super::{Class, Envelope, Index, Mark, PointResult};

/// The outcome letters (see the module docs): `(letter, outcome)`.
pub fn letters(envelope: &Envelope) -> Vec<(char, String)> {
    if matches!(envelope.mark, Mark::Situation(..)) {
        return Vec::new();
    }
    let mut outcomes: Vec<String> = envelope
        .points
        .iter()
        .filter_map(|p| match &p.result {
            PointResult::Ran(runs) if runs.marked > 0 => runs.main_outcome().map(str::to_string),
            _ => None,
        })
        .collect();
    outcomes.sort();
    outcomes.dedup();
    ('A'..='Z').zip(outcomes).collect()
}

/// The outcome an unsafe point shows on the map: its own, or (inferred) its nearest measured
/// unsafe point's.
pub fn outcome_at(envelope: &Envelope, index: Index) -> Option<String> {
    let own = |i: Index| match envelope.point(i).map(|p| &p.result) {
        Some(PointResult::Ran(runs)) if runs.marked > 0 => runs.main_outcome().map(str::to_string),
        _ => None,
    };
    if envelope.map.was_measured(index) {
        return own(index);
    }
    // The nearest measured unsafe point (grid steps, then index order).
    envelope
        .points
        .iter()
        .filter(|p| own(p.index).is_some())
        .min_by_key(|p| {
            let d = p.index.0.abs_diff(index.0) + p.index.1.abs_diff(index.1);
            (d, p.index.1, p.index.0)
        })
        .and_then(|p| own(p.index))
}

/// The map character of a point (see the module docs).
pub fn map_char(envelope: &Envelope, letters: &[(char, String)], index: Index) -> char {
    if !envelope.known(index) {
        return '?';
    }
    let measured = envelope.map.was_measured(index);
    let c = match envelope.map.class(index) {
        Class::Safe => return if measured { 'o' } else { '.' },
        Class::Refused => 'X',
        Class::Unsafe => {
            let outcome = outcome_at(envelope, index);
            letters
                .iter()
                .find(|(_, o)| Some(o) == outcome.as_ref())
                .map_or('#', |(l, _)| *l)
        }
    };
    match (measured, c) {
        (true, c) => c,
        (false, '#') => '+',
        // invariant: refusals are checked at every point, never inferred.
        (false, 'X') => unreachable!("a refused point is always known"),
        (false, c) => c.to_ascii_lowercase(),
    }
}

/// `k` of `n` seeds as the table prints it: `12.5 % (8.6-17.8 %)` with its 95 % interval, or
/// the rule of three's bound when `k` is 0: `p < 3/200 = 1.5 %`.
pub fn share_text(k: u64, n: u64) -> String {
    let (lo, hi) = super::interval(k, n);
    if k == 0 {
        format!("p < 3/{n} = {}", percent(hi))
    } else {
        format!(
            "{} ({}-{})",
            percent(k as f64 / n.max(1) as f64),
            percent(lo),
            percent(hi)
        )
    }
}

/// A share as the table prints it: `12.5 %`.
pub fn percent(p: f64) -> String {
    let v = p * 100.0;
    if v == 0.0 || v == 100.0 {
        format!("{v:.0} %")
    } else if v < 1.0 {
        format!("{v:.2} %")
    } else {
        format!("{v:.1} %")
    }
}

fn header(envelope: &Envelope, out: &mut String) {
    let last = envelope.start_seed.saturating_add(envelope.seeds - 1);
    let _ = writeln!(
        out,
        "envelope of {} `{}`, worker {}, strategy {}",
        envelope.system, envelope.scenario, envelope.worker, envelope.strategy
    );
    let marked = match &envelope.mark {
        Mark::Violations => {
            "a broken invariant (or a deadlock, hang, panic, liveness failure)".to_string()
        }
        Mark::Situation(name, _) => format!("the situation `{name}`"),
    };
    let _ = writeln!(
        out,
        "seeds {} to {last} at each point; a seed counts if it shows {marked}",
        envelope.start_seed
    );
    for (name, axis) in ["x", "y"].iter().zip(&envelope.axes) {
        let _ = writeln!(out, "{name}: {axis}");
    }
}

fn map(envelope: &Envelope, out: &mut String) {
    let letters = letters(envelope);
    let (w, h) = (envelope.map.width, envelope.map.height);
    let label_width = envelope
        .axes
        .get(1)
        .map_or(0, |a| (0..h).map(|y| a.text(y).len()).max().unwrap_or(0));
    if let Some(y_axis) = envelope.axes.get(1) {
        let _ = writeln!(out, "\n{}", y_axis.key);
    } else {
        out.push('\n');
    }
    for y in (0..h).rev() {
        let label = envelope.axes.get(1).map_or(String::new(), |a| a.text(y));
        let row: Vec<String> = (0..w)
            .map(|x| map_char(envelope, &letters, (x, y)).to_string())
            .collect();
        let _ = writeln!(out, "{label:>label_width$} | {}", row.join(" "));
    }
    let x_axis = &envelope.axes[0];
    let _ = writeln!(out, "{:>label_width$} +-{}", "", "-".repeat(2 * w - 1));
    let (first, last) = (x_axis.text(0), x_axis.text(w - 1));
    let gap = (2 * w - 1).saturating_sub(first.len() + last.len()).max(1);
    let _ = writeln!(
        out,
        "{:>label_width$}   {first}{}{last}  {}",
        "",
        " ".repeat(gap),
        x_axis.key
    );
    let mut legend = "o safe  . safe (inferred)  X refused".to_string();
    if letters.is_empty() {
        legend.push_str("  # unsafe  + unsafe (inferred)");
    } else {
        legend.push_str("  A-Z unsafe, by the outcome most seeds showed (lower case: inferred)");
    }
    if envelope.interrupted {
        legend.push_str("  ? not run (interrupted)");
    }
    let _ = writeln!(out, "{legend}");
    for (letter, outcome) in &letters {
        let _ = writeln!(out, "  {letter}  {outcome}");
    }
}

fn points(envelope: &Envelope, out: &mut String) {
    let keys: Vec<&str> = envelope.axes.iter().map(|a| a.key.as_str()).collect();
    let widths: Vec<usize> = envelope
        .axes
        .iter()
        .map(|a| {
            a.key.len().max(
                a.values
                    .iter()
                    .map(|v| number_text(*v).len())
                    .max()
                    .unwrap_or(1),
            )
        })
        .collect();
    let _ = writeln!(out, "\npoints run ({}):", envelope.points_run());
    let mut head = String::from(" ");
    for (key, width) in keys.iter().zip(&widths) {
        let _ = write!(head, " {key:<width$}");
    }
    let _ = writeln!(
        out,
        "{head}  {:>6}  {:>6}  {:<24}  by outcome: seeds that broke it first, share (95 % interval)",
        "seeds", "marked", "share (95 % interval)"
    );
    for point in &envelope.points {
        let mut line = String::from(" ");
        for ((axis, width), i) in envelope
            .axes
            .iter()
            .zip(&widths)
            .zip([point.index.0, point.index.1])
        {
            let _ = write!(line, " {:<width$}", axis.text(i));
        }
        match &point.result {
            PointResult::Refused { .. } => continue,
            PointResult::Ran(runs) => {
                let share = share_text(runs.marked, runs.seeds);
                let outcomes: Vec<String> = runs
                    .by_outcome
                    .iter()
                    .map(|(name, t)| format!("{name} {}", share_text(t.seeds, runs.seeds)))
                    .collect();
                let outcomes = if outcomes.is_empty() {
                    "-".to_string()
                } else {
                    outcomes.join(", ")
                };
                let _ = writeln!(
                    out,
                    "{line}  {:>6}  {:>6}  {share:<24}  {outcomes}",
                    runs.seeds, runs.marked
                );
            }
        }
    }
}

/// The refused points, by the key the loader blamed: how many, and the first one's reason.
fn refusals(envelope: &Envelope, out: &mut String) {
    let mut by_key: std::collections::BTreeMap<&str, (usize, Index, &str)> = Default::default();
    for point in &envelope.points {
        if let PointResult::Refused { key, why } = &point.result {
            by_key.entry(key).or_insert((0, point.index, why)).0 += 1;
        }
    }
    if by_key.is_empty() {
        return;
    }
    let total: usize = by_key.values().map(|(n, _, _)| n).sum();
    let _ = writeln!(
        out,
        "\nrefused ({total}; no correct worker could pass these settings, no seed ran there):"
    );
    for (key, (count, index, why)) in by_key {
        let _ = writeln!(
            out,
            "  {key}: {count} points, e.g. at {}: {why}",
            envelope.values_text(index)
        );
    }
}

/// The cost line: runs against a full grid's.
pub fn cost_line(envelope: &Envelope) -> String {
    let ratio = envelope.grid_runs as f64 / envelope.runs.max(1) as f64;
    let points = envelope.map.width * envelope.map.height;
    format!(
        "runs: {} at {} of {points} points; a full grid: {} ({ratio:.1}x as many)",
        envelope.runs,
        envelope.points_run(),
        envelope.grid_runs
    )
}

/// The envelope as text (the counterexample is the caller's: it saves a file).
pub fn text(envelope: &Envelope) -> String {
    let mut out = String::new();
    header(envelope, &mut out);
    map(envelope, &mut out);
    points(envelope, &mut out);
    refusals(envelope, &mut out);
    out.push('\n');
    out.push_str(&cost_line(envelope));
    out.push('\n');
    if envelope.interrupted {
        out.push_str("interrupted: the map shows the points run (`?`: not run); the last point may have run fewer seeds\n");
    }
    out
}
