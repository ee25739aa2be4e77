//! How the work-items world drives its workers, and its end-of-run tally.
//!
//! Terminology:
//! - *driver*: one task per replica that calls `run()` on a jittered schedule and records
//!   each pass's start and end (notes `PassStarted`, `PassEnded` with the pass's report).
//!   A replica whose pass reported the run complete (the store counted no open item) has
//!   nothing left to do and stops driving; so does one whose worker was stopped or replaced.
//! - *tally*: as the liveness phase ends, the store's count of open, done and failed items
//!   and the first item still open (note `Tally`), for the liveness checker.

use std::rc::Rc;

use leasesim_events::OpSet;
use leasesim_events::ReplicaId;
use leasesim_sim::{Drive, LocalTask, World};
use work_items_worker::{RunEnd, RunError, RunReport};

use crate::events::{EndKind, Note, Op, PassCounts, StatusView, WorkItems};

/// How a `run()` call ended, as a note says it.
pub fn pass_end(result: &Result<RunReport, RunError>) -> (EndKind, PassCounts, Option<StatusView>) {
    let report = match result {
        Ok(report) => report,
        Err(RunError::AlreadyRunning) => {
            return (EndKind::AlreadyRunning, PassCounts::default(), None);
        }
    };
    let end = match report.end {
        RunEnd::StoppedBeforeStart => EndKind::StoppedBeforeStart,
        RunEnd::Complete => EndKind::Complete,
        RunEnd::Idle => EndKind::Idle,
        RunEnd::Deadline => EndKind::Deadline,
        RunEnd::Stopped => EndKind::Stopped,
        RunEnd::Unavailable(_) => EndKind::Unavailable,
    };
    let counts = PassCounts {
        done: report.done(),
        failed: report.failed(),
        released: report.released(),
        lost: report.lost(),
        abandoned: report.abandoned(),
    };
    let status = report.status.map(|s| StatusView {
        open: s.open,
        done: s.done,
        failed: s.failed,
    });
    (end, counts, status)
}

/// Calls `run()` on a jittered schedule until a pass reports the run complete or the worker
/// stopped, or the replica was restarted with a fresh worker (which has a driver of its own).
pub async fn run_replica(world: Rc<World<WorkItems>>, replica: ReplicaId) {
    let env = world.env();
    let state = world.replica(replica);
    let Some((worker, generation)) = state.worker() else {
        return;
    };
    let every = world.scenario().schedule.run_every_ms;
    for pass in 1.. {
        if !state.next_round(env, every, generation).await {
            return;
        }
        env.note_for(replica, Note::PassStarted { pass });
        let result = worker.run().await;
        let (end, counts, status) = pass_end(&result);
        env.note_for(
            replica,
            Note::PassEnded {
                pass,
                end,
                counts,
                status,
            },
        );
        if matches!(end, EndKind::StoppedBeforeStart | EndKind::Complete) {
            state.set_between_terms(true);
            return;
        }
    }
}

/// A replica's loop and the tally as the liveness phase ends.
impl Drive for WorkItems {
    /// Every call the core makes: a stop can land while any of them is in flight.
    const STOP_OPS: &'static [Op] = <Op as OpSet>::ALL;
    type HealMark = ();

    fn drive(world: Rc<World<WorkItems>>, replica: ReplicaId) -> LocalTask {
        Box::pin(run_replica(world, replica))
    }

    fn faults_heal(world: &World<WorkItems>) {
        let _ = world;
    }

    /// As the liveness phase ends: the store's count and the first item still open.
    fn liveness_ends(world: &World<WorkItems>, mark: ()) {
        let () = mark;
        if !world.profile().system.settle {
            return;
        }
        let (status, first_open) = {
            let services = world.services();
            (services.store.status(), services.store.first_open())
        };
        // invariant: an open item is named exactly when one is counted.
        debug_assert_eq!(status.open > 0, first_open.is_some());
        world.env().note(Note::Tally { status, first_open });
    }
}
