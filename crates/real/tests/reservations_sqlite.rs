//! Real runs of the reservation expiry worker against SQLite, judged by the reservations
//! checkers.

use leasesim_real::StoreTarget;
use leasesim_real::reservations::{RealConfig, RealReport, RealSettings, run};
use leasesim_reservations::checkers::Situation;

fn real_run(worker: &str, seed: u64, duration_ms: u64) -> RealReport {
    real_run_with(worker, seed, duration_ms, RealSettings::default())
}

fn real_run_with(worker: &str, seed: u64, duration_ms: u64, settings: RealSettings) -> RealReport {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = RealConfig {
        target: StoreTarget::Sqlite {
            path: dir.path().join("reservations.db"),
        },
        worker: worker.into(),
        replicas: 3,
        duration_ms,
        liveness_ms: 2_000,
        seed,
        settings,
        keep_events: false,
    };
    let report = run(&config).unwrap_or_else(|e| panic!("{e}"));
    println!(
        "{worker} seed {seed}: {} ({:?})",
        report.verdict_line(),
        report.stats
    );
    report
}

#[test]
#[ignore = "real time on tokio against a real store: .ci/run runs it on its own, not in the default run"]
fn the_correct_worker_passes_a_real_run_with_agents_pauses_and_stops() {
    let report = real_run("correct", 1, 2_000);
    assert_eq!(report.violation, None, "{}", report.verdict_line());
    let stats = &report.stats;
    assert!(stats.expired > 0 && stats.consumed > 0, "{stats:?}");
    assert!(stats.stops > 0, "the plan stopped replicas: {stats:?}");
    assert_eq!(stats.store_errors, 0, "{stats:?}");
}

#[test]
#[ignore = "real time on tokio against a real store: .ci/run runs it on its own, not in the default run"]
fn a_read_then_write_claim_is_caught_in_a_real_run() {
    // Two replicas must read the same due holds before either writes its claim: a race of
    // real time, not certain in one run. It was caught in 3 of 3 seeds when measured (within
    // 300ms of each run); this asserts at least once in 3, and stops at the first catch.
    let caught = (1..=3).find_map(|seed| real_run("read-then-write-claim", seed, 2_000).violation);
    let violation = caught.expect("read-then-write-claim is caught in at least one of 3 runs");
    assert_eq!(
        violation.invariant.to_string(),
        "exclusive-claim",
        "{violation}"
    );
}

#[test]
#[ignore = "real time on tokio against a real store: .ci/run runs it on its own, not in the default run"]
fn a_second_run_while_one_is_active_is_refused_at_once() {
    let settings = RealSettings {
        second_run_probability: 1.0,
        ..RealSettings::default()
    };
    let report = real_run_with("correct", 2, 1_000, settings);
    assert_eq!(report.violation, None, "{}", report.verdict_line());
    assert!(
        report.coverage.contains(Situation::SecondRunRefused),
        "{:?}",
        report.coverage.iter().collect::<Vec<_>>()
    );
}
