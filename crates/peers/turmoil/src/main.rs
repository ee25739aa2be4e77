//! holder-lock under turmoil: the store as a turmoil host, each replica a turmoil client
//! running the production core (or a defective worker) with its store port over
//! `turmoil::net::UdpSocket` and its timers on `tokio::time`.
//!
//! Terminology:
//! - *store host*: `store`, a UDP server on port [`STORE_PORT`] applying each request frame
//!   to the shared `StoreNode` (the system crate's `ClaimStore`) at turmoil's virtual time.
//! - *replica client*: `r1`..`r3`, each a `Sim::client`: one UDP socket, a task receiving
//!   answers and handing each to its waiting call by call id, and the replica's life
//!   (driver and stop, `peers_common::driver`). The run ends when every client returned.
//! - *faults*: latency: turmoil's per-message latency between [`LATENCY_MS`] bounds (turmoil
//!   draws it from an exponential curve inside the range, not uniformly), plus the shared
//!   store port's slow legs when the workload has slow operations. *Lost reply*: turmoil's
//!   `fail_rate` loses messages on a link in both directions, requests too, so the store host
//!   applies the call and withholds its reply itself, with the workload's probability drawn
//!   from the store's own seeded stream ([`STORE_STREAM`]). *Store restart*: `Sim::bounce`
//!   of the store host between two steps, drawn as leasesim's `[faults.store_restart]` ticker
//!   draws it (every `every_ms`, with `probability`, safety phase only) from its own stream
//!   ([`RESTART_STREAM`]): the host's software is dropped (its `StoreNode` reports the keys it
//!   held as lost, stamped with the simulation's elapsed time as the step loop last read it:
//!   inside a bounce no tokio runtime is entered, so turmoil's own clock would read the wall
//!   clock) and started again with an empty store. Pauses turmoil cannot express; see
//!   [`cannot_express`] for the others.
//! - *seed*: `Builder::rng_seed` seeds turmoil's network draws; the workload's own draws
//!   (jobs, gaps, tokens) come from per-replica `peers_common::rng::Rng` streams of the same
//!   seed.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::rc::Rc;
use std::time::Duration;

use leasesim_events::ReplicaId;
use leasesim_holder_lock::events::Answer;
use peers_common::cli::{self, Side};
use peers_common::driver::replica_life;
use peers_common::ports::{PeerTime, Replica, Transport};
use peers_common::recorder::{Recorder, StoreNode, Verdict};
use peers_common::rng::Rng;
use peers_common::workload::{self, CALL_TIMEOUT_MS, LATENCY_MS, REPLICAS, Restarts};
use peers_common::{wire, workers};
use tokio::sync::oneshot;
use turmoil::net::UdpSocket;

const STORE_PORT: u16 = 9000;
/// The store host's generator stream (the replicas' are 1..=3): which replies it loses.
const STORE_STREAM: u64 = 100;
/// The run's generator stream that draws the store restarts.
const RESTART_STREAM: u64 = 101;

/// Turmoil's virtual time, as every host sees it, and `tokio::time` timers.
#[derive(Clone, Copy)]
struct TurmoilTime;

impl PeerTime for TurmoilTime {
    fn now_ms(&self) -> u64 {
        let elapsed = turmoil::sim_elapsed().expect("inside the simulation");
        u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
    }

    fn sleep(&self, ms: u64) -> impl Future<Output = ()> {
        tokio::time::sleep(Duration::from_millis(ms))
    }
}

/// A replica's UDP socket and its calls waiting for answers, by call id.
struct UdpTransport {
    socket: UdpSocket,
    waiting: RefCell<BTreeMap<u64, oneshot::Sender<Answer>>>,
}

impl Transport for UdpTransport {
    async fn round_trip(&self, call: u64, frame: [u8; wire::REQUEST_LEN]) -> Option<Answer> {
        let (sender, receiver) = oneshot::channel();
        self.waiting.borrow_mut().insert(call, sender);
        let store = (turmoil::lookup("store"), STORE_PORT);
        if self.socket.send_to(&frame, store).await.is_err() {
            self.waiting.borrow_mut().remove(&call);
            return None;
        }
        let timeout = Duration::from_millis(CALL_TIMEOUT_MS);
        let answer = tokio::time::timeout(timeout, receiver).await;
        self.waiting.borrow_mut().remove(&call);
        answer.ok().and_then(Result::ok)
    }
}

impl UdpTransport {
    /// Hands each answer to its waiting call (an answer nobody waits for is dropped).
    async fn receive_answers(&self) {
        let mut buffer = [0u8; 64];
        while let Ok((len, _)) = self.socket.recv_from(&mut buffer).await {
            let Some((call, answer)) = wire::decode_answer(&buffer[..len]) else {
                continue;
            };
            if let Some(sender) = self.waiting.borrow_mut().remove(&call) {
                let _ = sender.send(answer);
            }
        }
    }
}

/// One life of the store host (`life` counts from 0; a bounce starts the next): applies every
/// request frame it receives and answers it (but for the replies the workload loses).
/// `stepped_ms`: the simulation's elapsed ms as the step loop last read it (the clock of the
/// store's drop).
async fn store_host(
    recorder: Recorder,
    seed: u64,
    life: u64,
    stepped_ms: Rc<Cell<u64>>,
) -> turmoil::Result {
    let socket = UdpSocket::bind((IpAddr::V4(Ipv4Addr::UNSPECIFIED), STORE_PORT)).await?;
    let mut node = StoreNode::new(recorder, move || stepped_ms.get());
    let mut losses = Rng::new(
        seed ^ life.wrapping_mul(0x9E37_79B9_7F4A_7C15),
        STORE_STREAM,
    );
    let lost = workload::current().reply_lost;
    let mut buffer = [0u8; 64];
    loop {
        let (len, from) = socket.recv_from(&mut buffer).await?;
        let Some((call, replica, request)) = wire::decode_request(&buffer[..len]) else {
            continue;
        };
        let answer = node.apply(replica, call, request, TurmoilTime.now_ms());
        if lost > 0.0 && losses.coin(lost) {
            continue;
        }
        socket
            .send_to(&wire::encode_answer(call, &answer), from)
            .await?;
    }
}

/// A replica client: its socket, its answer receiver, and its worker's life.
async fn replica_client(worker: String, replica: Rc<Replica<TurmoilTime>>) -> turmoil::Result {
    let socket = UdpSocket::bind((IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0)).await?;
    let transport = Rc::new(UdpTransport {
        socket,
        waiting: RefCell::new(BTreeMap::new()),
    });
    let receiver = tokio::task::spawn_local({
        let transport = transport.clone();
        async move { transport.receive_answers().await }
    });
    let worker = workers::build(&worker, &replica, transport).expect("a known worker");
    replica_life(replica, worker).await;
    receiver.abort();
    Ok(())
}

/// The simulation of one seed: the workload's latency, a run long enough for the workload.
fn simulation<'a>(seed: u64) -> turmoil::Sim<'a> {
    turmoil::Builder::new()
        .rng_seed(seed)
        .tick_duration(Duration::from_millis(1))
        .simulation_duration(Duration::from_secs(120))
        .min_message_latency(Duration::from_millis(LATENCY_MS.0))
        .max_message_latency(Duration::from_millis(LATENCY_MS.1))
        .build()
}

/// The store's restart ticker: the workload's restarts, when its next tick falls, and what
/// draws it.
struct Restarter {
    restarts: Restarts,
    next_ms: u64,
    rng: Rng,
}

impl Restarter {
    fn new(seed: u64) -> Option<Restarter> {
        let restarts = workload::current().store_restarts?;
        let mut rng = Rng::new(seed, RESTART_STREAM);
        let next_ms = rng.range(restarts.every_ms.0, restarts.every_ms.1);
        Some(Restarter {
            restarts,
            next_ms,
            rng,
        })
    }

    /// Bounces the store host if a tick fell by `now_ms` and it strikes.
    fn tick(&mut self, sim: &mut turmoil::Sim<'_>, now_ms: u64) {
        if now_ms < self.next_ms || self.next_ms >= workload::SAFETY_MS {
            return;
        }
        if self.rng.coin(self.restarts.probability) {
            sim.bounce("store");
        }
        let (min, max) = self.restarts.every_ms;
        self.next_ms += self.rng.range(min, max);
    }
}

/// The simulation's elapsed time in whole ms.
fn elapsed_ms(sim: &turmoil::Sim<'_>) -> u64 {
    u64::try_from(sim.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// One run of `worker` with `seed`, judged; ends at the first violation, as leasesim does.
fn run_once(worker: &str, seed: u64, keep: bool) -> Verdict {
    let recorder = Recorder::new(keep);
    let mut sim = simulation(seed);
    let store_recorder = recorder.clone();
    let lives = Rc::new(Cell::new(0u64));
    let stepped_ms = Rc::new(Cell::new(0u64));
    let store_clock = stepped_ms.clone();
    sim.host("store", move || {
        let life = lives.replace(lives.get() + 1);
        store_host(store_recorder.clone(), seed, life, store_clock.clone())
    });
    let mut restarter = Restarter::new(seed);
    for index in 0..REPLICAS {
        let id = ReplicaId(index);
        let replica = Replica::new(id, TurmoilTime, recorder.clone(), seed);
        sim.client(id.to_string(), replica_client(worker.to_string(), replica));
    }
    loop {
        let finished = sim.step().expect("the simulation runs");
        if finished || recorder.violated() {
            break;
        }
        stepped_ms.set(elapsed_ms(&sim));
        if let Some(restarter) = restarter.as_mut() {
            restarter.tick(&mut sim, stepped_ms.get());
        }
    }
    let end_ms = elapsed_ms(&sim);
    recorder.finish(end_ms)
}

/// What turmoil cannot express of the faults leasesim injects (`holder-long-jobs` itself has
/// only latency).
fn cannot_express() -> Vec<String> {
    let workload = workload::current();
    let pause = "process pause: turmoil has no way to freeze one host's tasks and timers while \
                 the others run (hold() stops messages, not the process)";
    let mut items = vec![match workload.pauses {
        Some(_) => {
            format!("{pause}: this workload's pauses are left out, turmoil runs it without them")
        }
        None => pause.to_string(),
    }];
    if workload.reply_lost > 0.0 {
        items.push(
            "a lost reply alone: fail_rate loses messages on a link both ways (requests too), \
             so the store host applies the call and withholds its reply itself (a seeded draw)"
                .into(),
        );
    } else {
        items.push(
            "request lost vs reply lost: fail_rate drops messages on a link without saying \
             which leg; the recorder sees only a timeout"
                .into(),
        );
    }
    if workload.slow_ms.is_some() {
        items.push(
            "per-operation latency: turmoil's latency is per link, not per message kind; the \
             slow legs are the shared store port's waits on top of turmoil's 1-5 ms"
                .into(),
        );
    }
    items.push(
        "clock drift / slow timers: every host's tokio clock advances by the same tick".into(),
    );
    items.push(
        "replica crash and restart, left out on every side: Sim::crash / Sim::bounce of a \
         replica host would do it, but leasesim's holder-lock has no replica crash to mirror, \
         and the recorder credits a restarted replica's new worker to its old life"
            .into(),
    );
    items.push(
        "latency distribution: turmoil draws latency from an exponential curve between the \
         bounds; leasesim's scenario draws it uniformly"
            .into(),
    );
    items
}

fn main() {
    peers_common::cli::workload_of();
    let side = Side {
        peer: "turmoil",
        version: "0.7.2",
        cannot_express: cannot_express(),
        at_failure: "the test's own assertion message (here the checker's sentence) and the \
                     seed passed to Builder::rng_seed, re-run by hand; no shrinking, no \
                     replay file, no trace or timeline beyond tracing logs the user adds"
            .to_string(),
    };
    cli::main(side, &mut run_once);
}

#[cfg(test)]
mod tests {
    use super::run_once;

    #[test]
    fn the_correct_worker_passes_and_the_same_seed_replays_the_same_history() {
        let first = run_once("correct", 3, false);
        assert_eq!(first.violation, None);
        assert_eq!(first, run_once("correct", 3, false));
        assert_ne!(first.trace_hash, run_once("correct", 4, false).trace_hash);
    }

    #[test]
    fn a_plain_delete_is_caught_by_the_systems_checkers() {
        let verdict = run_once("plain-delete", 0, false);
        let violation = verdict.violation.expect("a violation");
        assert!(violation.starts_with("delete-own-claim"), "{violation}");
    }
}
