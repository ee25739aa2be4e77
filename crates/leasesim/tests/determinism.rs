//! Determinism checked the way madsim does: a sample of seeds of every built-in scenario, each
//! run twice in this process (the traces compared event by event) and once more in a fresh
//! process (the trace hashes compared). A fresh process has other hash seeds, other thread-local
//! state, other addresses; a trace that depends on any of them differs there.
//!
//! Terminology:
//! - *sample*: per scenario, the correct worker at seeds 0 to 2 (random) and 0 to 1 (PCT depth
//!   3), and each of the system's defective workers at seed 0.
//! - *fingerprint*: one line per run of the sample: scenario, worker, strategy, seed, events,
//!   steps and trace hash.
//!
//! Ignored in the ordinary run (a few hundred runs, twice): `.ci/run` runs it with
//! `cargo test -p leasesim --test determinism -- --ignored`.

use std::process::Command;

use leasesim::Strategy;
use leasesim::catalog::resolve_scenarios;
use leasesim_rt::Feed;
use leasesim_sim::check_determinism;

/// Set in the child process: print the fingerprints and stop.
const CHILD: &str = "LEASESIM_DETERMINISM_CHILD";

/// Every run of the sample: `(scenario, worker, strategy, seed)`.
fn sample() -> Vec<(
    std::sync::Arc<dyn leasesim::systems::AnyScenario>,
    String,
    Strategy,
    u64,
)> {
    let mut runs = Vec::new();
    for scenario in resolve_scenarios("all").expect("the built-in scenarios load") {
        for seed in 0..3 {
            runs.push((
                scenario.clone(),
                "correct".to_string(),
                Strategy::Random,
                seed,
            ));
        }
        for seed in 0..2 {
            runs.push((
                scenario.clone(),
                "correct".into(),
                Strategy::Pct { depth: 3 },
                seed,
            ));
        }
        let defective = scenario.system().workers().into_iter().skip(1);
        for worker in defective {
            runs.push((
                scenario.clone(),
                worker.name.to_string(),
                Strategy::Random,
                0,
            ));
        }
    }
    runs
}

/// The fingerprint of each run of the sample, in order; with `twice`, each run is made twice
/// and the two traces must agree event by event.
fn fingerprints(twice: bool) -> Vec<String> {
    let mut lines = Vec::new();
    for (scenario, worker, strategy, seed) in sample() {
        let mut runner = scenario
            .runner(&worker, strategy)
            .unwrap_or_else(|| panic!("{} has no worker {worker}", scenario.name()));
        runner.calibrate();
        let head = runner.header(format!("seed {seed}"));
        let trace = || -> Vec<String> {
            let report = runner.run(Feed::Seed(seed), true, false);
            report.trace(&head).lines().map(String::from).collect()
        };
        if twice {
            check_determinism(trace).unwrap_or_else(|divergence| {
                panic!(
                    "{} {worker} {strategy} seed {seed}: {divergence}",
                    scenario.name()
                )
            });
        }
        let stats = runner.run(Feed::Seed(seed), false, false).stats();
        lines.push(format!(
            "{} {worker} {strategy} {seed}: {} events, {} steps, hash {:016x}",
            scenario.name(),
            stats.events,
            stats.steps,
            stats.trace_hash
        ));
    }
    lines
}

#[test]
#[ignore = "a few hundred runs, twice, and a child process: .ci/run runs it"]
fn every_scenario_replays_alike_in_this_process_and_in_a_fresh_one() {
    if std::env::var_os(CHILD).is_some() {
        for line in fingerprints(false) {
            println!("FINGERPRINT {line}");
        }
        return;
    }
    let here = fingerprints(true);
    let output = Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--ignored", "--exact", "--nocapture", "--test-threads", "1"])
        .arg("every_scenario_replays_alike_in_this_process_and_in_a_fresh_one")
        .env(CHILD, "1")
        .output()
        .expect("the test binary runs again");
    let stdout = String::from_utf8(output.stdout).expect("UTF-8");
    let there: Vec<String> = stdout
        .lines()
        .filter_map(|line| {
            line.split_once("FINGERPRINT ")
                .map(|(_, rest)| rest.to_string())
        })
        .collect();
    assert_eq!(
        there.len(),
        here.len(),
        "the child printed {} of {}",
        there.len(),
        here.len()
    );
    for (mine, theirs) in here.iter().zip(&there) {
        assert_eq!(mine, theirs, "a run differs in a fresh process");
    }
    assert!(here.len() > 200, "a sample of {} runs", here.len());
}
