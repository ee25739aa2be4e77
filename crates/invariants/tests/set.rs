//! A `CheckerSet` feeds each checker exactly the events of the kinds it reads, in order, in the
//! system's order of invariants, and keeps the first violation, whatever the order the
//! checkers were given in.
//!
//! Terminology:
//! - *probe*: a checker that records every event it is fed and reports a violation at one
//!   chosen seq; it reads the kinds of a chosen interest mask.
//! - *reference*: what each probe should have been fed, computed from the stream and its mask
//!   alone (no set involved).

use std::cell::RefCell;
use std::rc::Rc;

use leasesim_events::{
    Event, EventKind, Flow, NetFailure, OpSet, Phase, ReplicaId, Stamped, Vocabulary,
};
use leasesim_invariants::{Checker, CheckerSet, InvariantName, Judged, SituationName, Violation};
use proptest::prelude::*;
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
enum Op {
    Only,
}

impl OpSet for Op {
    const ALL: &'static [Op] = &[Op::Only];
    fn name(self) -> &'static str {
        "only"
    }
    fn index(self) -> usize {
        0
    }
}

/// A vocabulary whose notes fall in two classes, so notes take two interest bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Probe;

impl Vocabulary for Probe {
    type Op = Op;
    type Request = u8;
    type Applied = u8;
    type Answer = u8;
    type Note = u8;
    fn op(_: &u8) -> Op {
        Op::Only
    }
    fn failed(_: NetFailure) -> u8 {
        0
    }
    fn note_class(note: &u8) -> u32 {
        u32::from(*note % 2)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Inv(u8);

const INVARIANTS: &[Inv] = &[Inv(0), Inv(1), Inv(2), Inv(3), Inv(4), Inv(5)];

impl InvariantName for Inv {
    const ALL: &'static [Inv] = INVARIANTS;
    fn name(self) -> &'static str {
        ["a", "b", "c", "d", "e", "f"][usize::from(self.0)]
    }
    fn holds_when(self) -> &'static str {
        "never broken unless told to"
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Sit;

impl SituationName for Sit {
    const ALL: &'static [Sit] = &[Sit];
    fn name(self) -> &'static str {
        "s"
    }
    fn describe(self) -> &'static str {
        "nothing"
    }
    fn index(self) -> usize {
        0
    }
}

impl Judged for Probe {
    type Invariant = Inv;
    type Situation = Sit;
    type Facts = ();
}

type Fed = Rc<RefCell<Vec<u64>>>;

/// See *probe*.
struct ProbeChecker {
    invariant: Inv,
    mask: u32,
    fail_at: Option<u64>,
    fed: Fed,
}

impl Checker<Probe> for ProbeChecker {
    fn invariant(&self) -> Inv {
        self.invariant
    }
    fn wants(&self, kind: &EventKind<Probe>) -> bool {
        self.mask & kind.bit() != 0
    }
    fn on_event(&mut self, event: &Stamped<Event<Probe>>, _facts: &()) -> Option<Violation<Probe>> {
        self.fed.borrow_mut().push(event.seq);
        (self.fail_at == Some(event.seq))
            .then(|| Violation::new(self.invariant, event, [], format!("{:?}", self.invariant)))
    }
}

fn kind(code: u8) -> EventKind<Probe> {
    match code % 6 {
        0 => EventKind::Phase(Phase::Safety),
        1 => EventKind::Call {
            call: 1,
            request: code,
        },
        2 => EventKind::Answered {
            call: 1,
            op: Op::Only,
            answer: code,
        },
        3 => EventKind::StopCalled,
        4 => EventKind::Note(0),
        _ => EventKind::Note(1),
    }
}

fn stream(codes: &[u8]) -> Vec<Stamped<Event<Probe>>> {
    let replica = Some(ReplicaId(0));
    (0u64..)
        .zip(codes)
        .map(|(seq, &code)| Stamped {
            seq,
            at_ms: seq * 10,
            event: Event {
                replica,
                kind: kind(code),
            },
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn each_checker_is_fed_exactly_the_kinds_it_reads_and_the_first_verdict_wins(
        codes in prop::collection::vec(any::<u8>(), 0..60),
        masks in prop::collection::vec(any::<u32>(), 6),
        fail_at in prop::collection::vec(prop::option::of(0u64..60), 6),
        order in Just((0..6usize).collect::<Vec<_>>()).prop_shuffle(),
    ) {
        let events = stream(&codes);
        let fed: Vec<Fed> = (0..6).map(|_| Fed::default()).collect();
        let probes = order.iter().map(|&i| ProbeChecker {
            invariant: INVARIANTS[i],
            mask: masks[i],
            fail_at: fail_at[i],
            fed: Rc::clone(&fed[i]),
        });
        let mut set = CheckerSet::new(probes.collect());
        let mut halted_at = None;
        for event in &events {
            if set.on_event(event) == Flow::Halt {
                halted_at.get_or_insert(event.seq);
            }
        }
        // Reference: the first seq at which some probe that reads it fails, lowest
        // invariant first.
        let reads = |i: usize, event: &Stamped<Event<Probe>>| masks[i] & event.event.kind.bit() != 0;
        let verdict = events.iter().find_map(|event| {
            (0..6).find(|&i| reads(i, event) && fail_at[i] == Some(event.seq)).map(|i| (event.seq, i))
        });
        prop_assert_eq!(halted_at, verdict.map(|(seq, _)| seq));
        let found = set.violation().map(|v| v.invariant);
        prop_assert_eq!(found, verdict.map(|(_, i)| INVARIANTS[i]));
        for (i, fed) in fed.iter().enumerate() {
            // Fed in order every event it reads, up to the verdict's event; past it, nothing;
            // at it, only the checkers up to the one that reported.
            let expected: Vec<u64> = events
                .iter()
                .filter(|event| reads(i, event))
                .filter(|event| match verdict {
                    Some((seq, reporter)) => event.seq < seq || (event.seq == seq && i <= reporter),
                    None => true,
                })
                .map(|event| event.seq)
                .collect();
            prop_assert_eq!(&*fed.borrow(), &expected, "checker {}", i);
        }
    }
}
