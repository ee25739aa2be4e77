//! In-flight coverage: a fault reaches the cell of every call of its replica in flight at that
//! instant, and of no call answered before it or of another replica; refusals and lost
//! requests and replies reach the cell of their own call's operation.

use leasesim_events::{Event, EventKind, NetFailure, OpSet, ReplicaId, Stamped, Vocabulary};
use leasesim_invariants::{InFlightCoverage, Landing};
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
enum Op {
    Read,
    Write,
    Sync,
}

impl OpSet for Op {
    const ALL: &'static [Op] = &[Op::Read, Op::Write, Op::Sync];
    fn name(self) -> &'static str {
        ["read", "write", "sync"][self as usize]
    }
    fn index(self) -> usize {
        self as usize
    }
}

/// A vocabulary whose request is its operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Calls;

impl Vocabulary for Calls {
    type Op = Op;
    type Request = Op;
    type Applied = u8;
    type Answer = u8;
    type Note = u8;
    fn op(request: &Op) -> Op {
        *request
    }
    fn failed(_: NetFailure) -> u8 {
        0
    }
    fn note_class(_: &u8) -> u32 {
        0
    }
}

const R1: ReplicaId = ReplicaId(0);
const R2: ReplicaId = ReplicaId(1);

fn feed(events: &[(ReplicaId, EventKind<Calls>)]) -> u128 {
    let mut coverage = InFlightCoverage::<Calls>::default();
    for (seq, (replica, kind)) in events.iter().enumerate() {
        let event = Event::of(*replica, *kind);
        let seq = seq as u64;
        coverage.on_event(&Stamped {
            seq,
            at_ms: seq,
            event,
        });
    }
    coverage.reached()
}

fn cells(bits: u128) -> Vec<String> {
    let ops = Op::ALL.len();
    let mut names = Vec::new();
    for landing in Landing::ALL {
        for op in Op::ALL {
            if bits & landing.bit(op.index(), ops) != 0 {
                names.push(landing.situation(op.name()));
            }
        }
    }
    names
}

fn call(call: u64, request: Op) -> EventKind<Calls> {
    EventKind::Call { call, request }
}

fn answered(call: u64, op: Op) -> EventKind<Calls> {
    EventKind::Answered {
        call,
        op,
        answer: 0,
    }
}

#[test]
fn a_fault_meets_exactly_the_calls_of_its_replica_in_flight() {
    let reached = feed(&[
        (R1, call(1, Op::Read)),
        (R1, answered(1, Op::Read)),
        (R1, call(2, Op::Write)),
        (R2, call(3, Op::Sync)),
        // r1's write is in flight (its read was answered); r2's sync is another replica's.
        (R1, EventKind::StopCalled),
        (R1, EventKind::Paused { until_ms: 9 }),
        (R2, EventKind::ClockJumped { by_ms: 5 }),
        (R2, answered(3, Op::Sync)),
        (R2, EventKind::ClockJumped { by_ms: 5 }),
    ]);
    assert_eq!(
        cells(reached),
        [
            "called-read",
            "called-write",
            "called-sync",
            "stop-during-write",
            "pause-during-write",
            "clock-jump-during-sync",
        ]
    );
}

#[test]
fn refusals_and_lost_requests_and_replies_reach_their_own_calls_operation() {
    let reached = feed(&[
        (R1, call(1, Op::Read)),
        (R1, call(2, Op::Sync)),
        (R1, EventKind::ReplyLost { call: 2 }),
        (
            R1,
            EventKind::Rejected {
                call: 1,
                op: Op::Read,
            },
        ),
        (R1, call(3, Op::Write)),
        (
            R1,
            EventKind::RequestLost {
                call: 3,
                op: Op::Write,
            },
        ),
        // A reply lost of a call no longer in flight (or never seen) reaches nothing.
        (R2, EventKind::ReplyLost { call: 7 }),
    ]);
    assert_eq!(
        cells(reached),
        [
            "called-read",
            "called-write",
            "called-sync",
            "rejected-read",
            "request-lost-write",
            "reply-lost-sync"
        ]
    );
}

#[test]
fn a_restarted_replica_has_nothing_in_flight() {
    let reached = feed(&[
        (R1, call(1, Op::Write)),
        (R1, EventKind::Restarted),
        (R1, EventKind::StopCalled),
    ]);
    assert_eq!(cells(reached), ["called-write"]);
}
