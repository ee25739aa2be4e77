//! leasesim-sim: the shared simulation layer every system runs on.
//!
//! Terminology:
//! - *system*: one family member of lease-fenced workers, brought by a type implementing
//!   [`System`] (its services, ports, driver, checkers, workers and scenario keys).
//! - *world*: one run's services of a system, the network between them and N replicas, each
//!   running a worker under test. Every latency, fault and pause is drawn from the run's one
//!   choice source; every call, apply, reply, timer, pause and stop is an event.
//! - *fault layer*: what every system shares and this crate owns: the network (latency per
//!   operation, rejection before apply, reply lost after apply, a request that applies even
//!   when its caller stops waiting), the processes (clock offset, drift and jumps, pauses,
//!   stops at an instant, during an operation or between terms, restarts), the phases and
//!   swarm drawing.
//! - *scenario*: a TOML file describing the world of one system and its fault envelope.
//! - *run*: one simulation of a scenario from one seed (or recorded choices).
//!
//! The world reaches time, tasks and randomness only through [`Env`], so the same world and
//! worker also run on tokio (the benchmarks compare the two).
//!
//! Where things live: the network in [`world`] (`send`/`flight`; an answer's way back to its
//! call in `reply`), a replica's process and port in [`process`], the shared faults and their
//! drawing in [`faults`], the phase script with stops, pauses and jumps in [`phases`], scenario
//! files in [`scenario`], the event sink in [`sink`], the contract a system fulfils in
//! [`system`].

pub mod env;
pub mod faults;
pub mod phases;
pub mod process;
mod reply;
pub mod scenario;
mod signal;
pub mod sink;
pub mod system;
pub mod task;
mod values;
pub mod world;

use std::rc::Rc;

pub use env::{EPOCH_MS, Env, EnvSleep, LocalTask, SimEnv};
pub use faults::{ClockSpec, FaultProfile, Scale, StopPlan, Tick};
pub use leasesim_events as events;
pub use phases::run_phases;
pub use process::{Port, ReplicaState};
pub use scenario::{Location, Scenario, ScenarioError, SystemPart};
pub use signal::Signal;
pub use sink::{Divergence, EventSink, Observer, check_determinism, first_difference};
pub use system::{
    Apply, Checks, Counterexample, Defect, Drive, Setup, System, WorkerFactory, WorkerInfo,
    WorkerOf, WorkerUnderTest, Workers, catalogue,
};
pub use task::TaskHandle;
pub use world::{StoreFailure, StoreHook, World};

use leasesim_events::{Event, Stamped};
use leasesim_rt::{Choice, PctStats, RunOutcome, Sim, SimConfig};

/// Everything one run produced.
#[derive(Debug)]
pub struct WorldRun<S: System> {
    pub outcome: RunOutcome<()>,
    /// The events, when the run was asked to keep them.
    pub events: Vec<Stamped<Event<S>>>,
    pub profile: FaultProfile<S>,
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

/// The most steps (polls) one run may take before it ends with its budget used up: some 25 s
/// of one core at the slowest step rate measured (1.2 µs a step, 64 replicas whose terms
/// follow each other every millisecond), under the campaign's 60 s watchdog, so a run of too
/// much work ends as the scenario's budget, not as a hang. The longest run of the default
/// scenarios' rates that the scenario bounds allow (64 replicas, three one-hour phases) takes
/// about 7 million.
pub const MAX_RUN_STEPS: u64 = 20_000_000;

/// Virtual time a run may take before it is cut off: every phase plus a margin.
pub fn time_budget_ms<S: System>(scenario: &Scenario<S>) -> u64 {
    scenario.duration_ms + scenario.liveness_ms + scenario.stop_bound_ms + 60_000
}

/// Builds a run's observer once its profile is drawn (so checkers judge the run against what
/// it drew, not the scenario's envelope).
pub type ObserverFactory<S> = Box<dyn FnOnce(&FaultProfile<S>) -> Observer<Event<S>>>;

/// A world of `scenario` on any [`Env`], ready to run: draws its fault profile, shows it to
/// `observe` before any event (to build the checkers that judge this run), builds the world.
/// Run it with `run_phases(world.clone(), factory)`, then `world.teardown()`. [`simulate`] is
/// this on the deterministic runtime; the benchmarks run it on tokio.
pub fn world_on<S: System>(
    scenario: &Rc<Scenario<S>>,
    env: Rc<dyn Env<S>>,
    observe: impl FnOnce(&FaultProfile<S>),
) -> Rc<World<S>> {
    let profile = FaultProfile::draw(scenario, &*env);
    observe(&profile);
    Rc::new(World::new(scenario.clone(), profile, env))
}

/// Runs `scenario` once with workers from `factory` on the deterministic runtime.
///
/// `observe` builds, from the drawn profile, the observer that sees every event as it happens
/// (the checkers) and may halt the run; `keep_events` stores them for traces.
pub fn simulate<S: System>(
    scenario: &Rc<Scenario<S>>,
    factory: &Rc<WorkerFactory<S>>,
    config: SimConfig,
    keep_events: bool,
    observe: Option<ObserverFactory<S>>,
) -> WorldRun<S> {
    let budget_ms = config.max_time_ms.min(time_budget_ms(scenario));
    let max_steps = config.max_steps.min(MAX_RUN_STEPS);
    let mut sim = Sim::new(config.with_max_time_ms(budget_ms).with_max_steps(max_steps));
    let handle = sim.handle();
    let events = Rc::new(EventSink::new(handle.clone(), keep_events));
    let env: Rc<dyn Env<S>> = Rc::new(SimEnv::new(handle.clone(), events.clone()));
    let world = world_on(scenario, env, |profile| {
        // invariant: drawing the profile emits nothing, so the observer sees every event.
        debug_assert_eq!(events.len(), 0);
        if let Some(observe) = observe {
            events.observe(observe(profile));
        }
    });
    let profile = world.profile().clone();
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

/// Where two workers part: the first seed of `seeds` on which `scenario` with workers from
/// `other` runs differently from workers from `reference` (trace hash, events or steps), or
/// `None` when every run is the same, byte for byte. A defect engine's faithfulness test
/// asks it of the engine without a flaw (`None` expected) and of each flaw (a seed
/// expected). Panics when a reference run does not complete: a reference that times out
/// proves nothing.
pub fn first_divergence<S: System>(
    scenario: &Rc<Scenario<S>>,
    reference: &Rc<WorkerFactory<S>>,
    other: &Rc<WorkerFactory<S>>,
    seeds: std::ops::Range<u64>,
) -> Option<u64> {
    seeds.into_iter().find(|&seed| {
        let expected = simulate(scenario, reference, SimConfig::seeded(seed), false, None);
        assert!(
            expected.outcome.is_completed(),
            "{} seed {seed}: the reference run ended {:?}",
            scenario.name,
            expected.outcome
        );
        let actual = simulate(scenario, other, SimConfig::seeded(seed), false, None);
        (actual.trace_hash, actual.events_emitted, actual.steps)
            != (expected.trace_hash, expected.events_emitted, expected.steps)
    })
}
