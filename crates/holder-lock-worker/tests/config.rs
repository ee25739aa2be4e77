//! Invalid configuration is refused at construction, naming the rule it breaks.

use holder_lock_worker::{ClaimConfig, ConfigError};

#[test]
fn each_rule_is_named_in_order() {
    let valid = ClaimConfig {
        key: "job:x".into(),
        lifetime_ms: 1_000,
        renew_every_ms: Some(799),
    };
    assert_eq!(valid.validate(), Ok(()));
    assert_eq!(valid.trusted_ms(), 800);
    let cases = [
        (
            ClaimConfig {
                key: String::new(),
                lifetime_ms: 0,
                ..valid.clone()
            },
            ConfigError::EmptyKey,
        ),
        (
            ClaimConfig {
                lifetime_ms: 4,
                ..valid.clone()
            },
            ConfigError::LifetimeTooShort { lifetime_ms: 4 },
        ),
        (
            ClaimConfig {
                renew_every_ms: Some(0),
                ..valid.clone()
            },
            ConfigError::ZeroRenewInterval,
        ),
        (
            ClaimConfig {
                renew_every_ms: Some(800),
                ..valid.clone()
            },
            ConfigError::RenewNotWithinTrust {
                renew_every_ms: 800,
                trusted_ms: 800,
            },
        ),
    ];
    for (config, error) in cases {
        assert_eq!(config.validate(), Err(error.clone()));
        assert!(!error.to_string().is_empty());
    }
    let unrenewed = ClaimConfig {
        renew_every_ms: None,
        lifetime_ms: 5,
        ..valid
    };
    assert_eq!(unrenewed.validate(), Ok(()));
    assert_eq!(unrenewed.trusted_ms(), 4);
    assert_eq!(ClaimConfig::default().validate(), Ok(()));
}
