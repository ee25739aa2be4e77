//! The retry policy inside the worker: conflicts acknowledged, transient errors retried with
//! the policy's backoff, everything else (or an exhausted budget) into a dead letter; the
//! release follows on every path.

mod common;

use common::{CLOCK_OFFSET_MS, Call, SEEDS, World, config};
use reservations_worker::{
    DeadLetter, DeadReason, ErrorClass, ExpireOutcome, Now, ReservationId, RetryPolicy, StoreError,
    WorkerConfig,
};

const EXPIRE_1: Call = Call::Expire(1, Now::StoreClock);

#[test]
fn state_conflicts_are_acknowledged_after_one_attempt() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world
            .fakes
            .on_claim(0, Ok(vec![1, 2]))
            .on_expire(0, Ok(ExpireOutcome::AlreadyDone))
            .on_expire(0, Ok(ExpireOutcome::NotEligible));
        let report = world.run_until(10);
        let calls = world.fakes.calls();
        assert_eq!(
            calls[1..5],
            [
                EXPIRE_1,
                Call::Release(1, 100),
                Call::Expire(2, Now::StoreClock),
                Call::Release(2, 100)
            ]
        );
        assert_eq!((report.already_done, report.not_eligible), (1, 1));
        assert_eq!((report.retries, report.expired), (0, 0));
    }
}

#[test]
fn transient_errors_are_retried_after_the_doubling_backoff_then_succeed() {
    let mut world = World::new(5);
    world
        .fakes
        .on_claim(0, Ok(vec![1]))
        .on_expire(0, Err(StoreError::Timeout))
        .on_expire(0, Err(StoreError::Connection))
        .on_expire(0, Ok(ExpireOutcome::Expired));
    let report = world.run_until(5_000);
    let entries: Vec<(u64, Call)> = world
        .fakes
        .entries()
        .into_iter()
        .filter(|(_, call)| *call != Call::ClockRead)
        .collect();
    let sleep = |base_ms, jitter_ms| Call::Sleep { base_ms, jitter_ms };
    assert_eq!(
        entries[1..7],
        [
            (0, EXPIRE_1),
            (0, sleep(1_000, 500)),
            (1_250, EXPIRE_1),
            (1_250, sleep(2_000, 1_000)),
            (3_750, EXPIRE_1),
            (3_750, Call::Release(1, 100)),
        ]
    );
    assert_eq!(
        (report.retries, report.expired, report.dead_letters),
        (2, 1, 0)
    );
}

fn letter(reason: DeadReason, attempts: u32, last_error: ErrorClass) -> DeadLetter {
    DeadLetter {
        reservation: ReservationId(1),
        reason,
        attempts,
        first_seen_ms: CLOCK_OFFSET_MS + 20,
        last_error,
        replay: "reservations expire --id 1 --guarded".into(),
    }
}

#[test]
fn an_exhausted_budget_becomes_a_dead_letter_then_the_claim_is_released() {
    let policy = RetryPolicy {
        initial_backoff_ms: 10,
        max_backoff_ms: 15,
        max_attempts: 3,
    };
    let mut world = World::with_config(
        2,
        WorkerConfig {
            retry: policy,
            ..config()
        },
    );
    world.fakes.on_claim(20, Ok(vec![1]));
    for _ in 0..3 {
        world.fakes.on_expire(0, Err(StoreError::Timeout));
    }
    let report = world.run_until(200);
    let calls = world.fakes.calls();
    let expected = letter(DeadReason::BudgetExhausted, 3, ErrorClass::Timeout);
    assert_eq!(
        calls[1..8],
        [
            EXPIRE_1,
            Call::Sleep {
                base_ms: 15,
                jitter_ms: 7
            },
            EXPIRE_1,
            Call::Sleep {
                base_ms: 15,
                jitter_ms: 7
            },
            EXPIRE_1,
            Call::Letter(expected),
            Call::Release(1, 100),
        ],
        "the backoff is capped at 15 ms"
    );
    assert_eq!((report.dead_letters, report.retries), (1, 2));
}

#[test]
fn an_invalid_record_is_dead_lettered_at_once_and_a_failed_letter_still_releases() {
    let mut world = World::new(0);
    world
        .fakes
        .on_claim(20, Ok(vec![1]))
        .on_expire(
            0,
            Err(StoreError::Invalid {
                reason: "bad row".into(),
            }),
        )
        .on_letter(0, Err(StoreError::Connection));
    let report = world.run_until(50);
    let expected = letter(
        DeadReason::NotRetryable(ErrorClass::Invalid),
        1,
        ErrorClass::Invalid,
    );
    assert_eq!(
        world.fakes.calls()[1..4],
        [EXPIRE_1, Call::Letter(expected), Call::Release(1, 100)]
    );
    assert_eq!((report.dead_letters, report.dead_letter_errors), (0, 1));
}
