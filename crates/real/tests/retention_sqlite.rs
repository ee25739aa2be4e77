//! Real runs of the retention worker against SQLite, judged by the retention checkers.

use leasesim_events::{EventKind, Phase};
use leasesim_real::NetFaults;
use leasesim_real::retention::{RealConfig, RealReport, RealSettings, StoreTarget, run};
use leasesim_retention::checkers::Situation;
use leasesim_retention::events::{Event, Retention};

fn real_run(worker: &str, seed: u64, duration_ms: u64) -> RealReport {
    real_run_with(worker, seed, duration_ms, RealSettings::default())
}

fn real_run_with(worker: &str, seed: u64, duration_ms: u64, settings: RealSettings) -> RealReport {
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
        settings,
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

#[test]
#[ignore = "real time on tokio against a real store: .ci/run runs it on its own, not in the default run"]
fn port_faults_strike_real_calls_until_faults_heal() {
    let settings = RealSettings {
        net: NetFaults {
            reject: 0.2,
            request_lost: 0.2,
            reply_lost: 0.4,
            timeout_ms: 300,
        },
        ..RealSettings::default()
    };
    let report = real_run_with("correct", 2, 2_000, settings);
    assert_eq!(report.violation, None, "{}", report.verdict_line());
    assert!(
        report.coverage.contains(Situation::ReplyLostAfterApply),
        "{:?}",
        report.coverage.iter().collect::<Vec<_>>()
    );
    let healed = report
        .events
        .iter()
        .position(|e| e.event.kind == EventKind::Phase(Phase::Liveness))
        .expect("the run reached its liveness phase");
    let fault = |kind: &EventKind<Retention>| {
        matches!(
            kind,
            EventKind::Rejected { .. }
                | EventKind::RequestLost { .. }
                | EventKind::ReplyLost { .. }
        )
    };
    let (before, after) = report.events.split_at(healed);
    let kinds: Vec<_> = before.iter().filter(|e| fault(&e.event.kind)).collect();
    for wanted in ["Rejected", "RequestLost", "ReplyLost"] {
        let seen = kinds
            .iter()
            .any(|e| format!("{:?}", e.event.kind).starts_with(wanted));
        assert!(seen, "no {wanted} before faults healed");
    }
    // A call sent before healing may still be lost or refused after it: only calls sent
    // after the liveness phase began are certain to go through.
    let sent_after: Vec<u64> = after
        .iter()
        .filter_map(|e| match e.event.kind {
            EventKind::Call { call, .. } => Some(call),
            _ => None,
        })
        .collect();
    let struck = |e: &&leasesim_events::Stamped<Event>| match e.event.kind {
        EventKind::Rejected { call, .. }
        | EventKind::RequestLost { call, .. }
        | EventKind::ReplyLost { call } => sent_after.contains(&call),
        _ => false,
    };
    assert_eq!(
        after.iter().filter(struck).count(),
        0,
        "a fault after healing"
    );
}

#[test]
#[ignore = "real time on tokio against a real store: .ci/run runs it on its own, not in the default run"]
fn every_listed_worker_runs() {
    for worker in leasesim_real::retention::workers() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let config = RealConfig {
            target: StoreTarget::Sqlite {
                path: dir.path().join("retention.db"),
            },
            worker: worker.into(),
            replicas: 2,
            duration_ms: 100,
            liveness_ms: 100,
            seed: 0,
            settings: RealSettings::default(),
            keep_events: false,
        };
        // A verdict either way: a listed worker that cannot be built would panic the run.
        let report = run(&config).unwrap_or_else(|e| panic!("{worker}: {e}"));
        assert!(report.stats.events > 0, "{worker}: no event");
    }
}
