//! What the benchmarks page says about the run: the machine, its load, the commit, the date,
//! the build profile. Read from `/proc`, `git` and the clock; the parsers are pure.
//!
//! Terminology:
//! - *load*: the 1-minute load average, the first field of `/proc/loadavg`.
//! - *dirty*: tracked files differ from `HEAD` (untracked files do not count, as with
//!   `git describe --dirty`).
// The page's date is the wall clock, read once, never inside a simulation.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::path::Path;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// The value of the first `model name` line of `/proc/cpuinfo` text.
pub fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "model name").then(|| value.trim().to_string())
    })
}

/// `MemTotal` of `/proc/meminfo` text, in KiB.
pub fn mem_total_kb(meminfo: &str) -> Option<u64> {
    meminfo.lines().find_map(|line| {
        let rest = line.strip_prefix("MemTotal:")?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// The 1-minute load average of `/proc/loadavg` text.
pub fn load_1min(loadavg: &str) -> Option<f64> {
    loadavg.split_whitespace().next()?.parse().ok()
}

/// The 1-minute load average now.
pub fn load() -> Option<f64> {
    load_1min(&std::fs::read_to_string("/proc/loadavg").ok()?)
}

/// (cores, CPU model, memory in KiB) of this machine.
pub fn machine() -> (usize, String, Option<u64>) {
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| cpu_model(&text))
        .unwrap_or_else(|| "CPU model unknown".to_string());
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| mem_total_kb(&text));
    (cores, model, memory)
}

/// `git rev-parse --short HEAD` in `root`, with `-dirty` when tracked files differ.
pub fn commit(root: &Path) -> String {
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(root)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let Some(head) = git(&["rev-parse", "--short", "HEAD"]) else {
        return "unknown (no git)".to_string();
    };
    match git(&["status", "--porcelain", "--untracked-files=no"]) {
        Some(changes) if changes.is_empty() => head,
        Some(_) => format!("{head}-dirty"),
        None => format!("{head} (status unknown)"),
    }
}

/// Seconds since the Unix epoch.
pub fn unix_now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// The build profile this binary was built with, as far as it can tell.
pub fn profile() -> String {
    let dir = std::env::current_exe()
        .ok()
        .and_then(|exe| {
            let deps = exe.parent()?;
            let profile = deps.parent()?;
            Some(profile.file_name()?.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "unknown".to_string());
    let assertions = if cfg!(debug_assertions) {
        "debug assertions on"
    } else {
        "debug assertions off"
    };
    if dir == "release" && !cfg!(debug_assertions) {
        format!("`bench` (`cargo bench`'s profile: optimised, {assertions}; target/{dir})")
    } else {
        format!("not `bench` ({assertions}; target/{dir}): figures not comparable")
    }
}
