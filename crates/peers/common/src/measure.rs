//! The measurement every side runs, and the JSON it prints.
//!
//! Terminology:
//! - *side run*: one run of the workload by a side: `(worker, seed) -> Verdict`.
//! - *CPU time*: the process's CPU time (`CLOCK_PROCESS_CPUTIME_ID`), so another process on
//!   the machine does not count; every side runs its simulation on one thread.
//! - *seed range*: range `r` holds seeds `r * 1_000_000..`; a defective worker's search in a
//!   range runs its seeds in order until the first run judged a violation, at most `cap`.
//! - *figures*: [`Figures`], the JSON `crates/peers/README.md` specifies.

use serde::{Deserialize, Serialize};

use crate::recorder::Verdict;
use crate::{workers, workload};

/// One defective worker's figures.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkerFigures {
    pub name: String,
    /// Ranges where a violation was found within `cap` runs.
    pub found_in: usize,
    /// Ranges searched to an end (a violation, or `cap` runs without one).
    pub ranges: usize,
    /// Ranges asked for; those past the CPU budget were not searched (or not to an end).
    pub ranges_planned: usize,
    pub cap: u64,
    pub runs_median: Option<f64>,
    pub runs_p90: Option<f64>,
    pub cpu_s_median: Option<f64>,
    pub cpu_s_p90: Option<f64>,
    /// The first violation found, for the reader (`invariant: sentence`).
    pub example: Option<String>,
    /// Every run of the search and their CPU seconds, found or not (what a search that found
    /// nothing cost).
    pub runs_total: u64,
    pub cpu_s_total: f64,
}

/// What a side prints.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Figures {
    pub peer: String,
    /// The workload measured (`workload::Workload::name`) and its faults.
    #[serde(default)]
    pub workload: String,
    #[serde(default)]
    pub faults: String,
    pub version: String,
    pub correct_runs_per_s: f64,
    /// Runs of the correct worker measured, and how many the checkers judged a violation.
    pub correct_runs: u64,
    pub correct_violations: u64,
    pub replays_identically: bool,
    pub workers: Vec<WorkerFigures>,
    pub cannot_express: Vec<String>,
    pub at_failure: String,
}

/// How much to measure.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    pub ranges: u64,
    /// CPU seconds one worker's search may take before its remaining ranges are left out.
    pub budget_s: f64,
    pub cap: u64,
    /// The correct worker's rate: at least this many runs, and this many CPU seconds.
    pub correct_runs: u64,
    pub correct_s: f64,
}

/// The process's CPU time in seconds.
pub fn cpu_seconds() -> f64 {
    let mut spec = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `spec` is a valid, writable timespec; the clock id is a constant libc knows.
    let code = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut spec) };
    assert_eq!(code, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
    spec.tv_sec as f64 + spec.tv_nsec as f64 / 1e9
}

/// The nearest-rank percentile `p` (0..=100) of `values` (`None` when empty).
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted.get(rank - 1).copied()
}

/// The median (average of the two middle values when even; `None` when empty).
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// How one range's search ended.
enum Searched {
    /// The first violation, at this many runs and CPU seconds.
    Found(u64, f64, String),
    /// `cap` runs without one.
    NotFound,
    /// The worker's CPU budget ran out first, after this many runs.
    OverBudget(u64),
}

/// Searches range `range` for `name`'s first violation, until `deadline_s` of CPU time.
fn search_range(
    run: &mut dyn FnMut(&str, u64) -> Verdict,
    name: &str,
    range: u64,
    cap: u64,
    deadline_s: f64,
) -> Searched {
    let start = cpu_seconds();
    for k in 0..cap {
        if let Some(violation) = run(name, range * 1_000_000 + k).violation {
            return Searched::Found(k + 1, cpu_seconds() - start, violation);
        }
        if cpu_seconds() > deadline_s {
            return Searched::OverBudget(k + 1);
        }
    }
    Searched::NotFound
}

/// Runs and CPU seconds to the first violation in each range, within the worker's budget.
pub fn search(run: &mut dyn FnMut(&str, u64) -> Verdict, name: &str, plan: Plan) -> WorkerFigures {
    let (mut runs, mut cpu, mut example) = (Vec::new(), Vec::new(), None);
    let start_s = cpu_seconds();
    let deadline_s = start_s + plan.budget_s;
    let (mut ranges, mut runs_total) = (0, 0);
    for range in 0..plan.ranges {
        match search_range(run, name, range, plan.cap, deadline_s) {
            Searched::Found(k, seconds, violation) => {
                runs.push(k as f64);
                cpu.push(seconds);
                example.get_or_insert(violation);
                runs_total += k;
            }
            Searched::NotFound => runs_total += plan.cap,
            Searched::OverBudget(k) => {
                runs_total += k;
                break;
            }
        }
        ranges += 1;
        if cpu_seconds() > deadline_s {
            break;
        }
    }
    WorkerFigures {
        name: name.to_string(),
        found_in: runs.len(),
        ranges,
        ranges_planned: plan.ranges as usize,
        cap: plan.cap,
        runs_median: median(&runs),
        runs_p90: percentile(&runs, 90.0),
        cpu_s_median: median(&cpu),
        cpu_s_p90: percentile(&cpu, 90.0),
        example,
        runs_total,
        cpu_s_total: cpu_seconds() - start_s,
    }
}

/// Runs per CPU second of the correct worker (seeds 0.. for at least `seconds` of CPU time
/// and at least `min_runs` runs), the runs, and how many of them the checkers failed.
pub fn correct_rate(
    run: &mut dyn FnMut(&str, u64) -> Verdict,
    min_runs: u64,
    seconds: f64,
) -> (f64, u64, u64) {
    let start = cpu_seconds();
    let (mut runs, mut failed) = (0, 0);
    while runs < min_runs || cpu_seconds() - start < seconds {
        failed += u64::from(run("correct", runs).violation.is_some());
        runs += 1;
    }
    (
        runs as f64 / (cpu_seconds() - start).max(1e-9),
        runs,
        failed,
    )
}

/// The defective workers the current workload measures.
pub fn measured() -> Vec<&'static str> {
    match workload::current().workers {
        Some(names) => names.to_vec(),
        None => workers::defective(),
    }
}

/// Does each worker's seed 0..3 give the same trace hash twice?
pub fn replays(run: &mut dyn FnMut(&str, u64) -> Verdict) -> bool {
    let mut names = vec!["correct"];
    names.extend(measured());
    names
        .iter()
        .all(|name| (0..3).all(|seed| run(name, seed).trace_hash == run(name, seed).trace_hash))
}

/// The whole measurement of one side.
pub fn measure(
    run: &mut dyn FnMut(&str, u64) -> Verdict,
    plan: Plan,
    peer: &str,
    version: &str,
) -> Figures {
    let replays_identically = replays(run);
    let (correct_runs_per_s, correct_runs, correct_violations) =
        correct_rate(run, plan.correct_runs, plan.correct_s);
    let workers = measured()
        .into_iter()
        .map(|name| {
            let figures = search(run, name, plan);
            let (found, ranges) = (figures.found_in, figures.ranges);
            eprintln!("{peer}: {name}: found in {found} of {ranges} ranges");
            figures
        })
        .collect();
    Figures {
        peer: peer.to_string(),
        workload: workload::current().name.to_string(),
        faults: workload::current().faults.to_string(),
        version: version.to_string(),
        correct_runs_per_s,
        correct_runs,
        correct_violations,
        replays_identically,
        workers,
        cannot_express: Vec::new(),
        at_failure: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_nearest_rank_p90() {
        let values: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(median(&values), Some(5.5));
        assert_eq!(percentile(&values, 90.0), Some(9.0));
        assert_eq!(percentile(&[3.0], 90.0), Some(3.0));
        assert_eq!(median(&[]), None);
    }
}
