//! The reservation system's invariants as online checkers, and its "sometimes" situations.
//!
//! Terminology:
//! - *checker*: reads the events of one run in order and reports the event that breaks its
//!   invariant as a [`Violation`]. Every checker derives everything from the events: the
//!   ledger of the store side and a desk per replica of the worker side ([`track`]) are kept
//!   once per run in the shared [`Facts`], the rest by each checker; none trusts another's
//!   verdict, nor the store's answers.
//! - *store side*: what the store applied (`consumed-never-expired`, `expired-only-when-due`,
//!   `single-transition`, `exclusive-claim`, `release-own-claim`): these hold whatever a
//!   worker does only if the store's guards hold; the primitives a defective worker uses
//!   break them.
//! - *worker side*: what a worker sent and received (claims, transitions, the retry policy,
//!   dead letters, releases, stops, its report), and which clock its requests carried.
//! - *situation*: something interesting a run may reach ([`Situation`], [`Coverage`]).
//!
//! ## Contract audit
//!
//! [`audit`] maps every sentence of the system's contract (seed 002, in this project's own
//! words) to the invariant that catches it, or to the test that covers it where no run can.

#[cfg(test)]
mod cases;
mod claims;
mod clock;
mod coverage;
mod facts;
mod invariant;
mod liveness;
mod retry;
mod stop;
mod store_side;
#[cfg(test)]
mod testkit;
pub mod track;

/// The contract audit: each sentence of the contract, and what catches it.
#[doc = include_str!("AUDIT.md")]
pub mod audit {}

pub use coverage::{Coverage, Situation, SituationSet};
pub use facts::Facts;
pub use invariant::Invariant;
pub use leasesim_invariants::Checker;
pub use retry::class_of;

use claims::{BoundedClaim, ClaimReleased, ExpireClaimed, FreshClaimToken, IdlePause};
use clock::{NoHotReclaim, StoreClockDecides};
use leasesim_events::mask;
use liveness::Liveness;
use reservations_worker::RetryPolicy;
use retry::{BoundedRetry, ConflictNotRetried, DeadLetterRecord, TransientRetried};
use stop::{RunReport, StopJoins, StopQuiesces};
use store_side::{
    ConsumedNeverExpired, ExclusiveClaim, ExpiredOnlyWhenDue, ReleaseOwnClaim, SingleTransition,
};

use crate::Reservations;
use crate::events::{Event, EventKind, Stamped, notes};

/// `construction`, written once for every system (`leasesim_invariants::Construction`).
type Construction = leasesim_invariants::Construction<Reservations>;

/// A violation of one of the reservation system's invariants.
pub type Violation = leasesim_invariants::Violation<Reservations>;

/// The checkers of one reservation run behind one observer.
pub type CheckerSet = leasesim_invariants::CheckerSet<Reservations, AnyChecker>;

/// What a worker does and sees, and the run's structure: the events desks follow.
pub const WORKER_EVENTS: u32 =
    mask::WORKER_SIDE | mask::CLOCK_READ | mask::TIMER_SET | notes::RUNS | notes::KILLED;

/// The settings the checked workers were configured with, and the liveness bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckConfig {
    pub batch_size: u32,
    pub claim_for_ms: u64,
    pub idle_ms: u64,
    pub idle_jitter_ms: u64,
    pub retry: RetryPolicy,
    /// Once faults heal, a due held reservation must be expired (or parked) within this long
    /// of its deadline or of the healing, whichever is later.
    pub due_bound_ms: u64,
}

impl Default for CheckConfig {
    fn default() -> Self {
        CheckConfig {
            batch_size: 8,
            claim_for_ms: 10_000,
            idle_ms: 1_000,
            idle_jitter_ms: 2_000,
            retry: RetryPolicy::default(),
            due_bound_ms: 45_000,
        }
    }
}

/// Declares `AnyChecker`, one variant per invariant, and its construction and dispatch.
macro_rules! any_checker {
    ($($variant:ident => $make:expr),* $(,)?) => {
        /// One checker of the reservation system, of any of its invariants (static dispatch).
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

        impl Checker<Reservations> for AnyChecker {
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
    ConsumedNeverExpired => |_| ConsumedNeverExpired::default(),
    ExpiredOnlyWhenDue => |_| ExpiredOnlyWhenDue::default(),
    SingleTransition => |_| SingleTransition::default(),
    ExclusiveClaim => |_| ExclusiveClaim::default(),
    ReleaseOwnClaim => |_| ReleaseOwnClaim::default(),
    FreshClaimToken => |_| FreshClaimToken::default(),
    BoundedClaim => BoundedClaim::new,
    StoreClockDecides => |_| StoreClockDecides::default(),
    ExpireClaimed => |_| ExpireClaimed::default(),
    ClaimReleased => |_| ClaimReleased::default(),
    IdlePause => IdlePause::new,
    NoHotReclaim => NoHotReclaim::new,
    ConflictNotRetried => |_| ConflictNotRetried::default(),
    BoundedRetry => BoundedRetry::new,
    TransientRetried => TransientRetried::new,
    DeadLetterRecord => DeadLetterRecord::new,
    StopQuiesces => |_| StopQuiesces::default(),
    StopJoins => |_| StopJoins::default(),
    RunReport => |_| RunReport::default(),
    Construction => |_| Construction::new(
        Invariant::Construction,
        |note| match note {
            crate::events::Note::Construction(finding) => Some(*finding),
            _ => None,
        },
        notes::CONSTRUCTION,
    ),
    Liveness => Liveness::new,
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
