//! The worker's settings vary: a cap and batch arithmetic mistake shows only where the cap is
//! not a multiple of the batch, and swarm runs are judged against the settings they drew.

use std::rc::Rc;

use leasesim::catalog::resolve_typed;
use leasesim::retention::{Retention, Scenario};
use leasesim::runner::{RunReport, RunSpec, run};
use leasesim::{Strategy, Workers};
use leasesim_retention::WorkerDraw;
use leasesim_retention::checkers::{CheckConfig, Invariant, checker_set};
use leasesim_rt::Feed;

fn scenario(name: &str) -> Rc<Scenario> {
    Rc::new(resolve_typed::<Retention>(name).unwrap())
}

fn run_seed(
    scenario: &Rc<Scenario>,
    worker: &str,
    seed: u64,
    keep_events: bool,
) -> RunReport<Retention> {
    let (factory, feed) = (Retention::factory(worker).unwrap(), Feed::Seed(seed));
    run(&RunSpec {
        keep_events,
        ..RunSpec::new(scenario.clone(), worker, factory, feed, Strategy::Random)
    })
}

#[test]
fn a_cap_arithmetic_mistake_is_caught_in_odd_batches_but_passes_steady() {
    let steady = scenario("steady");
    for seed in 0..100 {
        let report = run_seed(&steady, "whole-batches", seed, false);
        assert!(
            report.outcome.is_pass(),
            "steady seed {seed}: {}",
            report.outcome.sentence()
        );
    }
    let odd = scenario("odd-batches");
    for seed in 0..10 {
        let outcome = run_seed(&odd, "whole-batches", seed, false).outcome;
        assert_eq!(
            outcome.invariant(),
            Some(Invariant::NoEarlyStop),
            "odd-batches seed {seed}: {}",
            outcome.sentence()
        );
        assert!(
            outcome.sentence().contains("after 256 rows"),
            "{}",
            outcome.sentence()
        );
    }
}

/// The checker configuration the scenario itself gives (what swarm runs were judged by before
/// the worker settings were drawn).
fn scenario_config(scenario: &Scenario) -> CheckConfig {
    CheckConfig {
        batch_rows: scenario.settings.worker.batch_rows,
        cap_rows: scenario.settings.worker.cap_rows,
        retention_ms: scenario.settings.worker.retention_ms,
        term_bound_ms: scenario.settings.term_bound_ms,
    }
}

#[test]
fn swarm_runs_are_judged_against_the_worker_settings_they_drew() {
    let swarm = scenario("swarm");
    let drawn = |kind| {
        (0..60u64)
            .map(|seed| (seed, run_seed(&swarm, "correct", seed, true)))
            .filter(move |(_, report)| report.profile.system.worker_draw == Some(kind))
            .take(3)
            .collect::<Vec<_>>()
    };
    let small = drawn(WorkerDraw::Small);
    assert_eq!(small.len(), 3, "too few small-batch draws in 60 seeds");
    for (seed, report) in &small {
        assert!(
            report.outcome.is_pass(),
            "seed {seed}: {}",
            report.outcome.sentence()
        );
        // The same events, judged by the scenario's 200-row batches, break full-batch.
        let mut checkers = checker_set(&scenario_config(&swarm), &Invariant::ALL, None);
        report.events.iter().for_each(|event| {
            checkers.on_event(event);
        });
        let violation = checkers.violation().map(|v| v.invariant);
        assert_eq!(violation, Some(Invariant::FullBatch), "seed {seed}");
    }
    let caught = drawn(WorkerDraw::Large).iter().any(|(seed, report)| {
        let worker = &report.profile.system.worker;
        assert_ne!(worker.cap_rows % worker.batch_rows, 0);
        let outcome = run_seed(&swarm, "whole-batches", *seed, false).outcome;
        outcome.invariant() == Some(Invariant::NoEarlyStop)
    });
    assert!(caught, "whole-batches passed every large-batch swarm draw");
}
