//! "Sometimes" properties: situations a fuzz campaign must reach at least once.
//!
//! Terminology:
//! - *situation*: an interesting moment a run may or may not reach (a stop while a delete is
//!   in flight, a reply lost after the service applied the request...). Reaching one proves
//!   nothing wrong; never reaching one in a whole campaign means the campaign did not test it.
//! - *coverage*: what reads a run's events and says which situations it reached
//!   ([`Coverage`]); the answer is a [`SituationSet`], a bitset.
//! - *tally*: per campaign, how many runs reached each situation; its *gaps* are the
//!   situations no run reached ([`CoverageTally`]).

use std::marker::PhantomData;

use leasesim_events::{Event, Stamped};

use crate::{Judged, SituationName};

/// Reads one run's events and knows which situations it reached.
pub trait Coverage<V: Judged> {
    /// Reads one event of the run.
    fn on_event(&mut self, event: &Stamped<Event<V>>);

    /// The situations reached so far.
    fn reached(&self) -> SituationSet<V::Situation>;
}

/// A set of situations of one system, as a bitset.
#[derive(Debug)]
pub struct SituationSet<S> {
    bits: u64,
    of: PhantomData<S>,
}

impl<S> Clone for SituationSet<S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for SituationSet<S> {}

impl<S> PartialEq for SituationSet<S> {
    fn eq(&self, other: &Self) -> bool {
        self.bits == other.bits
    }
}

impl<S> Eq for SituationSet<S> {}

impl<S> Default for SituationSet<S> {
    fn default() -> Self {
        SituationSet {
            bits: 0,
            of: PhantomData,
        }
    }
}

impl<S: SituationName> SituationSet<S> {
    /// The empty set.
    pub fn new() -> SituationSet<S> {
        SituationSet::default()
    }

    /// The set of these raw bits (bit `i` is situation `ALL[i]`).
    pub fn from_bits(bits: u64) -> SituationSet<S> {
        SituationSet {
            bits,
            of: PhantomData,
        }
    }

    pub fn bits(self) -> u64 {
        self.bits
    }

    fn bit(situation: S) -> u64 {
        let index = situation.index();
        // invariant: situations fit the bitset.
        assert!(index < 64, "at most 64 situations per system");
        1 << index
    }

    pub fn insert(&mut self, situation: S) {
        self.bits |= Self::bit(situation);
        debug_assert!(self.contains(situation));
    }

    pub fn contains(self, situation: S) -> bool {
        self.bits & Self::bit(situation) != 0
    }

    pub fn len(self) -> usize {
        self.bits.count_ones() as usize
    }

    pub fn is_empty(self) -> bool {
        self.bits == 0
    }

    /// The situations in the set, in declaration order.
    pub fn iter(self) -> impl Iterator<Item = S> {
        S::ALL.iter().copied().filter(move |s| self.contains(*s))
    }
}

impl<S: SituationName> FromIterator<S> for SituationSet<S> {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> SituationSet<S> {
        let mut set = SituationSet::new();
        iter.into_iter().for_each(|situation| set.insert(situation));
        set
    }
}

/// Per campaign: how many runs reached each situation (by index in the system's list).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CoverageTally {
    runs: u64,
    counts: Vec<u64>,
}

impl CoverageTally {
    pub fn new() -> CoverageTally {
        CoverageTally::default()
    }

    /// Counts one run that reached the situations of `bits`.
    pub fn add_bits(&mut self, bits: u128) {
        self.runs += 1;
        let width = 128 - bits.leading_zeros() as usize;
        if self.counts.len() < width {
            self.counts.resize(width, 0);
        }
        for (index, count) in self.counts.iter_mut().enumerate() {
            *count += u64::from((bits >> index) & 1 == 1);
        }
    }

    /// Counts one run.
    pub fn add<S: SituationName>(&mut self, reached: SituationSet<S>) {
        self.add_bits(u128::from(reached.bits()));
    }

    /// Adds another tally (e.g. of another worker thread).
    pub fn merge(&mut self, other: &CoverageTally) {
        self.runs += other.runs;
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (count, more) in self.counts.iter_mut().zip(&other.counts) {
            *count += more;
        }
    }

    /// Runs counted.
    pub fn runs(&self) -> u64 {
        self.runs
    }

    /// Runs that reached the situation at `index`.
    pub fn count_at(&self, index: usize) -> u64 {
        self.counts.get(index).copied().unwrap_or(0)
    }

    /// Runs that reached `situation`.
    pub fn count<S: SituationName>(&self, situation: S) -> u64 {
        self.count_at(situation.index())
    }

    /// The situations no run reached, in declaration order.
    pub fn gaps<S: SituationName>(&self) -> Vec<S> {
        S::ALL
            .iter()
            .copied()
            .filter(|situation| self.count(*situation) == 0)
            .collect()
    }
}
