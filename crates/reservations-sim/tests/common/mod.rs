//! Shared by the system's integration tests: loading the default scenarios and running a
//! worker in the simulated world with its events kept.

#![allow(dead_code)]

use std::rc::Rc;

use leasesim_reservations::events::Event;
use leasesim_reservations::{Reservations, Scenario, WorkerFactory, load_scenario};
use leasesim_rt::SimConfig;
use leasesim_sim::{Workers, WorldRun, simulate};

/// The default scenario `name` of `scenarios/reservations/`.
pub fn scenario(name: &str) -> Rc<Scenario> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/reservations")
        .join(format!("{name}.toml"));
    Rc::new(load_scenario(&path).unwrap_or_else(|err| panic!("{err}")))
}

/// Every default scenario's name.
pub fn scenario_names() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/reservations");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("the scenarios folder")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .map(|path| {
            path.file_stem()
                .expect("a stem")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

/// The worker called `name`.
pub fn worker(name: &str) -> Rc<WorkerFactory> {
    Reservations::factory(name).unwrap_or_else(|| panic!("no worker {name}"))
}

/// One run of `scenario` at `seed` with the worker `factory` builds, events kept.
pub fn run(
    scenario: &Rc<Scenario>,
    factory: &Rc<WorkerFactory>,
    seed: u64,
) -> WorldRun<Reservations> {
    simulate(scenario, factory, SimConfig::seeded(seed), true, None)
}

/// The kinds of a run's events.
pub fn kinds(run: &WorldRun<Reservations>) -> impl Iterator<Item = &Event> {
    run.events.iter().map(|stamped| &stamped.event)
}
