//! Real runs of the reservation expiry worker against PostgreSQL. Needs a server: set
//! `LEASESIM_PG_URL` and run `cargo test -p leasesim-real --features postgres -- --ignored
//! postgres` (`.ci/run` starts one).
#![cfg(feature = "postgres")]

use leasesim_real::StoreTarget;
use leasesim_real::reservations::{RealConfig, RealReport, RealSettings, run};
use leasesim_stores::postgres::URL_VAR;

fn real_run(worker: &str, seed: u64) -> RealReport {
    let url = std::env::var(URL_VAR).unwrap_or_else(|_| panic!("{URL_VAR} names the server"));
    let config = RealConfig {
        target: StoreTarget::Postgres {
            url,
            // One schema per test: tests run at once on one server.
            schema: format!(
                "leasesim_real_holds_{}_{}_{seed}",
                std::process::id(),
                worker.replace('-', "_")
            ),
        },
        worker: worker.into(),
        replicas: 3,
        duration_ms: 2_000,
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
fn the_correct_expiry_worker_passes_a_real_run_on_postgres() {
    let report = real_run("correct", 1);
    assert_eq!(report.violation, None, "{}", report.verdict_line());
    let stats = &report.stats;
    assert!(stats.expired > 0 && stats.consumed > 0, "{stats:?}");
    assert_eq!(stats.store_errors, 0, "{stats:?}");
}

#[test]
#[ignore = "needs PostgreSQL: LEASESIM_PG_URL; .ci/run starts one"]
fn a_read_then_write_claim_is_caught_in_a_real_run_on_postgres() {
    // A race of real time (5 of 5 runs when measured): at least once in 3.
    let caught = (1..=3).find_map(|seed| real_run("read-then-write-claim", seed).violation);
    let violation = caught.expect("read-then-write-claim is caught in at least one of 3 runs");
    assert_eq!(
        violation.invariant.to_string(),
        "exclusive-claim",
        "{violation}"
    );
}
