//! Every system the harness knows, behind one object-safe facade.
//!
//! Terminology:
//! - *system entry*: one [`AnySystem`] per system in [`SYSTEMS`]: its name, workers,
//!   invariants, situations, and how to read its scenario files. Adding a system to the
//!   harness is one line there.
//! - *any scenario*: a parsed scenario of some system ([`AnyScenario`]); campaigns, shrinking,
//!   replay and the CLI hold these without knowing the system's types.
//! - *runner*: one thread's way to run seeds of one scenario with one worker
//!   ([`AnyRunner`]); it owns the (thread-bound) worker factory and the calibrated spec.
//! - *any report*: one run's verdict, coverage and counters, and its trace, JSON, digest and
//!   timeline renderings ([`AnyReport`]).
//!
//! Everything below the facade is generic and monomorphized per system: the runner, the
//! checkers, the world. The facade costs one virtual call per run, not per event.

use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::Arc;

use leasesim_events::OpSet;
use leasesim_invariants::{InvariantName, SituationName};
use leasesim_retention::Retention;
use leasesim_rt::{Choice, Feed, Interrupt, Strategy};
use leasesim_sim::scenario::parse_scenario;
use leasesim_sim::{Scenario, ScenarioError, System, WorkerFactory, WorkerInfo};
use leasesim_timeline::Render;

use crate::overrides::Overrides;
use crate::runner::{RunReport, RunSpec, RunStats, checker_set, run};
use crate::shrink;
use crate::trace::{self, TraceHeader};

/// One system, as the harness's generic code sees it.
pub trait AnySystem: Sync {
    /// `retention`, `work-items`, ...
    fn name(&self) -> &'static str;
    fn description(&self) -> &'static str;
    /// `correct` first, then the defective workers.
    fn workers(&self) -> Vec<WorkerInfo>;
    /// `(name, holds when)` of every invariant, in the system's order.
    fn invariants(&self) -> Vec<(&'static str, &'static str)>;
    /// `(name, description)` of every "sometimes" situation, in declaration order.
    fn situations(&self) -> Vec<(&'static str, &'static str)>;
    /// The names of the operations its calls cross the network with, in declaration order
    /// (the rows of the in-flight cells).
    fn ops(&self) -> Vec<&'static str>;
    /// Parses a scenario file of this system.
    fn parse(
        &self,
        name: &str,
        source: &str,
        text: &str,
    ) -> Result<Arc<dyn AnyScenario>, ScenarioError>;
}

/// A parsed scenario of some system.
pub trait AnyScenario: Send + Sync + fmt::Debug {
    fn system(&self) -> &'static dyn AnySystem;
    fn name(&self) -> &str;
    /// Where it was read from (a path, or `scenarios/SYSTEM/NAME.toml` for a builtin).
    fn source(&self) -> &str;
    fn text(&self) -> &str;
    fn description(&self) -> &str;
    fn replicas(&self) -> u16;
    /// The checker set in words (see `runner::checker_set`).
    fn checker_set(&self) -> String;
    /// The invariants it declares it breaks.
    fn expected(&self) -> Vec<&'static str>;
    /// The same scenario, read from wherever (everything but the source compared).
    fn same_as(&self, other: &dyn AnyScenario) -> bool;
    /// The scenario with `overrides` written into its file and checked again; an error names
    /// the override (key) that makes it invalid, and why.
    fn with_overrides(
        &self,
        overrides: &Overrides,
    ) -> Result<Arc<dyn AnyScenario>, (String, String)>;
    /// A runner of the worker called `worker` (`None`: no such worker in this system).
    fn runner(&self, worker: &str, strategy: Strategy) -> Option<Box<dyn AnyRunner>>;
    /// A runner of a custom worker: `factory` holds an `Rc<WorkerFactory<S>>` of this
    /// system (`None` when it does not).
    fn custom_runner(
        &self,
        worker: &str,
        factory: Box<dyn Any>,
        strategy: Strategy,
    ) -> Option<Box<dyn AnyRunner>>;
    fn as_any(&self) -> &dyn Any;
}

/// One thread's runner of one scenario and worker (see the module docs).
pub trait AnyRunner {
    /// Every run from now on can be stopped by `interrupt` (the watchdog's).
    fn set_interrupt(&mut self, interrupt: Interrupt);
    /// Measures PCT's step estimate (a no-op for other strategies, or when set).
    fn calibrate(&mut self);
    /// Uses this PCT step estimate (e.g. one a choices file recorded).
    fn set_pct_steps(&mut self, steps: Option<u64>);
    fn pct_steps(&self) -> Option<u64>;
    /// Runs one feed.
    fn run(&self, feed: Feed, keep_events: bool, record_choices: bool) -> Box<dyn AnyReport>;
    /// The trace header of a run fed by `feed` (`seed 42`, ...).
    fn header(&self, feed: String) -> TraceHeader;
    /// Shrinks the failing run of `feed`; `None` when it does not fail.
    fn shrink(&self, feed: Feed, budget: u64) -> Option<ShrunkRun>;
}

/// One run's verdict, counters and renderings.
pub trait AnyReport {
    /// `pass`, an invariant's name, `deadlock`, `panic`, `spin`, `hang`, `liveness`.
    fn label(&self) -> String;
    fn sentence(&self) -> String;
    fn verdict_line(&self) -> String;
    fn failed(&self) -> bool;
    /// The violated invariant's name, if any.
    fn invariant(&self) -> Option<&'static str>;
    /// `(invariant, sentence)` of each expected violation the run showed.
    fn expected(&self) -> Vec<(&'static str, String)>;
    /// The situations reached, as bits of the system's situation list.
    fn coverage(&self) -> u64;
    /// The in-flight cells reached, as bits (see `leasesim_invariants::Landing::bit`).
    fn in_flight(&self) -> u128;
    fn stats(&self) -> RunStats;
    /// Cut off at its event limit before any verdict.
    fn truncated(&self) -> bool;
    fn choices(&self) -> &[Choice];
    /// Events kept (0 unless the run kept them).
    fn events(&self) -> usize;
    /// The fault profile's header lines.
    fn profile(&self) -> Vec<String>;
    fn trace(&self, head: &TraceHeader) -> String;
    /// JSON lines: the header, the events, the verdict.
    #[cfg(feature = "json")]
    fn json(&self, head: &TraceHeader) -> String;
    fn digest(&self, head: &TraceHeader, max_lines: usize) -> String;
    fn html(&self, head: &TraceHeader) -> String;
    fn as_any(&self) -> &dyn Any;
}

/// A shrunk counterexample.
pub struct ShrunkRun {
    /// Events of the original failing run.
    pub original_events: u64,
    /// Candidate runs tried.
    pub candidates: u64,
    /// What the shrink changed in the scenario (empty: nothing).
    pub overrides: Overrides,
    /// The scenario the shrunk run ran in.
    pub scenario: Arc<dyn AnyScenario>,
    /// The shrunk run, with its events kept.
    pub report: Box<dyn AnyReport>,
}

/// A system's entry in the registry.
pub struct SystemOf<S>(PhantomData<fn() -> S>);

impl<S> SystemOf<S> {
    pub const fn new() -> SystemOf<S> {
        SystemOf(PhantomData)
    }
}

impl<S> Default for SystemOf<S> {
    fn default() -> SystemOf<S> {
        SystemOf::new()
    }
}

/// The harness's own systems, in the order `list` shows them (`Registry::builtin`).
pub static SYSTEMS: &[&dyn AnySystem] = &[
    &SystemOf::<Retention>::new(),
    &SystemOf::<leasesim_holder_lock::HolderLock>::new(),
    &SystemOf::<leasesim_reservations::Reservations>::new(),
    &SystemOf::<leasesim_work_items::WorkItems>::new(),
];

/// The system called `name` in the installed registry.
pub fn system(name: &str) -> Option<&'static dyn AnySystem> {
    crate::registry::installed().system(name)
}

/// The entry of system `S`. Every entry is a zero-sized `SystemOf<S>` and knows everything from
/// `S` alone, so this needs no registry look-up: a system outside [`SYSTEMS`] (one written in a
/// team's own, like `crates/toy-sim`) is named by its erased scenarios all the same.
pub fn system_entry<S: System + Render>() -> &'static dyn AnySystem {
    const { &SystemOf::<S>::new() }
}

impl<S: System + Render> AnySystem for SystemOf<S> {
    fn name(&self) -> &'static str {
        S::NAME
    }

    fn description(&self) -> &'static str {
        S::DESCRIPTION
    }

    fn workers(&self) -> Vec<WorkerInfo> {
        S::workers()
    }

    fn invariants(&self) -> Vec<(&'static str, &'static str)> {
        S::Invariant::ALL
            .iter()
            .map(|i| (i.name(), i.holds_when()))
            .collect()
    }

    fn situations(&self) -> Vec<(&'static str, &'static str)> {
        S::Situation::ALL
            .iter()
            .map(|s| (s.name(), s.describe()))
            .collect()
    }

    fn ops(&self) -> Vec<&'static str> {
        S::Op::ALL.iter().map(|op| op.name()).collect()
    }

    fn parse(
        &self,
        name: &str,
        source: &str,
        text: &str,
    ) -> Result<Arc<dyn AnyScenario>, ScenarioError> {
        let scenario = parse_scenario::<S>(name, source, text)?;
        Ok(Arc::new(ScenarioOf(scenario)))
    }
}

/// `scenario` behind the facade.
pub fn erase<S: System + Render>(scenario: Scenario<S>) -> Arc<dyn AnyScenario> {
    Arc::new(ScenarioOf(scenario))
}

/// The scenario of system `S` behind `scenario` (`None`: it is of another system).
pub fn typed<S: System + Render>(scenario: &dyn AnyScenario) -> Option<Scenario<S>> {
    let found = scenario.as_any().downcast_ref::<ScenarioOf<S>>()?;
    Some(found.0.clone())
}

/// A scenario of system `S` behind the facade.
#[derive(Debug)]
pub struct ScenarioOf<S: System + Render>(pub Scenario<S>);

impl<S: System + Render> ScenarioOf<S> {
    fn runner_of(
        &self,
        worker: &str,
        factory: Rc<WorkerFactory<S>>,
        strategy: Strategy,
    ) -> Box<dyn AnyRunner> {
        let scenario = Rc::new(self.0.clone());
        let spec = RunSpec::new(scenario, worker, factory, Feed::Seed(0), strategy);
        Box::new(RunnerOf { spec })
    }
}

impl<S: System + Render> AnyScenario for ScenarioOf<S> {
    fn system(&self) -> &'static dyn AnySystem {
        system_entry::<S>()
    }

    fn name(&self) -> &str {
        &self.0.name
    }

    fn source(&self) -> &str {
        &self.0.source
    }

    fn text(&self) -> &str {
        &self.0.text
    }

    fn description(&self) -> &str {
        &self.0.description
    }

    fn replicas(&self) -> u16 {
        self.0.replicas
    }

    fn checker_set(&self) -> String {
        checker_set(&self.0)
    }

    fn expected(&self) -> Vec<&'static str> {
        self.0.expected().iter().map(|i| i.name()).collect()
    }

    fn same_as(&self, other: &dyn AnyScenario) -> bool {
        other
            .as_any()
            .downcast_ref::<ScenarioOf<S>>()
            .is_some_and(|other| {
                let moved = Scenario {
                    source: self.0.source.clone(),
                    ..other.0.clone()
                };
                moved == self.0
            })
    }

    fn with_overrides(
        &self,
        overrides: &Overrides,
    ) -> Result<Arc<dyn AnyScenario>, (String, String)> {
        let scenario = overrides.apply(&self.0)?;
        Ok(Arc::new(ScenarioOf(scenario)))
    }

    fn runner(&self, worker: &str, strategy: Strategy) -> Option<Box<dyn AnyRunner>> {
        let factory = S::factory(worker)?;
        Some(self.runner_of(worker, factory, strategy))
    }

    fn custom_runner(
        &self,
        worker: &str,
        factory: Box<dyn Any>,
        strategy: Strategy,
    ) -> Option<Box<dyn AnyRunner>> {
        let factory = factory.downcast::<Rc<WorkerFactory<S>>>().ok()?;
        Some(self.runner_of(worker, *factory, strategy))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A runner of system `S`.
struct RunnerOf<S: System + Render> {
    spec: RunSpec<S>,
}

impl<S: System + Render> AnyRunner for RunnerOf<S> {
    fn set_interrupt(&mut self, interrupt: Interrupt) {
        self.spec.interrupt = Some(interrupt);
    }

    fn calibrate(&mut self) {
        self.spec = self.spec.clone().calibrated();
    }

    fn set_pct_steps(&mut self, steps: Option<u64>) {
        self.spec.pct_steps = steps;
    }

    fn pct_steps(&self) -> Option<u64> {
        self.spec.pct_steps
    }

    fn run(&self, feed: Feed, keep_events: bool, record_choices: bool) -> Box<dyn AnyReport> {
        let spec = RunSpec {
            feed,
            keep_events,
            record_choices,
            ..self.spec.clone()
        };
        let replicas = spec.scenario.replicas;
        Box::new(ReportOf {
            report: run(&spec),
            replicas,
        })
    }

    fn header(&self, feed: String) -> TraceHeader {
        TraceHeader::of(&self.spec, feed)
    }

    fn shrink(&self, feed: Feed, budget: u64) -> Option<ShrunkRun> {
        let spec = RunSpec {
            feed,
            ..self.spec.clone()
        };
        let shrunk = shrink::shrink(&spec, budget)?;
        let replicas = shrunk.scenario.replicas;
        Some(ShrunkRun {
            original_events: shrunk.original_events,
            candidates: shrunk.candidates,
            overrides: shrunk.overrides,
            scenario: Arc::new(ScenarioOf((*shrunk.scenario).clone())),
            report: Box::new(ReportOf {
                report: shrunk.report,
                replicas,
            }),
        })
    }
}

/// One run's report of system `S`, with what rendering it needs.
pub struct ReportOf<S: System + Render> {
    pub report: RunReport<S>,
    pub replicas: u16,
}

impl<S: System + Render> AnyReport for ReportOf<S> {
    fn label(&self) -> String {
        self.report.outcome.label()
    }

    fn sentence(&self) -> String {
        self.report.outcome.sentence()
    }

    fn verdict_line(&self) -> String {
        self.report.outcome.verdict_line()
    }

    fn failed(&self) -> bool {
        self.report.failed()
    }

    fn invariant(&self) -> Option<&'static str> {
        self.report.outcome.invariant().map(|i| i.name())
    }

    fn expected(&self) -> Vec<(&'static str, String)> {
        self.report
            .expected
            .iter()
            .map(|v| (v.invariant.name(), v.sentence.clone()))
            .collect()
    }

    fn coverage(&self) -> u64 {
        self.report.coverage.bits()
    }

    fn in_flight(&self) -> u128 {
        self.report.in_flight
    }

    fn stats(&self) -> RunStats {
        self.report.stats
    }

    fn truncated(&self) -> bool {
        self.report.truncated
    }

    fn choices(&self) -> &[Choice] {
        &self.report.choices
    }

    fn events(&self) -> usize {
        self.report.events.len()
    }

    fn profile(&self) -> Vec<String> {
        self.report.profile.describe()
    }

    fn trace(&self, head: &TraceHeader) -> String {
        trace::render(head, &self.report)
    }

    #[cfg(feature = "json")]
    fn json(&self, head: &TraceHeader) -> String {
        trace::render_json(head, &self.report)
    }

    fn digest(&self, head: &TraceHeader, max_lines: usize) -> String {
        trace::render_digest(head, &self.report, max_lines)
    }

    fn html(&self, head: &TraceHeader) -> String {
        crate::html::render(head, &self.report, self.replicas)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
