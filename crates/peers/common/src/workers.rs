//! The workers every side runs, by name: `correct` (the production core, `JobRunner`) and
//! each defective worker of the system crate (its `Engine` with one flaw on), on peer ports.
//!
//! Terminology:
//! - *worker*: anything with `run()` (one attempt) and `stop()`; [`PeerWorker`] boxes both so
//!   a driver holds either kind.
//! - *defective worker*: an entry of `leasesim_holder_lock::defects::DEFECTS`; its flaws are
//!   port-level or core-level, so each runs on any executor.

use std::rc::Rc;

use futures::future::LocalBoxFuture;
use holder_lock_worker::{AttemptReport, JobRunner, RunError};
use leasesim_holder_lock::defects::{DEFECTS, engine::Engine};

use crate::ports::{PeerClock, PeerJob, PeerStore, PeerTime, PeerTokens, Replica, Transport};
use crate::workload;

/// One attempt's outcome.
pub type Report = Result<AttemptReport, RunError>;

/// A worker a peer's driver runs.
pub trait PeerWorker {
    fn run(&self) -> LocalBoxFuture<'_, Report>;
    fn stop(&self) -> LocalBoxFuture<'_, ()>;
}

type Ports<T, X> = (PeerClock<T>, PeerStore<T, X>, PeerTokens<T>, PeerJob<T>);

impl<T: PeerTime, X: Transport> PeerWorker
    for JobRunner<PeerClock<T>, PeerStore<T, X>, PeerTokens<T>, PeerJob<T>>
{
    fn run(&self) -> LocalBoxFuture<'_, Report> {
        Box::pin(JobRunner::run(self))
    }
    fn stop(&self) -> LocalBoxFuture<'_, ()> {
        Box::pin(JobRunner::stop(self))
    }
}

impl<T: PeerTime, X: Transport> PeerWorker
    for Engine<PeerClock<T>, PeerStore<T, X>, PeerTokens<T>, PeerJob<T>>
{
    fn run(&self) -> LocalBoxFuture<'_, Report> {
        Box::pin(Engine::run(self))
    }
    fn stop(&self) -> LocalBoxFuture<'_, ()> {
        Box::pin(Engine::stop(self))
    }
}

/// The names of every defective worker, in the design's order.
pub fn defective() -> Vec<&'static str> {
    DEFECTS.iter().map(|defect| defect.info.name).collect()
}

fn ports<T: PeerTime, X: Transport>(replica: &Rc<Replica<T>>, transport: Rc<X>) -> Ports<T, X> {
    (
        PeerClock(replica.clone()),
        PeerStore {
            replica: replica.clone(),
            transport,
        },
        PeerTokens(replica.clone()),
        PeerJob(replica.clone()),
    )
}

/// The worker called `name` on `replica`'s ports (`None`: no such worker).
pub fn build<T: PeerTime, X: Transport>(
    name: &str,
    replica: &Rc<Replica<T>>,
    transport: Rc<X>,
) -> Option<Rc<dyn PeerWorker>> {
    let (clock, store, tokens, job) = ports(replica, transport);
    if name == "correct" {
        let core = JobRunner::new(workload::claim(), clock, store, tokens, job)
            .expect("the workload's claim is valid");
        return Some(Rc::new(core));
    }
    let defect = DEFECTS.iter().find(|defect| defect.info.name == name)?;
    let flaws = (defect.build)(replica.id);
    let engine = Engine::new(workload::claim(), (clock, store, tokens, job), flaws)
        .expect("the workload's claim is valid");
    Some(Rc::new(engine))
}
