//! One run of any system: a scenario, a worker and a feed (seed or choices) in; a typed verdict
//! out.
//!
//! Terminology:
//! - *feed*: a seed (ChaCha stream) or a recorded choice sequence (replay, shrinking).
//! - *outcome*: [`Outcome::Pass`], or the first thing that went wrong: an invariant
//!   violation, a deadlock, a panic inside a task, a task that spins at one instant, a run
//!   stopped by the wall-clock watchdog (hang), a liveness failure (the system's liveness
//!   invariant), or a run that used up its own budget before its phases ended (`budget`).
//! - *budget*: the most steps any run may take (the runtime's step budget), and the virtual
//!   time a scenario's phases allow plus a margin. Running out is the scenario's doing (it
//!   asks for more than one run can do), not a violation by the worker: it fails the campaign
//!   under its own label, and its sentence says so.
//! - *expected violation*: an invariant the scenario declares it breaks on purpose (e.g.
//!   `fencing-off` expects `stale-token-delete`). It is recorded, but does not halt the run
//!   or fail it; every other invariant is still checked.
//! - *checker set*: the invariants whose checkers may halt the run (every invariant but the
//!   expected ones), and the expected ones that only observe. A halt ends the event stream,
//!   so traces and trace hashes depend on the set; it is named in every trace header and
//!   failure record.
//! - *observer pipeline*: what sees every event of a run: the halting checkers, the observing
//!   ones, the situation coverage and the event limit ([`Observers`]). Any driver of a world
//!   (the benchmarks' tokio driver too) feeds it the same way.
//! - *PCT step estimate*: PCT spreads its change points over the steps a run is expected to
//!   take. [`RunSpec::calibrated`] measures it once per scenario and worker: the most steps
//!   of [`CALIBRATION_SEEDS`] unchecked random runs (the same numbers for a campaign, a replay
//!   and a shrink, so a PCT seed replays identically).

use std::cell::RefCell;
use std::rc::Rc;

use leasesim_events::{Event, Flow, Stamped};
use leasesim_invariants::{
    CheckerSet, Coverage, InFlightCoverage, InvariantName, SituationSet, Violation,
};
use leasesim_rt::{
    Choice, Feed, Interrupt, RunOutcome, SimConfig, Strategy, TaskInfo, pct_steps_from,
};
use leasesim_sim::{
    FaultProfile, ObserverFactory, Scenario, System, WorkerFactory, WorldRun, simulate,
};

/// How a run ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome<S: System> {
    Pass,
    /// A safety invariant broke (the first one, in event order).
    Violation(Box<Violation<S>>),
    /// Tasks were waiting and nothing could ever wake them.
    Deadlock {
        blocked: Vec<TaskInfo>,
    },
    /// A task panicked (the worker or the world hit an assertion).
    Panic {
        task: TaskInfo,
        message: String,
        /// `file:line` of the panic, when the campaign captured it.
        location: Option<String>,
    },
    /// A task was polled over and over at one virtual instant without letting time move.
    Spin {
        task: TaskInfo,
        at_ms: u64,
        polls: u64,
    },
    /// The run was stuck: the wall-clock watchdog stopped it after `limit_ms` of real time
    /// without its virtual time moving, at virtual instant `at_ms`; `None` when it never came
    /// back to the simulation and its thread was given up.
    Hang {
        limit_ms: u64,
        at_ms: Option<u64>,
    },
    /// Something that had to happen did not: the liveness invariant broke.
    Liveness {
        violation: Option<Box<Violation<S>>>,
        reason: String,
    },
    /// The run used up its own budget before its phases ended, with no invariant broken: the
    /// scenario's doing, not the worker's.
    Budget {
        budget: Budget,
        /// Steps taken and the virtual instant reached when it ran out.
        steps: u64,
        at_ms: u64,
    },
}

/// Which of a run's budgets ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budget {
    /// The most steps (polls) any run may take.
    Steps,
    /// The virtual time the scenario's phases allow, plus a margin.
    VirtualTime,
}

/// The sentence of a run that ran out of its budget: whose doing it is, and what to change.
pub fn budget_sentence(budget: Budget, steps: u64, at_ms: u64) -> String {
    let ran_out = match budget {
        Budget::Steps => format!("used up its step budget ({steps} steps) at t={at_ms}ms"),
        Budget::VirtualTime => format!("reached the end of its virtual-time budget at t={at_ms}ms"),
    };
    format!(
        "the run {ran_out} before its phases ended: the scenario's budget ran out, no invariant \
         was broken, and this is not a worker violation; the scenario asks for more than one run \
         can do (shorten duration_ms or liveness_ms, use fewer replicas, or slow its rates)"
    )
}

impl<S: System> Outcome<S> {
    pub fn is_pass(&self) -> bool {
        matches!(self, Outcome::Pass)
    }

    /// The violated invariant, when there is one.
    pub fn invariant(&self) -> Option<S::Invariant> {
        self.violation().map(|v| v.invariant)
    }

    pub fn violation(&self) -> Option<&Violation<S>> {
        match self {
            Outcome::Violation(v) => Some(v),
            Outcome::Liveness {
                violation: Some(v), ..
            } => Some(v),
            _ => None,
        }
    }

    /// A stable short label: `pass`, the invariant name, `deadlock`, `panic`, `spin`,
    /// `hang`, `liveness`, `budget`.
    pub fn label(&self) -> String {
        match self {
            Outcome::Pass => "pass".into(),
            Outcome::Violation(v) => v.invariant.name().into(),
            Outcome::Deadlock { .. } => "deadlock".into(),
            Outcome::Panic { .. } => "panic".into(),
            Outcome::Spin { .. } => "spin".into(),
            Outcome::Hang { .. } => "hang".into(),
            Outcome::Liveness {
                violation: Some(v), ..
            } => v.invariant.name().into(),
            Outcome::Liveness {
                violation: None, ..
            } => "liveness".into(),
            Outcome::Budget { .. } => "budget".into(),
        }
    }

    /// One plain sentence saying what went wrong.
    pub fn sentence(&self) -> String {
        match self {
            Outcome::Pass => "every invariant held".into(),
            Outcome::Violation(v) => v.sentence.clone(),
            Outcome::Deadlock { blocked } => {
                let names: Vec<String> = blocked.iter().map(ToString::to_string).collect();
                format!("deadlock: no task can progress ({})", names.join(", "))
            }
            Outcome::Panic {
                task,
                message,
                location,
            } => match location {
                Some(at) => format!("{task} panicked at {at}: {message}"),
                None => format!("{task} panicked: {message}"),
            },
            Outcome::Spin { task, at_ms, polls } => format!(
                "{task} was polled {polls} times at t={at_ms}ms without letting virtual time \
                 move (a loop of zero-length sleeps or yields that waits for nothing)"
            ),
            Outcome::Hang { limit_ms, at_ms } => hang_sentence(*limit_ms, *at_ms),
            Outcome::Liveness {
                violation: Some(v), ..
            } => v.sentence.clone(),
            Outcome::Liveness {
                violation: None,
                reason,
            } => reason.clone(),
            Outcome::Budget {
                budget,
                steps,
                at_ms,
            } => budget_sentence(*budget, *steps, *at_ms),
        }
    }

    /// `pass`, or `VIOLATION name: sentence`, `DEADLOCK: ...`, etc.
    pub fn verdict_line(&self) -> String {
        match self {
            Outcome::Pass => "pass: every invariant held".into(),
            Outcome::Violation(v) => {
                format!("VIOLATION {}: {}", v.invariant.name(), v.sentence)
            }
            Outcome::Deadlock { .. } => format!("DEADLOCK: {}", self.sentence()),
            Outcome::Panic { .. } => format!("PANIC: {}", self.sentence()),
            Outcome::Spin { .. } => format!("SPIN: {}", self.sentence()),
            Outcome::Hang { .. } => format!("HANG: {}", self.sentence()),
            Outcome::Liveness { .. } => format!("LIVENESS: {}", self.sentence()),
            Outcome::Budget { .. } => format!("BUDGET: {}", self.sentence()),
        }
    }
}

/// The sentence of a hang: the watchdog's limit, and where it stopped the run (if it did).
pub fn hang_sentence(limit_ms: u64, at_ms: Option<u64>) -> String {
    let limit_s = limit_ms as f64 / 1000.0;
    let stopped = match at_ms {
        Some(at_ms) => format!("stopped by the watchdog at virtual t={at_ms}ms"),
        None => "it never returned to the simulation; its thread was given up".into(),
    };
    format!(
        "the run made no progress for {limit_s:.1} s of real time ({stopped}): a task loops \
         inside one poll without awaiting anything"
    )
}

/// What to run.
pub struct RunSpec<S: System> {
    pub scenario: Rc<Scenario<S>>,
    pub worker: String,
    pub factory: Rc<WorkerFactory<S>>,
    pub feed: Feed,
    pub strategy: Strategy,
    /// Keep every event (traces); fuzzing keeps none.
    pub keep_events: bool,
    /// Record every choice (replay files, shrinking).
    pub record_choices: bool,
    /// Stop the run once this many events were emitted (shrinking: a candidate that is
    /// already longer than the best counterexample cannot win). `None`: no limit.
    pub event_limit: Option<u64>,
    /// PCT's step estimate (see the module docs); `None` until [`RunSpec::calibrated`].
    pub pct_steps: Option<u64>,
    /// Raised from outside to end a stuck run (the campaign's watchdog).
    pub interrupt: Option<Interrupt>,
}

impl<S: System> Clone for RunSpec<S> {
    fn clone(&self) -> Self {
        RunSpec {
            scenario: self.scenario.clone(),
            worker: self.worker.clone(),
            factory: self.factory.clone(),
            feed: self.feed.clone(),
            strategy: self.strategy,
            keep_events: self.keep_events,
            record_choices: self.record_choices,
            event_limit: self.event_limit,
            pct_steps: self.pct_steps,
            interrupt: self.interrupt.clone(),
        }
    }
}

/// Seeds of the unchecked random runs that size PCT's step estimate.
pub const CALIBRATION_SEEDS: std::ops::Range<u64> = 0..4;

impl<S: System> RunSpec<S> {
    /// A spec with the usual defaults: no events kept, no choices recorded, no limit.
    pub fn new(
        scenario: Rc<Scenario<S>>,
        worker: &str,
        factory: Rc<WorkerFactory<S>>,
        feed: Feed,
        strategy: Strategy,
    ) -> RunSpec<S> {
        RunSpec {
            scenario,
            worker: worker.to_string(),
            factory,
            feed,
            strategy,
            keep_events: false,
            record_choices: false,
            event_limit: None,
            pct_steps: None,
            interrupt: None,
        }
    }

    /// The same spec with PCT's step estimate measured (a no-op for other strategies, or when
    /// already measured): the most steps of the [`CALIBRATION_SEEDS`] runs, unchecked, so no
    /// violation cuts them short.
    pub fn calibrated(mut self) -> RunSpec<S> {
        if matches!(self.strategy, Strategy::Pct { .. }) && self.pct_steps.is_none() {
            let steps = CALIBRATION_SEEDS.map(|seed| {
                let mut config = SimConfig::seeded(seed).with_recording(false);
                if let Some(interrupt) = &self.interrupt {
                    config = config.with_interrupt(interrupt.clone());
                }
                simulate(&self.scenario, &self.factory, config, false, None).steps
            });
            self.pct_steps = Some(pct_steps_from(steps));
        }
        // invariant: a PCT spec leaves here with its estimate.
        debug_assert!(!matches!(self.strategy, Strategy::Pct { .. }) || self.pct_steps.is_some());
        self
    }

    /// The runtime configuration of this spec's run.
    pub fn sim_config(&self) -> SimConfig {
        let mut config = SimConfig {
            feed: self.feed.clone(),
            ..SimConfig::seeded(0)
        }
        .with_strategy(self.strategy)
        .with_recording(self.record_choices);
        if let Some(steps) = self.pct_steps {
            config = config.with_pct_steps_estimate(steps);
        }
        if let Some(interrupt) = &self.interrupt {
            config = config.with_interrupt(interrupt.clone());
        }
        config
    }
}

/// Counters of one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunStats {
    pub steps: u64,
    pub draws: u64,
    pub events: u64,
    pub end_ms: u64,
    pub trace_hash: u64,
    /// PCT change points drawn, and reached (0 and 0 for other strategies).
    pub pct_drawn: u32,
    pub pct_applied: u32,
}

/// Everything one run produced.
#[derive(Debug)]
pub struct RunReport<S: System> {
    pub outcome: Outcome<S>,
    /// The run was cut off at its event limit before any verdict; `outcome` is `Pass` then.
    pub truncated: bool,
    /// First violation of each expected invariant, in the order they happened.
    pub expected: Vec<Violation<S>>,
    /// The "sometimes" situations the run reached.
    pub coverage: SituationSet<S::Situation>,
    /// The in-flight cells the run reached (see [`InFlightCoverage`]).
    pub in_flight: u128,
    pub stats: RunStats,
    pub profile: FaultProfile<S>,
    pub events: Vec<Stamped<Event<S>>>,
    pub choices: Vec<Choice>,
}

impl<S: System> RunReport<S> {
    /// Did the run fail (anything but a pass; expected violations do not count)?
    pub fn failed(&self) -> bool {
        !self.outcome.is_pass()
    }
}

/// The checker set of a scenario, in words: how many checkers may halt the run, and which
/// expected ones only observe (e.g. `27 halting (all)` or
/// `24 halting; observing: stale-token-delete`).
pub fn checker_set<S: System>(scenario: &Scenario<S>) -> String {
    let expected = scenario.expected();
    let halting = S::Invariant::ALL.len() - expected.len();
    if expected.is_empty() {
        return format!("{halting} halting (all)");
    }
    let names: Vec<&str> = expected.iter().map(|i| i.name()).collect();
    format!("{halting} halting; observing: {}", names.join(", "))
}

/// One run's drawn faults.
pub type Profile<S> = FaultProfile<S>;

/// The observers of one run: halting checkers, non-halting expected ones, and coverage.
pub struct Observers<S: System> {
    checked: CheckerSet<S, S::Checker>,
    expected: Vec<CheckerSet<S, S::Checker>>,
    coverage: S::Coverage,
    in_flight: InFlightCoverage<S>,
    events: u64,
    event_limit: u64,
    truncated: bool,
}

impl<S: System> Observers<S> {
    /// The observers of a run of `scenario` that drew `profile`.
    pub fn new(
        scenario: &Scenario<S>,
        profile: &FaultProfile<S>,
        event_limit: Option<u64>,
    ) -> Observers<S> {
        let expected_list = scenario.expected();
        let checked_list: Vec<S::Invariant> = S::Invariant::ALL
            .iter()
            .copied()
            .filter(|i| !expected_list.contains(i))
            .collect();
        let set = |invariants: &[S::Invariant]| {
            CheckerSet::new(S::checkers(scenario, profile, invariants))
        };
        Observers {
            checked: set(&checked_list),
            expected: expected_list.iter().map(|&i| set(&[i])).collect(),
            coverage: S::Coverage::default(),
            in_flight: InFlightCoverage::default(),
            events: 0,
            event_limit: event_limit.unwrap_or(u64::MAX),
            truncated: false,
        }
    }

    /// Reads one event: coverage, the observing checkers, then the halting ones.
    pub fn on_event(&mut self, event: &Stamped<Event<S>>) -> Flow {
        self.events += 1;
        if self.events > self.event_limit {
            self.truncated = true;
            return Flow::Halt;
        }
        self.coverage.on_event(event);
        self.in_flight.on_event(event);
        for set in &mut self.expected {
            if set.violation().is_none() {
                set.on_event(event);
            }
        }
        self.checked.on_event(event)
    }

    /// The checkers' verdict at the end of the run (virtual time `end_ms`): the first
    /// violation of a halting checker, if any.
    pub fn verdict(&mut self, end_ms: u64) -> Option<Violation<S>> {
        if self.checked.violation().is_none() {
            self.checked.finish(end_ms);
        }
        self.checked.take_violation()
    }
}

/// The observers of one run, shared with the event sink: filled in when the profile is drawn.
type SharedObservers<S> = Rc<RefCell<Option<Observers<S>>>>;

/// The observers a run of `spec` builds from its drawn profile, and the factory that builds
/// them for the event sink.
fn observers_of<S: System>(spec: &RunSpec<S>) -> (SharedObservers<S>, ObserverFactory<S>) {
    let observers: SharedObservers<S> = Rc::new(RefCell::new(None));
    let sink = observers.clone();
    let (scenario, event_limit) = (spec.scenario.clone(), spec.event_limit);
    let observe = move |profile: &FaultProfile<S>| -> leasesim_sim::Observer<Event<S>> {
        *sink.borrow_mut() = Some(Observers::new(&scenario, profile, event_limit));
        Box::new(move |event: &Stamped<Event<S>>| {
            let mut observers = sink.borrow_mut();
            observers
                .as_mut()
                .map_or(Flow::Continue, |o| o.on_event(event))
        })
    };
    (observers, Box::new(observe))
}

/// Runs one simulation and checks it.
pub fn run<S: System>(spec: &RunSpec<S>) -> RunReport<S> {
    let (observers, observe) = observers_of(spec);
    let world_run = simulate(
        &spec.scenario,
        &spec.factory,
        spec.sim_config(),
        spec.keep_events,
        Some(observe),
    );
    report(world_run, observers)
}

/// Runs `spec`'s scenario once in real time on tokio, every request applied by the store
/// hook `open` sets up for the drawn profile, the fault plan drawn from `seed`, and checks it
/// as a simulated run is checked (feature `real`; [`leasesim_real::world`] says how far a
/// seed reproduces a real run). `open`'s error ends the run before it starts.
#[cfg(feature = "real")]
pub fn run_real<S: System, E>(
    spec: &RunSpec<S>,
    seed: u64,
    open: impl FnOnce(&FaultProfile<S>) -> Result<Rc<dyn leasesim_sim::StoreHook<S>>, E>,
) -> Result<RunReport<S>, E> {
    let (observers, observe) = observers_of(spec);
    let world_run = leasesim_real::world::run_on_store(
        &spec.scenario,
        &spec.factory,
        open,
        seed,
        spec.keep_events,
        Some(observe),
    )?;
    Ok(report(world_run, observers))
}

/// A finished run judged by its observers.
fn report<S: System>(world_run: WorldRun<S>, observers: SharedObservers<S>) -> RunReport<S> {
    let mut observers = Rc::try_unwrap(observers)
        .ok()
        .expect("the event sink dropped its observer with the run")
        .into_inner()
        .expect("the observers were built when the profile was drawn");
    let truncated = observers.truncated && observers.checked.violation().is_none();
    let outcome = match truncated {
        true => Outcome::Pass,
        false => judge(
            world_run.outcome,
            &mut observers,
            world_run.end_ms,
            world_run.steps,
        ),
    };
    let expected = observers
        .expected
        .iter_mut()
        .filter_map(CheckerSet::take_violation)
        .collect();
    RunReport {
        outcome,
        truncated,
        expected,
        coverage: observers.coverage.reached(),
        in_flight: observers.in_flight.reached(),
        stats: RunStats {
            steps: world_run.steps,
            draws: world_run.draws,
            events: world_run.events_emitted,
            end_ms: world_run.end_ms,
            trace_hash: world_run.trace_hash,
            pct_drawn: world_run.pct.drawn,
            pct_applied: world_run.pct.applied,
        },
        profile: world_run.profile,
        events: world_run.events,
        choices: world_run.choices,
    }
}

/// Turns the runtime's outcome and the checkers' findings into one verdict. `steps` is how
/// many the run took.
pub fn judge<S: System>(
    outcome: RunOutcome<()>,
    observers: &mut Observers<S>,
    end_ms: u64,
    steps: u64,
) -> Outcome<S> {
    match outcome {
        RunOutcome::Completed(()) | RunOutcome::Halted => match observers.verdict(end_ms) {
            Some(violation) if violation.invariant.is_liveness() => {
                let reason = violation.sentence.clone();
                Outcome::Liveness {
                    violation: Some(Box::new(violation)),
                    reason,
                }
            }
            Some(violation) => Outcome::Violation(Box::new(violation)),
            None => Outcome::Pass,
        },
        RunOutcome::Deadlock { blocked } => Outcome::Deadlock { blocked },
        RunOutcome::Panic {
            task,
            message,
            location,
        } => Outcome::Panic {
            task,
            message,
            location,
        },
        RunOutcome::Spin { task, at_ms, polls } => Outcome::Spin { task, at_ms, polls },
        RunOutcome::Interrupted { now_ms } => Outcome::Hang {
            limit_ms: 0,
            at_ms: Some(now_ms),
        },
        RunOutcome::StepLimit { steps } => Outcome::Budget {
            budget: Budget::Steps,
            steps,
            at_ms: end_ms,
        },
        RunOutcome::TimeLimit { now_ms } => Outcome::Budget {
            budget: Budget::VirtualTime,
            steps,
            at_ms: now_ms,
        },
    }
}

#[cfg(test)]
mod tests {
    use leasesim_retention::Retention;
    use leasesim_sim::Workers;

    use super::*;

    /// Observers of a real `steady` run (their verdict is a pass), and the scenario.
    fn steady_observers() -> Observers<Retention> {
        let scenario = crate::catalog::resolve_typed::<Retention>("steady").expect("a builtin");
        let factory = Retention::factory("correct").expect("the correct worker");
        let spec = RunSpec::new(
            Rc::new(scenario),
            "correct",
            factory,
            Feed::Seed(0),
            Strategy::Random,
        );
        let report = run(&spec);
        assert!(report.outcome.is_pass(), "{:?}", report.outcome);
        Observers::new(&spec.scenario, &report.profile, None)
    }

    #[test]
    fn a_run_out_of_its_budget_is_the_scenarios_doing_not_a_worker_violation() {
        let steps = RunOutcome::StepLimit { steps: 20_000_000 };
        let outcome = judge(steps, &mut steady_observers(), 99_020, 20_000_000);
        assert_eq!(outcome.label(), "budget");
        assert!(outcome.violation().is_none(), "{outcome:?}");
        let verdict = outcome.verdict_line();
        for piece in [
            "BUDGET: the run used up its step budget (20000000 steps) at t=99020ms",
            "the scenario's budget ran out",
            "not a worker violation",
            "shorten duration_ms or liveness_ms",
        ] {
            assert!(verdict.contains(piece), "`{piece}` missing from: {verdict}");
        }
        assert!(!verdict.contains("liveness:"), "{verdict}");
        let time = RunOutcome::TimeLimit { now_ms: 4_000 };
        let outcome = judge(time, &mut steady_observers(), 4_000, 123);
        assert_eq!(outcome.label(), "budget");
        assert!(
            outcome
                .sentence()
                .starts_with("the run reached the end of its virtual-time budget at t=4000ms"),
            "{}",
            outcome.sentence()
        );
    }
}
