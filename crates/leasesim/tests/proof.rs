//! The harness finds the review's bugs, and the real worker survives every scenario.
//!
//! The full-size figures (20,000 seeds per scenario; seeds-to-detect over 20 ranges) are
//! produced by the commands in README; these tests run smaller counts of the same thing.

use leasesim::catalog::{builtin_names, resolve_scenarios, workers};
use leasesim::detect::detect_range;
use leasesim::runner::{RunSpec, run};
use leasesim::{Invariant, Strategy};
use leasesim_rt::Feed;
use std::rc::Rc;

/// The five findings of the seed review, each with the invariants that must name it. Written
/// out here on purpose (not read from the defect table) so the table cannot drift unnoticed.
const FINDINGS: [(&str, &[Invariant]); 5] = [
    (
        "interval-renewal",
        &[Invariant::SerialRenewal, Invariant::NoDeleteAfterLoss],
    ),
    ("stale-release", &[Invariant::ReleaseLatest]),
    ("moving-cutoff", &[Invariant::FixedCutoff]),
    ("uncapped", &[Invariant::TermCap]),
    (
        "unjoined-stop",
        &[Invariant::StopJoins, Invariant::ReleaseOnExit],
    ),
];

fn caught_within(worker: &str, invariants: &[Invariant], strategy: Strategy, start: u64) {
    let scenarios = resolve_scenarios("all").unwrap();
    let result = detect_range(&scenarios, worker, invariants, strategy, start, 200);
    let (seeds, runs, scenario, invariant) = result
        .detected
        .unwrap_or_else(|| panic!("{worker} ({strategy}) was not caught within 200 seeds"));
    assert!(invariants.contains(&invariant));
    println!(
        "{worker} ({strategy}): caught by {invariant} in {scenario} after {seeds} seeds / {runs} runs"
    );
}

#[test]
fn each_review_finding_is_caught_by_its_own_invariant_within_200_seeds() {
    for (worker, invariants) in FINDINGS {
        caught_within(worker, invariants, Strategy::Random, 0);
        caught_within(worker, invariants, Strategy::Pct { depth: 3 }, 1_000_000);
    }
}

#[test]
fn every_other_defective_worker_is_caught_by_the_invariants_it_declares() {
    for worker in workers().into_iter().filter(|w| w.name != "correct") {
        let invariants: Vec<Invariant> = worker
            .caught_by
            .iter()
            .map(|name| Invariant::from_name(name).unwrap())
            .collect();
        assert!(
            !invariants.is_empty(),
            "{} declares no invariant",
            worker.name
        );
        caught_within(worker.name, &invariants, Strategy::Random, 7_000_000);
    }
}

fn correct_run(scenario: &str, seed: u64) -> leasesim::runner::RunReport {
    let scenario = Rc::new(resolve_scenarios(scenario).unwrap().remove(0));
    let spec = RunSpec {
        scenario,
        worker: "correct".into(),
        factory: leasesim::catalog::worker_factory("correct").unwrap(),
        feed: Feed::Seed(seed),
        strategy: if seed.is_multiple_of(2) {
            Strategy::Random
        } else {
            Strategy::Pct { depth: 3 }
        },
        keep_events: false,
        record_choices: false,
        event_limit: None,
        pct_steps: None,
        interrupt: None,
    };
    run(&spec)
}

#[test]
fn the_correct_worker_passes_every_scenario() {
    const SEEDS: u64 = 100;
    for name in builtin_names() {
        for seed in 0..SEEDS {
            let report = correct_run(name, seed);
            assert!(
                report.outcome.is_pass(),
                "{name} seed {seed}: {}",
                report.outcome.sentence()
            );
        }
    }
}

#[test]
fn fencing_off_reports_its_expected_stale_delete_for_the_correct_worker() {
    let seeds = 20;
    let hits = (0..seeds)
        .filter(|&seed| {
            let report = correct_run("fencing-off", seed);
            assert!(report.outcome.is_pass(), "{}", report.outcome.sentence());
            report
                .expected
                .iter()
                .any(|v| v.invariant == Invariant::StaleTokenDelete)
        })
        .count();
    assert!(
        hits >= 15,
        "stale-token-delete reported in only {hits} of {seeds} seeds"
    );
}

#[test]
fn fencing_on_never_applies_a_stale_delete() {
    // The same pauses with the store enforcing tokens: the store refuses instead.
    for seed in 0..10 {
        let report = correct_run("lease-expiry-successor", seed);
        assert!(report.outcome.is_pass(), "{}", report.outcome.sentence());
        assert!(report.expected.is_empty());
    }
}

/// Each default scenario is tuned so the situation it is named after happens in most seeds:
/// the predicate here reads that situation off the run's events.
#[test]
fn every_scenario_makes_its_named_situation_happen_in_most_seeds() {
    use leasesim_check::Situation;
    use leasesim_events::{Answer, EventKind, Failure, OpKind};
    type Probe = fn(&leasesim::runner::RunReport) -> bool;
    let probes: [(&str, Probe); 12] = [
        ("steady", |r| {
            r.coverage.reached().contains(Situation::CapReached)
        }),
        ("backlog-cap", |r| {
            r.coverage.reached().contains(Situation::CapReached)
        }),
        ("renewal-reorder", |r| {
            r.coverage
                .reached()
                .contains(Situation::RenewReplyDuringDelete)
        }),
        ("stop-during-acquire", |r| {
            r.coverage.reached().contains(Situation::StopDuringAcquire)
        }),
        ("lease-expiry-successor", |r| {
            r.coverage
                .reached()
                .contains(Situation::RivalTookOverExpired)
                && r.coverage.reached().contains(Situation::StoreRejectedStale)
        }),
        ("release-race", |r| {
            r.coverage
                .reached()
                .contains(Situation::ReleaseFreedNothing)
        }),
        ("reply-lost", |r| {
            r.coverage
                .reached()
                .contains(Situation::ReplyLostAfterApply)
        }),
        ("renewal-rejection", |r| {
            r.events.iter().any(|e| {
                matches!(
                    e.event.kind,
                    EventKind::Answered {
                        op: OpKind::Renew,
                        answer: Answer::Failed(Failure::Rejected),
                        ..
                    }
                )
            })
        }),
        ("stop-anywhere", |r| {
            r.events
                .iter()
                .any(|e| e.event.kind == EventKind::StopCalled)
        }),
        ("clock-skew", |r| {
            r.profile.clocks.iter().any(|c| c.offset_ms != 0)
                && r.events
                    .iter()
                    .any(|e| matches!(e.event.kind, EventKind::ClockJumped { .. }))
        }),
        ("slow-deletes", |r| {
            // Time passes between two batches of one term.
            let mut sent = std::collections::BTreeMap::new();
            r.events
                .iter()
                .any(|e| match (e.event.replica, e.event.kind) {
                    (Some(replica), EventKind::TermStarted { .. }) => {
                        sent.remove(&replica);
                        false
                    }
                    (
                        Some(replica),
                        EventKind::Call {
                            request: leasesim_events::Request::Delete { .. },
                            ..
                        },
                    ) => sent
                        .insert(replica, e.at_ms)
                        .is_some_and(|before| e.at_ms >= before + 200),
                    _ => false,
                })
        }),
        ("swarm", |r| r.profile.describe().len() > 1),
    ];
    for (name, probe) in probes {
        let scenario = Rc::new(resolve_scenarios(name).unwrap().remove(0));
        let hits = (0..10u64)
            .filter(|&seed| {
                let spec = RunSpec {
                    scenario: scenario.clone(),
                    worker: "correct".into(),
                    factory: leasesim::catalog::worker_factory("correct").unwrap(),
                    feed: Feed::Seed(seed),
                    strategy: Strategy::Random,
                    keep_events: true,
                    record_choices: false,
                    event_limit: None,
                    pct_steps: None,
                    interrupt: None,
                };
                probe(&run(&spec))
            })
            .count();
        println!("{name}: its situation happened in {hits} of 10 seeds");
        assert!(
            hits >= 6,
            "{name}: its situation happened in only {hits} of 10 seeds"
        );
    }
}
