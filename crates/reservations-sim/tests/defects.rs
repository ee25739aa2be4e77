//! The defective workers: each defect leaves its own pattern in the events (read without the
//! checkers), and the correct worker leaves none. (That the flawless engine is the correct
//! worker, byte for byte, is `defects::faithful`'s test.)

mod common;

use std::collections::BTreeMap;

use common::{run, scenario, scenario_names, worker};
use leasesim_reservations::Reservations;
use leasesim_reservations::defects::DEFECTS;
use leasesim_reservations::events::{Answer, EventKind, Failure, OutcomeView, Request};
use leasesim_sim::WorldRun;

/// The shapes the defects leave, read straight from a run's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Pattern {
    ExpireById,
    ReadThenWrite,
    ReleaseWithoutToken,
    /// A transition sent again after one of the same reservation answered a state conflict.
    ConflictRetried,
    /// A transition passing the worker's own clock as now.
    WorkerNow,
    /// Claims passing the worker's own clock as now, from a replica whose transitions pass
    /// none.
    ClaimOnlyWorkerNow,
    /// Two claims of one replica with one token.
    TokenReused,
    /// A claim sent while a reservation given up on (an invalid answer) was not released.
    GiveUpNotReleased,
}

fn patterns(run: &WorldRun<Reservations>) -> BTreeMap<Pattern, usize> {
    let mut found = BTreeMap::new();
    let mut tokens = BTreeMap::new();
    let mut conflicted = BTreeMap::new();
    let mut expires = BTreeMap::new();
    let mut given_up = BTreeMap::new();
    for event in common::kinds(run) {
        let Some(replica) = event.replica else {
            continue;
        };
        let pattern = match event.kind {
            EventKind::Call { call, request } => match request {
                Request::ExpireById { .. } => Some(Pattern::ExpireById),
                Request::ReadDue { .. } | Request::WriteClaim { .. } => {
                    Some(Pattern::ReadThenWrite)
                }
                Request::ReleaseAny { .. } => Some(Pattern::ReleaseWithoutToken),
                Request::Release { id, .. } => {
                    given_up.remove(&(replica, id));
                    None
                }
                // The worker's clock as now: `clock_patterns`.
                Request::Claim { now: Some(_), .. } | Request::Expire { now: Some(_), .. } => None,
                Request::Claim { token, .. } => {
                    let reused = tokens.insert(token, replica).is_some();
                    let held = given_up.keys().any(|(of, _)| *of == replica);
                    match (reused, held) {
                        (true, _) => Some(Pattern::TokenReused),
                        (_, true) => Some(Pattern::GiveUpNotReleased),
                        _ => None,
                    }
                }
                Request::Expire { id, .. } => {
                    expires.insert(call, id);
                    conflicted
                        .contains_key(&(replica, id))
                        .then_some(Pattern::ConflictRetried)
                }
                Request::DeadLetter { .. } => None,
            },
            EventKind::Answered { call, answer, .. } => {
                if let Some(id) = expires.remove(&call) {
                    match answer {
                        Answer::Expire(OutcomeView::AlreadyDone | OutcomeView::NotEligible) => {
                            conflicted.insert((replica, id), ());
                        }
                        Answer::Failed(Failure::Invalid) => {
                            given_up.insert((replica, id), ());
                        }
                        _ => {}
                    }
                }
                None
            }
            _ => None,
        };
        if let Some(pattern) = pattern {
            *found.entry(pattern).or_insert(0) += 1;
        }
    }
    found.extend(clock_patterns(run));
    found
}

/// The patterns of requests carrying the worker's clock as now: a transition's, and claims'
/// from a replica whose transitions carry none.
fn clock_patterns(run: &WorldRun<Reservations>) -> BTreeMap<Pattern, usize> {
    let (mut claims, mut transitions) = (BTreeMap::new(), BTreeMap::new());
    for event in common::kinds(run) {
        let (Some(replica), EventKind::Call { request, .. }) = (event.replica, event.kind) else {
            continue;
        };
        match request {
            Request::Claim { now: Some(_), .. } => *claims.entry(replica).or_insert(0) += 1,
            Request::Expire { now: Some(_), .. } => *transitions.entry(replica).or_insert(0) += 1,
            _ => {}
        }
    }
    let mut found = BTreeMap::new();
    let expired_by_clock: usize = transitions.values().sum();
    if expired_by_clock > 0 {
        found.insert(Pattern::WorkerNow, expired_by_clock);
    }
    let claims_only: usize = claims
        .iter()
        .filter(|(replica, _)| !transitions.contains_key(*replica))
        .map(|(_, count)| count)
        .sum();
    if claims_only > 0 {
        found.insert(Pattern::ClaimOnlyWorkerNow, claims_only);
    }
    found
}

/// Each defect's own pattern, and the scenario that shows it in its first seeds.
const OWN: &[(&str, Pattern, &str)] = &[
    ("unguarded-expire", Pattern::ExpireById, "expiry-steady"),
    (
        "read-then-write-claim",
        Pattern::ReadThenWrite,
        "expiry-steady",
    ),
    (
        "tokenless-release",
        Pattern::ReleaseWithoutToken,
        "expiry-steady",
    ),
    (
        "retry-everything",
        Pattern::ConflictRetried,
        "expiry-consume-race",
    ),
    ("worker-clock-now", Pattern::WorkerNow, "expiry-steady"),
    (
        "worker-clock-claim",
        Pattern::ClaimOnlyWorkerNow,
        "expiry-steady",
    ),
    ("token-per-worker", Pattern::TokenReused, "expiry-steady"),
    (
        "release-skipped-on-error",
        Pattern::GiveUpNotReleased,
        "expiry-transient-errors",
    ),
];

#[test]
fn each_defect_leaves_its_own_pattern_and_only_it_while_the_correct_worker_leaves_none() {
    assert_eq!(OWN.len(), DEFECTS.len());
    for &(name, own, scenario_name) in OWN {
        let scenario = scenario(scenario_name);
        let mut seen = BTreeMap::new();
        for seed in 0..4 {
            for (pattern, count) in patterns(&run(&scenario, &worker(name), seed)) {
                *seen.entry(pattern).or_insert(0) += count;
            }
        }
        assert!(
            seen.contains_key(&own),
            "{name} never showed {own:?} in {scenario_name}"
        );
        assert_eq!(seen.len(), 1, "{name} showed other patterns too: {seen:?}");
    }
    for name in scenario_names() {
        for seed in 0..3 {
            let found = patterns(&run(&scenario(&name), &worker("correct"), seed));
            assert!(
                found.is_empty(),
                "the correct worker in {name} seed {seed}: {found:?}"
            );
        }
    }
}
