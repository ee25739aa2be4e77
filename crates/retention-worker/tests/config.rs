//! Configuration validation: every rule, at construction and through `validate`.

mod common;

use std::rc::Rc;

use common::World;
use retention_worker::{ConfigError, RetentionWorker, WorkerConfig};

#[test]
fn the_default_configuration_is_valid_and_has_the_documented_values() {
    let config = WorkerConfig::default();
    assert_eq!(
        config,
        WorkerConfig {
            batch_rows: 200,
            cap_rows: 1_000,
            retention_ms: 604_800_000,
            renew_every_ms: 10_000,
            lease_ttl_ms: 30_000,
        }
    );
    assert_eq!(config.validate(), Ok(()));
}

#[test]
fn boundary_values_are_accepted() {
    let config = WorkerConfig {
        batch_rows: 1,
        cap_rows: 1,
        retention_ms: 0,
        renew_every_ms: 1,
        lease_ttl_ms: 2,
    };
    assert_eq!(config.validate(), Ok(()));
    let equal_batch_and_cap = WorkerConfig {
        batch_rows: 500,
        cap_rows: 500,
        ..config
    };
    assert_eq!(equal_batch_and_cap.validate(), Ok(()));
}

fn invalid_configs() -> Vec<(WorkerConfig, ConfigError)> {
    let base = WorkerConfig::default();
    vec![
        (
            WorkerConfig {
                batch_rows: 0,
                ..base.clone()
            },
            ConfigError::ZeroBatch,
        ),
        (
            WorkerConfig {
                batch_rows: 1_001,
                ..base.clone()
            },
            ConfigError::BatchAboveCap {
                batch_rows: 1_001,
                cap_rows: 1_000,
            },
        ),
        (
            WorkerConfig {
                renew_every_ms: 30_000,
                ..base.clone()
            },
            ConfigError::RenewNotBelowTtl {
                renew_every_ms: 30_000,
                lease_ttl_ms: 30_000,
            },
        ),
        (
            WorkerConfig {
                renew_every_ms: 45_000,
                ..base.clone()
            },
            ConfigError::RenewNotBelowTtl {
                renew_every_ms: 45_000,
                lease_ttl_ms: 30_000,
            },
        ),
        (
            WorkerConfig {
                renew_every_ms: 0,
                ..base.clone()
            },
            ConfigError::ZeroRenewInterval,
        ),
        // Both a zero batch and a zero cap: the zero batch is named.
        (
            WorkerConfig {
                batch_rows: 0,
                cap_rows: 0,
                ..base.clone()
            },
            ConfigError::ZeroBatch,
        ),
        // A zero interval with a zero lifetime: the zero interval is named.
        (
            WorkerConfig {
                renew_every_ms: 0,
                lease_ttl_ms: 0,
                ..base
            },
            ConfigError::ZeroRenewInterval,
        ),
    ]
}

#[test]
fn every_invalid_configuration_is_named_by_validate() {
    for (config, expected) in invalid_configs() {
        assert_eq!(config.validate(), Err(expected.clone()), "{config:?}");
        assert!(!expected.to_string().is_empty());
    }
}

#[test]
fn every_invalid_configuration_is_refused_at_construction() {
    let world = World::new(0);
    for (config, expected) in invalid_configs() {
        let built = RetentionWorker::new(
            "w1",
            config.clone(),
            world.worker.clock().clone(),
            Rc::clone(world.worker.leases()),
            Rc::clone(world.worker.records()),
        );
        assert_eq!(built.err(), Some(expected), "{config:?}");
    }
    assert_eq!(world.log.len(), 0, "construction touches no port");
}

#[test]
fn construction_keeps_what_it_was_given() {
    let world = World::new(0);
    assert_eq!(world.worker.owner_id(), "w1");
    assert_eq!(world.worker.config(), &WorkerConfig::default());
    let debug = format!("{:?}", world.worker);
    assert!(
        debug.starts_with("RetentionWorker { owner_id: \"w1\", config: WorkerConfig {"),
        "{debug}"
    );
    assert!(
        debug.ends_with("stop_requested: false, term_active: false, .. }"),
        "{debug}"
    );
    // A configuration other than the default comes back as given.
    let custom = WorkerConfig {
        batch_rows: 64,
        cap_rows: 300,
        retention_ms: 5_000,
        renew_every_ms: 250,
        lease_ttl_ms: 3_000,
    };
    let built = RetentionWorker::new(
        "r7",
        custom.clone(),
        world.worker.clock().clone(),
        Rc::clone(world.worker.leases()),
        Rc::clone(world.worker.records()),
    )
    .expect("a valid configuration");
    assert_eq!((built.owner_id(), built.config()), ("r7", &custom));
}
