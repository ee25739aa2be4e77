//! The naming rules of the registry, which every system added to `SYSTEMS` must keep (see
//! `docs/adding-a-system.md`). The catalogue relies on them without checking: a name picks a
//! scenario or a worker by searching every system, so a second `steady` or a second
//! `stale-release` would silently resolve to the first one found.
//!
//! Terminology:
//! - *builtin*: a file `scenarios/FOLDER/NAME.toml` embedded by `build.rs` (`catalog::BUILTIN`).
//! - *folder*: a directory under `scenarios/`; `--system` and snapshots find a system's
//!   scenarios by the folder named like the system.

use std::collections::BTreeMap;

use leasesim::catalog::{BUILTIN, builtin_names_of, workers};
use leasesim::systems::{SYSTEMS, system};
use leasesim_sim::scenario::system_of;

#[test]
fn every_builtin_scenario_sits_in_the_folder_of_the_system_it_names() {
    for (folder, name, text) in BUILTIN {
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
    for (folder, name, _) in BUILTIN {
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
