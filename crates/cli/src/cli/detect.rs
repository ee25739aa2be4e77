//! `leasesim detect`: the seeds-to-detect table for the defective workers.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use leasesim::Strategy;
use leasesim::catalog::{self, workers};
use leasesim::detect::{RANGE_STRIDE, RangeResult, detect_range, median};
use leasesim::error::UsageError;

use super::DetectArgs;

fn ranges_in_parallel(
    (system, worker): (&str, &str),
    caught_by: &[&str],
    strategy: Strategy,
    args: &DetectArgs,
    jobs: usize,
) -> Vec<RangeResult> {
    let scenarios = catalog::resolve_in("all", Some(system)).expect("builtin scenarios parse");
    let next = AtomicU64::new(0);
    let results = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                loop {
                    let range = next.fetch_add(1, Ordering::Relaxed);
                    if range >= args.ranges {
                        break;
                    }
                    let start = range * RANGE_STRIDE;
                    let result = detect_range(
                        &scenarios,
                        worker,
                        caught_by,
                        strategy,
                        start,
                        args.max_seeds,
                    );
                    results.lock().expect("no panic while locked").push(result);
                }
            });
        }
    });
    let mut results = results.into_inner().expect("jobs are done");
    results.sort_by_key(|r| r.start_seed);
    results
}

/// Refuses range counts whose ranges would overlap or run past the last seed.
fn check_ranges(args: &DetectArgs) -> Result<(), UsageError> {
    if args.max_seeds > RANGE_STRIDE {
        return Err(UsageError::BadValue {
            flag: "--max-seeds",
            given: args.max_seeds.to_string(),
            why: format!(
                "ranges start {RANGE_STRIDE} seeds apart, so a range may run at most \
                 {RANGE_STRIDE} seeds (more would overlap the next range)"
            ),
        });
    }
    let most = u64::MAX / RANGE_STRIDE;
    if args.ranges > most {
        return Err(UsageError::BadValue {
            flag: "--ranges",
            given: args.ranges.to_string(),
            why: format!("at most {most} ranges of {RANGE_STRIDE} seeds fit below 2^64"),
        });
    }
    Ok(())
}

pub fn detect_command(args: DetectArgs) -> Result<i32, UsageError> {
    check_ranges(&args)?;
    if let Some(system) = &args.system {
        catalog::check_system(system)?;
    }
    let chosen: Vec<_> = workers()
        .into_iter()
        .filter(|(system, w)| {
            let in_system = args.system.as_deref().is_none_or(|s| s == *system);
            let named = args.worker == "all" || w.name == args.worker;
            w.name != "correct" && in_system && named
        })
        .collect();
    if chosen.is_empty() {
        catalog::check_worker(&args.worker)?;
        let why = match (args.worker.as_str(), args.system.as_deref()) {
            ("correct", _) => "pick a defective worker".to_string(),
            (_, Some(system)) => format!(
                "`{}` is a worker of {}, not of {system}",
                args.worker,
                catalog::systems_of_worker(&args.worker).join(", ")
            ),
            _ => "pick a defective worker".to_string(),
        };
        return Err(UsageError::BadValue {
            flag: "--worker",
            given: args.worker,
            why,
        });
    }
    let jobs = super::job_count(args.jobs);
    println!(
        "seeds to detect: rounds of the worker's system's default scenarios until the worker is caught by its own invariant; {} disjoint ranges, at most {} seeds each",
        args.ranges, args.max_seeds
    );
    println!();
    println!(
        "| worker | strategy | median seeds | max seeds | median runs | max runs | detected | caught by (most often) |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---|");
    let mut missed = false;
    for (system, worker) in chosen {
        for &strategy in &args.strategies {
            let results = ranges_in_parallel(
                (system, worker.name),
                worker.caught_by,
                strategy,
                &args,
                jobs,
            );
            missed |= print_row(worker.name, strategy, &results);
        }
    }
    Ok(i32::from(missed))
}

/// A median as the table shows it: one decimal, or `-` when no range detected the worker (as
/// for its maximum; never `NaN`).
fn median_text(sorted: &[u64]) -> String {
    match sorted.is_empty() {
        true => "-".to_string(),
        false => format!("{:.1}", median(sorted)),
    }
}

/// Prints one table row; returns true when some range did not detect the worker.
fn print_row(worker: &str, strategy: Strategy, results: &[RangeResult]) -> bool {
    let mut seeds: Vec<u64> = results
        .iter()
        .filter_map(|r| r.detected.as_ref().map(|d| d.0))
        .collect();
    let mut runs: Vec<u64> = results
        .iter()
        .filter_map(|r| r.detected.as_ref().map(|d| d.1))
        .collect();
    seeds.sort_unstable();
    runs.sort_unstable();
    let mut by_invariant: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
    for detected in results.iter().filter_map(|r| r.detected.as_ref()) {
        *by_invariant.entry(detected.3.as_str()).or_insert(0) += 1;
    }
    let top = by_invariant
        .iter()
        .max_by_key(|(_, n)| **n)
        .map_or("-".to_string(), |(name, _)| (*name).to_string());
    let strays: u64 = results.iter().map(|r| r.strays).sum();
    let stray_note = if strays > 0 {
        format!(" ({strays} runs failed another way first)")
    } else {
        String::new()
    };
    println!(
        "| {worker} | {strategy} | {} | {} | {} | {} | {}/{} | {top}{stray_note} |",
        median_text(&seeds),
        seeds.last().map_or("-".into(), u64::to_string),
        median_text(&runs),
        runs.last().map_or("-".into(), u64::to_string),
        seeds.len(),
        results.len(),
    );
    seeds.len() < results.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_undetected_worker_shows_a_dash_not_nan() {
        assert_eq!(median_text(&[]), "-");
        assert_eq!(median_text(&[1, 2]), "1.5");
    }
}
