//! Configuration: invalid settings are refused at construction, naming the rule they break.

use work_items_worker::{ConfigError, WorkerConfig};

#[test]
fn the_default_is_valid_and_each_rule_is_named() {
    assert_eq!(WorkerConfig::default().validate(), Ok(()));
    let base = WorkerConfig::default();
    let cases = [
        (
            WorkerConfig {
                lease_ms: 1,
                ..base.clone()
            },
            ConfigError::LeaseTooShort { lease_ms: 1 },
            "lease_ms (1) must be at least 2",
        ),
        (
            WorkerConfig {
                renew_every_ms: 30_000,
                ..base.clone()
            },
            ConfigError::RenewNotWithinLease {
                renew_every_ms: 30_000,
                lease_ms: 30_000,
            },
            "renew_every_ms (30000) must be at least 1 and below lease_ms (30000)",
        ),
        (
            WorkerConfig {
                max_attempts: 0,
                ..base.clone()
            },
            ConfigError::NoAttempts,
            "max_attempts must be at least 1",
        ),
        (
            WorkerConfig {
                backoff_ms: 0,
                ..base.clone()
            },
            ConfigError::ZeroBackoff,
            "backoff_ms must be at least 1",
        ),
        (
            WorkerConfig {
                backoff_cap_ms: 50,
                ..base.clone()
            },
            ConfigError::CapBelowBackoff {
                backoff_ms: 100,
                backoff_cap_ms: 50,
            },
            "backoff_cap_ms (50) must not be below backoff_ms (100)",
        ),
        (
            WorkerConfig {
                deadline_ms: 0,
                ..base.clone()
            },
            ConfigError::ZeroDeadline,
            "deadline_ms must be at least 1",
        ),
    ];
    for (config, error, text) in cases {
        assert_eq!(config.validate(), Err(error.clone()));
        assert_eq!(error.to_string(), text);
    }
}

#[test]
fn backoffs_double_from_the_first_up_to_the_cap() {
    let config = WorkerConfig {
        backoff_ms: 100,
        backoff_cap_ms: 700,
        ..WorkerConfig::default()
    };
    let backoffs: Vec<u64> = (0..5).map(|retry| config.backoff(retry)).collect();
    assert_eq!(backoffs, [100, 200, 400, 700, 700]);
    assert_eq!(config.backoff(u32::MAX), 700, "no overflow");
}
