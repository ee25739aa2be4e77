//! Checkers fed arbitrary event streams: they never panic, their reports are well formed, a
//! `CheckerSet` reports exactly the first violation its checkers would report one by one, each
//! fed every event (`leasesim_invariants::testkit`), and `Coverage` reaches exactly the
//! situations a naive reference finds in the stream.
//!
//! Terminology:
//! - *stream*: a random sequence over a small vocabulary (3 replicas, 8 call ids, 6 tokens),
//!   so that calls, answers and terms collide often.
//! - *first verdict*: the violation with the lowest event seq, ties broken by the contract's
//!   order of invariants; a violation found by `finish` comes after every event.
//! - *reference*: `reference_situations`, written from each situation's one-line description
//!   and nothing else: for every event it looks back over the whole stream for what it needs
//!   (quadratic, no state carried between events), where `Coverage` keeps running state.
//! - *open call*: a call a replica sent earlier whose answer it has not received since, and
//!   that no restart of that replica has forgotten.

use std::collections::BTreeSet;

use leasesim_invariants::testkit::{Feed, arbitrary_streams};
use leasesim_invariants::{ConstructionFinding, ConstructionProblem};
use leasesim_retention::checkers::{AnyChecker, CheckConfig, Coverage, Invariant, Situation};
use leasesim_retention::events::{
    Answer, Applied, EndKind, Event, EventKind, Failure, LeaseView, Note, OpKind, Phase, ReplicaId,
    Request, Stamped,
};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

fn config() -> CheckConfig {
    CheckConfig {
        batch_rows: 200,
        cap_rows: 1000,
        retention_ms: 1000,
        term_bound_ms: 3000,
    }
}

fn lease() -> impl Strategy<Value = LeaseView> {
    (1u64..7).prop_map(|token| LeaseView {
        token,
        expires_at_ms: 5000,
    })
}

fn request() -> impl Strategy<Value = Request> {
    prop_oneof![
        Just(Request::Acquire),
        lease().prop_map(|lease| Request::Renew { lease }),
        lease().prop_map(|lease| Request::Release { lease }),
        (0u64..3, 0u32..300, 1u64..7).prop_map(|(cutoff, limit, token)| Request::Delete {
            older_than_ms: cutoff * 1000,
            limit,
            token,
        }),
    ]
}

fn op() -> impl Strategy<Value = OpKind> {
    prop::sample::select(OpKind::ALL.to_vec())
}

fn answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        prop::option::of(lease()).prop_map(Answer::Lease),
        Just(Answer::Released),
        (0u32..300).prop_map(Answer::Rows),
        Just(Answer::Failed(Failure::Timeout)),
    ]
}

fn applied() -> impl Strategy<Value = Applied> {
    prop_oneof![
        (lease(), prop::option::of(1u64..7))
            .prop_map(|(lease, replaced)| Applied::Granted { lease, replaced }),
        lease().prop_map(|lease| Applied::Renewed { lease }),
        Just(Applied::RenewRefused),
        Just(Applied::FreedNothing),
        (0u32..300, any::<bool>(), prop::option::of(0u64..3000)).prop_map(
            |(rows, token_current, newest_created_ms)| Applied::Deleted {
                rows,
                token_current,
                current_token: Some(1),
                newest_created_ms,
                held_back: 0,
            }
        ),
        Just(Applied::DeleteRefused {
            current_token: None
        }),
    ]
}

fn kind() -> impl Strategy<Value = EventKind> {
    let call = 1u64..9;
    let phase = prop::sample::select(vec![
        Phase::Safety,
        Phase::Liveness,
        Phase::Shutdown,
        Phase::End,
    ]);
    let end = prop::sample::select(vec![
        EndKind::StoppedBeforeStart,
        EndKind::NotLeader,
        EndKind::CapReached,
        EndKind::Drained,
        EndKind::LostByNone,
        EndKind::LostByError,
        EndKind::Stopped,
        EndKind::FailedAcquire,
        EndKind::FailedDelete,
        EndKind::AlreadyRunning,
    ]);
    let ended = |(term, end)| EventKind::Note(Note::TermEnded { term, end, rows: 0 });
    let backlog = |remaining| {
        EventKind::Note(Note::Backlog {
            eligible_before_ms: 100,
            remaining,
        })
    };
    prop_oneof![
        1 => phase.prop_map(EventKind::Phase),
        1 => (1u32..4).prop_map(|term| EventKind::Note(Note::TermStarted { term })),
        1 => (1u32..4, end).prop_map(ended),
        4 => (call.clone(), request())
            .prop_map(|(call, request)| EventKind::Call { call, request }),
        1 => (call.clone(), op()).prop_map(|(call, op)| EventKind::Rejected { call, op }),
        1 => (call.clone(), op()).prop_map(|(call, op)| EventKind::RequestLost { call, op }),
        3 => (call.clone(), applied())
            .prop_map(|(call, applied)| EventKind::Applied { call, applied }),
        1 => call.clone().prop_map(|call| EventKind::ReplyLost { call }),
        4 => (call, op(), answer())
            .prop_map(|(call, op, answer)| EventKind::Answered { call, op, answer }),
        1 => (0u64..4000).prop_map(|now_ms| EventKind::ClockRead { now_ms }),
        1 => Just(EventKind::StopCalled),
        1 => Just(EventKind::StopResolved),
        1 => Just(EventKind::Restarted),
        1 => (1u32..3).prop_map(|task| EventKind::TaskStarted { task, name: "renewal" }),
        1 => (1u32..3, any::<bool>()).prop_map(|(task, aborted)| EventKind::TaskEnded { task, aborted }),
        1 => (0u64..2).prop_map(backlog),
        1 => Just(EventKind::Note(Note::Construction(ConstructionFinding {
            rule: "batch-within-cap",
            problem: ConstructionProblem::PastAccepted,
        }))),
    ]
}

fn stream() -> impl Strategy<Value = Vec<Stamped<Event>>> {
    let event = (prop::option::weighted(0.9, 0u16..3), kind(), 0u64..400);
    prop::collection::vec(event, 0..120).prop_map(|events| {
        let mut at_ms = 0;
        let stamp = |(seq, (replica, kind, step_ms)): (usize, (Option<u16>, EventKind, u64))| {
            at_ms += step_ms;
            let event = Event {
                replica: replica.map(ReplicaId),
                kind,
            };
            Stamped {
                seq: seq as u64,
                at_ms,
                event,
            }
        };
        events.into_iter().enumerate().map(stamp).collect()
    })
}

#[test]
fn the_set_agrees_with_its_checkers_alone_and_every_report_is_well_formed() {
    let tally = arbitrary_streams(512, stream(), Feed::Every, |invariant| {
        AnyChecker::new(invariant, &config())
    });
    // The generator reaches verdicts of most invariants, not only of one.
    assert!(tally.broken.len() >= Invariant::COUNT / 2, "{tally:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn coverage_reaches_exactly_the_situations_the_reference_finds(events in stream()) {
        let mut coverage = Coverage::new();
        events.iter().for_each(|event| coverage.on_event(event));
        let reached: BTreeSet<Situation> = coverage.reached().iter().collect();
        prop_assert_eq!(reached, reference_situations(&events));
    }
}

/// The ops of the calls `replica` has open just before `events[index]` (see *open call*).
fn open_ops(events: &[Stamped<Event>], index: usize, replica: ReplicaId) -> Vec<OpKind> {
    let before = &events[..index];
    let closes = |event: &Stamped<Event>, call: u64| match event.event.kind {
        EventKind::Answered { call: answered, .. } => answered == call,
        EventKind::Restarted => true,
        _ => false,
    };
    before
        .iter()
        .enumerate()
        .filter(|(_, event)| event.event.replica == Some(replica))
        .filter_map(|(sent_at, event)| match event.event.kind {
            EventKind::Call { call, request } => Some((sent_at, call, request.op())),
            _ => None,
        })
        .filter(|&(sent_at, call, _)| {
            !before[sent_at + 1..]
                .iter()
                .any(|later| later.event.replica == Some(replica) && closes(later, call))
        })
        .map(|(_, _, op)| op)
        .collect()
}

/// Which situation a stop lands in while a call of `op` is open.
fn stop_during(op: OpKind) -> Option<Situation> {
    match op {
        OpKind::Acquire => Some(Situation::StopDuringAcquire),
        OpKind::Delete => Some(Situation::StopDuringDelete),
        OpKind::Renew => Some(Situation::StopDuringRenew),
        OpKind::Release => None,
    }
}

/// The situations `events` reach, read off the situations' descriptions: the service's own
/// acts (`Applied`, lost replies) and term ends count whoever they belong to; answers and
/// stops count for the replica they happen to.
fn reference_situations(events: &[Stamped<Event>]) -> BTreeSet<Situation> {
    let mut reached = BTreeSet::new();
    for (index, event) in events.iter().enumerate() {
        let open = || {
            event
                .event
                .replica
                .map_or_else(Vec::new, |r| open_ops(events, index, r))
        };
        match event.event.kind {
            EventKind::Applied { applied, .. } => reached.extend(match applied {
                Applied::DeleteRefused { .. } => Some(Situation::StoreRejectedStale),
                Applied::Granted {
                    replaced: Some(_), ..
                } => Some(Situation::RivalTookOverExpired),
                Applied::FreedNothing => Some(Situation::ReleaseFreedNothing),
                _ => None,
            }),
            EventKind::ReplyLost { .. } => {
                reached.insert(Situation::ReplyLostAfterApply);
            }
            EventKind::Note(Note::TermEnded {
                end: EndKind::CapReached,
                ..
            }) => {
                reached.insert(Situation::CapReached);
            }
            EventKind::Answered {
                op: OpKind::Renew,
                answer,
                ..
            } => {
                if open().contains(&OpKind::Delete) {
                    reached.insert(Situation::RenewReplyDuringDelete);
                }
                if answer == Answer::Lease(None) && event.event.replica.is_some() {
                    reached.insert(Situation::LeadershipLostByNone);
                }
            }
            EventKind::StopCalled => reached.extend(open().into_iter().filter_map(stop_during)),
            _ => {}
        }
    }
    reached
}

/// The comparison above is only worth something if streams reach situations: over a fixed
/// sample of streams, every situation is reached by a fair share of them, and some streams
/// reach none (so neither side can pass by answering "everything" or "nothing").
#[test]
fn generated_streams_reach_every_situation_often() {
    const STREAMS: usize = 1_000;
    let mut runner = TestRunner::deterministic();
    let mut counts = [0usize; Situation::COUNT];
    let mut reached_none = 0;
    for _ in 0..STREAMS {
        let events = stream().new_tree(&mut runner).expect("a stream").current();
        let reached = reference_situations(&events);
        reached_none += usize::from(reached.is_empty());
        for situation in reached {
            counts[situation as usize] += 1;
        }
    }
    for situation in Situation::ALL {
        let share_pct = counts[situation as usize] * 100 / STREAMS;
        println!("{situation}: reached by {share_pct}% of {STREAMS} streams");
        assert!(
            share_pct >= 10,
            "only {share_pct}% of streams reach {situation}: the comparison barely tests it"
        );
    }
    println!("no situation: {reached_none} of {STREAMS} streams");
    assert!(
        reached_none * 100 >= STREAMS,
        "only {reached_none} of {STREAMS} streams reach no situation"
    );
}
