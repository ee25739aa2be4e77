//! The engine with no flaw is the correct worker: the same trace, byte for byte.
//!
//! Terminology:
//! - *faithful worker*: the engine with [`Flaws::NONE`]; it exists only in this test.
//! - *diverge*: two workers' runs of one scenario and seed differ in trace hash, events or
//!   steps ([`first_divergence`]): not the same calls at the same instants in the same order.

use std::rc::Rc;

use leasesim_sim::scenario::load_scenario;
use leasesim_sim::{Scenario, first_divergence};

use crate::Reservations;
use crate::defects::engine::Flaws;
use crate::defects::{DEFECTS, engine_of};
use crate::ports::{AnyWorker, WorkerFactory, WorkerPorts, correct_worker};

fn scenario(name: &str) -> Rc<Scenario<Reservations>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/reservations")
        .join(format!("{name}.toml"));
    Rc::new(load_scenario(&path).unwrap_or_else(|err| panic!("{err}")))
}

fn engine_factory(flaws: Flaws) -> Rc<WorkerFactory> {
    Rc::new(move |ports: WorkerPorts| Rc::new(engine_of(ports, flaws)) as Rc<AnyWorker>)
}

/// Every default scenario: between them they run every branch of the loop (claims taken
/// over, transient errors and dead letters, kills, stops, a second run, skewed clocks).
const SCENARIOS: [&str; 8] = [
    "expiry-steady",
    "expiry-claim-takeover",
    "expiry-clock-skew",
    "expiry-consume-race",
    "expiry-transient-errors",
    "expiry-killed-worker",
    "expiry-stop-anywhere",
    "expiry-swarm",
];

#[test]
fn the_engine_without_flaws_reproduces_the_correct_workers_trace() {
    let correct: Rc<WorkerFactory> = Rc::new(correct_worker);
    let faithful = engine_factory(Flaws::NONE);
    for name in SCENARIOS {
        let diverged = first_divergence(&scenario(name), &correct, &faithful, 0..3);
        assert_eq!(
            diverged, None,
            "{name}: the flawless engine diverged at this seed"
        );
    }
}

#[test]
fn each_defect_changes_the_trace_somewhere() {
    // Flaws that changed nothing would make the worker the correct one under another name.
    let correct: Rc<WorkerFactory> = Rc::new(correct_worker);
    for defect in DEFECTS {
        let flawed = engine_factory(defect.build);
        let diverged = SCENARIOS
            .iter()
            .find_map(|name| first_divergence(&scenario(name), &correct, &flawed, 0..3));
        assert!(diverged.is_some(), "{} changed no trace", defect.info.name);
    }
}
