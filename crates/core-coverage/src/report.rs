//! Puts the pieces together: per core, its coverable lines, those the sample executed, those
//! the table justifies, and the gaps (neither); then prints it.
//!
//! Terminology:
//! - *core*: a production worker crate, `crates/SYSTEM-worker`; only its `src/` counts.
//! - *gap*: a coverable line no run executed and no justification covers.
//! - *justified*: a coverable line no run executed, covered by a row of the table.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use crate::callgrind::Executed;
use crate::dwarf::Coverable;
use crate::justify::Justification;

/// One line of a core that no run executed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unexecuted {
    /// The path under the core's `src/`.
    pub file: String,
    pub line: u32,
    /// The trimmed source text.
    pub text: String,
    pub functions: BTreeSet<String>,
    /// The table row (its line in the document) that justifies it, if any.
    pub justified_by: Option<usize>,
}

/// One core's figures.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CoreFigures {
    pub core: String,
    pub coverable: usize,
    pub executed: usize,
    pub unexecuted: Vec<Unexecuted>,
}

impl CoreFigures {
    pub fn justified(&self) -> usize {
        let justified = self.unexecuted.iter().filter(|u| u.justified_by.is_some());
        justified.count()
    }

    pub fn gaps(&self) -> impl Iterator<Item = &Unexecuted> {
        self.unexecuted.iter().filter(|u| u.justified_by.is_none())
    }
}

/// The whole measurement.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub cores: Vec<CoreFigures>,
    /// Table rows that justify no line.
    pub stale: Vec<Justification>,
}

impl Report {
    /// True when every coverable line ran or is justified, and no row is stale.
    pub fn complete(&self) -> bool {
        self.stale.is_empty() && self.cores.iter().all(|c| c.gaps().next().is_none())
    }
}

/// The source lines of a file, read once.
#[derive(Default)]
struct Sources(BTreeMap<String, Vec<String>>);

impl Sources {
    fn line(&mut self, path: &str, line: u32) -> String {
        let lines = self.0.entry(path.to_string()).or_insert_with(|| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            text.lines().map(|l| l.trim().to_string()).collect()
        });
        let index = usize::try_from(line)
            .unwrap_or(usize::MAX)
            .saturating_sub(1);
        lines.get(index).cloned().unwrap_or_default()
    }
}

/// The figures of `core` (its `src/` is `source_dir`, an absolute path ending in `/`).
fn core_figures(
    core: &str,
    source_dir: &str,
    coverable: &Coverable,
    executed: &Executed,
    table: &[Justification],
    sources: &mut Sources,
) -> CoreFigures {
    let mut figures = CoreFigures {
        core: core.to_string(),
        ..CoreFigures::default()
    };
    let lines = coverable
        .iter()
        .filter(|((path, _), _)| path.starts_with(source_dir));
    for ((path, line), functions) in lines {
        figures.coverable += 1;
        if executed.contains(&(path.clone(), *line)) {
            figures.executed += 1;
            continue;
        }
        let file = path[source_dir.len()..].to_string();
        let text = sources.line(path, *line);
        let names = || functions.iter().map(String::as_str);
        let row = table.iter().find(|j| j.covers(core, &file, &text, names()));
        figures.unexecuted.push(Unexecuted {
            file,
            line: *line,
            text,
            functions: functions.clone(),
            justified_by: row.map(|j| j.at_line),
        });
    }
    // invariant: every coverable line is counted once, as executed or not.
    assert_eq!(
        figures.coverable,
        figures.executed + figures.unexecuted.len()
    );
    figures
}

/// Measures every core of `cores` (crate directory names under `root/crates`).
pub fn build(
    root: &Path,
    cores: &[String],
    coverable: &Coverable,
    executed: &Executed,
    table: &[Justification],
) -> Report {
    let mut sources = Sources::default();
    let cores: Vec<CoreFigures> = cores
        .iter()
        .map(|core| {
            let dir = format!("{}/", root.join("crates").join(core).join("src").display());
            core_figures(core, &dir, coverable, executed, table, &mut sources)
        })
        .collect();
    let used: BTreeSet<usize> = cores
        .iter()
        .flat_map(|c| c.unexecuted.iter().filter_map(|u| u.justified_by))
        .collect();
    let measured = |j: &Justification| j.core == "*" || cores.iter().any(|c| c.core == j.core);
    let stale = table
        .iter()
        .filter(|j| measured(j) && !used.contains(&j.at_line))
        .cloned()
        .collect();
    Report { cores, stale }
}

fn percent(part: usize, whole: usize) -> f64 {
    match whole {
        0 => 100.0,
        _ => 100.0 * part as f64 / whole as f64,
    }
}

/// The figures as a Markdown table.
pub fn figures_table(report: &Report) -> String {
    let mut out = String::from(
        "| core | coverable lines | executed | justified | executed or justified | gaps |\n\
         |---|---:|---:|---:|---:|---:|\n",
    );
    for core in &report.cores {
        let (executed, justified) = (core.executed, core.justified());
        let _ = writeln!(
            out,
            "| `{}` | {} | {} ({:.1} %) | {} | {:.1} % | {} |",
            core.core,
            core.coverable,
            executed,
            percent(executed, core.coverable),
            justified,
            percent(executed + justified, core.coverable),
            core.gaps().count()
        );
    }
    out
}

/// The gaps, stale rows and (with `all`) the justified lines, one block per core.
pub fn listing(report: &Report, table_name: &str, all: bool) -> String {
    let mut out = String::new();
    for core in &report.cores {
        let shown: Vec<&Unexecuted> = match all {
            true => core.unexecuted.iter().collect(),
            false => core.gaps().collect(),
        };
        if shown.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{} (lines no run executed):", core.core);
        for line in shown {
            let mark = match line.justified_by {
                Some(row) => format!("justified ({table_name}:{row})"),
                None => "GAP".to_string(),
            };
            let _ = writeln!(
                out,
                "  {}:{}  {}  [{mark}]",
                line.file, line.line, line.text
            );
            for function in &line.functions {
                let _ = writeln!(out, "      in {function}");
            }
        }
    }
    if !report.stale.is_empty() {
        let _ = writeln!(out, "\nstale rows of {table_name} (they justify no line):");
        for row in &report.stale {
            let _ = writeln!(
                out,
                "  {table_name}:{}  {} {}",
                row.at_line, row.core, row.file
            );
        }
    }
    out
}
