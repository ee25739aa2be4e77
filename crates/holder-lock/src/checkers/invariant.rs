//! The names of the holder-lock system's invariants, and what each guarantees.

use std::fmt;

use leasesim_invariants::{CONSTRUCTION_HOLDS_WHEN, InvariantName};

/// One of the fifteen properties every holder-lock run is checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Invariant {
    DeleteOwnClaim,
    NoThirdWorker,
    JobUnderClaim,
    FreshToken,
    ReleaseReported,
    ClaimKept,
    EffectsUnderClaim,
    OwnToken,
    ReleaseOnExit,
    AttemptReport,
    StopQuiesces,
    StopJoins,
    StopPrompt,
    Construction,
    Liveness,
}

impl Invariant {
    /// How many invariants there are.
    pub const COUNT: usize = 15;

    /// Every invariant, in the order checkers see an event: the six first.
    pub const ALL: [Invariant; Invariant::COUNT] = [
        Invariant::DeleteOwnClaim,
        Invariant::NoThirdWorker,
        Invariant::JobUnderClaim,
        Invariant::FreshToken,
        Invariant::ReleaseReported,
        Invariant::ClaimKept,
        Invariant::EffectsUnderClaim,
        Invariant::OwnToken,
        Invariant::ReleaseOnExit,
        Invariant::AttemptReport,
        Invariant::StopQuiesces,
        Invariant::StopJoins,
        Invariant::StopPrompt,
        Invariant::Construction,
        Invariant::Liveness,
    ];

    /// The kebab-case name, e.g. `"delete-own-claim"`.
    pub fn name(self) -> &'static str {
        match self {
            Invariant::DeleteOwnClaim => "delete-own-claim",
            Invariant::NoThirdWorker => "no-third-worker",
            Invariant::JobUnderClaim => "job-under-claim",
            Invariant::FreshToken => "fresh-token",
            Invariant::ReleaseReported => "release-reported",
            Invariant::ClaimKept => "claim-kept",
            Invariant::EffectsUnderClaim => "effects-under-claim",
            Invariant::OwnToken => "own-token",
            Invariant::ReleaseOnExit => "release-on-exit",
            Invariant::AttemptReport => "attempt-report",
            Invariant::StopQuiesces => "stop-quiesces",
            Invariant::StopJoins => "stop-joins",
            Invariant::StopPrompt => "stop-prompt",
            Invariant::Construction => "construction",
            Invariant::Liveness => "liveness",
        }
    }

    /// One line: what a run that keeps this invariant guarantees.
    pub fn holds_when(self) -> &'static str {
        match self {
            Invariant::DeleteOwnClaim => {
                "a delete (or overwrite) of the claim removes only a claim its own attempt created"
            }
            Invariant::NoThirdWorker => {
                "a job starts beside a running one only after that one's claim ran out (or the \
                 store forgot it): no release frees a live claim of another attempt"
            }
            Invariant::JobUnderClaim => {
                "a job starts only while its attempt holds the key (or unknown to it, the store \
                 forgot it since the create won), after its create won"
            }
            Invariant::FreshToken => {
                "every attempt creates its claim with a token no earlier attempt used, the same \
                 worker's included"
            }
            Invariant::ReleaseReported => {
                "every release is reported as it was answered, and each one that found the \
                 claim gone is counted"
            }
            Invariant::ClaimKept => {
                "with renewal on and faults healed, no claim runs out while its healthy holder \
                 still holds it"
            }
            Invariant::EffectsUnderClaim => {
                "no job step after its attempt learned the claim was lost, released it or was \
                 stopped; with renewal on, every step lands while the claim is the attempt's, or \
                 before it could learn the store forgot it"
            }
            Invariant::OwnToken => {
                "every renewal, conditional delete and write carries its attempt's own token, \
                 after its create won"
            }
            Invariant::ReleaseOnExit => {
                "an attempt whose create won releases (or checks) its claim before it ends, on \
                 every way out"
            }
            Invariant::AttemptReport => {
                "every attempt's report says what happened: its end has its evidence (a job that \
                 finished or failed, a stop, a renewal refused or failed, a trusted time that ran \
                 out, a create answered late) and it counts the renewals answered renewed"
            }
            Invariant::StopPrompt => {
                "once stop() is called, the release and stop()'s return come at the instant of the \
                 latest answer, pause end or the stop call itself: stopping waits on no timer (not \
                 a job's next step, not a renewal's)"
            }
            Invariant::StopQuiesces => {
                "after stop() the worker sends no create, renewal or write and its job takes no \
                 step"
            }
            Invariant::StopJoins => {
                "stop() returns only after the attempt ended and no call is pending"
            }
            Invariant::Construction => CONSTRUCTION_HOLDS_WHEN,
            Invariant::Liveness => {
                "once faults heal, attempts end within the bound (also those running at \
                 healing) and every stop() returns"
            }
        }
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
    fn names_round_trip_are_distinct_and_say_when_they_hold_in_one_line() {
        let mut names: Vec<&str> = Invariant::ALL.iter().map(|i| i.name()).collect();
        for invariant in Invariant::ALL {
            assert_eq!(
                <Invariant as InvariantName>::from_name(invariant.name()),
                Some(invariant)
            );
            assert!(!invariant.holds_when().contains('\n'));
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Invariant::COUNT);
    }
}
