//! Checkers and coverage fed arbitrary event streams: the set's verdict is its checkers'
//! earliest verdict alone, every report is well formed, and coverage never panics
//! (`leasesim_invariants::testkit`).
//!
//! Terminology:
//! - *stream*: a random sequence over a small vocabulary (3 replicas, 8 call ids, 4 tokens,
//!   both keys, world and replica events mixed), so that calls, answers, attempts, jobs and
//!   claims collide often, and events arrive that no run would emit (a replica note from the
//!   world, an answer to a call never sent, an attempt ending twice).

use leasesim_events::{EPOCH_MS, NetFailure, ReplicaId, Stamped};
use leasesim_holder_lock::checkers::{AnyChecker, CheckConfig, Coverage, Invariant};
use leasesim_holder_lock::events::{
    Answer, Applied, EndKind, Event, EventKind, Forgetting, Held, Key, Note, Op, Phase,
    ReleaseKind, Request,
};
use leasesim_invariants::testkit::{Feed, arbitrary_streams};
use leasesim_invariants::{ConstructionFinding, ConstructionProblem};
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
    (0u8..11, 1u32..4, 0u64..3, held()).prop_map(|(kind, n, gone, held)| match kind {
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
        9 => Note::Construction(ConstructionFinding {
            rule: "renewal-within-trust",
            problem: ConstructionProblem::PastAccepted,
        }),
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

#[test]
fn the_set_agrees_with_its_checkers_alone_and_every_report_is_well_formed() {
    for renewal in [false, true] {
        let config = CheckConfig {
            renewal,
            attempt_bound_ms: 1_500,
            trusted_ms: 400,
            drift_ppm: vec![0, -50_000],
        };
        // Fed as a set feeds them: `liveness` names the last event it read as a verdict's
        // event, so an unwanted event fed to it alone would move that.
        let tally = arbitrary_streams(256, stream(), Feed::Wanted, |invariant| {
            AnyChecker::new(invariant, &config)
        });
        // The generator reaches verdicts of most invariants, not only of one.
        assert!(tally.broken.len() >= Invariant::COUNT / 2, "{tally:?}");
    }
}

proptest! {
    #[test]
    fn coverage_takes_any_stream(events in stream()) {
        let mut coverage = Coverage::new();
        events.iter().for_each(|event| coverage.on_event(event));
    }
}
