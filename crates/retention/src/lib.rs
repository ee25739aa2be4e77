//! leasesim-retention: the retention worker of seed 000, as a system of the harness.
//!
//! Several replicas run a retention worker; only the current lease holder may delete old rows;
//! the lease service rotates a fencing token on every renewal and the record store rejects
//! stale tokens. This crate is everything the harness needs of that system, and nothing of the
//! shared layers:
//!
//! | module | what |
//! |---|---|
//! | [`events`] | the vocabulary: requests, applies, answers, notes (terms, revocations, backlog) |
//! | [`authority`], [`store`], [`services`] | the lease authority and the record store, applied at the apply instant |
//! | [`ports`] | the worker's ports on the simulated world, `WorkerUnderTest`, the factories |
//! | [`driver`] | a replica's loop calling `run()`, the authority's revocations, the backlog check |
//! | [`settings`] | the system's scenario keys, and what a swarm run draws from them |
//! | [`bounds`] | the checks across keys that refuse a scenario no correct worker could pass |
//! | [`checkers`] | one checker per invariant, the "sometimes" situations, the contract audit |
//! | [`defects`] | the defective workers, each the correct engine with one defect |
//! | [`render`] | how its events read in a trace |
//!
//! The production worker core is its own crate (`retention-worker`, `crates/retention-worker`)
//! and depends only on `futures` and its ports.

pub mod authority;
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

use futures::future::LocalBoxFuture;
use leasesim_events::ReplicaId;
use leasesim_invariants::Judged;
use leasesim_sim::{
    Env, FaultProfile, LocalTask, Scale, ScenarioError, System, SystemPart, WorkerInfo, World,
};

pub use events::Retention;
pub use ports::{
    SimClock, SimLeases, SimRecords, SimTasks, SimWorker, WorkerFactory, WorkerPorts,
    WorkerUnderTest, correct_worker, correct_worker_of,
};
pub use settings::WorkerDraw;

/// A scenario of the retention system.
pub type Scenario = leasesim_sim::Scenario<Retention>;
/// One retention run's drawn faults.
pub type Profile = leasesim_sim::FaultProfile<Retention>;

/// Parses a retention scenario from `text` (it must say `system = "retention"`).
pub fn parse_scenario(name: &str, source: &str, text: &str) -> Result<Scenario, ScenarioError> {
    leasesim_sim::scenario::parse_scenario(name, source, text)
}

/// Reads a retention scenario file.
pub fn load_scenario(path: &std::path::Path) -> Result<Scenario, ScenarioError> {
    leasesim_sim::scenario::load_scenario(path)
}

use checkers::{AnyChecker, CheckConfig, ClockConfig, Invariant, Situation};
use events::{Answer, Applied, Note, OpKind, Request};

impl Judged for Retention {
    type Invariant = Invariant;
    type Situation = Situation;
    type Facts = checkers::Facts;
}

/// The checker configuration of one run: the worker settings its profile drew (with swarm
/// they differ from the scenario's) and the scenario's bounds.
pub fn check_config(scenario: &Scenario, profile: &FaultProfile<Retention>) -> CheckConfig {
    let worker = &profile.system.worker;
    CheckConfig {
        batch_rows: worker.batch_rows,
        cap_rows: worker.cap_rows,
        retention_ms: worker.retention_ms,
        term_bound_ms: scenario.settings.term_bound_ms,
    }
}

/// How the run's workers keep time: their drawn renewal interval and each replica's drift.
pub fn clock_config(profile: &FaultProfile<Retention>) -> ClockConfig {
    ClockConfig {
        renew_every_ms: profile.system.worker.renew_every_ms,
        drift_ppm: profile.clocks.iter().map(|clock| clock.drift_ppm).collect(),
    }
}

impl System for Retention {
    const NAME: &'static str = "retention";
    const DESCRIPTION: &'static str =
        "seed 000: a lease-fenced worker deleting old rows in capped batches (fencing tokens)";
    const KEYS: &'static [&'static str] = &["worker", "lease", "store", "drain", "term_bound_ms"];
    const FAULT_KEYS: &'static [&'static str] = &["revoke", "short_delete"];
    const STOP_OPS: &'static [OpKind] = &[OpKind::Acquire, OpKind::Delete, OpKind::Renew];

    type Settings = settings::Settings;
    type Drawn = settings::Drawn;
    type Services = services::Services;
    type Worker = dyn WorkerUnderTest;
    type Ports = WorkerPorts;
    type Checker = AnyChecker;
    type Coverage = checkers::Coverage;
    type Annotator = render::Annotations;
    type HealMark = u64;

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

    fn start_faults(world: &Rc<World<Self>>) {
        if world.profile().system.revoke.probability > 0.0 {
            leasesim_sim::phases::spawn(world, "revoker", driver::revoker(world.clone()));
        }
    }

    fn faults_heal(world: &World<Self>) -> u64 {
        driver::eligible_before_ms(world)
    }

    fn liveness_ends(world: &World<Self>, eligible_before_ms: u64) {
        driver::backlog_check(world, eligible_before_ms);
    }

    fn checkers(
        scenario: &Scenario,
        profile: &FaultProfile<Self>,
        invariants: &[Invariant],
    ) -> Vec<AnyChecker> {
        let (config, clocks) = (check_config(scenario, profile), clock_config(profile));
        invariants
            .iter()
            .map(|&invariant| {
                let mut checker = AnyChecker::new(invariant, &config);
                checker.set_clocks(&clocks);
                checker
            })
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

    fn call_style(op: OpKind) -> leasesim_timeline::CallStyle {
        render::call_style(op)
    }

    fn draws(event: &events::Event, out: &mut Vec<leasesim_timeline::Draw>) {
        render::draws(event, out);
    }

    fn shrink_moves() -> &'static [(&'static str, &'static str)] {
        &[
            ("faults.revoke.probability", "0"),
            ("faults.short_delete", "0"),
            ("store.rows", "0"),
        ]
    }

    fn shrink_end_moves() -> &'static [(&'static str, &'static str)] {
        &[("drain", "false")]
    }

    fn faults_on(settings: &settings::Settings) -> usize {
        usize::from(settings.revoke.probability.get() > 0.0)
            + usize::from(settings.short_delete.get() > 0.0)
    }
}

/// A boxed `run()` future of a worker (what [`WorkerUnderTest::run`] returns).
pub type RunFuture<'a> =
    LocalBoxFuture<'a, Result<retention_worker::TermReport, retention_worker::RunError>>;
