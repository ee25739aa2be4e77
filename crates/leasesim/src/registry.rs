//! The systems and scenarios a process knows: the four built in, and a team's own.
//!
//! Terminology:
//! - *registry*: the systems (one [`AnySystem`] entry each), the scenarios embedded for them,
//!   and the command that replays a run of them, in the order `list` shows them.
//!   [`Registry::builtin`] is the harness's own; a team's binary adds its system with
//!   [`Registry::with_system`] and hands the registry to `leasesim_cli::main_with`.
//! - *installed registry*: the one this process's names resolve against ([`installed`]). It is
//!   installed once, before any name is resolved ([`Registry::install`]); a process that
//!   installs none (a test calling `check`) gets the builtin one.
//! - *embedded scenario*: a scenario file's text compiled into the binary, named without a
//!   path (`"steady"`); its source reads `scenarios/SYSTEM/NAME.toml`.

use std::sync::OnceLock;

use leasesim_sim::System;
use leasesim_timeline::Render;

use crate::error::UsageError;
use crate::systems::{AnySystem, SYSTEMS, system_entry};

include!(concat!(env!("OUT_DIR"), "/builtin.rs"));

/// One scenario file compiled into the binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmbeddedScenario {
    /// The system it belongs to (its folder under `scenarios/`).
    pub system: &'static str,
    /// Its name: what `--scenario` takes.
    pub name: &'static str,
    /// The file's text.
    pub text: &'static str,
}

impl EmbeddedScenario {
    /// Where its errors point: `scenarios/SYSTEM/NAME.toml`.
    pub fn source(&self) -> String {
        format!("scenarios/{}/{}.toml", self.system, self.name)
    }
}

/// The systems, scenarios and command name a process knows (see the module docs).
pub struct Registry {
    systems: Vec<&'static dyn AnySystem>,
    scenarios: Vec<EmbeddedScenario>,
    command: &'static str,
    /// The systems that run on real stores through the shared world (feature `real`).
    #[cfg(feature = "real")]
    real_stores: Vec<crate::real_world::RealStore>,
}

static INSTALLED: OnceLock<Registry> = OnceLock::new();

/// The registry this process resolves names against: the installed one, or the builtin one.
pub fn installed() -> &'static Registry {
    INSTALLED.get_or_init(Registry::builtin)
}

impl Registry {
    /// The harness's four systems, their scenarios, and the `leasesim` command.
    pub fn builtin() -> Registry {
        let scenarios = BUILTIN
            .iter()
            .map(|&(system, name, text)| EmbeddedScenario { system, name, text })
            .collect();
        Registry {
            systems: SYSTEMS.to_vec(),
            scenarios,
            command: "leasesim",
            #[cfg(feature = "real")]
            real_stores: crate::real_world::builtin(),
        }
    }

    /// No system at all (a binary for a team's own systems only).
    pub fn empty() -> Registry {
        Registry {
            systems: Vec::new(),
            scenarios: Vec::new(),
            command: "leasesim",
            #[cfg(feature = "real")]
            real_stores: Vec::new(),
        }
    }

    /// Adds system `S`, shown after the systems already in, with its scenarios as `(name,
    /// text)` pairs (`include_str!` of its files, typically).
    pub fn with_system<S: System + Render>(
        mut self,
        scenarios: &[(&'static str, &'static str)],
    ) -> Registry {
        self.systems.push(system_entry::<S>());
        self.scenarios
            .extend(scenarios.iter().map(|&(name, text)| EmbeddedScenario {
                system: S::NAME,
                name,
                text,
            }));
        self
    }

    /// Adds a system's real store entry (`leasesim real --system NAME`; feature `real`): built
    /// by [`crate::real_world::real_store`] from the system's store hook.
    #[cfg(feature = "real")]
    pub fn with_real_store(mut self, store: crate::real_world::RealStore) -> Registry {
        self.real_stores
            .retain(|known| known.system != store.system);
        self.real_stores.push(store);
        self
    }

    /// The real store entry of the system called `name` (feature `real`).
    #[cfg(feature = "real")]
    pub fn real_store(&self, name: &str) -> Option<&crate::real_world::RealStore> {
        self.real_stores.iter().find(|store| store.system == name)
    }

    /// The command replay lines name (default `leasesim`): a team's binary names itself.
    pub fn command(mut self, command: &'static str) -> Registry {
        self.command = command;
        self
    }

    pub fn systems(&self) -> &[&'static dyn AnySystem] {
        &self.systems
    }

    pub fn scenarios(&self) -> &[EmbeddedScenario] {
        &self.scenarios
    }

    pub fn command_name(&self) -> &'static str {
        self.command
    }

    /// The system called `name`.
    pub fn system(&self, name: &str) -> Option<&'static dyn AnySystem> {
        self.systems
            .iter()
            .copied()
            .find(|system| system.name() == name)
    }

    /// Checks what the registry says: system, scenario and defective worker names unique
    /// (a name picks its system), every scenario of a system it has, and every scenario valid
    /// for its system.
    pub fn validate(&self) -> Result<(), UsageError> {
        for (at, system) in self.systems.iter().enumerate() {
            if self.systems[..at].iter().any(|s| s.name() == system.name()) {
                return Err(self.bad(system.name(), "a second system of this name"));
            }
        }
        let mut defective: Vec<&str> = Vec::new();
        for system in &self.systems {
            for worker in system.workers().into_iter().filter(|w| w.name != "correct") {
                if defective.contains(&worker.name) {
                    return Err(self.bad(worker.name, "a second worker of this name"));
                }
                defective.push(worker.name);
            }
        }
        for (at, scenario) in self.scenarios.iter().enumerate() {
            if self.scenarios[..at].iter().any(|s| s.name == scenario.name) {
                return Err(self.bad(scenario.name, "a second scenario of this name"));
            }
            let Some(system) = self.system(scenario.system) else {
                return Err(self.bad(scenario.name, "a scenario of a system not in the registry"));
            };
            system
                .parse(scenario.name, &scenario.source(), scenario.text)
                .map_err(UsageError::Scenario)?;
        }
        Ok(())
    }

    fn bad(&self, given: &str, why: &str) -> UsageError {
        UsageError::BadValue {
            flag: "the registry",
            given: given.to_string(),
            why: why.to_string(),
        }
    }

    /// Makes this the process's registry, after [`Registry::validate`]. Once per process,
    /// before any name is resolved: a second install, or one after the builtin registry was
    /// already in use, is refused.
    pub fn install(self) -> Result<(), UsageError> {
        self.validate()?;
        INSTALLED.set(self).map_err(|_| UsageError::BadValue {
            flag: "the registry",
            given: "install".into(),
            why: "a registry is already installed in this process".into(),
        })
    }
}
