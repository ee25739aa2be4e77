//! Each fault of the envelope happens where a scenario switches it on, and the world's side
//! keeps its word: a job is held by its replica's pauses, its steps add up to its length,
//! lifetimes end at their instant, a key the store forgot is gone at once, slow timers are
//! noted, fresh tokens never repeat, and the same seed gives the same run.

use std::collections::BTreeSet;
use std::rc::Rc;

use leasesim_events::{EPOCH_MS, ReplicaId, Stamped};
use leasesim_holder_lock::events::{
    Applied, Event, EventKind, Forgetting, Key, Note, Phase, Request,
};
use leasesim_holder_lock::{WorkerFactory, correct_worker, parse_scenario};
use leasesim_rt::SimConfig;
use leasesim_sim::simulate;

const BASE: &str = "description = \"fault test\"\nsystem = \"holder-lock\"\nreplicas = 3\nduration_ms = 20_000\nliveness_ms = 10_000\n";

fn run(extra: &str, seed: u64) -> (Vec<Stamped<Event>>, u64) {
    let text = format!("{BASE}{extra}");
    let scenario = Rc::new(parse_scenario("t", "t.toml", &text).unwrap_or_else(|e| panic!("{e}")));
    let factory: Rc<WorkerFactory> = Rc::new(correct_worker);
    let run = simulate(&scenario, &factory, SimConfig::seeded(seed), true, None);
    assert!(run.outcome.is_completed(), "{:?}", run.outcome);
    (run.events, run.trace_hash)
}

fn count(events: &[Stamped<Event>], matches: impl Fn(&EventKind) -> bool) -> usize {
    events.iter().filter(|e| matches(&e.event.kind)).count()
}

fn liveness_at(events: &[Stamped<Event>]) -> u64 {
    events
        .iter()
        .find(|e| e.event.kind == EventKind::Phase(Phase::Liveness))
        .map(|e| e.at_ms)
        .expect("a liveness phase")
}

#[test]
fn network_faults_and_job_failures_happen_and_only_in_the_safety_phase() {
    let faults = "[faults.reject]\ncreate = 0.3\nrenew = 0.3\ndelete_if_holder = 0.3\n\
                  [faults.reply_lost]\ncreate = 0.2\nrenew = 0.2\n[faults]\njob_fail = 0.1\n";
    let (events, _) = run(faults, 3);
    let healed_ms = liveness_at(&events);
    let rejected = count(&events, |k| matches!(k, EventKind::Rejected { .. }));
    let lost = count(&events, |k| matches!(k, EventKind::ReplyLost { .. }));
    let failed = count(&events, |k| {
        matches!(k, EventKind::Note(Note::JobFailed { .. }))
    });
    assert!(
        rejected > 5 && lost > 2 && failed > 0,
        "{rejected} {lost} {failed}"
    );
    let late = events
        .iter()
        .filter(|e| e.at_ms > healed_ms + 1_000)
        .any(|e| {
            matches!(
                e.event.kind,
                EventKind::Rejected { .. }
                    | EventKind::ReplyLost { .. }
                    | EventKind::Note(Note::JobFailed { .. })
            )
        });
    assert!(!late, "a fault struck after healing");
}

#[test]
fn a_paused_replicas_job_takes_no_step_and_a_rival_claims_after_its_lifetime() {
    let pauses = "[claim]\nlifetime_ms = 2_000\nrenew_every_ms = 500\n[job]\nduration_ms = [2_000, 4_000]\n\
                  [faults.pause]\nprobability = 0.7\nevery_ms = [500, 1_500]\nduration_ms = [2_500, 4_000]\n";
    let mut took_over = 0;
    for seed in 0..5 {
        let (events, _) = run(pauses, seed);
        let mut paused_until: Vec<u64> = vec![0; 3];
        for event in &events {
            let replica = event.event.replica.map(ReplicaId::index);
            match (replica, event.event.kind) {
                (Some(r), EventKind::Paused { until_ms }) => paused_until[r] = until_ms,
                (Some(r), EventKind::Note(Note::JobStep { .. })) => {
                    assert!(
                        event.at_ms >= paused_until[r],
                        "a step while paused: {event:?}"
                    );
                }
                _ => {}
            }
        }
        took_over += count(&events, |k| {
            matches!(
                k,
                EventKind::Applied {
                    applied: Applied::Created {
                        took_over: Some(_),
                        ..
                    },
                    ..
                }
            )
        });
    }
    assert!(
        took_over > 5,
        "rivals took over run-out claims {took_over} times"
    );
}

#[test]
fn lifetimes_end_at_their_instant_and_fresh_tokens_never_repeat() {
    let (events, _) = run(
        "[claim]\nrenew_every_ms = 0\n[job]\nduration_ms = [2_000, 5_000]\n",
        1,
    );
    let mut expiries = Vec::new();
    let mut tokens = BTreeSet::new();
    for event in &events {
        match event.event.kind {
            EventKind::Applied {
                applied: Applied::Created { expires_at_ms, .. },
                ..
            } => expiries.push(expires_at_ms - EPOCH_MS),
            EventKind::Note(Note::Expired {
                key: Key::Claim, ..
            }) => {
                assert!(
                    expiries.contains(&event.at_ms),
                    "an expiry at {}",
                    event.at_ms
                );
            }
            EventKind::Call {
                request: Request::Create { token, .. },
                ..
            } => assert!(tokens.insert(token), "token {token:#x} drawn twice"),
            _ => {}
        }
    }
    let ended = count(&events, |k| {
        matches!(k, EventKind::Note(Note::Expired { .. }))
    });
    assert!(
        ended > 3 && tokens.len() > 20,
        "{ended} expiries, {} tokens",
        tokens.len()
    );
}

#[test]
fn a_jobs_steps_add_up_to_its_drawn_length() {
    let (events, _) = run("[job]\nduration_ms = [500, 2_000]\nstep_ms = 300\n", 2);
    let mut started: Vec<Option<(u64, u64)>> = vec![None; 3];
    let mut checked = 0;
    for event in &events {
        let Some(r) = event.event.replica.map(ReplicaId::index) else {
            continue;
        };
        match event.event.kind {
            EventKind::Note(Note::JobStarted { duration_ms, .. }) => {
                started[r] = Some((event.at_ms, duration_ms));
            }
            EventKind::Note(Note::JobFinished { .. }) => {
                let (at_ms, duration_ms) = started[r].take().expect("a started job");
                assert_eq!(event.at_ms - at_ms, duration_ms, "{event:?}");
                checked += 1;
            }
            _ => {}
        }
    }
    assert!(checked > 5, "{checked} jobs");
}

/// The first apply on the claim key after `index`, if any.
fn next_claim_apply(events: &[Stamped<Event>], index: usize) -> Option<Applied> {
    events[index + 1..].iter().find_map(|e| match e.event.kind {
        EventKind::Applied { applied, .. } if claim_apply(&applied) => Some(applied),
        _ => None,
    })
}

fn claim_apply(applied: &Applied) -> bool {
    match *applied {
        Applied::Created { key, .. }
        | Applied::Exists { key, .. }
        | Applied::Renewed { key, .. }
        | Applied::RenewRefused { key, .. }
        | Applied::Deleted { key, .. }
        | Applied::NotDeleted { key, .. }
        | Applied::Unsupported { key }
        | Applied::Read { key, .. }
        | Applied::Written { key, .. } => key == Key::Claim,
    }
}

/// Finds nothing live: what the next apply on a key the store just emptied must say.
fn finds_nothing(applied: Applied) -> bool {
    matches!(
        applied,
        Applied::Created {
            took_over: None,
            ..
        } | Applied::RenewRefused { held: None, .. }
            | Applied::NotDeleted { held: None, .. }
            | Applied::Read { held: None, .. }
    )
}

#[test]
fn the_store_forgets_as_its_faults_say_at_their_instant_and_only_in_the_safety_phase() {
    let faults = "[faults.evict]\nprobability = 0.5\nevery_ms = [300, 900]\n\
                  [faults.failover]\nprobability = 0.5\nevery_ms = [300, 900]\n\
                  [faults.store_restart]\nprobability = 0.3\nevery_ms = [500, 1_500]\n";
    let (events, _) = run(faults, 4);
    let healed_ms = liveness_at(&events);
    let mut by_cause = [0; 3];
    for (index, event) in events.iter().enumerate() {
        let EventKind::Note(Note::Forgot { key, cause, lost }) = event.event.kind else {
            continue;
        };
        assert!(
            event.at_ms <= healed_ms,
            "a forgetting after healing: {event:?}"
        );
        assert_eq!(event.event.replica, None, "the store's own note");
        by_cause[cause.index()] += 1;
        let reverted = events
            .get(index + 1)
            .is_some_and(|e| matches!(e.event.kind, EventKind::Note(Note::Reverted { .. })));
        if key == Key::Claim && !reverted && lost.is_some() {
            let next = next_claim_apply(&events, index);
            assert!(
                next.is_none_or(finds_nothing),
                "after {event:?} the store still held something: {next:?}"
            );
        }
        if cause == Forgetting::Eviction {
            assert!(lost.is_some(), "an eviction takes a live claim");
        }
    }
    assert!(by_cause.iter().all(|&n| n >= 3), "by cause: {by_cause:?}");
}

#[test]
fn replicas_with_slow_timers_are_noted_once_at_the_start() {
    let (slow, _) = run("[clocks]\ndrift_ppm = [-100_000, -10_000]\n", 5);
    let noted: Vec<_> = slow
        .iter()
        .filter_map(|e| match e.event.kind {
            EventKind::Note(Note::SlowTimer { drift_ppm }) => Some((e.at_ms, drift_ppm)),
            _ => None,
        })
        .collect();
    assert_eq!(noted.len(), 3, "{noted:?}");
    assert!(
        noted
            .iter()
            .all(|&(at, ppm)| at == 0 && (-100_000..=-10_000).contains(&ppm))
    );
    let (fast, _) = run("[clocks]\ndrift_ppm = [0, 10_000]\n", 5);
    let none = count(&fast, |k| {
        matches!(k, EventKind::Note(Note::SlowTimer { .. }))
    });
    assert_eq!(none, 0);
}

#[test]
fn the_same_seed_gives_the_same_run_and_another_seed_another() {
    let text = "[faults.pause]\nprobability = 0.3\n[faults.failover]\nprobability = 0.5\n";
    let (first, hash) = run(text, 9);
    let (again, same) = run(text, 9);
    let (_, other) = run(text, 10);
    assert_eq!((first.len(), hash), (again.len(), same));
    assert_ne!(hash, other);
}
