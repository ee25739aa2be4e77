//! Traces under review: every scenario with the correct worker at one fixed seed, and every
//! defective worker's shrunk counterexample. Stored in the top-level `snapshots/` directory;
//! `cargo test` fails on any drift (CI runs with `INSTA_UPDATE=no`).

use std::rc::Rc;

use leasesim::catalog::{builtin_names, resolve_scenarios, worker_factory};
use leasesim::runner::{RunSpec, run};
use leasesim::shrink::shrink;
use leasesim::trace::{TraceHeader, render, render_digest};
use leasesim::{Invariant, Strategy};
use leasesim_rt::Feed;

/// Seed of every scenario snapshot.
const SCENARIO_SEED: u64 = 1;
/// Event lines shown in a scenario snapshot before the whole-run summary.
const DIGEST_LINES: usize = 120;

macro_rules! snapshot {
    ($name:expr, $text:expr) => {
        insta::with_settings!({
            snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/../../snapshots"),
            prepend_module_to_snapshot => false,
            omit_expression => true,
        }, {
            insta::assert_snapshot!($name, $text);
        });
    };
}

fn spec(scenario: &str, worker: &str, seed: u64) -> RunSpec {
    RunSpec {
        scenario: Rc::new(resolve_scenarios(scenario).unwrap().remove(0)),
        worker: worker.to_string(),
        factory: worker_factory(worker).unwrap(),
        feed: Feed::Seed(seed),
        strategy: Strategy::Random,
        keep_events: true,
        record_choices: false,
        event_limit: None,
        pct_steps: None,
        interrupt: None,
    }
}

fn header(spec: &RunSpec, feed: String) -> TraceHeader {
    TraceHeader::of(spec, feed)
}

#[test]
fn every_scenario_with_the_correct_worker() {
    for name in builtin_names() {
        let spec = spec(name, "correct", SCENARIO_SEED);
        let report = run(&spec);
        assert!(
            report.outcome.is_pass(),
            "{name}: {}",
            report.outcome.sentence()
        );
        let text = render_digest(
            &header(&spec, format!("seed {SCENARIO_SEED}")),
            &report,
            DIGEST_LINES,
        );
        snapshot!(format!("scenario__{name}"), text);
    }
}

/// Each defective worker, the scenario and seed its counterexample is shrunk from, and the
/// most events the shrunk trace may have (25, the issue-11 target; `leftover-release` needs a
/// second replica whose deletes keep its lease while the first one's next term begins).
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
];

/// The CLI's default budget, so a snapshot shows what `leasesim shrink` prints.
const SHRINK_BUDGET: u64 = 20_000;

#[test]
fn every_defective_worker_has_a_small_shrunk_counterexample() {
    for &(worker, scenario, seed, max_events) in COUNTEREXAMPLES {
        let spec = spec(scenario, worker, seed);
        let shrunk = shrink(&spec, SHRINK_BUDGET)
            .unwrap_or_else(|| panic!("{worker} passes {scenario} seed {seed}"));
        let report = &shrunk.report;
        let invariant = report
            .outcome
            .invariant()
            .expect("a counterexample breaks an invariant");
        let declared = leasesim::catalog::workers()
            .into_iter()
            .find(|w| w.name == worker)
            .unwrap();
        assert!(
            declared
                .caught_by
                .iter()
                .any(|n| Invariant::from_name(n) == Some(invariant)),
            "{worker} shrank to {invariant}, which it does not declare"
        );
        assert!(
            report.stats.events <= max_events,
            "{worker}: shrunk trace has {} events, more than {max_events}",
            report.stats.events
        );
        let feed = format!(
            "seed {seed}, shrunk from {} to {} events",
            shrunk.original_events, report.stats.events
        );
        let head = TraceHeader {
            overrides: shrunk.overrides.lines(),
            ..header(&spec, feed)
        };
        let text = render(&head, report);
        snapshot!(format!("counterexample__{worker}"), text);
    }
}
