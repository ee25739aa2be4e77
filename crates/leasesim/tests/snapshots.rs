//! Traces under review: every scenario of every system with its correct worker at one fixed
//! seed, and every defective worker's shrunk counterexample. Stored in the top-level
//! `snapshots/SYSTEM/` directories; `cargo test` fails on any drift (CI runs with
//! `INSTA_UPDATE=no`).

use leasesim::Strategy;
use leasesim::catalog::{builtin_names_of, resolve_one};
use leasesim::systems::{AnyRunner, SYSTEMS};
use leasesim::trace::TraceHeader;
use leasesim_rt::Feed;
use leasesim_sim::Counterexample;

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

/// The CLI's default budget, so a snapshot shows what `leasesim shrink` prints.
const SHRINK_BUDGET: u64 = 20_000;

/// Each defective worker's counterexample (`WorkerInfo::counterexample`, declared in its
/// system's catalogue): the scenario and seed it is shrunk from, and the most events the
/// shrunk trace may have (25 in most; a few need more: `leftover-release` a second replica
/// whose deletes keep its lease while the first one's next term begins, `tokenless-release`
/// a batch whose first transitions outlast the claim, a work-items stale write a claim held
/// past its lease chunk by chunk).
fn counterexamples() -> Vec<(&'static str, &'static str, Counterexample)> {
    let workers = leasesim::catalog::workers().into_iter();
    let defective = workers.filter(|(_, worker)| worker.name != "correct");
    defective
        .map(|(system, worker)| {
            let counterexample = worker
                .counterexample
                .unwrap_or_else(|| panic!("{system}/{} declares no counterexample", worker.name));
            (system, worker.name, counterexample)
        })
        .collect()
}

#[test]
fn every_declared_counterexample_has_its_snapshot_and_no_other_is_stored() {
    let mut declared: Vec<String> = counterexamples()
        .into_iter()
        .map(|(system, worker, _)| format!("{system}/counterexample__{worker}.snap"))
        .collect();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../snapshots");
    let mut stored = Vec::new();
    for system in SYSTEMS {
        let folder = root.join(system.name());
        for entry in std::fs::read_dir(&folder).unwrap_or_else(|e| panic!("{folder:?}: {e}")) {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            if name.starts_with("counterexample__") {
                stored.push(format!("{}/{name}", system.name()));
            }
        }
    }
    declared.sort();
    stored.sort();
    assert_eq!(declared, stored);
}

#[test]
fn every_defective_worker_has_a_small_shrunk_counterexample() {
    for (system, worker, counterexample) in counterexamples() {
        let Counterexample {
            scenario,
            seed,
            max_events,
        } = counterexample;
        let runner = runner(scenario, worker);
        let shrunk = runner
            .shrink(Feed::Seed(seed), SHRINK_BUDGET)
            .unwrap_or_else(|| panic!("{worker} passes {scenario} seed {seed}"));
        let report = &shrunk.report;
        let invariant = report
            .invariant()
            .expect("a counterexample breaks an invariant");
        let (_, declared) = leasesim::catalog::workers()
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
