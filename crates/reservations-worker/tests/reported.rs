//! What a worker tells about itself and its errors, and the edge of a valid retry policy: the
//! parts of the core the fuzz campaign never calls (it builds valid workers and reads only
//! their calls and the report's counters).

mod common;

use common::{World, config};
use reservations_worker::{RetryPolicy, RunEnd, RunError, RunReport, StoreError, WorkerConfig};

#[test]
fn a_worker_reports_the_configuration_it_was_built_with() {
    let world = World::new(1);
    assert_eq!(world.worker.config(), &config());
    let debug = format!("{:?}", world.worker);
    assert!(
        debug.starts_with("ExpiryWorker {") && debug.contains("batch_size: 3"),
        "{debug}"
    );
}

#[test]
fn state_conflicts_are_the_already_done_and_not_eligible_answers() {
    let report = RunReport {
        already_done: 2,
        not_eligible: 5,
        ..RunReport::new(RunEnd::Stopped)
    };
    assert_eq!(report.state_conflicts(), 7);
}

#[test]
fn errors_read_as_sentences() {
    assert_eq!(
        RunError::AlreadyRunning.to_string(),
        "another run of this worker is in progress"
    );
    assert_eq!(
        StoreError::Timeout.to_string(),
        "timeout (the request may have been applied)"
    );
    let invalid = StoreError::Invalid {
        reason: "no such row".into(),
    };
    assert_eq!(invalid.to_string(), "invalid: no such row");
}

#[test]
fn a_backoff_equal_to_its_cap_is_valid() {
    let config = WorkerConfig {
        retry: RetryPolicy {
            initial_backoff_ms: 400,
            max_backoff_ms: 400,
            max_attempts: 2,
        },
        ..config()
    };
    assert_eq!(config.validate(), Ok(()));
}
