//! The term slot: one `run` at a time, and a dropped `run` does not wedge the worker.

mod common;

use common::{Call, SEEDS, World, cutoff_at, lease, spawn_run};
use retention_worker::{RunError, TermEnd};

#[test]
fn an_overlapping_run_is_refused_at_once_without_any_port_call() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world.leases().on_acquire(10, Ok(Some(lease(1))));
        world.records().set_backlog(300).set_latency(20);
        let first = spawn_run(&world);
        let worker = world.worker.clone();
        let handle = world.handle.clone();
        let log = world.log.clone();

        let (second, second_at_ms, report) = world
            .sim
            .block_on(async move {
                handle.sleep(5).await;
                let second = worker.run().await;
                let second_at_ms = handle.now_ms();
                log.mark("second run returned");
                let report = first.await.expect("run task").expect("first run");
                (second, second_at_ms, report)
            })
            .expect_completed();

        assert_eq!(second, Err(RunError::AlreadyRunning));
        assert_eq!(second_at_ms, 5, "refused without waiting");
        let cutoff = cutoff_at(10);
        assert_eq!(
            world.log.entries(),
            vec![
                (0, Call::acquire()),
                (5, Call::Mark("second run returned")),
                (10, Call::delete(cutoff, 200, 1)),
                (30, Call::delete(cutoff, 200, 1)),
                (50, Call::Release(lease(1))),
                (50, Call::Mark("run returned")),
            ]
        );
        assert_eq!((report.end, report.rows_deleted), (TermEnd::Drained, 300));
    }
}

#[test]
fn a_dropped_run_frees_the_slot_so_stop_resolves_and_a_new_run_can_start() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world
            .leases()
            .on_acquire(0, Ok(Some(lease(1))))
            .on_acquire(0, Ok(None));
        world.records().set_backlog(5_000).set_latency(100);
        let first = spawn_run(&world);
        let worker = world.worker.clone();
        let handle = world.handle.clone();

        let (next, next_at_ms) = world
            .sim
            .block_on(async move {
                handle.sleep(50).await;
                first.abort();
                let next = worker.run().await;
                (next, handle.now_ms())
            })
            .expect_completed();

        assert_eq!(next.expect("the slot was freed").end, TermEnd::NotLeader);
        assert_eq!(next_at_ms, 50);
        assert_eq!(
            world.log.entries(),
            vec![
                (0, Call::acquire()),
                (0, Call::delete(cutoff_at(0), 200, 1)),
                (50, Call::acquire()),
            ]
        );
    }
}

#[test]
fn stop_waiting_on_a_run_that_is_dropped_resolves_when_it_is_dropped() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world.leases().on_acquire(0, Ok(Some(lease(1))));
        world.records().set_backlog(5_000).set_latency(100);
        let first = spawn_run(&world);
        let worker = world.worker.clone();
        let handle = world.handle.clone();
        let aborter = world.handle.spawn({
            let handle = handle.clone();
            async move {
                handle.sleep(70).await;
                first.abort();
            }
        });

        let stop_resolved_at_ms = world
            .sim
            .block_on(async move {
                handle.sleep(50).await;
                worker.stop().await;
                aborter.await.expect("aborter");
                handle.now_ms()
            })
            .expect_completed();

        assert_eq!(stop_resolved_at_ms, 70);
        assert_eq!(
            world.log.calls(),
            vec![Call::acquire(), Call::delete(cutoff_at(0), 200, 1)],
            "nothing is issued once the run is gone"
        );
    }
}
