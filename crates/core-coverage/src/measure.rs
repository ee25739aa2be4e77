//! Runs the campaign sample under callgrind: one `leasesim fuzz --system S` per system.
//!
//! Terminology:
//! - *instrumented binary*: `leasesim` built with the workspace's `coverage` profile (no
//!   optimisation, line tables, debug assertions on as in the main job), at
//!   `target/coverage/leasesim`.
//! - *sample*: the main job (`leasesim fuzz`: every default scenario, the random strategy)
//!   cut to its first `seeds` seeds per scenario. The same seeds give the same runs as in the
//!   main job; only fewer of them.
//! - *output*: per system, `target/core-coverage/SYSTEM.callgrind` (the line counts) and
//!   `SYSTEM.fuzz.txt` (what the campaign printed).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// Where the measurement's files go, under the workspace root.
pub const OUT_DIR: &str = "target/core-coverage";

/// The instrumented binary, under the workspace root.
pub const BINARY: &str = "target/coverage/leasesim";

/// What one system's campaign run under callgrind ended with.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CampaignEnd {
    /// Every seed passed.
    Clean,
    /// Some seed failed (exit 1): its lines still count; the report says so.
    Failing,
}

/// One system's measurement in flight.
struct Running {
    system: String,
    child: Child,
}

/// Builds the instrumented binary.
pub fn build(root: &Path) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let status = Command::new(cargo)
        .current_dir(root)
        .args([
            "build",
            "--profile",
            "coverage",
            "-p",
            "leasesim-cli",
            "--bin",
        ])
        .arg("leasesim")
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    match status.success() {
        true => Ok(()),
        false => Err(format!("building {BINARY} failed ({status})")),
    }
}

/// Fails with an install hint unless valgrind answers.
pub fn check_valgrind() -> Result<(), String> {
    let answered = Command::new("valgrind")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    match answered {
        true => Ok(()),
        false => Err("valgrind is not installed (Debian: apt-get install valgrind)".into()),
    }
}

/// The callgrind output of `system`.
pub fn callgrind_file(root: &Path, system: &str) -> PathBuf {
    root.join(OUT_DIR).join(format!("{system}.callgrind"))
}

fn start(root: &Path, system: &str, seeds: u64) -> Result<Running, String> {
    let out = root.join(OUT_DIR);
    let printed = std::fs::File::create(out.join(format!("{system}.fuzz.txt")))
        .map_err(|e| format!("{}: {e}", out.display()))?;
    let child = Command::new("valgrind")
        .current_dir(root)
        .arg("--tool=callgrind")
        .arg(format!(
            "--callgrind-out-file={}",
            callgrind_file(root, system).display()
        ))
        .arg(root.join(BINARY))
        .args(["fuzz", "--system", system, "--seeds", &seeds.to_string()])
        .args(["--jobs", "1", "--no-failure-db"])
        .stdout(printed)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start valgrind: {e}"))?;
    Ok(Running {
        system: system.to_string(),
        child,
    })
}

/// The system's end, if its campaign has ended.
fn ended(running: &mut Running) -> Result<Option<CampaignEnd>, String> {
    let system = &running.system;
    let Some(status) = running
        .child
        .try_wait()
        .map_err(|e| format!("{system}: {e}"))?
    else {
        return Ok(None);
    };
    match status.code() {
        Some(0) => Ok(Some(CampaignEnd::Clean)),
        Some(1) => Ok(Some(CampaignEnd::Failing)),
        _ => Err(format!(
            "{system}: `leasesim fuzz` under callgrind ended with {status}; see \
             {OUT_DIR}/{system}.fuzz.txt"
        )),
    }
}

/// Runs every system's sample under callgrind, `jobs` at a time; each system's end.
pub fn campaigns(
    root: &Path,
    systems: &[String],
    seeds: u64,
    jobs: usize,
) -> Result<Vec<(String, CampaignEnd)>, String> {
    std::fs::create_dir_all(root.join(OUT_DIR)).map_err(|e| format!("{OUT_DIR}: {e}"))?;
    let mut waiting = systems.iter();
    let mut running: Vec<Running> = Vec::new();
    let mut ends = Vec::new();
    loop {
        while running.len() < jobs.max(1)
            && let Some(system) = waiting.next()
        {
            eprintln!("core-coverage: {system}: {seeds} seeds per scenario under callgrind");
            running.push(start(root, system, seeds)?);
        }
        if running.is_empty() {
            break;
        }
        let mut index = 0;
        while index < running.len() {
            match ended(&mut running[index])? {
                Some(end) => ends.push((running.remove(index).system, end)),
                None => index += 1,
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // invariant: every system was measured once, whatever order they ended in.
    assert_eq!(ends.len(), systems.len());
    ends.sort();
    Ok(ends)
}
