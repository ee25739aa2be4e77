//! Checkers and coverage fed arbitrary event streams: the set's verdict is its checkers'
//! earliest verdict alone, every report is well formed, and coverage never panics
//! (`leasesim_invariants::testkit`).
//!
//! Terminology:
//! - *stream*: a random sequence over a small vocabulary (3 replicas, 8 call ids, 3 items, 4
//!   tokens, two keys per item, world and replica events mixed), so that claims, writes,
//!   answers, passes and stops collide often, and events arrive that no run would emit (an
//!   answer to a call never sent, a write of an item never claimed, a pass ending twice, a
//!   replica's note from the world).

use leasesim_events::{EPOCH_MS, NetFailure, ReplicaId, Stamped};
use leasesim_invariants::testkit::{Feed, arbitrary_streams};
use leasesim_invariants::{ConstructionFinding, ConstructionProblem};
use leasesim_work_items::checkers::{AnyChecker, CheckConfig, Coverage, Invariant};
use leasesim_work_items::events::{
    Answer, Applied, EndKind, ErrorCode, Event, EventKind, ItemState, ItemView, Key, LeaseView,
    LookupView, Mark, Note, Op, OpenItem, PassCounts, Phase, Prior, ProviderView, Request,
    StatusView,
};
use proptest::prelude::*;

/// A few values of each field, so that the same item, token and key recur.
#[derive(Clone, Copy, Debug)]
struct Pick {
    item: u32,
    token: u64,
    n: u32,
    at_ms: u64,
    flag: bool,
}

fn pick() -> impl Strategy<Value = Pick> {
    (0u32..3, 1u64..5, 0u32..3, 0u64..4_000, any::<bool>()).prop_map(
        |(item, token, n, at_ms, flag)| Pick {
            item,
            token,
            n,
            at_ms,
            flag,
        },
    )
}

fn key(p: Pick) -> Key {
    Key {
        item: p.item,
        salt: u32::from(p.flag),
    }
}

fn error(p: Pick) -> ErrorCode {
    [
        ErrorCode::Rejected(Op::Apply),
        ErrorCode::Timeout(Op::Provider),
        ErrorCode::ProviderRefused,
        ErrorCode::Stopped,
    ][p.n as usize % 4]
}

fn state(p: Pick) -> ItemState {
    [
        ItemState::Pending,
        ItemState::Claimed,
        ItemState::Released,
        ItemState::Done,
        ItemState::Failed,
    ][(p.n as usize + usize::from(p.flag)) % 5]
}

fn request(kind: u8, p: Pick) -> Request {
    let (item, token, now_ms) = (p.item, p.token, EPOCH_MS + p.at_ms);
    match kind {
        0 => Request::Find {
            after: p.flag.then_some(item),
        },
        1 => Request::Claim {
            item,
            lease_ms: 1_000,
            now_ms,
        },
        2 => Request::Renew {
            item,
            token,
            lease_ms: 1_000,
            now_ms,
        },
        3 => Request::Apply {
            item,
            token,
            chunk: p.n,
            now_ms,
        },
        4 => Request::Done {
            item,
            token,
            now_ms,
        },
        5 => Request::Release {
            item,
            token,
            error: error(p),
            now_ms,
        },
        6 => Request::Fail {
            item,
            token,
            error: error(p),
            now_ms,
        },
        7 => Request::Status,
        8 => Request::ProviderApply { item, key: key(p) },
        9 => Request::Lookup { key: key(p) },
        10 => Request::PlainClaim {
            item,
            lease_ms: 1_000,
            now_ms,
        },
        11 => Request::UnguardedApply {
            item,
            token,
            chunk: p.n,
            now_ms,
        },
        _ => Request::UnguardedDone {
            item,
            token,
            now_ms,
        },
    }
}

fn prior(p: Pick) -> Prior {
    match p.n {
        0 => Prior::Fresh,
        1 if p.flag => Prior::Released { token: p.token },
        1 => Prior::Expired { token: p.token },
        _ if p.flag => Prior::Held { token: p.token },
        _ => Prior::Closed {
            token: p.token,
            state: state(p),
        },
    }
}

fn status(p: Pick) -> StatusView {
    StatusView {
        open: p.n,
        done: p.item,
        failed: u32::from(p.flag),
    }
}

fn applied(kind: u8, p: Pick) -> Applied {
    let (item, token, expires_at_ms) = (p.item, p.token, EPOCH_MS + p.at_ms);
    let live = p.flag.then_some(token.saturating_sub(1).max(1));
    match kind {
        0 => Applied::Found {
            item: p.flag.then_some(item),
        },
        1 => Applied::Claimed {
            item,
            token,
            expires_at_ms,
            attempt: p.n + 1,
            chunks: p.n + 1,
            prior: prior(p),
        },
        2 => Applied::Busy { item, token },
        3 => Applied::Closed {
            item,
            state: state(p),
        },
        4 => Applied::Renewed {
            item,
            token,
            expires_at_ms,
        },
        5 => Applied::ChunkApplied {
            item,
            token,
            chunk: p.n,
            fresh: p.flag,
            live,
        },
        6 => Applied::Marked {
            item,
            token,
            mark: [Mark::Done, Mark::Released, Mark::Failed][p.n as usize % 3],
            repeat: p.flag,
            live,
        },
        7 => Applied::LeaseLost { item, token, live },
        8 => Applied::Status(status(p)),
        9 => Applied::ProviderApplied { item, key: key(p) },
        10 => Applied::ProviderDuplicate { item, key: key(p) },
        11 => Applied::ProviderRefused { item, key: key(p) },
        _ => Applied::LookedUp {
            key: key(p),
            found: [
                LookupView::Applied,
                LookupView::Refused,
                LookupView::Unknown,
            ][p.n as usize % 3],
        },
    }
}

fn answer(kind: u8, p: Pick) -> (Op, Answer) {
    match kind {
        0 => (Op::Find, Answer::Found(p.flag.then_some(p.item))),
        1 => (
            Op::Claim,
            Answer::Claimed(LeaseView {
                item: p.item,
                token: p.token,
                expires_at_ms: EPOCH_MS + p.at_ms,
                attempt: p.n + 1,
                chunks: p.n + 1,
            }),
        ),
        2 => (Op::Claim, Answer::Busy),
        3 => (Op::Claim, Answer::Closed),
        4 => (
            Op::Renew,
            Answer::Renewed {
                expires_at_ms: EPOCH_MS + p.at_ms,
            },
        ),
        5 => (Op::Apply, Answer::Applied { fresh: p.flag }),
        6 => (
            [Op::Done, Op::Release, Op::Fail][p.n as usize % 3],
            Answer::Ok,
        ),
        7 => (
            [Op::Apply, Op::Done, Op::Renew][p.n as usize % 3],
            Answer::LeaseLost,
        ),
        8 => (Op::Status, Answer::Status(status(p))),
        9 => (
            Op::Provider,
            Answer::Provider(
                [
                    ProviderView::Applied,
                    ProviderView::Duplicate,
                    ProviderView::Refused,
                ][p.n as usize % 3],
            ),
        ),
        10 => (
            Op::Lookup,
            Answer::Lookup([LookupView::Applied, LookupView::Unknown][usize::from(p.flag)]),
        ),
        _ => (
            [Op::Provider, Op::Apply, Op::Claim][p.n as usize % 3],
            Answer::Failed([NetFailure::Rejected, NetFailure::Timeout][usize::from(p.flag)]),
        ),
    }
}

fn note(kind: u8, p: Pick) -> Note {
    let counts = PassCounts {
        done: p.n,
        failed: u32::from(p.flag),
        released: p.item,
        lost: p.n % 2,
        abandoned: 0,
    };
    match kind % 4 {
        0 => Note::PassStarted { pass: p.n + 1 },
        3 => Note::Construction(ConstructionFinding {
            rule: "backoff-positive",
            problem: ConstructionProblem::EdgeRefused,
        }),
        1 => Note::PassEnded {
            pass: p.n + 1,
            end: [
                EndKind::StoppedBeforeStart,
                EndKind::Complete,
                EndKind::Idle,
                EndKind::Deadline,
                EndKind::Stopped,
                EndKind::Unavailable,
                EndKind::AlreadyRunning,
            ][(p.token as usize + p.n as usize) % 7],
            counts,
            status: p.flag.then(|| status(p)),
        },
        _ => Note::Tally {
            status: status(p),
            first_open: p.flag.then_some(OpenItem {
                item: p.item,
                view: ItemView {
                    state: state(p),
                    token: p.token,
                    expires_at_ms: EPOCH_MS + p.at_ms,
                },
            }),
        },
    }
}

fn kind() -> impl Strategy<Value = EventKind> {
    (0u8..9, 0u8..13, 1u64..9, pick()).prop_map(|(family, kind, call, p)| match family {
        0 | 1 => EventKind::Call {
            call,
            request: request(kind, p),
        },
        2 | 3 => EventKind::Applied {
            call,
            applied: applied(kind, p),
        },
        4 | 5 => {
            let (op, answer) = answer(kind, p);
            EventKind::Answered { call, op, answer }
        }
        6 => EventKind::Note(note(kind, p)),
        7 => [
            EventKind::ReplyLost { call },
            EventKind::Rejected {
                call,
                op: Op::Provider,
            },
            EventKind::StopCalled,
            EventKind::StopResolved,
            EventKind::Restarted,
            EventKind::RequestLost {
                call,
                op: Op::Apply,
            },
        ][kind as usize % 6],
        _ => [
            EventKind::Phase(Phase::Liveness),
            EventKind::Phase(Phase::Shutdown),
            EventKind::Paused { until_ms: p.at_ms },
            EventKind::Resumed,
            EventKind::ClockRead {
                now_ms: EPOCH_MS + p.at_ms,
            },
        ][kind as usize % 5],
    })
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
    for max_attempts in 1u32..4 {
        let config = CheckConfig {
            max_attempts,
            max_retries: 1,
            renew_every_ms: 1_000,
            deadline_ms: 5_000,
            backoff_ms: 50,
            backoff_cap_ms: 400,
        };
        let tally = arbitrary_streams(128, stream(), Feed::Wanted, |invariant| {
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
