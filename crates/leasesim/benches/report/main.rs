//! The benchmarks page, measured and written by one command (from the workspace root):
//!
//! `cargo bench -p leasesim --bench report -- --markdown docs/benchmarks.md`
//!
//! It runs the figures of the other benches (the executor micro-workloads of
//! `crates/rt/benches/micro`, `compare`'s whole runs against tokio, `scaling`'s dimensions)
//! through the same code (`common/`), a peak-memory probe, and renders them with the run's
//! commit, date, machine, load and build profile (`page.rs`). `--markdown -` prints the page
//! instead. `--quick` runs tiny samples, to test the generator end to end in seconds; its
//! figures mean nothing. Without `--markdown` (as a plain `cargo bench` runs it) it prints its
//! usage and measures nothing: the other benches measure the same things.
//!
//! Terminology:
//! - *plan*: how much each section measures (blocks, seconds of CPU time, seeds); one for the
//!   page, one for `--quick`.
//! - *workspace root*: where a relative `--markdown` path starts, whatever directory cargo
//!   starts the bench in (the package's).
// Wall clock and CPU clock are read only around whole batches of runs, never inside a run.
#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    clippy::print_stdout
)]

#[path = "../common/mod.rs"]
mod common;
mod envelopes;
mod executor;
mod machine;
mod memory;
#[path = "../../../rt/benches/micro/mod.rs"]
mod micro;
mod page;

use std::path::{Path, PathBuf};
use std::time::Instant;

use common::Budget;
use common::growth::{self, Dimension};
use common::versus::{self, LEASESIM, Mode, ScenarioFigures, best_tokio};
use page::{Estimate, ModeFigure, ScalingDimension, ScalingRow, ScenarioFigure};

/// How much each section measures.
struct Plan {
    executor: executor::Size,
    versus: Budget,
    scaling: Budget,
    memory: &'static [u64],
    /// Values per key and seeds per point of the envelopes.
    envelope: (usize, u64),
}

/// The page's plan: about 5 minutes of measurement on an idle machine with 2 cores.
const FULL: Plan = Plan {
    executor: executor::Size {
        blocks: 7,
        polls: micro::POLLS,
        fires: micro::TIMERS,
    },
    versus: Budget {
        total_s: 2.5,
        block_s: 0.3,
    },
    scaling: Budget {
        total_s: 2.0,
        block_s: 0.25,
    },
    memory: &[100, 1_000, 10_000],
    envelope: (10, 200),
};

/// `--quick`: every section, a few seconds in all.
const QUICK: Plan = Plan {
    executor: executor::Size {
        blocks: 3,
        polls: 20_000,
        fires: 10_000,
    },
    versus: Budget {
        total_s: 0.02,
        block_s: 0.005,
    },
    scaling: Budget {
        total_s: 0.005,
        block_s: 0.005,
    },
    memory: &[10, 100],
    envelope: (3, 4),
};

/// The command line after `--`.
struct Args {
    markdown: Option<PathBuf>,
    quick: bool,
    memory_probe: Option<u64>,
    /// The arguments as given, for the page's command line (without cargo's `--bench`).
    given: Vec<String>,
}

const USAGE: &str = "usage: cargo bench -p leasesim --bench report -- --markdown PATH [--quick]
  --markdown PATH  measure, and write the page to PATH (relative to the workspace root; `-`:
                   stdout), e.g. `--markdown docs/benchmarks.md`
  --quick          tiny samples: tests the generator in seconds, figures mean nothing";

fn parse_args(raw: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut args = Args {
        markdown: None,
        quick: false,
        memory_probe: None,
        given: Vec::new(),
    };
    let mut raw = raw.peekable();
    while let Some(arg) = raw.next() {
        match arg.as_str() {
            // `cargo bench` passes it to every bench binary.
            "--bench" => continue,
            "--quick" => args.quick = true,
            "--markdown" => {
                let path = raw.next().ok_or("--markdown needs a path")?;
                args.given.extend([arg.clone(), path.clone()]);
                args.markdown = Some(PathBuf::from(path));
                continue;
            }
            "--memory-probe" => {
                let seeds = raw.next().ok_or("--memory-probe needs a seed count")?;
                let seeds = seeds.parse().map_err(|_| "--memory-probe: not a count")?;
                args.memory_probe = Some(seeds);
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument `{other}`")),
        }
        args.given.push(arg);
    }
    Ok(args)
}

/// The workspace root: two levels above this package.
fn workspace_root() -> PathBuf {
    let package = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    let root = package.join("../..");
    root.canonicalize().unwrap_or(root)
}

/// The page's rows of one compared scenario.
fn scenario_figure(f: &ScenarioFigures) -> ScenarioFigure {
    let mode = |mode: Mode| {
        let (tokio_per_s, driver) = best_tokio(f, mode);
        ModeFigure {
            leasesim_per_s: f.rate(LEASESIM, mode),
            tokio_per_s,
            tokio_driver: driver.to_string(),
            ratio: Estimate::of_pairs(&versus::paired_blocks(f, mode)).expect("a block ran"),
        }
    };
    let events_per_seed = |label: &str| {
        f.totals(label, Mode::Checked)
            .map_or(f64::NAN, |t| t.events as f64 / t.seeds as f64)
    };
    let tokio_rows = f.rows.iter().filter(|(label, _, _)| *label != LEASESIM);
    let reached = tokio_rows
        .clone()
        .map(|(_, _, t)| t.reached_end.unwrap_or(0));
    ScenarioFigure {
        scenario: f.name.clone(),
        system: f.system.to_string(),
        checked: mode(Mode::Checked),
        counted: mode(Mode::Counted),
        events_per_seed: (
            events_per_seed(LEASESIM),
            events_per_seed(best_tokio(f, Mode::Checked).1),
        ),
        tokio_reached_end: (reached.sum(), tokio_rows.map(|(_, _, t)| t.seeds).sum()),
        failing: f.rows.iter().map(|(_, _, t)| t.failing()).sum(),
    }
}

/// The page's rows of one scaling dimension.
fn scaling_dimension(d: &Dimension) -> ScalingDimension {
    let rows = d.rows.iter().map(|row| {
        let blocks: Vec<(f64, f64)> = row
            .blocks
            .iter()
            .map(|(totals, time)| (time.cpu_s * 1e6, totals.events as f64))
            .collect();
        ScalingRow {
            value: row.value.clone(),
            seeds: row.totals.seeds,
            seeds_per_s: row.totals.seeds as f64 / row.time.cpu_s,
            events_per_seed: row.totals.events as f64 / row.totals.seeds as f64,
            us_per_event: Estimate::of_pairs(&blocks).expect("a block ran"),
            failing: row.totals.failed,
        }
    });
    ScalingDimension {
        system: d.system.to_string(),
        name: d.name.clone(),
        rows: rows.collect(),
    }
}

/// Runs every section of `plan` and renders the page.
fn measure_page(plan: &Plan, args: &Args, root: &Path) -> String {
    let started = Instant::now();
    let started_unix_s = machine::unix_now_s();
    let commit = machine::commit(root);
    let load_before = machine::load();
    eprintln!("report: executor, poll and timer fire against tokio");
    let executor = executor::measure(plan.executor);
    eprintln!("report: whole runs against tokio");
    let versus: Vec<ScenarioFigure> = versus::measure_all(plan.versus)
        .iter()
        .map(scenario_figure)
        .collect();
    eprintln!("report: scaling");
    let scaling = growth::all_dimensions(plan.scaling)
        .iter()
        .map(scaling_dimension)
        .collect();
    eprintln!("report: peak memory");
    let memory = memory::measure(plan.memory);
    eprintln!("report: envelopes");
    let envelopes = envelopes::measure_all(plan.envelope.0, plan.envelope.1);
    let load_after = machine::load();
    let (cores, cpu_model, memory_kb) = machine::machine();
    let header = page::Header {
        command: format!(
            "cargo bench -p leasesim --bench report -- {}",
            args.given.join(" ")
        )
        .trim_end()
        .to_string(),
        commit,
        started_unix_s,
        cores,
        cpu_model,
        memory_kb,
        load_before,
        load_after,
        profile: machine::profile(),
        run_s: started.elapsed().as_secs_f64(),
        quick: args.quick,
    };
    page::render(&page::Measured {
        header,
        executor,
        versus,
        versus_block_s: plan.versus.block_s,
        scaling,
        scaling_block_s: plan.scaling.block_s,
        memory,
        envelopes,
        peers: std::fs::read_to_string(root.join("crates/peers/figures.md")).ok(),
    })
}

fn main() {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(why) => {
            if !why.is_empty() {
                eprintln!("report: {why}");
            }
            eprintln!("{USAGE}");
            std::process::exit(if why.is_empty() { 0 } else { 2 });
        }
    };
    if let Some(seeds) = args.memory_probe {
        memory::probe(seeds);
        return;
    }
    let Some(markdown) = &args.markdown else {
        println!("report: measures nothing without --markdown\n{USAGE}");
        return;
    };
    let root = workspace_root();
    let plan = if args.quick { &QUICK } else { &FULL };
    let text = measure_page(plan, &args, &root);
    match markdown.to_str() {
        Some("-") => print!("{text}"),
        _ => {
            let path = root.join(markdown);
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).expect("the page's directory can be made");
            }
            std::fs::write(&path, text).expect("the page can be written");
            eprintln!("report: wrote {}", path.display());
        }
    }
}
