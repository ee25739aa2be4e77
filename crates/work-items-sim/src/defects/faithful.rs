//! The engine with no flaw is the production worker: the same trace, byte for byte.
//!
//! Terminology:
//! - *flawless engine*: the engine with no flaw; it exists only in this test.
//! - *trace hash*: the runtime's hash over every event of a run; equal hashes (with equal
//!   event and step counts) mean both workers made the same calls at the same instants in the
//!   same order, and woke the scheduler the same way.

use std::rc::Rc;

use futures::future::LocalBoxFuture;
use leasesim_sim::scenario::load_scenario;
use leasesim_sim::{Scenario, first_divergence};
use work_items_worker::{RunError, RunReport};

use super::engine::{Engine, Flaw};
use crate::WorkItems;
use crate::ports::{
    AnyWorker, SimClock, SimProvider, SimStore, WorkerFactory, WorkerPorts, WorkerUnderTest,
    correct_worker,
};

/// The engine with `flaw` (none: the flawless engine) on the simulated ports.
struct EngineWorker(Engine<SimClock, SimStore, SimProvider>);

impl WorkerUnderTest for EngineWorker {
    type Report = Result<RunReport, RunError>;

    fn run(&self) -> LocalBoxFuture<'_, Result<RunReport, RunError>> {
        Box::pin(self.0.run())
    }

    fn stop(&self) -> LocalBoxFuture<'_, ()> {
        Box::pin(self.0.stop())
    }
}

fn engine_factory(flaw: Option<Flaw>) -> Rc<WorkerFactory> {
    Rc::new(move |ports: WorkerPorts| {
        let parts = (ports.clock, ports.store, ports.provider);
        let engine = Engine::new(ports.owner_id, ports.config, parts, flaw)
            .expect("scenario loading validated the configuration");
        Rc::new(EngineWorker(engine)) as Rc<AnyWorker>
    })
}

fn scenario(name: &str) -> Rc<Scenario<WorkItems>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/work-items")
        .join(format!("{name}.toml"));
    Rc::new(load_scenario(&path).unwrap_or_else(|err| panic!("{err}")))
}

/// Every default scenario: each exercises another corner of the loop.
const SCENARIOS: [&str; 8] = [
    "items-steady",
    "items-ugly-transition",
    "items-provider-timeouts",
    "items-store-reply-lost",
    "items-clock-skew",
    "items-long-items",
    "items-stop-anywhere",
    "items-swarm",
];

#[test]
fn the_engine_without_a_flaw_reproduces_the_production_workers_trace() {
    let correct: Rc<WorkerFactory> = Rc::new(correct_worker);
    let flawless = engine_factory(None);
    for name in SCENARIOS {
        let diverged = first_divergence(&scenario(name), &correct, &flawless, 0..3);
        assert_eq!(
            diverged, None,
            "{name}: the flawless engine diverged at this seed"
        );
    }
}

#[test]
fn each_flaw_changes_the_trace_somewhere() {
    // A switch that changed nothing would make its worker the correct one under another name.
    let correct: Rc<WorkerFactory> = Rc::new(correct_worker);
    let flaws = [
        (Flaw::PlainWriteClaim, "items-steady"),
        (Flaw::UnfencedApply, "items-clock-skew"),
        (Flaw::KeylessRetry, "items-provider-timeouts"),
        (Flaw::LeaseLostRetry, "items-ugly-transition"),
        (Flaw::UnfencedDone, "items-clock-skew"),
        (Flaw::WorkerToken, "items-steady"),
        (Flaw::StoreExpiryRenewal, "items-long-items"),
        (Flaw::NoDeadline, "items-long-items"),
    ];
    for (flaw, name) in flaws {
        let scenario = scenario(name);
        let flawed = engine_factory(Some(flaw));
        let diverged = first_divergence(&scenario, &correct, &flawed, 0..5);
        assert!(
            diverged.is_some(),
            "{flaw:?} changed no trace of {name} in 5 seeds"
        );
    }
}
