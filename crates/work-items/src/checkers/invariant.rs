//! The names of the work-items system's invariants.
//!
//! Terminology:
//! - *name*: the kebab-case identifier reports, scenario files and the command line use.
//! - *holds when*: one line: what a passing run guarantees.

use std::fmt;

use leasesim_invariants::{CONSTRUCTION_HOLDS_WHEN, InvariantName};

/// One of the properties every work-items run is checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Invariant {
    StaleApply,
    StaleDone,
    ClaimableOnly,
    EffectOnce,
    DoneAfterEffect,
    StopOnLeaseLost,
    ReconcileFirst,
    ClaimToken,
    RenewalDue,
    PassDeadline,
    GiveUpPolicy,
    RetryBackoff,
    StopQuiesces,
    StopJoins,
    StopPrompt,
    Construction,
    RunReport,
    ItemsSettle,
}

impl Invariant {
    pub const COUNT: usize = 18;

    /// Every invariant, in the order checkers see an event: the services' side first (what
    /// the store and the provider applied), then the worker's side, then the report and
    /// liveness.
    pub const ALL: [Invariant; Invariant::COUNT] = [
        Invariant::StaleApply,
        Invariant::StaleDone,
        Invariant::ClaimableOnly,
        Invariant::EffectOnce,
        Invariant::DoneAfterEffect,
        Invariant::StopOnLeaseLost,
        Invariant::ReconcileFirst,
        Invariant::ClaimToken,
        Invariant::RenewalDue,
        Invariant::PassDeadline,
        Invariant::GiveUpPolicy,
        Invariant::RetryBackoff,
        Invariant::StopQuiesces,
        Invariant::StopJoins,
        Invariant::StopPrompt,
        Invariant::Construction,
        Invariant::RunReport,
        Invariant::ItemsSettle,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Invariant::StaleApply => "stale-apply",
            Invariant::StaleDone => "stale-done",
            Invariant::ClaimableOnly => "claimable-only",
            Invariant::EffectOnce => "effect-once",
            Invariant::DoneAfterEffect => "done-after-effect",
            Invariant::StopOnLeaseLost => "stop-on-lease-lost",
            Invariant::ReconcileFirst => "reconcile-first",
            Invariant::ClaimToken => "claim-token",
            Invariant::RenewalDue => "renewal-due",
            Invariant::PassDeadline => "pass-deadline",
            Invariant::GiveUpPolicy => "give-up-policy",
            Invariant::RetryBackoff => "retry-backoff",
            Invariant::StopQuiesces => "stop-quiesces",
            Invariant::StopJoins => "stop-joins",
            Invariant::StopPrompt => "stop-prompt",
            Invariant::Construction => "construction",
            Invariant::RunReport => "run-report",
            Invariant::ItemsSettle => "items-settle",
        }
    }

    pub fn holds_when(self) -> &'static str {
        let (_, text) = HOLDS_WHEN
            .iter()
            .find(|(invariant, _)| *invariant == self)
            .expect("every invariant says when it holds");
        text
    }
}

impl InvariantName for Invariant {
    const ALL: &'static [Invariant] = &Invariant::ALL;

    fn name(self) -> &'static str {
        Invariant::name(self)
    }

    fn holds_when(self) -> &'static str {
        Invariant::holds_when(self)
    }

    fn is_liveness(self) -> bool {
        self == Invariant::ItemsSettle
    }
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a run that keeps each invariant guarantees, in [`Invariant::ALL`] order.
const HOLDS_WHEN: [(Invariant, &str); Invariant::COUNT] = [
    (
        Invariant::StaleApply,
        "the store applies no chunk of an item's effect under a token that was not the \
         item's live claim at that instant",
    ),
    (
        Invariant::StaleDone,
        "the store marks no item done under a token that was not its live claim at that \
         instant",
    ),
    (
        Invariant::ClaimableOnly,
        "a claim is granted only on an unclaimed, released or expired item, never on a \
         live claim and never on a done or failed item",
    ),
    (
        Invariant::EffectOnce,
        "the provider carries out each item's effect at most once",
    ),
    (
        Invariant::DoneAfterEffect,
        "an item is marked done only after every chunk of its effect was applied and the \
         provider carried out its effect",
    ),
    (
        Invariant::StopOnLeaseLost,
        "after a write answered lease-lost, the worker sends no further write for that \
         item under that claim",
    ),
    (
        Invariant::ReconcileFirst,
        "after a provider apply answered a timeout, the worker's next provider call for \
         the item is a lookup of the same key, and it applies again only once a lookup \
         answered unknown",
    ),
    (
        Invariant::ClaimToken,
        "every store write carries the token of the claim the worker holds on that item, \
         and every provider call is for the item it holds",
    ),
    (
        Invariant::RenewalDue,
        "before a write of a claim, the worker renews it once the renewal interval has \
         passed on its own clock since it asked for the claim's last grant: no apply or \
         done-mark carries a reading that late unless a renewal came first",
    ),
    (
        Invariant::PassDeadline,
        "a pass claims no new item once its deadline has passed on the worker's own clock \
         since the pass began",
    ),
    (
        Invariant::GiveUpPolicy,
        "an item given up is released while it has attempts left and failed once they are \
         spent or the provider refused it, always with the last error of the call it \
         gave up on, not one retried to success since (or `stopped` after a stop)",
    ),
    (
        Invariant::RetryBackoff,
        "a call that failed on the network is retried after the backoff for its retry \
         (doubling from backoff_ms, at most backoff_cap_ms, on the worker's clock), up \
         to max_retries times and never more, and not given up while retries are left; \
         a claim that got no answer is not sent again",
    ),
    (
        Invariant::StopQuiesces,
        "after stop() the worker sends no find, claim, renewal, apply, done-mark, status \
         or provider call; only a release or fail of the claim it holds",
    ),
    (
        Invariant::StopJoins,
        "stop() returns only after the pass ended, no call is pending, and the claim held \
         at the stop was settled (or tried to be)",
    ),
    (
        Invariant::StopPrompt,
        "a stopping worker waits on no timer: it sends its calls and stop() returns at \
         the instant of the latest answer, pause end or stop call (a release or fail \
         resent after its own failure waits out its backoff, judged by retry-backoff)",
    ),
    (Invariant::Construction, CONSTRUCTION_HOLDS_WHEN),
    (
        Invariant::RunReport,
        "the report run() returns matches its answers: its done, failed, released, lost \
         and abandoned claims, its status is the store's last answer, and it says \
         complete only if the store counted no open item",
    ),
    (
        Invariant::ItemsSettle,
        "once faults heal, every item ends done or failed by the end of the liveness \
         phase (none stuck claimed) and every stop() returns",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_are_distinct_and_fit_one_line() {
        let mut names: Vec<&str> = Invariant::ALL.iter().map(|i| i.name()).collect();
        for invariant in Invariant::ALL {
            assert_eq!(
                <Invariant as InvariantName>::from_name(invariant.name()),
                Some(invariant)
            );
            assert!(!invariant.holds_when().contains('\n'));
        }
        let order: Vec<Invariant> = HOLDS_WHEN.iter().map(|(invariant, _)| *invariant).collect();
        assert_eq!(order, Invariant::ALL);
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Invariant::COUNT);
        assert!(Invariant::ItemsSettle.is_liveness() && !Invariant::StaleApply.is_liveness());
    }
}
