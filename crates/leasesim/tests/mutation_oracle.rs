//! The fuzz campaign as the oracle of mutation testing, one test per system.
//!
//! `cargo mutants` changes a production worker core (`crates/SYSTEM-worker`) one mutant at a
//! time and runs that system's test here against each: a mutant is *caught* when some seed of
//! some default scenario of the system fails, under the random strategy or PCT depth 3. The
//! tests are ignored in the normal run; `docs/mutation-testing.md` gives the scores and
//! `just mutants SYSTEM` runs them, as
//! `cargo mutants -p SYSTEM-worker --test-package leasesim -C --test=mutation_oracle -j 1
//! --timeout 150 -- -- --ignored --exact SYSTEM_NAME` (the `-C` keeps each mutant's build to
//! this one test target; `--exact` keeps it to the system's test).
//! `LEASESIM_ORACLE_SEEDS` sets the seeds per scenario and strategy (default 200).

use leasesim::Strategy;
use leasesim::catalog::builtin_names_of;

/// Seeds per scenario and strategy.
fn seeds() -> u64 {
    std::env::var("LEASESIM_ORACLE_SEEDS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(200)
}

const STRATEGIES: [Strategy; 2] = [Strategy::Random, Strategy::Pct { depth: 3 }];

#[test]
#[ignore = "the oracle of `cargo mutants -p retention-worker` (docs/mutation-testing.md)"]
fn retention() {
    for strategy in STRATEGIES {
        for name in builtin_names_of("retention") {
            leasesim::check(name, leasesim::correct_worker_of)
                .strategy(strategy)
                .seeds(seeds());
        }
    }
}

#[test]
#[ignore = "the oracle of `cargo mutants -p work-items-worker` (docs/mutation-testing.md)"]
fn work_items() {
    use leasesim::work_items::{check, correct_worker_of};
    for strategy in STRATEGIES {
        for name in builtin_names_of("work-items") {
            check(name, correct_worker_of)
                .strategy(strategy)
                .seeds(seeds());
        }
    }
}

#[test]
#[ignore = "the oracle of `cargo mutants -p reservations-worker` (docs/mutation-testing.md)"]
fn reservations() {
    use leasesim::reservations::{check, correct_worker_of};
    for strategy in STRATEGIES {
        for name in builtin_names_of("reservations") {
            check(name, correct_worker_of)
                .strategy(strategy)
                .seeds(seeds());
        }
    }
}

#[test]
#[ignore = "the oracle of `cargo mutants -p holder-lock-worker` (docs/mutation-testing.md)"]
fn holder_lock() {
    use leasesim::holder_lock::{check, correct_worker_of};
    for strategy in STRATEGIES {
        for name in builtin_names_of("holder-lock") {
            check(name, correct_worker_of)
                .strategy(strategy)
                .seeds(seeds());
        }
    }
}
