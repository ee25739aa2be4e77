//! The faults of a run, through madsim's own means.
//!
//! Terminology:
//! - *latency*: madsim's `net.send_latency` (`NetSim::update_config`), drawn per message
//!   (request and reply each): the workload's 1..5 ms one way.
//! - *lost reply*: `NetSim::hook_rpc_rsp` on each replica's node drops a share of the store's
//!   replies (the store applied the call; the worker's `call_timeout` answers `Timeout`).
//!   madsim's `net.packet_loss_rate` would lose requests and replies alike, so it stays 0.
//! - *pause*: `Handle::pause` / `Handle::resume` of a replica's node: its tasks are not polled
//!   meanwhile, its timers fire late, the store and the other replicas go on. Drawn as
//!   leasesim's pause tickers draw them: each replica its own ticker, every `every_ms`, with
//!   `probability`, paused for `duration_ms`, safety phase only; each pause is recorded
//!   (`Paused { until_ms }`, `Resumed`), as leasesim's world records it, so the checkers know
//!   which attempts ran paused.
//! - *store restart*: `Handle::kill` then `Handle::restart` of the store node, which drops
//!   every task of its life (the keys with them; the `StoreNode` reports what it held as
//!   lost) and runs its `init` again: an empty store on the same address. Drawn as
//!   leasesim's `[faults.store_restart]` ticker draws it: every `every_ms`, with
//!   `probability`, safety phase only. A call the store node had taken in but not answered at
//!   that instant would lose its answer (the caller's timeout answers); leasesim's restart
//!   falls between two calls.
//! - *crash*: `Handle::kill` of a replica's node (every task dropped, mid-attempt), then
//!   `Handle::restart`, which runs the node's `init` again: a fresh worker.
//!
//! `holder-long-jobs` has latency only; `holder-slow-release+lost-replies` loses the workload's
//! share of replies and pauses with the workload's settings; `holder-volatile+restarts-only`
//! restarts the store with the workload's settings. Beyond the workload, on request
//! (`--faults loss,pause,restart,crash`), drawn in the safety phase from madsim's seeded
//! generator: 2 % of replies lost; pauses with the workload's settings or else
//! `holder-pauses`'s (every 0.5..2 s, with probability 0.6, for 1.5..5 s); store restarts with
//! the workload's settings or else `holder-volatile`'s (every 3..8 s, probability 0.2); replica
//! crashes every 3..8 s with probability 0.3, one replica down for 0.5..2 s (leasesim's
//! holder-lock has no replica crash to copy, and no workload uses them: a restarted replica's
//! releases are credited to its old life, failing `release-reported`).

use std::ops::Range;
use std::time::Duration;

use leasesim_events::ReplicaId;
use madsim::net::NetSim;
use madsim::rand::{Rng, thread_rng};
use madsim::runtime::{Handle, NodeHandle};
use peers_common::ports::PeerTime;
use peers_common::recorder::Recorder;
use peers_common::workload::{self, Pauses, Restarts};

use crate::time::MadsimTime;

/// Which faults beyond the workload's latency a run injects.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Faults {
    /// Share of the store's replies lost.
    pub loss: f64,
    pub pause: bool,
    pub store_restart: bool,
    pub crash: bool,
}

impl Faults {
    /// `loss`, `pause`, `restart`, `crash`, comma-separated (`none`: the workload's).
    pub fn parse(text: &str) -> Result<Faults, String> {
        let mut faults = Faults::of_workload();
        for name in text
            .split(',')
            .filter(|name| !name.is_empty() && *name != "none")
        {
            match name {
                "loss" => faults.loss = 0.02,
                "pause" => faults.pause = true,
                "restart" => faults.store_restart = true,
                "crash" => faults.crash = true,
                other => {
                    return Err(format!("no fault `{other}` (loss, pause, restart, crash)"));
                }
            }
        }
        Ok(faults)
    }
}

impl Faults {
    /// The current workload's faults: its share of lost replies, its pauses, its store
    /// restarts.
    pub fn of_workload() -> Faults {
        let workload = workload::current();
        Faults {
            loss: workload.reply_lost,
            pause: workload.pauses.is_some(),
            store_restart: workload.store_restarts.is_some(),
            crash: false,
        }
    }
}

/// The pauses a run with `pause` draws: the workload's, else `holder-pauses`'s.
fn pauses() -> Pauses {
    workload::current().pauses.unwrap_or(Pauses {
        probability: 0.6,
        every_ms: (500, 2_000),
        duration_ms: (1_500, 5_000),
    })
}

/// The store restarts a run with `store_restart` draws: the workload's, else
/// `holder-volatile`'s.
fn restarts() -> Restarts {
    workload::current().store_restarts.unwrap_or(Restarts {
        probability: 0.2,
        every_ms: (3_000, 8_000),
    })
}

/// Sets the running simulation's network to the workload's latency.
pub fn configure_network() {
    let (min, max) = workload::LATENCY_MS;
    NetSim::current().update_config(|net| {
        // Half-open and drawn in ns: below `max + 1` ms, which reads `max` ms rounded down.
        net.send_latency = Duration::from_millis(min)..Duration::from_millis(max + 1);
    });
}

/// Drops a share `faults.loss` of the store's replies to each of `replicas`.
pub fn lose_replies(replicas: &[NodeHandle], faults: &Faults) {
    if faults.loss <= 0.0 {
        return;
    }
    let (net, share) = (NetSim::current(), faults.loss);
    for node in replicas {
        net.hook_rpc_rsp::<Vec<u8>>(node.id(), move |_| !thread_rng().gen_bool(share));
    }
}

fn draw(range: Range<u64>) -> u64 {
    thread_rng().gen_range(range)
}

/// A whole number of ms in `min..=max`.
fn draw_ms((min, max): (u64, u64)) -> u64 {
    thread_rng().gen_range(min..=max)
}

/// What a pause ticker acts on: the runtime, the replica's node and id, the run's recorder
/// and clock.
pub struct Ticker<'a> {
    pub handle: &'a Handle,
    pub node: &'a NodeHandle,
    pub id: ReplicaId,
    pub recorder: &'a Recorder,
    pub time: &'a MadsimTime,
}

/// One replica's pause ticker (see the module docs), until the safety phase ends.
async fn pauser(ticker: Ticker<'_>, pauses: Pauses) {
    let (time, node) = (ticker.time, ticker.node.id());
    loop {
        madsim::time::sleep(Duration::from_millis(draw_ms(pauses.every_ms))).await;
        if time.now_ms() >= workload::SAFETY_MS {
            return;
        }
        if !thread_rng().gen_bool(pauses.probability) {
            continue;
        }
        let until_ms = time.now_ms() + draw_ms(pauses.duration_ms);
        ticker.recorder.paused(ticker.id, until_ms, time.now_ms());
        ticker.handle.pause(node);
        madsim::time::sleep(Duration::from_millis(until_ms - time.now_ms())).await;
        ticker.handle.resume(node);
        ticker.recorder.resumed(ticker.id, time.now_ms());
    }
}

/// The store's restart ticker (see the module docs), until the safety phase ends.
async fn restarter(handle: &Handle, store: &NodeHandle, restarts: Restarts) {
    let time = MadsimTime::current();
    loop {
        madsim::time::sleep(Duration::from_millis(draw_ms(restarts.every_ms))).await;
        if time.now_ms() >= workload::SAFETY_MS {
            return;
        }
        if thread_rng().gen_bool(restarts.probability) {
            // kill first: it closes the node's sockets, so the next life can bind its address.
            handle.kill(store.id());
            handle.restart(store.id());
        }
    }
}

/// Pauses and crashes replicas and restarts the store during the safety phase, as `faults`
/// asks.
pub async fn inject(
    handle: &Handle,
    store: &NodeHandle,
    replicas: &[NodeHandle],
    faults: Faults,
    recorder: &Recorder,
) {
    let time = &MadsimTime::current();
    let tickers = replicas.iter().enumerate().map(|(index, node)| {
        let id = ReplicaId(u16::try_from(index).expect("few replicas"));
        let ticker = Ticker {
            handle,
            node,
            id,
            recorder,
            time,
        };
        pauser(ticker, pauses())
    });
    let pauses = async {
        if faults.pause {
            futures::future::join_all(tickers).await;
        }
    };
    let crashes = async {
        while faults.crash && time.now_ms() < workload::SAFETY_MS {
            madsim::time::sleep(Duration::from_millis(draw(3_000..8_000))).await;
            if thread_rng().gen_bool(0.3) {
                let node = replicas[thread_rng().gen_range(0..replicas.len())].id();
                handle.kill(node);
                madsim::time::sleep(Duration::from_millis(draw(500..2_000))).await;
                handle.restart(node);
            }
        }
    };
    let restarts = async {
        if faults.store_restart {
            restarter(handle, store, restarts()).await;
        }
    };
    futures::future::join3(pauses, crashes, restarts).await;
}
