//! How leasesim's cost grows with the work, one dimension at a time from a small baseline.
//!
//! `cargo bench -p leasesim --bench scaling` prints one markdown table per dimension (rows in
//! the store, replicas, virtual duration of the safety phase, fault density) with seeds per
//! second, events per seed, events per second and µs per event, single-threaded, on the path
//! `leasesim fuzz` takes for every seed (`leasesim::runner::run`: every checker, coverage,
//! trace hash; no kept events, no recorded choices). It ends with one line saying whether the
//! cost per event stayed within ±30 % (of the dimension's median) across each dimension.
//!
//! The baseline (inline scenario): 2 replicas, 1 min safety + 10 s liveness, 10,000 rows, no
//! faults, default latencies. Terms are capped at 4 rows (batches of 2) and start every 2-4 s
//! per replica, with a 60 s retention, so that no configuration deletes every row (at 60 min,
//! ~9,600 of 10,000 at most): the work per term is the same at 1,000 rows as at 100,000, and
//! `drain = false` so the liveness check does not ask for the backlog to go. A column shows the
//! rows one sample seed deleted, to prove it.
//!
//! Then the same for every other system, from its no-fault default scenario (`holder-steady`,
//! `expiry-steady`, `items-steady`) with one key moved at a time through the scenario overrides
//! `shrink` uses: replicas, the safety phase's length, shared fault density (rejects and lost
//! replies on every operation, pauses), for reservations the holds already due at the start
//! and for work-items the number of items. The measurement is `common/growth.rs`.
//!
//! Figures are per CPU second of this thread (the wall clock is also read, around batches only).
//! `LEASESIM_BENCH_SECS` (default 2.0) sets the CPU seconds measured per table row.
// Wall clock and CPU clock are read only around whole batches of runs, never inside a run.
#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    clippy::print_stdout
)]

mod common;

use common::Budget;
use common::growth::{self, BASELINE, Dimension};

fn print_table(dimension: &Dimension) {
    println!("### {}: {}", dimension.system, dimension.name);
    println!();
    println!(
        "| value | seeds | seeds/s | events/seed | events/s | µs/event | steps/seed | failing | rows deleted (seed 0) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in &dimension.rows {
        let t = row.totals;
        let seeds = t.seeds as f64;
        println!(
            "| {} | {} | {:.1} | {:.0} | {:.0} | {:.3} | {:.0} | {} | {} |",
            row.value,
            t.seeds,
            seeds / row.time.cpu_s,
            t.events as f64 / seeds,
            t.events as f64 / row.time.cpu_s,
            row.us_per_event(),
            t.steps as f64 / seeds,
            t.failed,
            row.deleted
                .map_or_else(|| "-".to_string(), |(done, of)| format!("{done} of {of}")),
        );
    }
    println!();
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is accepted and ignored.
    println!(
        "leasesim scaling, single thread, runner::run (all checkers), CPU time of this thread"
    );
    println!(
        "baseline: {} replicas, {} min safety + 10 s liveness, {} rows, faults off; cap 4 rows/term",
        BASELINE.replicas, BASELINE.duration_min, BASELINE.rows
    );
    println!();
    let dimensions = growth::all_dimensions(Budget::from_env(2.0, 0.25));
    for dimension in &dimensions {
        print_table(dimension);
    }
    let verdicts: Vec<String> = dimensions
        .iter()
        .map(|dimension| {
            let (low, high) = dimension.spread();
            let within = low >= -0.30 && high <= 0.30;
            format!(
                "{}: {} {} ({:+.0}%..{:+.0}%)",
                dimension.system,
                dimension.name,
                if within { "yes" } else { "NO" },
                low * 100.0,
                high * 100.0
            )
        })
        .collect();
    println!(
        "cost per event within ±30% of each dimension's median: {}",
        verdicts.join(", ")
    );
}
