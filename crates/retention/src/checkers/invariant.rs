//! The names of the invariants.
//!
//! Terminology:
//! - *name*: the kebab-case identifier of an invariant, as the contract spells it; it is what
//!   reports, scenario files and the command line use.
//! - *holds when*: a one-line statement of what a passing run guarantees.

use std::fmt;

use leasesim_invariants::{CONSTRUCTION_HOLDS_WHEN, InvariantName};

/// One of the twenty-eight properties every run is checked against: the contract's fifteen,
/// then the ten the contract audit added (see the crate docs), then the two deadlines that
/// mutation testing showed missing (a renewal that never comes, a stop that waits on a timer),
/// then the construction probe's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Invariant {
    StaleTokenDelete,
    LatestToken,
    NoDeleteAfterLoss,
    SerialRenewal,
    FixedCutoff,
    BatchLimit,
    TermCap,
    ReleaseLatest,
    ReleaseAfterOwnership,
    ReleaseOnExit,
    RenewalStops,
    StopQuiesces,
    StopJoins,
    NoEligibleMiss,
    Liveness,
    RenewLatest,
    RenewalPause,
    AcquireFirst,
    RefusedAcquireEnds,
    FullBatch,
    ShortBatchEnds,
    DeleteErrorEnds,
    NoEarlyStop,
    ReleaseLast,
    TermReport,
    RenewalDue,
    StopPrompt,
    Construction,
}

impl Invariant {
    /// How many invariants there are.
    pub const COUNT: usize = 28;

    /// Every invariant: the contract's fifteen in its order, then the audit's additions, then
    /// the deadlines mutation testing asked for. This
    /// is also the order checkers see an event in, so an addition never takes a verdict from
    /// one of the fifteen on the same event.
    pub const ALL: [Invariant; Invariant::COUNT] = [
        Invariant::StaleTokenDelete,
        Invariant::LatestToken,
        Invariant::NoDeleteAfterLoss,
        Invariant::SerialRenewal,
        Invariant::FixedCutoff,
        Invariant::BatchLimit,
        Invariant::TermCap,
        Invariant::ReleaseLatest,
        Invariant::ReleaseAfterOwnership,
        Invariant::ReleaseOnExit,
        Invariant::RenewalStops,
        Invariant::StopQuiesces,
        Invariant::StopJoins,
        Invariant::NoEligibleMiss,
        Invariant::Liveness,
        Invariant::RenewLatest,
        Invariant::RenewalPause,
        Invariant::AcquireFirst,
        Invariant::RefusedAcquireEnds,
        Invariant::FullBatch,
        Invariant::ShortBatchEnds,
        Invariant::DeleteErrorEnds,
        Invariant::NoEarlyStop,
        Invariant::ReleaseLast,
        Invariant::TermReport,
        Invariant::RenewalDue,
        Invariant::StopPrompt,
        Invariant::Construction,
    ];

    /// The contract's kebab-case name, e.g. `"stale-token-delete"`.
    pub fn name(self) -> &'static str {
        match self {
            Invariant::StaleTokenDelete => "stale-token-delete",
            Invariant::LatestToken => "latest-token",
            Invariant::NoDeleteAfterLoss => "no-delete-after-loss",
            Invariant::SerialRenewal => "serial-renewal",
            Invariant::FixedCutoff => "fixed-cutoff",
            Invariant::BatchLimit => "batch-limit",
            Invariant::TermCap => "term-cap",
            Invariant::ReleaseLatest => "release-latest",
            Invariant::ReleaseAfterOwnership => "release-after-ownership",
            Invariant::ReleaseOnExit => "release-on-exit",
            Invariant::RenewalStops => "renewal-stops",
            Invariant::StopQuiesces => "stop-quiesces",
            Invariant::StopJoins => "stop-joins",
            Invariant::NoEligibleMiss => "no-eligible-miss",
            Invariant::Liveness => "liveness",
            Invariant::RenewLatest => "renew-latest",
            Invariant::RenewalPause => "renewal-pause",
            Invariant::AcquireFirst => "acquire-first",
            Invariant::RefusedAcquireEnds => "refused-acquire-ends",
            Invariant::FullBatch => "full-batch",
            Invariant::ShortBatchEnds => "short-batch-ends",
            Invariant::DeleteErrorEnds => "delete-error-ends",
            Invariant::NoEarlyStop => "no-early-stop",
            Invariant::ReleaseLast => "release-last",
            Invariant::TermReport => "term-report",
            Invariant::RenewalDue => "renewal-due",
            Invariant::StopPrompt => "stop-prompt",
            Invariant::Construction => "construction",
        }
    }

    /// The invariant with this name, if any.
    pub fn from_name(name: &str) -> Option<Invariant> {
        Invariant::ALL
            .into_iter()
            .find(|invariant| invariant.name() == name)
    }

    /// One line: what a run that keeps this invariant guarantees.
    pub fn holds_when(self) -> &'static str {
        let (_, text) = HOLDS_WHEN
            .iter()
            .find(|(invariant, _)| *invariant == self)
            .expect("every invariant says when it holds");
        text
    }
}

/// What a run that keeps each invariant guarantees, in [`Invariant::ALL`] order.
const HOLDS_WHEN: [(Invariant, &str); Invariant::COUNT] = [
    (
        Invariant::StaleTokenDelete,
        "the store never applies a delete whose token was not the current, unexpired one",
    ),
    (
        Invariant::LatestToken,
        "each delete carries the newest token its worker received in the term",
    ),
    (
        Invariant::NoDeleteAfterLoss,
        "once a renewal answered None or failed, the worker sends no more deletes that term",
    ),
    (
        Invariant::SerialRenewal,
        "a worker never waits on two renewals at once",
    ),
    (
        Invariant::FixedCutoff,
        "a term's deletes share one cutoff, read from the clock after acquire and before \
                 the first delete",
    ),
    (
        Invariant::BatchLimit,
        "no delete asks for more than the batch size or more than the cap has left",
    ),
    (
        Invariant::TermCap,
        "the rows actually deleted for one term stay within the cap",
    ),
    (
        Invariant::ReleaseLatest,
        "a release carries the newest lease the worker received",
    ),
    (
        Invariant::ReleaseAfterOwnership,
        "a release is sent only inside a term whose acquire granted the lease",
    ),
    (
        Invariant::ReleaseOnExit,
        "a term that acquired releases its newest lease on every exit path, unless a \
                 renewal answered None",
    ),
    (
        Invariant::RenewalStops,
        "renewals are sent only inside an open term, with a lease received in that term",
    ),
    (
        Invariant::StopQuiesces,
        "after stop() the worker sends no acquire, renew or delete",
    ),
    (
        Invariant::StopJoins,
        "stop() returns only after the term is over, no call is pending and held \
                 leadership was released",
    ),
    (
        Invariant::NoEligibleMiss,
        "every deleted row was created before its term's cutoff",
    ),
    (
        Invariant::Liveness,
        "once faults heal, terms end within the bound (also those open at healing), \
                 every stop() returns and the eligible backlog is gone",
    ),
    (
        Invariant::RenewLatest,
        "every renewal carries the newest lease the worker received in the term",
    ),
    (
        Invariant::RenewalPause,
        "every renewal follows a pause of the renewal interval on the worker's clock, \
                 started after the term's previous renewal",
    ),
    (
        Invariant::AcquireFirst,
        "a term's first call is its acquire, and the term sends no second acquire",
    ),
    (
        Invariant::RefusedAcquireEnds,
        "after the term's acquire answered None or an error, the term sends no other call",
    ),
    (
        Invariant::FullBatch,
        "no delete asks for fewer rows than the batch size or what is left of the cap, \
                 whichever is smaller",
    ),
    (
        Invariant::ShortBatchEnds,
        "after a delete answered fewer rows than it asked, the term sends no more deletes",
    ),
    (
        Invariant::DeleteErrorEnds,
        "after a delete answered an error, the term sends no more deletes (no retry)",
    ),
    (
        Invariant::NoEarlyStop,
        "a term that acquired stops deleting only at the cap, after a short batch, on \
                 leadership loss, on stop or on a delete error",
    ),
    (
        Invariant::ReleaseLast,
        "a release is sent with none of the term's other calls in flight, and the term \
                 sends no acquire, renew or delete after it",
    ),
    (
        Invariant::TermReport,
        "the report run() returns matches the term: its rows are the rows the deletes \
                 answered, and its end is one the term's answers or a stop explain",
    ),
    (
        Invariant::RenewalDue,
        "a held lease is renewed no later than the renewal interval (on the worker's clock) \
         after the answer that granted or renewed it, unless a pause holds the process, until \
         the term ends, releases, loses the lease or is stopped",
    ),
    (
        Invariant::StopPrompt,
        "once stop() is called, the release and stop()'s return come no later than the latest \
         answer, pause end or the stop call itself: stopping waits on no timer",
    ),
    (Invariant::Construction, CONSTRUCTION_HOLDS_WHEN),
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
        for invariant in Invariant::ALL {
            assert_eq!(Invariant::from_name(invariant.name()), Some(invariant));
            assert!(!invariant.holds_when().contains('\n'));
        }
        let mut names: Vec<&str> = Invariant::ALL.iter().map(|i| i.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Invariant::COUNT);
        assert_eq!(Invariant::from_name("no-such-thing"), None);
        assert_eq!(
            Invariant::ReleaseAfterOwnership.to_string(),
            "release-after-ownership"
        );
    }
}
