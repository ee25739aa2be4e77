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

use leasesim::catalog::builtin_names_of;
use leasesim::{CheckSummary, Strategy};

/// Seeds per scenario and strategy.
fn seeds() -> u64 {
    std::env::var("LEASESIM_ORACLE_SEEDS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(200)
}

const STRATEGIES: [Strategy; 2] = [Strategy::Random, Strategy::Pct { depth: 3 }];

/// Runs `check` (a system's check of its correct worker) over every default scenario of
/// `system`, under each strategy; a failing seed panics inside `check`.
fn campaign(system: &str, check: impl Fn(&'static str, Strategy, u64) -> CheckSummary) {
    let names = builtin_names_of(system);
    assert!(!names.is_empty(), "{system} has no default scenario");
    for strategy in STRATEGIES {
        for &name in &names {
            let summary = check(name, strategy, seeds());
            // invariant: every scenario ran (LEASESIM_SCENARIO would skip the others).
            assert!(
                !summary.skipped,
                "{name} was skipped: unset LEASESIM_SCENARIO"
            );
            assert_eq!(summary.seeds, seeds(), "{name}");
        }
    }
}

#[test]
#[ignore = "the oracle of `cargo mutants -p retention-worker` (docs/mutation-testing.md)"]
fn retention() {
    campaign("retention", |name, strategy, seeds| {
        leasesim::retention::check(name, leasesim::retention::correct_worker_of)
            .strategy(strategy)
            .seeds(seeds)
    });
}

#[test]
#[ignore = "the oracle of `cargo mutants -p work-items-worker` (docs/mutation-testing.md)"]
fn work_items() {
    use leasesim::work_items::{check, correct_worker_of};
    campaign("work-items", |name, strategy, seeds| {
        check(name, correct_worker_of)
            .strategy(strategy)
            .seeds(seeds)
    });
}

#[test]
#[ignore = "the oracle of `cargo mutants -p reservations-worker` (docs/mutation-testing.md)"]
fn reservations() {
    use leasesim::reservations::{check, correct_worker_of};
    campaign("reservations", |name, strategy, seeds| {
        check(name, correct_worker_of)
            .strategy(strategy)
            .seeds(seeds)
    });
}

#[test]
#[ignore = "the oracle of `cargo mutants -p holder-lock-worker` (docs/mutation-testing.md)"]
fn holder_lock() {
    use leasesim::holder_lock::{check, correct_worker_of};
    campaign("holder-lock", |name, strategy, seeds| {
        check(name, correct_worker_of)
            .strategy(strategy)
            .seeds(seeds)
    });
}
