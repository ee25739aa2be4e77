//! The holder-lock system's invariants as online checkers, and its "sometimes" situations.
//!
//! Terminology:
//! - *checker*: reads the events of one run in order and reports the event that breaks its
//!   invariant as a [`Violation`]. Every checker derives everything from the events: the
//!   attempts, calls and claim key every checker follows are kept once, as the run's shared
//!   [`Facts`] (`facts`, built from `track`), and each checker's verdict logic and its own
//!   state stay its own; none trusts the store's words beyond what it applied.
//! - *attempt*: one `run()` of a replica's worker, between `AttemptStarted` and
//!   `AttemptEnded`.
//! - *situation*: something interesting a run may reach ([`Situation`], [`Coverage`]).
//!
//! ## Contract audit
//!
//! [`audit`] maps every sentence of the seed's contract (the text) to the invariant
//! that catches it, or to the test that covers it where no run can show it.

mod claims;
mod coverage;
mod facts;
mod invariant;
mod job;
mod release;
mod report;
mod stop;
#[cfg(test)]
mod testkit;
#[cfg(test)]
mod tests;
mod tokens;
pub mod track;

/// The contract audit: each sentence of the contract, and what catches it.
#[doc = include_str!("AUDIT.md")]
pub mod audit {}

pub use coverage::{Coverage, Situation, SituationSet};
pub use facts::Facts;
pub use invariant::Invariant;
pub use leasesim_invariants::Checker;
pub use release::release_seen;

use claims::{ClaimKept, DeleteOwnClaim, JobUnderClaim, NoThirdWorker};
use job::EffectsUnderClaim;
use release::{ReleaseOnExit, ReleaseReported};
use report::AttemptReport;
use stop::{Liveness, StopJoins, StopQuiesces};
use tokens::{FreshToken, OwnToken};

use crate::HolderLock;
use crate::events::{Event, EventKind, Stamped};

/// `stop-prompt`: the shared checker (a stopping worker waits on no timer).
type StopPrompt = leasesim_invariants::StopPrompt<HolderLock>;

/// `construction`: the shared checker (the core is built as asked and refuses invalid
/// settings).
type Construction = leasesim_invariants::Construction<HolderLock>;

/// A violation of one of the holder-lock system's invariants.
pub type Violation = leasesim_invariants::Violation<HolderLock>;

/// The checkers of one holder-lock run behind one observer.
pub type CheckerSet = leasesim_invariants::CheckerSet<HolderLock, AnyChecker>;

/// What the checkers judge a run against: what it drew.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckConfig {
    /// The workers renew their claims (`claim-kept` and part of `effects-under-claim` apply).
    pub renewal: bool,
    /// Once faults heal, how long an attempt may run.
    pub attempt_bound_ms: u64,
    /// How long, on its own timer, a worker trusts its claim after sending its create or a
    /// renewal (four fifths of the lifetime).
    pub trusted_ms: u64,
    /// Each replica's clock drift in parts per million, by replica index (missing: none):
    /// how long the trusted time lasts in virtual time.
    pub drift_ppm: Vec<i64>,
}

/// Declares `AnyChecker`, one variant per invariant, its construction and dispatch.
macro_rules! any_checker {
    ($($variant:ident => $make:expr),* $(,)?) => {
        /// One checker of the holder-lock system, of any of its invariants.
        #[derive(Debug)]
        pub enum AnyChecker {
            $($variant($variant),)*
        }

        impl AnyChecker {
            /// A fresh checker of `invariant`.
            pub fn new(invariant: Invariant, config: &CheckConfig) -> AnyChecker {
                match invariant {
                    $(Invariant::$variant => {
                        let make: fn(&CheckConfig) -> $variant = $make;
                        AnyChecker::$variant(make(config))
                    })*
                }
            }
        }

        impl Checker<HolderLock> for AnyChecker {
            fn invariant(&self) -> Invariant {
                match self {
                    $(AnyChecker::$variant(checker) => checker.invariant(),)*
                }
            }

            fn wants(&self, kind: &EventKind) -> bool {
                match self {
                    $(AnyChecker::$variant(checker) => checker.wants(kind),)*
                }
            }

            #[inline(always)]
            fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
                match self {
                    $(AnyChecker::$variant(checker) => checker.on_event(event, facts),)*
                }
            }

            fn finish(&mut self, end_ms: u64, facts: &Facts) -> Option<Violation> {
                match self {
                    $(AnyChecker::$variant(checker) => checker.finish(end_ms, facts),)*
                }
            }
        }
    };
}

any_checker! {
    DeleteOwnClaim => |_| DeleteOwnClaim::new(),
    NoThirdWorker => |_| NoThirdWorker::new(),
    JobUnderClaim => |_| JobUnderClaim::new(),
    FreshToken => |_| FreshToken::new(),
    ReleaseReported => |_| ReleaseReported::new(),
    ClaimKept => ClaimKept::new,
    EffectsUnderClaim => EffectsUnderClaim::new,
    OwnToken => |_| OwnToken::new(),
    ReleaseOnExit => |_| ReleaseOnExit::new(),
    AttemptReport => AttemptReport::new,
    StopQuiesces => |_| StopQuiesces::new(),
    StopJoins => |_| StopJoins::new(),
    StopPrompt => |_| StopPrompt::new(Invariant::StopPrompt),
    Construction => |_| Construction::new(
        Invariant::Construction,
        |note| match note {
            crate::events::Note::Construction(finding) => Some(*finding),
            _ => None,
        },
        crate::events::notes::CONSTRUCTION,
    ),
    Liveness => Liveness::new,
}

/// The checkers of the given invariants (duplicates dropped), fed in the system's order.
pub fn checker_set(config: &CheckConfig, invariants: &[Invariant]) -> CheckerSet {
    CheckerSet::new(
        invariants
            .iter()
            .map(|&invariant| AnyChecker::new(invariant, config))
            .collect(),
    )
}

/// Checkers of every invariant.
pub fn all_checkers(config: &CheckConfig) -> CheckerSet {
    checker_set(config, &Invariant::ALL)
}
