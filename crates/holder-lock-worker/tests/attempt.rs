//! One attempt against the model store: what it sends, when, and what it reports.
//!
//! Every test runs the worker's futures in one task on the deterministic runtime, so the
//! instants in the expected logs are exact: 1 ms each way for every store call unless a test
//! sets a latency, job steps of 100 ms, a one-second claim trusted for 800 ms.

mod common;

use common::{Call, Forced, KEY, World, config, drive};
use holder_lock_worker::{
    AttemptEnd, AttemptReport, ClaimConfig, Found, HolderToken, LossCause, Release, StoreError,
};

const T1: HolderToken = HolderToken(1);
const T2: HolderToken = HolderToken(2);
const RIVAL: HolderToken = HolderToken(99);

fn report(end: AttemptEnd, renewals: u32, release: Release, gone: u64) -> AttemptReport {
    AttemptReport {
        end,
        token: Some(T1),
        renewals,
        release: Some(release),
        claims_gone: gone,
    }
}

#[test]
fn an_attempt_creates_runs_its_job_while_renewing_and_deletes_only_its_own_claim() {
    let (mut sim, world) = World::new();
    let worker = world.worker(config(Some(300)));
    let report_of = drive(&mut sim, worker.run()).expect("nothing else runs");
    assert_eq!(
        world.log.entries(),
        vec![
            (0, Call::Create(T1)),
            (102, Call::Step(1)),
            (202, Call::Step(2)),
            (302, Call::Renew(T1)),
            (302, Call::Step(3)),
            (402, Call::Step(4)),
            (402, Call::DeleteIfHolder(T1)),
        ]
    );
    assert_eq!(
        report_of,
        report(AttemptEnd::JobDone, 1, Release::Deleted, 0)
    );
    assert_eq!(world.store.holder(), None, "the claim is gone");
}

#[test]
fn every_attempt_draws_a_fresh_token() {
    let (mut sim, world) = World::new();
    let worker = world.worker(config(Some(300)));
    let first = drive(&mut sim, worker.run()).unwrap();
    let second = drive(&mut sim, worker.run()).unwrap();
    assert_eq!((first.token, second.token), (Some(T1), Some(T2)));
    let creates: Vec<Call> = world
        .log
        .calls()
        .into_iter()
        .filter(|c| matches!(c, Call::Create(_)))
        .collect();
    assert_eq!(creates, vec![Call::Create(T1), Call::Create(T2)]);
}

#[test]
fn a_lost_or_failed_create_ends_the_attempt_with_no_other_call() {
    let (mut sim, world) = World::new();
    world.store.plant(RIVAL, 10_000);
    let worker = world.worker(config(Some(300)));
    let lost = drive(&mut sim, worker.run()).unwrap();
    world.store.force(Forced::Create(Err(StoreError::Timeout)));
    let failed = drive(&mut sim, worker.run()).unwrap();
    assert_eq!(world.log.calls(), vec![Call::Create(T1), Call::Create(T2)]);
    assert_eq!((lost.end, lost.release), (AttemptEnd::NotHolder, None));
    assert_eq!(
        (failed.end, failed.release),
        (AttemptEnd::CreateFailed(StoreError::Timeout), None)
    );
    assert_eq!(
        world.store.holder(),
        Some(RIVAL),
        "the rival's claim is untouched"
    );
}

#[test]
fn without_renewal_a_long_job_runs_past_its_deadline_and_the_release_reports_the_claim_gone() {
    let (mut sim, world) = World::new();
    world.job.steps.set(10);
    world.job.step_ms.set(250);
    let worker = world.worker(config(None));
    let rival = async {
        world.handle.sleep(1_200).await;
        world.store.plant(RIVAL, 5_000);
    };
    let (result, ()) = drive(&mut sim, async { futures::join!(worker.run(), rival) });
    let steps = world.log.step_times();
    assert_eq!(steps.len(), 10, "the job runs to its end");
    assert_eq!(steps.last(), Some(&2_502));
    assert_eq!(
        world.log.store_calls(),
        vec![Call::Create(T1), Call::DeleteIfHolder(T1)]
    );
    assert_eq!(
        result.unwrap(),
        report(AttemptEnd::JobDone, 0, Release::Gone(Found::Foreign), 1)
    );
    assert_eq!(worker.claims_gone(), 1);
    assert_eq!(
        world.store.holder(),
        Some(RIVAL),
        "the rival's claim survives"
    );
}

#[test]
fn a_refused_renewal_stops_the_job_before_its_next_step_and_is_counted() {
    let (mut sim, world) = World::new();
    world.job.steps.set(10);
    let worker = world.worker(config(Some(300)));
    let rival = async {
        world.handle.sleep(150).await;
        world.store.plant(RIVAL, 5_000);
    };
    let (result, ()) = drive(&mut sim, async { futures::join!(worker.run(), rival) });
    assert_eq!(world.log.step_times(), vec![102, 202, 302]);
    assert_eq!(
        world.log.store_calls(),
        vec![Call::Create(T1), Call::Renew(T1), Call::DeleteIfHolder(T1)]
    );
    let lost = AttemptEnd::ClaimLost(LossCause::RenewRefused(Found::Foreign));
    assert_eq!(
        result.unwrap(),
        report(lost, 0, Release::Gone(Found::Foreign), 1)
    );
}

#[test]
fn a_refusal_answered_at_the_instant_of_a_job_step_stops_the_job_before_that_step() {
    let (mut sim, world) = World::new();
    world.job.steps.set(10);
    world.store.set_latency("renew", 50);
    let worker = world.worker(config(Some(300)));
    let rival = async {
        world.handle.sleep(150).await;
        world.store.plant(RIVAL, 5_000);
    };
    let (result, ()) = drive(&mut sim, async { futures::join!(worker.run(), rival) });
    // The renewal sent at 302 is refused at 352 and answered at 402, when step 4 is due.
    assert_eq!(world.log.step_times(), vec![102, 202, 302]);
    assert_eq!(
        world.log.entries().last(),
        Some(&(402, Call::DeleteIfHolder(T1)))
    );
    assert!(matches!(result.unwrap().end, AttemptEnd::ClaimLost(_)));
}

#[test]
fn a_renewal_still_unanswered_when_the_trust_passes_stops_the_job_at_that_instant() {
    let (mut sim, world) = World::new();
    world.job.steps.set(10);
    world.store.set_latency("renew", 300);
    let worker = world.worker(config(Some(300)));
    let result = drive(&mut sim, worker.run()).unwrap();
    // Trusted until 800 (create sent at 0); the renewal sent at 302 is answered at 902.
    assert_eq!(
        world.log.step_times(),
        (1..=7).map(|s| 2 + 100 * s).collect::<Vec<_>>()
    );
    let release_at = world.log.entries().last().map(|(at, _)| *at);
    assert_eq!(release_at, Some(902), "the renewal's answer is awaited");
    // The late answer granted the renewal: it is counted, though the trust had passed.
    let lost = AttemptEnd::ClaimLost(LossCause::NotRenewedInTime);
    assert_eq!(result, report(lost, 1, Release::Deleted, 0));
}

#[test]
fn renewals_keep_a_job_longer_than_the_lifetime_under_its_own_claim() {
    let (mut sim, world) = World::new();
    world.job.steps.set(10);
    world.job.step_ms.set(250);
    let worker = world.worker(config(Some(300)));
    let result = drive(&mut sim, worker.run()).unwrap();
    assert_eq!(world.log.step_times().len(), 10);
    assert_eq!(result.end, AttemptEnd::JobDone);
    assert_eq!(result.release, Some(Release::Deleted));
    assert!(result.renewals >= 8, "{} renewals", result.renewals);
    assert_eq!(result.claims_gone, 0);
}

#[test]
fn a_create_answered_after_the_trusted_time_does_not_start_the_job() {
    let (mut sim, world) = World::new();
    world.store.set_latency("create", 450);
    let worker = world.worker(config(Some(300)));
    let result = drive(&mut sim, worker.run()).unwrap();
    assert_eq!(
        world.log.entries(),
        vec![(0, Call::Create(T1)), (900, Call::DeleteIfHolder(T1))]
    );
    assert_eq!(result, report(AttemptEnd::TooLate, 0, Release::Deleted, 0));
}

#[test]
fn a_failing_job_is_released_and_reported() {
    let (mut sim, world) = World::new();
    world.job.fail_at.set(Some(2));
    let worker = world.worker(config(Some(300)));
    let result = drive(&mut sim, worker.run()).unwrap();
    assert_eq!(world.log.step_times(), vec![102]);
    assert_eq!(
        world.log.entries().last(),
        Some(&(202, Call::DeleteIfHolder(T1)))
    );
    let failed = AttemptEnd::JobFailed(holder_lock_worker::JobError {
        reason: "step 2 failed".into(),
    });
    assert_eq!(result, report(failed, 0, Release::Deleted, 0));
}

#[test]
fn without_compare_and_delete_the_claim_is_read_and_left_to_run_out_never_deleted() {
    let (mut sim, world) = World::new();
    world.store.compare_and_delete.set(false);
    let worker = world.worker(config(Some(300)));
    let kept = drive(&mut sim, worker.run()).unwrap();
    assert_eq!(kept.release, Some(Release::LeftToExpire));
    assert_eq!(world.store.holder(), Some(T1), "left to run out");

    // The claim runs out; a rival takes it while the next attempt's job runs unrenewed.
    let (mut sim, world) = World::new();
    world.store.compare_and_delete.set(false);
    world.job.steps.set(12);
    let worker = world.worker(ClaimConfig {
        renew_every_ms: None,
        ..config(None)
    });
    let rival = async {
        world.handle.sleep(1_100).await;
        world.store.plant(RIVAL, 5_000);
    };
    let (gone, ()) = drive(&mut sim, async { futures::join!(worker.run(), rival) });
    assert_eq!(gone.unwrap().release, Some(Release::Gone(Found::Foreign)));
    let calls = world.log.store_calls();
    assert_eq!(calls, vec![Call::Create(T1), Call::Get]);
    assert_eq!(worker.claims_gone(), 1);
    assert_eq!(world.store.holder(), Some(RIVAL));
    assert!(
        !calls.iter().any(|c| matches!(c, Call::Delete)),
        "{KEY} never deleted"
    );
}
