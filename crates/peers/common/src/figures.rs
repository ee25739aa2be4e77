//! The side-by-side table (markdown) from every side's figures.
//!
//! Terminology:
//! - *advantage*: how many times better leasesim does than a peer on a row: runs per second
//!   divided (leasesim / peer), costs to the first violation inverted (peer / leasesim), so
//!   above 1 is leasesim ahead on every row and below 1 the peer.
//! - *cell*: a side's figure on a row; `-` when the side has no such figure.

use std::fmt::Write;

use crate::measure::{Figures, WorkerFigures};

fn number(value: f64) -> String {
    match value {
        v if v >= 100.0 => format!("{v:.0}"),
        v if v >= 1.0 => format!("{v:.2}"),
        v => format!("{v:.2e}"),
    }
}

fn advantage(ratio: Option<f64>) -> String {
    ratio.map_or_else(|| "-".to_string(), |r| format!("{}x", number(r)))
}

/// A worker's cell on the runs row or the CPU row (`cpu`), median / p90.
fn cost_cell(worker: Option<&WorkerFigures>, cpu: bool) -> String {
    let Some(w) = worker else {
        return "-".into();
    };
    let pair = match cpu {
        true => w.cpu_s_median.zip(w.cpu_s_p90),
        false => w.runs_median.zip(w.runs_p90),
    };
    match pair {
        Some((median, p90)) => format!(
            "{} / {} (found in {} of {} ranges)",
            number(median),
            number(p90),
            w.found_in,
            w.ranges
        ),
        None => format!(
            "not found in {} runs ({} CPU s)",
            w.runs_total,
            number(w.cpu_s_total)
        ),
    }
}

fn worker<'a>(side: &'a Figures, name: &str) -> Option<&'a WorkerFigures> {
    side.workers.iter().find(|w| w.name == name)
}

/// Leasesim's advantage on a cost row over `peer` (peer / leasesim, medians).
fn cost_advantage(
    base: Option<&WorkerFigures>,
    peer: Option<&WorkerFigures>,
    cpu: bool,
) -> Option<f64> {
    let median = |w: &WorkerFigures| match cpu {
        true => w.cpu_s_median,
        false => w.runs_median,
    };
    let (base, peer) = (median(base?)?, median(peer?)?);
    (base > 0.0).then(|| peer / base)
}

/// One table row: a label, leasesim's cell, then each peer's cell and leasesim's advantage.
fn row(out: &mut String, label: &str, cells: &[String]) {
    let _ = writeln!(out, "| {label} | {} |", cells.join(" | "));
}

/// A worker's cell when some side did not find it: both medians, or what the search cost.
fn search_cell(worker: Option<&WorkerFigures>) -> String {
    let Some(w) = worker else {
        return "-".into();
    };
    match w.runs_median.zip(w.cpu_s_median) {
        Some((runs, cpu)) => format!(
            "found in {} of {} ranges: median {} runs, {} CPU s (all {} runs: {} CPU s)",
            w.found_in,
            w.ranges,
            number(runs),
            number(cpu),
            w.runs_total,
            number(w.cpu_s_total)
        ),
        None => cost_cell(Some(w), false),
    }
}

fn worker_rows(out: &mut String, base: &Figures, peers: &[&Figures]) {
    for w in &base.workers {
        // Leasesim found it: its cost rows, a peer that did not find it says what its search
        // cost. Leasesim did not: one row of what each search found and cost.
        if w.runs_median.is_none() {
            let mut cells = vec![search_cell(Some(w))];
            for peer in peers {
                cells.extend([search_cell(worker(peer, &w.name)), "-".into()]);
            }
            row(
                out,
                &format!("`{}`: the search for a violation", w.name),
                &cells,
            );
            continue;
        }
        for (cpu, what) in [(false, "runs"), (true, "CPU s")] {
            let mut cells = vec![cost_cell(Some(w), cpu)];
            for peer in peers {
                let theirs = worker(peer, &w.name);
                cells.push(cost_cell(theirs, cpu));
                cells.push(advantage(cost_advantage(Some(w), theirs, cpu)));
            }
            let label = format!("`{}`: {what} to the first violation, median / p90", w.name);
            row(out, &label, &cells);
        }
    }
}

/// The correct worker's violations over its runs (a workload with faults: 0 on a fair side).
fn violations_row(out: &mut String, base: &Figures, peers: &[&Figures]) {
    let cell = |f: &Figures| format!("{} in {} runs", f.correct_violations, f.correct_runs);
    let mut cells = vec![cell(base)];
    for peer in peers {
        cells.extend([cell(peer), "-".into()]);
    }
    row(out, "correct worker: violations", &cells);
}

/// The table; `sides[0]` is leasesim, the rest the peers.
pub fn markdown(sides: &[Figures]) -> String {
    let (base, peers): (&Figures, Vec<&Figures>) = (&sides[0], sides[1..].iter().collect());
    let mut out = String::new();
    if !base.workload.is_empty() && base.workload != crate::workload::LONG_JOBS.name {
        let _ = writeln!(
            out,
            "### Workload `{}`\n\nFaults: {}.\n",
            base.workload, base.faults
        );
    }
    let mut head = vec![format!("{} ({})", base.peer, base.version)];
    for peer in &peers {
        head.push(format!("{} ({})", peer.peer, peer.version));
        head.push(format!("leasesim advantage over {}", peer.peer));
    }
    row(&mut out, "", &head);
    row(&mut out, "---", &vec!["---".to_string(); head.len()]);
    let mut cells = vec![number(base.correct_runs_per_s)];
    for peer in &peers {
        cells.push(number(peer.correct_runs_per_s));
        cells.push(advantage(Some(
            base.correct_runs_per_s / peer.correct_runs_per_s,
        )));
    }
    row(&mut out, "correct worker: runs per CPU second", &cells);
    if !base.workload.is_empty() && base.workload != crate::workload::LONG_JOBS.name {
        violations_row(&mut out, base, &peers);
    }
    worker_rows(&mut out, base, &peers);
    let yes = |f: &Figures| if f.replays_identically { "yes" } else { "no" }.to_string();
    let mut cells = vec![yes(base)];
    for peer in &peers {
        cells.extend([yes(peer), "-".into()]);
    }
    row(&mut out, "same seed, same trace hash", &cells);
    let mut cells = vec![base.at_failure.clone()];
    for peer in &peers {
        cells.extend([peer.at_failure.clone(), "-".into()]);
    }
    row(&mut out, "what the user gets at a failure", &cells);
    out.push_str(&footnotes(sides));
    out
}

/// What each side cannot express, and the correct worker's false alarms if any.
fn footnotes(sides: &[Figures]) -> String {
    let mut out = String::new();
    for side in sides {
        if side.correct_violations > 0 {
            let _ = writeln!(
                out,
                "\n**{}: the correct worker failed {} of {} runs** (a finding to explain).",
                side.peer, side.correct_violations, side.correct_runs
            );
        }
        if !side.cannot_express.is_empty() {
            let _ = writeln!(out, "\n{} cannot express, or leaves out:\n", side.peer);
            for item in &side.cannot_express {
                let _ = writeln!(out, "- {item}");
            }
        }
    }
    out
}
