//! The library API: check your own worker from a test.
//!
//! Terminology:
//! - *check*: a builder over one scenario and one worker constructor; `seeds(n)` runs it and
//!   panics on the first failing seed with the invariant's sentence and how to replay it.
//! - *toolbox*: what a failing check also hands back, when asked: the failing run's whole
//!   trace ([`Check::trace`]), its shrunk counterexample's trace ([`Check::shrink`]), its HTML
//!   timeline ([`Check::html`]).
//! - `LEASESIM_SEED`: when set, a check runs only that seed (and prints the whole trace on
//!   failure). `LEASESIM_SCENARIO`: when set, checks of other scenarios are skipped, so one
//!   failure can be reproduced alone. `LEASESIM_FAILURES`: a failure database file (as
//!   `leasesim fuzz` keeps): a check replays the seeds recorded for its scenario, worker and
//!   strategy first, and records the seed it finds failing.

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use leasesim_retention::{AnyWorker, Retention, WorkerPorts, WorkerUnderTest};
use leasesim_rt::{Feed, Strategy};
use leasesim_sim::{Scenario, System, WorkerFactory};
use leasesim_timeline::Render;

use crate::catalog;
use crate::error::parse_seed;
use crate::faildb::{Entry, FailureDb};
use crate::runner::{Outcome, RunReport, RunSpec, checker_set, run};
use crate::shrink::shrink;
use crate::systems::{AnyScenario, ScenarioOf};
use crate::trace::{TraceHeader, render};

/// The shrink budget of [`Check::shrink`]: `leasesim shrink`'s default.
pub const SHRINK_BUDGET: u64 = 20_000;

/// Something that names a scenario of system `S`: a builtin name, a path, or a loaded
/// scenario.
pub trait IntoScenario<S: System + Render> {
    #[track_caller]
    fn into_scenario(self) -> Scenario<S>;
}

impl<S: System + Render> IntoScenario<S> for Scenario<S> {
    fn into_scenario(self) -> Scenario<S> {
        self
    }
}

/// The scenario of system `S` behind `found`; panics naming both systems otherwise.
#[track_caller]
fn of_system<S: System + Render>(found: Arc<dyn AnyScenario>) -> Scenario<S> {
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

impl<S: System + Render> IntoScenario<S> for &str {
    /// A builtin name (`"steady"`) or a path to a scenario file. Panics with the error.
    #[track_caller]
    fn into_scenario(self) -> Scenario<S> {
        match catalog::resolve_one(self) {
            Ok(found) => of_system(found),
            Err(err) => panic!("{err}"),
        }
    }
}

impl<S: System + Render> IntoScenario<S> for &Path {
    #[track_caller]
    fn into_scenario(self) -> Scenario<S> {
        match catalog::load(self) {
            Ok(found) => of_system(found),
            Err(err) => panic!("{err}"),
        }
    }
}

impl<S: System + Render> IntoScenario<S> for PathBuf {
    #[track_caller]
    fn into_scenario(self) -> Scenario<S> {
        self.as_path().into_scenario()
    }
}

/// What a failing check hands back besides its verdict (see the module docs).
#[derive(Clone, Debug, Default)]
struct Toolbox {
    trace: bool,
    shrink_budget: Option<u64>,
    html: Option<PathBuf>,
}

/// A check of one worker against one scenario of system `S`.
pub struct Check<S: System + Render> {
    scenario: Rc<Scenario<S>>,
    factory: Rc<WorkerFactory<S>>,
    worker_name: String,
    /// The worker is one of the harness's own (so `leasesim replay` can rebuild it).
    builtin: bool,
    strategy: Strategy,
    start_seed: u64,
    toolbox: Toolbox,
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
pub struct CheckFailure<S: System + Render> {
    pub scenario: String,
    pub worker: String,
    pub seed: u64,
    pub outcome: Outcome<S>,
    /// `leasesim replay ...`, for builtin workers, and the environment to rerun the test.
    pub replay: String,
    /// What the toolbox produced: the failing run's trace, the shrunk trace, where the
    /// timeline was written (empty when the check asked for none).
    pub details: String,
}

impl<S: System + Render> std::fmt::Display for CheckFailure<S> {
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
        if !self.details.is_empty() {
            writeln!(f, "{}", self.details.trim_end())?;
        }
        write!(f, "{}", self.replay)
    }
}

/// Starts a check of the retention worker `make` builds, against `scenario` (a retention
/// scenario: a builtin name, a path, or a loaded one).
///
/// `make` gets the replica's ports, including `ports.config`: the scenario's worker
/// settings, which the run judges the worker against.
#[track_caller]
pub fn check<W, F>(scenario: impl IntoScenario<Retention>, make: F) -> Check<Retention>
where
    W: WorkerUnderTest<Report = <AnyWorker as WorkerUnderTest>::Report> + 'static,
    F: Fn(WorkerPorts) -> W + 'static,
{
    let factory: Rc<WorkerFactory<Retention>> =
        Rc::new(move |ports| Rc::new(make(ports)) as Rc<AnyWorker>);
    check_system(scenario, factory)
}

/// Starts a check of any system's worker, built by `factory`, against `scenario`.
#[track_caller]
pub fn check_system<S: System + Render>(
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
        toolbox: Toolbox::default(),
    }
}

impl<S: System + Render> Check<S> {
    /// Checks a builtin worker of the system by name (`correct`, `stale-release`, ...)
    /// instead.
    #[track_caller]
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

    /// On failure, also show the failing run's whole trace.
    pub fn trace(mut self) -> Check<S> {
        self.toolbox.trace = true;
        self
    }

    /// On failure, shrink the failing run (as `leasesim shrink` does, with its default
    /// budget) and show the shrunk trace, with the scenario changes the shrink made.
    pub fn shrink(mut self) -> Check<S> {
        self.toolbox.shrink_budget = Some(SHRINK_BUDGET);
        self
    }

    /// On failure, write the HTML timeline of the failing run (the shrunk one, with
    /// [`Check::shrink`]) to `path`.
    pub fn html(mut self, path: impl Into<PathBuf>) -> Check<S> {
        self.toolbox.html = Some(path.into());
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

    /// Runs `count` seeds (or only `LEASESIM_SEED`), after the seeds `LEASESIM_FAILURES`
    /// recorded; returns the first failure.
    #[track_caller]
    pub fn try_seeds(self, count: u64) -> Result<CheckSummary, Box<CheckFailure<S>>> {
        // Bad input, not a passing check: a count of 0 runs nothing, and seeds never wrap.
        assert!(
            count > 0,
            "a check of 0 seeds would run nothing: ask for 1 or more"
        );
        let last = self.start_seed.checked_add(count - 1);
        assert!(
            last.is_some(),
            "start seed {} and {count} seeds run past the last seed ({}): seeds never wrap",
            self.start_seed,
            u64::MAX
        );
        let name = self.scenario.name.clone();
        if let Ok(only) = std::env::var("LEASESIM_SCENARIO")
            && only != name
        {
            let summary = CheckSummary {
                scenario: name,
                seeds: 0,
                skipped: true,
            };
            return Ok(summary);
        }
        let single = std::env::var("LEASESIM_SEED")
            .ok()
            .map(|text| parse_seed(&text).unwrap_or_else(|err| panic!("LEASESIM_SEED: {err}")));
        let mut db = failure_db();
        let seeds = self.seed_list(count, single, db.as_ref());
        let base = self.spec(Feed::Seed(0)).calibrated();
        // Panics inside runs become verdicts with their file:line; printing Rust's report for
        // each would bury the one failure this check returns.
        leasesim_rt::capture_panics();
        let was_quiet = leasesim_rt::set_quiet(single.is_none());
        let found = first_failure(&base, &seeds, single.is_some());
        leasesim_rt::set_quiet(was_quiet);
        match found {
            Ok(ran) => Ok(CheckSummary {
                scenario: name,
                seeds: ran,
                skipped: false,
            }),
            Err(found) => {
                let (seed, report) = *found;
                let failure = self.failure(&base, seed, report);
                record(
                    db.as_mut(),
                    &failure,
                    &self.reference(),
                    self.strategy,
                    &base,
                );
                Err(Box::new(failure))
            }
        }
    }

    /// The spec of one run of this check.
    fn spec(&self, feed: Feed) -> RunSpec<S> {
        RunSpec::new(
            self.scenario.clone(),
            &self.worker_name,
            self.factory.clone(),
            feed,
            self.strategy,
        )
    }

    /// The seeds to run: the one `LEASESIM_SEED` names; else the recorded failing seeds of
    /// this scenario, worker and strategy, then `count` seeds from the start seed.
    fn seed_list(&self, count: u64, single: Option<u64>, db: Option<&FailureDb>) -> Vec<u64> {
        if let Some(seed) = single {
            return vec![seed];
        }
        let (reference, strategy) = (self.reference(), self.strategy.to_string());
        let mut seeds: Vec<u64> = db
            .map(|db| db.entries())
            .unwrap_or_default()
            .iter()
            .filter(|e| e.scenario == reference && e.worker == self.worker_name)
            .filter(|e| e.strategy == strategy)
            .map(|e| e.seed)
            .collect();
        let recorded = seeds.len();
        seeds.extend((0..count).map(|i| self.start_seed + i));
        // invariant: recorded seeds come first, then exactly `count` more.
        debug_assert_eq!(seeds.len(), recorded + count as usize);
        seeds
    }

    /// How replay lines and the failure database name this check's scenario.
    fn reference(&self) -> String {
        catalog::scenario_ref(&ScenarioOf((*self.scenario).clone()))
    }

    fn failure(&self, base: &RunSpec<S>, seed: u64, report: RunReport<S>) -> CheckFailure<S> {
        let name = &self.scenario.name;
        let rerun =
            format!("rerun this seed: LEASESIM_SEED={seed} LEASESIM_SCENARIO={name} cargo test");
        let replay = match self.builtin {
            true => {
                let line =
                    catalog::replay_line(&self.reference(), seed, &self.worker_name, self.strategy);
                format!("{line}\n{rerun}")
            }
            false => rerun,
        };
        CheckFailure {
            scenario: name.clone(),
            worker: self.worker_name.clone(),
            seed,
            details: self.toolbox.details(base, seed),
            outcome: report.outcome,
            replay,
        }
    }
}

impl Toolbox {
    /// Runs what was asked for on the failing `seed`; the text to show with the failure.
    fn details<S: System + Render>(&self, base: &RunSpec<S>, seed: u64) -> String {
        let mut out = String::new();
        if !self.trace && self.shrink_budget.is_none() && self.html.is_none() {
            return out;
        }
        let spec = RunSpec {
            feed: Feed::Seed(seed),
            keep_events: true,
            ..base.clone()
        };
        let head = TraceHeader::of(&spec, format!("seed {seed}"));
        let report = run(&spec);
        if self.trace {
            out.push_str(&format!("the failing run:\n{}\n", render(&head, &report)));
        }
        let shrunk = self.shrink_budget.and_then(|budget| shrink(&spec, budget));
        let html = match &shrunk {
            Some(shrunk) => {
                let head = TraceHeader {
                    overrides: shrunk.overrides.lines(),
                    feed: format!(
                        "seed {seed}, shrunk from {} to {} events",
                        shrunk.original_events, shrunk.report.stats.events
                    ),
                    ..head.clone()
                };
                let text = render(&head, &shrunk.report);
                out.push_str(&format!("the shrunk counterexample:\n{text}\n"));
                crate::html::render(&head, &shrunk.report, shrunk.scenario.replicas)
            }
            None => crate::html::render(&head, &report, spec.scenario.replicas),
        };
        if let Some(path) = &self.html {
            out.push_str(&write_timeline(path, &html));
        }
        out
    }
}

/// Writes a timeline; the line saying where (or why not).
fn write_timeline(path: &Path, html: &str) -> String {
    match std::fs::write(path, html) {
        Ok(()) => format!("timeline written to {}\n", path.display()),
        Err(err) => format!("cannot write the timeline to {}: {err}\n", path.display()),
    }
}

/// Runs `seeds` in order; the seeds run, or the first failing seed and its report.
fn first_failure<S: System + Render>(
    base: &RunSpec<S>,
    seeds: &[u64],
    print_trace: bool,
) -> Result<u64, Box<(u64, RunReport<S>)>> {
    for (ran, &seed) in seeds.iter().enumerate() {
        let spec = RunSpec {
            feed: Feed::Seed(seed),
            keep_events: print_trace,
            ..base.clone()
        };
        let report = run(&spec);
        if print_trace {
            let head = TraceHeader::of(&spec, format!("seed {seed}"));
            eprintln!("{}", render(&head, &report));
        }
        if report.failed() {
            // invariant: the seeds before this one passed.
            debug_assert!(ran < seeds.len());
            return Err(Box::new((seed, report)));
        }
    }
    Ok(seeds.len() as u64)
}

/// The failure database `LEASESIM_FAILURES` names, if any (a bad file panics: bad input).
#[track_caller]
fn failure_db() -> Option<FailureDb> {
    let path = std::env::var_os("LEASESIM_FAILURES")?;
    match FailureDb::open(Path::new(&path)) {
        Ok(db) => Some(db),
        Err(err) => panic!("LEASESIM_FAILURES: {err}"),
    }
}

/// Records `failure` in the database (when there is one).
#[track_caller]
fn record<S: System + Render>(
    db: Option<&mut FailureDb>,
    failure: &CheckFailure<S>,
    reference: &str,
    strategy: Strategy,
    base: &RunSpec<S>,
) {
    let Some(db) = db else { return };
    let entry = Entry {
        scenario: reference.to_string(),
        worker: failure.worker.clone(),
        strategy: strategy.to_string(),
        seed: failure.seed,
        outcome: failure.outcome.label(),
        sentence: failure.outcome.sentence(),
        checkers: Some(checker_set(&base.scenario)),
    };
    if db.add([entry]) > 0
        && let Err(err) = db.save()
    {
        panic!("LEASESIM_FAILURES: {err}");
    }
}
