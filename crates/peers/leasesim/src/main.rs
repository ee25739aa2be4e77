//! The leasesim side of the side-by-side: the workload is its builtin scenario itself
//! (`holder-long-jobs`; `holder-slow-release` or `holder-volatile` with the workload's
//! overrides written in as `leasesim replay --choices` writes them, e.g.
//! `faults.reply_lost.OP = 0.02`), run by `leasesim::runner::run` exactly as `leasesim fuzz`
//! runs a seed (random strategy, no events kept, no choices recorded, halting checkers), with
//! the holder-lock system's own workers.
//!
//! Terminology:
//! - *verdict*: the runner's outcome in the shared form (`peers_common::recorder::Verdict`):
//!   any outcome but a pass is a violation (a deadlock or a hang would count too); the trace
//!   hash is leasesim's own (`RunStats::trace_hash`, over every event of the run).

use std::rc::Rc;

use leasesim::Workers;
use leasesim::overrides::{self, Overrides};
use leasesim::runner::{RunSpec, run};
use leasesim_holder_lock::{HolderLock, Scenario};
use leasesim_rt::{Feed, Strategy};
use peers_common::cli::{self, Side};
use peers_common::recorder::Verdict;
use peers_common::workload::Workload;

/// The workload's scenario, as leasesim ships it, with the workload's overrides.
fn scenario(workload: &Workload) -> Rc<Scenario> {
    let name = workload.scenario;
    let scenario = leasesim::catalog::resolve_typed::<HolderLock>(name)
        .unwrap_or_else(|error| panic!("builtin scenario {name}: {error}"));
    let mut changes = Overrides::default();
    for (key, value) in workload.overrides {
        let line = overrides::parse(&format!("{key} = {value}"))
            .unwrap_or_else(|error| panic!("override {key}: {error:?}"));
        changes.set(&line.key, line.value);
    }
    let scenario = changes
        .apply(&scenario)
        .unwrap_or_else(|(key, why)| panic!("override {key}: {why}"));
    Rc::new(scenario)
}

/// One run of `worker` with `seed`, as `leasesim fuzz` runs it (`keep`: keep its events).
fn run_once(scenario: &Rc<Scenario>, worker: &str, seed: u64, keep: bool) -> Verdict {
    let factory = HolderLock::factory(worker).unwrap_or_else(|| panic!("no worker {worker}"));
    let mut spec = RunSpec::new(
        scenario.clone(),
        worker,
        factory,
        Feed::Seed(seed),
        Strategy::Random,
    );
    spec.keep_events = keep;
    let report = run(&spec);
    let violation = report.failed().then(|| report.outcome.verdict_line());
    let trace = report
        .events
        .iter()
        .map(|event| format!("t={:>8}ms {:?}", event.at_ms, event.event))
        .collect();
    Verdict {
        violation,
        trace_hash: report.stats.trace_hash,
        events: report.stats.events,
        trace,
    }
}

fn main() {
    let scenario = scenario(cli::workload_of());
    let side = Side {
        peer: "leasesim",
        version: "workspace (this commit)",
        cannot_express: Vec::new(),
        at_failure: "the violated invariant and its sentence, the seed and its replay line \
                     (leasesim replay --scenario S --seed N --worker W), the full trace, a \
                     shrunk counterexample (leasesim shrink), the timeline (HTML), a replay \
                     file of the choices"
            .to_string(),
    };
    cli::main(side, &mut |worker, seed, keep| {
        run_once(&scenario, worker, seed, keep)
    });
}
