//! The same world and the same worker core on two runtimes: leasesim's deterministic executor
//! and tokio's current_thread runtime in paused time.
//!
//! `cargo bench -p leasesim --bench compare` prints, per scenario, seeds per second of each
//! driver with a sanity check of the tokio driver (events per seed of the same order as
//! leasesim's, every run reaching `Phase(End)`, failing seeds listed), then the executor
//! micro-benchmarks (the method of `crates/rt/benches/runtime.rs`), and ends with one line per
//! scenario that scripts parse:
//!
//! `seeds/s SCENARIO: leasesim=A tokio=B ratio=R` (R = A / B, the "checked" mode; B is the
//! faster of the two tokio drivers: one runtime shared by all seeds, or one per seed)
//!
//! Equal work on both sides, in two modes:
//! - *checked* (the figure of the last lines): every event is stamped (sequence number,
//!   virtual time), stable-hashed into a trace hash, and fed to the checkers of every
//!   invariant the scenario does not expect to break (one `CheckerSet`), to one set per
//!   expected invariant, and to the coverage; the checked set's `finish` runs at the end. The
//!   leasesim side is `leasesim::runner::run` (`keep_events = false`,
//!   `record_choices = false`), exactly what `leasesim fuzz` runs per seed; the tokio side's
//!   `Env::emit` feeds the same `leasesim::runner::Observers`, and both build the world with
//!   `leasesim_sim::world_on`.
//! - *counted*: events are only stamped, hashed and counted, no checker: leasesim is
//!   `leasesim_sim::simulate` without an observer. This isolates runtime + world + worker.
//!
//! Both sides draw every latency and fault from a `ChoiceSource` seeded with the same seed; the
//! traces still differ (the runtimes interleave ready tasks differently, and only leasesim
//! draws scheduling choices), so only their sizes are compared.
//!
//! Figures are seeds per second of this thread's CPU time (the wall clock is shown too; on a
//! loaded machine it is the noisier one). Both drivers run the same blocks of seeds, in
//! alternation, so a change of machine load hits both alike. `LEASESIM_BENCH_SECS`
//! (default 2.5) sets the CPU seconds the leasesim side must reach per scenario and mode.
// Wall clock and CPU clock are read only around whole batches of runs, never inside a run.
#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    clippy::print_stdout
)]

mod common;
// The executor micro-workloads of `crates/rt/benches/runtime.rs`, shared so both report the
// same measurement.
#[path = "../../rt/benches/micro/mod.rs"]
mod micro;

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

use common::{Elapsed, Stopwatch, median};
use micro::{POLLS, TIMERS};

/// The scenarios compared: retention's two of old, and one default scenario of every other
/// system (its no-fault baseline).
const RETENTION_SCENARIOS: [&str; 2] = ["steady", "swarm"];

/// What each event goes through (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
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
            let report = common::leasesim_run(spec, seed);
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
struct Totals {
    seeds: u64,
    events: u64,
    steps: u64,
    reached_end: Option<u64>,
    time: Elapsed,
    /// Seeds per CPU second of each block.
    rounds: Vec<f64>,
    /// Failing seeds per label.
    failures: BTreeMap<String, Vec<u64>>,
}

impl Totals {
    fn run_block<S: System>(&mut self, driver: &Driver<'_, S>, first: u64, count: u64) {
        let watch = Stopwatch::start();
        let results: Vec<(u64, SeedResult)> = (first..first + count)
            .map(|seed| (seed, driver.run_seed(seed)))
            .collect();
        let elapsed = watch.elapsed();
        self.time += elapsed;
        self.rounds.push(count as f64 / elapsed.cpu_s);
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

    fn rate(&self) -> f64 {
        self.seeds as f64 / self.time.cpu_s
    }
}

/// One scenario's measurements: (driver label, mode, totals) rows.
struct ScenarioFigures {
    name: String,
    rows: Vec<(&'static str, Mode, Totals)>,
}

impl ScenarioFigures {
    fn rate(&self, label: &str, mode: Mode) -> f64 {
        self.rows
            .iter()
            .find(|(l, m, _)| *l == label && *m == mode)
            .map_or(f64::NAN, |(_, _, totals)| totals.rate())
    }
}

const LEASESIM: &str = "leasesim";
const TOKIO: &str = "tokio paused, shared runtime";
const TOKIO_FRESH: &str = "tokio paused, runtime per seed";

fn target_cpu_s() -> f64 {
    std::env::var("LEASESIM_BENCH_SECS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(2.5)
}

/// Runs every driver on the same blocks of seeds, in turn, until the first (leasesim) used
/// `target_s` of CPU.
fn measure_together<S: System>(drivers: &[&Driver<'_, S>], target_s: f64) -> Vec<Totals> {
    // Warm up every driver (allocator, caches) and size blocks to ~0.3 s of leasesim.
    let mut block = 1;
    for (index, driver) in drivers.iter().enumerate() {
        let warm = Stopwatch::start();
        for seed in 0..10 {
            black_box(driver.run_seed(1_000_000 + seed));
        }
        if index == 0 {
            block = ((0.3 / (warm.elapsed().cpu_s / 10.0)) as u64).max(1);
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

fn measure_scenario<S: System + leasesim::Render>(name: &str) -> ScenarioFigures {
    let scenario = common::builtin_scenario_of::<S>(name);
    let factory = common::correct_factory_of::<S>();
    let spec = common::fuzz_spec(&scenario, &factory);
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
        let totals = measure_together(&refs, target_cpu_s() * share);
        for ((label, _), sums) in drivers.iter().zip(totals) {
            rows.push((*label, mode, sums));
        }
    }
    ScenarioFigures {
        name: name.to_string(),
        rows,
    }
}

/// The faster of the two tokio drivers in `mode` (the conservative comparison).
fn best_tokio(figures: &ScenarioFigures, mode: Mode) -> (f64, &'static str) {
    let shared = figures.rate(TOKIO, mode);
    let fresh = figures.rate(TOKIO_FRESH, mode);
    if fresh > shared {
        (fresh, TOKIO_FRESH)
    } else {
        (shared, TOKIO)
    }
}

/// Leasesim's checked rate over the faster tokio driver's, block by block (both ran the same
/// seeds back to back): (median, lowest, highest, blocks). Pairing blocks cancels most of the
/// host's drift, which moves both drivers' rates between blocks.
fn block_ratios(figures: &ScenarioFigures) -> (f64, f64, f64, usize) {
    let rounds = |label: &str| {
        figures
            .rows
            .iter()
            .find(|(l, m, _)| *l == label && *m == Mode::Checked)
            .map_or_else(Vec::new, |(_, _, totals)| totals.rounds.clone())
    };
    let (ours, theirs) = (
        rounds(LEASESIM),
        rounds(best_tokio(figures, Mode::Checked).1),
    );
    // invariant: both drivers ran the same blocks.
    assert_eq!(ours.len(), theirs.len(), "{}: unpaired", figures.name);
    let mut ratios: Vec<f64> = ours.iter().zip(&theirs).map(|(a, b)| a / b).collect();
    let lowest = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let highest = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (median(&mut ratios), lowest, highest, ours.len())
}

fn print_scenario_table(all: &mut [ScenarioFigures]) {
    // Before the table sorts each driver's blocks for their median.
    let paired: Vec<(f64, f64, f64, usize)> = all.iter().map(block_ratios).collect();
    println!(
        "seeds per second, single thread, same seeds on both drivers (CPU time of this thread)"
    );
    println!();
    println!(
        "| scenario | mode | driver | seeds | seeds/s | median block | seeds/s (wall) | events/seed | µs/event | reached End | failing |"
    );
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for figures in all.iter_mut() {
        for (driver, mode, totals) in &mut figures.rows {
            let seeds = totals.seeds as f64;
            let failing: u64 = totals.failures.values().map(|s| s.len() as u64).sum();
            println!(
                "| {} | {} | {driver} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.3} | {} | {failing} |",
                figures.name,
                format!("{mode:?}").to_lowercase(),
                totals.seeds,
                totals.rate(),
                median(&mut totals.rounds),
                seeds / totals.time.wall_s,
                totals.events as f64 / seeds,
                totals.time.cpu_s * 1e6 / totals.events as f64,
                totals
                    .reached_end
                    .map_or_else(|| "-".to_string(), |n| format!("{n}/{}", totals.seeds)),
            );
        }
    }
    println!();
    for (figures, (median_ratio, lowest, highest, blocks)) in all.iter().zip(paired) {
        let checked = figures.rate(LEASESIM, Mode::Checked) / best_tokio(figures, Mode::Checked).0;
        let counted = figures.rate(LEASESIM, Mode::Counted) / best_tokio(figures, Mode::Counted).0;
        let steps = figures
            .rows
            .iter()
            .find(|(l, m, _)| *l == LEASESIM && *m == Mode::Checked)
            .map_or(0.0, |(_, _, t)| t.steps as f64 / t.seeds as f64);
        // Time per seed: 1/rate; the checkers' share is what the counted mode does not spend.
        let check_share =
            1.0 - figures.rate(LEASESIM, Mode::Checked) / figures.rate(LEASESIM, Mode::Counted);
        println!(
            "{}: ratio checked {checked:.2}, counted (no checkers) {counted:.2} (against the faster tokio driver: {}); leasesim {steps:.0} polls/seed; checkers+coverage = {:.0}% of a leasesim checked seed",
            figures.name,
            best_tokio(figures, Mode::Checked).1,
            check_share * 100.0,
        );
        println!(
            "{}: checked ratio block by block: median {median_ratio:.2}, lowest {lowest:.2}, highest {highest:.2} ({blocks} blocks)",
            figures.name,
        );
        for (driver, mode, totals) in &figures.rows {
            for (label, seeds) in &totals.failures {
                let shown: Vec<String> = seeds.iter().take(8).map(u64::to_string).collect();
                println!(
                    "  failing on {driver} ({mode:?}): {label} x{} (seeds {}{})",
                    seeds.len(),
                    shown.join(", "),
                    if seeds.len() > 8 { ", ..." } else { "" }
                );
            }
        }
    }
    println!();
}

// ---------------------------------------------------------------------------------------------
// Executor micro-benchmarks (the method of crates/rt/benches/runtime.rs)
// ---------------------------------------------------------------------------------------------

const REPEATS: usize = 7;

/// Median nanoseconds per operation of `run` (wall, CPU), which performs `ops` operations.
fn median_ns(ops: u64, mut run: impl FnMut()) -> (f64, f64) {
    run(); // warm up caches and allocator
    let mut wall = Vec::with_capacity(REPEATS);
    let mut cpu = Vec::with_capacity(REPEATS);
    for _ in 0..REPEATS {
        let watch = Stopwatch::start();
        run();
        let elapsed = watch.elapsed();
        wall.push(elapsed.wall_s * 1e9 / ops as f64);
        cpu.push(elapsed.cpu_s * 1e9 / ops as f64);
    }
    (median(&mut wall), median(&mut cpu))
}

fn micro() {
    let poll_ours = median_ns(POLLS, || micro::leasesim_polls(Strategy::Random, POLLS));
    let poll_tokio = median_ns(POLLS, || micro::tokio_polls(POLLS));
    let timer_ours = median_ns(TIMERS, || micro::leasesim_timers(TIMERS));
    let timer_tokio = median_ns(TIMERS, || micro::tokio_timers(TIMERS));
    println!(
        "executor micro-benchmarks (method of crates/rt/benches/runtime.rs: median of {REPEATS} runs of {POLLS} polls / {TIMERS} timer fires)"
    );
    println!();
    println!("| workload | ns/op (cpu) | ns/op (wall) |");
    println!("|---|---:|---:|");
    for (name, (wall, cpu)) in [
        ("leasesim poll, 1 task yielding (random)", poll_ours),
        ("tokio paused poll, 1 task yielding", poll_tokio),
        ("leasesim timer fire, 1 task sleeping 1 ms", timer_ours),
        ("tokio paused timer fire, 1 task sleeping 1 ms", timer_tokio),
    ] {
        println!("| {name} | {cpu:.1} | {wall:.1} |");
    }
    println!();
    println!(
        "poll ns: leasesim={:.1} tokio={:.1} ratio={:.2}",
        poll_ours.1,
        poll_tokio.1,
        poll_tokio.1 / poll_ours.1
    );
    println!(
        "timer ns: leasesim={:.1} tokio={:.1} ratio={:.2}",
        timer_ours.1,
        timer_tokio.1,
        timer_tokio.1 / timer_ours.1
    );
    println!();
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is accepted and ignored.
    let mut all: Vec<ScenarioFigures> = RETENTION_SCENARIOS
        .iter()
        .map(|s| measure_scenario::<Retention>(s))
        .collect();
    all.push(measure_scenario::<HolderLock>("holder-steady"));
    all.push(measure_scenario::<Reservations>("expiry-steady"));
    all.push(measure_scenario::<WorkItems>("items-steady"));
    print_scenario_table(&mut all);
    micro();
    for figures in &all {
        let ours = figures.rate(LEASESIM, Mode::Checked);
        let (theirs, _) = best_tokio(figures, Mode::Checked);
        println!(
            "seeds/s {}: leasesim={ours:.0} tokio={theirs:.0} ratio={:.2}",
            figures.name,
            ours / theirs
        );
    }
}
