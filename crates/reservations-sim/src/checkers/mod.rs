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
//! [`audit`] maps every sentence of the system's contract (design 002, in this project's own
//! words) to the invariant that catches it, or to the test that covers it where no run can.

#[cfg(test)]
mod cases;
mod claims;
mod clock;
mod coverage;
mod facts;
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
use leasesim_invariants::Judged;
use leasesim_sim::{Checks, FaultProfile, Scenario};

use crate::events::notes;

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

leasesim_invariants::invariants! {
    system: Reservations, config: CheckConfig, liveness: [Liveness];
    ConsumedNeverExpired = "consumed-never-expired",
        "the store never expires a reservation an agent has consumed",
        |_| ConsumedNeverExpired::default();
    ExpiredOnlyWhenDue = "expired-only-when-due",
        "a reservation becomes expired only if it was held and its deadline had passed \
         at that instant, on the store's clock",
        |_| ExpiredOnlyWhenDue::default();
    SingleTransition = "single-transition",
        "no reservation changes state twice: held becomes expired or consumed once, and \
         expired stays expired",
        |_| SingleTransition::default();
    ExclusiveClaim = "exclusive-claim",
        "no claim is set on a reservation while another claim on it is live",
        |_| ExclusiveClaim::default();
    ReleaseOwnClaim = "release-own-claim",
        "a release frees only the releaser's own claim: the one it was sent for",
        |_| ReleaseOwnClaim::default();
    FreshClaimToken = "fresh-claim-token",
        "every claim carries a token no earlier claim of any worker used",
        |_| FreshClaimToken::default();
    BoundedClaim = "bounded-claim",
        "every claim asks for at most the configured batch, for the configured claim \
         duration",
        BoundedClaim::new;
    StoreClockDecides = "store-clock-decides",
        "every claim and every transition leaves the store's clock to decide what is due: \
         none carries the worker's own clock as now",
        |_| StoreClockDecides::default();
    ExpireClaimed = "expire-claimed",
        "a worker attempts the transition only for reservations it holds a claim on",
        |_| ExpireClaimed::default();
    ClaimReleased = "claim-released",
        "a worker releases every reservation it claimed, with the claim's token, before \
         its next claim and before its run ends, errors included; only a kill excuses it",
        |_| ClaimReleased::default();
    IdlePause = "idle-pause",
        "after a claim that answered nothing or failed, the worker pauses the idle \
         pause (base plus jitter) before it claims again",
        IdlePause::new;
    NoHotReclaim = "no-hot-reclaim",
        "after its transition found a claimed reservation held and not yet due, the worker \
         claims again only after a pause of at least the idle pause's base, or once that \
         reservation is due: it never re-claims work it may not touch yet at once",
        NoHotReclaim::new;
    ConflictNotRetried = "conflict-not-retried",
        "after a state conflict (already done, not eligible) the worker never attempts \
         that reservation again under the same claim",
        |_| ConflictNotRetried::default();
    BoundedRetry = "bounded-retry",
        "a reservation is attempted again only after a transient error, at most \
         max_attempts times per claim, each time after the policy's backoff",
        BoundedRetry::new;
    TransientRetried = "transient-retried",
        "a transient error with attempts left is retried, unless a stop came: it is \
         never silently dropped",
        TransientRetried::new;
    DeadLetterRecord = "dead-letter-record",
        "every reservation given up on gets a dead letter carrying its reason, attempt \
         count, first-seen time, last error class and a replay command naming it",
        DeadLetterRecord::new;
    StopQuiesces = "stop-quiesces",
        "after stop() the worker sends no claim and no transition (it still releases \
         and records dead letters)",
        |_| StopQuiesces::default();
    StopJoins = "stop-joins",
        "stop() returns only after the run ended, no call is pending and every claim \
         was released",
        |_| StopJoins::default();
    RunReport = "run-report",
        "the metrics run() reports match what its calls sent and were answered, and a \
         second run() while one is active is refused at once",
        |_| RunReport::default();
    Construction = "construction",
        leasesim_invariants::CONSTRUCTION_HOLDS_WHEN,
        |_| Construction::new(Invariant::Construction);
    Liveness = "liveness",
        "once faults heal, every due held reservation is expired (or parked by a dead \
         letter) within the bound, a stopped worker's claims block nothing past it, and \
         every stop() returns",
        Liveness::new;
}

impl Judged for Reservations {
    type Invariant = Invariant;
    type Situation = Situation;
    type Facts = Facts;
}

/// The checker configuration of one run: the worker settings its profile drew and the
/// scenario's liveness bound.
pub fn check_config(
    scenario: &Scenario<Reservations>,
    profile: &FaultProfile<Reservations>,
) -> CheckConfig {
    let worker = &profile.system.worker;
    CheckConfig {
        batch_size: worker.batch_size,
        claim_for_ms: worker.claim_for_ms,
        idle_ms: worker.idle_ms,
        idle_jitter_ms: worker.idle_jitter_ms,
        retry: worker.retry.clone(),
        due_bound_ms: scenario.settings.due_bound_ms,
    }
}

/// The reservation checkers of one run, judging against the worker settings it drew.
impl Checks for Reservations {
    type Checker = AnyChecker;
    type Coverage = Coverage;

    fn checkers(
        scenario: &Scenario<Reservations>,
        profile: &FaultProfile<Reservations>,
        invariants: &[Invariant],
    ) -> Vec<AnyChecker> {
        let config = check_config(scenario, profile);
        invariants
            .iter()
            .map(|&invariant| AnyChecker::new(invariant, &config))
            .collect()
    }
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
