//! What one system under test brings to the shared harness.
//!
//! Terminology:
//! - *system*: a family member of lease-fenced workers (the retention worker, claimed work
//!   items, reservation expiry, a holder-token claim). A marker type implements [`System`]
//!   through its *components*; everything else of a run (the runtime, the network and process
//!   faults, phases, scenarios, checking plumbing, campaigns, shrinking, traces, timelines, the
//!   CLI) is shared and written once.
//! - *component*: one trait of the system, implemented in the module that owns what it
//!   names: [`Setup`] (settings and draws), [`Checks`] (checkers and coverage), [`Apply`]
//!   (services), [`Drive`] (a replica's loop, the system's own faults, phase ends) and
//!   [`Workers`] (the catalogue and the ports). [`System`] adds only the name.
//! - *settings*: the system's part of a scenario file (its own tables and keys), checked.
//! - *drawn*: what one run draws from the settings (swarm choices), printed in the trace
//!   header next to the shared fault profile.
//! - *services*: the state machines the system's requests are applied to, at the apply
//!   instant, in the services' own time ([`crate::EPOCH_MS`] + virtual time).
//! - *worker*: what the driver of one replica calls (a trait object of the system), built by a
//!   *factory* from the replica's *ports*.
//! - *driver*: the system's loop for one replica (e.g. "call `run()` on a jittered
//!   schedule"); it marks the replica between terms when a stop may land there.

use std::rc::Rc;

use futures::future::LocalBoxFuture;

use leasesim_events::{ReplicaId, Vocabulary};
use leasesim_invariants::{Checker, Coverage, Judged};

use crate::env::{Env, LocalTask};
use crate::faults::{FaultProfile, Scale};
use crate::scenario::{Scenario, ScenarioError, SystemPart};
use crate::world::World;

/// What the driver of one replica calls, for every system: `run()` is one round of the
/// worker (a term, a pass, an attempt) and returns the system's report of it; `stop()`
/// resolves once the worker has quiesced. Implemented for boxed and shared workers too, so a
/// helper can return `Box<dyn WorkerUnderTest<Report = R>>` where it cannot name its
/// worker's type. Each system names its trait object `AnyWorker`.
pub trait WorkerUnderTest {
    /// What one `run()` returns.
    type Report;
    /// One round of the worker.
    fn run(&self) -> LocalBoxFuture<'_, Self::Report>;
    /// Stops the worker; resolves once it has quiesced.
    fn stop(&self) -> LocalBoxFuture<'_, ()>;
}

impl<W: WorkerUnderTest + ?Sized> WorkerUnderTest for Box<W> {
    type Report = W::Report;

    fn run(&self) -> LocalBoxFuture<'_, W::Report> {
        (**self).run()
    }

    fn stop(&self) -> LocalBoxFuture<'_, ()> {
        (**self).stop()
    }
}

impl<W: WorkerUnderTest + ?Sized> WorkerUnderTest for Rc<W> {
    type Report = W::Report;

    fn run(&self) -> LocalBoxFuture<'_, W::Report> {
        (**self).run()
    }

    fn stop(&self) -> LocalBoxFuture<'_, ()> {
        (**self).stop()
    }
}

/// What the driver of one replica of system `S` calls: any worker whose `run()` returns the
/// system's report.
pub type WorkerOf<S> = dyn WorkerUnderTest<Report = <S as Workers>::Report>;

/// A system's worker factory: one fresh worker per replica (at start, and on restart).
pub type WorkerFactory<S> = dyn Fn(<S as Workers>::Ports) -> Rc<WorkerOf<S>>;

/// One worker a system offers by name (`correct`, or a defective one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkerInfo {
    /// `--worker NAME`; unique across systems (except `correct`).
    pub name: &'static str,
    /// What it does, or what is wrong with it, in one line.
    pub description: &'static str,
    /// The invariants expected to catch it, by name (empty for `correct`); the first is its
    /// own.
    pub caught_by: &'static [&'static str],
    /// Where its counterexample snapshot comes from (`None` for `correct`).
    pub counterexample: Option<Counterexample>,
}

/// A defective worker's counterexample under review: the builtin scenario and seed its
/// failing run is shrunk from, and the most events the shrunk trace may have. The snapshot
/// test shrinks it for every defective worker of every registered system
/// (`snapshots/SYSTEM/counterexample__WORKER.snap`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counterexample {
    pub scenario: &'static str,
    pub seed: u64,
    pub max_events: u64,
}

impl Counterexample {
    pub const fn new(scenario: &'static str, seed: u64, max_events: u64) -> Counterexample {
        Counterexample {
            scenario,
            seed,
            max_events,
        }
    }
}

/// One defective worker of a system's catalogue: how it is listed, and what it is built with
/// (`B`: the system's flaws, or a function that builds the worker).
#[derive(Clone, Copy, Debug)]
pub struct Defect<B: 'static> {
    pub info: WorkerInfo,
    pub build: B,
}

/// What a system lists (`Workers::workers`): `correct`, the production core described by
/// `correct`, then its defective workers in their catalogue's order.
pub fn catalogue<B>(correct: &'static str, defects: &[Defect<B>]) -> Vec<WorkerInfo> {
    let production = WorkerInfo {
        name: "correct",
        description: correct,
        caught_by: &[],
        counterexample: None,
    };
    let listed: Vec<WorkerInfo> = std::iter::once(production)
        .chain(defects.iter().map(|defect| defect.info))
        .collect();
    // invariant: every defective worker declares the invariants that must catch it, and the
    // counterexample under review.
    debug_assert!(listed[1..].iter().all(|info| !info.caught_by.is_empty()));
    debug_assert!(listed[1..].iter().all(|info| info.counterexample.is_some()));
    listed
}

/// Everything one system under test brings: its name, and the components below, each
/// implemented by the module of the system that owns it. How its events read (trace lines,
/// timelines) is not the simulation's concern: `leasesim_timeline::Render`.
pub trait System: Setup + Checks + Apply + Drive + Workers {
    /// The name scenario files declare (`system = "retention"`) and `--system` takes.
    const NAME: &'static str;
    /// One line for `leasesim list`.
    const DESCRIPTION: &'static str;
}

/// The system's part of a scenario, and what one run draws from it (`settings.rs`).
pub trait Setup: Vocabulary + Sized {
    /// The system's top-level scenario keys (tables or values), besides the shared ones.
    const KEYS: &'static [&'static str];
    /// Keys the system adds inside `[faults]`.
    const FAULT_KEYS: &'static [&'static str];

    type Settings: Clone + std::fmt::Debug + PartialEq + Send + Sync + 'static;
    type Drawn: Clone + std::fmt::Debug + PartialEq + 'static;

    /// Checks the system's part of a scenario file.
    fn settings(part: SystemPart<'_>) -> Result<Self::Settings, ScenarioError>;

    /// Checks the whole scenario, once every key is read, for what its runs can do across
    /// keys (e.g. a backlog no worker could drain in time, a bound no correct term can keep):
    /// bad input is refused here, never reported later as the worker's failure. An error is
    /// `(dotted key to blame, message)`; the message follows the key (`` `store.rows` ...``).
    fn check_scenario(scenario: &Scenario<Self>) -> Result<(), (&'static str, String)>
    where
        Self: System,
    {
        let _ = scenario;
        Ok(())
    }

    /// Draws the system's part of one run's profile (after the shared draws). `scale` switches
    /// and scales a fault probability as swarm does (a no-op without swarm).
    fn draw(scenario: &Scenario<Self>, env: &dyn Env<Self>, scale: &Scale<'_>) -> Self::Drawn
    where
        Self: System;

    /// Header lines describing the system's drawn part (faults that are off are left out).
    fn describe(drawn: &Self::Drawn) -> Vec<String>;

    /// Scenario keys a shrink may simplify, with their simplest value (TOML): faults it may
    /// switch off, loads it may reduce (`faults.short_delete = 0`, `store.rows = 0`).
    fn shrink_moves() -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// Scenario keys a shrink sets with their value when it ends a run early (the phases too
    /// short for what liveness asks, e.g. `drain = false`), unless liveness is the target.
    fn shrink_end_moves() -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// How many of the system's own faults the scenario has on (shrinking prefers fewer).
    fn faults_on(settings: &Self::Settings) -> usize {
        let _ = settings;
        0
    }
}

/// How a run of the system is judged (`checkers/`).
pub trait Checks: Judged + Sized {
    /// The system's checkers, one variant per invariant (static dispatch).
    type Checker: Checker<Self> + 'static;
    /// The system's "sometimes" situations, observed per run.
    type Coverage: Coverage<Self> + Default + 'static;

    /// The checkers of the given invariants for one run, judging against what it drew.
    fn checkers(
        scenario: &Scenario<Self>,
        profile: &FaultProfile<Self>,
        invariants: &[Self::Invariant],
    ) -> Vec<Self::Checker>
    where
        Self: System;
}

/// The system's services: their state, and a request applied to them (`services.rs`).
pub trait Apply: Vocabulary + Sized {
    type Services: 'static;

    /// The services' initial state.
    fn services(scenario: &Scenario<Self>, profile: &FaultProfile<Self>) -> Self::Services
    where
        Self: System;

    /// Applies `request` of `replica` at the service now, with faults on unless healed.
    fn apply(
        world: &World<Self>,
        replica: ReplicaId,
        request: Self::Request,
    ) -> (Self::Applied, Self::Answer)
    where
        Self: System;
}

/// A replica's loop, and the system's own faults and phase ends (`driver.rs`).
pub trait Drive: Vocabulary + Sized {
    /// The operations a stop at `anywhere` may land in, in draw order.
    const STOP_OPS: &'static [Self::Op];
    /// What the system remembers from the instant faults heal until the liveness phase ends.
    type HealMark: 'static;

    /// The driver of one replica (see the module docs).
    fn drive(world: Rc<World<Self>>, replica: ReplicaId) -> LocalTask
    where
        Self: System;

    /// Starts the system's own periodic faults for the safety phase (none by default).
    fn start_faults(world: &Rc<World<Self>>)
    where
        Self: System,
    {
        let _ = world;
    }

    /// Called as faults heal, before the liveness phase begins.
    fn faults_heal(world: &World<Self>) -> Self::HealMark
    where
        Self: System;

    /// Called as the liveness phase ends, before shutdown (e.g. records what is left to do).
    fn liveness_ends(world: &World<Self>, mark: Self::HealMark)
    where
        Self: System;
}

/// The workers the system offers and what they are built from (`ports.rs`, `defects/`).
pub trait Workers: Vocabulary + Sized {
    /// What one `run()` of the system's worker returns; the driver calls any
    /// [`WorkerOf<Self>`].
    type Report: 'static;
    /// What a worker of one replica is built from.
    type Ports: 'static;

    /// The ports a worker of `replica` is built from.
    fn ports(world: &Rc<World<Self>>, replica: ReplicaId) -> Self::Ports
    where
        Self: System;

    /// Stops a worker; completes once it has quiesced.
    fn stop(worker: Rc<WorkerOf<Self>>) -> LocalTask {
        Box::pin(async move { worker.stop().await })
    }

    /// The workers the system offers: `correct` first.
    fn workers() -> Vec<WorkerInfo>;

    /// The factory of a worker by name.
    fn factory(name: &str) -> Option<Rc<WorkerFactory<Self>>>;
}
