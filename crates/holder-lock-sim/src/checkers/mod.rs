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
//! [`audit`] maps every sentence of the contract (the production core's and design 004's) to
//! the invariant that catches it, or to the test that covers it where no run can show it.

mod claims;
mod coverage;
mod facts;
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
pub use leasesim_invariants::Checker;
pub use release::release_seen;

use claims::{ClaimKept, DeleteOwnClaim, JobUnderClaim, NoThirdWorker};
use job::EffectsUnderClaim;
use release::{ReleaseOnExit, ReleaseReported};
use report::AttemptReport;
use stop::{Liveness, StopJoins, StopQuiesces};
use tokens::{FreshToken, OwnToken};

use leasesim_invariants::Judged;
use leasesim_sim::{Checks, FaultProfile, Scenario};

use crate::HolderLock;

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

leasesim_invariants::invariants! {
    system: HolderLock, config: CheckConfig, liveness: [Liveness];
    DeleteOwnClaim = "delete-own-claim",
        "a delete (or overwrite) of the claim removes only a claim its own attempt created",
        |_| DeleteOwnClaim::new();
    NoThirdWorker = "no-third-worker",
        "a job starts beside a running one only after that one's claim ran out (or the \
         store forgot it): no release frees a live claim of another attempt",
        |_| NoThirdWorker::new();
    JobUnderClaim = "job-under-claim",
        "a job starts only while its attempt holds the key (or unknown to it, the store \
         forgot it since the create won), after its create won",
        |_| JobUnderClaim::new();
    FreshToken = "fresh-token",
        "every attempt creates its claim with a token no earlier attempt used, the same \
         worker's included",
        |_| FreshToken::new();
    ReleaseReported = "release-reported",
        "every release is reported as it was answered, and each one that found the \
         claim gone is counted",
        |_| ReleaseReported::new();
    ClaimKept = "claim-kept",
        "with renewal on and faults healed, no claim runs out while its healthy holder \
         still holds it",
        ClaimKept::new;
    EffectsUnderClaim = "effects-under-claim",
        "no job step after its attempt learned the claim was lost, released it or was \
         stopped; with renewal on, every step lands while the claim is the attempt's, or \
         before it could learn the store forgot it",
        EffectsUnderClaim::new;
    OwnToken = "own-token",
        "every renewal, conditional delete and write carries its attempt's own token, \
         after its create won",
        |_| OwnToken::new();
    ReleaseOnExit = "release-on-exit",
        "an attempt whose create won releases (or checks) its claim before it ends, on \
         every way out",
        |_| ReleaseOnExit::new();
    AttemptReport = "attempt-report",
        "every attempt's report says what happened: its end has its evidence (a job that \
         finished or failed, a stop, a renewal refused or failed, a trusted time that ran \
         out, a create answered late) and it counts the renewals answered renewed",
        AttemptReport::new;
    StopQuiesces = "stop-quiesces",
        "after stop() the worker sends no create, renewal or write and its job takes no \
         step",
        |_| StopQuiesces::new();
    StopJoins = "stop-joins",
        "stop() returns only after the attempt ended and no call is pending",
        |_| StopJoins::new();
    StopPrompt = "stop-prompt",
        "once stop() is called, the release and stop()'s return come at the instant of the \
         latest answer, pause end or the stop call itself: stopping waits on no timer (not \
         a job's next step, not a renewal's)",
        |_| StopPrompt::new(Invariant::StopPrompt);
    Construction = "construction",
        leasesim_invariants::CONSTRUCTION_HOLDS_WHEN,
        |_| Construction::new(Invariant::Construction);
    Liveness = "liveness",
        "once faults heal, attempts end within the bound (also those running at \
         healing) and every stop() returns",
        Liveness::new;
}

impl Judged for HolderLock {
    type Invariant = Invariant;
    type Situation = Situation;
    type Facts = Facts;
}

/// The checker configuration of one run: what it drew and the scenario's bound.
pub fn check_config(
    scenario: &Scenario<HolderLock>,
    profile: &FaultProfile<HolderLock>,
) -> CheckConfig {
    CheckConfig {
        renewal: profile.system.claim.renew_every_ms.is_some(),
        attempt_bound_ms: scenario.settings.attempt_bound_ms,
        trusted_ms: profile.system.claim.trusted_ms(),
        drift_ppm: profile.clocks.iter().map(|c| c.drift_ppm).collect(),
    }
}

/// The holder-lock checkers of one run, judging against what it drew.
impl Checks for HolderLock {
    type Checker = AnyChecker;
    type Coverage = Coverage;

    fn checkers(
        scenario: &Scenario<HolderLock>,
        profile: &FaultProfile<HolderLock>,
        invariants: &[Invariant],
    ) -> Vec<AnyChecker> {
        let config = check_config(scenario, profile);
        invariants
            .iter()
            .map(|&invariant| AnyChecker::new(invariant, &config))
            .collect()
    }
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
