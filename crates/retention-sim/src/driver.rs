//! How the retention world drives its workers, and its own faults and checks.
//!
//! Terminology:
//! - *driver*: one task per replica that calls `run()` on a jittered schedule and records
//!   each term's start and end (notes `TermStarted`, `TermEnded`).
//! - *revoker*: the lease authority dropping the live lease at random ticks (safety phase).
//! - *backlog check*: at the end of the liveness phase, how many rows that were eligible for
//!   every replica when faults healed are still in the store (note `Backlog`).

use std::rc::Rc;

use leasesim_events::ReplicaId;
use leasesim_sim::{Drive, EPOCH_MS, LocalTask, World};
use retention_worker::{LossCause, Op, RunError, TermEnd, TermReport};

use crate::Retention;
use crate::events::{EndKind, Note, OpKind};
use crate::services;

/// How a `run()` call ended, as an event says it.
pub fn end_kind(result: &Result<TermReport, RunError>) -> (EndKind, u64) {
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

/// Calls `run()` on a jittered schedule until a run reports it was stopped before it started,
/// or the replica was restarted with a fresh worker (which has a driver of its own).
pub async fn run_replica(world: Rc<World<Retention>>, replica: ReplicaId) {
    let env = world.env();
    let state = world.replica(replica);
    let Some((worker, generation)) = state.worker() else {
        return;
    };
    let every = world.scenario().schedule.run_every_ms;
    let mut term = 0;
    while state.next_round(env, every, generation).await {
        term += 1;
        env.note_for(replica, Note::TermStarted { term });
        let result = worker.run().await;
        let (end, rows) = end_kind(&result);
        env.note_for(replica, Note::TermEnded { term, end, rows });
        if end == EndKind::StoppedBeforeStart {
            state.set_between_terms(true);
            return;
        }
    }
}

/// Periodic revocation of the live lease by the authority (safety phase only).
pub async fn revoker(world: Rc<World<Retention>>) {
    let tick = world.profile().system.revoke;
    while let Some(strikes) = leasesim_sim::phases::next_tick(&world, tick).await {
        if strikes {
            services::revoke(&world);
        }
    }
}

/// A replica's loop, the authority's revocations and the backlog check.
impl Drive for Retention {
    const STOP_OPS: &'static [OpKind] = &[OpKind::Acquire, OpKind::Delete, OpKind::Renew];
    /// The instant before which a row was eligible for every replica as faults healed.
    type HealMark = u64;

    fn drive(world: Rc<World<Retention>>, replica: ReplicaId) -> LocalTask {
        Box::pin(run_replica(world, replica))
    }

    fn start_faults(world: &Rc<World<Retention>>) {
        if world.profile().system.revoke.probability > 0.0 {
            leasesim_sim::phases::spawn(world, "revoker", revoker(world.clone()));
        }
    }

    /// As faults heal: the instant before which a row is eligible for every replica (the least
    /// local clock minus the run's retention), for the backlog check.
    fn faults_heal(world: &World<Retention>) -> u64 {
        let now_ms = world.env().now_ms();
        world
            .replicas()
            .iter()
            .map(|state| state.local_ms(now_ms))
            .min()
            .unwrap_or(EPOCH_MS)
            .saturating_sub(world.profile().system.worker.retention_ms)
    }

    /// As the liveness phase ends: the rows eligible when faults healed that are still there.
    fn liveness_ends(world: &World<Retention>, eligible_before_ms: u64) {
        if world.profile().system.drain {
            let remaining = world.services().store.remaining_before(eligible_before_ms);
            world.env().note(Note::Backlog {
                eligible_before_ms,
                remaining,
            });
        }
    }
}
