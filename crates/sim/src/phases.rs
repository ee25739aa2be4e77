//! The phase script of a run: safety, liveness, shutdown, end; with the shared process faults.
//!
//! Terminology:
//! - *driver*: the system's loop for one replica ([`Drive::drive`](crate::Drive::drive)), started here.
//! - *stopper*: calls `stop()` on a replica at the moment the profile's stop plan names: an
//!   instant, while a call of a named operation is in flight, or between terms.
//! - *tickers*: periodic process faults of one replica: pauses and clock jumps (a system adds
//!   its own, e.g. a lease revoked by its authority, in [`Drive::start_faults`](crate::Drive::start_faults)). Each waits
//!   for its next tick with [`next_tick`].
//! - *phases*: safety (faults on) for `duration_ms`, liveness (healed; stopped replicas are
//!   restarted with fresh workers) for `liveness_ms`, then shutdown (every replica stopped,
//!   bounded by `stop_bound_ms`), then end.

use std::rc::Rc;

use leasesim_events::{Event, EventKind, Phase, ReplicaId};

use crate::faults::Tick;
use crate::scenario::StopAt;
use crate::system::{System, WorkerFactory};
use crate::world::World;

/// Builds a fresh worker for `replica` and installs it.
fn install_worker<S: System>(world: &Rc<World<S>>, factory: &WorkerFactory<S>, replica: ReplicaId) {
    let worker = factory(S::ports(world, replica));
    world.replica(replica).install(worker);
}

/// Calls `stop()` on `replica`'s current worker and records the call and its return.
async fn stop_now<S: System>(world: Rc<World<S>>, replica: ReplicaId) {
    let env = world.env();
    let state = world.replica(replica);
    let Some((worker, _)) = state.worker() else {
        return;
    };
    state.gate(env).await;
    state.stop_called.set(true);
    state.stop_resolved.set(false);
    env.emit_for(replica, EventKind::StopCalled);
    S::stop(worker).await;
    state.stop_resolved.set(true);
    env.emit_for(replica, EventKind::StopResolved);
    state.changed.notify();
}

/// Waits for the moment the stop plan names, then stops `replica`.
async fn stopper<S: System>(world: Rc<World<S>>, replica: ReplicaId) {
    let env = world.env();
    let plan = world.profile().stop;
    let state = world.replica(replica);
    env.sleep_until(plan.window_ms.min).await;
    let wanted = match plan.at {
        StopAt::None | StopAt::Anywhere => return,
        StopAt::Time => {
            env.sleep_until(env.range(plan.window_ms.min, plan.window_ms.max))
                .await;
            None
        }
        StopAt::During(op) => Some(Some(op)),
        StopAt::BetweenTerms => Some(None),
    };
    if let Some(op) = wanted {
        let ready = || match op {
            Some(op) => state.in_flight(op) > 0,
            None => state.is_between_terms(),
        };
        while !ready() && env.now_ms() < plan.window_ms.max {
            let deadline = env.sleep_until(plan.window_ms.max);
            futures::future::select(std::pin::pin!(state.changed.changed()), deadline).await;
        }
    }
    env.sleep(env.range(plan.delay_ms.min, plan.delay_ms.max))
        .await;
    stop_now(world.clone(), replica).await;
}

/// A periodic fault's next tick: sleeps a drawn period of `tick`, then `None` once faults have
/// healed (the ticker ends), else whether the fault strikes (a coin of `tick.probability`, so
/// value 0 of the draw is "no fault").
pub async fn next_tick<S: System>(world: &World<S>, tick: Tick) -> Option<bool> {
    let env = world.env();
    env.sleep(env.range(tick.every_ms.min, tick.every_ms.max))
        .await;
    if world.healed() {
        return None;
    }
    Some(env.coin(tick.probability))
}

/// Periodic process pauses of one replica (safety phase only).
async fn pauser<S: System>(world: Rc<World<S>>, replica: ReplicaId) {
    let env = world.env();
    let (tick, span) = (world.profile().pause, world.profile().pause_ms);
    while let Some(strikes) = next_tick(&world, tick).await {
        if strikes {
            let until_ms = env.now_ms() + env.range(span.min, span.max);
            world.replica(replica).pause_until(until_ms);
            env.emit_for(replica, EventKind::Paused { until_ms });
            env.sleep_until(until_ms).await;
            env.emit_for(replica, EventKind::Resumed);
        }
    }
}

/// Periodic clock jumps of one replica (safety phase only).
async fn jumper<S: System>(world: Rc<World<S>>, replica: ReplicaId) {
    let env = world.env();
    let (tick, by) = (world.profile().jump, world.profile().jump_by_ms);
    while let Some(strikes) = next_tick(&world, tick).await {
        if strikes {
            let by_ms = by
                .min
                .saturating_add_unsigned(env.range(0, by.max.abs_diff(by.min)));
            world.replica(replica).jump(by_ms);
            env.emit_for(replica, EventKind::ClockJumped { by_ms });
        }
    }
}

/// Spawns a world task (detached: it ends with the run).
pub fn spawn<S: System>(
    world: &Rc<World<S>>,
    name: &str,
    task: impl std::future::Future<Output = ()> + 'static,
) {
    world.env().spawn(name, Box::pin(task));
}

/// Starts replicas and fault tickers for the safety phase.
fn start_safety<S: System>(world: &Rc<World<S>>, factory: &WorkerFactory<S>) {
    let profile = world.profile();
    for replica in world.replicas().iter().map(|state| state.id) {
        install_worker(world, factory, replica);
        spawn(world, "driver", S::drive(world.clone(), replica));
        if profile.stop.at != StopAt::None && replica.0 < profile.stop.replicas {
            spawn(world, "stopper", stopper(world.clone(), replica));
        }
        if profile.pause.probability > 0.0 {
            spawn(world, "pauser", pauser(world.clone(), replica));
        }
        if profile.jump.probability > 0.0 {
            spawn(world, "jumper", jumper(world.clone(), replica));
        }
    }
    S::start_faults(world);
}

/// Heals faults and restarts every replica whose stop has resolved.
fn start_liveness<S: System>(world: &Rc<World<S>>, factory: &WorkerFactory<S>) {
    world.heal();
    for state in world.replicas() {
        if state.stop_called.get() && state.stop_resolved.get() {
            install_worker(world, factory, state.id);
            state.stop_called.set(false);
            world.env().emit_for(state.id, EventKind::Restarted);
            spawn(world, "driver", S::drive(world.clone(), state.id));
        }
    }
}

/// Stops every replica not already stopped and waits (bounded) for all stops to resolve.
async fn shutdown<S: System>(world: &Rc<World<S>>) {
    let env = world.env();
    for state in world.replicas() {
        if !state.stop_called.get() {
            spawn(world, "stop", stop_now(world.clone(), state.id));
        }
    }
    let deadline_ms = env.now_ms() + world.scenario().stop_bound_ms;
    let all_resolved = || {
        world
            .replicas()
            .iter()
            .all(|s| s.stop_called.get() && s.stop_resolved.get())
    };
    while env.now_ms() < deadline_ms {
        if all_resolved() {
            return;
        }
        let changed = futures::future::select_all(
            world
                .replicas()
                .iter()
                .map(|state| Box::pin(state.changed.changed())),
        );
        futures::future::select(changed, env.sleep_until(deadline_ms)).await;
    }
}

/// The whole run, phase by phase.
pub async fn run_phases<S: System>(world: Rc<World<S>>, factory: Rc<WorkerFactory<S>>) {
    let env = world.env();
    let (duration_ms, liveness_ms) = (world.scenario().duration_ms, world.scenario().liveness_ms);
    env.emit(Event::world(EventKind::Phase(Phase::Safety)));
    start_safety(&world, &*factory);
    env.sleep_until(duration_ms).await;

    let mark = S::faults_heal(&world);
    env.emit(Event::world(EventKind::Phase(Phase::Liveness)));
    start_liveness(&world, &*factory);
    env.sleep_until(duration_ms + liveness_ms).await;

    S::liveness_ends(&world, mark);
    env.emit(Event::world(EventKind::Phase(Phase::Shutdown)));
    shutdown(&world).await;
    env.emit(Event::world(EventKind::Phase(Phase::End)));
}
