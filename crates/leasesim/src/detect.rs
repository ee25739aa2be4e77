//! Seeds-to-detect: how quickly the harness catches a defective worker.
//!
//! Terminology:
//! - *round*: one seed run on every scenario of the set, in the set's order.
//! - *range*: a block of seeds; ranges are disjoint (range `r` starts at `r * RANGE_STRIDE`).
//! - *seeds to detect*: the number of rounds, from a range's first seed, until some run fails
//!   with one of the worker's named invariants; *runs to detect* counts single runs instead.
//! - A run that fails with another invariant is counted as a *stray* (for a single-defect
//!   worker it means the defect shows up under an unexpected name).

use std::sync::Arc;

use leasesim_rt::{Feed, Strategy};

use crate::systems::AnyScenario;

/// Distance between the first seeds of two ranges.
pub const RANGE_STRIDE: u64 = 1_000_000;

/// How one range went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeResult {
    pub start_seed: u64,
    /// `(seeds, runs, scenario, invariant)` of the first detection, if any within the limit.
    pub detected: Option<(u64, u64, String, String)>,
    /// Failing runs with an invariant not in the worker's list, before detection.
    pub strays: u64,
}

/// Runs rounds from `start_seed` until detection or `max_seeds` rounds. `scenarios` are of
/// the worker's system; `caught_by` names the invariants that count as its detection.
pub fn detect_range(
    scenarios: &[Arc<dyn AnyScenario>],
    worker: &str,
    caught_by: &[&str],
    strategy: Strategy,
    start_seed: u64,
    max_seeds: u64,
) -> RangeResult {
    // One calibrated runner per scenario (PCT measures its step estimate once).
    let runners: Vec<_> = scenarios
        .iter()
        .map(|scenario| {
            let mut runner = scenario
                .runner(worker, strategy)
                .expect("the worker belongs to the scenarios' system");
            runner.calibrate();
            (scenario.name().to_string(), runner)
        })
        .collect();
    let mut runs = 0;
    let mut strays = 0;
    for round in 0..max_seeds {
        let seed = start_seed + round;
        for (name, runner) in &runners {
            runs += 1;
            let report = runner.run(Feed::Seed(seed), false, false);
            match report.invariant() {
                Some(invariant) if caught_by.contains(&invariant) => {
                    let detected = (round + 1, runs, name.clone(), invariant.to_string());
                    return RangeResult {
                        start_seed,
                        detected: Some(detected),
                        strays,
                    };
                }
                _ if report.failed() => strays += 1,
                _ => {}
            }
        }
    }
    RangeResult {
        start_seed,
        detected: None,
        strays,
    }
}

/// Median of a sorted slice (mean of the two middle values for an even length).
pub fn median(sorted: &[u64]) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2] as f64,
        n => (sorted[n / 2 - 1] + sorted[n / 2]) as f64 / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_lengths() {
        assert_eq!(median(&[1, 2, 9]), 2.0);
        assert_eq!(median(&[1, 2, 4, 9]), 3.0);
        assert!(median(&[]).is_nan());
    }
}
