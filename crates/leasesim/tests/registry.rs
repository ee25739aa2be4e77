//! The naming rules of the registry, which every system added to `SYSTEMS` must keep (see
//! `docs/adding-a-system.md`). The catalogue relies on them without checking: a name picks a
//! scenario or a worker by searching every system, so a second `steady` or a second
//! `stale-release` would silently resolve to the first one found.
//!
//! Terminology:
//! - *builtin*: a file `scenarios/FOLDER/NAME.toml` embedded by `build.rs` (`Registry::builtin().scenarios()`).
//! - *folder*: a directory under `scenarios/`; `--system` and snapshots find a system's
//!   scenarios by the folder named like the system.

use std::collections::BTreeMap;

use leasesim::Registry;
use leasesim::catalog::{builtin_names_of, workers};
use leasesim::systems::{SYSTEMS, system};
use leasesim_sim::scenario::system_of;

#[test]
fn every_builtin_scenario_sits_in_the_folder_of_the_system_it_names() {
    for embedded in Registry::builtin().scenarios() {
        let (folder, name, text) = (&embedded.system, embedded.name, embedded.text);
        let source = format!("scenarios/{folder}/{name}.toml");
        assert!(
            system(folder).is_some(),
            "scenarios/{folder}/ is named after no system in leasesim::systems::SYSTEMS"
        );
        let (named, at) = system_of(&source, text).unwrap_or_else(|err| panic!("{err}"));
        assert_eq!(
            named, *folder,
            "{at}: a `{named}` scenario in the folder of the `{folder}` system"
        );
    }
    for entry in SYSTEMS {
        let name = entry.name();
        assert!(
            !builtin_names_of(name).is_empty(),
            "the `{name}` system has no scenario in scenarios/{name}/"
        );
    }
}

#[test]
fn scenario_names_are_unique_across_systems() {
    let mut folders: BTreeMap<&str, &str> = BTreeMap::new();
    for embedded in Registry::builtin().scenarios() {
        let (folder, name) = (&embedded.system, embedded.name);
        if let Some(first) = folders.insert(name, folder) {
            panic!("scenario `{name}` is in scenarios/{first}/ and scenarios/{folder}/");
        }
    }
}

#[test]
fn worker_names_are_unique_across_systems_and_correct_comes_first() {
    for entry in SYSTEMS {
        let first = entry.workers().first().map(|worker| worker.name);
        assert_eq!(
            first,
            Some("correct"),
            "the `{}` system's workers",
            entry.name()
        );
    }
    let mut systems: BTreeMap<&str, &str> = BTreeMap::new();
    for (system, worker) in workers() {
        if worker.name == "correct" {
            continue;
        }
        if let Some(first) = systems.insert(worker.name, system) {
            panic!(
                "worker `{}` is offered by `{first}` and `{system}`",
                worker.name
            );
        }
    }
}

#[test]
fn the_builtin_registry_is_valid_and_a_bad_one_is_refused_with_the_name_at_fault() {
    use leasesim::holder_lock::HolderLock;
    use leasesim::retention::Retention;
    assert_eq!(Registry::builtin().validate(), Ok(()));
    let twice = Registry::builtin().with_system::<Retention>(&[]).validate();
    assert_eq!(
        twice.unwrap_err().to_string(),
        "invalid value `retention` for the registry: a second system of this name"
    );
    let steady = include_str!("../../../scenarios/retention/steady.toml");
    let same_name = Registry::empty()
        .with_system::<Retention>(&[("mine", steady), ("mine", steady)])
        .validate();
    assert_eq!(
        same_name.unwrap_err().to_string(),
        "invalid value `mine` for the registry: a second scenario of this name"
    );
    let broken = Registry::empty()
        .with_system::<Retention>(&[("broken", "system = \"retention\"\nreplicas = \"x\"\n")])
        .validate()
        .unwrap_err()
        .to_string();
    assert!(
        broken.starts_with("scenarios/retention/broken.toml:2:"),
        "{broken}"
    );
    let elsewhere = Registry::empty()
        .with_system::<HolderLock>(&[("elsewhere", steady)])
        .validate()
        .unwrap_err()
        .to_string();
    assert!(
        elsewhere.starts_with("scenarios/holder-lock/elsewhere.toml:"),
        "{elsewhere}"
    );
}
