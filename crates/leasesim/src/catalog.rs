//! The names a user types: scenarios and workers.
//!
//! Terminology:
//! - *builtin scenario*: a file of `scenarios/` at the workspace root, embedded at build time
//!   so the binary works from any directory.
//! - *scenario reference*: what `--scenario` takes: a builtin name, a path to a `.toml` file,
//!   or `all` (every builtin).
//! - *worker*: `correct` (the production core) or a defective worker by name.
//! - *resolved scenario*: a parsed scenario whose names the harness has checked too: every
//!   name in `expect = [...]` is an invariant (the world crate, which parses the file, does
//!   not know the invariants). Every way in (`--scenario`, the library's `check`) resolves.

use std::path::Path;
use std::rc::Rc;

use leasesim_check::Invariant;
use leasesim_world::{Scenario, ScenarioError, WorkerFactory, correct_worker};

use crate::error::UsageError;

include!(concat!(env!("OUT_DIR"), "/builtin.rs"));

/// Names of the builtin scenarios, in name order.
pub fn builtin_names() -> Vec<&'static str> {
    BUILTIN.iter().map(|(name, _)| *name).collect()
}

/// Parses a builtin scenario by name.
pub fn builtin(name: &str) -> Option<Result<Scenario, UsageError>> {
    let (name, text) = BUILTIN.iter().find(|(builtin, _)| *builtin == name)?;
    let source = format!("scenarios/{name}.toml");
    Some(
        Scenario::parse(name, &source, text)
            .and_then(checked)
            .map_err(UsageError::Scenario),
    )
}

/// Reads and checks a scenario file (see *resolved scenario*).
pub fn load(path: &Path) -> Result<Scenario, UsageError> {
    Scenario::load(path)
        .and_then(checked)
        .map_err(UsageError::Scenario)
}

/// The scenario, if every name in its `expect` list is an invariant; otherwise the first
/// unknown name, at the place it is written, with the valid names.
pub fn checked(scenario: Scenario) -> Result<Scenario, ScenarioError> {
    let unknown = scenario
        .expect
        .iter()
        .find(|(name, _)| Invariant::from_name(name).is_none());
    if let Some((name, location)) = unknown {
        let valid: Vec<&str> = Invariant::ALL.iter().map(|i| i.name()).collect();
        return Err(ScenarioError {
            location: location.clone(),
            message: format!(
                "expect: unknown invariant `{name}`; valid: {}",
                valid.join(", ")
            ),
        });
    }
    // invariant: a resolved scenario expects only invariants the checkers know.
    debug_assert!(
        scenario
            .expect
            .iter()
            .all(|(name, _)| Invariant::from_name(name).is_some())
    );
    Ok(scenario)
}

/// Resolves `--scenario`: a builtin name, a path to a scenario file, or `all`.
pub fn resolve_scenarios(reference: &str) -> Result<Vec<Scenario>, UsageError> {
    if reference == "all" {
        return builtin_names()
            .into_iter()
            .map(|name| builtin(name).expect("a builtin name"))
            .collect();
    }
    if let Some(found) = builtin(reference) {
        return Ok(vec![found?]);
    }
    let looks_like_path = reference.ends_with(".toml") || reference.contains('/');
    if looks_like_path || Path::new(reference).is_file() {
        return Ok(vec![load(Path::new(reference))?]);
    }
    Err(UsageError::UnknownName {
        what: "scenario",
        given: reference.to_string(),
        valid: builtin_names()
            .into_iter()
            .map(String::from)
            .chain(["all".into()])
            .collect(),
    })
}

/// One worker the harness can drive.
#[derive(Clone, Copy, Debug)]
pub struct WorkerInfo {
    pub name: &'static str,
    pub description: &'static str,
    /// Invariants expected to catch it (empty for `correct`).
    pub caught_by: &'static [&'static str],
}

const CORRECT: WorkerInfo = WorkerInfo {
    name: "correct",
    description: "the production worker core (lease-worker)",
    caught_by: &[],
};

/// Every worker: `correct` first, then the defective ones.
pub fn workers() -> Vec<WorkerInfo> {
    let defects = leasesim_defects::DEFECTS.iter().map(|d| WorkerInfo {
        name: d.name,
        description: d.description,
        caught_by: d.caught_by,
    });
    std::iter::once(CORRECT).chain(defects).collect()
}

/// The factory of a worker by name.
pub fn worker_factory(name: &str) -> Result<Rc<WorkerFactory>, UsageError> {
    if name == CORRECT.name {
        return Ok(Rc::new(correct_worker));
    }
    leasesim_defects::factory(name).ok_or_else(|| UsageError::UnknownName {
        what: "worker",
        given: name.to_string(),
        valid: workers().iter().map(|w| w.name.to_string()).collect(),
    })
}

/// Checks a worker name without building anything.
pub fn check_worker(name: &str) -> Result<&'static str, UsageError> {
    workers()
        .into_iter()
        .find(|w| w.name == name)
        .map(|w| w.name)
        .ok_or_else(|| UsageError::UnknownName {
            what: "worker",
            given: name.to_string(),
            valid: workers().iter().map(|w| w.name.to_string()).collect(),
        })
}

/// How replay lines name a scenario: its builtin name when it is a builtin (same content),
/// otherwise the path it was read from.
pub fn scenario_ref(scenario: &Scenario) -> String {
    let same_as_builtin = match builtin(&scenario.name) {
        Some(Ok(builtin)) => {
            Scenario {
                source: scenario.source.clone(),
                ..builtin
            } == *scenario
        }
        _ => false,
    };
    if same_as_builtin {
        scenario.name.clone()
    } else {
        scenario.source.clone()
    }
}

/// The copy-paste command that replays one seed: exactly
/// `leasesim replay --scenario NAME --seed S --worker NAME`, plus `--strategy S` when the
/// strategy is not the default (random).
pub fn replay_line(
    scenario: &str,
    seed: u64,
    worker: &str,
    strategy: leasesim_rt::Strategy,
) -> String {
    let mut line = format!("leasesim replay --scenario {scenario} --seed {seed} --worker {worker}");
    if strategy != leasesim_rt::Strategy::Random {
        line.push_str(&format!(" --strategy {strategy}"));
    }
    line
}
