//! The toy worker on the simulated world: its port, the worker trait the world drives, the
//! workers by name, and the driver of one replica.
//!
//! Terminology:
//! - *port*: [`SimCounter`], the core's [`CounterPort`] built on the shared
//!   `leasesim_sim::Port` of one replica (its clock, its pauses, the faulty network).
//! - *worker under test*: [`AnyWorker`], what the world calls: `run()` and `stop()`.
//! - *factory*: builds one worker per replica from its [`WorkerPorts`] (at start and on restart).
//! - *driver*: calls `run()` on a jittered schedule, marking the replica between rounds (so a
//!   stop `at = "between-terms"` can land there) and noting each round's start and end.

use std::rc::Rc;

use futures::future::LocalBoxFuture;
use leasesim_events::ReplicaId;
use leasesim_sim::{
    Drive, LocalTask, Port, WorkerFactory, WorkerInfo, WorkerUnderTest, Workers, World,
};

use super::events::{Answer, Note, Op, Request, RoundEnd, Toy};
use super::worker::{Bumper, CallError, CounterPort, Flaw};

/// What a toy worker is built from.
pub struct WorkerPorts {
    pub counter: SimCounter,
}

/// The counter service port of one replica.
#[derive(Clone)]
pub struct SimCounter(Port<Toy>);

impl CounterPort for SimCounter {
    async fn claim(&self) -> Result<Option<u64>, CallError> {
        match self.0.call(Request::Claim).await {
            Answer::Granted(token) => Ok(Some(token)),
            Answer::Busy => Ok(None),
            Answer::Failed(_) => Err(CallError::Network),
            other => unreachable!("claim answered {other:?}"),
        }
    }

    async fn bump(&self, token: u64) -> Result<u64, CallError> {
        match self.0.call(Request::Bump { token }).await {
            Answer::Bumped(count) => Ok(count),
            Answer::Fenced => Err(CallError::Fenced),
            Answer::Failed(_) => Err(CallError::Network),
            other => unreachable!("bump answered {other:?}"),
        }
    }
}

/// Any toy worker the world can drive.
pub type AnyWorker = leasesim_sim::WorkerOf<Toy>;

impl<P: CounterPort> WorkerUnderTest for Bumper<P> {
    type Report = RoundEnd;

    fn run(&self) -> LocalBoxFuture<'_, RoundEnd> {
        Box::pin(Bumper::run(self))
    }

    fn stop(&self) -> LocalBoxFuture<'_, ()> {
        Box::pin(Bumper::stop(self))
    }
}

/// The toy's workers on the world's port.
impl Workers for Toy {
    type Report = RoundEnd;
    type Ports = WorkerPorts;

    /// The ports of `replica`, built on the world.
    fn ports(world: &Rc<World<Toy>>, replica: ReplicaId) -> WorkerPorts {
        WorkerPorts {
            counter: SimCounter(Port::new(world.clone(), replica)),
        }
    }

    fn workers() -> Vec<WorkerInfo> {
        WORKERS.to_vec()
    }

    /// The factory of the worker called `name`.
    fn factory(name: &str) -> Option<Rc<WorkerFactory<Toy>>> {
        let flaw = match name {
            "correct" => None,
            "blind-bump" => Some(Flaw::BlindBump),
            "double-bump" => Some(Flaw::DoubleBump),
            _ => return None,
        };
        Some(Rc::new(move |ports: WorkerPorts| {
            Rc::new(Bumper::new(ports.counter, flaw)) as Rc<AnyWorker>
        }))
    }
}

/// The toy's workers: `correct` first.
pub const WORKERS: &[WorkerInfo] = &[
    WorkerInfo {
        name: "correct",
        description: "claims, then bumps once with the granted token",
        caught_by: &[],
        counterexample: None,
    },
    WorkerInfo {
        name: "blind-bump",
        description: "after a refused claim, bumps with the last token it was ever granted",
        caught_by: &["claimed-bump"],
        counterexample: None,
    },
    WorkerInfo {
        name: "double-bump",
        description: "bumps twice under one claim",
        caught_by: &["claimed-bump"],
        counterexample: None,
    },
];

/// Calls `run()` on a jittered schedule until a round reports the worker stopped, or the
/// replica was restarted with a fresh worker (which has a driver of its own).
pub async fn run_replica(world: Rc<World<Toy>>, replica: ReplicaId) {
    let env = world.env();
    let state = world.replica(replica);
    let Some((worker, generation)) = state.worker() else {
        return;
    };
    let every = world.scenario().schedule.run_every_ms;
    for round in 1.. {
        if !state.next_round(env, every, generation).await {
            return;
        }
        env.note_for(replica, Note::RoundStarted { round });
        let end = worker.run().await;
        env.note_for(replica, Note::RoundEnded { round, end });
        if end == RoundEnd::Stopped {
            state.set_between_terms(true);
            return;
        }
    }
}
/// A replica's loop, and the counter's tally as the liveness phase ends.
impl Drive for Toy {
    const STOP_OPS: &'static [Op] = &[Op::Claim, Op::Bump];
    type HealMark = ();

    fn drive(world: Rc<World<Toy>>, replica: ReplicaId) -> LocalTask {
        Box::pin(run_replica(world, replica))
    }

    fn faults_heal(world: &World<Toy>) {
        let _ = world;
    }

    fn liveness_ends(world: &World<Toy>, mark: ()) {
        let () = mark;
        let count = world.services().count();
        world.env().note(Note::Tally { count });
    }
}
