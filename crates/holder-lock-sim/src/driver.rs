//! How the holder-lock world drives its workers.
//!
//! Terminology:
//! - *driver*: one task per replica that calls `run()` (one attempt) on a jittered schedule
//!   and records each attempt's start and end (notes `AttemptStarted`, `AttemptEnded`, the
//!   latter with what the attempt's report says: how it ended, what its release did, its
//!   renewals, and the worker's count of releases that found the claim gone).

use std::rc::Rc;

use holder_lock_worker::{AttemptEnd, AttemptReport, Found, LossCause, Release, RunError};
use leasesim_events::ReplicaId;
use leasesim_sim::{Drive, LocalTask, World};

use crate::events::{EndKind, Forgetting, HolderLock, Note, Op, ReleaseKind};
use crate::services;

/// How an attempt ended, as an event says it.
pub fn end_kind(end: &AttemptEnd) -> EndKind {
    match end {
        AttemptEnd::StoppedBeforeStart => EndKind::StoppedBeforeStart,
        AttemptEnd::NotHolder => EndKind::NotHolder,
        AttemptEnd::CreateFailed(_) => EndKind::CreateFailed,
        AttemptEnd::TooLate => EndKind::TooLate,
        AttemptEnd::JobDone => EndKind::JobDone,
        AttemptEnd::JobFailed(_) => EndKind::JobFailed,
        AttemptEnd::ClaimLost(LossCause::RenewRefused(_)) => EndKind::LostRefused,
        AttemptEnd::ClaimLost(LossCause::RenewFailed(_)) => EndKind::LostFailed,
        AttemptEnd::ClaimLost(LossCause::NotRenewedInTime) => EndKind::LostNotRenewed,
        AttemptEnd::Stopped => EndKind::Stopped,
    }
}

/// What a release did, as an event says it.
pub fn release_kind(release: Option<&Release>) -> ReleaseKind {
    match release {
        None => ReleaseKind::None,
        Some(Release::Deleted) => ReleaseKind::Deleted,
        Some(Release::LeftToExpire) => ReleaseKind::LeftToExpire,
        Some(Release::Gone(Found::Foreign)) => ReleaseKind::GoneForeign,
        Some(Release::Gone(Found::Absent)) => ReleaseKind::GoneAbsent,
        Some(Release::Failed(_)) => ReleaseKind::Failed,
    }
}

/// The note of an attempt's end.
pub fn ended(attempt: u32, result: &Result<AttemptReport, RunError>) -> Note {
    match result {
        Ok(report) => Note::AttemptEnded {
            attempt,
            end: end_kind(&report.end),
            release: release_kind(report.release.as_ref()),
            claims_gone: report.claims_gone,
            renewals: report.renewals,
        },
        Err(RunError::AlreadyRunning) => Note::AttemptEnded {
            attempt,
            end: EndKind::AlreadyRunning,
            release: ReleaseKind::None,
            claims_gone: 0,
            renewals: 0,
        },
    }
}

/// Calls `run()` on a jittered schedule until an attempt reports the worker stopped before
/// it started, or the replica was restarted with a fresh worker (which has a driver of its
/// own): a replaced worker's driver starts no attempt.
pub async fn run_replica(world: Rc<World<HolderLock>>, replica: ReplicaId) {
    let env = world.env();
    let state = world.replica(replica);
    let Some((worker, generation)) = state.worker() else {
        return;
    };
    let every = world.scenario().schedule.run_every_ms;
    for attempt in 1.. {
        if !state.next_round(env, every, generation).await {
            return;
        }
        env.note_for(replica, Note::AttemptStarted { attempt });
        let result = worker.run().await;
        let note = ended(attempt, &result);
        env.note_for(replica, note);
        let stopped = matches!(&result, Ok(r) if r.end == AttemptEnd::StoppedBeforeStart);
        if stopped {
            state.set_between_terms(true);
            return;
        }
    }
}
/// A replica's loop; the store's forgetting, its expiry watcher and the slow-timer notes.
impl Drive for HolderLock {
    const STOP_OPS: &'static [Op] = &[Op::Create, Op::Renew, Op::DeleteIfHolder];
    type HealMark = ();

    fn drive(world: Rc<World<HolderLock>>, replica: ReplicaId) -> LocalTask {
        Box::pin(run_replica(world, replica))
    }

    /// The store's forgetting switched on (each ends once faults heal); and, not faults, the
    /// notes of replicas with slow timers and the store's watcher, which records each
    /// lifetime's end at its instant for the whole run (it never injects anything, so healing
    /// does not end it).
    fn start_faults(world: &Rc<World<HolderLock>>) {
        services::note_slow_timers(world);
        for cause in Forgetting::ALL {
            if world.profile().system.forgetting[cause.index()].probability > 0.0 {
                let forgetter = services::forgetter(world.clone(), cause);
                leasesim_sim::phases::spawn(world, cause.key(), forgetter);
            }
        }
        let watcher = services::watch_expiries(world.clone());
        leasesim_sim::phases::spawn(world, "store", watcher);
    }

    fn faults_heal(world: &World<HolderLock>) {
        let _ = world;
    }

    fn liveness_ends(world: &World<HolderLock>, mark: ()) {
        let () = mark;
        let _ = world;
    }
}
