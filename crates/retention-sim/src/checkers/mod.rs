//! The retention system's invariants as online checkers, and its "sometimes" situations.
//!
//! Terminology:
//! - *checker*: reads the events of one run in order and reports an event that breaks its
//!   invariant as a [`Violation`]. Every checker derives everything from the events and
//!   trusts no other checker's verdict; each replica's term flow, which fifteen of them read,
//!   is kept once per run in the shared [`Facts`] (tested against a naive reference).
//! - *term*: the span of one replica between `TermStarted` and `TermEnded` (one `run()`).
//! - *in flight*: a call that was sent (`Call`) and not yet answered (`Answered`).
//! - *received lease*: an `Answered` acquire or renew carrying `Lease(Some(..))`, for a call
//!   the replica sent in the same term. The term's *latest token* is the highest one received.
//! - *cutoff*: the `older_than_ms` of a term's first delete; every delete of the term must
//!   carry it.
//! - *incarnation*: a replica's worker from its start, or from `Restarted`, to the next
//!   `Restarted`; stop state belongs to one incarnation.
//! - *situation*: something interesting a run may reach ([`Situation`], [`Coverage`]).
//!
//! The checkers run on every event of every fuzz run: per-replica state lives in `Vec`s
//! indexed by replica, small collections are `Vec`s that keep their capacity, and a
//! [`Violation`] (the only thing that allocates per report) is built only when one is found.
//!
//! ## Contract audit
//!
//! [`audit`] maps every sentence of the contract's section 1 to the invariant that catches
//! it, or to the test that covers it where no run can show it.

mod cap;
mod coverage;
mod cutoff;
mod deletion;
mod facts;
mod flow;
mod kinds;
mod liveness;
mod release;
mod renewal;
mod stop;
#[cfg(test)]
mod testkit;
mod timing;
mod tokens;
mod track;
mod words;

/// The contract audit: each sentence of the contract's section 1, and what catches it.
#[doc = include_str!("AUDIT.md")]
pub mod audit {}

pub use coverage::{Coverage, Situation, SituationSet};
pub use facts::Facts;
pub use leasesim_invariants::Checker;

use cap::{BatchLimit, FullBatch, TermCap};
use cutoff::{FixedCutoff, NoEligibleMiss};
use deletion::{DeleteErrorEnds, NoEarlyStop, ShortBatchEnds, TermReport};
use flow::{AcquireFirst, RefusedAcquireEnds, ReleaseLast};
use liveness::Liveness;
use release::{ReleaseAfterOwnership, ReleaseLatest, ReleaseOnExit};
use renewal::{RenewLatest, RenewalPause, RenewalStops, SerialRenewal};
use stop::{StopJoins, StopQuiesces};
use timing::RenewalDue;

/// `stop-prompt`: the shared checker (a stopping worker waits on no timer).
type StopPrompt = leasesim_invariants::StopPrompt<Retention>;

/// `construction`: the shared checker (the core is built as asked and refuses invalid
/// settings).
type Construction = leasesim_invariants::Construction<Retention>;
use tokens::{LatestToken, NoDeleteAfterLoss, StaleTokenDelete};

use leasesim_invariants::Judged;
use leasesim_sim::{Checks, FaultProfile, Scenario};

use crate::Retention;
use crate::events::ReplicaId;

/// A violation of one of the retention system's invariants.
pub type Violation = leasesim_invariants::Violation<Retention>;

/// The checkers of one retention run behind one observer.
pub type CheckerSet = leasesim_invariants::CheckerSet<Retention, AnyChecker>;

/// The limits the checked worker was configured with, and the bounds of the scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckConfig {
    /// The most rows one delete may ask for (the contract's default is 200).
    pub batch_rows: u32,
    /// The most rows one term may delete (the contract's default is 1,000).
    pub cap_rows: u32,
    /// How old a row must be to be deleted: `cutoff = clock read - retention`.
    pub retention_ms: u64,
    /// Once faults heal, how long a term may stay open: from its start, or from the healing
    /// for a term that was already open then.
    pub term_bound_ms: u64,
}

/// How a run's workers keep time, for `renewal-pause` and `renewal-due`: the renewal interval
/// they were configured with and each replica's clock drift. Kept apart from [`CheckConfig`]
/// (a run hands it to [`checker_set`]); without it `renewal-pause` checks only that a pause was
/// started before each renewal, and `renewal-due` checks nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClockConfig {
    /// The pause before each renewal, on the worker's own clock.
    pub renew_every_ms: u64,
    /// Each replica's clock drift in parts per million, by replica index (missing: none).
    pub drift_ppm: Vec<i64>,
}

impl ClockConfig {
    /// Virtual ms a sleep of `local_ms` on `replica`'s clock lasts at least: the clock
    /// advances `1 + drift` times as fast as virtual time (rounded up, as the world sleeps).
    pub fn virtual_span_ms(&self, replica: ReplicaId, local_ms: u64) -> u64 {
        let drift_ppm = self.drift_ppm.get(replica.index()).copied().unwrap_or(0);
        leasesim_events::virtual_span_ms(drift_ppm, local_ms)
    }
}

leasesim_invariants::invariants! {
    system: Retention, config: CheckConfig, liveness: [Liveness];
    StaleTokenDelete = "stale-token-delete",
        "the store never applies a delete whose token was not the current, unexpired one",
        |_| StaleTokenDelete::new();
    LatestToken = "latest-token",
        "each delete carries the newest token its worker received in the term",
        |_| LatestToken::new();
    NoDeleteAfterLoss = "no-delete-after-loss",
        "once a renewal answered None or failed, the worker sends no more deletes that term",
        |_| NoDeleteAfterLoss::new();
    SerialRenewal = "serial-renewal",
        "a worker never waits on two renewals at once",
        |_| SerialRenewal::new();
    FixedCutoff = "fixed-cutoff",
        "a term's deletes share one cutoff, read from the clock after acquire and before \
         the first delete",
        FixedCutoff::new;
    BatchLimit = "batch-limit",
        "no delete asks for more than the batch size or more than the cap has left",
        BatchLimit::new;
    TermCap = "term-cap",
        "the rows actually deleted for one term stay within the cap",
        TermCap::new;
    ReleaseLatest = "release-latest",
        "a release carries the newest lease the worker received",
        |_| ReleaseLatest::new();
    ReleaseAfterOwnership = "release-after-ownership",
        "a release is sent only inside a term whose acquire granted the lease",
        |_| ReleaseAfterOwnership::new();
    ReleaseOnExit = "release-on-exit",
        "a term that acquired releases its newest lease on every exit path, unless a \
         renewal answered None",
        |_| ReleaseOnExit::new();
    RenewalStops = "renewal-stops",
        "renewals are sent only inside an open term, with a lease received in that term",
        |_| RenewalStops::new();
    StopQuiesces = "stop-quiesces",
        "after stop() the worker sends no acquire, renew or delete",
        |_| StopQuiesces::new();
    StopJoins = "stop-joins",
        "stop() returns only after the term is over, no call is pending and held \
         leadership was released",
        |_| StopJoins::new();
    NoEligibleMiss = "no-eligible-miss",
        "every deleted row was created before its term's cutoff",
        |_| NoEligibleMiss::new();
    Liveness = "liveness",
        "once faults heal, terms end within the bound (also those open at healing), \
         every stop() returns and the eligible backlog is gone",
        Liveness::new;
    RenewLatest = "renew-latest",
        "every renewal carries the newest lease the worker received in the term",
        |_| RenewLatest::new();
    RenewalPause = "renewal-pause",
        "every renewal follows a pause of the renewal interval on the worker's clock, \
         started after the term's previous renewal",
        |_| RenewalPause::new();
    AcquireFirst = "acquire-first",
        "a term's first call is its acquire, and the term sends no second acquire",
        |_| AcquireFirst::new();
    RefusedAcquireEnds = "refused-acquire-ends",
        "after the term's acquire answered None or an error, the term sends no other call",
        |_| RefusedAcquireEnds::new();
    FullBatch = "full-batch",
        "no delete asks for fewer rows than the batch size or what is left of the cap, \
         whichever is smaller",
        FullBatch::new;
    ShortBatchEnds = "short-batch-ends",
        "after a delete answered fewer rows than it asked, the term sends no more deletes",
        |_| ShortBatchEnds::short_batch();
    DeleteErrorEnds = "delete-error-ends",
        "after a delete answered an error, the term sends no more deletes (no retry)",
        |_| DeleteErrorEnds::delete_error();
    NoEarlyStop = "no-early-stop",
        "a term that acquired stops deleting only at the cap, after a short batch, on \
         leadership loss, on stop or on a delete error",
        NoEarlyStop::new;
    ReleaseLast = "release-last",
        "a release is sent with none of the term's other calls in flight, and the term \
         sends no acquire, renew or delete after it",
        |_| ReleaseLast::new();
    TermReport = "term-report",
        "the report run() returns matches the term: its rows are the rows the deletes \
         answered, and its end is one the term's answers or a stop explain",
        TermReport::new;
    RenewalDue = "renewal-due",
        "a held lease is renewed no later than the renewal interval (on the worker's clock) \
         after the answer that granted or renewed it, unless a pause holds the process, until \
         the term ends, releases, loses the lease or is stopped",
        |_| RenewalDue::new();
    StopPrompt = "stop-prompt",
        "once stop() is called, the release and stop()'s return come no later than the latest \
         answer, pause end or the stop call itself: stopping waits on no timer",
        |_| StopPrompt::new(Invariant::StopPrompt);
    Construction = "construction",
        leasesim_invariants::CONSTRUCTION_HOLDS_WHEN,
        |_| Construction::new(Invariant::Construction);
}

impl Judged for Retention {
    type Invariant = Invariant;
    type Situation = Situation;
    type Facts = Facts;
}

/// The checker configuration of one run: the worker settings its profile drew (with swarm
/// they differ from the scenario's) and the scenario's bounds.
pub fn check_config(
    scenario: &Scenario<Retention>,
    profile: &FaultProfile<Retention>,
) -> CheckConfig {
    let worker = &profile.system.worker;
    CheckConfig {
        batch_rows: worker.batch_rows,
        cap_rows: worker.cap_rows,
        retention_ms: worker.retention_ms,
        term_bound_ms: scenario.settings.term_bound_ms,
    }
}

/// How the run's workers keep time: their drawn renewal interval and each replica's drift.
pub fn clock_config(profile: &FaultProfile<Retention>) -> ClockConfig {
    ClockConfig {
        renew_every_ms: profile.system.worker.renew_every_ms,
        drift_ppm: profile.clocks.iter().map(|clock| clock.drift_ppm).collect(),
    }
}

/// The retention checkers of one run, judging against the worker settings it drew.
impl Checks for Retention {
    type Checker = AnyChecker;
    type Coverage = Coverage;

    fn checkers(
        scenario: &Scenario<Retention>,
        profile: &FaultProfile<Retention>,
        invariants: &[Invariant],
    ) -> Vec<AnyChecker> {
        let (config, clocks) = (check_config(scenario, profile), clock_config(profile));
        invariants
            .iter()
            .map(|&invariant| {
                let mut checker = AnyChecker::new(invariant, &config);
                checker.set_clocks(&clocks);
                checker
            })
            .collect()
    }
}

impl AnyChecker {
    /// Gives `renewal-pause` and `renewal-due` the run's renewal interval and clocks (other
    /// checkers ignore them): the first then checks each pause's length, the second can check
    /// at all.
    pub fn set_clocks(&mut self, clocks: &ClockConfig) {
        match self {
            AnyChecker::RenewalPause(pause) => pause.set_clocks(clocks.clone()),
            AnyChecker::RenewalDue(due) => due.set_clocks(clocks.clone()),
            _ => {}
        }
    }
}

/// A fresh checker of one invariant, on its own.
pub fn checker_for(invariant: Invariant, config: &CheckConfig) -> Box<dyn Checker<Retention>> {
    Box::new(AnyChecker::new(invariant, config))
}

/// The checkers of the given invariants (duplicates ignored), fed in the system's order.
/// `clocks` gives `renewal-pause` and `renewal-due` the run's renewal interval and drifts (see
/// [`AnyChecker::set_clocks`]).
pub fn checker_set(
    config: &CheckConfig,
    invariants: &[Invariant],
    clocks: Option<&ClockConfig>,
) -> CheckerSet {
    let mut set = CheckerSet::new(
        invariants
            .iter()
            .map(|&invariant| AnyChecker::new(invariant, config))
            .collect(),
    );
    if let Some(clocks) = clocks {
        set.checkers_mut()
            .iter_mut()
            .for_each(|checker| checker.set_clocks(clocks));
    }
    set
}

/// Checkers of every invariant, with no clock configuration.
pub fn all_checkers(config: &CheckConfig) -> CheckerSet {
    checker_set(config, &Invariant::ALL, None)
}

#[cfg(test)]
mod tests {
    use crate::events::{Answer, EndKind, EventKind, Flow, OpKind, Request};

    use super::*;
    use testkit::{R1, R2, Script, config, lease, run};

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
            let mut set = all_checkers(&config());
            for event in &script.events {
                assert_eq!(set.on_event(event), Flow::Continue);
            }
            assert_eq!(set.finish(10_000_000), None);
        }
    }

    #[test]
    fn the_set_keeps_the_first_violation_and_halts_from_then_on() {
        let (script, first, second) = two_violations();
        let mut set = all_checkers(&config());
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
        let mut serial = checker_set(&config(), &[Invariant::SerialRenewal], None);
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
            let mut set = checker_set(&config(), chosen, None);
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
        let mut set = checker_set(&config(), &[Invariant::BatchLimit], None);
        feed(&mut set, &script);
        let violation = set.take_violation().expect("a violation");
        assert_eq!(
            (violation.invariant, violation.event.seq),
            (Invariant::BatchLimit, first)
        );
    }

    #[test]
    fn the_contract_audit_names_every_invariant() {
        let audit = include_str!("AUDIT.md");
        for invariant in Invariant::ALL {
            assert!(
                audit.contains(&format!("`{invariant}`")),
                "AUDIT.md does not say which contract sentence {invariant} checks"
            );
        }
    }

    #[test]
    fn finish_reports_what_only_the_end_of_the_run_shows() {
        let mut script = Script::new();
        script.at(100).on(R1, EventKind::StopCalled);
        let mut set = all_checkers(&config());
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
