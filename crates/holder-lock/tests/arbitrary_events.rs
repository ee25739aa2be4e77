//! Checkers and coverage fed arbitrary event streams: they never panic, and every report is
//! well formed (its invariant, an event of the stream, earlier context only, a sentence).
//!
//! Terminology:
//! - *stream*: a random sequence over a small vocabulary (3 replicas, 8 call ids, 4 tokens,
//!   both keys, world and replica events mixed), so that calls, answers, attempts, jobs and
//!   claims collide often, and events arrive that no run would emit (a replica note from the
//!   world, an answer to a call never sent, an attempt ending twice).

use leasesim_events::{EPOCH_MS, NetFailure, ReplicaId, Stamped};
use leasesim_holder_lock::checkers::{CheckConfig, Coverage, Facts, Invariant, checker_set};
use leasesim_holder_lock::events::{
    Answer, Applied, EndKind, Event, EventKind, Forgetting, Held, Key, Note, Op, Phase,
    ReleaseKind, Request,
};
use leasesim_invariants::{Checker, Facts as _};
use proptest::prelude::*;

fn key() -> impl Strategy<Value = Key> {
    prop_oneof![Just(Key::Claim), Just(Key::Holder)]
}

fn held() -> impl Strategy<Value = Option<Held>> {
    prop::option::of((1u64..5, 0u16..3).prop_map(|(token, r)| Held {
        token,
        by: ReplicaId(r),
    }))
}

fn request() -> impl Strategy<Value = Request> {
    (0u8..6, key(), 1u64..5).prop_map(|(op, key, token)| match op {
        0 => Request::Create {
            key,
            token,
            lifetime_ms: 1_000,
        },
        1 => Request::Renew {
            key,
            token,
            lifetime_ms: 1_000,
        },
        2 => Request::DeleteIfHolder { key, token },
        3 => Request::Get { key },
        4 => Request::Delete { key },
        _ => Request::Set {
            key,
            token,
            lifetime_ms: 1_000,
        },
    })
}

fn applied() -> impl Strategy<Value = Applied> {
    (0u8..9, key(), 1u64..5, 0u64..4_000, held()).prop_map(|(kind, key, token, at, held)| {
        let expires_at_ms = EPOCH_MS + at;
        match kind {
            0 => Applied::Created {
                key,
                token,
                expires_at_ms,
                took_over: held,
            },
            1 => Applied::Exists {
                key,
                held: held.unwrap_or(Held {
                    token,
                    by: ReplicaId(0),
                }),
            },
            2 => Applied::Renewed {
                key,
                token,
                expires_at_ms,
            },
            3 => Applied::RenewRefused { key, held },
            4 => Applied::Deleted {
                key,
                removed: held.unwrap_or(Held {
                    token,
                    by: ReplicaId(1),
                }),
            },
            5 => Applied::NotDeleted { key, held },
            6 => Applied::Unsupported { key },
            7 => Applied::Read { key, held },
            _ => Applied::Written {
                key,
                token,
                expires_at_ms,
                replaced: held,
            },
        }
    })
}

fn answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        Just(Answer::Created),
        Just(Answer::Exists),
        Just(Answer::Renewed),
        Just(Answer::Deleted),
        Just(Answer::NotHolder),
        Just(Answer::Absent),
        (1u64..5).prop_map(Answer::Value),
        Just(Answer::Written),
        Just(Answer::Unsupported),
        Just(Answer::Failed(NetFailure::Timeout)),
    ]
}

fn note() -> impl Strategy<Value = Note> {
    (0u8..10, 1u32..4, 0u64..3, held()).prop_map(|(kind, n, gone, held)| match kind {
        0 => Note::AttemptStarted { attempt: n },
        1 => Note::AttemptEnded {
            attempt: n,
            end: [EndKind::JobDone, EndKind::NotHolder, EndKind::Stopped][n as usize % 3],
            release: [
                ReleaseKind::Deleted,
                ReleaseKind::GoneForeign,
                ReleaseKind::None,
            ][gone as usize],
            claims_gone: gone,
            renewals: n - 1,
        },
        2 => Note::JobStarted {
            duration_ms: 500,
            steps: n,
        },
        3 => Note::JobStep { step: n },
        4 => Note::JobFinished { steps: n },
        5 => Note::JobFailed { step: n },
        6 => Note::Forgot {
            key: [Key::Claim, Key::Holder][n as usize % 2],
            cause: Forgetting::ALL[gone as usize],
            lost: held,
        },
        7 => Note::Reverted {
            key: Key::Claim,
            held: held.unwrap_or(Held {
                token: 1,
                by: ReplicaId(0),
            }),
            expires_at_ms: EPOCH_MS + 1_000 * u64::from(n),
        },
        8 => Note::SlowTimer {
            drift_ppm: -50_000 * i64::from(n),
        },
        _ => Note::Expired {
            key: Key::Claim,
            held: held.unwrap_or(Held {
                token: 1,
                by: ReplicaId(0),
            }),
        },
    })
}

fn kind() -> impl Strategy<Value = EventKind> {
    let call = 1u64..9;
    prop_oneof![
        (call.clone(), request()).prop_map(|(call, request)| EventKind::Call { call, request }),
        (call.clone(), applied()).prop_map(|(call, applied)| EventKind::Applied { call, applied }),
        (call.clone(), answer()).prop_map(|(call, answer)| EventKind::Answered {
            call,
            op: Op::Create,
            answer,
        }),
        call.clone().prop_map(|call| EventKind::ReplyLost { call }),
        call.prop_map(|call| EventKind::RequestLost {
            call,
            op: Op::Renew,
        }),
        note().prop_map(EventKind::Note),
        Just(EventKind::StopCalled),
        Just(EventKind::StopResolved),
        Just(EventKind::Restarted),
        (0u64..4_000).prop_map(|until_ms| EventKind::Paused { until_ms }),
        Just(EventKind::Phase(Phase::Liveness)),
    ]
}

fn stream() -> impl Strategy<Value = Vec<Stamped<Event>>> {
    let event = (prop::option::of(0u16..3), kind(), 0u64..200);
    prop::collection::vec(event, 1..80).prop_map(|events| {
        let mut at_ms = 0;
        events
            .into_iter()
            .enumerate()
            .map(|(seq, (replica, kind, advance))| {
                at_ms += advance;
                Stamped {
                    seq: seq as u64,
                    at_ms,
                    event: Event {
                        replica: replica.map(ReplicaId),
                        kind,
                    },
                }
            })
            .collect()
    })
}

proptest! {
    #[test]
    fn no_checker_panics_and_every_report_is_well_formed(
        events in stream(),
        renewal in any::<bool>(),
    ) {
        let config = CheckConfig {
            renewal,
            attempt_bound_ms: 1_500,
            trusted_ms: 400,
            drift_ppm: vec![0, -50_000],
        };
        let mut coverage = Coverage::new();
        events.iter().for_each(|event| coverage.on_event(event));
        for invariant in Invariant::ALL {
            let mut set = checker_set(&config, &[invariant]);
            let mut found = None;
            for event in &events {
                if set.on_event(event) == leasesim_events::Flow::Halt {
                    found = set.take_violation();
                    break;
                }
            }
            let end_ms = events.last().map_or(0, |e| e.at_ms) + 10_000;
            let found = found.or_else(|| set.finish(end_ms).cloned());
            if let Some(violation) = found {
                prop_assert_eq!(violation.invariant, invariant);
                prop_assert!(events.iter().any(|e| e.seq == violation.event.seq));
                prop_assert!(violation.context.iter().all(|c| c.seq < violation.event.seq));
                prop_assert!(!violation.sentence.is_empty());
            }
            // The checker alone, with facts of its own that see every event.
            let mut lone = leasesim_holder_lock::checkers::AnyChecker::new(invariant, &config);
            let mut facts = Facts::default();
            for event in &events {
                facts.enter(event);
                if lone.wants(&event.event.kind) {
                    let _ = lone.on_event(event, &facts);
                }
                facts.leave(event);
            }
        }
    }
}
