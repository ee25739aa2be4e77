//! The engine with no flaw is the correct worker: same trace, byte for byte.
//!
//! Terminology:
//! - *faithful worker*: the engine with [`Flaws::NONE`]; it exists only in this test.
//! - *trace hash*: the runtime's hash over every event of a run; equal hashes (with equal
//!   event and step counts) mean the two workers made the same calls at the same instants
//!   in the same order.

use std::rc::Rc;

use leasesim_rt::SimConfig;
use leasesim_sim::scenario::load_scenario;
use leasesim_sim::{Scenario, simulate};

use crate::HolderLock;
use crate::defects::engine_of;
use crate::defects::flaws::Flaws;
use crate::ports::{HolderPorts, WorkerFactory, WorkerUnderTest, correct_worker};

fn scenario(name: &str) -> Rc<Scenario<HolderLock>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/holder-lock")
        .join(format!("{name}.toml"));
    Rc::new(load_scenario(&path).unwrap_or_else(|err| panic!("{err}")))
}

#[test]
fn the_engine_without_flaws_reproduces_the_correct_workers_trace() {
    let correct: Rc<WorkerFactory> = Rc::new(correct_worker);
    let faithful: Rc<WorkerFactory> = Rc::new(|ports: HolderPorts| {
        Rc::new(engine_of(ports, Flaws::NONE)) as Rc<dyn WorkerUnderTest>
    });
    for name in [
        "holder-stop-anywhere",
        "holder-pauses",
        "holder-no-cas",
        "holder-swarm",
    ] {
        let scenario = scenario(name);
        for seed in 0..3 {
            let expected = simulate(&scenario, &correct, SimConfig::seeded(seed), false, None);
            let actual = simulate(&scenario, &faithful, SimConfig::seeded(seed), false, None);
            assert!(
                expected.outcome.is_completed(),
                "{name}/{seed}: {:?}",
                expected.outcome
            );
            assert_eq!(
                (actual.trace_hash, actual.events_emitted, actual.steps),
                (expected.trace_hash, expected.events_emitted, expected.steps),
                "{name} seed {seed}: the flawless engine diverged from the correct worker"
            );
        }
    }
}
