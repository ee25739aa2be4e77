//! Real runs of the holder-lock job runner against Redis. Needs a server: set
//! `LEASESIM_REDIS_URL` and run `cargo test -p leasesim-real --features redis -- --ignored
//! redis` (`.ci/run` starts one).
#![cfg(feature = "redis")]

use leasesim_holder_lock::checkers::Situation;
use leasesim_real::SpanMs;
use leasesim_real::holder_lock::{RealConfig, RealReport, RealSettings, StoreForgetting, run};
use leasesim_real::phases::ProcessFaults;
use leasesim_stores::redis::URL_VAR;

fn real_run(worker: &str, seed: u64, duration_ms: u64) -> RealReport {
    run_with(worker, seed, duration_ms, RealSettings::default())
}

fn run_with(worker: &str, seed: u64, duration_ms: u64, settings: RealSettings) -> RealReport {
    let url = std::env::var(URL_VAR).unwrap_or_else(|_| panic!("{URL_VAR} names the server"));
    let config = RealConfig {
        url,
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
#[ignore = "needs Redis: LEASESIM_REDIS_URL; .ci/run starts one"]
fn the_correct_worker_passes_a_real_run_on_redis() {
    let report = real_run("correct", 1, 3_000);
    assert_eq!(report.violation, None, "{}", report.verdict_line());
    let stats = &report.stats;
    assert!(stats.claims >= 3 && stats.steps > 0, "{stats:?}");
    // Faults land by real time: the pauses come from one stream every task draws from, so a
    // 3 s run draws none in about 2 % of runs (0.65 to the 9th); the stops are planned.
    assert!(
        stats.pauses + stats.stops > 0,
        "the plan disturbed a process: {stats:?}"
    );
    assert_eq!(stats.store_errors, 0, "{stats:?}");
}

#[test]
#[ignore = "needs Redis: LEASESIM_REDIS_URL; .ci/run starts one"]
fn a_plain_delete_is_caught_in_a_real_run_on_redis() {
    // A paused holder's claim runs out, another replica takes the key, and the paused one's
    // release deletes it by name: that needs a pause while a job runs. With the default plan
    // it was caught in 4 of 5 runs (seeds 0-4) but in none of seeds 1-5 once, with other test
    // binaries loading the machine; so this run pauses processes more often (p 0.7 instead of
    // 0.35) and asserts at least once in 8 seeds, stopping at the first catch.
    let settings = RealSettings {
        process: ProcessFaults {
            pause_probability: 0.7,
            ..ProcessFaults::DEFAULT
        },
        ..RealSettings::default()
    };
    let caught =
        (1..=8).find_map(|seed| run_with("plain-delete", seed, 3_000, settings.clone()).violation);
    let violation = caught.expect("plain-delete is caught in at least one of 8 runs");
    assert_eq!(
        violation.invariant.to_string(),
        "delete-own-claim",
        "{violation}"
    );
}

#[test]
#[ignore = "needs Redis: LEASESIM_REDIS_URL; .ci/run starts one"]
fn the_correct_worker_survives_the_store_forgetting_its_claims() {
    let settings = RealSettings {
        forgetting: StoreForgetting {
            every: SpanMs::new(100, 300),
            evict: 0.7,
            restart: 0.3,
        },
        ..RealSettings::default()
    };
    let report = run_with("correct", 3, 2_000, settings);
    assert_eq!(report.violation, None, "{}", report.verdict_line());
    for forgotten in [Situation::ClaimEvicted, Situation::StoreRestarted] {
        assert!(
            report.coverage.contains(forgotten),
            "{forgotten:?} not reached: {:?}",
            report.coverage.iter().collect::<Vec<_>>()
        );
    }
}
