//! leasesim-invariants: the plumbing every system's invariant checkers run on.
//!
//! Terminology:
//! - *checker*: reads the events of one run in order, one at a time, and reports an event that
//!   breaks its invariant as a [`Violation`]. Every checker derives everything from the
//!   events and trusts no other checker's verdict; what many of them would derive alike (a
//!   replica's term, its calls in flight) may be kept once per run as the system's
//!   [`Facts`], derived from the events alone and tested on their own. A system implements [`Checker`] for
//!   each of its invariants (usually behind one enum, for static dispatch).
//! - *invariant*: a named property of a system ([`InvariantName`]); *situation*: a named
//!   "sometimes" moment a campaign must reach at least once ([`SituationName`]).
//! - *set*: the checkers of one run behind one observer ([`CheckerSet`]): the first violation
//!   wins and halts the run.
//! - *coverage*: the situations one run reached ([`Coverage`], a bitset per run), summed over
//!   a campaign in a [`CoverageTally`] whose *gaps* are the situations no run reached.
//! - *in-flight coverage*: which faults met a call of each kind in flight
//!   ([`InFlightCoverage`]): the same cells for every system, tallied the same way.
//! - *construction probe*: builds a system's production core from a run's settings and from
//!   settings at and past each of the system's [`SettingsRule`]s ([`probe`]); the shared
//!   [`Construction`] checker fails a run on what it found.
//!
//! This crate depends on the event types only, never on the executor: checkers judge any
//! event stream, simulated or recorded from a real run.

mod construction;
mod coverage;
mod declare;
mod in_flight;
mod set;
mod stop_prompt;
#[cfg(feature = "testkit")]
pub mod testkit;
mod track;
mod violation;

pub use construction::{
    Built, CONSTRUCTION_HOLDS_WHEN, Construction, ConstructionFinding, ConstructionNotes,
    ConstructionProblem, Readback, SettingsRule, SettingsRules, probe,
};
pub use coverage::{Coverage, CoverageTally, SituationSet};
pub use in_flight::{InFlightCoverage, Landing};
pub use set::CheckerSet;
pub use stop_prompt::StopPrompt;
pub use track::{CallBook, PerReplica, Ring, replica_of};
pub use violation::{At, MAX_CONTEXT, Violation};

use std::fmt::Debug;

/// What [`invariants!`] expands to names through `$crate`.
#[doc(hidden)]
pub mod __private {
    pub use leasesim_events::{Event, EventKind, Stamped};
}

use leasesim_events::{Event, EventKind, Stamped, Vocabulary};

/// The invariants of one system: a closed set of names.
pub trait InvariantName: Copy + Eq + Ord + Debug + Send + Sync + 'static {
    /// Every invariant, in the system's order (also the order checkers see an event in).
    const ALL: &'static [Self];

    /// Its kebab-case name (`stale-token-delete`): what reports, scenarios and the CLI use.
    fn name(self) -> &'static str;

    /// One line: what a run that keeps this invariant guarantees.
    fn holds_when(self) -> &'static str;

    /// The invariant with this name, if any.
    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|i| i.name() == name)
    }

    /// Is this the system's liveness property (things that must happen once faults heal)?
    /// Its violations are reported as liveness failures, not safety violations.
    fn is_liveness(self) -> bool {
        false
    }
}

/// The "sometimes" situations of one system (at most 64).
pub trait SituationName: Copy + Eq + Ord + Debug + Send + Sync + 'static {
    /// Every situation, in declaration order.
    const ALL: &'static [Self];

    /// Its kebab-case name (`stop-during-delete`).
    fn name(self) -> &'static str;

    /// One line: what happened when a run reaches it.
    fn describe(self) -> &'static str;

    /// Its position in [`SituationName::ALL`] (below 64).
    fn index(self) -> usize;

    /// The situation with this name, if any.
    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|s| s.name() == name)
    }
}

/// A system whose runs are judged: its vocabulary, its invariants and its situations.
pub trait Judged: Vocabulary {
    type Invariant: InvariantName;
    type Situation: SituationName;
    /// What the system's checkers may read besides the event: facts derived from the events
    /// so far, kept once per run by the [`CheckerSet`] instead of once per checker (`()` for a
    /// system with none). See [`Facts`].
    type Facts: Facts<Self>;
}

/// Facts every checker of a system may read, derived from the events alone and kept once per
/// run: *before* views (as of the events preceding the one being judged) and *after* views
/// (including it). A [`CheckerSet`] calls [`Facts::enter`] with each event before any checker
/// reads it and [`Facts::leave`] after every checker has, so both views are exact while the
/// checkers judge. Checkers read facts, never write them; each checker's verdict logic stays
/// its own.
pub trait Facts<V: Vocabulary>: Default + Debug {
    /// Called with every event (whatever the checkers read) before any checker reads it.
    fn enter(&mut self, event: &Stamped<Event<V>>) {
        let _ = event;
    }

    /// Called with every event after every checker has read it.
    fn leave(&mut self, event: &Stamped<Event<V>>) {
        let _ = event;
    }
}

/// No facts: every checker keeps all its state itself.
impl<V: Vocabulary> Facts<V> for () {}

/// One invariant's online check over the events of a run.
pub trait Checker<V: Judged> {
    /// The invariant this checker enforces.
    fn invariant(&self) -> V::Invariant;

    /// Does this checker read events of this kind? A [`CheckerSet`] never feeds it the
    /// others. The answer must depend on the kind's interest bit only
    /// ([`EventKind::bit`]): a set asks once per bit. The default reads everything.
    fn wants(&self, kind: &EventKind<V>) -> bool {
        let _ = kind;
        true
    }

    /// Reads the next event, with the run's shared facts; returns a violation when this event
    /// breaks the invariant.
    fn on_event(&mut self, event: &Stamped<Event<V>>, facts: &V::Facts) -> Option<Violation<V>>;

    /// Called once after the last event (end of run, virtual time `end_ms`), when the facts'
    /// before and after views agree. The default finds nothing: most invariants are judged
    /// event by event.
    fn finish(&mut self, end_ms: u64, facts: &V::Facts) -> Option<Violation<V>> {
        let _ = (end_ms, facts);
        None
    }
}
