//! leasesim-work-items: claimed work items (seed 001) as a system of the harness.
//!
//! A nightly cleanup run is expanded into small items. Replicas claim an item with a
//! conditional write that changes its owner and takes the next fencing token; each chunk of
//! the item's local effect, its completion mark, its renewals and its release are fenced by
//! that token; its external effect goes to a provider under an idempotency key derived from
//! the item. A worker that loses its lease may finish what it is doing, but it must not
//! commit. This crate is everything the harness needs of that system:
//!
//! | module | what |
//! |---|---|
//! | [`events`] | the vocabulary: requests (the unsafe primitives too), applies, answers, notes |
//! | [`store`], [`provider`], [`services`] | the item store and the provider, applied at the apply instant |
//! | [`ports`] | the worker's ports on the simulated world, `WorkerUnderTest`, the factories |
//! | [`driver`] | a replica's loop calling `run()`, the tally as the liveness phase ends |
//! | [`settings`] | the system's scenario keys, and what a run draws from them |
//! | [`bounds`] | the check across keys that refuses a scenario no correct worker could pass |
//! | [`checkers`] | one checker per invariant, the "sometimes" situations, the contract audit |
//! | [`defects`] | the defective workers, each the correct engine with one defect |
//! | [`render`] | how its events read in a trace and draw on a timeline |
//!
//! The production worker core is its own crate (`work-items-worker`) and depends only on
//! `futures` and its ports.

pub mod bounds;
pub mod checkers;
pub mod defects;
pub mod driver;
pub mod events;
pub mod ports;
pub mod provider;
pub mod render;
pub mod services;
pub mod settings;
pub mod store;

use std::rc::Rc;

use leasesim_events::{OpSet, ReplicaId};
use leasesim_invariants::Judged;
use leasesim_sim::{
    Env, FaultProfile, LocalTask, Scale, ScenarioError, System, SystemPart, WorkerInfo, World,
};

pub use events::WorkItems;
pub use ports::{
    SimClock, SimProvider, SimStore, SimWorker, UnsafeStore, WorkerFactory, WorkerPorts,
    WorkerUnderTest, correct_worker, correct_worker_of,
};
/// The production worker core this system checks.
pub use work_items_worker;

use checkers::{AnyChecker, CheckConfig, Invariant, Situation};
use events::{Answer, Applied, Event, Note, Op, Request};

/// A scenario of the work-items system.
pub type Scenario = leasesim_sim::Scenario<WorkItems>;
/// One work-items run's drawn faults.
pub type Profile = leasesim_sim::FaultProfile<WorkItems>;

/// Parses a work-items scenario from `text` (it must say `system = "work-items"`).
pub fn parse_scenario(name: &str, source: &str, text: &str) -> Result<Scenario, ScenarioError> {
    leasesim_sim::scenario::parse_scenario(name, source, text)
}

/// Reads a work-items scenario file.
pub fn load_scenario(path: &std::path::Path) -> Result<Scenario, ScenarioError> {
    leasesim_sim::scenario::load_scenario(path)
}

impl Judged for WorkItems {
    type Invariant = Invariant;
    type Situation = Situation;
    type Facts = checkers::Facts;
}

/// The checker configuration of one run: what its workers were built with.
pub fn check_config(profile: &FaultProfile<WorkItems>) -> CheckConfig {
    CheckConfig {
        max_attempts: profile.system.worker.max_attempts,
        max_retries: profile.system.worker.max_retries,
        renew_every_ms: profile.system.worker.renew_every_ms,
        deadline_ms: profile.system.worker.deadline_ms,
        backoff_ms: profile.system.worker.backoff_ms,
        backoff_cap_ms: profile.system.worker.backoff_cap_ms,
    }
}

impl System for WorkItems {
    const NAME: &'static str = "work-items";
    const DESCRIPTION: &'static str = "seed 001: workers claim small cleanup items with a fenced lease and commit \
         only while they own them (apply_if_owner, mark_done_if_owner, idempotent provider)";
    const KEYS: &'static [&'static str] = &["items", "worker", "store", "settle"];
    const FAULT_KEYS: &'static [&'static str] = &["provider_refuses"];
    /// Every call the core makes: a stop can land while any of them is in flight.
    const STOP_OPS: &'static [Op] = <Op as OpSet>::ALL;

    type Settings = settings::Settings;
    type Drawn = settings::Drawn;
    type Services = services::Services;
    type Worker = dyn WorkerUnderTest;
    type Ports = WorkerPorts;
    type Checker = AnyChecker;
    type Coverage = checkers::Coverage;
    type Annotator = render::Handovers;
    type HealMark = ();

    fn settings(part: SystemPart<'_>) -> Result<settings::Settings, ScenarioError> {
        settings::parse(part)
    }

    fn check_scenario(scenario: &Scenario) -> Result<(), (&'static str, String)> {
        bounds::check(scenario)
    }

    fn draw(scenario: &Scenario, env: &dyn Env<Self>, scale: &Scale<'_>) -> settings::Drawn {
        settings::draw(&scenario.settings, env, scale)
    }

    fn describe(drawn: &settings::Drawn) -> Vec<String> {
        settings::describe(drawn)
    }

    fn services(scenario: &Scenario, profile: &FaultProfile<Self>) -> services::Services {
        services::Services::new(scenario, profile)
    }

    fn apply(world: &World<Self>, replica: ReplicaId, request: Request) -> (Applied, Answer) {
        services::apply(world, replica, request)
    }

    fn ports(world: &Rc<World<Self>>, replica: ReplicaId) -> WorkerPorts {
        ports::ports_of(world, replica)
    }

    fn drive(world: Rc<World<Self>>, replica: ReplicaId) -> LocalTask {
        Box::pin(driver::drive(world, replica))
    }

    fn stop(worker: Rc<dyn WorkerUnderTest>) -> LocalTask {
        Box::pin(async move { worker.stop().await })
    }

    fn faults_heal(world: &World<Self>) {
        let _ = world;
    }

    fn liveness_ends(world: &World<Self>, mark: ()) {
        let () = mark;
        driver::tally(world);
    }

    fn checkers(
        scenario: &Scenario,
        profile: &FaultProfile<Self>,
        invariants: &[Invariant],
    ) -> Vec<AnyChecker> {
        let _ = scenario;
        let config = check_config(profile);
        invariants
            .iter()
            .map(|&invariant| AnyChecker::new(invariant, &config))
            .collect()
    }

    fn workers() -> Vec<WorkerInfo> {
        defects::workers()
    }

    fn factory(name: &str) -> Option<Rc<leasesim_sim::WorkerFactory<Self>>> {
        defects::factory(name)
    }

    fn request_text(request: &Request) -> String {
        render::request_text(request)
    }

    fn applied_text(applied: &Applied) -> String {
        render::applied_text(applied)
    }

    fn answer_text(answer: &Answer) -> String {
        render::answer_text(answer)
    }

    fn note_text(note: &Note) -> String {
        render::note_text(note)
    }

    fn note_name(note: &Note) -> &'static str {
        render::note_name(note)
    }

    fn answer_is_error(answer: &Answer) -> bool {
        matches!(answer, Answer::LeaseLost | Answer::Failed(_))
    }

    fn call_style(op: Op) -> leasesim_timeline::CallStyle {
        render::call_style(op)
    }

    fn draws(event: &Event, out: &mut Vec<leasesim_timeline::Draw>) {
        render::draws(event, out);
    }

    fn timeline_words() -> &'static leasesim_timeline::Words {
        &render::TIMELINE_WORDS
    }

    fn shrink_moves() -> &'static [(&'static str, &'static str)] {
        &[
            ("faults.provider_refuses", "0"),
            ("items.count", "1"),
            ("items.count", "2"),
            ("items.count", "4"),
            ("items.chunks", "[1, 1]"),
            ("items.chunks", "[2, 2]"),
        ]
    }

    fn shrink_end_moves() -> &'static [(&'static str, &'static str)] {
        &[("settle", "false")]
    }

    fn faults_on(settings: &settings::Settings) -> usize {
        usize::from(settings.provider_refuses.get() > 0.0)
    }
}
