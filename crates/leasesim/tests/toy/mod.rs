//! A toy second system, written only in tests: a fenced counter.
//!
//! Replicas take turns at a counter. A replica *claims* it (the service grants a claim, with a
//! strictly increasing token and an expiry, when no claim is live), then *bumps* it once with
//! that token; the service applies a bump only under the live claim's token (the *fence*) and
//! answers `fenced` otherwise. Its own fault, `[faults] claim_lost`, drops the live claim as a
//! bump is applied.
//!
//! This module is the smallest complete example of a system (see `docs/adding-a-system.md`):
//! every item of `leasesim_sim::System`, and it runs through exactly the generic paths a
//! registered system does (scenario loader, fault layer, runner, trace, shrink, the facade),
//! without being in `leasesim::systems::SYSTEMS`.
//!
//! | module | what | in a real system |
//! |---|---|---|
//! | [`events`] | the vocabulary: ops, requests, applies, answers, notes | `events.rs` |
//! | [`settings`] | `[claim]`, `[faults] claim_lost`, and what a run draws | `settings.rs` |
//! | [`services`] | the counter, applied at the apply instant | `services.rs` (+ one file per service) |
//! | [`worker`] | the worker core (ports trait, `run`, `stop`) and its defect | the production crate + `defects/` |
//! | [`ports`] | the port on the world, the worker trait, the factories, the driver | `ports.rs`, `driver.rs`, `defects/mod.rs` |
//! | [`checkers`] | invariants, situations, checkers, coverage | `checkers/` |
//! | [`render`] | trace texts, the annotator, timeline strokes | `render.rs` |

pub mod checkers;
pub mod events;
pub mod ports;
pub mod render;
pub mod services;
pub mod settings;
pub mod worker;

use std::rc::Rc;

use leasesim_events::ReplicaId;
use leasesim_invariants::Judged;
use leasesim_sim::{
    Env, FaultProfile, LocalTask, Scale, Scenario, ScenarioError, System, SystemPart, WorkerInfo,
    World,
};

use checkers::{AnyChecker, Invariant, Situation, ToyCoverage};
pub use events::Toy;
use events::{Answer, Applied, Event, Note, Op, Request};
use ports::{ToyPorts, ToyWorker};

impl Judged for Toy {
    type Invariant = Invariant;
    type Situation = Situation;
    type Facts = ();
}

impl System for Toy {
    const NAME: &'static str = "toy";
    const DESCRIPTION: &'static str = "tests only: a counter bumped under a fenced claim";
    const KEYS: &'static [&'static str] = &["claim"];
    const FAULT_KEYS: &'static [&'static str] = &["claim_lost"];
    const STOP_OPS: &'static [Op] = &[Op::Claim, Op::Bump];

    type Settings = settings::Settings;
    type Drawn = settings::Drawn;
    type Services = services::Counter;
    type Worker = dyn ToyWorker;
    type Ports = ToyPorts;
    type Checker = AnyChecker;
    type Coverage = ToyCoverage;
    type Annotator = render::Handover;
    type HealMark = ();

    fn settings(part: SystemPart<'_>) -> Result<settings::Settings, ScenarioError> {
        settings::parse(part)
    }

    fn draw(scenario: &Scenario<Toy>, env: &dyn Env<Toy>, scale: &Scale<'_>) -> settings::Drawn {
        let _ = env;
        settings::draw(&scenario.settings, scale)
    }

    fn describe(drawn: &settings::Drawn) -> Vec<String> {
        settings::describe(drawn)
    }

    fn services(scenario: &Scenario<Toy>, profile: &FaultProfile<Toy>) -> services::Counter {
        let _ = profile;
        services::Counter::new(&scenario.settings.claim)
    }

    fn apply(world: &World<Toy>, replica: ReplicaId, request: Request) -> (Applied, Answer) {
        services::apply(world, replica, request)
    }

    fn ports(world: &Rc<World<Toy>>, replica: ReplicaId) -> ToyPorts {
        ports::ports_of(world, replica)
    }

    fn drive(world: Rc<World<Toy>>, replica: ReplicaId) -> LocalTask {
        Box::pin(ports::drive(world, replica))
    }

    fn stop(worker: Rc<dyn ToyWorker>) -> LocalTask {
        Box::pin(async move { worker.stop().await })
    }

    fn faults_heal(world: &World<Toy>) {
        let _ = world;
    }

    fn liveness_ends(world: &World<Toy>, mark: ()) {
        let () = mark;
        let count = world.services().count();
        world.env().note(Note::Tally { count });
    }

    fn checkers(
        scenario: &Scenario<Toy>,
        profile: &FaultProfile<Toy>,
        invariants: &[Invariant],
    ) -> Vec<AnyChecker> {
        let _ = (scenario, profile);
        invariants
            .iter()
            .map(|&i| AnyChecker::new(i, &()))
            .collect()
    }

    fn workers() -> Vec<WorkerInfo> {
        ports::WORKERS.to_vec()
    }

    fn factory(name: &str) -> Option<Rc<leasesim_sim::WorkerFactory<Toy>>> {
        ports::factory(name)
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
        matches!(answer, Answer::Fenced)
    }

    fn call_style(op: Op) -> leasesim_timeline::CallStyle {
        render::call_style(op)
    }

    fn draws(event: &Event, out: &mut Vec<leasesim_timeline::Draw>) {
        render::draws(event, out);
    }

    fn shrink_moves() -> &'static [(&'static str, &'static str)] {
        &[("faults.claim_lost", "0")]
    }

    fn faults_on(settings: &settings::Settings) -> usize {
        usize::from(settings.claim_lost.get() > 0.0)
    }
}
