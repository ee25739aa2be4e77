//! The one holder-lock setting every side runs: the builtin scenario `holder-long-jobs`
//! (scenarios/holder-lock/holder-long-jobs.toml), as constants.
//!
//! Terminology:
//! - *safety phase*: the first [`SAFETY_MS`] of virtual time; *liveness phase*: the next
//!   [`LIVENESS_MS`]; then every replica is stopped ([`STOP_AT_MS`]) and the run ends once
//!   every stop returned and every driver ended.
//! - *gap*: the pause a replica's driver takes before each attempt, drawn from
//!   [`RUN_EVERY_MS`].
//! - *job*: drawn like the simulated job: usually [`JOB_MS`], with probability
//!   [`LONG_SHARE`] [`LONG_JOB_MS`], in steps of [`STEP_MS`] (the last one shorter).

use holder_lock_worker::ClaimConfig;
use leasesim_holder_lock::events::CLAIM_KEY;

use crate::rng::Rng;

/// The scenario the constants are taken from (the leasesim side runs it).
pub const SCENARIO: &str = "holder-long-jobs";
pub const REPLICAS: u16 = 3;
pub const SAFETY_MS: u64 = 30_000;
pub const LIVENESS_MS: u64 = 20_000;
/// When every replica's `stop()` is called.
pub const STOP_AT_MS: u64 = SAFETY_MS + LIVENESS_MS;
pub const LIFETIME_MS: u64 = 3_000;
pub const JOB_MS: (u64, u64) = (800, 1_600);
pub const LONG_JOB_MS: (u64, u64) = (3_600, 6_000);
pub const LONG_SHARE: f64 = 0.3;
pub const STEP_MS: u64 = 500;
pub const RUN_EVERY_MS: (u64, u64) = (50, 1_000);
/// One way of a store call (request, then reply): the scenario's default latency, 1..5 ms.
pub const LATENCY_MS: (u64, u64) = (1, 5);
/// How long a worker's store call waits for its reply before it answers `Timeout`: no reply
/// is ever lost in this workload, so it never fires; it bounds a call if one were.
pub const CALL_TIMEOUT_MS: u64 = 1_000;
/// The checkers' bound on an attempt once faults heal (the scenario's default).
pub const ATTEMPT_BOUND_MS: u64 = 30_000;

/// The claim every worker is configured with: never renewed.
pub fn claim() -> ClaimConfig {
    ClaimConfig {
        key: CLAIM_KEY.to_string(),
        lifetime_ms: LIFETIME_MS,
        renew_every_ms: None,
    }
}

/// A job's steps, by length (they add up to the drawn length).
pub fn draw_job(rng: &mut Rng) -> Vec<u64> {
    let (min, max) = match rng.coin(LONG_SHARE) {
        true => LONG_JOB_MS,
        false => JOB_MS,
    };
    let duration_ms = rng.range(min, max).max(1);
    let mut steps = vec![STEP_MS; usize::try_from(duration_ms / STEP_MS).unwrap_or(0)];
    if !duration_ms.is_multiple_of(STEP_MS) {
        steps.push(duration_ms % STEP_MS);
    }
    steps
}
