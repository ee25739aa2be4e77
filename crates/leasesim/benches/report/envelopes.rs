//! The envelopes section: 2-D envelopes of every system, searched and as a full grid, with
//! their wall time on every core.
//!
//! Terminology:
//! - *case*: a scenario, a worker and the two keys a team would tune on it (a lifetime and its
//!   renewal interval, a claim and a store's latency), each over a range wide enough to cross
//!   the loader's refusal boundary or the worker's safe region.

use std::sync::Arc;
use std::time::Instant;

use leasesim::envelope::{Axis, Class, EnvelopeSpec, Search, measure};
use leasesim::fuzz::Progress;

use crate::page::EnvelopeFigure;

/// One case: scenario, worker, the two axes.
type Case = (&'static str, &'static str, [&'static str; 2]);

/// Every system's steady scenario with the correct worker (safe wherever the loader accepts the
/// settings: the search's cheapest case), then a defective worker of each system on keys where
/// its safe region ends inside the grid.
pub const CASES: [Case; 8] = [
    (
        "steady",
        "correct",
        [
            "lease.ttl_ms=1000..10000",
            "worker.renew_every_ms=100..5000",
        ],
    ),
    (
        "items-steady",
        "correct",
        [
            "worker.lease_ms=500..5000",
            "worker.renew_every_ms=100..3000",
        ],
    ),
    (
        "expiry-steady",
        "correct",
        ["worker.claim_for_ms=1000..20000", "worker.idle_ms=0..5000"],
    ),
    (
        "holder-steady",
        "correct",
        [
            "claim.lifetime_ms=500..5000",
            "claim.renew_every_ms=0..3000",
        ],
    ),
    (
        "steady",
        "no-renewal",
        [
            "worker.renew_every_ms=200..2000",
            "latency.delete=100..1900",
        ],
    ),
    (
        "items-steady",
        "unfenced-apply",
        ["worker.renew_every_ms=200..2000", "latency.apply=0..900"],
    ),
    (
        "expiry-steady",
        "tokenless-release",
        ["worker.claim_for_ms=1000..10000", "latency.expire=50..500"],
    ),
    (
        "holder-long-jobs",
        "plain-delete",
        ["claim.lifetime_ms=2000..8000", "job.long_share=0..0.5"],
    ),
];

fn spec(
    (scenario, worker, axes): &Case,
    resolution: usize,
    seeds: u64,
    search: Search,
) -> EnvelopeSpec {
    let scenario = leasesim::catalog::resolve_one(scenario).expect("a builtin scenario");
    let axes = axes
        .iter()
        .map(|a| Axis::parse(a).expect("an axis"))
        .collect();
    // Every core (the default), as the command runs it.
    EnvelopeSpec {
        resolution,
        seeds,
        search,
        ..EnvelopeSpec::new(scenario, worker, axes)
    }
}

/// Measures one case, searched and as a grid.
fn measure_case(case: &Case, resolution: usize, seeds: u64) -> EnvelopeFigure {
    let progress = Arc::new(Progress::default());
    let timed = |search| {
        let started = Instant::now();
        let envelope = measure(
            &spec(case, resolution, seeds, search),
            &progress,
            &mut |_| {},
        )
        .expect("a valid envelope");
        (envelope, started.elapsed().as_secs_f64())
    };
    let (searched, searched_s) = timed(Search::Adaptive);
    let (grid, grid_s) = timed(Search::Grid);
    let classes = |e: &leasesim::envelope::Envelope| -> Vec<Class> {
        e.map.cells.iter().map(|(c, _)| *c).collect()
    };
    let unsafe_points = classes(&grid)
        .iter()
        .filter(|c| **c == Class::Unsafe)
        .count();
    let (scenario, worker, axes) = case;
    EnvelopeFigure {
        scenario: scenario.to_string(),
        worker: worker.to_string(),
        axes: axes.join(", "),
        resolution,
        seeds,
        points: searched.points_run(),
        runs: searched.runs,
        grid_runs: grid.runs,
        searched_s,
        grid_s,
        agrees: classes(&searched) == classes(&grid),
        unsafe_points,
    }
}

/// Measures every case.
pub fn measure_all(resolution: usize, seeds: u64) -> Vec<EnvelopeFigure> {
    CASES
        .iter()
        .map(|case| measure_case(case, resolution, seeds))
        .collect()
}
