//! The same world and worker core on two drivers: leasesim's deterministic executor and
//! tokio's current_thread runtime in paused time. Measured here, printed by the `compare` and
//! `report` benches.
//!
//! Terminology:
//! - *driver*: what runs one seed: `leasesim` (`leasesim::runner::run`, what `leasesim fuzz`
//!   runs per seed), `tokio paused, shared runtime` (one runtime for every seed) or `tokio
//!   paused, runtime per seed` (a fresh runtime per seed, as a `Sim` is built per seed).
//! - *mode*: what each event goes through on both drivers. *Checked*: stamped, stable-hashed
//!   and fed to the same checkers and coverage (`leasesim::runner::Observers`). *Counted*: only
//!   stamped, hashed and counted (leasesim: `leasesim_sim::simulate` without an observer).
//! - *block*: a run of consecutive seeds that every driver of a mode runs in turn, back to
//!   back, so a change of the host's load hits every driver alike. Blocks are sized to
//!   `Budget::block_s` of leasesim CPU time.
//! - *best tokio driver*: the faster of the two tokio drivers over the whole measurement (the
//!   conservative comparison); the counted mode has the shared-runtime driver only.
//!
//! Both drivers draw every latency and fault from a `ChoiceSource` seeded with the same seed;
//! the traces still differ (the runtimes interleave ready tasks differently, and only leasesim
//! draws scheduling choices), so only their sizes are compared. Times are this thread's CPU
//! time (the wall clock is kept too).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::rc::Rc;
use std::time::Duration;

use leasesim::retention::Retention;
use leasesim::runner::{Observers, RunSpec};
use leasesim_events::{Event, EventKind, Flow, Phase, Stamped};
use leasesim_holder_lock::HolderLock;
use leasesim_invariants::InvariantName;
use leasesim_reservations::Reservations;
use leasesim_rt::hash::{mix, stable_hash};
use leasesim_rt::{ChoiceKind, ChoiceSource, Feed, RunOutcome, SimConfig, Strategy};
use leasesim_sim::{
    Env, EnvSleep, LocalTask, Scenario, System, WorkerFactory, run_phases, simulate, world_on,
};
use leasesim_work_items::WorkItems;

use super::{Budget, Elapsed, Stopwatch};

/// The scenarios compared: retention's two of old, and one default scenario of every other
/// system (its no-fault baseline).
const RETENTION_SCENARIOS: [&str; 2] = ["steady", "swarm"];

/// What each event goes through (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Checked,
    Counted,
}

// ---------------------------------------------------------------------------------------------
// The tokio env
// ---------------------------------------------------------------------------------------------

/// The world's `Env` on tokio: paused time, `spawn_local`, draws from a seeded `ChoiceSource`,
/// events through the same observers as a leasesim fuzz run (checked mode).
struct TokioEnv<S: System> {
    start: tokio::time::Instant,
    choices: RefCell<ChoiceSource>,
    checked: bool,
    /// `None` in counted mode, and until the profile is drawn.
    observers: RefCell<Option<Observers<S>>>,
    next_seq: Cell<u64>,
    trace_hash: Cell<u64>,
    reached_end: Cell<bool>,
}

impl<S: System> TokioEnv<S> {
    /// Must be called inside the runtime (the paused clock is the runtime's).
    fn new(seed: u64, mode: Mode) -> TokioEnv<S> {
        TokioEnv {
            start: tokio::time::Instant::now(),
            choices: RefCell::new(ChoiceSource::new(Feed::Seed(seed), false)),
            checked: mode == Mode::Checked,
            observers: RefCell::new(None),
            next_seq: Cell::new(0),
            trace_hash: Cell::new(0),
            reached_end: Cell::new(false),
        }
    }

    /// In checked mode, builds the observers for the drawn profile (`leasesim::runner`'s).
    fn observe(&self, scenario: &Scenario<S>, profile: &leasesim::runner::Profile<S>) {
        if self.checked {
            *self.observers.borrow_mut() = Some(Observers::new(scenario, profile, None));
        }
    }

    /// Runs the checkers' end-of-run checks; the failing invariant, if any.
    fn verdict(&self, end_ms: u64) -> Option<String> {
        let mut observers = self.observers.borrow_mut();
        let violation = observers.as_mut()?.verdict(end_ms)?;
        Some(violation.invariant.name().to_string())
    }
}

impl<S: System> Env<S> for TokioEnv<S> {
    fn now_ms(&self) -> u64 {
        // Paused time only moves to timer deadlines, whole ms after `start`.
        self.start.elapsed().as_millis() as u64
    }

    fn sleep_until(&self, at_ms: u64) -> EnvSleep {
        let deadline = self.start + Duration::from_millis(at_ms);
        EnvSleep::Boxed(Box::pin(tokio::time::sleep_until(deadline)))
    }

    fn yield_now(&self) -> EnvSleep {
        EnvSleep::Boxed(Box::pin(tokio::task::yield_now()))
    }

    fn spawn(&self, _name: &str, task: LocalTask) {
        // Detached, as on leasesim: the world never joins its tasks.
        drop(tokio::task::spawn_local(task));
    }

    fn range(&self, lo: u64, hi: u64) -> u64 {
        assert!(lo <= hi, "empty range {lo}..={hi}");
        lo + self.choices.borrow_mut().draw(ChoiceKind::Range, hi - lo)
    }

    fn coin(&self, p: f64) -> bool {
        self.choices.borrow_mut().coin(p)
    }

    fn emit(&self, event: Event<S>) {
        let seq = self.next_seq.get();
        self.next_seq.set(seq + 1);
        if event.kind == EventKind::Phase(Phase::End) {
            self.reached_end.set(true);
        }
        let stamped = Stamped {
            seq,
            at_ms: self.now_ms(),
            event,
        };
        self.trace_hash
            .set(mix(self.trace_hash.get(), stable_hash(&stamped)));
        // A violation would halt a leasesim run; here the run goes on and the verdict is read
        // at the end (none is expected of the correct worker).
        if let Some(observers) = self.observers.borrow_mut().as_mut() {
            let flow: Flow = observers.on_event(&stamped);
            black_box(flow);
        }
    }
}

fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("tokio runtime builds")
}

// ---------------------------------------------------------------------------------------------
// One seed on each driver
// ---------------------------------------------------------------------------------------------

/// What one run produced.
#[derive(Clone, Debug, Default)]
struct SeedResult {
    events: u64,
    /// Polls (leasesim only).
    steps: u64,
    /// `Phase(End)` was emitted; `None` where the driver cannot tell (leasesim, checked).
    reached_end: Option<bool>,
    /// The failing invariant or outcome label.
    failure: Option<String>,
}

/// A driver of seeds.
enum Driver<'a, S: System> {
    Leasesim {
        spec: RunSpec<S>,
        mode: Mode,
    },
    /// `runtime: None` builds a runtime per seed (as a `Sim` is built per seed).
    Tokio {
        runtime: Option<&'a tokio::runtime::Runtime>,
        scenario: Rc<Scenario<S>>,
        factory: Rc<WorkerFactory<S>>,
        mode: Mode,
    },
}

impl<S: System> Driver<'_, S> {
    fn run_seed(&self, seed: u64) -> SeedResult {
        match self {
            Driver::Leasesim { spec, mode } => leasesim_seed(spec, *mode, seed),
            Driver::Tokio {
                runtime: Some(runtime),
                scenario,
                factory,
                mode,
            } => tokio_seed(runtime, scenario, factory, *mode, seed),
            Driver::Tokio {
                runtime: None,
                scenario,
                factory,
                mode,
            } => tokio_seed(&tokio_runtime(), scenario, factory, *mode, seed),
        }
    }
}

fn leasesim_seed<S: System>(spec: &RunSpec<S>, mode: Mode, seed: u64) -> SeedResult {
    match mode {
        Mode::Checked => {
            let report = super::leasesim_run(spec, seed);
            SeedResult {
                events: report.stats.events,
                steps: report.stats.steps,
                reached_end: None,
                failure: report.failed().then(|| report.outcome.label()),
            }
        }
        Mode::Counted => {
            // The event log still stamps and stable-hashes every event; no observer.
            let config = SimConfig {
                feed: Feed::Seed(seed),
                ..SimConfig::seeded(0)
            }
            .with_strategy(Strategy::Random)
            .with_recording(false);
            let world_run = simulate(&spec.scenario, &spec.factory, config, false, None);
            let completed = matches!(world_run.outcome, RunOutcome::Completed(()));
            black_box(world_run.trace_hash);
            SeedResult {
                events: world_run.events_emitted,
                steps: world_run.steps,
                reached_end: Some(completed),
                failure: (!completed).then(|| format!("{:?}", world_run.outcome)),
            }
        }
    }
}

/// One seed of `scenario` on tokio: draws the profile, builds the world, drives `run_phases`
/// to completion inside a fresh `LocalSet` on `runtime`, tears the world down.
fn tokio_seed<S: System>(
    runtime: &tokio::runtime::Runtime,
    scenario: &Rc<Scenario<S>>,
    factory: &Rc<WorkerFactory<S>>,
    mode: Mode,
    seed: u64,
) -> SeedResult {
    let local = tokio::task::LocalSet::new();
    let result = local.block_on(runtime, async {
        let env = Rc::new(TokioEnv::<S>::new(seed, mode));
        let dyn_env: Rc<dyn Env<S>> = env.clone();
        let world = world_on(scenario, dyn_env, |profile| env.observe(scenario, profile));
        run_phases(world.clone(), factory.clone()).await;
        world.teardown();
        let failure = env.verdict(env.now_ms());
        black_box(env.trace_hash.get());
        SeedResult {
            events: env.next_seq.get(),
            steps: 0,
            reached_end: Some(env.reached_end.get()),
            failure,
        }
    });
    // Drops the tasks still parked (flights, tickers), as dropping a `Sim` does.
    drop(local);
    result
}

// ---------------------------------------------------------------------------------------------
// Seeds per second
// ---------------------------------------------------------------------------------------------

/// Totals of one driver over the seeds it ran.
#[derive(Debug, Default)]
pub struct Totals {
    pub seeds: u64,
    pub events: u64,
    pub steps: u64,
    /// Seeds that emitted `Phase(End)`; `None` where the driver cannot tell.
    pub reached_end: Option<u64>,
    pub time: Elapsed,
    /// (seeds, CPU seconds) of each block, in the order run.
    pub blocks: Vec<(u64, f64)>,
    /// Failing seeds per label.
    pub failures: BTreeMap<String, Vec<u64>>,
}

impl Totals {
    fn run_block<S: System>(&mut self, driver: &Driver<'_, S>, first: u64, count: u64) {
        let watch = Stopwatch::start();
        let results: Vec<(u64, SeedResult)> = (first..first + count)
            .map(|seed| (seed, driver.run_seed(seed)))
            .collect();
        let elapsed = watch.elapsed();
        self.time += elapsed;
        self.blocks.push((count, elapsed.cpu_s));
        for (seed, result) in results {
            self.seeds += 1;
            self.events += result.events;
            self.steps += result.steps;
            if let Some(ended) = result.reached_end {
                *self.reached_end.get_or_insert(0) += u64::from(ended);
            }
            if let Some(label) = result.failure {
                self.failures.entry(label).or_default().push(seed);
            }
        }
    }

    /// Seeds per CPU second over the whole measurement.
    pub fn rate(&self) -> f64 {
        self.seeds as f64 / self.time.cpu_s
    }

    /// Seeds per CPU second of each block, in the order run.
    pub fn block_rates(&self) -> Vec<f64> {
        self.blocks
            .iter()
            .map(|&(seeds, cpu_s)| seeds as f64 / cpu_s)
            .collect()
    }

    /// Seeds that failed, under any label.
    pub fn failing(&self) -> u64 {
        self.failures.values().map(|seeds| seeds.len() as u64).sum()
    }
}

/// One scenario's measurements: (driver label, mode, totals) rows.
pub struct ScenarioFigures {
    pub name: String,
    /// The scenario's system (`System::NAME`).
    pub system: &'static str,
    pub rows: Vec<(&'static str, Mode, Totals)>,
}

impl ScenarioFigures {
    /// The totals of driver `label` in `mode`, if it ran.
    pub fn totals(&self, label: &str, mode: Mode) -> Option<&Totals> {
        self.rows
            .iter()
            .find(|(l, m, _)| *l == label && *m == mode)
            .map(|(_, _, totals)| totals)
    }

    pub fn rate(&self, label: &str, mode: Mode) -> f64 {
        self.totals(label, mode).map_or(f64::NAN, Totals::rate)
    }
}

pub const LEASESIM: &str = "leasesim";
pub const TOKIO: &str = "tokio paused, shared runtime";
pub const TOKIO_FRESH: &str = "tokio paused, runtime per seed";

/// Runs every driver on the same blocks of seeds, in turn, until the first (leasesim) used
/// `target_s` of CPU in blocks of about `block_s`.
fn measure_together<S: System>(
    drivers: &[&Driver<'_, S>],
    target_s: f64,
    block_s: f64,
) -> Vec<Totals> {
    // Warm up every driver (allocator, caches) and size blocks to `block_s` of leasesim.
    let mut block = 1;
    for (index, driver) in drivers.iter().enumerate() {
        let warm = Stopwatch::start();
        for seed in 0..10 {
            black_box(driver.run_seed(1_000_000 + seed));
        }
        if index == 0 {
            block = ((block_s / (warm.elapsed().cpu_s / 10.0)) as u64).max(1);
        }
    }
    let mut totals: Vec<Totals> = drivers.iter().map(|_| Totals::default()).collect();
    let mut first = 0;
    while totals[0].time.cpu_s < target_s {
        for (driver, sums) in drivers.iter().zip(&mut totals) {
            sums.run_block(driver, first, block);
        }
        first += block;
    }
    totals
}

/// Both modes of scenario `name` of system `S`: the checked mode gets `budget.total_s` of
/// leasesim CPU time, the counted mode 60 % of it.
pub fn measure_scenario<S: System + leasesim::Render>(
    name: &str,
    budget: Budget,
) -> ScenarioFigures {
    let scenario = super::builtin_scenario_of::<S>(name);
    let factory = super::correct_factory_of::<S>();
    let spec = super::fuzz_spec(&scenario, &factory);
    let runtime = tokio_runtime();
    let mut rows = Vec::new();
    for (mode, share) in [(Mode::Checked, 1.0), (Mode::Counted, 0.6)] {
        let mut drivers = vec![
            (
                LEASESIM,
                Driver::Leasesim {
                    spec: spec.clone(),
                    mode,
                },
            ),
            (
                TOKIO,
                Driver::Tokio {
                    runtime: Some(&runtime),
                    scenario: scenario.clone(),
                    factory: factory.clone(),
                    mode,
                },
            ),
        ];
        if mode == Mode::Checked {
            drivers.push((
                TOKIO_FRESH,
                Driver::Tokio {
                    runtime: None,
                    scenario: scenario.clone(),
                    factory: factory.clone(),
                    mode,
                },
            ));
        }
        let refs: Vec<&Driver<'_, S>> = drivers.iter().map(|(_, d)| d).collect();
        let totals = measure_together(&refs, budget.total_s * share, budget.block_s);
        for ((label, _), sums) in drivers.iter().zip(totals) {
            rows.push((*label, mode, sums));
        }
    }
    ScenarioFigures {
        name: name.to_string(),
        system: S::NAME,
        rows,
    }
}

/// Every compared scenario (see `RETENTION_SCENARIOS`), in the order printed.
pub fn measure_all(budget: Budget) -> Vec<ScenarioFigures> {
    let mut all: Vec<ScenarioFigures> = RETENTION_SCENARIOS
        .iter()
        .map(|s| measure_scenario::<Retention>(s, budget))
        .collect();
    all.push(measure_scenario::<HolderLock>("holder-steady", budget));
    all.push(measure_scenario::<Reservations>("expiry-steady", budget));
    all.push(measure_scenario::<WorkItems>("items-steady", budget));
    all
}

/// The faster of the two tokio drivers in `mode` (the conservative comparison).
pub fn best_tokio(figures: &ScenarioFigures, mode: Mode) -> (f64, &'static str) {
    let shared = figures.rate(TOKIO, mode);
    let fresh = figures.rate(TOKIO_FRESH, mode);
    if fresh > shared {
        (fresh, TOKIO_FRESH)
    } else {
        (shared, TOKIO)
    }
}

/// The blocks of leasesim and of the best tokio driver in `mode`, paired (both ran the same
/// seeds back to back), as (tokio CPU seconds, leasesim CPU seconds): each pair's quotient is
/// that block's ratio of leasesim's seeds per second to tokio's. Pairing blocks cancels most of
/// the host's drift, which moves both drivers' rates between blocks.
pub fn paired_blocks(figures: &ScenarioFigures, mode: Mode) -> Vec<(f64, f64)> {
    let blocks = |label: &str| {
        figures
            .totals(label, mode)
            .map_or_else(Vec::new, |totals| totals.blocks.clone())
    };
    let (ours, theirs) = (blocks(LEASESIM), blocks(best_tokio(figures, mode).1));
    // invariant: both drivers ran the same blocks.
    assert_eq!(ours.len(), theirs.len(), "{}: unpaired", figures.name);
    ours.iter()
        .zip(&theirs)
        .map(|(&(_, leasesim_s), &(_, tokio_s))| (tokio_s, leasesim_s))
        .collect()
}
