//! One run over scripted ports: the calls the worker makes, in order, and its report.

mod common;

use common::{Call, Inject, Kind, ProviderInject, SEEDS, State, World, config};
use work_items_worker::{ItemError, ItemOutcome, RunEnd, RunStatus, Step, WorkerConfig};

fn status(open: u32, done: u32, failed: u32) -> Option<RunStatus> {
    Some(RunStatus { open, done, failed })
}

fn outcomes(report: &work_items_worker::RunReport) -> Vec<(u32, ItemOutcome)> {
    report.items.iter().map(|r| (r.item.0, r.outcome)).collect()
}

#[test]
fn a_run_applies_every_chunk_then_the_provider_then_done_for_each_item() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world.store.set_items(&[1, 2]);
        let report = world.run();
        assert_eq!(
            world.log.port_calls(),
            vec![
                Call::Find(None),
                Call::Claim(0),
                Call::Apply(0, 1, 0),
                Call::Provider(0, 0),
                Call::Done(0, 1),
                Call::Find(Some(0)),
                Call::Claim(1),
                Call::Apply(1, 2, 0),
                Call::Apply(1, 2, 1),
                Call::Provider(1, 0),
                Call::Done(1, 2),
                Call::Find(Some(1)),
                Call::Status,
            ]
        );
        assert_eq!(report.end, RunEnd::Complete);
        assert_eq!(report.status, status(0, 2, 0));
        assert_eq!(
            outcomes(&report),
            [(0, ItemOutcome::Done), (1, ItemOutcome::Done)]
        );
    }
}

#[test]
fn lease_lost_ends_the_claim_with_no_further_write_and_the_run_moves_on() {
    let expectations: [(Kind, &[Call]); 3] = [
        (Kind::Apply, &[Call::Apply(0, 1, 0), Call::Find(Some(0))]),
        (
            Kind::Done,
            &[
                Call::Apply(0, 1, 0),
                Call::Apply(0, 1, 1),
                Call::Renew(0, 1),
                Call::Provider(0, 0),
                Call::Done(0, 1),
                Call::Find(Some(0)),
            ],
        ),
        (
            Kind::Renew,
            &[
                Call::Apply(0, 1, 0),
                Call::Apply(0, 1, 1),
                Call::Renew(0, 1),
                Call::Find(Some(0)),
            ],
        ),
    ];
    for (kind, expected) in expectations {
        let mut world = World::new(1);
        world.store.set_items(&[2, 1]);
        // Slow calls: the renewal falls due before the second chunk's answer is used.
        world.store.latency_ms.set(110);
        world.store.inject(kind, &[Inject::LeaseLost]);
        let report = world.run();
        let calls = world.log.port_calls();
        assert_eq!(calls[2..2 + expected.len()], *expected, "{kind:?}");
        assert_eq!(report.items[0].outcome, ItemOutcome::Lost, "{kind:?}");
        assert_eq!(report.items[1].outcome, ItemOutcome::Done, "{kind:?}");
    }
}

#[test]
fn an_ambiguous_provider_answer_is_looked_up_by_the_same_key_before_anything_else() {
    for seed in SEEDS {
        let mut world = World::new(seed);
        world.store.set_items(&[1]);
        world
            .provider
            .inject_apply(&[ProviderInject::TimeoutAfterAccept]);
        let report = world.run();
        assert_eq!(
            world.log.port_calls()[3..7],
            [
                Call::Provider(0, 0),
                Call::Lookup(0, 0),
                Call::Done(0, 1),
                Call::Find(Some(0)),
            ]
        );
        assert_eq!(report.items[0].outcome, ItemOutcome::Done);
        assert_eq!(world.provider.applications.borrow()[&0], 1);
    }
}

#[test]
fn a_key_the_provider_never_accepted_is_sent_again_after_a_backoff() {
    let mut world = World::new(0);
    world.store.set_items(&[1]);
    world
        .provider
        .inject_apply(&[ProviderInject::TimeoutBeforeAccept]);
    let report = world.run();
    assert_eq!(
        world.log.calls()[3..8],
        [
            Call::Provider(0, 0),
            Call::Lookup(0, 0),
            Call::Sleep(100),
            Call::Provider(0, 0),
            Call::Done(0, 1),
        ]
    );
    assert_eq!(report.items[0].outcome, ItemOutcome::Done);
}

#[test]
fn transient_failures_back_off_doubling_to_the_cap_then_the_item_is_released() {
    let config = WorkerConfig {
        renew_every_ms: 900,
        ..config()
    };
    let mut world = World::with_config(0, config);
    world.store.set_items(&[1]);
    world.store.inject(Kind::Apply, &[Inject::Rejected; 4]);
    let report = world.run();
    let error = ItemError::Rejected(Step::Apply);
    assert_eq!(
        world.log.calls()[2..11],
        [
            Call::Apply(0, 1, 0),
            Call::Sleep(100),
            Call::Apply(0, 1, 0),
            Call::Sleep(200),
            Call::Apply(0, 1, 0),
            Call::Sleep(300),
            Call::Apply(0, 1, 0),
            Call::Release(0, 1, error),
            Call::Find(Some(0)),
        ],
        "three retries, the third backoff capped at 300 ms"
    );
    assert_eq!(report.items[0].outcome, ItemOutcome::Released(error));
    // The released item is claimable again at once: the run takes it up as its next item.
    assert_eq!(report.items[1].outcome, ItemOutcome::Done);
    assert_eq!(report.items[1].attempt, 2);
}

#[test]
fn an_item_given_up_on_its_last_attempt_is_failed_with_the_last_error() {
    let config = WorkerConfig {
        renew_every_ms: 900,
        ..config()
    };
    let mut world = World::with_config(0, config);
    world.store.set_items(&[1]);
    // First attempt: the provider stays unreachable; second: the done-mark is refused.
    world.provider.inject_apply(&[ProviderInject::Rejected; 4]);
    world.store.inject(Kind::Done, &[Inject::Rejected; 4]);
    let report = world.run();
    let first = ItemError::Rejected(Step::Provider);
    let last = ItemError::Rejected(Step::Done);
    assert_eq!(report.items[0].outcome, ItemOutcome::Released(first));
    assert_eq!(report.items[1].attempt, 2, "max_attempts is 2");
    assert_eq!(report.items[1].outcome, ItemOutcome::Failed(last));
    assert_eq!(
        world.store.state(0),
        State::Failed {
            token: 2,
            error: last
        }
    );
    assert_eq!(report.status, status(0, 0, 1));
}

#[test]
fn a_refusal_for_good_fails_the_item_at_once() {
    let mut world = World::new(0);
    world.store.set_items(&[1]);
    world.provider.inject_apply(&[ProviderInject::Refused]);
    let report = world.run();
    let error = ItemError::ProviderRefused;
    assert_eq!(
        world.log.port_calls()[3..5],
        [Call::Provider(0, 0), Call::Fail(0, 1, error)]
    );
    assert_eq!(report.items[0].outcome, ItemOutcome::Failed(error));
}

#[test]
fn a_due_renewal_comes_before_the_next_call_with_the_claims_token() {
    let mut world = World::new(0);
    world.store.set_items(&[3]);
    world.store.latency_ms.set(120);
    let report = world.run();
    assert_eq!(
        world.log.port_calls()[1..7],
        [
            Call::Claim(0),
            Call::Apply(0, 1, 0),
            Call::Apply(0, 1, 1),
            Call::Renew(0, 1),
            Call::Apply(0, 1, 2),
            Call::Provider(0, 0),
        ],
        "claimed at 120 ms: the renewal is due 300 ms after the claim was sent"
    );
    assert_eq!(report.items[0].outcome, ItemOutcome::Done);
}

#[test]
fn a_claim_without_an_answer_is_not_retried_and_a_refused_one_is() {
    let mut world = World::new(0);
    world.store.set_items(&[1, 1]);
    world
        .store
        .inject(Kind::Claim, &[Inject::Timeout, Inject::Rejected]);
    let report = world.run();
    let calls = world.log.calls();
    assert_eq!(
        calls[..5],
        [
            Call::Find(None),
            Call::Claim(0),
            Call::Find(Some(0)),
            Call::Claim(1),
            Call::Sleep(100),
        ]
    );
    assert_eq!(calls[5], Call::Claim(1));
    // Item 0's lost claim expires; the run saw it open and says so.
    assert_eq!(report.end, RunEnd::Idle);
    assert_eq!(outcomes(&report), [(1, ItemOutcome::Done)]);
}

#[test]
fn the_deadline_ends_a_run_with_items_still_open_and_it_says_so() {
    // Each item takes 40 ms (four calls of 10 ms): the third find comes at 90 ms.
    let config = WorkerConfig {
        deadline_ms: 85,
        ..config()
    };
    let mut world = World::with_config(0, config);
    world.store.set_items(&[1, 1, 1]);
    let report = world.run();
    assert_eq!(report.end, RunEnd::Deadline);
    assert_eq!(report.items.len(), 2);
    assert_eq!(report.status, status(1, 2, 0));
}

#[test]
fn a_store_that_does_not_answer_ends_the_run_as_unavailable() {
    let mut world = World::new(0);
    world.store.set_items(&[1]);
    world.store.inject(Kind::Find, &[Inject::Timeout; 4]);
    let report = world.run();
    assert_eq!(
        report.end,
        RunEnd::Unavailable(work_items_worker::Transport::Timeout)
    );
    assert!(report.items.is_empty() && report.status.is_none());
}
