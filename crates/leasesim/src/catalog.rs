//! The names a user types: systems, scenarios and workers.
//!
//! Terminology:
//! - *builtin scenario*: a file of `scenarios/SYSTEM/` at the workspace root, embedded at build
//!   time so the binary works from any directory. Scenario names are unique across systems.
//! - *scenario reference*: what `--scenario` takes: a builtin name, a path to a `.toml` file,
//!   or `all` (every builtin of every system, or of `--system`).
//! - *worker*: `correct` (each system's production core) or a defective worker by name;
//!   defective workers' names are unique across systems, so a name picks its system.
//! - *scenario file*: it names its system (`system = "retention"`); the file is checked by
//!   that system's loader (every key, every `expect` name), with errors at `file:line:col`.

use std::path::Path;
use std::sync::Arc;

use leasesim_sim::WorkerInfo;
use leasesim_sim::scenario::{Location, ScenarioError, read_file, stem, system_of};

use crate::error::UsageError;
use crate::registry::installed;
use crate::systems::{AnyScenario, AnySystem, system};

/// Names of the builtin scenarios, system by system, in name order.
pub fn builtin_names() -> Vec<&'static str> {
    installed().scenarios().iter().map(|s| s.name).collect()
}

/// Names of the builtin scenarios of one system.
pub fn builtin_names_of(system: &str) -> Vec<&'static str> {
    installed()
        .scenarios()
        .iter()
        .filter(|s| s.system == system)
        .map(|s| s.name)
        .collect()
}

/// Parses a builtin scenario by name.
pub fn builtin(name: &str) -> Option<Result<Arc<dyn AnyScenario>, UsageError>> {
    let found = installed().scenarios().iter().find(|s| s.name == name)?;
    Some(parse(found.name, &found.source(), found.text))
}

/// Parses a scenario file of whichever system it names.
pub fn parse(name: &str, source: &str, text: &str) -> Result<Arc<dyn AnyScenario>, UsageError> {
    let (system_name, location) = system_of(source, text).map_err(UsageError::Scenario)?;
    let Some(system) = system(&system_name) else {
        return Err(unknown_system(&system_name, location));
    };
    system
        .parse(name, source, text)
        .map_err(UsageError::Scenario)
}

fn unknown_system(name: &str, location: Location) -> UsageError {
    let valid: Vec<&str> = installed().systems().iter().map(|s| s.name()).collect();
    UsageError::Scenario(ScenarioError {
        location,
        message: format!("unknown system `{name}`; valid: {}", valid.join(", ")),
    })
}

/// Reads and checks a scenario file; its name is the file stem.
pub fn load(path: &Path) -> Result<Arc<dyn AnyScenario>, UsageError> {
    let (source, text) = read_file(path).map_err(UsageError::Scenario)?;
    parse(&stem(path), &source, &text)
}

/// Resolves `--scenario`: a builtin name, a path to a scenario file, or `all` (every builtin,
/// or every builtin of `only_system`).
pub fn resolve_in(
    reference: &str,
    only_system: Option<&str>,
) -> Result<Vec<Arc<dyn AnyScenario>>, UsageError> {
    if reference == "all" {
        let names = match only_system {
            Some(system) => builtin_names_of(system),
            None => builtin_names(),
        };
        return names
            .into_iter()
            .map(|name| builtin(name).expect("a builtin name"))
            .collect();
    }
    let found = resolve_one(reference).map_err(|err| match err {
        UsageError::UnknownName {
            what,
            given,
            mut valid,
        } => {
            valid.push("all".to_string());
            UsageError::UnknownName { what, given, valid }
        }
        other => other,
    })?;
    if let Some(system) = only_system
        && found.system().name() != system
    {
        return Err(UsageError::BadValue {
            flag: "--scenario",
            given: reference.to_string(),
            why: format!(
                "it is a `{}` scenario, and --system asks for `{system}`",
                found.system().name()
            ),
        });
    }
    Ok(vec![found])
}

/// Resolves one scenario reference: a builtin name or a path.
pub fn resolve_one(reference: &str) -> Result<Arc<dyn AnyScenario>, UsageError> {
    if let Some(found) = builtin(reference) {
        return found;
    }
    let looks_like_path = reference.ends_with(".toml") || reference.contains('/');
    if looks_like_path || Path::new(reference).is_file() {
        return load(Path::new(reference));
    }
    Err(UsageError::UnknownName {
        what: "scenario",
        given: reference.to_string(),
        valid: builtin_names().into_iter().map(String::from).collect(),
    })
}

/// Resolves one scenario reference of system `S`, typed (for tests and the library API).
pub fn resolve_typed<S: leasesim_sim::System + leasesim_timeline::Render>(
    reference: &str,
) -> Result<leasesim_sim::Scenario<S>, UsageError> {
    let found = resolve_one(reference)?;
    crate::systems::typed::<S>(found.as_ref()).ok_or_else(|| UsageError::BadValue {
        flag: "--scenario",
        given: reference.to_string(),
        why: format!(
            "it is a `{}` scenario, not a `{}` one",
            found.system().name(),
            S::NAME
        ),
    })
}

/// Resolves `--scenario` across every system (`all`: every builtin).
pub fn resolve_scenarios(reference: &str) -> Result<Vec<Arc<dyn AnyScenario>>, UsageError> {
    resolve_in(reference, None)
}

/// Checks `--system`.
pub fn check_system(name: &str) -> Result<&'static dyn AnySystem, UsageError> {
    system(name).ok_or_else(|| UsageError::UnknownName {
        what: "system",
        given: name.to_string(),
        valid: installed()
            .systems()
            .iter()
            .map(|s| s.name().to_string())
            .collect(),
    })
}

/// Every worker of every system: `(system, worker)`, each system's `correct` first.
pub fn workers() -> Vec<(&'static str, WorkerInfo)> {
    installed()
        .systems()
        .iter()
        .flat_map(|system| {
            let name = system.name();
            system
                .workers()
                .into_iter()
                .map(move |worker| (name, worker))
        })
        .collect()
}

/// The systems a worker name belongs to (every one for `correct`).
pub fn systems_of_worker(name: &str) -> Vec<&'static str> {
    let mut systems: Vec<&'static str> = workers()
        .into_iter()
        .filter(|(_, worker)| worker.name == name)
        .map(|(system, _)| system)
        .collect();
    systems.dedup();
    systems
}

/// Checks a worker name without building anything; returns it.
pub fn check_worker(name: &str) -> Result<String, UsageError> {
    if systems_of_worker(name).is_empty() {
        // Every system offers `correct`: listed once, first, then the defective workers.
        let mut valid: Vec<String> = vec!["correct".to_string()];
        valid.extend(
            workers()
                .into_iter()
                .filter(|(_, worker)| worker.name != "correct")
                .map(|(_, worker)| worker.name.to_string()),
        );
        return Err(UsageError::UnknownName {
            what: "worker",
            given: name.to_string(),
            valid,
        });
    }
    Ok(name.to_string())
}

/// How replay lines name a scenario: its builtin name when it is a builtin (same content),
/// otherwise the path it was read from.
pub fn scenario_ref(scenario: &dyn AnyScenario) -> String {
    let same_as_builtin = match builtin(scenario.name()) {
        Some(Ok(builtin)) => builtin.same_as(scenario),
        _ => false,
    };
    if same_as_builtin {
        scenario.name().to_string()
    } else {
        scenario.source().to_string()
    }
}

/// The copy-paste command that replays one seed: exactly
/// `text` as one shell word: as it is when it holds only letters, digits and `_-./:=,+@`
/// (every builtin name and most paths), else single-quoted.
pub fn shell_word(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:=,+@".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// `leasesim replay --scenario NAME --seed S --worker NAME`, plus `--strategy S` when the
/// strategy is not the default (random).
pub fn replay_line(
    scenario: &str,
    seed: u64,
    worker: &str,
    strategy: leasesim_rt::Strategy,
) -> String {
    let command = installed().command_name();
    let scenario = shell_word(scenario);
    let mut line =
        format!("{command} replay --scenario {scenario} --seed {seed} --worker {worker}");
    if strategy != leasesim_rt::Strategy::Random {
        line.push_str(&format!(" --strategy {strategy}"));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names a message lists after `valid: `.
    fn listed(message: &str) -> Vec<&str> {
        let (_, names) = message
            .split_once("valid: ")
            .expect("a list of valid names");
        names.trim().split(", ").collect()
    }

    #[test]
    fn a_scenario_path_a_shell_would_split_is_quoted_in_a_replay_line() {
        assert_eq!(
            shell_word("scenarios/retention/steady.toml"),
            "scenarios/retention/steady.toml"
        );
        assert_eq!(shell_word("my runs/it's.toml"), "'my runs/it'\\''s.toml'");
        let line = replay_line(
            "my runs/a.toml",
            3,
            "correct",
            leasesim_rt::Strategy::Random,
        );
        assert!(
            line.contains("--scenario 'my runs/a.toml' --seed 3"),
            "{line}"
        );
    }

    #[test]
    fn one_scenario_lists_the_builtins_and_never_all() {
        // `all` is valid where many scenarios are (`--scenario all`), not where one is.
        let misspelled = resolve_one("stedy").unwrap_err().to_string();
        assert!(
            misspelled.starts_with("unknown scenario `stedy`"),
            "{misspelled}"
        );
        assert!(listed(&misspelled).contains(&"steady"), "{misspelled}");
        assert!(!listed(&misspelled).contains(&"all"), "{misspelled}");
        let all = resolve_one("all").unwrap_err().to_string();
        assert!(all.starts_with("unknown scenario `all`"), "{all}");
        // The library API returns the same message (it takes one scenario).
        let error = crate::retention::check("stedy", leasesim_retention::correct_worker_of)
            .try_seeds(1)
            .expect_err("a check of an unknown scenario runs nothing");
        let message = match error {
            crate::CheckError::Input(err) => err.to_string(),
            other => panic!("a seed ran: {other}"),
        };
        assert!(message.starts_with("unknown scenario `stedy`"), "{message}");
        assert!(!listed(&message).contains(&"all"), "{message}");
        // Where many scenarios are taken, `all` is listed.
        let many = resolve_in("stedy", None).unwrap_err().to_string();
        assert!(listed(&many).contains(&"all"), "{many}");
    }

    #[test]
    fn all_keeps_one_system_and_a_scenario_of_another_is_refused() {
        let all = resolve_in("all", None).unwrap();
        assert_eq!(all.len(), installed().scenarios().len());
        let retention = resolve_in("all", Some("retention")).unwrap();
        assert!(retention.iter().all(|s| s.system().name() == "retention"));
        let refused = resolve_in("steady", Some("work-items")).unwrap_err();
        assert!(
            refused.to_string().contains("`retention` scenario"),
            "{refused}"
        );
    }
}
