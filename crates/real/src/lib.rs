//! leasesim-real: judging a run of the production worker against a real store.
//!
//! A simulation proves invariants against models; a real run checks the same invariants on
//! the workers' production cores running on tokio, several replicas against a real database,
//! in real time scaled down (leases of a few hundred milliseconds), with injected process
//! pauses and stops. It records the event stream a simulation emits (calls, what the store
//! applied, answers, clock reads, timers, pauses, stops, terms) and feeds it to the same
//! checkers, which read events only and know nothing of the executor.
//!
//! Terminology:
//! - *run clock*: real time since the run started, in whole milliseconds. It stamps every
//!   event (`at_ms`, as virtual time does in a simulation) and, on the scale of
//!   [`leasesim_events::EPOCH_MS`], is every replica's clock and the store's time.
//! - *apply instant*: the store applies a call inside one transaction; the adapter reads the
//!   run clock for the store's `now` just before it, and the `Applied` event is stamped when
//!   the transaction's answer reaches the run (the facts in it, such as the token that was
//!   current, come from inside the transaction, so they are exact even where the stamp is
//!   late by the commit's latency).
//! - *gate*: a paused replica's process does not run: its requests wait to leave, its answers
//!   and timers wait to be read, its `stop()` waits to be called ([`Gate`]).
//! - *latency*: a drawn delay before a request reaches the store and before its answer reaches
//!   the worker, so calls overlap as they do over a network.
//! - *fault draws*: pauses, stops, latencies, schedule jitter and port faults come from one
//!   seeded stream ([`Draws`]); the timing of a real run is not reproducible, and since
//!   tasks draw in the order real time runs them, neither is which call a draw falls to: a
//!   seed fixes the plan's settings and its first draws, not the run.
//! - *port faults* ([`NetFaults`]): what the simulated network does to a call, done around
//!   the real store call until faults heal — refused before the store, request lost (nothing
//!   applied), reply lost after the store applied it. A lost request or reply ends in the
//!   caller's timeout, as in a simulation.
//!
//! One module per system: [`retention`], [`reservations`]; [`work_items`] and [`holder_lock`]
//! are store hooks on the shared world ([`world`]);
//! [`phases`] and [`record`] hold what they share (the phases, pauses, stops and shutdown; the
//! recorder and the serial line of store calls).

use std::future::Future;

use leasesim_events::{EventKind, NetFailure, Vocabulary};
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};
use std::cell::{Cell, RefCell};

pub mod holder_lock;
pub mod phases;
pub mod record;
pub mod reservations;
pub mod retention;
mod run_clock;
pub mod work_items;
pub mod world;

pub use run_clock::RunClock;

use std::path::PathBuf;

use leasesim_stores::StoreError;

/// Where the store is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreTarget {
    /// A SQLite file (replaced by a fresh store).
    Sqlite { path: PathBuf },
    /// A PostgreSQL server, in a schema of the run's own (dropped first if it exists).
    Postgres { url: String, schema: String },
    /// A Redis server, in a key namespace of the run's own (`prefix`; its keys are deleted
    /// first). The client needs the feature `redis`.
    Redis { url: String, prefix: String },
}

impl StoreTarget {
    /// `sqlite`, `postgres` or `redis`.
    pub fn kind(&self) -> &'static str {
        match self {
            StoreTarget::Sqlite { .. } => "sqlite",
            StoreTarget::Postgres { .. } => "postgres",
            StoreTarget::Redis { .. } => "redis",
        }
    }
}

/// Why a real run could not run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RealError {
    /// No worker of this name (the valid names follow).
    UnknownWorker {
        given: String,
        known: Vec<&'static str>,
    },
    /// The configuration cannot run (why).
    BadConfig(String),
    /// The store could not be set up.
    Store(StoreError),
}

impl std::fmt::Display for RealError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RealError::UnknownWorker { given, known } => {
                write!(f, "no worker `{given}`; known: {}", known.join(", "))
            }
            RealError::BadConfig(why) => write!(f, "{why}"),
            RealError::Store(error) => write!(f, "cannot set up the store: {error}"),
        }
    }
}

impl std::error::Error for RealError {}

/// Removes a SQLite store's files (the database, its write-ahead log and shared memory), so a
/// run starts from a fresh store; files that are not there are fine.
pub fn remove_sqlite(path: &std::path::Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut file = path.as_os_str().to_owned();
        file.push(suffix);
        let _ = std::fs::remove_file(file);
    }
}

/// One process's pause state: while paused, nothing of the process runs.
#[derive(Debug, Default)]
pub struct Gate {
    paused_until_ms: Cell<u64>,
}

impl Gate {
    /// Pauses the process until `until_ms` (run clock).
    pub fn pause_until(&self, until_ms: u64) {
        self.paused_until_ms
            .set(self.paused_until_ms.get().max(until_ms));
    }

    /// Is the process paused at `now_ms`?
    pub fn paused(&self, now_ms: u64) -> bool {
        now_ms < self.paused_until_ms.get()
    }

    /// Waits until the process runs.
    pub async fn pass(&self, clock: &RunClock) {
        while self.paused(clock.elapsed_ms()) {
            clock.sleep_until(self.paused_until_ms.get()).await;
        }
        // invariant: the process runs when the gate lets it through.
        debug_assert!(!self.paused(clock.elapsed_ms()));
    }
}

/// The run's fault plan: one seeded stream of draws, and whether faults have healed.
#[derive(Debug)]
pub struct Draws {
    rng: RefCell<ChaCha8Rng>,
    healed: Cell<bool>,
}

impl Draws {
    pub fn seeded(seed: u64) -> Draws {
        Draws {
            rng: RefCell::new(ChaCha8Rng::seed_from_u64(seed)),
            healed: Cell::new(false),
        }
    }

    /// Switches faults off (the liveness phase): [`Draws::fault`] is false from now on.
    pub fn heal(&self) {
        self.healed.set(true);
    }

    /// Have faults healed?
    pub fn healed(&self) -> bool {
        self.healed.get()
    }

    /// Does a fault of probability `p` strike now? Never once healed, and then without a
    /// draw.
    pub fn fault(&self, p: f64) -> bool {
        !self.healed.get() && self.coin(p)
    }

    /// A whole number in `min..=max` (`min` when the range is empty).
    pub fn range(&self, min: u64, max: u64) -> u64 {
        if max <= min {
            return min;
        }
        let span = max - min + 1;
        min + self.rng.borrow_mut().next_u64() % span
    }

    /// True with probability `p`.
    pub fn coin(&self, p: f64) -> bool {
        let draw = self.rng.borrow_mut().next_u64() >> 11;
        (draw as f64) < p * (1u64 << 53) as f64
    }
}

/// What happens to calls on their way to the store and back (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NetFaults {
    /// The chance a request is refused before it reaches the store.
    pub reject: f64,
    /// The chance a request is lost on its way: nothing is applied.
    pub request_lost: f64,
    /// The chance an answer is lost after the store applied the request.
    pub reply_lost: f64,
    /// How long after sending a caller gives up on an answer that does not come.
    pub timeout_ms: u64,
}

/// `refused p=0.02, request lost p=0.02, reply lost p=0.03 (timeout 300ms)`.
impl std::fmt::Display for NetFaults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "refused p={}, request lost p={}, reply lost p={} (timeout {}ms)",
            self.reject, self.request_lost, self.reply_lost, self.timeout_ms
        )
    }
}

/// How a request fares on its way to the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    Delivered,
    Rejected,
    Lost,
}

impl NetFaults {
    /// No port faults.
    pub const NONE: NetFaults = NetFaults {
        reject: 0.0,
        request_lost: 0.0,
        reply_lost: 0.0,
        timeout_ms: 0,
    };

    /// Refuses probabilities outside 0..=1 and lost calls without a timeout to end them.
    pub fn validate(&self) -> Result<(), String> {
        let chances = [
            ("reject", self.reject),
            ("request_lost", self.request_lost),
            ("reply_lost", self.reply_lost),
        ];
        if let Some((name, p)) = chances.iter().find(|(_, p)| !(0.0..=1.0).contains(p)) {
            return Err(format!(
                "port faults: {name} = {p} is not a chance in 0..=1"
            ));
        }
        if self.timeout_ms == 0 && (self.request_lost > 0.0 || self.reply_lost > 0.0) {
            return Err("port faults: lost calls need a timeout_ms above 0 to end".into());
        }
        Ok(())
    }

    /// Draws how a request fares (always delivered once faults heal).
    pub fn delivery(&self, draws: &Draws) -> Delivery {
        if draws.fault(self.reject) {
            Delivery::Rejected
        } else if draws.fault(self.request_lost) {
            Delivery::Lost
        } else {
            Delivery::Delivered
        }
    }

    /// Draws whether the answer of an applied request is lost.
    pub fn reply_lost(&self, draws: &Draws) -> bool {
        draws.fault(self.reply_lost)
    }
}

/// One replica's end of the network, as [`round_trip`] takes it.
#[derive(Clone, Copy, Debug)]
pub struct Link<'a> {
    /// The replica's process: a request leaves, and an answer is read, only while it runs.
    pub gate: &'a Gate,
    pub draws: &'a Draws,
    pub clock: RunClock,
    pub net: NetFaults,
}

/// A call's whole way, as every real run makes it: it leaves when the process runs (its id
/// from `next_id`, its `Call` recorded), crosses a drawn `latency`, meets the port faults
/// ([`NetFaults`]: refused, lost on its way, or applied by `apply(id)`, which answers whether
/// the store applied it, with its answer perhaps lost), crosses back (or times out) and is
/// read when the process runs (`Answered`). `emit` records each event of the replica.
pub async fn round_trip<V: Vocabulary, F>(
    link: Link<'_>,
    request: V::Request,
    latency: SpanMs,
    next_id: impl FnOnce() -> u64,
    emit: impl Fn(EventKind<V>),
    apply: impl FnOnce(u64) -> F,
) -> V::Answer
where
    F: Future<Output = (V::Answer, bool)>,
{
    link.gate.pass(&link.clock).await;
    let call = next_id();
    emit(EventKind::Call { call, request });
    let (out_ms, back_ms) = (latency.draw(link.draws), latency.draw(link.draws));
    let leg = Leg {
        call,
        sent_ms: link.clock.elapsed_ms(),
        back_ms,
    };
    tokio::time::sleep(std::time::Duration::from_millis(out_ms)).await;
    let op = V::op(&request);
    let answer = carry(leg, op, link, &emit, apply(call)).await;
    link.gate.pass(&link.clock).await;
    emit(EventKind::Answered { call, op, answer });
    answer
}

/// One call's way to the store and back, as [`carry`] takes it.
#[derive(Clone, Copy, Debug)]
struct Leg {
    /// The call's id, for the events.
    call: u64,
    /// When the worker sent it (run clock), for a lost call's timeout.
    sent_ms: u64,
    /// The drawn latency of the answer's way back.
    back_ms: u64,
}

/// Carries a call that has crossed to the store through the port faults: refused, lost on
/// its way, or applied by `apply` with its answer perhaps lost; `emit` records each fault as
/// the simulated network does. Answers what the worker reads, after the way back or, for a
/// lost call, at its timeout.
async fn carry<V: Vocabulary>(
    leg: Leg,
    op: V::Op,
    link: Link<'_>,
    emit: &impl Fn(EventKind<V>),
    apply: impl Future<Output = (V::Answer, bool)>,
) -> V::Answer {
    let (net, draws) = (link.net, link.draws);
    let call = leg.call;
    let delivered = match net.delivery(draws) {
        Delivery::Rejected => {
            emit(EventKind::Rejected { call, op });
            Some(V::failed(NetFailure::Rejected))
        }
        Delivery::Lost => {
            emit(EventKind::RequestLost { call, op });
            None
        }
        Delivery::Delivered => {
            let (answer, applied) = apply.await;
            // A reply can be lost only after the store applied the call.
            let lost = applied && net.reply_lost(draws);
            if lost {
                emit(EventKind::ReplyLost { call });
            }
            (!lost).then_some(answer)
        }
    };
    match delivered {
        Some(answer) => {
            tokio::time::sleep(std::time::Duration::from_millis(leg.back_ms)).await;
            answer
        }
        None => {
            link.clock.sleep_until(leg.sent_ms + net.timeout_ms).await;
            V::failed(NetFailure::Timeout)
        }
    }
}

/// A range of milliseconds, inclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpanMs {
    pub min: u64,
    pub max: u64,
}

impl SpanMs {
    pub const fn new(min: u64, max: u64) -> SpanMs {
        SpanMs { min, max }
    }

    pub fn draw(self, draws: &Draws) -> u64 {
        draws.range(self.min, self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALWAYS: NetFaults = NetFaults {
        reject: 0.0,
        request_lost: 1.0,
        reply_lost: 1.0,
        timeout_ms: 100,
    };

    #[test]
    fn port_faults_strike_until_healed_and_then_draw_nothing() {
        let (draws, twin) = (Draws::seeded(7), Draws::seeded(7));
        assert_eq!(ALWAYS.delivery(&draws), Delivery::Lost);
        assert!(ALWAYS.reply_lost(&draws));
        draws.heal();
        assert_eq!(ALWAYS.delivery(&draws), Delivery::Delivered);
        assert!(!ALWAYS.reply_lost(&draws));
        // The healed draws took nothing from the stream: the next draw is the twin's fourth
        // (reject, request lost, reply lost were its first three).
        (0..3).for_each(|_| {
            twin.coin(0.5);
        });
        assert_eq!(draws.range(0, u64::MAX - 1), twin.range(0, u64::MAX - 1));
    }

    #[test]
    fn port_faults_refuse_chances_out_of_range_and_lost_calls_without_a_timeout() {
        assert_eq!(ALWAYS.validate(), Ok(()));
        assert_eq!(NetFaults::NONE.validate(), Ok(()));
        let too_likely = NetFaults {
            reject: 1.5,
            ..ALWAYS
        };
        assert!(too_likely.validate().unwrap_err().contains("reject = 1.5"));
        let endless = NetFaults {
            timeout_ms: 0,
            ..ALWAYS
        };
        assert!(endless.validate().unwrap_err().contains("timeout_ms"));
    }
}
