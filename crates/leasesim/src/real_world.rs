//! Real runs through the registry: a system's scenario, fault plan, phases and checkers on
//! tokio in real time, its requests applied to a real store by the system's store hook
//! (feature `real`).
//!
//! Terminology:
//! - *real store entry*: what a system registers for real runs ([`RealStore`]): the store
//!   kinds its hook opens and the function that runs one seed. `leasesim real --system S`
//!   finds it in the installed registry ([`crate::Registry::with_real_store`]).
//! - *preflight*: before its first real run, a scenario is simulated with the correct worker
//!   over [`PREFLIGHT_SEEDS`] seeds; a failing seed refuses the real run as bad input (phases
//!   too short for the backlog, a bound no correct worker keeps), so a real run never blames
//!   a worker for what the scenario makes impossible.
//! - *real-time invariants*: every invariant of the system judges a real run. The simulated
//!   latencies and faults wrap each real call, so the timing a checker sees is real time.

use std::rc::Rc;
use std::sync::Arc;

use leasesim_invariants::{InvariantName, SituationName};
use leasesim_real::world::{RealHook, StoreTally};
use leasesim_real::{RealError, StoreTarget};
use leasesim_rt::{Feed, Strategy};
use leasesim_sim::{StoreHook, System};
use leasesim_timeline::Render;

use crate::error::UsageError;
use crate::runner::{RunSpec, run, run_real};
use crate::systems::{AnyScenario, typed};

/// Seeds of the correct worker a scenario must pass in simulation before a real run.
pub const PREFLIGHT_SEEDS: u64 = 50;

/// A store kind a real run can use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreKind {
    /// A SQLite file: no server.
    Sqlite,
    /// A PostgreSQL server (feature `postgres`).
    Postgres,
    /// A Redis server (feature `redis`).
    Redis,
}

impl StoreKind {
    /// `sqlite`, `postgres` or `redis`.
    pub fn name(self) -> &'static str {
        match self {
            StoreKind::Sqlite => "sqlite",
            StoreKind::Postgres => "postgres",
            StoreKind::Redis => "redis",
        }
    }
}

/// One real run to make.
#[derive(Clone, Debug)]
pub struct RealRequest {
    pub scenario: Arc<dyn AnyScenario>,
    pub worker: String,
    pub target: StoreTarget,
    pub seed: u64,
    /// Keep every event, for the trace.
    pub keep_events: bool,
}

/// One real run's result, in the words every system shares.
#[derive(Clone, Debug)]
pub struct RealOutcome {
    /// The verdict line (`pass: every invariant held`, or the violation).
    pub verdict: String,
    /// The invariant that broke, if one did.
    pub invariant: Option<String>,
    /// Whether the run failed (a violation, liveness, a run cut off, or a store that answered
    /// differently from the model).
    pub failed: bool,
    /// Exact-instant invariants the run broke in real time (observed, not failing it).
    pub observed: Vec<String>,
    /// The situations the run reached, and those it did not, by name.
    pub reached: Vec<&'static str>,
    pub missed: Vec<&'static str>,
    pub events: u64,
    /// Real ms from the first event to the end.
    pub end_ms: u64,
    /// What the store hook saw.
    pub tally: StoreTally,
    /// The trace lines, when the request kept its events.
    pub trace: Vec<String>,
    /// The outcome's label (`pass`, an invariant's name, `liveness`, `panic`, `budget`, ...).
    pub label: String,
}

impl RealOutcome {
    /// What failed the run, in one word: the invariant it broke, `store` when the store
    /// answered differently from the model, else the outcome's label (`panic`, `budget`).
    pub fn cause(&self) -> String {
        match (&self.invariant, &self.tally.divergence) {
            (Some(invariant), _) => invariant.clone(),
            (None, Some(_)) => "store".to_string(),
            (None, None) => self.label.clone(),
        }
    }
}

/// Runs one seed of a real run (monomorphised per system).
pub type RealRunFn = fn(&RealRequest) -> Result<RealOutcome, UsageError>;

/// Checks a scenario before its real runs (monomorphised per system).
pub type PreflightFn = fn(&dyn AnyScenario) -> Result<(), UsageError>;

/// A system's real store entry (see the module docs).
#[derive(Clone, Copy, Debug)]
pub struct RealStore {
    pub system: &'static str,
    /// The kinds its hook opens, the default first.
    pub kinds: &'static [StoreKind],
    /// The scenario a run without `--scenario` takes.
    pub scenario: &'static str,
    pub run: RealRunFn,
    pub preflight: PreflightFn,
}

/// The real store entry of system `S`, whose store hook `H` opens `kinds`; `scenario` is
/// the one a run takes unless told otherwise.
pub fn real_store<S: System + Render, H: RealHook<S> + 'static>(
    kinds: &'static [StoreKind],
    scenario: &'static str,
) -> RealStore {
    RealStore {
        system: S::NAME,
        kinds,
        scenario,
        run: run_one::<S, H>,
        preflight: preflight::<S>,
    }
}

/// The typed scenario behind `scenario`, or why not.
fn scenario_of<S: System + Render>(
    scenario: &dyn AnyScenario,
) -> Result<Rc<leasesim_sim::Scenario<S>>, UsageError> {
    typed::<S>(scenario)
        .map(Rc::new)
        .ok_or_else(|| UsageError::BadValue {
            flag: "--scenario",
            given: scenario.name().to_string(),
            why: format!(
                "it is a `{}` scenario, not a `{}` one",
                scenario.system().name(),
                S::NAME
            ),
        })
}

/// `scenario` with the invariants named in `exact` observed, not halting (see
/// [`RealHook::EXACT_INSTANT`]): they join the scenario's expected invariants.
fn observing<S: System>(
    scenario: Rc<leasesim_sim::Scenario<S>>,
    exact: &[&str],
) -> Rc<leasesim_sim::Scenario<S>> {
    let mut scenario = Rc::unwrap_or_clone(scenario);
    let at = leasesim_sim::Location {
        file: "leasesim real".into(),
        line: 0,
        column: 0,
    };
    for invariant in S::Invariant::ALL
        .iter()
        .filter(|i| exact.contains(&i.name()))
    {
        if !scenario.expected().contains(invariant) {
            scenario.expect.push((*invariant, at.clone()));
        }
    }
    Rc::new(scenario)
}

fn preflight<S: System + Render>(scenario: &dyn AnyScenario) -> Result<(), UsageError> {
    let typed = scenario_of::<S>(scenario)?;
    let factory = S::factory("correct").expect("every system has a correct worker");
    for seed in 0..PREFLIGHT_SEEDS {
        let spec = RunSpec::new(
            typed.clone(),
            "correct",
            factory.clone(),
            Feed::Seed(seed),
            Strategy::Random,
        );
        let report = run(&spec);
        if report.failed() {
            return Err(UsageError::BadValue {
                flag: "--scenario",
                given: scenario.name().to_string(),
                why: format!(
                    "the correct worker fails it in simulation (seed {seed}: {}): a real run could \
                     not tell a worker's bug from what the scenario makes impossible; lengthen \
                     --liveness or --duration, or lighten the scenario",
                    report.outcome.verdict_line()
                ),
            });
        }
    }
    Ok(())
}

fn run_one<S: System + Render, H: RealHook<S> + 'static>(
    request: &RealRequest,
) -> Result<RealOutcome, UsageError> {
    let scenario = observing::<S>(
        scenario_of::<S>(request.scenario.as_ref())?,
        H::EXACT_INSTANT,
    );
    let factory = S::factory(&request.worker).ok_or_else(|| UsageError::UnknownName {
        what: "worker",
        given: request.worker.clone(),
        valid: S::workers().iter().map(|w| w.name.to_string()).collect(),
    })?;
    let mut spec = RunSpec::new(
        scenario,
        &request.worker,
        factory,
        Feed::Seed(request.seed),
        Strategy::Random,
    );
    spec.keep_events = request.keep_events;
    let opened: std::cell::RefCell<Option<Rc<H>>> = std::cell::RefCell::new(None);
    let report = run_real(&spec, request.seed, |profile| {
        let hook = Rc::new(H::open(&request.target, &spec.scenario, profile)?);
        *opened.borrow_mut() = Some(hook.clone());
        Ok::<Rc<dyn StoreHook<S>>, RealError>(hook)
    })
    .map_err(|error| open_error(&error, &request.target))?;
    let tally = opened
        .borrow()
        .as_ref()
        .map(|hook| hook.tally())
        .unwrap_or_default();
    let (reached, missed): (Vec<S::Situation>, Vec<S::Situation>) = S::Situation::ALL
        .iter()
        .partition(|&&situation| report.coverage.contains(situation));
    let names = |list: Vec<S::Situation>| list.into_iter().map(|s| s.name()).collect();
    Ok(RealOutcome {
        verdict: report.outcome.verdict_line(),
        invariant: report.outcome.invariant().map(|i| i.name().to_string()),
        failed: report.failed() || tally.divergence.is_some(),
        observed: report
            .expected
            .iter()
            .map(|violation| violation.to_string())
            .collect(),
        reached: names(reached),
        missed: names(missed),
        events: report.stats.events,
        end_ms: report.stats.end_ms,
        tally,
        trace: report.events.iter().map(crate::trace::line::<S>).collect(),
        label: report.outcome.label(),
    })
}

/// A store that could not be set up, as bad input: the flag that named where it is (`--db`,
/// `--pg-url`, `--redis-url`), or `--store` for a store kind this build or system cannot open.
fn open_error(error: &RealError, target: &StoreTarget) -> UsageError {
    // A server's URL may hold a password: the message names the store kind, not the URL.
    let (flag, given) = match (error, target) {
        (RealError::Store(_), StoreTarget::Sqlite { path }) => ("--db", path.display().to_string()),
        (RealError::Store(_), StoreTarget::Postgres { .. }) => ("--pg-url", "postgres".into()),
        (RealError::Store(_), StoreTarget::Redis { .. }) => ("--redis-url", "redis".into()),
        (RealError::BadConfig(_), _) => ("--store", target.kind().to_string()),
    };
    UsageError::BadValue {
        flag,
        given,
        why: error.to_string(),
    }
}

/// The real store entries of the builtin systems, in the registry's order.
pub fn builtin() -> Vec<RealStore> {
    use leasesim_holder_lock::HolderLock;
    use leasesim_real::holder_lock::ClaimStoreHook;
    use leasesim_real::{
        reservations::ReservationStoreHook, retention::LeaseStoreHook, work_items::ItemStoreHook,
    };
    use leasesim_reservations::Reservations;
    use leasesim_retention::Retention;
    use leasesim_work_items::WorkItems;
    const SQL: &[StoreKind] = &[StoreKind::Sqlite, StoreKind::Postgres];
    vec![
        real_store::<Retention, LeaseStoreHook>(SQL, "steady"),
        real_store::<WorkItems, ItemStoreHook>(SQL, "items-steady"),
        real_store::<Reservations, ReservationStoreHook>(SQL, "expiry-steady"),
        real_store::<HolderLock, ClaimStoreHook>(&[StoreKind::Redis], "holder-steady"),
    ]
}
