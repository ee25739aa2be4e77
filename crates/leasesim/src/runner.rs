//! One run: a scenario, a worker and a feed (seed or choices) in; a typed verdict out.
//!
//! Terminology:
//! - *feed*: a seed (ChaCha stream) or a recorded choice sequence (replay, shrinking).
//! - *outcome*: [`Outcome::Pass`], or the first thing that went wrong: an invariant
//!   violation, a deadlock, a panic inside a task, a task that spins at one instant, a run
//!   stopped by the wall-clock watchdog (hang), or a liveness failure (the liveness
//!   invariant, or a run that hit its step or time budget).
//! - *checker set*: the invariants whose checkers may halt the run (every invariant but the
//!   expected ones), and the expected ones that only observe. A halt ends the event stream,
//!   so traces and trace hashes depend on the set; it is named in every trace header and
//!   failure record.
//! - *PCT step estimate*: PCT spreads its change points over the steps a run is expected to
//!   take. [`RunSpec::calibrated`] measures it once per scenario and worker: the most steps
//!   of [`CALIBRATION_SEEDS`] unchecked random runs (the same numbers for a campaign, a replay
//!   and a shrink, so a PCT seed replays identically).
//! - *expected violation*: an invariant the scenario declares it breaks on purpose (e.g.
//!   `fencing-off` expects `stale-token-delete`). It is recorded, but does not halt the run
//!   or fail it; every other invariant is still checked.

use std::cell::RefCell;
use std::rc::Rc;

use leasesim_check::{CheckConfig, CheckerSet, ClockConfig, Coverage, Invariant, Violation};
use leasesim_events::Event;
use leasesim_rt::{
    Choice, Feed, Flow, Interrupt, RunOutcome, SimConfig, Stamped, Strategy, TaskInfo,
    pct_steps_from,
};
use leasesim_world::{FaultProfile, Scenario, WorkerFactory, simulate};

/// How a run ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Pass,
    /// A safety invariant broke (the first one, in event order).
    Violation(Box<Violation>),
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
    /// The run was stuck: the wall-clock watchdog stopped it after `limit_ms` of real time, at
    /// virtual instant `at_ms`; `None` when it never came back to the simulation and its
    /// thread was given up.
    Hang {
        limit_ms: u64,
        at_ms: Option<u64>,
    },
    /// Something that had to happen did not: the liveness invariant broke, or the run hit
    /// its step or virtual-time budget.
    Liveness {
        violation: Option<Box<Violation>>,
        reason: String,
    },
}

impl Outcome {
    pub fn is_pass(&self) -> bool {
        matches!(self, Outcome::Pass)
    }

    /// The violated invariant, when there is one.
    pub fn invariant(&self) -> Option<Invariant> {
        match self {
            Outcome::Violation(v) => Some(v.invariant),
            Outcome::Liveness {
                violation: Some(v), ..
            } => Some(v.invariant),
            _ => None,
        }
    }

    pub fn violation(&self) -> Option<&Violation> {
        match self {
            Outcome::Violation(v) => Some(v),
            Outcome::Liveness {
                violation: Some(v), ..
            } => Some(v),
            _ => None,
        }
    }

    /// A stable short label: `pass`, the invariant name, `deadlock`, `panic`, `spin`,
    /// `hang`, `liveness`.
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
            Outcome::Hang { limit_ms, at_ms } => {
                let limit_s = *limit_ms as f64 / 1000.0;
                let stopped = match at_ms {
                    Some(at_ms) => format!("stopped by the watchdog at virtual t={at_ms}ms"),
                    None => "it never returned to the simulation; its thread was given up".into(),
                };
                format!(
                    "the run made no progress for {limit_s:.1} s of real time ({stopped}): a \
                     task loops inside one poll without awaiting anything"
                )
            }
            Outcome::Liveness {
                violation: Some(v), ..
            } => v.sentence.clone(),
            Outcome::Liveness {
                violation: None,
                reason,
            } => reason.clone(),
        }
    }
}

/// What to run.
#[derive(Clone)]
pub struct RunSpec {
    pub scenario: Rc<Scenario>,
    pub worker: String,
    pub factory: Rc<WorkerFactory>,
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

/// Seeds of the unchecked random runs that size PCT's step estimate.
pub const CALIBRATION_SEEDS: std::ops::Range<u64> = 0..4;

impl RunSpec {
    /// A spec with the usual defaults: no events kept, no choices recorded, no limit.
    pub fn new(
        scenario: Rc<Scenario>,
        worker: &str,
        factory: Rc<WorkerFactory>,
        feed: Feed,
        strategy: Strategy,
    ) -> RunSpec {
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
    pub fn calibrated(mut self) -> RunSpec {
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
pub struct RunReport {
    pub outcome: Outcome,
    /// The run was cut off at its event limit before any verdict; `outcome` is `Pass` then.
    pub truncated: bool,
    /// First violation of each expected invariant, in the order they happened.
    pub expected: Vec<Violation>,
    pub coverage: Coverage,
    pub stats: RunStats,
    pub profile: FaultProfile,
    pub events: Vec<Stamped<Event>>,
    pub choices: Vec<Choice>,
}

impl RunReport {
    /// Did the run fail (anything but a pass; expected violations do not count)?
    pub fn failed(&self) -> bool {
        !self.outcome.is_pass()
    }
}

/// The invariants `scenario` expects to break.
pub fn expected_invariants(scenario: &Scenario) -> Vec<Invariant> {
    scenario
        .expect
        .iter()
        .filter_map(|(name, _)| Invariant::from_name(name))
        .collect()
}

/// The checker set of a scenario, in words: how many checkers may halt the run, and which
/// expected ones only observe (e.g. `15 halting` or `14 halting; observing: stale-token-delete`).
pub fn checker_set(scenario: &Scenario) -> String {
    let expected = expected_invariants(scenario);
    let halting = Invariant::ALL.len() - expected.len();
    if expected.is_empty() {
        return format!("{halting} halting (all)");
    }
    let names: Vec<&str> = expected.iter().map(|i| i.name()).collect();
    format!("{halting} halting; observing: {}", names.join(", "))
}

/// The checker configuration of one run: the worker settings its profile drew (with swarm
/// they differ from the scenario's) and the scenario's bounds.
pub fn check_config(scenario: &Scenario, profile: &FaultProfile) -> CheckConfig {
    CheckConfig {
        batch_rows: profile.worker.batch_rows,
        cap_rows: profile.worker.cap_rows,
        retention_ms: profile.worker.retention_ms,
        term_bound_ms: scenario.term_bound_ms,
    }
}

/// How the run's workers keep time: their drawn renewal interval and each replica's drift.
pub fn clock_config(profile: &FaultProfile) -> ClockConfig {
    ClockConfig {
        renew_every_ms: profile.worker.renew_every_ms,
        drift_ppm: profile.clocks.iter().map(|clock| clock.drift_ppm).collect(),
    }
}

/// The observers of one run: halting checkers, non-halting expected ones, and coverage.
struct Observers {
    checked: CheckerSet,
    expected: Vec<CheckerSet>,
    coverage: Coverage,
    events: u64,
    event_limit: u64,
    truncated: bool,
}

impl Observers {
    fn new(scenario: &Scenario, profile: &FaultProfile, event_limit: Option<u64>) -> Observers {
        let (config, clocks) = (check_config(scenario, profile), clock_config(profile));
        let expected_list = expected_invariants(scenario);
        let checked_list: Vec<Invariant> = Invariant::ALL
            .into_iter()
            .filter(|i| !expected_list.contains(i))
            .collect();
        let set =
            |invariants: &[Invariant]| CheckerSet::only(&config, invariants).with_clocks(&clocks);
        Observers {
            checked: set(&checked_list),
            expected: expected_list.iter().map(|&i| set(&[i])).collect(),
            coverage: Coverage::new(),
            events: 0,
            event_limit: event_limit.unwrap_or(u64::MAX),
            truncated: false,
        }
    }

    fn on_event(&mut self, event: &Stamped<Event>) -> Flow {
        self.events += 1;
        if self.events > self.event_limit {
            self.truncated = true;
            return Flow::Halt;
        }
        self.coverage.on_event(event);
        for set in &mut self.expected {
            if set.violation().is_none() {
                set.on_event(event);
            }
        }
        self.checked.on_event(event)
    }
}

/// Runs one simulation and checks it.
pub fn run(spec: &RunSpec) -> RunReport {
    // Filled once the profile is drawn: the checkers judge the settings the run drew.
    let observers: Rc<RefCell<Option<Observers>>> = Rc::new(RefCell::new(None));
    let sink = observers.clone();
    let (scenario, event_limit) = (spec.scenario.clone(), spec.event_limit);
    let observe = move |profile: &FaultProfile| -> leasesim_rt::Observer<Event> {
        *sink.borrow_mut() = Some(Observers::new(&scenario, profile, event_limit));
        Box::new(move |event: &Stamped<Event>| {
            let mut observers = sink.borrow_mut();
            observers
                .as_mut()
                .map_or(Flow::Continue, |o| o.on_event(event))
        })
    };
    let mut config = SimConfig {
        feed: spec.feed.clone(),
        ..SimConfig::seeded(0)
    }
    .with_strategy(spec.strategy)
    .with_recording(spec.record_choices);
    if let Some(steps) = spec.pct_steps {
        config = config.with_pct_steps_estimate(steps);
    }
    if let Some(interrupt) = &spec.interrupt {
        config = config.with_interrupt(interrupt.clone());
    }
    let world_run = simulate(
        &spec.scenario,
        &spec.factory,
        config,
        spec.keep_events,
        Some(Box::new(observe)),
    );
    let mut observers = Rc::try_unwrap(observers)
        .ok()
        .expect("the event log dropped its observer with the simulation")
        .into_inner()
        .expect("the observers are built as soon as the profile is drawn");
    let truncated = observers.truncated && observers.checked.violation().is_none();
    let outcome = match truncated {
        true => Outcome::Pass,
        false => judge(world_run.outcome, &mut observers, world_run.end_ms),
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
        coverage: observers.coverage,
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

/// Turns the runtime's outcome and the checkers' findings into one verdict.
fn judge(outcome: RunOutcome<()>, observers: &mut Observers, end_ms: u64) -> Outcome {
    let from_violation = |violation: Violation| {
        if violation.invariant == Invariant::Liveness {
            let reason = violation.sentence.clone();
            Outcome::Liveness {
                violation: Some(Box::new(violation)),
                reason,
            }
        } else {
            Outcome::Violation(Box::new(violation))
        }
    };
    match outcome {
        RunOutcome::Completed(()) | RunOutcome::Halted => {
            if observers.checked.violation().is_none() {
                observers.checked.finish(end_ms);
            }
            match observers.checked.take_violation() {
                Some(violation) => from_violation(violation),
                None => Outcome::Pass,
            }
        }
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
        RunOutcome::StepLimit { steps } => Outcome::Liveness {
            violation: None,
            reason: format!("the run did not finish within its step budget ({steps} steps)"),
        },
        RunOutcome::TimeLimit { now_ms } => Outcome::Liveness {
            violation: None,
            reason: format!("the run did not finish within its virtual-time budget (t={now_ms}ms)"),
        },
    }
}
