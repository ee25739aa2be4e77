//! `stop` at every kind of instant: before a run, during acquire, during a delete, during a
//! renewal sleep, during a renewal in flight, twice, concurrently, and dropped early.
//!
//! Marks in the log ("stop called", "run returned", "stop resolved") order the test's own
//! observations against the port calls.

mod common;

use std::pin::pin;

use common::{Call, SEEDS, World, cutoff_at, lease, spawn_run, spawn_stop_at};
use retention_worker::{TermEnd, TermReport};

fn delete(limit: u32, token: u64) -> Call {
    Call::delete(cutoff_at(0), limit, token)
}

fn mark(at_ms: u64, what: &'static str) -> (u64, Call) {
    (at_ms, Call::Mark(what))
}

/// Spawn a run and one stopper at `stop_at_ms`, and wait for both; returns the report.
fn run_with_stop_at(world: &mut World, stop_at_ms: u64) -> TermReport {
    let run = spawn_run(world);
    let stop = spawn_stop_at(world, stop_at_ms, "stop called", "stop resolved");
    world
        .sim
        .block_on(async move {
            let report = run.await.expect("run task finished").expect("no other run");
            stop.await.expect("stop task finished");
            report
        })
        .expect_completed()
}

#[test]
fn stop_during_acquire_releases_the_lease_that_acquire_returns_and_deletes_nothing() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world
            .leases()
            .on_acquire(10, Ok(Some(lease(1))))
            .on_release(3, Ok(()));
        world.records().set_backlog(5_000);

        let report = run_with_stop_at(&mut world, 5);

        assert_eq!(
            world.log.entries(),
            vec![
                (0, Call::acquire()),
                mark(5, "stop called"),
                (10, Call::Release(lease(1))),
                mark(13, "run returned"),
                mark(13, "stop resolved"),
            ]
        );
        assert_eq!(
            report,
            TermReport {
                end: TermEnd::Stopped,
                rows_deleted: 0,
                batches: 0,
                renewals: 0,
                tokens: vec![1],
                cutoff_ms: None,
                release: Some(Ok(())),
            }
        );
        assert_eq!(
            world.worker.clock().reads(),
            0,
            "no cutoff is taken for a stopped term"
        );
    }
}

#[test]
fn stop_during_acquire_that_answers_none_makes_no_other_call() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world.leases().on_acquire(10, Ok(None));

        let report = run_with_stop_at(&mut world, 5);

        assert_eq!(
            world.log.entries(),
            vec![
                (0, Call::acquire()),
                mark(5, "stop called"),
                mark(10, "run returned"),
                mark(10, "stop resolved"),
            ]
        );
        assert_eq!((report.end, report.release), (TermEnd::NotLeader, None));
    }
}

#[test]
fn stop_during_a_delete_waits_for_it_then_releases_and_resolves_after_run_returned() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world
            .leases()
            .on_acquire(0, Ok(Some(lease(1))))
            .on_release(3, Ok(()));
        world.records().set_backlog(5_000).set_latency(100);

        let report = run_with_stop_at(&mut world, 50);

        assert_eq!(
            world.log.entries(),
            vec![
                (0, Call::acquire()),
                (0, delete(200, 1)),
                mark(50, "stop called"),
                (100, Call::Release(lease(1))),
                mark(103, "run returned"),
                mark(103, "stop resolved"),
            ]
        );
        assert_eq!(
            report,
            TermReport {
                end: TermEnd::Stopped,
                rows_deleted: 200,
                batches: 1,
                renewals: 0,
                tokens: vec![1],
                cutoff_ms: Some(cutoff_at(0)),
                release: Some(Ok(())),
            }
        );
    }
}

#[test]
fn stop_during_a_renewal_sleep_cancels_it_and_no_renewal_follows() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world
            .leases()
            .on_acquire(0, Ok(Some(lease(1))))
            .on_renew(0, Ok(Some(lease(2))));
        world.records().set_backlog(5_000).set_latency(25_000);
        let run = spawn_run(&world);
        let stop = spawn_stop_at(&world, 12_000, "stop called", "stop resolved");
        let handle = world.handle.clone();

        let (report, timers_during_stop) = world
            .sim
            .block_on(async move {
                handle.sleep(13_000).await;
                // Only the delete in flight (until 25 s) is still waiting on a timer: the
                // renewal sleep that would have fired at 20 s is gone.
                let timers_during_stop = handle.pending_timers();
                let report = run.await.expect("run task").expect("no other run");
                stop.await.expect("stop task");
                (report, timers_during_stop)
            })
            .expect_completed();

        assert_eq!(timers_during_stop, 1);
        assert_eq!(
            world.log.entries(),
            vec![
                (0, Call::acquire()),
                (0, delete(200, 1)),
                (10_000, Call::Renew(lease(1))),
                mark(12_000, "stop called"),
                (25_000, Call::Release(lease(2))),
                mark(25_000, "run returned"),
                mark(25_000, "stop resolved"),
            ]
        );
        assert_eq!(report.end, TermEnd::Stopped);
        assert_eq!(report.tokens, vec![1, 2]);
    }
}

#[test]
fn stop_during_a_renewal_in_flight_awaits_it_and_releases_the_renewed_lease() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world
            .leases()
            .on_acquire(0, Ok(Some(lease(1))))
            .on_renew(5_000, Ok(Some(lease(2))));
        world.records().set_backlog(5_000).set_latency(11_000);

        let report = run_with_stop_at(&mut world, 10_500);

        // The delete answers at 11 s and no new one goes out; the renewal sent at 10 s is
        // awaited until 15 s and its lease is the one released.
        assert_eq!(
            world.log.entries(),
            vec![
                (0, Call::acquire()),
                (0, delete(200, 1)),
                (10_000, Call::Renew(lease(1))),
                mark(10_500, "stop called"),
                (15_000, Call::Release(lease(2))),
                mark(15_000, "run returned"),
                mark(15_000, "stop resolved"),
            ]
        );
        assert_eq!(report.end, TermEnd::Stopped);
        assert_eq!((report.rows_deleted, report.renewals), (200, 1));
        assert_eq!(report.tokens, vec![1, 2]);
    }
}

#[test]
fn two_concurrent_stops_both_resolve_after_run_and_a_later_stop_resolves_at_once() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world
            .leases()
            .on_acquire(0, Ok(Some(lease(1))))
            .on_release(3, Ok(()));
        world.records().set_backlog(5_000).set_latency(100);
        let run = spawn_run(&world);
        let first = spawn_stop_at(&world, 50, "first stop called", "first stop resolved");
        let second = spawn_stop_at(&world, 60, "second stop called", "second stop resolved");
        let worker = world.worker.clone();
        let handle = world.handle.clone();
        let log = world.log.clone();

        let (report, third_stop_at_ms) = world
            .sim
            .block_on(async move {
                let report = run.await.expect("run task").expect("no other run");
                first.await.expect("first stop task");
                second.await.expect("second stop task");
                log.mark("third stop called");
                worker.stop().await;
                (report, handle.now_ms())
            })
            .expect_completed();

        let entries = world.log.entries();
        assert_eq!(
            entries[..6],
            [
                (0, Call::acquire()),
                (0, delete(200, 1)),
                mark(50, "first stop called"),
                mark(60, "second stop called"),
                (100, Call::Release(lease(1))),
                mark(103, "run returned"),
            ]
        );
        let mut resolved = entries[6..8].to_vec();
        resolved.sort_by_key(|(_, call)| format!("{call:?}"));
        assert_eq!(
            resolved,
            [
                mark(103, "first stop resolved"),
                mark(103, "second stop resolved")
            ]
        );
        assert_eq!(entries[8..], [mark(103, "third stop called")]);
        assert_eq!(
            third_stop_at_ms, 103,
            "a stop with no active run resolves at once"
        );
        assert_eq!(report.end, TermEnd::Stopped);
        assert_eq!(report.rows_deleted, 200);
    }
}

#[test]
fn stop_called_twice_by_one_caller_is_idempotent() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world.leases().on_acquire(0, Ok(Some(lease(1))));
        world.records().set_backlog(5_000).set_latency(100);
        let run = spawn_run(&world);
        let worker = world.worker.clone();
        let handle = world.handle.clone();
        let log = world.log.clone();

        let report = world
            .sim
            .block_on(async move {
                handle.sleep(50).await;
                worker.stop().await;
                log.mark("first stop resolved");
                worker.stop().await;
                log.mark("second stop resolved");
                run.await.expect("run task").expect("no other run")
            })
            .expect_completed();

        assert_eq!(
            world.log.entries(),
            vec![
                (0, Call::acquire()),
                (0, delete(200, 1)),
                (100, Call::Release(lease(1))),
                mark(100, "run returned"),
                mark(100, "first stop resolved"),
                mark(100, "second stop resolved"),
            ]
        );
        assert_eq!(report.end, TermEnd::Stopped);
    }
}

#[test]
fn stop_before_any_run_resolves_at_once_and_later_runs_touch_no_port() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world.leases().on_acquire(0, Ok(Some(lease(1))));
        world.records().set_backlog(5_000);
        let worker = world.worker.clone();
        let handle = world.handle.clone();

        let (stopped_at_ms, first, second) = world
            .sim
            .block_on(async move {
                handle.sleep(7).await;
                worker.stop().await;
                let stopped_at_ms = handle.now_ms();
                let first = worker.run().await;
                let second = worker.run().await;
                (stopped_at_ms, first, second)
            })
            .expect_completed();

        assert_eq!(stopped_at_ms, 7);
        let expected = TermReport {
            end: TermEnd::StoppedBeforeStart,
            rows_deleted: 0,
            batches: 0,
            renewals: 0,
            tokens: vec![],
            cutoff_ms: None,
            release: None,
        };
        assert_eq!(first, Ok(expected.clone()));
        assert_eq!(second, Ok(expected));
        assert_eq!(world.log.entries(), vec![], "no port call at all");
        assert_eq!(world.worker.clock().reads(), 0);
    }
}

#[test]
fn stop_between_terms_makes_the_next_run_return_at_once() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world.leases().on_acquire(0, Ok(Some(lease(1))));
        world.records().set_backlog(300);
        let worker = world.worker.clone();

        let (first, second) = world
            .sim
            .block_on(async move {
                let first = worker.run().await.expect("no other run");
                worker.stop().await;
                let second = worker.run().await.expect("no other run");
                (first, second)
            })
            .expect_completed();

        assert_eq!(first.end, TermEnd::Drained);
        assert_eq!(second.end, TermEnd::StoppedBeforeStart);
        assert_eq!(
            world.log.calls(),
            vec![
                Call::acquire(),
                delete(200, 1),
                delete(200, 1),
                Call::Release(lease(1))
            ]
        );
    }
}

#[test]
fn a_dropped_stop_future_keeps_the_stop_in_force_and_does_not_break_run() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world.leases().on_acquire(0, Ok(Some(lease(1))));
        world.records().set_backlog(5_000).set_latency(100);
        let run = spawn_run(&world);
        let worker = world.worker.clone();
        let handle = world.handle.clone();
        let log = world.log.clone();

        let report = world
            .sim
            .block_on(async move {
                handle.sleep(50).await;
                {
                    let mut stop = pin!(worker.stop());
                    assert!(
                        futures::poll!(stop.as_mut()).is_pending(),
                        "a term is active"
                    );
                }
                log.mark("stop dropped");
                let report = run.await.expect("run task").expect("no other run");
                worker.stop().await;
                log.mark("second stop resolved");
                report
            })
            .expect_completed();

        assert_eq!(
            world.log.entries(),
            vec![
                (0, Call::acquire()),
                (0, delete(200, 1)),
                mark(50, "stop dropped"),
                (100, Call::Release(lease(1))),
                mark(100, "run returned"),
                mark(100, "second stop resolved"),
            ]
        );
        assert_eq!(report.end, TermEnd::Stopped);
    }
}
