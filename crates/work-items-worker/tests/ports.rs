//! What a worker tells about itself, and its ports shared by reference or `Rc`: the parts of
//! the core the fuzz campaign never calls (it builds valid workers with owned ports and reads
//! only their calls and reports).

mod common;

use std::future::Future;
use std::rc::Rc;

use common::{World, config};
use work_items_worker::{Clock, ItemId, RunError, WorkerConfig};

/// A clock that always reads `now_ms` and never sleeps.
struct Fixed {
    now_ms: u64,
}

impl Clock for Fixed {
    fn now_ms(&self) -> u64 {
        self.now_ms
    }

    fn sleep(&self, _ms: u64) -> impl Future<Output = ()> {
        std::future::ready(())
    }
}

/// Reads `clock` through the `Clock` impl of its own type `C`.
fn read<C: Clock>(clock: C) -> u64 {
    clock.now_ms()
}

#[test]
fn a_clock_shared_by_reference_or_rc_reads_the_same() {
    let clock = Fixed { now_ms: 4_242 };
    assert_eq!(read(&clock), 4_242);
    assert_eq!(read(Rc::new(Fixed { now_ms: 17 })), 17);
}

#[test]
fn a_worker_reports_the_owner_and_configuration_it_was_built_with() {
    let world = World::new(1);
    assert_eq!(world.worker.owner_id(), "w1");
    assert_eq!(world.worker.config(), &config());
    let debug = format!("{:?}", world.worker);
    assert!(
        debug.starts_with("ItemWorker {") && debug.contains("\"w1\""),
        "{debug}"
    );
}

#[test]
fn ids_and_errors_read_as_sentences() {
    assert_eq!(ItemId(3).to_string(), "item 3");
    assert_eq!(
        RunError::AlreadyRunning.to_string(),
        "a run of this worker is already in progress"
    );
}

#[test]
fn the_smallest_valid_settings_are_accepted() {
    let smallest = WorkerConfig {
        lease_ms: 2,
        renew_every_ms: 1,
        backoff_cap_ms: 100,
        backoff_ms: 100,
        ..config()
    };
    assert_eq!(smallest.validate(), Ok(()));
}
