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
//!   strategy first, and records the seed it finds failing. `LEASESIM_CHOICES`: a choices
//!   file a failing check saved with [`Check::shrink`]; the check that saved it (same scenario
//!   and worker) replays it instead of its seeds and prints its trace, other checks skip.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use leasesim_rt::{Feed, Strategy};
use leasesim_sim::{
    Divergence, Scenario, System, WorkerFactory, WorkerOf, WorkerUnderTest, first_difference,
};
use leasesim_timeline::Render;

use crate::catalog;
use crate::choices;
use crate::error::{UsageError, parse_seed};
use crate::faildb::{Entry, FailureDb};
use crate::runner::{Outcome, RunReport, RunSpec, checker_set, run};
use crate::shrink::{Shrunk, shrink};
use crate::systems::{AnyScenario, ScenarioOf};
use crate::trace::{TraceHeader, render};

/// The shrink budget of [`Check::shrink`]: `leasesim shrink`'s default.
pub const SHRINK_BUDGET: u64 = 20_000;

/// Something that names a scenario of system `S`: a builtin name, a path, or a loaded
/// scenario.
pub trait IntoScenario<S: System + Render> {
    /// The scenario, or why it cannot be one of `S` (unknown name, unreadable or invalid
    /// file, a scenario of another system).
    fn into_scenario(self) -> Result<Scenario<S>, UsageError>;
}

impl<S: System + Render> IntoScenario<S> for Scenario<S> {
    fn into_scenario(self) -> Result<Scenario<S>, UsageError> {
        Ok(self)
    }
}

/// The scenario of system `S` behind `found`, or an error naming both systems.
fn of_system<S: System + Render>(found: Arc<dyn AnyScenario>) -> Result<Scenario<S>, UsageError> {
    match found.as_any().downcast_ref::<ScenarioOf<S>>() {
        Some(scenario) => Ok(scenario.0.clone()),
        None => Err(UsageError::BadValue {
            flag: "the check's scenario",
            given: found.name().to_string(),
            why: format!(
                "a {} scenario; this check is of the {} system",
                found.system().name(),
                S::NAME
            ),
        }),
    }
}

impl<S: System + Render> IntoScenario<S> for &str {
    /// A builtin name (`"steady"`) or a path to a scenario file.
    fn into_scenario(self) -> Result<Scenario<S>, UsageError> {
        of_system(catalog::resolve_one(self)?)
    }
}

impl<S: System + Render> IntoScenario<S> for &Path {
    fn into_scenario(self) -> Result<Scenario<S>, UsageError> {
        of_system(catalog::load(self)?)
    }
}

impl<S: System + Render> IntoScenario<S> for PathBuf {
    fn into_scenario(self) -> Result<Scenario<S>, UsageError> {
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

/// A check of one worker against one scenario of system `S`: built by a system's `check`
/// or `check_builtin`, run by [`Check::seeds`] or [`Check::try_seeds`].
///
/// A check that is built and dropped runs nothing; the compiler says so:
///
/// ```compile_fail
/// #![deny(unused_must_use)]
/// leasesim::retention::check("steady", leasesim::retention::correct_worker_of);
/// ```
#[must_use = "a check runs nothing until `.seeds(n)` or `.try_seeds(n)`"]
pub struct Check<S: System + Render> {
    /// The scenario, or the bad input found while building the check (reported by
    /// `try_seeds`, so building never panics).
    scenario: Result<Rc<Scenario<S>>, UsageError>,
    /// The worker's factory, or why there is none (an unknown builtin name).
    factory: Result<Rc<WorkerFactory<S>>, UsageError>,
    worker_name: String,
    /// The worker is one of the system's own (so `leasesim replay` can rebuild it, when the
    /// system is registered).
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

impl<S: System + Render> std::error::Error for CheckFailure<S> where Outcome<S>: std::fmt::Debug {}

/// Why [`Check::try_seeds`] returned no summary.
#[derive(Debug)]
pub enum CheckError<S: System + Render> {
    /// The check could not run: a bad scenario or worker name, a count of seeds that runs
    /// nothing or past the last seed, a malformed `LEASESIM_SEED`, an unreadable
    /// `LEASESIM_FAILURES`. Nothing ran.
    Input(UsageError),
    /// A seed failed.
    Failed(Box<CheckFailure<S>>),
    /// Two runs of one seed differed: the worker draws from something outside the run.
    Nondeterministic(Box<Nondeterminism>),
}

/// Two runs of one seed that differ (see [`Check::try_seeds`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nondeterminism {
    pub scenario: String,
    pub worker: String,
    pub seed: u64,
    /// The first event where the runs differ.
    pub index: usize,
    /// That event's trace line in the first run and in the second (`None`: that run had
    /// ended).
    pub first: Option<String>,
    pub second: Option<String>,
}

impl std::fmt::Display for Nondeterminism {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let line = |l: &Option<String>| l.clone().unwrap_or_else(|| "(the run had ended)".into());
        writeln!(
            f,
            "leasesim: worker {} is not deterministic: two runs of seed {} of scenario {} differ \
             at event #{}",
            self.worker, self.seed, self.scenario, self.index
        )?;
        writeln!(f, "  first run:  {}", line(&self.first))?;
        writeln!(f, "  second run: {}", line(&self.second))?;
        write!(
            f,
            "A seed must make one run: a worker may wait, decide and draw only through its \
             ports. Not deterministic: futures::select! (it picks a ready branch at random; \
             select_biased! does not), HashMap or HashSet iteration order, the wall clock, OS \
             randomness, threads, and state kept between runs (statics)."
        )
    }
}

impl<S: System + Render> CheckError<S> {
    /// The failure, when a seed failed; `None` for bad input or nondeterminism.
    pub fn into_failure(self) -> Option<Box<CheckFailure<S>>> {
        match self {
            CheckError::Failed(failure) => Some(failure),
            CheckError::Input(_) | CheckError::Nondeterministic(_) => None,
        }
    }
}

impl<S: System + Render> std::fmt::Display for CheckError<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CheckError::Input(err) => write!(f, "leasesim: cannot run the check: {err}"),
            CheckError::Failed(failure) => write!(f, "{failure}"),
            CheckError::Nondeterministic(found) => write!(f, "{found}"),
        }
    }
}

impl<S: System + Render> std::error::Error for CheckError<S>
where
    Outcome<S>: std::fmt::Debug,
{
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CheckError::Input(err) => Some(err),
            CheckError::Failed(_) | CheckError::Nondeterministic(_) => None,
        }
    }
}

/// Starts a check of the worker `make` builds for each replica, against `scenario` (a
/// scenario of system `S`: a builtin name, a path, or a loaded one). Each system's module
/// has this as its `check` (`leasesim::retention::check`, ...); call it directly for a
/// system of your own.
///
/// `make` gets the replica's ports, including `ports.config`: the scenario's worker
/// settings, which the run judges the worker against.
pub fn check_system<S, W, F>(scenario: impl IntoScenario<S>, make: F) -> Check<S>
where
    S: System + Render,
    W: WorkerUnderTest<Report = S::Report> + 'static,
    F: Fn(S::Ports) -> W + 'static,
{
    let factory: Rc<WorkerFactory<S>> =
        Rc::new(move |ports| Rc::new(make(ports)) as Rc<WorkerOf<S>>);
    Check::new(scenario, Ok(factory), "custom", false)
}

/// Starts a check of a builtin worker of system `S` by name (`correct`, `stale-release`,
/// ...), against `scenario`. An unknown name is reported by [`Check::try_seeds`].
pub fn check_builtin<S: System + Render>(scenario: impl IntoScenario<S>, worker: &str) -> Check<S> {
    let factory = S::factory(worker).ok_or_else(|| UsageError::UnknownName {
        what: "worker",
        given: worker.to_string(),
        valid: S::workers().iter().map(|w| w.name.to_string()).collect(),
    });
    Check::new(scenario, factory, worker, true)
}

impl<S: System + Render> Check<S> {
    fn new(
        scenario: impl IntoScenario<S>,
        factory: Result<Rc<WorkerFactory<S>>, UsageError>,
        worker: &str,
        builtin: bool,
    ) -> Check<S> {
        Check {
            scenario: scenario.into_scenario().map(Rc::new),
            factory,
            worker_name: worker.to_string(),
            builtin,
            strategy: Strategy::Random,
            start_seed: 0,
            toolbox: Toolbox::default(),
        }
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

    /// Runs `count` seeds; panics with the first failure, or with the bad input that kept
    /// the check from running.
    #[track_caller]
    pub fn seeds(self, count: u64) -> CheckSummary {
        match self.try_seeds(count) {
            Ok(summary) => summary,
            Err(err) => panic!("{err}"),
        }
    }

    /// Runs `count` seeds (or only `LEASESIM_SEED`), after the seeds `LEASESIM_FAILURES`
    /// recorded; returns the first failure, or the bad input that kept the check from
    /// running. Never panics.
    pub fn try_seeds(self, count: u64) -> Result<CheckSummary, CheckError<S>> {
        let env = CheckEnv::read().map_err(CheckError::Input)?;
        self.run_seeds(count, &env)
    }

    /// `try_seeds` with the environment already read.
    fn run_seeds(self, count: u64, env: &CheckEnv) -> Result<CheckSummary, CheckError<S>> {
        let input = |err: &UsageError| CheckError::Input(err.clone());
        let scenario = self.scenario.as_ref().map_err(input)?.clone();
        let factory = self.factory.as_ref().map_err(input)?.clone();
        seed_range(self.start_seed, count).map_err(CheckError::Input)?;
        let name = scenario.name.clone();
        if env.scenario.as_ref().is_some_and(|only| *only != name) {
            let summary = CheckSummary {
                scenario: name,
                seeds: 0,
                skipped: true,
            };
            return Ok(summary);
        }
        if let Some(path) = &env.choices {
            return self.run_choices(&scenario, &factory, path);
        }
        let mut db = env.failure_db().map_err(CheckError::Input)?;
        let seeds = self.seed_list(&scenario, count, env.seed, db.as_ref());
        let base = self.spec(&scenario, &factory).calibrated();
        // Panics inside runs become verdicts with their file:line; printing Rust's report for
        // each would bury the one failure this check returns.
        leasesim_rt::capture_panics();
        let was_quiet = leasesim_rt::set_quiet(env.seed.is_none());
        let found = first_failure(&base, seeds, env.seed.is_some());
        leasesim_rt::set_quiet(was_quiet);
        let (seed, report) = match found {
            Ran::Passed(ran) => {
                let summary = CheckSummary {
                    scenario: name,
                    seeds: ran,
                    skipped: false,
                };
                return Ok(summary);
            }
            Ran::Failed(seed, report) => (seed, *report),
            Ran::Diverged(seed, runs) => {
                let found = divergence(&base, seed, *runs, (&name, &self.worker_name));
                return Err(CheckError::Nondeterministic(Box::new(found)));
            }
        };
        let mut failure = self.failure(&scenario, &base, seed, report);
        let reference = self.reference(&scenario);
        if let Err(err) = record(db.as_mut(), &failure, &reference, self.strategy, &base) {
            failure
                .details
                .push_str(&format!("LEASESIM_FAILURES: {err}\n"));
        }
        Err(CheckError::Failed(Box::new(failure)))
    }

    /// Replays the choices file at `path` when this check saved it (its scenario and worker),
    /// printing the run's trace; skips otherwise.
    fn run_choices(
        &self,
        scenario: &Rc<Scenario<S>>,
        factory: &Rc<WorkerFactory<S>>,
        path: &Path,
    ) -> Result<CheckSummary, CheckError<S>> {
        let bad = |err: UsageError| {
            CheckError::Input(UsageError::Env {
                variable: "LEASESIM_CHOICES",
                why: err.to_string(),
            })
        };
        let file = choices::read(&path.display().to_string()).map_err(bad)?;
        let ours = file.get("scenario") == Some(scenario.name.as_str())
            && file.get("worker") == Some(self.worker_name.as_str());
        if !ours {
            let summary = CheckSummary {
                scenario: scenario.name.clone(),
                seeds: 0,
                skipped: true,
            };
            return Ok(summary);
        }
        let erased = crate::systems::erase((**scenario).clone());
        let applied = of_system::<S>(file.apply(&erased).map_err(bad)?).map_err(bad)?;
        let spec = RunSpec {
            scenario: Rc::new(applied),
            feed: Feed::Replay(file.values.clone()),
            keep_events: true,
            ..self.spec(scenario, factory).calibrated()
        };
        let report = run(&spec);
        let head = TraceHeader::of(&spec, format!("choices {}", path.display()));
        eprintln!("{}", render(&head, &report));
        if !report.failed() {
            let summary = CheckSummary {
                scenario: scenario.name.clone(),
                seeds: 1,
                skipped: false,
            };
            return Ok(summary);
        }
        let seed = file
            .get("feed")
            .and_then(|feed| feed.strip_prefix("seed "))
            .and_then(|rest| rest.split(',').next())
            .and_then(|seed| seed.parse().ok())
            .unwrap_or_default();
        let failure = CheckFailure {
            scenario: scenario.name.clone(),
            worker: self.worker_name.clone(),
            seed,
            outcome: report.outcome,
            replay: format!("replayed LEASESIM_CHOICES={}", path.display()),
            details: String::new(),
        };
        Err(CheckError::Failed(Box::new(failure)))
    }

    /// The spec of one run of this check.
    fn spec(&self, scenario: &Rc<Scenario<S>>, factory: &Rc<WorkerFactory<S>>) -> RunSpec<S> {
        RunSpec::new(
            scenario.clone(),
            &self.worker_name,
            factory.clone(),
            Feed::Seed(0),
            self.strategy,
        )
    }

    /// The seeds to run, lazily (a count may be as large as `u64::MAX`): the one
    /// `LEASESIM_SEED` names; else the recorded failing seeds of this scenario, worker and
    /// strategy, then `count` seeds from the start seed (checked by `seed_range`).
    fn seed_list(
        &self,
        scenario: &Scenario<S>,
        count: u64,
        single: Option<u64>,
        db: Option<&FailureDb>,
    ) -> Box<dyn Iterator<Item = u64>> {
        if let Some(seed) = single {
            return Box::new(std::iter::once(seed));
        }
        let (reference, strategy) = (self.reference(scenario), self.strategy.to_string());
        let recorded: Vec<u64> = db
            .map(|db| db.entries())
            .unwrap_or_default()
            .iter()
            .filter(|e| e.scenario == reference && e.worker == self.worker_name)
            .filter(|e| e.strategy == strategy)
            .map(|e| e.seed)
            .collect();
        let start = self.start_seed;
        Box::new(
            recorded
                .into_iter()
                .chain((0..count).map(move |i| start + i)),
        )
    }

    /// How replay lines and the failure database name this check's scenario.
    fn reference(&self, scenario: &Scenario<S>) -> String {
        catalog::scenario_ref(&ScenarioOf(scenario.clone()))
    }

    fn failure(
        &self,
        scenario: &Scenario<S>,
        base: &RunSpec<S>,
        seed: u64,
        report: RunReport<S>,
    ) -> CheckFailure<S> {
        let name = &scenario.name;
        let rerun = format!(
            "rerun this seed: LEASESIM_SEED={seed} LEASESIM_SCENARIO={name} cargo test{}",
            test_filter()
        );
        // `leasesim replay` rebuilds only the harness's own workers of its registered systems.
        let replayable = self.builtin && crate::systems::system(S::NAME).is_some();
        let replay = match replayable {
            true => {
                let reference = self.reference(scenario);
                let line = catalog::replay_line(&reference, seed, &self.worker_name, self.strategy);
                format!("{line}\n{rerun}")
            }
            false => rerun,
        };
        CheckFailure {
            scenario: name.clone(),
            worker: self.worker_name.clone(),
            seed,
            details: self
                .toolbox
                .details(base, seed, &saved_path(name, &self.worker_name, seed)),
            outcome: report.outcome,
            replay,
        }
    }
}

/// Where a failing check saves its shrunk choices, as `leasesim shrink` does.
fn saved_path(scenario: &str, worker: &str, seed: u64) -> PathBuf {
    PathBuf::from(format!(
        ".leasesim/shrunk/{scenario}-{worker}-{seed}.choices"
    ))
}

/// Refuses a count of seeds that would run nothing, or run past the last seed (seeds never
/// wrap); the last seed otherwise.
fn seed_range(start: u64, count: u64) -> Result<u64, UsageError> {
    let bad = |why: String| UsageError::BadValue {
        flag: "the check's seed count",
        given: count.to_string(),
        why,
    };
    if count == 0 {
        return Err(bad(
            "a check of 0 seeds would run nothing: ask for 1 or more".into(),
        ));
    }
    start.checked_add(count - 1).ok_or_else(|| {
        bad(format!(
            "from start seed {start} it runs past the last seed ({}): seeds never wrap",
            u64::MAX
        ))
    })
}

/// The environment variables a check reads, parsed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct CheckEnv {
    /// `LEASESIM_SEED`: run only this seed.
    seed: Option<u64>,
    /// `LEASESIM_SCENARIO`: skip checks of other scenarios.
    scenario: Option<String>,
    /// `LEASESIM_FAILURES`: the failure database file.
    failures: Option<PathBuf>,
    /// `LEASESIM_CHOICES`: a choices file a failing check saved; the check it was saved by
    /// replays it instead of its seeds, the others are skipped.
    choices: Option<PathBuf>,
}

impl CheckEnv {
    /// Reads the process's environment.
    fn read() -> Result<CheckEnv, UsageError> {
        CheckEnv::parse(std::env::var_os)
    }

    /// Parses the variables `get` returns; an error names the variable and its value.
    fn parse(get: impl Fn(&'static str) -> Option<OsString>) -> Result<CheckEnv, UsageError> {
        let text = |variable: &'static str| -> Result<Option<String>, UsageError> {
            let Some(value) = get(variable) else {
                return Ok(None);
            };
            value
                .into_string()
                .map(Some)
                .map_err(|value| UsageError::Env {
                    variable,
                    why: format!("`{}` is not UTF-8", value.to_string_lossy()),
                })
        };
        let seed = match text("LEASESIM_SEED")? {
            None => None,
            Some(given) => Some(parse_seed(&given).map_err(|why| UsageError::Env {
                variable: "LEASESIM_SEED",
                why,
            })?),
        };
        Ok(CheckEnv {
            seed,
            scenario: text("LEASESIM_SCENARIO")?,
            failures: get("LEASESIM_FAILURES").map(PathBuf::from),
            choices: get("LEASESIM_CHOICES").map(PathBuf::from),
        })
    }

    /// The failure database `LEASESIM_FAILURES` names, if any.
    fn failure_db(&self) -> Result<Option<FailureDb>, UsageError> {
        self.failures
            .as_deref()
            .map(FailureDb::open)
            .transpose()
            .map_err(|err| UsageError::Env {
                variable: "LEASESIM_FAILURES",
                why: err.to_string(),
            })
    }
}

impl Toolbox {
    /// Runs what was asked for on the failing `seed`; the text to show with the failure.
    /// `saved` is where the shrunk choices go (`.leasesim/shrunk/SCENARIO-WORKER-SEED.choices`).
    fn details<S: System + Render>(&self, base: &RunSpec<S>, seed: u64, saved: &Path) -> String {
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
                out.push_str(&save_shrunk(saved, &head, shrunk));
                crate::html::render(&head, &shrunk.report, shrunk.scenario.replicas)
            }
            None => crate::html::render(&head, &report, spec.scenario.replicas),
        };
        let html_path = match (&self.html, &shrunk) {
            (Some(path), _) => Some(path.clone()),
            (None, Some(_)) => Some(saved.with_extension("html")),
            (None, None) => None,
        };
        if let Some(path) = html_path {
            out.push_str(&write_timeline(&path, &html));
        }
        out
    }
}

/// Saves the shrunk run's choices at `path` (`.choices`), as `leasesim shrink` saves them:
/// the header, the scenario changes, the values. The lines saying where, and how to rerun
/// them (or why they could not be saved).
fn save_shrunk<S: System + Render>(path: &Path, head: &TraceHeader, shrunk: &Shrunk<S>) -> String {
    let mut header = vec![
        format!("scenario: {}", head.scenario),
        format!("worker: {}", head.worker),
        format!("strategy: {}", head.strategy),
        format!("feed: {}", head.feed),
        format!("checkers: {}", head.checkers),
        format!("verdict: {}", shrunk.report.outcome.verdict_line()),
    ];
    if let Some(steps) = head.pct_steps {
        header.push(format!("pct-steps: {steps}"));
    }
    let text = choices::render(&header, &shrunk.overrides, &shrunk.report.choices);
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(path, text));
    match written {
        Ok(()) => format!(
            "shrunk choices saved to {0}; rerun them: LEASESIM_CHOICES={0} cargo test{1}\n",
            path.display(),
            test_filter()
        ),
        Err(err) => format!(
            "cannot save the shrunk choices to {}: {err}\n",
            path.display()
        ),
    }
}

/// ` -- --exact NAME` for the test this check runs in (libtest names each test's thread
/// after it), or nothing outside a test.
fn test_filter() -> String {
    match std::thread::current().name() {
        Some(name) if name != "main" => format!(" -- --exact {name}"),
        _ => String::new(),
    }
}

/// Writes a timeline; the line saying where (or why not).
fn write_timeline(path: &Path, html: &str) -> String {
    match std::fs::write(path, html) {
        Ok(()) => format!("timeline written to {}\n", path.display()),
        Err(err) => format!("cannot write the timeline to {}: {err}\n", path.display()),
    }
}

/// Every how many seeds a check runs one a second time to compare (the first seed and every
/// failing one always): 1,000 seeds cost 20 more runs.
const RERUN_EVERY: usize = 50;

/// What running a check's seeds found.
enum Ran<S: System> {
    /// Every seed passed (how many ran).
    Passed(u64),
    /// The first failing seed and its report.
    Failed(u64, Box<RunReport<S>>),
    /// A seed whose second run differed from its first: both runs.
    Diverged(u64, Box<(RunReport<S>, RunReport<S>)>),
}

/// Runs `seeds` in order, each sampled one twice (see [`RERUN_EVERY`]); a sampled seed keeps
/// its events, so two runs that differ show where.
fn first_failure<S: System + Render>(
    base: &RunSpec<S>,
    seeds: impl Iterator<Item = u64>,
    print_trace: bool,
) -> Ran<S> {
    let mut ran = 0;
    for (at, seed) in seeds.enumerate() {
        ran += 1;
        let sampled = at % RERUN_EVERY == 0;
        let spec = RunSpec {
            feed: Feed::Seed(seed),
            keep_events: print_trace || sampled,
            ..base.clone()
        };
        let report = run(&spec);
        if print_trace {
            let head = TraceHeader::of(&spec, format!("seed {seed}"));
            eprintln!("{}", render(&head, &report));
        }
        if sampled || report.failed() {
            let again = run(&RunSpec {
                keep_events: true,
                ..spec
            });
            if !runs_alike(&report, &again) {
                return Ran::Diverged(seed, Box::new((report, again)));
            }
        }
        if report.failed() {
            return Ran::Failed(seed, Box::new(report));
        }
    }
    Ran::Passed(ran)
}

/// Two runs of one seed made the same run: the same events, verdict and hash of the trace.
fn runs_alike<S: System>(first: &RunReport<S>, second: &RunReport<S>) -> bool {
    let (a, b) = (&first.stats, &second.stats);
    (a.trace_hash, a.events, a.steps) == (b.trace_hash, b.events, b.steps)
        && first.outcome.label() == second.outcome.label()
}

/// Where two runs of `seed` differ: the first event whose trace lines differ. When the first
/// run kept no events (a failing seed outside the sample), its line is `None` and the index
/// is where the second run's events end, unless a third run shows the divergence.
fn divergence<S: System + Render>(
    base: &RunSpec<S>,
    seed: u64,
    runs: (RunReport<S>, RunReport<S>),
    names: (&str, &str),
) -> Nondeterminism {
    let lines = |report: &RunReport<S>| -> Vec<String> {
        report.events.iter().map(crate::trace::line).collect()
    };
    let (mut first, second) = (lines(&runs.0), lines(&runs.1));
    if first.is_empty() {
        let spec = RunSpec {
            feed: Feed::Seed(seed),
            keep_events: true,
            ..base.clone()
        };
        first = lines(&run(&spec));
    }
    // Equal lines (only steps or the hash differed): the divergence is past the last event.
    let parted = first_difference(&first, &second).unwrap_or(Divergence {
        index: first.len(),
        first: None,
        second: None,
    });
    Nondeterminism {
        scenario: names.0.to_string(),
        worker: names.1.to_string(),
        seed,
        index: parted.index,
        first: parted.first,
        second: parted.second,
    }
}

/// Records `failure` in the database (when there is one).
fn record<S: System + Render>(
    db: Option<&mut FailureDb>,
    failure: &CheckFailure<S>,
    reference: &str,
    strategy: Strategy,
    base: &RunSpec<S>,
) -> Result<(), UsageError> {
    let Some(db) = db else { return Ok(()) };
    let entry = Entry {
        scenario: reference.to_string(),
        worker: failure.worker.clone(),
        strategy: strategy.to_string(),
        seed: failure.seed,
        outcome: failure.outcome.label(),
        sentence: failure.outcome.sentence(),
        checkers: Some(checker_set(&base.scenario)),
    };
    db.record([entry]).map(|_| ())
}

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStringExt;

    use super::*;

    /// The environment `vars` describes.
    fn env_of(vars: &[(&'static str, OsString)]) -> Result<CheckEnv, UsageError> {
        CheckEnv::parse(|name| {
            vars.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| value.clone())
        })
    }

    #[test]
    fn the_environment_parses_each_variable_and_names_the_bad_one() {
        assert_eq!(env_of(&[]), Ok(CheckEnv::default()));
        let set = env_of(&[
            ("LEASESIM_SEED", "0x10".into()),
            ("LEASESIM_SCENARIO", "steady".into()),
            ("LEASESIM_FAILURES", "db.toml".into()),
            ("LEASESIM_CHOICES", "run.choices".into()),
        ]);
        let wanted = CheckEnv {
            seed: Some(16),
            scenario: Some("steady".into()),
            failures: Some(PathBuf::from("db.toml")),
            choices: Some(PathBuf::from("run.choices")),
        };
        assert_eq!(set, Ok(wanted));
        let bad_seed = env_of(&[("LEASESIM_SEED", "-1".into())]).unwrap_err();
        assert!(
            bad_seed
                .to_string()
                .starts_with("LEASESIM_SEED: `-1` is not a seed"),
            "{bad_seed}"
        );
        let not_utf8 = OsString::from_vec(vec![b's', 0xff]);
        let bad_name = env_of(&[("LEASESIM_SCENARIO", not_utf8)]).unwrap_err();
        assert_eq!(
            bad_name.to_string(),
            "LEASESIM_SCENARIO: `s\u{fffd}` is not UTF-8"
        );
    }

    #[test]
    fn a_seed_range_is_refused_when_empty_or_past_the_last_seed() {
        assert_eq!(seed_range(0, 1), Ok(0));
        assert_eq!(seed_range(u64::MAX, 1), Ok(u64::MAX));
        assert_eq!(seed_range(u64::MAX - 9, 10), Ok(u64::MAX));
        let past = seed_range(u64::MAX - 9, 11).unwrap_err().to_string();
        assert!(past.contains("seeds never wrap"), "{past}");
        let empty = seed_range(5, 0).unwrap_err().to_string();
        assert!(empty.contains("0 seeds would run nothing"), "{empty}");
    }

    #[test]
    fn a_failure_database_that_cannot_be_read_is_an_error_naming_the_variable() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path();
        let file = dir.join("failures.toml");
        std::fs::write(&file, "[[failure]]\nseed = \"x\"\n").unwrap();
        let env = CheckEnv {
            failures: Some(file),
            ..CheckEnv::default()
        };
        let err = env.failure_db().map(|_| ()).unwrap_err().to_string();
        assert!(err.starts_with("LEASESIM_FAILURES: "), "{err}");
        assert!(err.contains("failures.toml:"), "{err}");
        let missing = CheckEnv {
            failures: Some(dir.join("absent.toml")),
            ..CheckEnv::default()
        };
        let opened = missing
            .failure_db()
            .expect("a missing database starts empty");
        assert!(opened.is_some_and(|db| db.entries().is_empty()));
    }
}
