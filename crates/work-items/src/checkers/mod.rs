//! The work-items system's invariants as online checkers, and its "sometimes" situations.
//!
//! Terminology:
//! - *checker*: reads the events of one run in order and reports an event that breaks its
//!   invariant as a [`Violation`]. Every checker derives everything from the events (the items
//!   from the services' `Applied` events, the claims from the worker's calls and answers) and
//!   trusts no service; the item book and the replicas' ledgers every checker follows are kept
//!   once, as the run's shared [`Facts`], and each checker's verdict logic and own state stay
//!   its own.
//! - *service side*: what the store and the provider applied (`stale-apply`, `stale-done`,
//!   `claimable-only`, `effect-once`, `done-after-effect`).
//! - *worker side*: what a worker sent and reported (`stop-on-lease-lost`, `reconcile-first`,
//!   `claim-token`, `give-up-policy`, `retry-backoff`, `stop-quiesces`, `stop-joins`,
//!   `stop-prompt`, `run-report`).
//! - *liveness*: `items-settle`, once faults heal.
//! - *situation*: something interesting a run may reach ([`Situation`], [`Coverage`]).
//!
//! ## Contract audit
//!
//! [`audit`] maps every sentence of the seed's contract (and of the issue that set this
//! system up) to the invariant that catches it, or to the test that covers it.

mod claims;
mod coverage;
mod deadline;
mod facts;
mod invariant;
mod liveness;
mod renewal;
mod report;
mod retry;
mod service;
mod stop;
#[cfg(test)]
mod testkit;
mod track;

/// The contract audit: each sentence of the contract, and what catches it.
#[doc = include_str!("AUDIT.md")]
pub mod audit {}

pub use coverage::{Coverage, Situation, SituationSet};
pub use facts::Facts;
pub use invariant::Invariant;
pub use leasesim_invariants::Checker;

use claims::{ClaimToken, GiveUpPolicy, ReconcileFirst, StopOnLeaseLost};
use deadline::PassDeadline;
use liveness::ItemsSettle;
use renewal::RenewalDue;
use report::RunReport;
use retry::RetryBackoff;
use service::{ClaimableOnly, DoneAfterEffect, EffectOnce, StaleApply, StaleDone};
use stop::{StopJoins, StopQuiesces};

use crate::events::{Event, EventKind, Op, Stamped, WorkItems, notes};

/// `stop-prompt`, written once for every system (`leasesim_invariants::StopPrompt`).
type StopPrompt = leasesim_invariants::StopPrompt<WorkItems>;

/// `construction`, written once for every system (`leasesim_invariants::Construction`).
type Construction = leasesim_invariants::Construction<WorkItems>;

/// A violation of one of the work-items system's invariants.
pub type Violation = leasesim_invariants::Violation<WorkItems>;

/// The checkers of one run behind one observer.
pub type CheckerSet = leasesim_invariants::CheckerSet<WorkItems, AnyChecker>;

/// What the run's workers were configured with, as the checkers need it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckConfig {
    /// Claims of one item before giving it up fails it.
    pub max_attempts: u32,
    /// Retries of a call after its first transport failure (a give-back is tried this many
    /// times more before the worker abandons it).
    pub max_retries: u32,
    /// How long after asking for a grant, on the worker's clock, a claim is renewed.
    pub renew_every_ms: u64,
    /// How long a pass may go on claiming, on the worker's clock.
    pub deadline_ms: u64,
    /// The sleep before a call's first retry, doubling before each next one, and its cap.
    pub backoff_ms: u64,
    pub backoff_cap_ms: u64,
}

/// The interest bit of the pass notes.
pub(crate) const fn notes_pass() -> u32 {
    notes::PASS
}

/// The interest bit of the tally note.
pub(crate) const fn notes_tally() -> u32 {
    notes::TALLY
}

/// Declares `AnyChecker`, one variant per invariant, and its construction and dispatch.
macro_rules! any_checker {
    ($($variant:ident => $make:expr),* $(,)?) => {
        /// One checker of the work-items system, of any of its invariants (static dispatch).
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

        impl Checker<WorkItems> for AnyChecker {
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
    StaleApply => |_| StaleApply::new(),
    StaleDone => |_| StaleDone::new(),
    ClaimableOnly => |_| ClaimableOnly::new(),
    EffectOnce => |_| EffectOnce::new(),
    DoneAfterEffect => |_| DoneAfterEffect::new(),
    StopOnLeaseLost => |_| StopOnLeaseLost::new(),
    ReconcileFirst => |_| ReconcileFirst::new(),
    ClaimToken => |_| ClaimToken::new(),
    RenewalDue => RenewalDue::new,
    PassDeadline => PassDeadline::new,
    GiveUpPolicy => GiveUpPolicy::new,
    RetryBackoff => RetryBackoff::new,
    StopQuiesces => |_| StopQuiesces::new(),
    StopJoins => StopJoins::new,
    StopPrompt => |_| StopPrompt::new(Invariant::StopPrompt).retrying(&[Op::Release, Op::Fail]),
    Construction => |_| Construction::new(
        Invariant::Construction,
        |note| match note {
            crate::events::Note::Construction(finding) => Some(*finding),
            _ => None,
        },
        notes::CONSTRUCTION,
    ),
    RunReport => |_| RunReport::new(),
    ItemsSettle => |_| ItemsSettle::new(),
}

/// The checkers of the given invariants (duplicates ignored), fed in the system's order.
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
