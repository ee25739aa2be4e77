//! The engine with no flaw is the correct worker: same trace, byte for byte.
//!
//! Terminology:
//! - *faithful worker*: the engine with [`Flaws::NONE`]; it exists only in this test.
//! - *trace hash*: the runtime's hash over every event of a run; equal hashes (with equal
//!   event counts) mean the two workers made the same calls at the same instants in the same
//!   order, and woke the scheduler the same way.

use std::rc::Rc;

use leasesim_sim::scenario::load_scenario;
use leasesim_sim::{Scenario, first_divergence};

use crate::Retention;
use crate::ports::{WorkerFactory, correct_worker};

use crate::defects::declare::defective_worker;
use crate::defects::flaws::Flaws;

defective_worker! {
    /// The engine with every switch in its correct position.
    FaithfulWorker,
    Flaws::NONE
}

fn scenario(name: &str) -> Rc<Scenario<Retention>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/retention")
        .join(format!("{name}.toml"));
    Rc::new(load_scenario(&path).unwrap_or_else(|err| panic!("{err}")))
}

#[test]
fn the_engine_without_flaws_reproduces_the_correct_workers_trace() {
    let correct: Rc<WorkerFactory> = Rc::new(correct_worker);
    let faithful: Rc<WorkerFactory> = Rc::new(FaithfulWorker::from_ports);
    for name in ["stop-anywhere", "renewal-rejection", "reply-lost", "swarm"] {
        let diverged = first_divergence(&scenario(name), &correct, &faithful, 0..2);
        assert_eq!(
            diverged, None,
            "{name}: the flawless engine diverged at this seed"
        );
    }
}
