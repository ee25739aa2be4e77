//! The fuzz campaign as the oracle of mutation testing.
//!
//! `cargo mutants` changes the production worker core (`crates/retention-worker`) one mutant at a time
//! and runs this test against each: a mutant is *killed* when some seed of some default
//! scenario fails. It is ignored in the normal test run; README gives the command and the
//! score. `LEASESIM_ORACLE_SEEDS` sets the seeds per scenario and strategy (default 200).

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
        for name in builtin_names_of("retention") {
            leasesim::check(name, leasesim::correct_worker_of)
                .strategy(strategy)
                .seeds(seeds);
        }
    }
}
