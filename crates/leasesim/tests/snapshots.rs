//! Traces under review: every scenario of every system with its correct worker at one fixed
//! seed, and every defective worker's shrunk counterexample. Stored in the top-level
//! `snapshots/SYSTEM/` directories; `cargo test` fails on any drift (CI runs with
//! `INSTA_UPDATE=no`).

use leasesim::Strategy;
use leasesim::catalog::{builtin_names_of, resolve_one};
use leasesim::systems::{AnyRunner, SYSTEMS};
use leasesim::trace::TraceHeader;
use leasesim_rt::Feed;

/// Seed of every scenario snapshot.
const SCENARIO_SEED: u64 = 1;
/// Event lines shown in a scenario snapshot before the whole-run summary.
const DIGEST_LINES: usize = 120;

macro_rules! snapshot {
    ($system:expr, $name:expr, $text:expr) => {
        let folder = format!("{}/../../snapshots/{}", env!("CARGO_MANIFEST_DIR"), $system);
        insta::with_settings!({
            snapshot_path => folder,
            prepend_module_to_snapshot => false,
            omit_expression => true,
        }, {
            insta::assert_snapshot!($name, $text);
        });
    };
}

fn runner(scenario: &str, worker: &str) -> Box<dyn AnyRunner> {
    resolve_one(scenario)
        .unwrap()
        .runner(worker, Strategy::Random)
        .unwrap_or_else(|| panic!("{worker} is not a worker of {scenario}'s system"))
}

#[test]
fn every_scenario_with_the_correct_worker() {
    for system in SYSTEMS {
        for name in builtin_names_of(system.name()) {
            let runner = runner(name, "correct");
            let report = runner.run(Feed::Seed(SCENARIO_SEED), true, false);
            assert!(!report.failed(), "{name}: {}", report.sentence());
            let head = runner.header(format!("seed {SCENARIO_SEED}"));
            let text = report.digest(&head, DIGEST_LINES);
            snapshot!(system.name(), format!("scenario__{name}"), text);
        }
    }
}

/// Each defective worker, the scenario and seed its counterexample is shrunk from, and the
/// most events the shrunk trace may have (25, the issue-11 target; `leftover-release` needs a
/// second replica whose deletes keep its lease while the first one's next term begins;
/// `tokenless-release` needs a batch whose first transitions outlast the claim, so that
/// another worker claims the rest before the first one releases them; a work-items stale
/// write needs a claim held past its lease, chunk by chunk, so those rows allow what they
/// shrink to).
const COUNTEREXAMPLES: &[(&str, &str, u64, u64)] = &[
    ("naive", "steady", 0, 25),
    ("interval-renewal", "renewal-reorder", 0, 25),
    ("stale-release", "reply-lost", 0, 25),
    ("moving-cutoff", "steady", 0, 25),
    ("uncapped", "steady", 0, 25),
    ("unjoined-stop", "stop-during-acquire", 0, 25),
    ("early-cutoff", "steady", 0, 25),
    ("leaked-renewal", "slow-deletes", 0, 25),
    ("delete-after-loss", "fencing-off", 0, 25),
    ("renew-error-no-release", "reply-lost", 0, 25),
    ("acquired-token", "renewal-rejection", 0, 25),
    ("leftover-release", "slow-deletes", 0, 26),
    ("stale-renewal", "exact-token-renewal", 0, 25),
    ("whole-batches", "odd-batches", 0, 25),
    ("no-renewal", "renewal-reorder", 0, 25),
    ("sleepy-stop", "slow-deletes", 5, 25),
    ("plain-delete", "holder-long-jobs", 0, 45),
    ("read-then-delete", "holder-slow-release", 1, 25),
    ("fixed-token", "holder-long-jobs", 0, 25),
    ("side-key", "holder-slow-release", 2, 25),
    ("swallowed-release", "holder-long-jobs", 0, 25),
    ("long-lifetime", "holder-long-jobs", 0, 25),
    ("trust-from-answer", "holder-slow-timers", 2, 25),
    // reservations (design 002)
    ("unguarded-expire", "expiry-consume-race", 0, 25),
    ("read-then-write-claim", "expiry-claim-takeover", 0, 25),
    ("tokenless-release", "expiry-claim-takeover", 0, 35),
    ("retry-everything", "expiry-consume-race", 0, 25),
    ("worker-clock-now", "expiry-clock-skew", 0, 25),
    ("worker-clock-claim", "expiry-clock-skew", 0, 25),
    ("token-per-worker", "expiry-steady", 0, 25),
    ("release-skipped-on-error", "expiry-transient-errors", 0, 25),
    // work-items (design 001)
    ("plain-write-claim", "items-steady", 0, 17),
    ("unfenced-apply", "items-clock-skew", 0, 34),
    ("keyless-retry", "items-provider-timeouts", 0, 22),
    ("lease-lost-retry", "items-ugly-transition", 0, 19),
    ("unfenced-done", "items-clock-skew", 2, 42),
    ("worker-token", "items-long-items", 0, 25),
    ("store-expiry-renewal", "items-clock-skew", 0, 25),
    ("no-deadline", "items-long-items", 0, 25),
];

/// The CLI's default budget, so a snapshot shows what `leasesim shrink` prints.
const SHRINK_BUDGET: u64 = 20_000;

#[test]
fn every_defective_worker_is_listed_here() {
    let mut missing = Vec::new();
    for (system, worker) in leasesim::catalog::workers() {
        let listed = COUNTEREXAMPLES
            .iter()
            .any(|(name, ..)| *name == worker.name);
        if worker.name != "correct" && !listed {
            missing.push(format!("{system}/{}", worker.name));
        }
    }
    assert!(
        missing.is_empty(),
        "no counterexample snapshot for {missing:?}"
    );
}

#[test]
fn every_defective_worker_has_a_small_shrunk_counterexample() {
    for &(worker, scenario, seed, max_events) in COUNTEREXAMPLES {
        let runner = runner(scenario, worker);
        let shrunk = runner
            .shrink(Feed::Seed(seed), SHRINK_BUDGET)
            .unwrap_or_else(|| panic!("{worker} passes {scenario} seed {seed}"));
        let report = &shrunk.report;
        let invariant = report
            .invariant()
            .expect("a counterexample breaks an invariant");
        let (system, declared) = leasesim::catalog::workers()
            .into_iter()
            .find(|(_, w)| w.name == worker)
            .unwrap();
        assert!(
            declared.caught_by.contains(&invariant),
            "{worker} shrank to {invariant}, which it does not declare"
        );
        let events = report.stats().events;
        assert!(
            events <= max_events,
            "{worker}: shrunk trace has {events} events, more than {max_events}"
        );
        let feed = format!(
            "seed {seed}, shrunk from {} to {events} events",
            shrunk.original_events
        );
        let head = TraceHeader {
            overrides: shrunk.overrides.lines(),
            ..runner.header(feed)
        };
        snapshot!(
            system,
            format!("counterexample__{worker}"),
            report.trace(&head)
        );
    }
}
