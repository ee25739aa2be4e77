//! The holder-lock settings the sides run: the builtin scenario `holder-long-jobs`
//! (scenarios/holder-lock/holder-long-jobs.toml, the constants below and [`LONG_JOBS`]), and
//! `holder-slow-release` with lost replies ([`SLOW_RELEASE`]), and `holder-volatile` with store
//! restarts only ([`VOLATILE`]).
//!
//! Terminology:
//! - *workload*: [`Workload`], one setting: its scenario, claim, jobs, gaps, latency and
//!   faults. A process measures one; [`select`] picks it once (the command line's
//!   `--workload`), [`current`] is the one picked ([`LONG_JOBS`] unless another was).
//! - *slow operation*: an operation of [`Workload::slow_ops`], whose legs take
//!   [`Workload::slow_ms`] instead of [`LATENCY_MS`] (`holder-slow-release`:
//!   `delete_if_holder`, `get`, `delete`, `set`; `holder-volatile`: `create`, `renew`,
//!   `delete_if_holder`).
//! - *lost reply*: the store applied the call, its reply never arrives; the caller's
//!   [`CALL_TIMEOUT_MS`] answers `Timeout`.
//! - *pause ticker*: per replica, every [`Pauses::every_ms`] in the safety phase, with
//!   probability [`Pauses::probability`], the replica's process stops for
//!   [`Pauses::duration_ms`] (leasesim's `[faults.pause]`).
//! - *store restart*: every [`Restarts::every_ms`] in the safety phase, with probability
//!   [`Restarts::probability`], the store's process crashes and starts again without
//!   persistence: every key it held is gone (leasesim's `[faults.store_restart]`).
//! - *safety phase*: the first [`SAFETY_MS`] of virtual time; *liveness phase*: the next
//!   [`LIVENESS_MS`]; then every replica is stopped ([`STOP_AT_MS`]) and the run ends once
//!   every stop returned and every driver ended.
//! - *gap*: the pause a replica's driver takes before each attempt, drawn from
//!   [`RUN_EVERY_MS`].
//! - *job*: drawn like the simulated job: usually [`JOB_MS`], with probability
//!   [`LONG_SHARE`] [`LONG_JOB_MS`], in steps of [`STEP_MS`] (the last one shorter).

use std::sync::OnceLock;

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

/// Process pauses (leasesim's `[faults.pause]`), safety phase only.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pauses {
    pub probability: f64,
    pub every_ms: (u64, u64),
    pub duration_ms: (u64, u64),
}

/// Store restarts without persistence (leasesim's `[faults.store_restart]`), safety phase only.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Restarts {
    pub probability: f64,
    pub every_ms: (u64, u64),
}

/// One holder-lock setting (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Workload {
    /// The name `--workload` takes and the figures carry.
    pub name: &'static str,
    /// The builtin scenario it is taken from (the leasesim side runs it).
    pub scenario: &'static str,
    /// leasesim overrides on the scenario (`KEY = VALUE`), the faults the file lacks.
    pub overrides: &'static [(&'static str, f64)],
    /// What the table's heading says of its faults.
    pub faults: &'static str,
    pub lifetime_ms: u64,
    pub renew_every_ms: Option<u64>,
    pub job_ms: (u64, u64),
    pub long_job_ms: (u64, u64),
    pub long_share: f64,
    pub step_ms: u64,
    pub run_every_ms: (u64, u64),
    /// The operations (by `Op` name) whose legs take [`Workload::slow_ms`].
    pub slow_ops: &'static [&'static str],
    /// The legs of slow operations (`None`: every operation takes [`LATENCY_MS`]).
    pub slow_ms: Option<(u64, u64)>,
    /// Share of the store's replies lost.
    pub reply_lost: f64,
    pub pauses: Option<Pauses>,
    pub store_restarts: Option<Restarts>,
    /// The defective workers measured (`None`: every one).
    pub workers: Option<&'static [&'static str]>,
}

/// `holder-long-jobs`: latency only, every defective worker.
pub const LONG_JOBS: Workload = Workload {
    name: SCENARIO,
    scenario: SCENARIO,
    overrides: &[],
    faults: "latency only",
    lifetime_ms: LIFETIME_MS,
    renew_every_ms: None,
    job_ms: JOB_MS,
    long_job_ms: LONG_JOB_MS,
    long_share: LONG_SHARE,
    step_ms: STEP_MS,
    run_every_ms: RUN_EVERY_MS,
    slow_ops: &[],
    slow_ms: None,
    reply_lost: 0.0,
    pauses: None,
    store_restarts: None,
    workers: None,
};

/// The operations `holder-slow-release` slows, by `Op` name.
pub const SLOW_OPS: [&str; 4] = ["delete_if_holder", "get", "delete", "set"];

/// `holder-slow-release` with 2 % of every operation's replies lost: the three defective
/// workers `holder-long-jobs` does not catch.
pub const SLOW_RELEASE: Workload = Workload {
    name: "holder-slow-release+lost-replies",
    scenario: "holder-slow-release",
    overrides: &[
        ("faults.reply_lost.create", 0.02),
        ("faults.reply_lost.renew", 0.02),
        ("faults.reply_lost.delete_if_holder", 0.02),
        ("faults.reply_lost.get", 0.02),
        ("faults.reply_lost.delete", 0.02),
        ("faults.reply_lost.set", 0.02),
    ],
    faults: "latency (create, renew 1-5 ms a leg; delete_if_holder, get, delete, set \
             20-400 ms a leg), 2 % of replies lost, process pauses (each replica every \
             0.5-2 s with probability 0.5, for 1.5-5 s, safety phase only)",
    lifetime_ms: 2_000,
    renew_every_ms: Some(500),
    job_ms: (600, 2_500),
    long_job_ms: (600, 2_500),
    long_share: 0.0,
    step_ms: 500,
    run_every_ms: (50, 1_000),
    slow_ops: &SLOW_OPS,
    slow_ms: Some((20, 400)),
    reply_lost: 0.02,
    pauses: Some(Pauses {
        probability: 0.5,
        every_ms: (500, 2_000),
        duration_ms: (1_500, 5_000),
    }),
    store_restarts: None,
    workers: Some(&["read-then-delete", "side-key", "trust-from-answer"]),
};

/// `holder-volatile` with its evictions and failovers off and its safety phase as long as the
/// others' (30 s): the store restarts without persistence, the one fault of the three a
/// peer expresses as a crash and restart of a process (madsim: `Handle::restart` of the store
/// node; turmoil: `Sim::bounce` of the store host). The two workers only a restart catches
/// here: a plain delete frees a rival's claim taken after the restart, a swallowed release
/// hides that the claim was gone.
pub const VOLATILE: Workload = Workload {
    name: "holder-volatile+restarts-only",
    scenario: "holder-volatile",
    overrides: &[
        ("duration_ms", 30_000.0),
        ("faults.evict.probability", 0.0),
        ("faults.failover.probability", 0.0),
    ],
    faults: "latency (create, renew, delete_if_holder 1-30 ms a leg), store restarts without \
             persistence (every 3-8 s with probability 0.2, safety phase only)",
    lifetime_ms: 2_500,
    renew_every_ms: Some(600),
    job_ms: (1_000, 4_000),
    long_job_ms: (1_000, 4_000),
    long_share: 0.0,
    step_ms: 250,
    run_every_ms: (20, 300),
    slow_ops: &["create", "renew", "delete_if_holder"],
    slow_ms: Some((1, 30)),
    reply_lost: 0.0,
    pauses: None,
    store_restarts: Some(Restarts {
        probability: 0.2,
        every_ms: (3_000, 8_000),
    }),
    workers: Some(&["plain-delete", "swallowed-release"]),
};

/// Every workload, by name.
pub const WORKLOADS: [Workload; 3] = [LONG_JOBS, SLOW_RELEASE, VOLATILE];

static CURRENT: OnceLock<Workload> = OnceLock::new();

/// Picks the workload called `name` for this process (once; before any run).
pub fn select(name: &str) -> Result<Workload, String> {
    let workload = WORKLOADS
        .into_iter()
        .find(|w| w.name == name)
        .ok_or_else(|| format!("no workload `{name}` ({})", names().join(", ")))?;
    let chosen = *CURRENT.get_or_init(|| workload);
    match chosen == workload {
        true => Ok(workload),
        false => Err(format!("the workload is already {}", chosen.name)),
    }
}

/// The names `--workload` takes.
pub fn names() -> Vec<&'static str> {
    WORKLOADS.iter().map(|w| w.name).collect()
}

/// The workload of this process ([`LONG_JOBS`] unless [`select`] picked another).
pub fn current() -> &'static Workload {
    CURRENT.get_or_init(|| LONG_JOBS)
}

impl Workload {
    /// The claim every worker is configured with.
    pub fn claim(&self) -> ClaimConfig {
        ClaimConfig {
            key: CLAIM_KEY.to_string(),
            lifetime_ms: self.lifetime_ms,
            renew_every_ms: self.renew_every_ms,
        }
    }

    /// One leg of operation `op` (its `Op` name): its network part is the peer's own
    /// [`LATENCY_MS`]; this is what a slow operation adds to reach [`Workload::slow_ms`].
    pub fn extra_leg_ms(&self, op: &str, rng: &mut Rng) -> u64 {
        match self.slow_ms {
            Some((min, max)) if self.slow_ops.contains(&op) => rng
                .range(min, max)
                .saturating_sub(rng.range(LATENCY_MS.0, LATENCY_MS.1)),
            _ => 0,
        }
    }
}

/// The claim of the current workload.
pub fn claim() -> ClaimConfig {
    current().claim()
}

/// A job's steps, by length (they add up to the drawn length), as the current workload draws.
pub fn draw_job(rng: &mut Rng) -> Vec<u64> {
    let workload = current();
    let (min, max) = match rng.coin(workload.long_share) {
        true => workload.long_job_ms,
        false => workload.job_ms,
    };
    let step_ms = workload.step_ms;
    let duration_ms = rng.range(min, max).max(1);
    let mut steps = vec![step_ms; usize::try_from(duration_ms / step_ms).unwrap_or(0)];
    if !duration_ms.is_multiple_of(step_ms) {
        steps.push(duration_ms % step_ms);
    }
    steps
}
