//! All the checkers of a run behind one observer.
//!
//! Terminology:
//! - *set*: the checkers of the chosen invariants, each with its own state, fed every event in
//!   the system's order of invariants.
//! - *verdict*: the first violation any checker reports; the set keeps only that one and asks
//!   the run to halt from then on.
//! - *facts*: the system's [`Judged::Facts`], kept once for the whole set: entered with each
//!   event before any checker reads it, left after all have (whether or not any reads it).
//! - *readers*: per interest bit, the checkers that read events of that bit, in the set's
//!   order; asked once per bit the first time such an event arrives. Feeding an event then
//!   visits its readers only.

use leasesim_events::{Event, Flow, Stamped};

use crate::{Checker, Facts, Judged, Violation};

/// The checkers of a run, each independent (its own state), fed every event; keeps the
/// first violation.
#[derive(Debug)]
pub struct CheckerSet<V: Judged, C> {
    checkers: Vec<C>,
    /// The facts every checker reads, kept once.
    facts: V::Facts,
    /// Per interest bit (by its index), the indices of the checkers that read it, ascending.
    readers: [Vec<u16>; 32],
    /// The interest bits every checker has been asked about.
    asked: u32,
    violation: Option<Violation<V>>,
    /// A violation was found (it may have been taken since): feed nothing more.
    halted: bool,
    finished: bool,
}

impl<V: Judged, C: Checker<V>> CheckerSet<V, C> {
    /// A set of these checkers, fed in the system's order of their invariants (whatever the
    /// order given), so verdicts do not depend on it. Duplicate invariants are dropped.
    pub fn new(mut checkers: Vec<C>) -> CheckerSet<V, C> {
        checkers.sort_by_key(|checker| checker.invariant());
        checkers.dedup_by_key(|checker| checker.invariant());
        // invariant: a checker's index fits a reader list entry.
        assert!(checkers.len() <= usize::from(u16::MAX));
        CheckerSet {
            checkers,
            facts: V::Facts::default(),
            readers: std::array::from_fn(|_| Vec::new()),
            asked: 0,
            violation: None,
            halted: false,
            finished: false,
        }
    }

    /// The invariants this set checks, in the order checkers see an event.
    pub fn invariants(&self) -> impl Iterator<Item = V::Invariant> + '_ {
        self.checkers.iter().map(Checker::invariant)
    }

    /// The checkers, e.g. to hand one of them extra configuration.
    pub fn checkers_mut(&mut self) -> &mut [C] {
        &mut self.checkers
    }

    /// Feeds one event to every checker. Records the first violation only, and returns
    /// `Flow::Halt` from then on (without feeding the checkers any more).
    pub fn on_event(&mut self, event: &Stamped<Event<V>>) -> Flow {
        if self.halted {
            return Flow::Halt;
        }
        let bit = event.event.kind.bit();
        if self.asked & bit == 0 {
            self.ask(bit, &event.event);
        }
        // invariant: every checker has been asked about this event's bit.
        debug_assert!(self.asked & bit != 0 && bit.is_power_of_two());
        self.facts.enter(event);
        let facts = &self.facts;
        let mut verdict = None;
        for &index in &self.readers[bit.trailing_zeros() as usize] {
            // Moved out only when found: a violation is large, and most calls return none.
            let checker = &mut self.checkers[usize::from(index)];
            if let Some(violation) = checker.on_event(event, facts) {
                // invariant: a checker reports its own invariant only.
                debug_assert_eq!(violation.invariant, checker.invariant());
                verdict = Some(violation);
                break;
            }
        }
        self.facts.leave(event);
        match verdict {
            Some(violation) => self.record(violation),
            None => Flow::Continue,
        }
    }

    /// The facts as of the last event fed (before and after views agree between events).
    pub fn facts(&self) -> &V::Facts {
        &self.facts
    }

    /// Asks every checker whether it reads events of `event`'s interest bit.
    fn ask(&mut self, bit: u32, event: &Event<V>) {
        let readers = &mut self.readers[bit.trailing_zeros() as usize];
        for (index, checker) in self.checkers.iter().enumerate() {
            if checker.wants(&event.kind) {
                readers.push(u16::try_from(index).unwrap_or(u16::MAX));
            }
        }
        self.asked |= bit;
        // invariant: readers are listed once each, in the set's order.
        debug_assert!(readers.windows(2).all(|pair| pair[0] < pair[1]));
    }

    /// The end of the run at `end_ms`: runs every checker's `finish` once, unless a violation
    /// was already found. Returns the violation, if any.
    pub fn finish(&mut self, end_ms: u64) -> Option<&Violation<V>> {
        if !self.halted && !self.finished {
            self.finished = true;
            let verdict = self
                .checkers
                .iter_mut()
                .find_map(|checker| checker.finish(end_ms, &self.facts));
            if let Some(violation) = verdict {
                self.record(violation);
            }
        }
        self.violation.as_ref()
    }

    /// The first violation found, if any.
    pub fn violation(&self) -> Option<&Violation<V>> {
        self.violation.as_ref()
    }

    /// Takes the first violation out; the set stays halted.
    pub fn take_violation(&mut self) -> Option<Violation<V>> {
        self.violation.take()
    }

    fn record(&mut self, violation: Violation<V>) -> Flow {
        // invariant: only the first violation is kept, and nothing is fed after it.
        debug_assert!(!self.halted);
        debug_assert!(
            self.checkers
                .iter()
                .any(|c| c.invariant() == violation.invariant)
        );
        self.violation = Some(violation);
        self.halted = true;
        Flow::Halt
    }
}
