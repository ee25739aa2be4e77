//! What a runner tells about itself and its errors: the parts of the core the fuzz campaign
//! never calls (it builds valid runners and reads only their calls and attempt reports).

mod common;

use common::{World, config};
use holder_lock_worker::{ConfigError, HolderToken, JobError, RunError, StoreError};

#[test]
fn a_runner_reports_its_configuration_and_no_claim_gone_before_any_release() {
    let (_sim, world) = World::new();
    let worker = world.worker(config(Some(300)));
    assert_eq!(worker.config(), &config(Some(300)));
    assert_eq!(worker.claims_gone(), 0);
    let debug = format!("{worker:?}");
    assert!(debug.starts_with("JobRunner {"), "{debug}");
}

#[test]
fn tokens_and_errors_read_as_sentences() {
    assert_eq!(HolderToken(0xab).to_string(), "00000000000000ab");
    assert_eq!(
        StoreError::Unsupported.to_string(),
        "the store does not offer this operation"
    );
    let failed = JobError {
        reason: "disk full".into(),
    };
    assert_eq!(failed.to_string(), "job failed: disk full");
    assert_eq!(
        RunError::AlreadyRunning.to_string(),
        "another attempt of this worker is running"
    );
    assert_eq!(
        ConfigError::EmptyKey.to_string(),
        "the claim key must not be empty"
    );
}
