//! The fuzz campaign as the oracle of mutation testing.
//!
//! `cargo mutants` changes the production worker core (`crates/retention-worker`) one mutant
//! at a time and runs this test against each: a mutant is *killed* when some seed of some
//! default scenario of the retention system fails, under the random strategy or PCT. It is
//! ignored in the normal test run; README gives the score. `just mutants` runs it as
//! `cargo mutants -p retention-worker --test-package leasesim -C --test=mutation_oracle -j 1
//! --timeout 150 -- -- --ignored` (the `-C` keeps each mutant's build to this one test target).
//! `LEASESIM_ORACLE_SEEDS` sets the seeds per scenario and strategy (default 200: 15 scenarios
//! times two strategies, 6,000 runs per mutant).

use leasesim::Strategy;
use leasesim::catalog::builtin_names_of;

#[test]
#[ignore = "the oracle of `cargo mutants` (README: mutation testing)"]
fn the_campaign_finds_no_failure_in_the_production_worker() {
    let seeds = std::env::var("LEASESIM_ORACLE_SEEDS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(200);
    for strategy in [Strategy::Random, Strategy::Pct { depth: 3 }] {
        // `check` runs the retention worker, so only the retention system's scenarios.
        for name in builtin_names_of("retention") {
            leasesim::check(name, leasesim::correct_worker_of)
                .strategy(strategy)
                .seeds(seeds);
        }
    }
}
