//! leasesim-world: the simulated world a lease-fenced worker runs in.
//!
//! Terminology:
//! - *world*: one lease authority, one record store, a network between them and N replicas,
//!   each running a worker under test. Every latency, fault and pause is drawn from the run's
//!   one choice source; every call, apply, reply, timer, pause and stop is an event.
//! - *scenario*: a TOML file describing the world and its fault envelope.
//! - *run*: one simulation of a scenario from one seed (or recorded choices).
//!
//! The world reaches time, tasks and randomness only through [`Env`], so the same world and
//! worker also run on tokio (the benchmarks compare the two).

mod adapter;
pub mod authority;
mod driver;
mod env;
mod profile;
mod replica;
pub mod scenario;
mod signal;
pub mod store;
mod world;

use std::rc::Rc;

pub use adapter::{SimWorker, WorkerFactory, WorkerPorts, WorkerUnderTest, correct_worker};
pub use driver::run_phases;
pub use env::{EPOCH_MS, Env, EnvSleep, LocalTask, SimEnv};
pub use leasesim_events as events;
pub use profile::{ClockSpec, FaultProfile, StopPlan, Tick, WorkerDraw};
pub use replica::{SimClock, SimLeases, SimRecords};
pub use scenario::{Location, Scenario, ScenarioError};
pub use world::World;

use leasesim_events::Event;
use leasesim_rt::{Choice, EventLog, Observer, PctStats, RunOutcome, Sim, SimConfig, Stamped};

/// Everything one run produced.
#[derive(Debug)]
pub struct WorldRun {
    pub outcome: RunOutcome<()>,
    /// The events, when the run was asked to keep them.
    pub events: Vec<Stamped<Event>>,
    pub profile: FaultProfile,
    /// The choices, when the run recorded them.
    pub choices: Vec<Choice>,
    pub steps: u64,
    pub draws: u64,
    pub events_emitted: u64,
    pub end_ms: u64,
    pub trace_hash: u64,
    /// PCT change points drawn and reached.
    pub pct: PctStats,
}

/// Virtual time a run may take before it is cut off: every phase plus a margin.
pub fn time_budget_ms(scenario: &Scenario) -> u64 {
    scenario.duration_ms + scenario.liveness_ms + scenario.stop_bound_ms + 60_000
}

/// Builds a run's observer once its profile is drawn (so checkers judge the run against the
/// worker settings it drew, not the scenario's).
pub type ObserverFactory = Box<dyn FnOnce(&FaultProfile) -> Observer<Event>>;

/// Runs `scenario` once with workers from `factory`.
///
/// `observe` builds, from the drawn profile, the observer that sees every event as it happens
/// (the checkers) and may halt the run; `keep_events` stores them for traces.
pub fn simulate(
    scenario: &Rc<Scenario>,
    factory: &Rc<WorkerFactory>,
    config: SimConfig,
    keep_events: bool,
    observe: Option<ObserverFactory>,
) -> WorldRun {
    let budget_ms = config.max_time_ms.min(time_budget_ms(scenario));
    let mut sim = Sim::new(config.with_max_time_ms(budget_ms));
    let handle = sim.handle();
    let events = Rc::new(EventLog::new(handle.clone(), keep_events));
    let env: Rc<dyn Env> = Rc::new(SimEnv::new(handle.clone(), events.clone()));
    let profile = FaultProfile::draw(scenario, &*env);
    // invariant: drawing the profile emits nothing, so the observer sees every event.
    debug_assert_eq!(events.len(), 0);
    if let Some(observe) = observe {
        events.observe(observe(&profile));
    }
    let world = Rc::new(World::new(scenario.clone(), profile.clone(), env));
    let outcome = sim.block_on(run_phases(world.clone(), factory.clone()));
    world.teardown();
    // The observer usually owns checker state its caller reads next; let go of it now.
    drop(events.take_observer());
    let run = WorldRun {
        outcome,
        events: events.take(),
        profile,
        choices: sim.take_recorded_choices(),
        steps: handle.steps(),
        draws: handle.draws(),
        events_emitted: events.len(),
        end_ms: handle.now_ms(),
        trace_hash: handle.trace_hash(),
        pct: handle.pct_stats(),
    };
    drop(sim);
    run
}
