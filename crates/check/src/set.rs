//! All the checkers of a run behind one observer.
//!
//! Terminology:
//! - *set*: the checkers of the chosen invariants, each with its own state, fed every event in
//!   the contract's order of invariants.
//! - *verdict*: the first violation any checker reports; the set keeps only that one and asks
//!   the run to halt from then on.
//! - *static dispatch*: checkers are held in an enum, not boxed, so feeding an event is a
//!   `match` per checker rather than a virtual call.

use leasesim_events::Event;
use leasesim_rt::{Flow, Stamped};

use crate::cap::{BatchLimit, FullBatch, TermCap};
use crate::cutoff::{FixedCutoff, NoEligibleMiss};
use crate::deletion::{DeleteErrorEnds, NoEarlyStop, ShortBatchEnds, TermReport};
use crate::flow::{AcquireFirst, RefusedAcquireEnds, ReleaseLast};
use crate::liveness::Liveness;
use crate::release::{ReleaseAfterOwnership, ReleaseLatest, ReleaseOnExit};
use crate::renewal::{RenewLatest, RenewalPause, RenewalStops, SerialRenewal};
use crate::stop::{StopJoins, StopQuiesces};
use crate::tokens::{LatestToken, NoDeleteAfterLoss, StaleTokenDelete};
use crate::{CheckConfig, Checker, ClockConfig, Invariant, Violation, kinds};

/// Declares `AnyChecker`, one variant per invariant, and its construction and dispatch.
macro_rules! any_checker {
    ($($variant:ident => $make:expr),* $(,)?) => {
        #[derive(Debug)]
        enum AnyChecker {
            $($variant($variant),)*
        }

        impl AnyChecker {
            fn new(invariant: Invariant, config: &CheckConfig) -> AnyChecker {
                match invariant {
                    $(Invariant::$variant => {
                        let make: fn(&CheckConfig) -> $variant = $make;
                        AnyChecker::$variant(make(config))
                    })*
                }
            }

            fn boxed(self) -> Box<dyn Checker> {
                match self {
                    $(AnyChecker::$variant(checker) => Box::new(checker),)*
                }
            }
        }

        impl Checker for AnyChecker {
            fn invariant(&self) -> Invariant {
                match self {
                    $(AnyChecker::$variant(checker) => checker.invariant(),)*
                }
            }

            fn wants(&self, kind: &leasesim_events::EventKind) -> bool {
                match self {
                    $(AnyChecker::$variant(checker) => checker.wants(kind),)*
                }
            }

            fn on_event(&mut self, event: &Stamped<Event>) -> Option<Violation> {
                match self {
                    $(AnyChecker::$variant(checker) => checker.on_event(event),)*
                }
            }

            fn finish(&mut self, end_ms: u64) -> Option<Violation> {
                match self {
                    $(AnyChecker::$variant(checker) => checker.finish(end_ms),)*
                }
            }
        }
    };
}

any_checker! {
    StaleTokenDelete => |_| StaleTokenDelete::new(),
    LatestToken => |_| LatestToken::new(),
    NoDeleteAfterLoss => |_| NoDeleteAfterLoss::new(),
    SerialRenewal => |_| SerialRenewal::new(),
    FixedCutoff => FixedCutoff::new,
    BatchLimit => BatchLimit::new,
    TermCap => TermCap::new,
    ReleaseLatest => |_| ReleaseLatest::new(),
    ReleaseAfterOwnership => |_| ReleaseAfterOwnership::new(),
    ReleaseOnExit => |_| ReleaseOnExit::new(),
    RenewalStops => |_| RenewalStops::new(),
    StopQuiesces => |_| StopQuiesces::new(),
    StopJoins => |_| StopJoins::new(),
    NoEligibleMiss => |_| NoEligibleMiss::new(),
    Liveness => Liveness::new,
    RenewLatest => |_| RenewLatest::new(),
    RenewalPause => |_| RenewalPause::new(),
    AcquireFirst => |_| AcquireFirst::new(),
    RefusedAcquireEnds => |_| RefusedAcquireEnds::new(),
    FullBatch => FullBatch::new,
    ShortBatchEnds => |_| ShortBatchEnds::short_batch(),
    DeleteErrorEnds => |_| DeleteErrorEnds::delete_error(),
    NoEarlyStop => NoEarlyStop::new,
    ReleaseLast => |_| ReleaseLast::new(),
    TermReport => TermReport::new,
}

/// A fresh checker of one invariant, on its own.
pub fn checker_for(invariant: Invariant, config: &CheckConfig) -> Box<dyn Checker> {
    AnyChecker::new(invariant, config).boxed()
}

/// The checkers of a run, each independent (its own state), fed every event; keeps the
/// first violation.
#[derive(Debug)]
pub struct CheckerSet {
    checkers: Vec<AnyChecker>,
    /// Per checker, the bits (`kinds::bit`) of the event kinds it reads: asked once, so
    /// feeding an event tests one bit per checker instead of calling `wants`.
    interests: Vec<u32>,
    violation: Option<Violation>,
    /// A violation was found (it may have been taken since): feed nothing more.
    halted: bool,
    finished: bool,
}

impl CheckerSet {
    /// Checkers of every invariant.
    pub fn new(config: &CheckConfig) -> CheckerSet {
        CheckerSet::only(config, &Invariant::ALL)
    }

    /// Checkers of the given invariants only (duplicates ignored). They see each event in the
    /// contract's order, whatever the order given, so verdicts do not depend on it.
    pub fn only(config: &CheckConfig, invariants: &[Invariant]) -> CheckerSet {
        let mut chosen = invariants.to_vec();
        chosen.sort_unstable();
        chosen.dedup();
        let checkers: Vec<AnyChecker> = chosen
            .into_iter()
            .map(|invariant| AnyChecker::new(invariant, config))
            .collect();
        let interests = checkers
            .iter()
            .map(|checker| {
                kinds::SAMPLES
                    .iter()
                    .filter(|kind| checker.wants(kind))
                    .fold(0, |mask, kind| mask | kinds::bit(kind))
            })
            .collect();
        CheckerSet {
            checkers,
            interests,
            violation: None,
            halted: false,
            finished: false,
        }
    }

    /// Gives `renewal-pause` (if the set checks it) the run's renewal interval and clocks, so
    /// it also checks each pause's length.
    pub fn with_clocks(mut self, clocks: &ClockConfig) -> CheckerSet {
        for checker in &mut self.checkers {
            if let AnyChecker::RenewalPause(pause) = checker {
                pause.set_clocks(clocks.clone());
            }
        }
        self
    }

    /// The invariants this set checks, in the order checkers see an event.
    pub fn invariants(&self) -> impl Iterator<Item = Invariant> + '_ {
        self.checkers.iter().map(Checker::invariant)
    }

    /// Feeds one event to every checker. Records the first violation only, and returns
    /// `Flow::Halt` from then on (without feeding the checkers any more).
    pub fn on_event(&mut self, event: &Stamped<Event>) -> Flow {
        if self.halted {
            return Flow::Halt;
        }
        let bit = kinds::bit(&event.event.kind);
        // invariant: the masks were asked of these very checkers, one each.
        debug_assert_eq!(self.interests.len(), self.checkers.len());
        let interested = self.checkers.iter_mut().zip(&self.interests);
        for (checker, _) in interested.filter(|(_, mask)| *mask & bit != 0) {
            debug_assert!(checker.wants(&event.event.kind));
            if let Some(violation) = checker.on_event(event) {
                debug_assert_eq!(violation.invariant, checker.invariant());
                return self.record(violation);
            }
        }
        Flow::Continue
    }

    /// The end of the run at `end_ms`: runs every checker's `finish` once, unless a violation
    /// was already found. Returns the violation, if any.
    pub fn finish(&mut self, end_ms: u64) -> Option<&Violation> {
        if !self.halted && !self.finished {
            self.finished = true;
            let verdict = self
                .checkers
                .iter_mut()
                .find_map(|checker| checker.finish(end_ms));
            if let Some(violation) = verdict {
                self.record(violation);
            }
        }
        self.violation.as_ref()
    }

    /// The first violation found, if any.
    pub fn violation(&self) -> Option<&Violation> {
        self.violation.as_ref()
    }

    /// Takes the first violation out; the set stays halted.
    pub fn take_violation(&mut self) -> Option<Violation> {
        self.violation.take()
    }

    fn record(&mut self, violation: Violation) -> Flow {
        // invariant: only the first violation is kept, and nothing is fed after it.
        debug_assert!(!self.halted);
        self.violation = Some(violation);
        self.halted = true;
        Flow::Halt
    }
}

#[cfg(test)]
mod tests {
    use leasesim_events::{Answer, EndKind, EventKind, OpKind, Request};

    use super::*;
    use crate::testkit::{R1, R2, Script, config, lease, run};

    /// Feeds every event of the script, whatever the flow.
    fn feed(set: &mut CheckerSet, script: &Script) {
        for event in &script.events {
            set.on_event(event);
        }
    }

    /// Two violations: a delete with a superseded token and a limit above the batch size
    /// (event `first`), then an overlapping renewal (event `second`).
    fn two_violations() -> (Script, u64, u64) {
        let mut script = Script::new();
        script.at(1000).start(R1, 1);
        script.acquire(R1, 1);
        script.clock(R1, 1000);
        script.on(R1, EventKind::TimerSet { duration_ms: 1000 });
        script.renew(R1, 1, 2);
        script.send(
            R1,
            Request::Delete {
                older_than_ms: 0,
                limit: 250,
                token: 1,
            },
        );
        let first = script.last_seq();
        script.send(R1, Request::Renew { lease: lease(2) });
        script.send(R1, Request::Renew { lease: lease(2) });
        let second = script.last_seq();
        (script, first, second)
    }

    fn stop_during_acquire() -> Script {
        let mut script = Script::new();
        script.at(100).start(R2, 1);
        let call = script.send(R2, Request::Acquire);
        script.on(R2, EventKind::StopCalled);
        script.answer(R2, call, OpKind::Acquire, Answer::Lease(Some(lease(1))));
        script.release(R2, 1);
        script.end(R2, 1, EndKind::Stopped, 0);
        script.on(R2, EventKind::StopResolved);
        script
    }

    #[test]
    fn a_correct_run_raises_nothing_in_any_checker() {
        for script in [Script::correct_run(), stop_during_acquire()] {
            for invariant in Invariant::ALL {
                let mut checker = checker_for(invariant, &config());
                assert_eq!(checker.invariant(), invariant);
                assert_eq!(run(checker.as_mut(), &script), None, "{invariant}");
            }
            let mut set = CheckerSet::new(&config());
            for event in &script.events {
                assert_eq!(set.on_event(event), Flow::Continue);
            }
            assert_eq!(set.finish(10_000_000), None);
        }
    }

    #[test]
    fn the_set_keeps_the_first_violation_and_halts_from_then_on() {
        let (script, first, second) = two_violations();
        let mut set = CheckerSet::new(&config());
        assert_eq!(set.invariants().count(), Invariant::COUNT);
        for event in &script.events {
            let expected = if event.seq < first {
                Flow::Continue
            } else {
                Flow::Halt
            };
            assert_eq!(set.on_event(event), expected, "event #{}", event.seq);
        }
        let violation = set.violation().expect("a violation").clone();
        assert_eq!(violation.invariant, Invariant::LatestToken);
        assert_eq!(violation.event.seq, first);
        assert_eq!(set.finish(99_000), Some(&violation));
        assert_eq!(set.take_violation(), Some(violation));
        assert_eq!(set.violation(), None);
        assert_eq!(set.on_event(&script.events[0]), Flow::Halt);
        assert_eq!(set.finish(99_000), None);
        let mut serial = CheckerSet::only(&config(), &[Invariant::SerialRenewal]);
        feed(&mut serial, &script);
        assert_eq!(
            serial.violation().map(|v| (v.invariant, v.event.seq)),
            Some((Invariant::SerialRenewal, second))
        );
    }

    #[test]
    fn checkers_see_an_event_in_the_contracts_order_whatever_the_order_given() {
        let (script, first, _) = two_violations();
        for chosen in [
            &[Invariant::BatchLimit, Invariant::LatestToken][..],
            &[
                Invariant::LatestToken,
                Invariant::BatchLimit,
                Invariant::BatchLimit,
            ],
        ] {
            let mut set = CheckerSet::only(&config(), chosen);
            assert_eq!(
                set.invariants().collect::<Vec<_>>(),
                [Invariant::LatestToken, Invariant::BatchLimit]
            );
            feed(&mut set, &script);
            assert_eq!(
                set.violation().map(|v| v.invariant),
                Some(Invariant::LatestToken)
            );
        }
        let mut set = CheckerSet::only(&config(), &[Invariant::BatchLimit]);
        feed(&mut set, &script);
        let violation = set.take_violation().expect("a violation");
        assert_eq!(
            (violation.invariant, violation.event.seq),
            (Invariant::BatchLimit, first)
        );
    }

    #[test]
    fn finish_reports_what_only_the_end_of_the_run_shows() {
        let mut script = Script::new();
        script.at(100).on(R1, EventKind::StopCalled);
        let mut set = CheckerSet::new(&config());
        script
            .events
            .iter()
            .for_each(|event| assert_eq!(set.on_event(event), Flow::Continue));
        let violation = set.finish(5000).expect("a violation");
        assert_eq!(
            (violation.invariant, violation.at_ms),
            (Invariant::Liveness, 5000)
        );
        assert!(
            violation
                .to_string()
                .starts_with("liveness at t=5000ms (event #0): r1's stop()")
        );
        assert_eq!(set.on_event(&script.events[0]), Flow::Halt);
    }
}
