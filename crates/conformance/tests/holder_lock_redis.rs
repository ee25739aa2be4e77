//! The holder-lock claim on Redis against the simulated model, its lifetimes running out on
//! Redis's own clock, and planted bugs in its scripts that conformance must catch. Needs a
//! server: set `LEASESIM_REDIS_URL` and run `cargo test -p leasesim-conformance --features
//! redis -- --ignored redis` (`.ci/run` starts one).
#![cfg(feature = "redis")]

use leasesim_conformance::{Config, holder_lock};
use leasesim_stores::redis::URL_VAR;
use leasesim_stores::redis::holder_lock::{DELETE_IF_HOLDER, RENEW_IF_HOLDER, RedisStore, Scripts};

fn store() -> RedisStore {
    let url = std::env::var(URL_VAR).unwrap_or_else(|_| panic!("{URL_VAR} names the Redis server"));
    RedisStore::connect(&url).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
#[ignore = "needs Redis: LEASESIM_REDIS_URL; .ci/run starts one"]
fn redis_agrees_with_the_model() {
    let config = Config::default().with_env();
    let report = holder_lock::check(&mut store(), &config).unwrap_or_else(|m| panic!("{m}"));
    println!("redis: {report}");
    assert_eq!(report.cases, u64::from(config.cases));
}

#[test]
#[ignore = "needs Redis: LEASESIM_REDIS_URL; .ci/run starts one"]
fn redis_lifetimes_run_out_on_its_own_clock() {
    let report = holder_lock::check_expiry(&mut store()).unwrap_or_else(|m| panic!("{m}"));
    println!("redis expiry: {report}");
}

/// The store with `rewrite` applied to the reference scripts.
fn planted(rewrite: impl FnOnce(&mut Scripts)) -> RedisStore {
    let mut scripts = Scripts::default();
    rewrite(&mut scripts);
    assert_ne!(scripts, Scripts::default(), "the bug was planted");
    store().with_scripts(scripts)
}

#[test]
#[ignore = "needs Redis: LEASESIM_REDIS_URL; .ci/run starts one"]
fn redis_a_compare_and_delete_without_its_token_check_is_caught() {
    let mut store = planted(|scripts| {
        scripts.delete_if_holder = DELETE_IF_HOLDER.replace("held ~= ARGV[1]", "false");
    });
    let mismatch = holder_lock::check(&mut store, &Config::default())
        .expect_err("a delete that ignores the token must disagree with the model");
    println!("{mismatch}");
    let last = mismatch.steps.last().expect("the mismatching step");
    assert!(
        last.contains("model NotHolder | store Deleted"),
        "{mismatch}"
    );
    assert!(mismatch.steps.len() <= 3, "shrunk: {mismatch}");
}

#[test]
#[ignore = "needs Redis: LEASESIM_REDIS_URL; .ci/run starts one"]
fn redis_a_renewal_that_does_not_restart_the_lifetime_is_caught() {
    let mut store = planted(|scripts| {
        scripts.renew_if_holder =
            RENEW_IF_HOLDER.replace("redis.call('PEXPIRE', KEYS[1], ARGV[2])", "");
    });
    let mismatch = holder_lock::check(&mut store, &Config::default())
        .expect_err("a renewal that keeps the old lifetime must disagree with the model");
    println!("{mismatch}");
    assert!(mismatch.difference.contains("remaining_ms"), "{mismatch}");
}
