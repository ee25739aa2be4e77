//! leasesim-holder-lock: the holder-token claim of seed 004, as a system of the harness.
//!
//! A job runs under a claim in a volatile key-value store: a key created only if absent,
//! with a lifetime after which the store forgets it. Releasing the claim by deleting the key
//! by name can free a claim somebody else took after the first one's deadline passed mid-job,
//! and let a third worker in. The production core (`holder-lock-worker`) writes a fresh,
//! unguessable holder token with every claim and deletes only while the key still holds it,
//! in one step on the store's side. This crate is everything the harness needs of that
//! system:
//!
//! | module | what |
//! |---|---|
//! | [`events`] | the vocabulary: requests, what the store applied, answers, notes (attempts, job steps, lifetimes' ends) |
//! | [`store`], [`services`] | the volatile store with lifetimes on its own clock, its watcher, the token draws |
//! | [`ports`] | the worker's ports on the simulated world, `WorkerUnderTest`, the factories |
//! | [`driver`] | a replica's loop calling `run()` |
//! | [`settings`] | the system's scenario keys, and what a swarm run draws from them |
//! | [`bounds`] | the checks across keys that refuse a scenario no correct worker could pass |
//! | [`checkers`] | one checker per invariant, the "sometimes" situations, the contract audit |
//! | [`defects`] | the defective workers, each the correct engine with one defect |
//! | [`render`] | how its events read in a trace and draw on a timeline |

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

pub use events::HolderLock;
pub use ports::{
    HolderPorts, SimClock, SimJob, SimStore, SimTokens, SimWorker, WorkerFactory, WorkerUnderTest,
    correct_worker, correct_worker_of,
};

use checkers::{AnyChecker, CheckConfig, Invariant, Situation};
use events::{Answer, Applied, Note, Op, Request};

/// A scenario of the holder-lock system.
pub type Scenario = leasesim_sim::Scenario<HolderLock>;
/// One holder-lock run's drawn faults.
pub type Profile = leasesim_sim::FaultProfile<HolderLock>;

/// Parses a holder-lock scenario from `text` (it must say `system = "holder-lock"`).
pub fn parse_scenario(name: &str, source: &str, text: &str) -> Result<Scenario, ScenarioError> {
    leasesim_sim::scenario::parse_scenario(name, source, text)
}

/// Reads a holder-lock scenario file.
pub fn load_scenario(path: &std::path::Path) -> Result<Scenario, ScenarioError> {
    leasesim_sim::scenario::load_scenario(path)
}

impl Judged for HolderLock {
    type Invariant = Invariant;
    type Situation = Situation;
    type Facts = checkers::Facts;
}

/// The checker configuration of one run: what it drew and the scenario's bound.
pub fn check_config(scenario: &Scenario, profile: &Profile) -> CheckConfig {
    CheckConfig {
        renewal: profile.system.claim.renew_every_ms.is_some(),
        attempt_bound_ms: scenario.settings.attempt_bound_ms,
        trusted_ms: profile.system.claim.trusted_ms(),
        drift_ppm: profile.clocks.iter().map(|c| c.drift_ppm).collect(),
    }
}

impl System for HolderLock {
    const NAME: &'static str = "holder-lock";
    const DESCRIPTION: &'static str =
        "seed 004: a job run under a holder-token claim in a volatile key-value store";
    const KEYS: &'static [&'static str] = &["claim", "store", "job", "attempt_bound_ms"];
    const FAULT_KEYS: &'static [&'static str] = &["job_fail", "evict", "failover", "store_restart"];
    const STOP_OPS: &'static [Op] = &[Op::Create, Op::Renew, Op::DeleteIfHolder];

    type Settings = settings::Settings;
    type Drawn = settings::Drawn;
    type Services = services::Services;
    type Worker = dyn WorkerUnderTest;
    type Ports = HolderPorts;
    type Checker = AnyChecker;
    type Coverage = checkers::Coverage;
    type Annotator = render::Handover;
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

    fn services(scenario: &Scenario, profile: &FaultProfile<Self>) -> services::Services {
        let _ = scenario;
        store::ClaimStore::new(profile.system.compare_and_delete)
    }

    fn apply(world: &World<Self>, replica: ReplicaId, request: Request) -> (Applied, Answer) {
        services::apply(world, replica, request)
    }

    fn ports(world: &Rc<World<Self>>, replica: ReplicaId) -> HolderPorts {
        ports::ports_of(world, replica)
    }

    fn drive(world: Rc<World<Self>>, replica: ReplicaId) -> LocalTask {
        Box::pin(driver::drive(world, replica))
    }

    fn stop(worker: Rc<dyn WorkerUnderTest>) -> LocalTask {
        Box::pin(async move { worker.stop().await })
    }

    /// The store's forgetting switched on (each ends once faults heal); and, not faults, the
    /// notes of replicas with slow timers and the store's watcher, which records each
    /// lifetime's end at its instant for the whole run (it never injects anything, so healing
    /// does not end it).
    fn start_faults(world: &Rc<World<Self>>) {
        services::note_slow_timers(world);
        for cause in events::Forgetting::ALL {
            if world.profile().system.forgetting[cause.index()].probability > 0.0 {
                let forgetter = services::forgetter(world.clone(), cause);
                leasesim_sim::phases::spawn(world, cause.key(), forgetter);
            }
        }
        let watcher = services::watch_expiries(world.clone());
        leasesim_sim::phases::spawn(world, "store", watcher);
    }

    fn faults_heal(world: &World<Self>) {
        let _ = world;
    }

    fn liveness_ends(world: &World<Self>, mark: ()) {
        let () = mark;
        let _ = world;
    }

    fn checkers(
        scenario: &Scenario,
        profile: &Profile,
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
        render::answer_is_error(answer)
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
            ("faults.job_fail", "0"),
            ("faults.evict.probability", "0"),
            ("faults.failover.probability", "0"),
            ("faults.store_restart.probability", "0"),
            ("job.long_share", "0"),
        ]
    }

    fn faults_on(settings: &settings::Settings) -> usize {
        let forgetting = settings.forgetting.iter();
        let on = forgetting.filter(|p| p.probability.get() > 0.0).count();
        usize::from(settings.job_fail.get() > 0.0) + on
    }
}
