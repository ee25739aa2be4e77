//! The faults of a run, through madsim's own means.
//!
//! Terminology:
//! - *latency*: madsim's `net.send_latency` (`NetSim::update_config`), drawn per message (request and reply each):
//!   the workload's 1..5 ms one way.
//! - *lost reply*: `NetSim::hook_rpc_rsp` on each replica's node drops a share of the store's
//!   replies (the store applied the call; the worker's `call_timeout` answers `Timeout`).
//!   madsim's `net.packet_loss_rate` would lose requests and replies alike, so it stays 0.
//! - *pause*: `Handle::pause` / `Handle::resume` of a replica's node: its tasks are not polled
//!   meanwhile, its timers fire late, the store and the other replicas go on.
//! - *crash*: `Handle::kill` of a replica's node (every task dropped, mid-attempt), then
//!   `Handle::restart`, which runs the node's `init` again: a fresh worker.
//!
//! The workload (`holder-long-jobs`) has latency only; the rest are off unless asked for
//! (`--faults loss,pause,crash`), and are drawn in the safety phase from madsim's seeded
//! generator: 2 % of replies lost; pauses as leasesim's `holder-pauses` draws them (every
//! 0.5..2 s, with probability 0.6, one replica for 1.5..5 s); crashes every 3..8 s with
//! probability 0.3, one replica down for 0.5..2 s (leasesim has no crash to copy).

use std::ops::Range;
use std::time::Duration;

use madsim::net::NetSim;
use madsim::rand::{Rng, thread_rng};
use madsim::runtime::{Handle, NodeHandle};
use peers_common::ports::PeerTime;
use peers_common::workload;

use crate::time::MadsimTime;

/// Which faults beyond the workload's latency a run injects.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Faults {
    /// Share of the store's replies lost.
    pub loss: f64,
    pub pause: bool,
    pub crash: bool,
}

impl Faults {
    /// `loss`, `pause`, `crash`, comma-separated (`none`: the workload's).
    pub fn parse(text: &str) -> Result<Faults, String> {
        let mut faults = Faults::default();
        for name in text
            .split(',')
            .filter(|name| !name.is_empty() && *name != "none")
        {
            match name {
                "loss" => faults.loss = 0.02,
                "pause" => faults.pause = true,
                "crash" => faults.crash = true,
                other => return Err(format!("no fault `{other}` (loss, pause, crash)")),
            }
        }
        Ok(faults)
    }
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

/// Pauses and crashes replicas during the safety phase, as `faults` asks.
pub async fn inject(handle: &Handle, replicas: &[NodeHandle], faults: Faults, time: &MadsimTime) {
    let pauses = async {
        while faults.pause && time.now_ms() < workload::SAFETY_MS {
            madsim::time::sleep(Duration::from_millis(draw(500..2_000))).await;
            if thread_rng().gen_bool(0.6) {
                let node = replicas[thread_rng().gen_range(0..replicas.len())].id();
                handle.pause(node);
                madsim::time::sleep(Duration::from_millis(draw(1_500..5_000))).await;
                handle.resume(node);
            }
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
    futures::future::join(pauses, crashes).await;
}
