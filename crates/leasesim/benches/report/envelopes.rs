//! The envelopes section: a 2-D envelope of every system's steady scenario, searched and as a
//! full grid, with its wall time on every core.
//!
//! Terminology:
//! - *case*: a steady scenario and the two keys a team would tune on it (a lifetime and its
//!   renewal interval, or a claim and the pause after an empty one), each over a range wide
//!   enough to cross the loader's refusal boundary.

use std::sync::Arc;
use std::time::Instant;

use leasesim::envelope::{Axis, EnvelopeSpec, Mark, Search, measure};
use leasesim::fuzz::Progress;

use crate::page::EnvelopeFigure;

/// `(scenario, axes)` of each case, one per system.
pub const CASES: [(&str, [&str; 2]); 4] = [
    (
        "steady",
        [
            "lease.ttl_ms=1000..10000",
            "worker.renew_every_ms=100..5000",
        ],
    ),
    (
        "items-steady",
        [
            "worker.lease_ms=500..5000",
            "worker.renew_every_ms=100..3000",
        ],
    ),
    (
        "expiry-steady",
        ["worker.claim_for_ms=1000..20000", "worker.idle_ms=0..5000"],
    ),
    (
        "holder-steady",
        [
            "claim.lifetime_ms=500..5000",
            "claim.renew_every_ms=0..3000",
        ],
    ),
];

fn spec(
    scenario: &str,
    axes: &[&str; 2],
    resolution: usize,
    seeds: u64,
    search: Search,
) -> EnvelopeSpec {
    EnvelopeSpec {
        scenario: leasesim::catalog::resolve_one(scenario).expect("a builtin scenario"),
        worker: "correct".to_string(),
        factory: None,
        strategy: leasesim::Strategy::Random,
        axes: axes
            .iter()
            .map(|a| Axis::parse(a).expect("an axis"))
            .collect(),
        resolution,
        start_seed: 0,
        seeds,
        jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
        mark: Mark::Violations,
        search,
        seed_timeout_ms: 60_000,
    }
}

/// Measures every case, searched and as a grid.
pub fn measure_all(resolution: usize, seeds: u64) -> Vec<EnvelopeFigure> {
    let progress = Arc::new(Progress::default());
    CASES
        .iter()
        .map(|(scenario, axes)| {
            let timed = |search| {
                let started = Instant::now();
                let envelope = measure(
                    &spec(scenario, axes, resolution, seeds, search),
                    &progress,
                    &mut |_| {},
                )
                .expect("a valid envelope");
                (envelope, started.elapsed().as_secs_f64())
            };
            let (searched, searched_s) = timed(Search::Adaptive);
            let (grid, grid_s) = timed(Search::Grid);
            let unsafe_points = grid
                .points
                .iter()
                .filter(|p| grid.map.class(p.index) == leasesim::envelope::Class::Unsafe)
                .count();
            EnvelopeFigure {
                scenario: scenario.to_string(),
                axes: axes.join(", "),
                resolution,
                seeds,
                points: searched.points.len(),
                runs: searched.runs,
                grid_runs: grid.runs,
                searched_s,
                grid_s,
                agrees: searched.map.cells
                    == grid
                        .map
                        .cells
                        .iter()
                        .map(|(c, _)| *c)
                        .zip(searched.map.cells.iter().map(|(_, m)| *m))
                        .collect::<Vec<_>>(),
                unsafe_points,
            }
        })
        .collect()
}
