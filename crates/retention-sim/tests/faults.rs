//! Each fault the scenario envelope offers actually happens, and runs are deterministic.

use std::rc::Rc;

use leasesim_events::Stamped;
use leasesim_retention::events::{Applied, Event, EventKind, Note, OpKind, Phase};
use leasesim_retention::{WorkerFactory, correct_worker, parse_scenario};
use leasesim_rt::SimConfig;
use leasesim_sim::simulate;

const BASE: &str = "description = \"fault test\"\nsystem = \"retention\"\nreplicas = 3\nduration_ms = 20_000\nliveness_ms = 10_000\n";

/// Slow deletes keep terms long enough for renewals, revocations and pauses to meet a leader.
const SLOW: &str = "[latency]\ndelete = [50, 150]\n";

fn run(extra: &str, seed: u64) -> Vec<Stamped<Event>> {
    run_with(extra, "", seed)
}

fn run_with(extra: &str, store_extra: &str, seed: u64) -> Vec<Stamped<Event>> {
    let text =
        format!("{BASE}{extra}\n[store]\nrows = 3_000\ncreated_to_ms = 20_000\n{store_extra}");
    let scenario = Rc::new(parse_scenario("t", "t.toml", &text).unwrap_or_else(|e| panic!("{e}")));
    let factory: Rc<WorkerFactory> = Rc::new(correct_worker);
    let run = simulate(&scenario, &factory, SimConfig::seeded(seed), true, None);
    assert!(run.outcome.is_completed(), "{:?}", run.outcome);
    run.events
}

fn count(events: &[Stamped<Event>], matches: impl Fn(&EventKind) -> bool) -> usize {
    events.iter().filter(|e| matches(&e.event.kind)).count()
}

#[test]
fn rejections_happen_and_only_in_the_safety_phase() {
    let extra = format!(
        "{SLOW}[faults.reject]\nrenew = 0.5\ndelete = 0.3\n[worker]\nrenew_every_ms = 200\n"
    );
    let events = run(&extra, 1);
    let liveness_at = events
        .iter()
        .find(|e| e.event.kind == EventKind::Phase(Phase::Liveness))
        .map(|e| e.at_ms)
        .unwrap();
    let rejected: Vec<_> = events
        .iter()
        .filter(|e| matches!(e.event.kind, EventKind::Rejected { .. }))
        .collect();
    assert!(rejected.iter().any(|e| matches!(
        e.event.kind,
        EventKind::Rejected {
            op: OpKind::Renew,
            ..
        }
    )));
    assert!(rejected.iter().any(|e| matches!(
        e.event.kind,
        EventKind::Rejected {
            op: OpKind::Delete,
            ..
        }
    )));
    assert!(
        rejected.iter().all(|e| e.at_ms < liveness_at + 100),
        "faults are healed in liveness"
    );
}

#[test]
fn lost_replies_follow_an_apply() {
    let events = run("[faults.reply_lost]\ndelete = 0.3\n", 2);
    let lost: Vec<u64> = events
        .iter()
        .filter_map(|e| match e.event.kind {
            EventKind::ReplyLost { call } => Some(call),
            _ => None,
        })
        .collect();
    assert!(!lost.is_empty());
    for call in lost {
        assert_eq!(
            count(
                &events,
                |k| matches!(k, EventKind::Applied { call: c, .. } if *c == call)
            ),
            1
        );
    }
}

#[test]
fn revocations_pauses_and_clock_jumps_happen() {
    let events = run(
        &format!(
            "{SLOW}[faults.revoke]\nprobability = 0.9\nevery_ms = [500, 1000]\n\
         [faults.pause]\nprobability = 0.9\nevery_ms = [500, 1000]\nduration_ms = [100, 500]\n\
         [clocks.jump]\nprobability = 0.9\nevery_ms = [500, 1000]\nby_ms = [-100, 100]\n"
        ),
        3,
    );
    assert!(
        count(&events, |k| matches!(
            k,
            EventKind::Note(Note::Revoked { .. })
        )) > 0
    );
    let paused = count(&events, |k| matches!(k, EventKind::Paused { .. }));
    assert!(paused > 0);
    assert_eq!(paused, count(&events, |k| matches!(k, EventKind::Resumed)));
    assert!(count(&events, |k| matches!(k, EventKind::ClockJumped { .. })) > 0);
}

#[test]
fn long_pauses_let_a_rival_take_over_an_expired_lease() {
    let extra = "[lease]\nttl_ms = 1000\n[worker]\nrenew_every_ms = 300\n[schedule]\nrun_every_ms = [10, 100]\n\
                 [faults.pause]\nprobability = 0.8\nevery_ms = [200, 800]\nduration_ms = [1500, 3000]\n";
    let took_over = (0..5u64)
        .filter(|&seed| {
            let events = run(extra, seed);
            count(&events, |k| {
                matches!(
                    k,
                    EventKind::Applied {
                        applied: Applied::Granted {
                            replaced: Some(_),
                            ..
                        },
                        ..
                    }
                )
            }) > 0
        })
        .count();
    assert!(
        took_over >= 4,
        "a rival took over in only {took_over} of 5 seeds"
    );
}

fn stop_lands_during(at: &str, op: OpKind) -> usize {
    let extra = format!(
        "[latency]\nacquire = [20, 80]\nrenew = [20, 80]\ndelete = [20, 80]\n\
         [worker]\nrenew_every_ms = 100\n\
         [stop]\nat = \"{at}\"\nreplicas = 3\nwindow_ms = [0, 15000]\ndelay_ms = [0, 5]\n"
    );
    (0..10u64)
        .filter(|&seed| {
            let events = run(&extra, seed);
            // Replay the stream: was a call of `op` in flight for r1 when its stop was called?
            let mut open = std::collections::BTreeMap::new();
            for e in &events {
                if e.event.replica != Some(leasesim_events::ReplicaId(0)) {
                    continue;
                }
                match e.event.kind {
                    EventKind::Call { call, request } => {
                        open.insert(call, request.op());
                    }
                    EventKind::Answered { call, .. } => {
                        open.remove(&call);
                    }
                    EventKind::StopCalled => return open.values().any(|&o| o == op),
                    _ => {}
                }
            }
            false
        })
        .count()
}

#[test]
fn stops_land_during_the_named_operation_in_most_seeds() {
    assert!(stop_lands_during("acquire", OpKind::Acquire) >= 8);
    assert!(stop_lands_during("delete", OpKind::Delete) >= 8);
    assert!(stop_lands_during("renew", OpKind::Renew) >= 6);
}

#[test]
fn fencing_off_lets_stale_deletes_apply() {
    let extra = format!(
        "{SLOW}[lease]\nttl_ms = 1000\n[worker]\nrenew_every_ms = 300\n[schedule]\nrun_every_ms = [10, 100]\n\
         [faults.pause]\nprobability = 0.8\nevery_ms = [200, 800]\nduration_ms = [1500, 3000]\n"
    );
    let tally = |store_extra: &str, wanted: fn(&Applied) -> bool| {
        (0..5u64)
            .map(|seed| {
                count(
                    &run_with(&extra, store_extra, seed),
                    |k| matches!(k, EventKind::Applied { applied, .. } if wanted(applied)),
                )
            })
            .sum::<usize>()
    };
    let stale = |a: &Applied| {
        matches!(
            a,
            Applied::Deleted {
                token_current: false,
                ..
            }
        )
    };
    let refused = |a: &Applied| matches!(a, Applied::DeleteRefused { .. });
    assert_eq!(
        tally("", stale),
        0,
        "a fenced store never applies a stale delete"
    );
    assert!(
        tally("", refused) > 0,
        "the fenced store refused stale deletes"
    );
    assert!(
        tally("fencing = false\n", stale) > 0,
        "without fencing stale deletes apply"
    );
    assert_eq!(tally("fencing = false\n", refused), 0);
}

#[test]
fn same_seed_same_events_different_seed_different_events() {
    let extra = "[faults.reject]\nrenew = 0.2\n[faults.pause]\nprobability = 0.5\n";
    let a = run(extra, 9);
    let b = run(extra, 9);
    assert_eq!(a, b);
    assert_ne!(a, run(extra, 10));
}

/// The short answers of a run: (applied event, held back rows), with the limit of the delete.
fn short_answers(events: &[Stamped<Event>]) -> Vec<(u64, u32, u32, u32)> {
    let limit_of = |call: u64| {
        events.iter().find_map(|e| match e.event.kind {
            EventKind::Call {
                call: sent,
                request: leasesim_retention::events::Request::Delete { limit, .. },
            } if sent == call => Some(limit),
            _ => None,
        })
    };
    events
        .iter()
        .filter_map(|e| match e.event.kind {
            EventKind::Applied {
                call,
                applied:
                    Applied::Deleted {
                        rows, held_back, ..
                    },
            } if held_back > 0 => Some((e.at_ms, rows, held_back, limit_of(call)?)),
            _ => None,
        })
        .collect()
}

#[test]
fn short_answers_hold_rows_back_within_the_limit_and_only_in_the_safety_phase() {
    let events = run(&format!("{SLOW}[faults]\nshort_delete = 0.5\n"), 4);
    let liveness_at = events
        .iter()
        .find(|e| e.event.kind == EventKind::Phase(Phase::Liveness))
        .map(|e| e.at_ms)
        .unwrap();
    let shorts = short_answers(&events);
    assert!(shorts.len() >= 3, "{shorts:?}");
    for (at_ms, rows, held_back, limit) in shorts {
        assert!(
            at_ms < liveness_at,
            "a short answer after healing at t={at_ms}ms"
        );
        assert!(
            rows < limit,
            "a short answer removes fewer rows than its limit"
        );
        assert!(
            rows + held_back <= limit,
            "it holds back rows within the limit"
        );
    }
    assert!(short_answers(&run(SLOW, 4)).is_empty(), "off by default");
}
