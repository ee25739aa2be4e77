//! The names of the reservation system's invariants.
//!
//! Terminology:
//! - *name*: the kebab-case identifier reports, scenario files and the command line use.
//! - *holds when*: one line saying what a passing run guarantees.
//! - *store side*: judged on what the store applied (the checker follows every hold itself
//!   and trusts no answer); *worker side*: judged on what a worker sent and received.

use std::fmt;

use leasesim_invariants::{CONSTRUCTION_HOLDS_WHEN, InvariantName};

/// One of the properties every reservation run is checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Invariant {
    ConsumedNeverExpired,
    ExpiredOnlyWhenDue,
    SingleTransition,
    ExclusiveClaim,
    ReleaseOwnClaim,
    FreshClaimToken,
    BoundedClaim,
    StoreClockDecides,
    ExpireClaimed,
    ClaimReleased,
    IdlePause,
    NoHotReclaim,
    ConflictNotRetried,
    BoundedRetry,
    TransientRetried,
    DeadLetterRecord,
    StopQuiesces,
    StopJoins,
    RunReport,
    Construction,
    Liveness,
}

impl Invariant {
    /// How many invariants there are.
    pub const COUNT: usize = 21;

    /// Every invariant: the store side first, then the worker side, then liveness. Also the
    /// order checkers see an event in.
    pub const ALL: [Invariant; Invariant::COUNT] = [
        Invariant::ConsumedNeverExpired,
        Invariant::ExpiredOnlyWhenDue,
        Invariant::SingleTransition,
        Invariant::ExclusiveClaim,
        Invariant::ReleaseOwnClaim,
        Invariant::FreshClaimToken,
        Invariant::BoundedClaim,
        Invariant::StoreClockDecides,
        Invariant::ExpireClaimed,
        Invariant::ClaimReleased,
        Invariant::IdlePause,
        Invariant::NoHotReclaim,
        Invariant::ConflictNotRetried,
        Invariant::BoundedRetry,
        Invariant::TransientRetried,
        Invariant::DeadLetterRecord,
        Invariant::StopQuiesces,
        Invariant::StopJoins,
        Invariant::RunReport,
        Invariant::Construction,
        Invariant::Liveness,
    ];

    /// The kebab-case name, e.g. `"consumed-never-expired"`.
    pub fn name(self) -> &'static str {
        self.text().0
    }

    /// One line: what a run that keeps this invariant guarantees.
    pub fn holds_when(self) -> &'static str {
        self.text().1
    }

    fn text(self) -> (&'static str, &'static str) {
        let (_, name, holds_when) = TEXT
            .iter()
            .find(|(invariant, _, _)| *invariant == self)
            .expect("every invariant has its text");
        (name, holds_when)
    }

    /// The invariant with this name, if any.
    pub fn from_name(name: &str) -> Option<Invariant> {
        Invariant::ALL.into_iter().find(|i| i.name() == name)
    }
}

/// Each invariant's name and what a run that keeps it guarantees, in [`Invariant::ALL`] order.
const TEXT: [(Invariant, &str, &str); Invariant::COUNT] = [
    (
        Invariant::ConsumedNeverExpired,
        "consumed-never-expired",
        "the store never expires a reservation an agent has consumed",
    ),
    (
        Invariant::ExpiredOnlyWhenDue,
        "expired-only-when-due",
        "a reservation becomes expired only if it was held and its deadline had passed \
                 at that instant, on the store's clock",
    ),
    (
        Invariant::SingleTransition,
        "single-transition",
        "no reservation changes state twice: held becomes expired or consumed once, and \
                 expired stays expired",
    ),
    (
        Invariant::ExclusiveClaim,
        "exclusive-claim",
        "no claim is set on a reservation while another claim on it is live",
    ),
    (
        Invariant::ReleaseOwnClaim,
        "release-own-claim",
        "a release frees only the releaser's own claim: the one it was sent for",
    ),
    (
        Invariant::FreshClaimToken,
        "fresh-claim-token",
        "every claim carries a token no earlier claim of any worker used",
    ),
    (
        Invariant::BoundedClaim,
        "bounded-claim",
        "every claim asks for at most the configured batch, for the configured claim \
                 duration",
    ),
    (
        Invariant::StoreClockDecides,
        "store-clock-decides",
        "every claim and every transition leaves the store's clock to decide what is due: \
                 none carries the worker's own clock as now",
    ),
    (
        Invariant::ExpireClaimed,
        "expire-claimed",
        "a worker attempts the transition only for reservations it holds a claim on",
    ),
    (
        Invariant::ClaimReleased,
        "claim-released",
        "a worker releases every reservation it claimed, with the claim's token, before \
                 its next claim and before its run ends, errors included; only a kill excuses it",
    ),
    (
        Invariant::IdlePause,
        "idle-pause",
        "after a claim that answered nothing or failed, the worker pauses the idle \
                 pause (base plus jitter) before it claims again",
    ),
    (
        Invariant::NoHotReclaim,
        "no-hot-reclaim",
        "after its transition found a claimed reservation held and not yet due, the worker \
                 claims again only after a pause of at least the idle pause's base, or once that \
                 reservation is due: it never re-claims work it may not touch yet at once",
    ),
    (
        Invariant::ConflictNotRetried,
        "conflict-not-retried",
        "after a state conflict (already done, not eligible) the worker never attempts \
                 that reservation again under the same claim",
    ),
    (
        Invariant::BoundedRetry,
        "bounded-retry",
        "a reservation is attempted again only after a transient error, at most \
                 max_attempts times per claim, each time after the policy's backoff",
    ),
    (
        Invariant::TransientRetried,
        "transient-retried",
        "a transient error with attempts left is retried, unless a stop came: it is \
                 never silently dropped",
    ),
    (
        Invariant::DeadLetterRecord,
        "dead-letter-record",
        "every reservation given up on gets a dead letter carrying its reason, attempt \
                 count, first-seen time, last error class and a replay command naming it",
    ),
    (
        Invariant::StopQuiesces,
        "stop-quiesces",
        "after stop() the worker sends no claim and no transition (it still releases \
                 and records dead letters)",
    ),
    (
        Invariant::StopJoins,
        "stop-joins",
        "stop() returns only after the run ended, no call is pending and every claim \
                 was released",
    ),
    (
        Invariant::RunReport,
        "run-report",
        "the metrics run() reports match what its calls sent and were answered, and a \
                 second run() while one is active is refused at once",
    ),
    (
        Invariant::Construction,
        "construction",
        CONSTRUCTION_HOLDS_WHEN,
    ),
    (
        Invariant::Liveness,
        "liveness",
        "once faults heal, every due held reservation is expired (or parked by a dead \
                 letter) within the bound, a stopped worker's claims block nothing past it, and \
                 every stop() returns",
    ),
];

impl InvariantName for Invariant {
    const ALL: &'static [Invariant] = &Invariant::ALL;

    fn name(self) -> &'static str {
        Invariant::name(self)
    }

    fn holds_when(self) -> &'static str {
        Invariant::holds_when(self)
    }

    fn is_liveness(self) -> bool {
        self == Invariant::Liveness
    }
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_distinct() {
        let mut names: Vec<&str> = Invariant::ALL.iter().map(|i| i.name()).collect();
        for invariant in Invariant::ALL {
            assert_eq!(Invariant::from_name(invariant.name()), Some(invariant));
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Invariant::COUNT);
        assert_eq!(Invariant::from_name("nope"), None);
    }
}
