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
//! [`audit`] maps every sentence of the contract (design 001's, and the production core's
//! ports, loop and invariants) to the invariant that catches it, or to the test that covers it.

mod claims;
mod coverage;
mod deadline;
mod facts;
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
pub use leasesim_invariants::Checker;

use claims::{ClaimToken, GiveUpPolicy, ReconcileFirst, StopOnLeaseLost};
use deadline::PassDeadline;
use liveness::ItemsSettle;
use renewal::RenewalDue;
use report::RunReport;
use retry::RetryBackoff;
use service::{ClaimableOnly, DoneAfterEffect, EffectOnce, StaleApply, StaleDone};
use stop::{StopJoins, StopQuiesces};

use leasesim_invariants::Judged;
use leasesim_sim::{Checks, FaultProfile, Scenario};

use crate::events::{Op, WorkItems, notes};

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

leasesim_invariants::invariants! {
    system: WorkItems, config: CheckConfig, liveness: [ItemsSettle];
    StaleApply = "stale-apply",
        "the store applies no chunk of an item's effect under a token that was not the \
         item's live claim at that instant",
        |_| StaleApply::new();
    StaleDone = "stale-done",
        "the store marks no item done under a token that was not its live claim at that \
         instant",
        |_| StaleDone::new();
    ClaimableOnly = "claimable-only",
        "a claim is granted only on an unclaimed, released or expired item, never on a \
         live claim and never on a done or failed item",
        |_| ClaimableOnly::new();
    EffectOnce = "effect-once",
        "the provider carries out each item's effect at most once",
        |_| EffectOnce::new();
    DoneAfterEffect = "done-after-effect",
        "an item is marked done only after every chunk of its effect was applied and the \
         provider carried out its effect",
        |_| DoneAfterEffect::new();
    StopOnLeaseLost = "stop-on-lease-lost",
        "after a write answered lease-lost, the worker sends no further write for that \
         item under that claim",
        |_| StopOnLeaseLost::new();
    ReconcileFirst = "reconcile-first",
        "after a provider apply answered a timeout, the worker's next provider call for \
         the item is a lookup of the same key, and it applies again only once a lookup \
         answered unknown",
        |_| ReconcileFirst::new();
    ClaimToken = "claim-token",
        "every store write carries the token of the claim the worker holds on that item, \
         and every provider call is for the item it holds",
        |_| ClaimToken::new();
    RenewalDue = "renewal-due",
        "before a write of a claim, the worker renews it once the renewal interval has \
         passed on its own clock since it asked for the claim's last grant: no apply or \
         done-mark carries a reading that late unless a renewal came first",
        RenewalDue::new;
    PassDeadline = "pass-deadline",
        "a pass claims no new item once its deadline has passed on the worker's own clock \
         since the pass began",
        PassDeadline::new;
    GiveUpPolicy = "give-up-policy",
        "an item given up is released while it has attempts left and failed once they are \
         spent or the provider refused it, always with the last error of the call it \
         gave up on, not one retried to success since (or `stopped` after a stop)",
        GiveUpPolicy::new;
    RetryBackoff = "retry-backoff",
        "a call that failed on the network is retried after the backoff for its retry \
         (doubling from backoff_ms, at most backoff_cap_ms, on the worker's clock), up \
         to max_retries times and never more, and not given up while retries are left; \
         a claim that got no answer is not sent again",
        RetryBackoff::new;
    StopQuiesces = "stop-quiesces",
        "after stop() the worker sends no find, claim, renewal, apply, done-mark, status \
         or provider call; only a release or fail of the claim it holds",
        |_| StopQuiesces::new();
    StopJoins = "stop-joins",
        "stop() returns only after the pass ended, no call is pending, and the claim held \
         at the stop was settled (or tried to be)",
        StopJoins::new;
    StopPrompt = "stop-prompt",
        "a stopping worker waits on no timer: it sends its calls and stop() returns at \
         the instant of the latest answer, pause end or stop call (a release or fail \
         resent after its own failure waits out its backoff, judged by retry-backoff)",
        |_| StopPrompt::new(Invariant::StopPrompt).retrying(&[Op::Release, Op::Fail]);
    Construction = "construction",
        leasesim_invariants::CONSTRUCTION_HOLDS_WHEN,
        |_| Construction::new(Invariant::Construction);
    RunReport = "run-report",
        "the report run() returns matches its answers: its done, failed, released, lost \
         and abandoned claims, its status is the store's last answer, and it says \
         complete only if the store counted no open item",
        |_| RunReport::new();
    ItemsSettle = "items-settle",
        "once faults heal, every item ends done or failed by the end of the liveness \
         phase (none stuck claimed) and every stop() returns",
        |_| ItemsSettle::new();
}

impl Judged for WorkItems {
    type Invariant = Invariant;
    type Situation = Situation;
    type Facts = Facts;
}

/// The checker configuration of one run: what its workers were built with.
pub fn check_config(profile: &FaultProfile<WorkItems>) -> CheckConfig {
    CheckConfig {
        max_attempts: profile.system.worker.max_attempts,
        max_retries: profile.system.worker.max_retries,
        renew_every_ms: profile.system.worker.renew_every_ms,
        deadline_ms: profile.system.worker.deadline_ms,
        backoff_ms: profile.system.worker.backoff_ms,
        backoff_cap_ms: profile.system.worker.backoff_cap_ms,
    }
}

/// The work-items checkers of one run, judging against the worker settings it drew.
impl Checks for WorkItems {
    type Checker = AnyChecker;
    type Coverage = Coverage;

    fn checkers(
        scenario: &Scenario<WorkItems>,
        profile: &FaultProfile<WorkItems>,
        invariants: &[Invariant],
    ) -> Vec<AnyChecker> {
        let _ = scenario;
        let config = check_config(profile);
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
