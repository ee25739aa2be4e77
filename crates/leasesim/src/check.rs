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

use leasesim_rt::{Feed, Strategy};
use leasesim_world::{Scenario, WorkerFactory, WorkerPorts, WorkerUnderTest};

use crate::catalog;
use crate::error::parse_seed;
use crate::runner::{Outcome, RunSpec, run};
use crate::trace::{TraceHeader, render};

/// Something that names a scenario: a builtin name, a path, or a loaded scenario.
pub trait IntoScenario {
    fn into_scenario(self) -> Scenario;
}

impl IntoScenario for Scenario {
    /// The scenario as given; panics if its `expect` list names an unknown invariant.
    fn into_scenario(self) -> Scenario {
        catalog::checked(self).unwrap_or_else(|err| panic!("{err}"))
    }
}

impl IntoScenario for &str {
    /// A builtin name (`"steady"`) or a path to a scenario file. Panics with the error.
    fn into_scenario(self) -> Scenario {
        match catalog::resolve_scenarios(self) {
            Ok(mut found) if found.len() == 1 => found.remove(0),
            Ok(_) => panic!("leasesim::check takes one scenario, not `{self}`"),
            Err(err) => panic!("{err}"),
        }
    }
}

impl IntoScenario for &Path {
    fn into_scenario(self) -> Scenario {
        catalog::load(self).unwrap_or_else(|err| panic!("{err}"))
    }
}

impl IntoScenario for PathBuf {
    fn into_scenario(self) -> Scenario {
        self.as_path().into_scenario()
    }
}

/// A check of one worker against one scenario.
pub struct Check {
    scenario: Rc<Scenario>,
    factory: Rc<WorkerFactory>,
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
pub struct CheckFailure {
    pub scenario: String,
    pub worker: String,
    pub seed: u64,
    pub outcome: Outcome,
    /// `leasesim replay ...`, for builtin workers, and the environment to rerun the test.
    pub replay: String,
}

impl std::fmt::Display for CheckFailure {
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

/// Starts a check of the worker `make` builds, against `scenario`.
pub fn check<W, F>(scenario: impl IntoScenario, make: F) -> Check
where
    W: WorkerUnderTest + 'static,
    F: Fn(WorkerPorts) -> W + 'static,
{
    let factory: Rc<WorkerFactory> =
        Rc::new(move |ports| Rc::new(make(ports)) as Rc<dyn WorkerUnderTest>);
    Check {
        scenario: Rc::new(scenario.into_scenario()),
        factory,
        worker_name: "custom".into(),
        builtin: false,
        strategy: Strategy::Random,
        start_seed: 0,
    }
}

impl Check {
    /// Checks a builtin worker by name (`correct`, `stale-release`, ...) instead.
    pub fn builtin_worker(mut self, name: &str) -> Check {
        self.factory = catalog::worker_factory(name).unwrap_or_else(|err| panic!("{err}"));
        self.worker_name = name.to_string();
        self.builtin = true;
        self
    }

    /// The name failures report for your worker (default `custom`).
    pub fn worker_name(mut self, name: &str) -> Check {
        self.worker_name = name.to_string();
        self.builtin = false;
        self
    }

    pub fn strategy(mut self, strategy: Strategy) -> Check {
        self.strategy = strategy;
        self
    }

    pub fn start_seed(mut self, seed: u64) -> Check {
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
    pub fn try_seeds(self, count: u64) -> Result<CheckSummary, Box<CheckFailure>> {
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

    fn failure(&self, seed: u64, outcome: Outcome) -> CheckFailure {
        let name = &self.scenario.name;
        let rerun =
            format!("rerun this seed: LEASESIM_SEED={seed} LEASESIM_SCENARIO={name} cargo test");
        let replay = match self.builtin {
            true => {
                let reference = catalog::scenario_ref(&self.scenario);
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
