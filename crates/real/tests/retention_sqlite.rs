//! Real runs of the retention worker against SQLite, judged by the retention checkers.

use leasesim_real::retention::{RealConfig, RealReport, RealSettings, StoreTarget, run};

fn real_run(worker: &str, seed: u64, duration_ms: u64) -> RealReport {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = RealConfig {
        target: StoreTarget::Sqlite {
            path: dir.path().join("retention.db"),
        },
        worker: worker.into(),
        replicas: 3,
        duration_ms,
        liveness_ms: 3_000,
        seed,
        settings: RealSettings::default(),
        keep_events: true,
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
fn the_correct_worker_passes_a_real_run_with_pauses_and_stops() {
    let report = real_run("correct", 1, 3_000);
    assert_eq!(report.violation, None, "{}", report.verdict_line());
    let stats = &report.stats;
    assert!(stats.terms >= 3 && stats.rows_deleted > 0, "{stats:?}");
    // Faults land by real time: the pauses come from one stream every task draws from, so a
    // 3 s run draws none in about 2 % of runs (0.65 to the 9th); the stops are planned.
    assert!(
        stats.pauses + stats.stops > 0,
        "the plan disturbed a process: {stats:?}"
    );
    assert_eq!(stats.store_errors, 0, "{stats:?}");
}

#[test]
#[ignore = "real time on tokio against a real store: .ci/run runs it on its own, not in the default run"]
fn a_defective_worker_is_caught_in_a_real_run() {
    // Its terms renew (five batches of 10-50ms each way outlast the 150ms renewal interval),
    // and then it releases the lease it acquired: the release-latest checker sees it.
    let report = real_run("stale-release", 1, 3_000);
    let violation = report.violation.expect("stale-release breaks an invariant");
    assert_eq!(
        violation.invariant.to_string(),
        "release-latest",
        "{violation}"
    );
}
