//! The polling loop on scripted ports: fresh tokens, the store's clock, a release for every
//! claim, the idle pause, and what the clock is read for.

mod common;

use common::{CLOCK_OFFSET_MS, Call, SEEDS, World};
use reservations_worker::{ExpireOutcome, Now, StoreError};

fn claim(token: u64) -> Call {
    Call::Claim {
        limit: 3,
        now: Now::StoreClock,
        token,
        claim_for_ms: 5_000,
    }
}

const IDLE: Call = Call::Sleep {
    base_ms: 100,
    jitter_ms: 40,
};

#[test]
fn a_poll_claims_with_a_fresh_token_expires_each_and_releases_each_with_that_token() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world
            .fakes
            .on_claim(5, Ok(vec![7, 9]))
            .on_expire(3, Ok(ExpireOutcome::Expired))
            .on_expire(3, Ok(ExpireOutcome::Expired));
        let report = world.run_until(150);
        let calls = world.fakes.calls();
        assert_eq!(
            calls[..7],
            [
                claim(100),
                Call::Expire(7, Now::StoreClock),
                Call::Release(7, 100),
                Call::Expire(9, Now::StoreClock),
                Call::Release(9, 100),
                claim(101),
                IDLE,
            ],
            "seed {seed}"
        );
        assert_eq!((report.polls, report.claimed, report.expired), (3, 2, 2));
        assert_eq!(report.state_conflicts(), 0);
    }
}

#[test]
fn an_empty_or_failed_claim_pauses_with_jitter_before_the_next_claim() {
    let mut world = World::new(3);
    world.fakes.on_claim(0, Err(StoreError::Connection));
    let report = world.run_until(300);
    let entries = world.fakes.entries();
    let claims: Vec<u64> = entries
        .iter()
        .filter(|(_, call)| matches!(call, Call::Claim { .. }))
        .map(|(at, _)| *at)
        .collect();
    // Each pause lasts its base plus (here) half its jitter: 120 ms.
    assert_eq!(claims, [0, 120, 240]);
    let calls = world.fakes.calls();
    assert_eq!(calls[..4], [claim(100), IDLE, claim(101), IDLE]);
    assert_eq!((report.polls, report.claim_errors), (3, 1));
}

#[test]
fn the_clock_is_read_after_a_claim_answers_and_after_its_batch_never_to_decide_eligibility() {
    let mut world = World::new(0);
    world
        .fakes
        .on_claim(10, Ok(vec![1]))
        .on_expire(40, Ok(ExpireOutcome::Expired))
        .on_release(25, Ok(()));
    let report = world.run_until(90);
    let entries = world.fakes.entries();
    let reads: Vec<u64> = entries
        .iter()
        .filter(|(_, call)| *call == Call::ClockRead)
        .map(|(at, _)| *at)
        .collect();
    assert_eq!(reads, [10, 75], "after the claim answered, after the batch");
    assert_eq!(report.max_claim_age_ms, 65);
    let nows: Vec<Now> = entries
        .iter()
        .filter_map(|(_, call)| match call {
            Call::Claim { now, .. } | Call::Expire(_, now) => Some(*now),
            _ => None,
        })
        .collect();
    assert!(nows.iter().all(|now| *now == Now::StoreClock), "{nows:?}");
    let _ = CLOCK_OFFSET_MS;
}

#[test]
fn a_failed_release_is_counted_and_the_batch_goes_on() {
    let mut world = World::new(1);
    world
        .fakes
        .on_claim(0, Ok(vec![1, 2]))
        .on_expire(0, Ok(ExpireOutcome::Expired))
        .on_release(0, Err(StoreError::Timeout))
        .on_expire(0, Ok(ExpireOutcome::Expired));
    let report = world.run_until(50);
    let calls = world.fakes.calls();
    assert_eq!(
        calls[3..5],
        [Call::Expire(2, Now::StoreClock), Call::Release(2, 100)]
    );
    assert_eq!((report.expired, report.release_errors), (2, 1));
}
