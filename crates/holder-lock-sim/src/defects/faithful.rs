//! The engine with no flaw is the correct worker: same trace, byte for byte.
//!
//! Terminology:
//! - *faithful worker*: the engine with [`Flaws::NONE`]; it exists only in this test.
//! - *trace hash*: the runtime's hash over every event of a run; equal hashes (with equal
//!   event and step counts) mean the two workers made the same calls at the same instants
//!   in the same order.

use std::rc::Rc;

use leasesim_sim::scenario::load_scenario;
use leasesim_sim::{Scenario, first_divergence};

use crate::HolderLock;
use crate::defects::engine_of;
use crate::defects::flaws::Flaws;
use crate::ports::{AnyWorker, WorkerFactory, WorkerPorts, correct_worker};

fn scenario(name: &str) -> Rc<Scenario<HolderLock>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/holder-lock")
        .join(format!("{name}.toml"));
    Rc::new(load_scenario(&path).unwrap_or_else(|err| panic!("{err}")))
}

#[test]
fn the_engine_without_flaws_reproduces_the_correct_workers_trace() {
    let correct: Rc<WorkerFactory> = Rc::new(correct_worker);
    let faithful: Rc<WorkerFactory> =
        Rc::new(|ports: WorkerPorts| Rc::new(engine_of(ports, Flaws::NONE)) as Rc<AnyWorker>);
    let names = [
        "holder-stop-anywhere",
        "holder-pauses",
        "holder-no-cas",
        "holder-swarm",
    ];
    for name in names {
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
    let names = [
        "holder-steady",
        "holder-slow-release",
        "holder-pauses",
        "holder-swarm",
    ];
    for defect in crate::defects::DEFECTS {
        let flaws_of = defect.build;
        let flawed: Rc<WorkerFactory> = Rc::new(move |ports: WorkerPorts| {
            let flaws = flaws_of(ports.replica);
            Rc::new(engine_of(ports, flaws)) as Rc<AnyWorker>
        });
        let diverged = names
            .iter()
            .find_map(|name| first_divergence(&scenario(name), &correct, &flawed, 0..3));
        assert!(diverged.is_some(), "{} changed no trace", defect.info.name);
    }
}
