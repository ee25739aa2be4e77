//! `stop()`: prompt in a pause, no new claim or transition after it, every claim released
//! before `run` ends, idempotent; and `run`'s own guards.

mod common;

use std::pin::pin;

use common::{Call, World};
use futures::future::{Either, select};
use reservations_worker::{ExpireOutcome, Now, RunEnd, RunError, StoreError};

fn marks_after(world: &World, from: usize) -> Vec<(u64, Call)> {
    world.fakes.entries()[from..]
        .iter()
        .filter(|(_, call)| *call != Call::ClockRead)
        .cloned()
        .collect()
}

#[test]
fn a_stop_during_the_idle_pause_ends_the_run_at_once() {
    let mut world = World::new(0);
    let report = world.run_until(50);
    let entries = world.fakes.entries();
    let tail: Vec<&(u64, Call)> = entries.iter().rev().take(3).collect();
    assert_eq!(
        tail.iter()
            .map(|(at, call)| (*at, call.clone()))
            .collect::<Vec<_>>(),
        [
            (50, Call::Mark("stop returned")),
            (50, Call::Mark("run returned")),
            (50, Call::Mark("stop called")),
        ]
    );
    assert_eq!((report.end, report.polls), (RunEnd::Stopped, 1));
}

#[test]
fn a_stop_during_a_backoff_abandons_the_reservation_and_releases_it() {
    let mut world = World::new(0);
    world
        .fakes
        .on_claim(0, Ok(vec![1]))
        .on_expire(0, Err(StoreError::Timeout));
    let report = world.run_until(300);
    let tail = marks_after(&world, 0);
    assert_eq!(
        tail[1..],
        [
            (0, Call::Expire(1, Now::StoreClock)),
            (
                0,
                Call::Sleep {
                    base_ms: 1_000,
                    jitter_ms: 500
                }
            ),
            (300, Call::Mark("stop called")),
            (300, Call::Release(1, 100)),
            (300, Call::Mark("run returned")),
            (300, Call::Mark("stop returned")),
        ]
    );
    assert_eq!((report.abandoned, report.retries), (1, 0));
}

#[test]
fn a_stop_mid_batch_awaits_the_transition_in_flight_then_releases_every_claim() {
    let mut world = World::new(4);
    world
        .fakes
        .on_claim(0, Ok(vec![1, 2, 3]))
        .on_expire(100, Ok(ExpireOutcome::Expired));
    let report = world.run_until(50);
    let calls = world.fakes.calls();
    assert_eq!(
        calls[1..],
        [
            Call::Expire(1, Now::StoreClock),
            Call::Mark("stop called"),
            Call::Release(1, 100),
            Call::Release(2, 100),
            Call::Release(3, 100),
            Call::Mark("run returned"),
            Call::Mark("stop returned"),
        ]
    );
    assert_eq!((report.expired, report.abandoned), (1, 2));
}

#[test]
fn a_claim_answered_after_the_stop_is_released_without_attempts() {
    let mut world = World::new(2);
    world.fakes.on_claim(100, Ok(vec![4, 5]));
    let report = world.run_until(50);
    assert_eq!(
        world.fakes.calls()[1..],
        [
            Call::Mark("stop called"),
            Call::Release(4, 100),
            Call::Release(5, 100),
            Call::Mark("run returned"),
            Call::Mark("stop returned"),
        ]
    );
    assert_eq!((report.claimed, report.abandoned), (2, 2));
}

#[test]
fn run_after_stop_makes_no_call_and_stop_twice_is_fine() {
    let mut world = World::new(0);
    let worker = world.worker.clone();
    let outcome = world
        .sim
        .block_on(async move {
            worker.stop().await;
            worker.stop().await;
            worker.run().await
        })
        .expect_completed();
    assert_eq!(
        outcome.map(|report| report.end),
        Ok(RunEnd::StoppedBeforeStart)
    );
    assert!(world.fakes.calls().is_empty());
}

#[test]
fn a_second_run_is_refused_while_one_is_active_and_a_dropped_run_frees_the_slot() {
    let mut world = World::new(0);
    let (worker, handle) = (world.worker.clone(), world.handle.clone());
    let second = world
        .sim
        .block_on(async move {
            let first = Box::pin(worker.run());
            let timer = pin!(handle.sleep(30));
            // The first run pauses (nothing to claim); the timer wins, and the run is dropped
            // below.
            let Either::Right(((), mut first)) = select(first, timer).await else {
                panic!("the run never ends by itself");
            };
            let refused = pin!(worker.run());
            let refused = select(refused, first.as_mut()).await;
            let Either::Left((refused, _)) = refused else {
                panic!("the second run answers at once");
            };
            drop(first);
            worker.stop().await;
            (refused, worker.run().await)
        })
        .expect_completed();
    assert_eq!(second.0, Err(RunError::AlreadyRunning));
    assert_eq!(second.1.map(|r| r.end), Ok(RunEnd::StoppedBeforeStart));
}
