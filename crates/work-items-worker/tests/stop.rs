//! `stop()`: no new claim, the call in flight joined, the claim held given back, then return.

mod common;

use common::{Call, Inject, Kind, SEEDS, State, World, spawn_run, spawn_stop_at};
use work_items_worker::{ItemError, ItemOutcome, RunEnd, Step};

/// Runs `run` and a stop at `at_ms` to completion; the run's report.
fn run_stopped_at(world: &mut World, at_ms: u64) -> work_items_worker::RunReport {
    let run = spawn_run(world);
    let stop = spawn_stop_at(world, at_ms);
    world
        .sim
        .block_on(async move {
            stop.await.expect("stop task");
            run.await.expect("run task")
        })
        .expect_completed()
}

/// The calls after the mark `stop called`.
fn after_stop(world: &World) -> Vec<Call> {
    let calls = world.log.calls();
    let at = calls
        .iter()
        .position(|c| *c == Call::Mark("stop called"))
        .expect("stop was called");
    calls[at + 1..].to_vec()
}

#[test]
fn a_run_after_stop_returns_at_once_without_a_call() {
    let mut world = World::new(0);
    world.store.set_items(&[1]);
    let worker = world.worker.clone();
    let report = world
        .sim
        .block_on(async move {
            worker.stop().await;
            worker.stop().await;
            worker.run().await
        })
        .expect_completed()
        .expect("nothing else runs");
    assert_eq!(report.end, RunEnd::StoppedBeforeStart);
    assert!(world.log.calls().is_empty());
}

#[test]
fn a_stop_during_a_backoff_cuts_it_short_and_releases_the_claim() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world.store.set_items(&[1, 1]);
        world.store.inject(Kind::Apply, &[Inject::Rejected]);
        // find 0-10, claim 10-20, apply 20-30 (rejected), backoff 30-130: stop at 50.
        let report = run_stopped_at(&mut world, 50);
        let error = ItemError::Stopped;
        assert_eq!(
            after_stop(&world),
            [
                Call::Release(0, 1, error),
                Call::Mark("run returned"),
                Call::Mark("stop returned"),
            ]
        );
        assert_eq!(report.end, RunEnd::Stopped);
        assert_eq!(report.items[0].outcome, ItemOutcome::Released(error));
        assert_eq!(world.store.state(0), State::Released { token: 1 });
        assert_eq!(
            world.handle.now_ms(),
            60,
            "the release's 10 ms, no backoff left"
        );
    }
}

#[test]
fn a_claim_granted_after_stop_is_given_back_without_any_other_write() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world.store.set_items(&[1]);
        // The claim is in flight from 10 to 20 ms.
        let report = run_stopped_at(&mut world, 15);
        assert_eq!(
            after_stop(&world)[..2],
            [
                Call::Release(0, 1, ItemError::Stopped),
                Call::Mark("run returned")
            ]
        );
        assert_eq!(
            report.items[0].outcome,
            ItemOutcome::Released(ItemError::Stopped)
        );
    }
}

#[test]
fn a_stop_waits_for_the_call_in_flight_and_sends_no_status_after_the_last_find() {
    let mut world = World::new(0);
    world.store.set_items(&[1]);
    // The item is done at 50 ms; the last find is in flight from 50 to 60 ms.
    let report = run_stopped_at(&mut world, 55);
    assert_eq!(
        after_stop(&world),
        [Call::Mark("run returned"), Call::Mark("stop returned")]
    );
    assert_eq!(report.end, RunEnd::Stopped);
    assert_eq!(report.items[0].outcome, ItemOutcome::Done);
    assert_eq!(
        world.handle.now_ms(),
        60,
        "stop returned once the find answered"
    );
}

#[test]
fn a_stop_while_a_release_retries_lets_it_finish() {
    let mut world = World::new(0);
    world.store.set_items(&[1]);
    world.store.inject(Kind::Apply, &[Inject::Rejected; 4]);
    world.store.inject(Kind::Release, &[Inject::Rejected]);
    // The fourth apply is refused at 680 ms (after backoffs of 100, 200 and 300 ms and two
    // renewals); the first release is refused at 690 ms; the stop comes at 700 ms, during
    // the release's backoff, which it does not cut short: the release is sent again at 790.
    let report = run_stopped_at(&mut world, 700);
    let error = ItemError::Rejected(Step::Apply);
    assert_eq!(
        after_stop(&world)[..2],
        [Call::Release(0, 1, error), Call::Mark("run returned")]
    );
    assert_eq!(report.items[0].outcome, ItemOutcome::Released(error));
    assert_eq!(world.handle.now_ms(), 800);
}

#[test]
fn a_stop_during_a_renewal_sends_no_write_after_the_renewal_answers() {
    let mut world = World::new(0);
    world.store.set_items(&[3]);
    world.store.latency_ms.set(120);
    // find 0-120, claim 120-240, chunks 240-360 and 360-480, the renewal 480-600: stop at 540.
    let report = run_stopped_at(&mut world, 540);
    assert_eq!(
        after_stop(&world)[..2],
        [
            Call::Release(0, 1, ItemError::Stopped),
            Call::Mark("run returned")
        ]
    );
    assert_eq!(world.log.port_calls()[4], Call::Renew(0, 1));
    assert_eq!(
        report.items[0].outcome,
        ItemOutcome::Released(ItemError::Stopped)
    );
}
