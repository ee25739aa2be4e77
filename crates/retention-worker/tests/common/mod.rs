//! Scripted port fakes for the worker's tests, driven by the deterministic runtime.
//!
//! Terminology:
//! - *log*: one shared, ordered record of every port call (with its arguments and the virtual
//!   instant it was issued), plus *marks* that tests push to order their own observations.
//! - *script*: a queue of answers for one port operation, each with a *latency* (virtual
//!   milliseconds between the call and its answer). An acquire or renew with an empty script
//!   is a test failure (the fake panics); a release with an empty script answers `Ok(())` at
//!   once, so that every unexpected release still shows up in the log.
//! - *backlog*: the rows the fake record store still holds that are old enough to delete.
//! - *offset*: the fake clock reads the virtual time plus a fixed offset, so that the cutoff
//!   (`now - retention`) is a non-trivial number.

#![allow(dead_code)]

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::rc::Rc;

use leasesim_rt::{Handle, Sim, SimConfig};
use retention_worker::{Clock, Lease, Leases, PortError, Records, RetentionWorker, WorkerConfig};

/// The owner id every test worker uses.
pub const OWNER: &str = "w1";
/// What the fake clock adds to virtual time.
pub const CLOCK_OFFSET_MS: u64 = 1_000_000_000;
/// The default retention (7 days).
pub const RETENTION_MS: u64 = 7 * 24 * 60 * 60 * 1_000;
/// Seeds every scenario runs under: the scheduling differs, the observed calls must not.
pub const SEEDS: [u64; 6] = [0, 1, 2, 7, 42, 9_001];

/// The cutoff a term computes when its acquire answers at virtual instant `at_ms`.
pub fn cutoff_at(at_ms: u64) -> u64 {
    CLOCK_OFFSET_MS + at_ms - RETENTION_MS
}

/// A lease of the test owner with the given token.
pub fn lease(token: u64) -> Lease {
    Lease {
        owner_id: OWNER.to_owned(),
        fencing_token: token,
        expires_at_ms: 30_000 + token,
    }
}

/// One logged port call (or test mark).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    Acquire {
        owner_id: String,
    },
    Renew(Lease),
    Release(Lease),
    Delete {
        older_than_ms: u64,
        limit: u32,
        token: u64,
    },
    Mark(&'static str),
}

impl Call {
    pub fn acquire() -> Call {
        Call::Acquire {
            owner_id: OWNER.to_owned(),
        }
    }
    pub fn delete(older_than_ms: u64, limit: u32, token: u64) -> Call {
        Call::Delete {
            older_than_ms,
            limit,
            token,
        }
    }
}

/// The shared call log.
#[derive(Clone, Debug)]
pub struct Log {
    handle: Handle,
    entries: Rc<RefCell<Vec<(u64, Call)>>>,
}

impl Log {
    pub fn new(handle: Handle) -> Log {
        Log {
            handle,
            entries: Rc::default(),
        }
    }

    pub fn push(&self, call: Call) {
        self.entries.borrow_mut().push((self.handle.now_ms(), call));
    }

    pub fn mark(&self, what: &'static str) {
        self.push(Call::Mark(what));
    }

    /// Every entry so far, with the virtual instant it was logged at.
    pub fn entries(&self) -> Vec<(u64, Call)> {
        self.entries.borrow().clone()
    }

    /// Every entry so far, without instants.
    pub fn calls(&self) -> Vec<Call> {
        self.entries
            .borrow()
            .iter()
            .map(|(_, call)| call.clone())
            .collect()
    }

    pub fn len(&self) -> usize {
        self.entries.borrow().len()
    }
}

/// One scripted answer.
#[derive(Clone, Debug)]
pub struct Step<T> {
    pub latency_ms: u64,
    pub answer: T,
}

/// A clock reading virtual time plus `CLOCK_OFFSET_MS`; counts its reads.
#[derive(Clone, Debug)]
pub struct FakeClock {
    handle: Handle,
    reads: Rc<Cell<u32>>,
}

impl FakeClock {
    pub fn reads(&self) -> u32 {
        self.reads.get()
    }
}

impl Clock for FakeClock {
    fn now_ms(&self) -> u64 {
        self.reads.set(self.reads.get() + 1);
        self.handle.now_ms() + CLOCK_OFFSET_MS
    }

    fn sleep(&self, ms: u64) -> impl Future<Output = ()> {
        self.handle.sleep(ms)
    }
}

type LeaseAnswer = Result<Option<Lease>, PortError>;

/// A lease service answering from scripts.
#[derive(Debug)]
pub struct FakeLeases {
    handle: Handle,
    log: Log,
    acquire_script: RefCell<VecDeque<Step<LeaseAnswer>>>,
    renew_script: RefCell<VecDeque<Step<LeaseAnswer>>>,
    release_script: RefCell<VecDeque<Step<Result<(), PortError>>>>,
    renews_in_flight: Cell<u32>,
    max_renews_in_flight: Cell<u32>,
}

impl FakeLeases {
    pub fn on_acquire(&self, latency_ms: u64, answer: LeaseAnswer) -> &Self {
        self.acquire_script
            .borrow_mut()
            .push_back(Step { latency_ms, answer });
        self
    }

    pub fn on_renew(&self, latency_ms: u64, answer: LeaseAnswer) -> &Self {
        self.renew_script
            .borrow_mut()
            .push_back(Step { latency_ms, answer });
        self
    }

    pub fn on_release(&self, latency_ms: u64, answer: Result<(), PortError>) -> &Self {
        self.release_script
            .borrow_mut()
            .push_back(Step { latency_ms, answer });
        self
    }

    /// The most renewals that were ever in flight at once.
    pub fn max_renews_in_flight(&self) -> u32 {
        self.max_renews_in_flight.get()
    }

    fn scripted<T>(script: &RefCell<VecDeque<Step<T>>>, what: &str) -> Step<T> {
        script
            .borrow_mut()
            .pop_front()
            .unwrap_or_else(|| panic!("unscripted {what}"))
    }
}

impl Leases for FakeLeases {
    fn acquire(&self, owner_id: &str) -> impl Future<Output = LeaseAnswer> {
        let owner_id = owner_id.to_owned();
        async move {
            self.log.push(Call::Acquire { owner_id });
            let step = Self::scripted(&self.acquire_script, "acquire");
            self.handle.sleep(step.latency_ms).await;
            step.answer
        }
    }

    fn renew(&self, lease: &Lease) -> impl Future<Output = LeaseAnswer> {
        let lease = lease.clone();
        async move {
            self.log.push(Call::Renew(lease));
            let step = Self::scripted(&self.renew_script, "renew");
            let in_flight = self.renews_in_flight.get() + 1;
            self.renews_in_flight.set(in_flight);
            self.max_renews_in_flight
                .set(self.max_renews_in_flight.get().max(in_flight));
            self.handle.sleep(step.latency_ms).await;
            self.renews_in_flight.set(in_flight - 1);
            step.answer
        }
    }

    fn release(&self, lease: &Lease) -> impl Future<Output = Result<(), PortError>> {
        let lease = lease.clone();
        async move {
            self.log.push(Call::Release(lease));
            let step = self
                .release_script
                .borrow_mut()
                .pop_front()
                .unwrap_or(Step {
                    latency_ms: 0,
                    answer: Ok(()),
                });
            self.handle.sleep(step.latency_ms).await;
            step.answer
        }
    }
}

/// A record store holding `backlog` eligible rows; answers after a per-call latency, and
/// fails the calls listed in `failures` (by 0-based call index).
#[derive(Debug)]
pub struct FakeRecords {
    handle: Handle,
    log: Log,
    backlog_rows: Cell<u64>,
    default_latency_ms: Cell<u64>,
    latencies_ms: RefCell<VecDeque<u64>>,
    failures: RefCell<BTreeMap<u32, PortError>>,
    calls: Cell<u32>,
}

impl FakeRecords {
    pub fn set_backlog(&self, rows: u64) -> &Self {
        self.backlog_rows.set(rows);
        self
    }

    pub fn backlog(&self) -> u64 {
        self.backlog_rows.get()
    }

    /// Latency of every delete not covered by `push_latencies`.
    pub fn set_latency(&self, latency_ms: u64) -> &Self {
        self.default_latency_ms.set(latency_ms);
        self
    }

    /// Latencies of the next deletes, in order.
    pub fn push_latencies(&self, latencies_ms: &[u64]) -> &Self {
        self.latencies_ms.borrow_mut().extend(latencies_ms);
        self
    }

    pub fn fail_call(&self, index: u32, error: PortError) -> &Self {
        self.failures.borrow_mut().insert(index, error);
        self
    }
}

impl Records for FakeRecords {
    async fn delete_batch(
        &self,
        older_than_ms: u64,
        limit: u32,
        fencing_token: u64,
    ) -> Result<u32, PortError> {
        let index = self.calls.get();
        self.calls.set(index + 1);
        self.log
            .push(Call::delete(older_than_ms, limit, fencing_token));
        let latency_ms = self
            .latencies_ms
            .borrow_mut()
            .pop_front()
            .unwrap_or(self.default_latency_ms.get());
        self.handle.sleep(latency_ms).await;
        if let Some(error) = self.failures.borrow_mut().remove(&index) {
            return Err(error);
        }
        let deleted = self.backlog_rows.get().min(u64::from(limit));
        self.backlog_rows.set(self.backlog_rows.get() - deleted);
        Ok(u32::try_from(deleted).expect("at most limit"))
    }
}

pub type TestWorker = RetentionWorker<FakeClock, Rc<FakeLeases>, Rc<FakeRecords>>;

/// A simulator, the shared log, and one worker wired to fakes.
pub struct World {
    pub sim: Sim,
    pub handle: Handle,
    pub log: Log,
    pub worker: Rc<TestWorker>,
}

impl World {
    pub fn new(seed: u64) -> World {
        World::with_config(seed, WorkerConfig::default())
    }

    pub fn with_config(seed: u64, config: WorkerConfig) -> World {
        let sim = Sim::new(SimConfig::seeded(seed));
        let handle = sim.handle();
        let log = Log::new(handle.clone());
        let clock = FakeClock {
            handle: handle.clone(),
            reads: Rc::default(),
        };
        let leases = Rc::new(FakeLeases {
            handle: handle.clone(),
            log: log.clone(),
            acquire_script: RefCell::default(),
            renew_script: RefCell::default(),
            release_script: RefCell::default(),
            renews_in_flight: Cell::new(0),
            max_renews_in_flight: Cell::new(0),
        });
        let records = Rc::new(FakeRecords {
            handle: handle.clone(),
            log: log.clone(),
            backlog_rows: Cell::new(0),
            default_latency_ms: Cell::new(0),
            latencies_ms: RefCell::default(),
            failures: RefCell::default(),
            calls: Cell::new(0),
        });
        let worker = RetentionWorker::new(OWNER, config, clock, leases, records)
            .expect("test config is valid");
        World {
            sim,
            handle,
            log,
            worker: Rc::new(worker),
        }
    }

    pub fn leases(&self) -> &FakeLeases {
        self.worker.leases()
    }

    pub fn records(&self) -> &FakeRecords {
        self.worker.records()
    }
}

/// Spawn `run`; the task marks "run returned" in the log as soon as `run` resolves.
pub fn spawn_run(
    world: &World,
) -> leasesim_rt::JoinHandle<Result<retention_worker::TermReport, retention_worker::RunError>> {
    let worker = world.worker.clone();
    let log = world.log.clone();
    world.handle.spawn(async move {
        let result = worker.run().await;
        log.mark("run returned");
        result
    })
}

/// Spawn a task that sleeps until `at_ms`, marks `called`, awaits `stop`, then marks
/// `resolved`.
pub fn spawn_stop_at(
    world: &World,
    at_ms: u64,
    called: &'static str,
    resolved: &'static str,
) -> leasesim_rt::JoinHandle<()> {
    let worker = world.worker.clone();
    let log = world.log.clone();
    let handle = world.handle.clone();
    world.handle.spawn(async move {
        handle.sleep(at_ms - handle.now_ms()).await;
        log.mark(called);
        worker.stop().await;
        log.mark(resolved);
    })
}

/// Run one term on the world's worker as the main future and return its report.
pub fn run_one_term(world: &mut World) -> retention_worker::TermReport {
    let worker = world.worker.clone();
    world
        .sim
        .block_on(async move { worker.run().await })
        .expect_completed()
        .expect("no other run is active")
}
