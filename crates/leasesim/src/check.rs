//! The library API: check your own worker from a test.
//!
//! Terminology:
//! - *check*: a builder over one scenario and one worker constructor; `seeds(n)` runs it and
//!   panics on the first failing seed with the invariant's sentence and how to replay it.
//! - `LEASESIM_SEED`: when set, a check runs only that seed (and prints the whole trace on
//!   failure). `LEASESIM_SCENARIO`: when set, checks of other scenarios are skipped, so one
//!   failure can be reproduced alone.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use leasesim_retention::{Retention, WorkerPorts, WorkerUnderTest};
use leasesim_rt::{Feed, Strategy};
use leasesim_sim::{Scenario, System, WorkerFactory};

use crate::catalog;
use crate::error::parse_seed;
use crate::runner::{Outcome, RunSpec, run};
use crate::systems::{AnyScenario, ScenarioOf};
use crate::trace::{TraceHeader, render};

/// Something that names a scenario of system `S`: a builtin name, a path, or a loaded
/// scenario.
pub trait IntoScenario<S: System> {
    fn into_scenario(self) -> Scenario<S>;
}

impl<S: System> IntoScenario<S> for Scenario<S> {
    fn into_scenario(self) -> Scenario<S> {
        self
    }
}

/// The scenario of system `S` behind `found`; panics naming both systems otherwise.
fn of_system<S: System>(found: std::sync::Arc<dyn AnyScenario>) -> Scenario<S> {
    match found.as_any().downcast_ref::<ScenarioOf<S>>() {
        Some(scenario) => scenario.0.clone(),
        None => panic!(
            "scenario `{}` is a `{}` scenario; this check is of the `{}` system",
            found.name(),
            found.system().name(),
            S::NAME
        ),
    }
}

impl<S: System> IntoScenario<S> for &str {
    /// A builtin name (`"steady"`) or a path to a scenario file. Panics with the error.
    fn into_scenario(self) -> Scenario<S> {
        match catalog::resolve_one(self) {
            Ok(found) => of_system(found),
            Err(err) => panic!("{err}"),
        }
    }
}

impl<S: System> IntoScenario<S> for &Path {
    fn into_scenario(self) -> Scenario<S> {
        of_system(catalog::load(self).unwrap_or_else(|err| panic!("{err}")))
    }
}

impl<S: System> IntoScenario<S> for PathBuf {
    fn into_scenario(self) -> Scenario<S> {
        self.as_path().into_scenario()
    }
}

/// A check of one worker against one scenario of system `S`.
pub struct Check<S: System> {
    scenario: Rc<Scenario<S>>,
    factory: Rc<WorkerFactory<S>>,
    worker_name: String,
    /// The worker is one of the harness's own (so `leasesim replay` can rebuild it).
    builtin: bool,
    strategy: Strategy,
    start_seed: u64,
}

/// What a passing check ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckSummary {
    pub scenario: String,
    pub seeds: u64,
    /// True when `LEASESIM_SCENARIO` names another scenario and nothing ran.
    pub skipped: bool,
}

/// The first failing seed of a check.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckFailure<S: System> {
    pub scenario: String,
    pub worker: String,
    pub seed: u64,
    pub outcome: Outcome<S>,
    /// `leasesim replay ...`, for builtin workers, and the environment to rerun the test.
    pub replay: String,
}

impl<S: System> std::fmt::Display for CheckFailure<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "leasesim: {} in scenario {} at seed {} (worker {}): {}",
            self.outcome.label(),
            self.scenario,
            self.seed,
            self.worker,
            self.outcome.sentence()
        )?;
        write!(f, "{}", self.replay)
    }
}

/// Starts a check of the retention worker `make` builds, against `scenario` (a retention
/// scenario: a builtin name, a path, or a loaded one).
pub fn check<W, F>(scenario: impl IntoScenario<Retention>, make: F) -> Check<Retention>
where
    W: WorkerUnderTest + 'static,
    F: Fn(WorkerPorts) -> W + 'static,
{
    let factory: Rc<WorkerFactory<Retention>> =
        Rc::new(move |ports| Rc::new(make(ports)) as Rc<dyn WorkerUnderTest>);
    check_system(scenario, factory)
}

/// Starts a check of any system's worker, built by `factory`, against `scenario`.
pub fn check_system<S: System>(
    scenario: impl IntoScenario<S>,
    factory: Rc<WorkerFactory<S>>,
) -> Check<S> {
    Check {
        scenario: Rc::new(scenario.into_scenario()),
        factory,
        worker_name: "custom".into(),
        builtin: false,
        strategy: Strategy::Random,
        start_seed: 0,
    }
}

impl<S: System> Check<S> {
    /// Checks a builtin worker of the system by name (`correct`, `stale-release`, ...)
    /// instead.
    pub fn builtin_worker(mut self, name: &str) -> Check<S> {
        let valid: Vec<&str> = S::workers().iter().map(|w| w.name).collect();
        self.factory = S::factory(name).unwrap_or_else(|| {
            panic!(
                "unknown {} worker `{name}`; valid: {}",
                S::NAME,
                valid.join(", ")
            )
        });
        self.worker_name = name.to_string();
        self.builtin = true;
        self
    }

    /// The name failures report for your worker (default `custom`).
    pub fn worker_name(mut self, name: &str) -> Check<S> {
        self.worker_name = name.to_string();
        self.builtin = false;
        self
    }

    pub fn strategy(mut self, strategy: Strategy) -> Check<S> {
        self.strategy = strategy;
        self
    }

    pub fn start_seed(mut self, seed: u64) -> Check<S> {
        self.start_seed = seed;
        self
    }

    /// Runs `count` seeds; panics with the first failure.
    #[track_caller]
    pub fn seeds(self, count: u64) -> CheckSummary {
        match self.try_seeds(count) {
            Ok(summary) => summary,
            Err(failure) => panic!("{failure}"),
        }
    }

    /// Runs `count` seeds (or only `LEASESIM_SEED`); returns the first failure.
    pub fn try_seeds(self, count: u64) -> Result<CheckSummary, Box<CheckFailure<S>>> {
        let name = self.scenario.name.clone();
        if let Ok(only) = std::env::var("LEASESIM_SCENARIO")
            && only != name
        {
            return Ok(CheckSummary {
                scenario: name,
                seeds: 0,
                skipped: true,
            });
        }
        let single = std::env::var("LEASESIM_SEED")
            .ok()
            .map(|text| parse_seed(&text).unwrap_or_else(|err| panic!("LEASESIM_SEED: {err}")));
        let seeds: Box<dyn Iterator<Item = u64>> = match single {
            Some(seed) => Box::new(std::iter::once(seed)),
            None => Box::new((0..count).map(|i| self.start_seed.wrapping_add(i))),
        };
        let base = RunSpec::new(
            self.scenario.clone(),
            &self.worker_name,
            self.factory.clone(),
            Feed::Seed(0),
            self.strategy,
        )
        .calibrated();
        // Panics inside runs become verdicts with their file:line; printing Rust's report for
        // each would bury the one failure this check returns.
        leasesim_rt::capture_panics();
        let was_quiet = leasesim_rt::set_quiet(single.is_none());
        let mut ran = 0;
        for seed in seeds {
            ran += 1;
            let spec = RunSpec {
                feed: Feed::Seed(seed),
                keep_events: single.is_some(),
                ..base.clone()
            };
            let report = run(&spec);
            if single.is_some() {
                let head = TraceHeader::of(&spec, format!("seed {seed}"));
                eprintln!("{}", render(&head, &report));
            }
            if report.failed() {
                leasesim_rt::set_quiet(was_quiet);
                return Err(Box::new(self.failure(seed, report.outcome)));
            }
        }
        leasesim_rt::set_quiet(was_quiet);
        Ok(CheckSummary {
            scenario: name,
            seeds: ran,
            skipped: false,
        })
    }

    fn failure(&self, seed: u64, outcome: Outcome<S>) -> CheckFailure<S> {
        let name = &self.scenario.name;
        let rerun =
            format!("rerun this seed: LEASESIM_SEED={seed} LEASESIM_SCENARIO={name} cargo test");
        let replay = match self.builtin {
            true => {
                let reference = catalog::scenario_ref(&ScenarioOf((*self.scenario).clone()));
                let line = catalog::replay_line(&reference, seed, &self.worker_name, self.strategy);
                format!("{line}\n{rerun}")
            }
            false => rerun,
        };
        CheckFailure {
            scenario: name.clone(),
            worker: self.worker_name.clone(),
            seed,
            outcome,
            replay,
        }
    }
}
