//! Real runs of the retention worker against PostgreSQL. Needs a server: set
//! `LEASESIM_PG_URL` and run `cargo test -p leasesim-real --features postgres -- --ignored`
//! (`.ci/run` starts one).
#![cfg(feature = "postgres")]

use leasesim_real::retention::{RealConfig, RealReport, RealSettings, StoreTarget, run};
use leasesim_stores::postgres::URL_VAR;

fn real_run(worker: &str, seed: u64) -> RealReport {
    let url = std::env::var(URL_VAR).unwrap_or_else(|_| panic!("{URL_VAR} names the server"));
    let config = RealConfig {
        target: StoreTarget::Postgres {
            url,
            // One schema per test: tests run at once on one server.
            schema: format!(
                "leasesim_real_test_{}_{}_{seed}",
                std::process::id(),
                worker.replace('-', "_")
            ),
        },
        worker: worker.into(),
        replicas: 3,
        duration_ms: 3_000,
        liveness_ms: 2_000,
        seed,
        settings: RealSettings::default(),
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
#[ignore = "needs PostgreSQL: LEASESIM_PG_URL; .ci/run starts one"]
fn the_correct_worker_passes_a_real_run_on_postgres() {
    let report = real_run("correct", 1);
    assert_eq!(report.violation, None, "{}", report.verdict_line());
    assert!(
        report.stats.terms >= 3 && report.stats.rows_deleted > 0,
        "{:?}",
        report.stats
    );
    assert_eq!(report.stats.store_errors, 0, "{:?}", report.stats);
}

#[test]
#[ignore = "needs PostgreSQL: LEASESIM_PG_URL; .ci/run starts one"]
fn a_defective_worker_is_caught_in_a_real_run_on_postgres() {
    let report = real_run("stale-release", 1);
    let violation = report.violation.expect("stale-release breaks an invariant");
    assert_eq!(
        violation.invariant.to_string(),
        "release-latest",
        "{violation}"
    );
}
