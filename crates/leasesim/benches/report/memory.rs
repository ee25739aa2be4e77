//! The peak-memory figures of the page: a fresh process per size runs seeds of one scenario
//! and reports its own peak resident set size.
//!
//! Terminology:
//! - *probe*: this same bench binary started again with `--memory-probe SEEDS`: it runs seeds
//!   `0..SEEDS` of `SCENARIO` on the fuzz path (`leasesim::runner::run`, one thread) and prints
//!   `peak_kb=N` (`getrusage(RUSAGE_SELF)`'s `ru_maxrss`, KiB on Linux). A fresh process, so
//!   no earlier measurement's peak counts.

use std::process::Command;

use leasesim::retention::Retention;

use super::common;
use super::page::MemoryFigure;

/// The scenario the probes run.
pub const SCENARIO: &str = "steady";

/// The probe's side: runs `seeds` seeds and prints its peak memory.
pub fn probe(seeds: u64) {
    let scenario = common::builtin_scenario_of::<Retention>(SCENARIO);
    let factory = common::correct_factory_of::<Retention>();
    let spec = common::fuzz_spec(&scenario, &factory);
    let (totals, _) = common::leasesim_batch(&spec, 0, seeds);
    assert_eq!(totals.failed, 0, "the correct worker failed a seed");
    // SAFETY: an all-zero `rusage` is a valid value of the plain C struct `getrusage` fills.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage; RUSAGE_SELF is a constant of the platform.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    assert_eq!(rc, 0, "getrusage(RUSAGE_SELF) failed");
    println!("peak_kb={}", usage.ru_maxrss);
}

/// One probe per size in `sizes`, in order.
pub fn measure(sizes: &[u64]) -> Vec<MemoryFigure> {
    let exe = std::env::current_exe().expect("the path of this bench binary");
    sizes
        .iter()
        .map(|&seeds| {
            let out = Command::new(&exe)
                .args(["--memory-probe", &seeds.to_string()])
                .output()
                .expect("the memory probe starts");
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "memory probe of {seeds} seeds failed: {}{text}",
                String::from_utf8_lossy(&out.stderr)
            );
            let peak_kb = text
                .lines()
                .find_map(|line| line.strip_prefix("peak_kb=")?.trim().parse().ok())
                .unwrap_or_else(|| panic!("no peak_kb line in the probe's output: {text}"));
            MemoryFigure {
                scenario: SCENARIO.to_string(),
                seeds,
                peak_kb,
            }
        })
        .collect()
}
