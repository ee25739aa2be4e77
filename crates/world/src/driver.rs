//! The run: phases, replica drivers, stops and periodic faults.
//!
//! Terminology:
//! - *driver*: one task per replica that calls `run()` on a jittered schedule and records
//!   each term's start and end.
//! - *stopper*: calls `stop()` on a replica at the moment the profile's stop plan names.
//! - *tickers*: periodic faults (pause, clock jump per replica; revocation at the authority).
//! - *phases*: safety (faults on) for `duration_ms`, liveness (healed; stopped replicas are
//!   restarted) for `liveness_ms`, then shutdown (every replica stopped, bounded by
//!   `stop_bound_ms`), then end.

use std::rc::Rc;

use lease_worker::{LossCause, Op, RunError, TermEnd, TermReport};
use leasesim_events::{EndKind, Event, EventKind, OpKind, Phase, ReplicaId};

use crate::adapter::{WorkerFactory, WorkerPorts};
use crate::env::EPOCH_MS;
use crate::replica::{Port, SimClock, SimLeases, SimRecords};
use crate::scenario::StopAt;
use crate::world::World;

/// Builds a fresh worker for `replica` and installs it.
fn install_worker(world: &Rc<World>, factory: &WorkerFactory, replica: ReplicaId) {
    let port = Port::new(world.clone(), replica);
    let worker = factory(WorkerPorts {
        replica,
        owner_id: replica.owner_id(),
        config: world.profile.worker.clone(),
        clock: SimClock(port.clone()),
        leases: SimLeases(port.clone()),
        records: SimRecords(port),
    });
    *world.replica(replica).worker.borrow_mut() = Some(worker);
}

fn end_kind(result: &Result<TermReport, RunError>) -> (EndKind, u64) {
    let report = match result {
        Ok(report) => report,
        Err(RunError::AlreadyRunning) => return (EndKind::AlreadyRunning, 0),
    };
    let end = match &report.end {
        TermEnd::StoppedBeforeStart => EndKind::StoppedBeforeStart,
        TermEnd::NotLeader => EndKind::NotLeader,
        TermEnd::CapReached => EndKind::CapReached,
        TermEnd::Drained => EndKind::Drained,
        TermEnd::LeadershipLost(LossCause::RenewAnsweredNone) => EndKind::LostByNone,
        TermEnd::LeadershipLost(LossCause::RenewFailed(_)) => EndKind::LostByError,
        TermEnd::Stopped => EndKind::Stopped,
        TermEnd::Failed {
            op: Op::Acquire, ..
        } => EndKind::FailedAcquire,
        TermEnd::Failed { .. } => EndKind::FailedDelete,
    };
    (end, report.rows_deleted)
}

/// Calls `run()` on a jittered schedule until a run reports it was stopped before it started.
async fn drive(world: Rc<World>, replica: ReplicaId) {
    let env = world.env();
    let state = world.replica(replica);
    let Some(worker) = state.worker.borrow().clone() else {
        return;
    };
    let every = world.scenario.schedule.run_every_ms;
    let mut term = 0;
    loop {
        state.set_between_terms(true);
        // The longest pause is the simplest choice (value 0): fewer terms, shorter traces.
        env.sleep(every.max - env.range(0, every.max - every.min))
            .await;
        state.gate(env).await;
        state.set_between_terms(false);
        term += 1;
        env.emit_for(replica, EventKind::TermStarted { term });
        let result = worker.run().await;
        let (end, rows) = end_kind(&result);
        env.emit_for(replica, EventKind::TermEnded { term, end, rows });
        if end == EndKind::StoppedBeforeStart {
            state.set_between_terms(true);
            return;
        }
    }
}

/// Calls `stop()` on `replica`'s current worker and records the call and its return.
async fn stop_now(world: Rc<World>, replica: ReplicaId) {
    let env = world.env();
    let state = world.replica(replica);
    let Some(worker) = state.worker.borrow().clone() else {
        return;
    };
    state.gate(env).await;
    state.stop_called.set(true);
    state.stop_resolved.set(false);
    env.emit_for(replica, EventKind::StopCalled);
    worker.stop().await;
    state.stop_resolved.set(true);
    env.emit_for(replica, EventKind::StopResolved);
    state.changed.notify();
}

/// Waits for the moment the stop plan names, then stops `replica`.
async fn stopper(world: Rc<World>, replica: ReplicaId) {
    let env = world.env();
    let plan = world.profile.stop;
    let state = world.replica(replica);
    env.sleep_until(plan.window_ms.min).await;
    let wanted = match plan.at {
        StopAt::None | StopAt::Anywhere => return,
        StopAt::Time => {
            env.sleep_until(env.range(plan.window_ms.min, plan.window_ms.max))
                .await;
            None
        }
        StopAt::Acquire => Some(Some(OpKind::Acquire)),
        StopAt::Delete => Some(Some(OpKind::Delete)),
        StopAt::Renew => Some(Some(OpKind::Renew)),
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

/// Periodic process pauses of one replica (safety phase only).
async fn pauser(world: Rc<World>, replica: ReplicaId) {
    let env = world.env();
    let (tick, span) = (world.profile.pause, world.profile.pause_ms);
    loop {
        env.sleep(env.range(tick.every_ms.min, tick.every_ms.max))
            .await;
        if world.healed() {
            return;
        }
        if env.coin(tick.probability) {
            let until_ms = env.now_ms() + env.range(span.min, span.max);
            world.replica(replica).pause_until(until_ms);
            env.emit_for(replica, EventKind::Paused { until_ms });
            env.sleep_until(until_ms).await;
            env.emit_for(replica, EventKind::Resumed);
        }
    }
}

/// Periodic clock jumps of one replica (safety phase only).
async fn jumper(world: Rc<World>, replica: ReplicaId) {
    let env = world.env();
    let (tick, by) = (world.profile.jump, world.profile.jump_by_ms);
    loop {
        env.sleep(env.range(tick.every_ms.min, tick.every_ms.max))
            .await;
        if world.healed() {
            return;
        }
        if env.coin(tick.probability) {
            let by_ms = by
                .min
                .saturating_add_unsigned(env.range(0, by.max.abs_diff(by.min)));
            world.replica(replica).jump(by_ms);
            env.emit_for(replica, EventKind::ClockJumped { by_ms });
        }
    }
}

/// Periodic revocation of the live lease by the authority (safety phase only).
async fn revoker(world: Rc<World>) {
    let env = world.env();
    let tick = world.profile.revoke;
    loop {
        env.sleep(env.range(tick.every_ms.min, tick.every_ms.max))
            .await;
        if world.healed() {
            return;
        }
        if env.coin(tick.probability) {
            world.revoke();
        }
    }
}

fn spawn(world: &Rc<World>, name: &str, task: impl std::future::Future<Output = ()> + 'static) {
    world.env().spawn(name, Box::pin(task));
}

/// Starts replicas and fault tickers for the safety phase.
fn start_safety(world: &Rc<World>, factory: &WorkerFactory) {
    let profile = &world.profile;
    for replica in world.replicas().iter().map(|state| state.id) {
        install_worker(world, factory, replica);
        spawn(world, "driver", drive(world.clone(), replica));
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
    if profile.revoke.probability > 0.0 {
        spawn(world, "revoker", revoker(world.clone()));
    }
}

/// Heals faults and restarts every replica whose stop has resolved.
fn start_liveness(world: &Rc<World>, factory: &WorkerFactory) {
    world.heal();
    for state in world.replicas() {
        if state.stop_called.get() && state.stop_resolved.get() {
            install_worker(world, factory, state.id);
            state.stop_called.set(false);
            world.env().emit_for(state.id, EventKind::Restarted);
            spawn(world, "driver", drive(world.clone(), state.id));
        }
    }
}

/// Stops every replica not already stopped and waits (bounded) for all stops to resolve.
async fn shutdown(world: &Rc<World>) {
    let env = world.env();
    for state in world.replicas() {
        if !state.stop_called.get() {
            spawn(world, "stop", stop_now(world.clone(), state.id));
        }
    }
    let deadline_ms = env.now_ms() + world.scenario.stop_bound_ms;
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
pub async fn run_phases(world: Rc<World>, factory: Rc<WorkerFactory>) {
    let env = world.env();
    let scenario = world.scenario.clone();
    env.emit(Event::world(EventKind::Phase(Phase::Safety)));
    start_safety(&world, &*factory);
    env.sleep_until(scenario.duration_ms).await;

    let eligible_before_ms = world
        .replicas()
        .iter()
        .map(|state| state.local_ms(env.now_ms()))
        .min()
        .unwrap_or(EPOCH_MS)
        .saturating_sub(world.profile.worker.retention_ms);
    env.emit(Event::world(EventKind::Phase(Phase::Liveness)));
    start_liveness(&world, &*factory);
    env.sleep_until(scenario.duration_ms + scenario.liveness_ms)
        .await;

    if world.profile.drain {
        let remaining = world.remaining_before(eligible_before_ms);
        env.emit(Event::world(EventKind::Backlog {
            eligible_before_ms,
            remaining,
        }));
    }
    env.emit(Event::world(EventKind::Phase(Phase::Shutdown)));
    shutdown(&world).await;
    env.emit(Event::world(EventKind::Phase(Phase::End)));
}
