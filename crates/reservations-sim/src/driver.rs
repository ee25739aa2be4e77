//! How the reservation world drives its workers, and what it notes at the end.
//!
//! Terminology:
//! - *driver*: one task per replica. It calls `run()` once (the worker polls until it is
//!   stopped) and records the run's start and its report (notes `RunStarted`, `RunEnded`).
//! - *kill*: when the process switch trips (the `kill` fault, at a port's kill point), the
//!   driver drops the run future: nothing of it runs again, no release is sent. After
//!   `restart_ms` its supervisor calls `run()` again (a fresh process keeps nothing in memory;
//!   the claims it held simply expire).
//! - *second run*: the `second_run` fault, drawn once per run: a supervisor that takes the
//!   running worker for hung calls `run()` again while the first call is active, a drawn
//!   1 to 200 ms after it started, and notes how that call ended (`SecondRun`); the core
//!   refuses it at once.
//! - *metrics*: as the liveness phase ends, the store's metrics (note `Metrics`).

use std::pin::pin;
use std::rc::Rc;

use futures::future::{Either, select};
use leasesim_events::ReplicaId;
use leasesim_sim::{Drive, LocalTask, World};
use reservations_worker::{RunEnd, RunError, RunReport};

use crate::Reservations;
use crate::events::{EndView, Note, Op, ReportView};
use crate::ports::{AnyWorker, WorkerUnderTest};
use crate::services::Process;

fn count(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

/// A `run()` result as the `RunEnded` note carries it.
pub fn report_view(result: &Result<RunReport, RunError>) -> ReportView {
    let report = match result {
        Ok(report) => report.clone(),
        Err(RunError::AlreadyRunning) => RunReport::new(RunEnd::Stopped),
    };
    let end = match (result, report.end) {
        (Err(RunError::AlreadyRunning), _) => EndView::AlreadyRunning,
        (Ok(_), RunEnd::StoppedBeforeStart) => EndView::StoppedBeforeStart,
        (Ok(_), RunEnd::Stopped) => EndView::Stopped,
    };
    ReportView {
        end,
        polls: count(report.polls),
        claim_errors: count(report.claim_errors),
        claimed: count(report.claimed),
        expired: count(report.expired),
        already_done: count(report.already_done),
        not_eligible: count(report.not_eligible),
        retries: count(report.retries),
        dead_letters: count(report.dead_letters),
        dead_letter_errors: count(report.dead_letter_errors),
        release_errors: count(report.release_errors),
        abandoned: count(report.abandoned),
        max_claim_age_ms: count(report.max_claim_age_ms),
    }
}

/// The `second_run` fault of run `run` (see the module docs); never completes, so the run's
/// own end or a kill ends the driver's wait.
async fn second_run(world: &World<Reservations>, replica: ReplicaId, worker: &AnyWorker, run: u32) {
    let env = world.env();
    let p = world.profile().system.second_run;
    // Drawn only when the fault is on, so a scenario without it keeps its choices.
    if p > 0.0 && env.coin(p) {
        env.sleep(env.range(1, 200)).await;
        let result = worker.run().await;
        let end = report_view(&result).end;
        env.note_for(replica, Note::SecondRun { run, end });
    }
    std::future::pending::<()>().await;
}

async fn killed(process: &Process) {
    while !process.killed.get() {
        process.kill.changed().await;
    }
}

/// Runs the replica's worker until it reports it was stopped, restarting it after each kill,
/// or until the replica was restarted with a fresh worker (which has a driver of its own).
pub async fn run_replica(world: Rc<World<Reservations>>, replica: ReplicaId) {
    let env = world.env();
    let state = world.replica(replica);
    let Some((worker, generation)) = state.worker() else {
        return;
    };
    let process = world.services().process(replica);
    let every = world.scenario().schedule.run_every_ms;
    // The longest start delay is value 0, the simplest choice.
    env.sleep(every.max - env.range(0, every.max - every.min))
        .await;
    for run in 1.. {
        state.gate(env).await;
        if state.replaced_since(generation) {
            return;
        }
        env.note_for(replica, Note::RunStarted { run });
        let ended = {
            let running = pin!(worker.run());
            let second = pin!(second_run(&world, replica, &*worker, run));
            match select(running, select(pin!(killed(&process)), second)).await {
                Either::Left((result, _)) => Some(result),
                Either::Right(_) => None,
            }
        };
        state.set_between_terms(true);
        if let Some(result) = ended {
            let report = report_view(&result);
            env.note_for(replica, Note::RunEnded { run, report });
            return;
        }
        // The process died: its supervisor starts it again later (value 0: the longest wait).
        let restart = world.profile().system.restart_ms;
        env.sleep(restart.max - env.range(0, restart.max - restart.min))
            .await;
        process.killed.set(false);
        // invariant: a restarted process holds no claim it knows of.
        debug_assert_eq!(process.held.get(), 0);
    }
}

/// A replica's loop, the agents, and the store's metrics as the liveness phase ends.
impl Drive for Reservations {
    const STOP_OPS: &'static [Op] = &[Op::Claim, Op::Expire, Op::Release, Op::DeadLetter];
    type HealMark = ();

    fn drive(world: Rc<World<Reservations>>, replica: ReplicaId) -> LocalTask {
        Box::pin(run_replica(world, replica))
    }

    /// The agents are the system's world task: they start with the safety phase and place
    /// holds until the liveness phase ends (they are not a fault; healing does not stop them).
    fn start_faults(world: &Rc<World<Reservations>>) {
        leasesim_sim::phases::spawn(world, "agents", crate::agents::agents(world.clone()));
    }

    fn faults_heal(world: &World<Reservations>) {
        let _ = world;
    }

    /// As the liveness phase ends: the store's metrics.
    fn liveness_ends(world: &World<Reservations>, mark: ()) {
        let () = mark;
        let metrics = world.services().store.metrics(world.service_now_ms());
        world.env().note(Note::Metrics(metrics));
    }
}
