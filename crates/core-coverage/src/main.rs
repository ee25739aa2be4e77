//! `core-coverage`: which lines of each production worker core the fuzz campaign executes.
//!
//! ```sh
//! cargo run -p leasesim-core-coverage --release -- [--seeds 200] [--system NAME]... [--all]
//! ```
//!
//! Builds `leasesim` with the workspace's `coverage` profile, runs the first `--seeds` seeds
//! of every default scenario of each system (the main job's own seeds, the random strategy)
//! under valgrind's callgrind, reads the binary's line tables, and prints per core
//! (`crates/SYSTEM-worker/src`) how many coverable lines ran, how many the table in
//! `docs/core-coverage.md` justifies, and every gap: a line neither ran nor is justified.
//! `--reuse` reads the callgrind files of the last measurement instead of running again.
//!
//! Exit code: 0 when every coverable line ran or is justified and no justification is stale;
//! 1 otherwise; 2 on bad input or a missing tool.
//!
//! Terminology (each module has its own): *core*, *coverable line*, *gap*, *justification*,
//! *sample*.

mod callgrind;
mod dwarf;
mod justify;
mod measure;
mod report;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;

/// The justification table, under the workspace root.
const TABLE: &str = "docs/core-coverage.md";

#[derive(Parser, Debug)]
#[command(
    name = "core-coverage",
    about = "Lines of each production worker core the fuzz campaign executes (callgrind)"
)]
struct Args {
    /// Seeds per default scenario: the main job's first N (its full size is 1000).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..))]
    seeds: u64,
    /// Measure only this system (repeatable); every system with a `crates/NAME-worker` core
    /// by default.
    #[arg(long = "system", value_name = "NAME")]
    systems: Vec<String>,
    /// Campaigns under callgrind at once.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..))]
    jobs: u64,
    /// Read the callgrind files of the last measurement; build and run nothing.
    #[arg(long)]
    reuse: bool,
    /// Also list the justified lines, each with the table row that justifies it.
    #[arg(long)]
    all: bool,
}

/// The workspace root (this crate lives in `crates/core-coverage`).
fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .nth(2)
        .unwrap_or(manifest)
        .to_path_buf()
}

/// Every system with a core crate (`crates/NAME-worker`), sorted.
fn systems_with_a_core(root: &Path) -> Result<Vec<String>, String> {
    let crates = root.join("crates");
    let entries = std::fs::read_dir(&crates).map_err(|e| format!("{}: {e}", crates.display()))?;
    let mut systems: Vec<String> = entries
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter_map(|name| name.strip_suffix("-worker").map(str::to_string))
        .collect();
    systems.sort();
    Ok(systems)
}

/// The systems to measure: `--system` names (each must have a core), or all.
fn chosen_systems(root: &Path, asked: &[String]) -> Result<Vec<String>, String> {
    let known = systems_with_a_core(root)?;
    if asked.is_empty() {
        return Ok(known);
    }
    for name in asked {
        if !known.contains(name) {
            return Err(format!(
                "--system {name}: no core crate crates/{name}-worker (systems with a core: {})",
                known.join(", ")
            ));
        }
    }
    Ok(asked.to_vec())
}

/// The executed lines of every system's last callgrind file, under the cores' folders.
fn executed_lines(
    root: &Path,
    systems: &[String],
    in_core: &dyn Fn(&str) -> bool,
) -> Result<callgrind::Executed, String> {
    let mut executed = callgrind::Executed::new();
    for system in systems {
        let path = measure::callgrind_file(root, system);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("{}: {e} (measure first, without --reuse)", path.display()))?;
        let lines = callgrind::executed_lines(&text, in_core)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        executed.extend(lines);
    }
    Ok(executed)
}

fn run(args: &Args) -> Result<report::Report, String> {
    let root = workspace_root();
    let systems = chosen_systems(&root, &args.systems)?;
    let table_text =
        std::fs::read_to_string(root.join(TABLE)).map_err(|e| format!("{TABLE}: {e}"))?;
    let table = justify::parse(&table_text).map_err(|e| format!("{TABLE}: {e}"))?;
    if !args.reuse {
        measure::check_valgrind()?;
        measure::build(&root)?;
        let jobs = usize::try_from(args.jobs).unwrap_or(usize::MAX);
        for (system, end) in measure::campaigns(&root, &systems, args.seeds, jobs)? {
            if end == measure::CampaignEnd::Failing {
                eprintln!(
                    "core-coverage: {system}: the campaign found failing seeds (see {}/{system}.fuzz.txt); \
                     the lines it ran still count",
                    measure::OUT_DIR
                );
            }
        }
    }
    let cores: Vec<String> = systems.iter().map(|s| format!("{s}-worker")).collect();
    let dirs: Vec<String> = cores
        .iter()
        .map(|core| format!("{}/", root.join("crates").join(core).join("src").display()))
        .collect();
    let in_core = |path: &str| dirs.iter().any(|dir| path.starts_with(dir.as_str()));
    let coverable = dwarf::coverable_lines(&root.join(measure::BINARY), &in_core)?;
    let executed = executed_lines(&root, &systems, &in_core)?;
    Ok(report::build(&root, &cores, &coverable, &executed, &table))
}

fn main() -> ExitCode {
    let args = Args::parse();
    let report = match run(&args) {
        Ok(report) => report,
        Err(message) => {
            eprintln!("core-coverage: {message}");
            return ExitCode::from(2);
        }
    };
    println!(
        "Lines of each production core run by `leasesim fuzz` (every default scenario, seeds \
         0..{}, random strategy), built with the `coverage` profile (no optimisation):\n",
        args.seeds
    );
    print!("{}", report::figures_table(&report));
    print!("{}", report::listing(&report, TABLE, args.all));
    match report.complete() {
        true => ExitCode::SUCCESS,
        false => ExitCode::from(1),
    }
}
