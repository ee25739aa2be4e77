//! A store hook sits where the simulated services were: a hook that applies the model gives
//! the very same run, and one that refuses every call applies nothing; a hook is told every
//! change the world makes to its services outside requests, as the model made it.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use leasesim::work_items::WorkItems;
use leasesim_events::{EventKind, ReplicaId};
use leasesim_reservations::Reservations;
use leasesim_reservations::agents::StoreChange;
use leasesim_reservations::events::{
    Answer as ResvAnswer, Applied as ResvApplied, Note, Request as ResvRequest,
};
use leasesim_rt::{Sim, SimConfig};
use leasesim_sim::{
    Apply, EventSink, FaultProfile, SimEnv, StoreFailure, StoreHook, Workers, World, run_phases,
    simulate,
};
use leasesim_work_items::events::{Answer, Applied, Request};

/// Applies every request at the simulated services, as a run without a hook does.
struct ModelHook;

impl StoreHook<WorkItems> for ModelHook {
    fn apply(
        &self,
        world: &World<WorkItems>,
        replica: ReplicaId,
        request: Request,
    ) -> Result<(Applied, Answer), StoreFailure> {
        Ok(WorkItems::apply(world, replica, request))
    }
}

/// Refuses every request, counting them.
#[derive(Default)]
struct RefusingHook {
    calls: Cell<u64>,
}

impl StoreHook<WorkItems> for RefusingHook {
    fn apply(
        &self,
        _world: &World<WorkItems>,
        _replica: ReplicaId,
        _request: Request,
    ) -> Result<(Applied, Answer), StoreFailure> {
        self.calls.set(self.calls.get() + 1);
        Err(StoreFailure::Refused)
    }
}

fn steady() -> Rc<leasesim_sim::Scenario<WorkItems>> {
    Rc::new(leasesim::catalog::resolve_typed::<WorkItems>("items-steady").expect("a builtin"))
}

/// One simulated run of `scenario` from `seed` with `hook` in place of the services: its
/// trace hash and events.
fn run_with<S: leasesim_sim::System>(
    scenario: &Rc<leasesim_sim::Scenario<S>>,
    seed: u64,
    hook: Rc<dyn StoreHook<S>>,
) -> (
    u64,
    Vec<leasesim_events::Stamped<leasesim_events::Event<S>>>,
) {
    let mut sim = Sim::new(SimConfig::seeded(seed));
    let handle = sim.handle();
    let events = Rc::new(EventSink::new(handle.clone(), true));
    let env: Rc<dyn leasesim_sim::Env<S>> = Rc::new(SimEnv::new(handle.clone(), events.clone()));
    let profile = FaultProfile::draw(scenario, &*env);
    let world = Rc::new(World::new(scenario.clone(), profile, env).with_store(hook));
    let factory = S::factory("correct").expect("the correct worker");
    let outcome = sim.block_on(run_phases(world.clone(), factory));
    assert!(outcome.is_completed(), "{outcome:?}");
    world.teardown();
    (handle.trace_hash(), events.take())
}

#[test]
fn a_hook_that_applies_the_model_runs_exactly_the_simulated_run() {
    let scenario = steady();
    let factory = WorkItems::factory("correct").expect("the correct worker");
    for seed in 0..3 {
        let plain = simulate(&scenario, &factory, SimConfig::seeded(seed), true, None);
        let (hash, events) = run_with(&scenario, seed, Rc::new(ModelHook));
        assert_eq!(hash, plain.trace_hash, "seed {seed}");
        assert_eq!(events.len(), plain.events.len(), "seed {seed}");
        assert!(
            events
                .iter()
                .any(|e| matches!(e.event.kind, EventKind::Applied { .. }))
        );
    }
}

#[test]
fn a_hook_that_refuses_every_call_applies_nothing_and_records_each_refusal() {
    let scenario = steady();
    let hook = Rc::new(RefusingHook::default());
    let (_, events) = run_with(&scenario, 0, hook.clone());
    let count = |wanted: fn(&EventKind<WorkItems>) -> bool| {
        events.iter().filter(|e| wanted(&e.event.kind)).count() as u64
    };
    assert!(hook.calls.get() > 0, "the workers made calls");
    assert_eq!(count(|k| matches!(k, EventKind::Applied { .. })), 0);
    assert_eq!(
        count(|k| matches!(k, EventKind::Rejected { .. })),
        hook.calls.get()
    );
}

/// Applies the reservations model, and keeps the agents' changes it is told of.
#[derive(Default)]
struct AgentsHook {
    changes: RefCell<Vec<StoreChange>>,
}

impl StoreHook<Reservations> for AgentsHook {
    fn apply(
        &self,
        world: &World<Reservations>,
        replica: ReplicaId,
        request: ResvRequest,
    ) -> Result<(ResvApplied, ResvAnswer), StoreFailure> {
        Ok(Reservations::apply(world, replica, request))
    }

    fn services_changed(&self, _world: &World<Reservations>, change: &dyn std::any::Any) {
        let change = change.downcast_ref::<StoreChange>().expect("a StoreChange");
        self.changes.borrow_mut().push(*change);
    }
}

#[test]
fn a_reservations_hook_is_told_each_agents_change_as_the_model_made_it_and_the_run_is_unchanged() {
    let scenario = Rc::new(
        leasesim::catalog::resolve_typed::<Reservations>("expiry-consume-race").expect("a builtin"),
    );
    let factory = Reservations::factory("correct").expect("the correct worker");
    for seed in 0..3 {
        let plain = simulate(&scenario, &factory, SimConfig::seeded(seed), true, None);
        let hook = Rc::new(AgentsHook::default());
        let (hash, events) = run_with(&scenario, seed, hook.clone());
        assert_eq!(
            hash, plain.trace_hash,
            "seed {seed}: telling the hook changed the run"
        );
        // The agents' notes, as changes: every one was told, in order, with the model's outcome.
        let noted: Vec<StoreChange> = events
            .iter()
            .filter_map(|e| match e.event.kind {
                EventKind::Note(Note::Placed {
                    id,
                    hold_until_ms,
                    malformed,
                }) => Some(StoreChange::Placed {
                    id,
                    hold_until_ms,
                    malformed,
                }),
                EventKind::Note(Note::Consumed { id, hold_until_ms }) => {
                    Some(StoreChange::Consumed {
                        id,
                        outcome: Ok(hold_until_ms),
                    })
                }
                EventKind::Note(Note::ConsumeRefused { id, status }) => {
                    Some(StoreChange::Consumed {
                        id,
                        outcome: Err(status),
                    })
                }
                _ => None,
            })
            .collect();
        let consumed = noted
            .iter()
            .filter(|c| matches!(c, StoreChange::Consumed { outcome: Ok(_), .. }))
            .count();
        assert!(consumed > 0, "seed {seed}: the agents consumed holds");
        assert_eq!(*hook.changes.borrow(), noted, "seed {seed}");
    }
}

/// Panics at the first request it applies.
#[cfg(feature = "real")]
struct PanickingHook;

#[cfg(feature = "real")]
impl StoreHook<WorkItems> for PanickingHook {
    fn apply(
        &self,
        _world: &World<WorkItems>,
        _replica: ReplicaId,
        _request: Request,
    ) -> Result<(Applied, Answer), StoreFailure> {
        panic!("the store hook broke");
    }
}

/// A real run (feature `real`) whose store hook panics ends with a panic verdict naming it,
/// as a simulated run does, rather than the task dying unseen.
#[cfg(feature = "real")]
#[test]
fn a_panic_in_a_real_run_is_its_verdict() {
    use leasesim::runner::{RunSpec, run_real};
    use leasesim_rt::{Feed, Strategy};
    let factory = WorkItems::factory("correct").expect("the correct worker");
    let spec = RunSpec::new(
        steady(),
        "correct",
        factory,
        Feed::Seed(0),
        Strategy::Random,
    );
    let report = run_real(&spec, 0, |_| {
        Ok::<Rc<dyn StoreHook<WorkItems>>, ()>(Rc::new(PanickingHook))
    })
    .expect("the hook opens");
    assert_eq!(report.outcome.label(), "panic", "{:?}", report.outcome);
    assert!(
        report.outcome.sentence().contains("the store hook broke"),
        "{}",
        report.outcome.sentence()
    );
}
