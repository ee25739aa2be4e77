//! The catalogue: names, order, factories, and what every worker keeps of the correct one.
//!
//! Terminology:
//! - *catalogue*: `DEFECTS` and `factory`, what the command line lists and builds.
//! - *untouchable ports*: port fakes that panic when called, to show a code path makes no call.

use futures::FutureExt;
use leasesim_retention::Retention;
use leasesim_retention::defects::{
    AcquiredTokenWorker, DEFECTS, DeleteAfterLossWorker, EarlyCutoffWorker, IntervalRenewalWorker,
    LeakedRenewalWorker, LeftoverReleaseWorker, MovingCutoffWorker, NaiveWorker, NoRenewalWorker,
    RenewErrorNoReleaseWorker, SleepyStopWorker, StaleReleaseWorker, StaleRenewalWorker,
    UncappedWorker, UnjoinedStopWorker, WholeBatchesWorker,
};
use leasesim_sim::Workers;
use retention_worker::{
    Clock, ConfigError, Lease, Leases, PortError, Records, TermEnd, WorkerConfig,
};

/// Every invariant of the system, by name (a defect may declare any of them).
const INVARIANTS: [&str; 28] = [
    "stale-token-delete",
    "latest-token",
    "no-delete-after-loss",
    "serial-renewal",
    "fixed-cutoff",
    "batch-limit",
    "term-cap",
    "release-latest",
    "release-after-ownership",
    "release-on-exit",
    "renewal-stops",
    "stop-quiesces",
    "stop-joins",
    "no-eligible-miss",
    "liveness",
    "renew-latest",
    "renewal-pause",
    "acquire-first",
    "refused-acquire-ends",
    "full-batch",
    "short-batch-ends",
    "delete-error-ends",
    "no-early-stop",
    "release-last",
    "term-report",
    "renewal-due",
    "stop-prompt",
    "construction",
];

#[test]
fn defects_are_listed_in_the_documented_order() {
    let names: Vec<&str> = DEFECTS.iter().map(|d| d.info.name).collect();
    assert_eq!(
        names,
        [
            "naive",
            "interval-renewal",
            "stale-release",
            "moving-cutoff",
            "uncapped",
            "unjoined-stop",
            "early-cutoff",
            "leaked-renewal",
            "delete-after-loss",
            "renew-error-no-release",
            "acquired-token",
            "leftover-release",
            "stale-renewal",
            "whole-batches",
            "no-renewal",
            "sleepy-stop",
        ]
    );
}

#[test]
fn each_defect_names_known_invariants_and_has_a_description() {
    for defect in DEFECTS {
        assert!(!defect.info.description.is_empty(), "{}", defect.info.name);
        assert!(!defect.info.caught_by.is_empty(), "{}", defect.info.name);
        for invariant in defect.info.caught_by {
            assert!(
                INVARIANTS.contains(invariant),
                "{} names unknown invariant {invariant}",
                defect.info.name
            );
        }
    }
    let specific = |name: &str| {
        DEFECTS
            .iter()
            .find(|d| d.info.name == name)
            .unwrap()
            .info
            .caught_by[0]
    };
    assert_eq!(specific("interval-renewal"), "serial-renewal");
    assert_eq!(specific("stale-release"), "release-latest");
    assert_eq!(specific("moving-cutoff"), "fixed-cutoff");
    assert_eq!(specific("uncapped"), "term-cap");
    assert_eq!(specific("unjoined-stop"), "stop-joins");
    assert_eq!(specific("no-renewal"), "renewal-due");
    assert_eq!(specific("sleepy-stop"), "stop-prompt");
}

#[test]
fn factory_builds_every_listed_worker_and_nothing_else() {
    for defect in DEFECTS {
        assert!(
            Retention::factory(defect.info.name).is_some(),
            "no factory for {}",
            defect.info.name
        );
    }
    assert!(
        Retention::factory("correct").is_some(),
        "the production core is built by name too"
    );
    for unknown in ["", "Naive", "uncapped "] {
        assert!(
            Retention::factory(unknown).is_none(),
            "{unknown:?} should not be a worker"
        );
    }
}

/// Ports that must never be called.
struct Untouchable;

impl Clock for Untouchable {
    fn now_ms(&self) -> u64 {
        panic!("the clock was read")
    }
    async fn sleep(&self, _ms: u64) {
        panic!("a sleep was started")
    }
}

impl Leases for Untouchable {
    async fn acquire(&self, _owner: &str) -> Result<Option<Lease>, PortError> {
        panic!("acquire was called")
    }
    async fn renew(&self, _lease: &Lease) -> Result<Option<Lease>, PortError> {
        panic!("renew was called")
    }
    async fn release(&self, _lease: &Lease) -> Result<(), PortError> {
        panic!("release was called")
    }
}

impl Records for Untouchable {
    async fn delete_batch(
        &self,
        _older_than_ms: u64,
        _limit: u32,
        _token: u64,
    ) -> Result<u32, PortError> {
        panic!("delete_batch was called")
    }
}

/// Construction checks and stop-before-run, for one worker type.
macro_rules! keeps_the_correct_shell {
    ($worker:ident) => {{
        let name = stringify!($worker);
        let new = |config: WorkerConfig| {
            $worker::new("r1", config, Untouchable, Untouchable, Untouchable)
        };
        let zero_batch = WorkerConfig {
            batch_rows: 0,
            ..WorkerConfig::default()
        };
        assert_eq!(
            new(zero_batch).err(),
            Some(ConfigError::ZeroBatch),
            "{name}"
        );
        let slow_renewal = WorkerConfig {
            renew_every_ms: 30_000,
            ..WorkerConfig::default()
        };
        assert!(
            matches!(new(slow_renewal), Err(ConfigError::RenewNotBelowTtl { .. })),
            "{name}"
        );
        let worker = new(WorkerConfig::default()).expect("the default configuration is valid");
        assert_eq!(
            worker.stop().now_or_never(),
            Some(()),
            "{name}: idle stop resolves"
        );
        assert_eq!(
            worker.stop().now_or_never(),
            Some(()),
            "{name}: stop is idempotent"
        );
        let report = worker
            .run()
            .now_or_never()
            .expect("run after stop returns at once");
        assert_eq!(
            report.map(|r| r.end),
            Ok(TermEnd::StoppedBeforeStart),
            "{name}"
        );
    }};
}

#[test]
fn every_worker_validates_like_the_core_and_does_nothing_after_stop() {
    keeps_the_correct_shell!(NaiveWorker);
    keeps_the_correct_shell!(IntervalRenewalWorker);
    keeps_the_correct_shell!(StaleReleaseWorker);
    keeps_the_correct_shell!(MovingCutoffWorker);
    keeps_the_correct_shell!(UncappedWorker);
    keeps_the_correct_shell!(UnjoinedStopWorker);
    keeps_the_correct_shell!(EarlyCutoffWorker);
    keeps_the_correct_shell!(LeakedRenewalWorker);
    keeps_the_correct_shell!(DeleteAfterLossWorker);
    keeps_the_correct_shell!(RenewErrorNoReleaseWorker);
    keeps_the_correct_shell!(AcquiredTokenWorker);
    keeps_the_correct_shell!(LeftoverReleaseWorker);
    keeps_the_correct_shell!(StaleRenewalWorker);
    keeps_the_correct_shell!(WholeBatchesWorker);
    keeps_the_correct_shell!(NoRenewalWorker);
    keeps_the_correct_shell!(SleepyStopWorker);
}
