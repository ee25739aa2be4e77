//! Code shared by the `compare`, `scaling` and `report` benches.
//!
//! Terminology:
//! - *stopwatch*: reads the wall clock and this thread's CPU clock around a whole batch of
//!   runs, never inside a simulation. On a shared machine the CPU clock is the steadier of the
//!   two (other processes steal wall time, not thread CPU time), so both are reported.
//! - *leasesim run*: `leasesim::runner::run`, the path `leasesim fuzz` takes for every seed:
//!   all invariant checkers, coverage and the trace hash, no kept events, no recorded choices.
//! - *budget*: the CPU time one measured row may spend, and the size of its blocks (the runs
//!   of seeds timed as one; see `versus` and `growth`).
// Not every bench uses every helper.
#![allow(dead_code)]

pub mod growth;
pub mod versus;

use std::rc::Rc;
// Wall clock, read only around whole batches of runs (see the crate-level allow of each bench).
use std::time::Instant;

use leasesim::catalog::resolve_typed;
use leasesim::retention::{Retention, Scenario};
use leasesim::runner::{RunReport, RunSpec, run};
use leasesim::{Strategy, System};
use leasesim_rt::Feed;
use leasesim_sim::WorkerFactory;

/// How much CPU time a measured row spends (`total_s`), timed in blocks of about `block_s`.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub total_s: f64,
    pub block_s: f64,
}

impl Budget {
    /// `LEASESIM_BENCH_SECS` seconds per row (`default_s` when unset), blocks of `block_s`.
    pub fn from_env(default_s: f64, block_s: f64) -> Budget {
        let total_s = std::env::var("LEASESIM_BENCH_SECS")
            .ok()
            .and_then(|text| text.parse().ok())
            .unwrap_or(default_s);
        Budget { total_s, block_s }
    }
}

/// Seconds of CPU time this thread has used.
pub fn thread_cpu_s() -> f64 {
    let mut spec = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `spec` is a valid, writable timespec; the clock id is a constant of the platform.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut spec) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    spec.tv_sec as f64 + spec.tv_nsec as f64 * 1e-9
}

/// Wall and thread-CPU time since it was started.
#[derive(Clone, Copy, Debug)]
pub struct Stopwatch {
    wall: Instant,
    cpu_s: f64,
}

/// What a stopwatch measured, in seconds.
#[derive(Clone, Copy, Debug, Default)]
pub struct Elapsed {
    pub wall_s: f64,
    pub cpu_s: f64,
}

impl std::ops::AddAssign for Elapsed {
    fn add_assign(&mut self, other: Elapsed) {
        self.wall_s += other.wall_s;
        self.cpu_s += other.cpu_s;
    }
}

impl Stopwatch {
    pub fn start() -> Stopwatch {
        Stopwatch {
            wall: Instant::now(),
            cpu_s: thread_cpu_s(),
        }
    }

    pub fn elapsed(&self) -> Elapsed {
        Elapsed {
            wall_s: self.wall.elapsed().as_secs_f64(),
            cpu_s: thread_cpu_s() - self.cpu_s,
        }
    }
}

/// A builtin retention scenario by name (panics on an unknown name: the benches name real
/// ones).
pub fn builtin_scenario(name: &str) -> Rc<Scenario> {
    builtin_scenario_of::<Retention>(name)
}

/// A builtin scenario of system `S` by name (panics on an unknown name or another system's).
pub fn builtin_scenario_of<S: System + leasesim::Render>(
    name: &str,
) -> Rc<leasesim_sim::Scenario<S>> {
    let scenario = resolve_typed::<S>(name)
        .unwrap_or_else(|err| panic!("builtin {} scenario `{name}`: {err}", S::NAME));
    Rc::new(scenario)
}

/// An inline scenario (panics with the parse error: the benches write valid ones).
pub fn inline_scenario(name: &str, text: &str) -> Rc<Scenario> {
    let scenario = leasesim_retention::parse_scenario(name, &format!("<bench>/{name}.toml"), text)
        .unwrap_or_else(|err| panic!("inline scenario `{name}` parses: {err}\n{text}"));
    Rc::new(scenario)
}

/// The retention production worker's factory.
pub fn correct_factory() -> Rc<WorkerFactory<Retention>> {
    correct_factory_of::<Retention>()
}

/// System `S`'s production worker's factory.
pub fn correct_factory_of<S: System>() -> Rc<WorkerFactory<S>> {
    S::factory("correct").expect("every system has a correct worker")
}

/// The spec of a fuzz-style run of `scenario`: random strategy, no kept events, no recorded
/// choices (exactly what `leasesim fuzz` runs for every seed).
pub fn fuzz_spec<S: System>(
    scenario: &Rc<leasesim_sim::Scenario<S>>,
    factory: &Rc<WorkerFactory<S>>,
) -> RunSpec<S> {
    RunSpec {
        scenario: scenario.clone(),
        worker: "correct".into(),
        factory: factory.clone(),
        feed: Feed::Seed(0),
        strategy: Strategy::Random,
        keep_events: false,
        record_choices: false,
        event_limit: None,
        pct_steps: None,
        interrupt: None,
    }
}

/// One leasesim run of `spec` from `seed`.
pub fn leasesim_run<S: System>(spec: &RunSpec<S>, seed: u64) -> RunReport<S> {
    let mut spec = spec.clone();
    spec.feed = Feed::Seed(seed);
    run(&spec)
}

/// Totals of a batch of leasesim runs.
#[derive(Clone, Copy, Debug, Default)]
pub struct BatchTotals {
    pub seeds: u64,
    pub events: u64,
    pub steps: u64,
    pub failed: u64,
}

/// Runs seeds `first..first + count` on leasesim; returns totals and the time taken.
pub fn leasesim_batch<S: System>(
    spec: &RunSpec<S>,
    first: u64,
    count: u64,
) -> (BatchTotals, Elapsed) {
    let mut totals = BatchTotals::default();
    let watch = Stopwatch::start();
    for seed in first..first + count {
        let report = leasesim_run(spec, seed);
        totals.seeds += 1;
        totals.events += report.stats.events;
        totals.steps += report.stats.steps;
        totals.failed += u64::from(report.failed());
        std::hint::black_box(&report);
    }
    (totals, watch.elapsed())
}

/// The median of `values` (sorted in place; NaN-free input).
pub fn median(values: &mut [f64]) -> f64 {
    assert!(!values.is_empty(), "median of nothing");
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}
