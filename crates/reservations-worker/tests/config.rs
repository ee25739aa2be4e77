//! Invalid configuration is refused at construction, naming the first rule it breaks.

mod common;

use common::{Fakes, config};
use leasesim_rt::{Sim, SimConfig};
use reservations_worker::{ConfigError, ExpiryWorker, RetryPolicy, WorkerConfig};

fn refused(config: WorkerConfig) -> Option<ConfigError> {
    let sim = Sim::new(SimConfig::seeded(0));
    let fakes = Fakes::new(sim.handle());
    ExpiryWorker::new(config, fakes.clone(), fakes.clone(), fakes.clone(), fakes).err()
}

#[test]
fn each_rule_is_named_in_order() {
    let retry = |initial_backoff_ms, max_backoff_ms, max_attempts| RetryPolicy {
        initial_backoff_ms,
        max_backoff_ms,
        max_attempts,
    };
    let cases = [
        (
            WorkerConfig {
                batch_size: 0,
                claim_for_ms: 0,
                ..config()
            },
            ConfigError::ZeroBatch,
        ),
        (
            WorkerConfig {
                claim_for_ms: 0,
                ..config()
            },
            ConfigError::ZeroClaimDuration,
        ),
        (
            WorkerConfig {
                idle_ms: 0,
                idle_jitter_ms: 0,
                ..config()
            },
            ConfigError::ZeroIdlePause,
        ),
        (
            WorkerConfig {
                retry: retry(1, 2, 0),
                ..config()
            },
            ConfigError::ZeroAttempts,
        ),
        (
            WorkerConfig {
                retry: retry(0, 2, 1),
                ..config()
            },
            ConfigError::ZeroBackoff,
        ),
        (
            WorkerConfig {
                retry: retry(3, 2, 1),
                ..config()
            },
            ConfigError::BackoffAboveCap {
                initial_backoff_ms: 3,
                max_backoff_ms: 2,
            },
        ),
    ];
    for (config, expected) in cases {
        assert_eq!(refused(config), Some(expected.clone()), "{expected}");
        assert!(!expected.to_string().is_empty());
    }
    assert_eq!(refused(config()), None);
    assert_eq!(
        refused(WorkerConfig::default()),
        None,
        "the design's defaults are valid"
    );
    let defaults = WorkerConfig::default();
    assert_eq!((defaults.batch_size, defaults.claim_for_ms), (50, 60_000));
}
