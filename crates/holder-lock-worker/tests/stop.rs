//! `stop` before a run, during the job, during a renewal in flight, during the create; and a
//! second `run` while one is active.

mod common;

use common::{Call, World, config, drive};
use holder_lock_worker::{AttemptEnd, HolderToken, Release, RunError};

const T1: HolderToken = HolderToken(1);

/// Runs an attempt and, `stop_at_ms` in, a stop; marks when the stop was called and when it
/// resolved.
fn run_with_stop_at(
    world: &World,
    sim: &mut leasesim_rt::Sim,
    stop_at_ms: u64,
) -> holder_lock_worker::AttemptReport {
    let worker = world.worker(config(Some(300)));
    let stopper = async {
        world.handle.sleep(stop_at_ms).await;
        world.log.push(Call::Mark("stop called"));
        worker.stop().await;
        world.log.push(Call::Mark("stop resolved"));
    };
    let (result, ()) = drive(sim, async { futures::join!(worker.run(), stopper) });
    assert_eq!(
        drive(sim, worker.run()).unwrap().end,
        AttemptEnd::StoppedBeforeStart,
        "a stopped worker starts nothing"
    );
    result.expect("one run at a time")
}

#[test]
fn stop_during_the_job_stops_it_releases_and_resolves_only_after_the_release() {
    let (mut sim, world) = World::new();
    world.job.steps.set(10);
    let report = run_with_stop_at(&world, &mut sim, 250);
    assert_eq!(
        world.log.entries(),
        vec![
            (0, Call::Create(T1)),
            (102, Call::Step(1)),
            (202, Call::Step(2)),
            (250, Call::Mark("stop called")),
            (250, Call::DeleteIfHolder(T1)),
            (252, Call::Mark("stop resolved")),
        ]
    );
    assert_eq!(
        (report.end, report.release),
        (AttemptEnd::Stopped, Some(Release::Deleted))
    );
}

#[test]
fn stop_during_a_renewal_stops_the_job_at_once_and_waits_for_the_renewals_answer() {
    let (mut sim, world) = World::new();
    world.job.steps.set(10);
    world.store.set_latency("renew", 50);
    let report = run_with_stop_at(&world, &mut sim, 320);
    assert_eq!(world.log.step_times(), vec![102, 202, 302]);
    let entries = world.log.entries();
    let tail: Vec<_> = entries.iter().skip_while(|(at, _)| *at < 320).collect();
    assert_eq!(
        tail,
        vec![
            &(320, Call::Mark("stop called")),
            &(402, Call::DeleteIfHolder(T1)),
            &(404, Call::Mark("stop resolved")),
        ]
    );
    assert_eq!(report.end, AttemptEnd::Stopped);
    assert_eq!(
        report.renewals, 1,
        "the renewal awaited after the stop was answered as granted: it counts"
    );
}

#[test]
fn a_stop_that_comes_with_a_renewals_answer_stops_the_job_all_the_same() {
    let (mut sim, world) = World::new();
    world.job.steps.set(10);
    // The renewal sent at 302 is answered at 320, the instant the stop comes; the stop is
    // polled first.
    world.store.set_latency("renew", 9);
    let worker = world.worker(config(Some(300)));
    let stopper = async {
        world.handle.sleep(320).await;
        worker.stop().await;
    };
    let ((), result) = drive(&mut sim, async { futures::join!(stopper, worker.run()) });
    assert_eq!(world.log.step_times(), vec![102, 202, 302]);
    let report = result.unwrap();
    assert_eq!(report.end, AttemptEnd::Stopped);
    assert_eq!(
        report.renewals, 1,
        "the renewal answered with the stop was granted"
    );
}

#[test]
fn stop_during_the_create_releases_the_claim_the_create_makes_and_runs_no_job() {
    let (mut sim, world) = World::new();
    world.store.set_latency("create", 20);
    let report = run_with_stop_at(&world, &mut sim, 10);
    assert_eq!(
        world.log.entries(),
        vec![
            (0, Call::Create(T1)),
            (10, Call::Mark("stop called")),
            (40, Call::DeleteIfHolder(T1)),
            (42, Call::Mark("stop resolved")),
        ]
    );
    assert_eq!(
        (report.end, report.release),
        (AttemptEnd::Stopped, Some(Release::Deleted))
    );
    assert_eq!(world.store.holder(), None);
}

#[test]
fn stop_before_any_run_sends_nothing_and_a_second_run_is_refused_while_one_is_active() {
    let (mut sim, world) = World::new();
    let worker = world.worker(config(Some(300)));
    let (first, second) = drive(&mut sim, async {
        futures::join!(worker.run(), worker.run())
    });
    assert_eq!(first.unwrap().end, AttemptEnd::JobDone);
    assert_eq!(second, Err(RunError::AlreadyRunning));
    let calls = world.log.calls().len();
    drive(&mut sim, worker.stop());
    drive(&mut sim, worker.stop());
    let after = drive(&mut sim, worker.run()).unwrap();
    assert_eq!(
        (after.end, after.token),
        (AttemptEnd::StoppedBeforeStart, None)
    );
    assert_eq!(world.log.calls().len(), calls, "no call after stop");
}
