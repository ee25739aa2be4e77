//! One madsim run of the workload: a runtime seeded with the run's seed, the store node, three
//! worker nodes, and the supervisor that injects madsim's faults and ends the run.
//!
//! Terminology:
//! - *run*: one `Runtime::with_seed_and_config(seed, config)` and its `block_on`: madsim draws
//!   latencies, losses and its scheduling order from the seed; the peers' own draws (jobs,
//!   gaps, token parts) come from the replicas' seeded generators.
//! - *supervisor*: the future given to `block_on`, madsim's "main node": it creates the nodes,
//!   injects faults through the runtime `Handle`, and waits for every replica's life to end
//!   or the first violation, whichever comes first.
//! - *store life*: the store node's `init` starts an empty store; `Handle::kill` then
//!   `Handle::restart` of the node (a store restart) drops the old life's tasks and keys, its
//!   `StoreNode` reports what it held as lost, and `init` runs again.
//! - *node life*: what a node's `init` closure starts; madsim runs it again on `restart`, so
//!   a restarted replica starts a fresh worker (its generator reseeded with its life number).
//! - *run context*: the recorder and clock of the current run, in a thread-local: madsim
//!   requires a node's `init` closure to be `Send + Sync`, and the shared recorder is
//!   single-threaded (`Rc`), so a node's life fetches it when it starts. madsim runs every
//!   node on the calling thread, so the node sees the run that created it.

use std::cell::RefCell;
use std::net::{IpAddr, Ipv4Addr};
use std::rc::Rc;
use std::time::Duration;

use futures::StreamExt;
use futures::channel::mpsc;
use leasesim_events::ReplicaId;
use madsim::runtime::{Handle, NodeHandle, Runtime};
use peers_common::ports::{PeerTime, Replica};
use peers_common::recorder::{Recorder, StoreNode, Verdict};
use peers_common::{driver, workers, workload};

use crate::faults::{self, Faults};
use crate::store::{self, MadsimTransport};
use crate::time::MadsimTime;

/// After the stop, how long the supervisor waits for the replicas before it ends the run
/// anyway (the checkers' liveness bound then speaks).
const GRACE_MS: u64 = workload::ATTEMPT_BOUND_MS;

/// What every node of the current run shares (see the module docs).
#[derive(Clone)]
struct RunContext {
    recorder: Recorder,
    time: MadsimTime,
    seed: u64,
    /// Node lives started so far, per replica (1 at the first start).
    lives: Rc<RefCell<Vec<u64>>>,
}

thread_local! {
    static RUN: RefCell<Option<RunContext>> = const { RefCell::new(None) };
}

fn current_run() -> RunContext {
    RUN.with(|run| run.borrow().clone())
        .expect("a node starts inside its run")
}

/// What one run is: its seed, its worker, its faults, and whether to keep the trace.
#[derive(Clone, Copy, Debug)]
pub struct RunSpec {
    pub seed: u64,
    pub worker: &'static str,
    pub faults: Faults,
    pub keep_trace: bool,
}

/// Runs `spec` to its end and judges it.
pub fn run(spec: RunSpec) -> Verdict {
    let runtime = Runtime::with_seed_and_config(spec.seed, madsim::Config::default());
    runtime.block_on(supervise(spec))
}

/// The supervisor (see the module docs), in the runtime seeded with `spec.seed`.
pub async fn supervise(spec: RunSpec) -> Verdict {
    faults::configure_network();
    let time = MadsimTime::current();
    let recorder = Recorder::new(spec.keep_trace);
    let lives = Rc::new(RefCell::new(vec![0; usize::from(workload::REPLICAS)]));
    let context = RunContext {
        recorder: recorder.clone(),
        time: time.clone(),
        seed: spec.seed,
        lives,
    };
    RUN.with(|run| *run.borrow_mut() = Some(context));
    let handle = Handle::current();
    let store = handle
        .create_node()
        .name("store")
        .ip(IpAddr::V4(store::STORE_IP))
        .init(|| async {
            let context = current_run();
            let clock = context.time.clone();
            let node = StoreNode::new(context.recorder, move || clock.now_ms());
            store::store_node(node, context.time).await;
        })
        .build();
    let (done, mut ended) = mpsc::unbounded();
    let replicas: Vec<NodeHandle> = (0..workload::REPLICAS)
        .map(|id| replica_node(&handle, ReplicaId(id), spec.worker, done.clone()))
        .collect();
    faults::lose_replies(&replicas, &spec.faults);
    let lives_ended = async {
        for _ in 0..workload::REPLICAS {
            ended.next().await;
        }
    };
    let limit = Duration::from_millis(workload::STOP_AT_MS + GRACE_MS);
    let faulted = futures::future::join(
        lives_ended,
        faults::inject(&handle, &store, &replicas, spec.faults, &recorder),
    );
    // The run ends at its first violation, as a failing assertion ends a `#[madsim::test]`
    // (and as leasesim's halting checkers and the turmoil side end theirs), or when every
    // replica's life ended, or at the limit.
    let to_the_end = std::pin::pin!(madsim::time::timeout(limit, faulted));
    let violated = std::pin::pin!(recorder.first_violation());
    futures::future::select(to_the_end, violated).await;
    let verdict = recorder.finish(time.now_ms());
    wind_down(&handle, std::iter::once(&store).chain(&replicas)).await;
    RUN.with(|run| *run.borrow_mut() = None);
    verdict
}

/// Kills every node and lets the executor drop their tasks: a task still waiting (the
/// store's service, a replica stuck past the limit) would otherwise keep its node's state,
/// and the run's recorder, alive after the runtime is gone.
async fn wind_down<'a>(handle: &Handle, nodes: impl Iterator<Item = &'a NodeHandle>) {
    for node in nodes {
        handle.kill(node.id());
    }
    madsim::time::sleep(Duration::from_millis(1)).await;
}

/// Creates the node of replica `id`: its life runs `worker` until the workload stops it.
fn replica_node(
    handle: &Handle,
    id: ReplicaId,
    worker: &'static str,
    done: mpsc::UnboundedSender<u16>,
) -> NodeHandle {
    let ip = IpAddr::V4(Ipv4Addr::new(
        10,
        0,
        1,
        u8::try_from(id.0 + 1).expect("few replicas"),
    ));
    handle
        .create_node()
        .name(id.owner_id())
        .ip(ip)
        .init(move || {
            let done = done.clone();
            async move {
                replica_life(id, worker).await;
                let _ = done.unbounded_send(id.0);
            }
        })
        .build()
}

/// One life of a replica's node: its ports on madsim, the worker, the shared driver.
async fn replica_life(id: ReplicaId, worker: &'static str) {
    let context = current_run();
    let life = {
        let mut lives = context.lives.borrow_mut();
        lives[usize::from(id.0)] += 1;
        lives[usize::from(id.0)]
    };
    let seed = context.seed ^ (life - 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let replica = Replica::new(id, context.time, context.recorder, seed);
    let transport = Rc::new(MadsimTransport::bind().await);
    let worker = workers::build(worker, &replica, transport).expect("a known worker");
    driver::replica_life(replica, worker).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(worker: &'static str, seed: u64) -> RunSpec {
        RunSpec {
            seed,
            worker,
            faults: Faults::default(),
            keep_trace: false,
        }
    }

    // madsim's way: `MADSIM_TEST_NUM=100 cargo test` runs 100 seeds; a failing one prints
    // `MADSIM_TEST_SEED=N` to reproduce it.
    #[madsim::test]
    async fn the_correct_worker_holds_every_invariant() {
        let seed = Handle::current().seed();
        let faults = Faults {
            loss: 0.02,
            pause: true,
            store_restart: true,
            crash: false,
        };
        let verdict = supervise(RunSpec {
            faults,
            ..spec("correct", seed)
        })
        .await;
        assert_eq!(verdict.violation, None);
    }

    #[madsim::test]
    async fn plain_delete_frees_a_rivals_claim_and_the_run_ends_there() {
        let seed = Handle::current().seed();
        let verdict = supervise(RunSpec {
            keep_trace: true,
            ..spec("plain-delete", seed)
        })
        .await;
        let caught = verdict.violation.expect("a violation");
        assert!(caught.starts_with("delete-own-claim"), "{caught}");
        // The end phase follows the violation, long before the replicas' stop at 50 s.
        let end = verdict.trace.last().expect("a trace");
        assert!(end.contains("Phase(End)"), "{end}");
        let end_ms: u64 = end
            .strip_prefix("t=")
            .and_then(|rest| rest.trim_start().split("ms").next())
            .and_then(|ms| ms.parse().ok())
            .expect("a stamped line");
        assert!(end_ms < workload::STOP_AT_MS, "{end}");
    }

    #[test]
    fn a_seed_replays_the_same_history() {
        let (first, again) = (run(spec("correct", 7)), run(spec("correct", 7)));
        assert_eq!(
            (first.trace_hash, first.events),
            (again.trace_hash, again.events)
        );
        assert_ne!(first.trace_hash, run(spec("correct", 8)).trace_hash);
    }
}
