//! Every fault of the envelope really strikes: the shared ones (rejections and lost replies
//! per operation, pauses, clock jumps, stops) and the system's own (store timeouts, malformed
//! records, kills), each seen in the events of its scenario.

mod common;

use std::collections::BTreeSet;

use common::{kinds, run, scenario, worker};
use leasesim_events::OpSet;
use leasesim_reservations::events::{Applied, EventKind, Note, Op, Request};

/// What a run's events show of the faults.
fn faults_seen(scenario_name: &str, seeds: u64) -> BTreeSet<String> {
    let scenario = scenario(scenario_name);
    let mut seen = BTreeSet::new();
    let mut calls = std::collections::BTreeMap::new();
    for seed in 0..seeds {
        let run = run(&scenario, &worker("correct"), seed);
        for event in kinds(&run) {
            let fault = match event.kind {
                EventKind::Call { call, request } => {
                    calls.insert(call, request.op());
                    continue;
                }
                EventKind::Rejected { op, .. } => format!("reject {}", op.name()),
                EventKind::ReplyLost { call } => {
                    format!(
                        "reply-lost {}",
                        calls.get(&call).map_or("?", |op: &Op| op.name())
                    )
                }
                EventKind::Applied {
                    applied: Applied::StoreTimeout,
                    ..
                } => "store-timeout".into(),
                EventKind::Applied {
                    applied: Applied::Invalid { .. },
                    ..
                } => "malformed".into(),
                EventKind::Note(Note::Killed) => "kill".into(),
                EventKind::Paused { .. } => "pause".into(),
                EventKind::ClockJumped { .. } => "clock-jump".into(),
                EventKind::StopCalled => "stop".into(),
                _ => continue,
            };
            seen.insert(fault);
        }
        calls.clear();
    }
    seen
}

#[test]
fn every_fault_of_the_transient_scenario_strikes() {
    let seen = faults_seen("expiry-transient-errors", 4);
    for fault in [
        "reject claim",
        "reject expire",
        "reject release",
        "reply-lost expire",
        "store-timeout",
        "malformed",
    ] {
        assert!(seen.contains(fault), "{fault} never struck: {seen:?}");
    }
    assert!(
        !seen.contains("kill") && !seen.contains("pause"),
        "{seen:?}"
    );
}

#[test]
fn kills_pauses_jumps_and_stops_strike_in_their_scenarios() {
    assert!(faults_seen("expiry-killed-worker", 2).contains("kill"));
    assert!(faults_seen("expiry-claim-takeover", 2).contains("pause"));
    assert!(faults_seen("expiry-clock-skew", 2).contains("clock-jump"));
    assert!(faults_seen("expiry-stop-anywhere", 2).contains("stop"));
    let steady = faults_seen("expiry-steady", 4);
    assert_eq!(
        steady,
        BTreeSet::from(["stop".to_string()]),
        "only the shutdown stops"
    );
}

#[test]
fn a_kill_lands_after_an_expired_answer_and_before_any_release_of_that_claim() {
    let scenario = scenario("expiry-killed-worker");
    let run = run(&scenario, &worker("correct"), 0);
    let events: Vec<_> = kinds(&run).collect();
    let killed: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind == EventKind::Note(Note::Killed))
        .map(|(at, _)| at)
        .collect();
    assert!(!killed.is_empty(), "no kill in seed 0");
    for at in killed {
        let replica = events[at].replica;
        let before = events[..at]
            .iter()
            .rev()
            .find(|e| e.replica == replica && matches!(e.kind, EventKind::Answered { .. }))
            .expect("an answer before the kill");
        assert!(
            matches!(before.kind, EventKind::Answered { op: Op::Expire, .. }),
            "{before:?}"
        );
        let next = events[at + 1..].iter().find(|e| {
            e.replica == replica && matches!(e.kind, EventKind::Call { .. } | EventKind::Note(_))
        });
        assert!(
            !matches!(
                next.map(|e| e.kind),
                Some(EventKind::Call {
                    request: Request::Release { .. },
                    ..
                })
            ),
            "a killed process sent its release: {next:?}"
        );
    }
}
