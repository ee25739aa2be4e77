//! leasesim-reservations: reservation expiry (seed 002) as a system of the harness.
//!
//! Support agents place holds with a deadline and consume some of them at any moment; several
//! worker nodes claim the due holds from the store and expire them with a guarded transition
//! (held and due becomes expired, nothing else), retrying by a policy, releasing every claim,
//! and recording what they give up on as dead letters. A node may die after the update and
//! before the release: its claims expire, and other nodes take the holds over.
//!
//! | module | what |
//! |---|---|
//! | [`events`] | the vocabulary: requests (with the primitives), applies, answers, notes |
//! | [`store`], [`services`] | the store (holds, claims, the guarded transition), applied at the apply instant |
//! | [`agents`] | support agents placing and consuming holds (a world task) |
//! | [`ports`] | the worker's ports on the simulated world, the primitives, `WorkerUnderTest` |
//! | [`driver`] | a replica's loop calling `run()`, kills and restarts, the metrics note |
//! | [`settings`] | the system's scenario keys, and what a swarm run draws from them |
//! | [`bounds`] | what a run can do: the bounds no correct worker could keep are refused |
//! | [`checkers`] | one checker per invariant, the "sometimes" situations, the contract audit |
//! | [`defects`] | the defective workers, each the correct engine with one defect |
//! | [`render`] | how its events read in a trace and draw on a timeline |
//!
//! The production worker core is its own crate (`reservations-worker`) and depends only on
//! `futures` and its ports.

pub mod agents;
pub mod bounds;
pub mod checkers;
pub mod defects;
pub mod driver;
pub mod events;
pub mod ports;
pub mod render;
pub mod services;
pub mod settings;
pub mod store;

use std::rc::Rc;

use leasesim_events::ReplicaId;
use leasesim_invariants::Judged;
use leasesim_sim::{
    Env, FaultProfile, LocalTask, Scale, ScenarioError, System, SystemPart, WorkerInfo, World,
};

pub use events::Reservations;
pub use ports::{
    RawStore, SimClock, SimLetters, SimStore, SimTokens, SimWorker, WorkerFactory, WorkerPorts,
    WorkerUnderTest, correct_worker, correct_worker_of,
};

use checkers::{AnyChecker, CheckConfig, Invariant, Situation};
use events::{Answer, Applied, Note, Op, Request};

/// A scenario of the reservation system.
pub type Scenario = leasesim_sim::Scenario<Reservations>;
/// One reservation run's drawn faults.
pub type Profile = leasesim_sim::FaultProfile<Reservations>;

/// Parses a reservation scenario from `text` (it must say `system = "reservations"`).
pub fn parse_scenario(name: &str, source: &str, text: &str) -> Result<Scenario, ScenarioError> {
    leasesim_sim::scenario::parse_scenario(name, source, text)
}

/// Reads a reservation scenario file.
pub fn load_scenario(path: &std::path::Path) -> Result<Scenario, ScenarioError> {
    leasesim_sim::scenario::load_scenario(path)
}

impl Judged for Reservations {
    type Invariant = Invariant;
    type Situation = Situation;
    type Facts = checkers::Facts;
}

/// The checker configuration of one run: the worker settings its profile drew and the
/// scenario's liveness bound.
pub fn check_config(scenario: &Scenario, profile: &Profile) -> CheckConfig {
    let worker = &profile.system.worker;
    CheckConfig {
        batch_size: worker.batch_size,
        claim_for_ms: worker.claim_for_ms,
        idle_ms: worker.idle_ms,
        idle_jitter_ms: worker.idle_jitter_ms,
        retry: worker.retry.clone(),
        due_bound_ms: scenario.settings.due_bound_ms,
    }
}

impl System for Reservations {
    const NAME: &'static str = "reservations";
    const DESCRIPTION: &'static str = "seed 002: workers claim due holds and expire them with a guarded \
         transition, a retry policy and dead letters, while agents consume holds";
    const KEYS: &'static [&'static str] = &["worker", "agents", "due_bound_ms"];
    const FAULT_KEYS: &'static [&'static str] =
        &["store_timeout", "malformed", "kill", "second_run"];
    const STOP_OPS: &'static [Op] = &[Op::Claim, Op::Expire, Op::Release, Op::DeadLetter];

    type Settings = settings::Settings;
    type Drawn = settings::Drawn;
    type Services = services::Services;
    type Worker = dyn WorkerUnderTest;
    type Ports = WorkerPorts;
    type Checker = AnyChecker;
    type Coverage = checkers::Coverage;
    type Annotator = render::Annotations;
    type HealMark = ();

    fn settings(part: SystemPart<'_>) -> Result<settings::Settings, ScenarioError> {
        settings::parse(part)
    }

    fn check_scenario(scenario: &Scenario) -> Result<(), (&'static str, String)> {
        bounds::check(scenario)
    }

    fn draw(scenario: &Scenario, env: &dyn Env<Self>, scale: &Scale<'_>) -> settings::Drawn {
        settings::draw(scenario, env, scale)
    }

    fn describe(drawn: &settings::Drawn) -> Vec<String> {
        settings::describe(drawn)
    }

    fn services(scenario: &Scenario, profile: &Profile) -> services::Services {
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

    /// The agents are the system's world task: they start with the safety phase and place
    /// holds until the liveness phase ends (they are not a fault; healing does not stop them).
    fn start_faults(world: &Rc<World<Self>>) {
        leasesim_sim::phases::spawn(world, "agents", agents::agents(world.clone()));
    }

    fn faults_heal(world: &World<Self>) {
        let _ = world;
    }

    fn liveness_ends(world: &World<Self>, mark: ()) {
        let () = mark;
        driver::note_metrics(world);
    }

    fn checkers(
        scenario: &Scenario,
        profile: &FaultProfile<Self>,
        invariants: &[Invariant],
    ) -> Vec<AnyChecker> {
        let config = check_config(scenario, profile);
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
        matches!(answer, Answer::Failed(_))
    }

    fn call_style(op: Op) -> leasesim_timeline::CallStyle {
        render::call_style(op)
    }

    fn draws(event: &events::Event, out: &mut Vec<leasesim_timeline::Draw>) {
        render::draws(event, out);
    }

    fn timeline_words() -> &'static leasesim_timeline::Words {
        &render::TIMELINE_WORDS
    }

    fn shrink_moves() -> &'static [(&'static str, &'static str)] {
        &[
            ("faults.kill.probability", "0"),
            ("faults.store_timeout", "0"),
            ("faults.malformed", "0"),
            ("faults.second_run", "0"),
            ("agents.consume", "0"),
            ("agents.backlog", "0"),
            ("agents.hold_ms", "[0, 0]"),
            ("worker.batch_size", "1"),
        ]
    }

    fn faults_on(settings: &settings::Settings) -> usize {
        usize::from(settings.kill.probability.get() > 0.0)
            + usize::from(settings.store_timeout.get() > 0.0)
            + usize::from(settings.malformed.get() > 0.0)
            + usize::from(settings.second_run.get() > 0.0)
    }
}
