//! Port fakes for the worker's tests, driven by the deterministic runtime.
//!
//! Terminology:
//! - *log*: one shared, ordered record of every port call (with its arguments and the virtual
//!   instant it was sent), every clock sleep, and *marks* tests push to order their own
//!   observations.
//! - *fake store*: a small item store that behaves as the contract says (conditional claims,
//!   store-wide tokens, fenced writes, idempotent repeats), expiry in virtual time; every call
//!   answers after `latency_ms`.
//! - *injection*: the answer the next call of one kind gives instead (a refusal before apply,
//!   a lost reply after apply, lease-lost, busy); consumed in order.
//! - *fake provider*: keys applied at most once; injections too (a timeout after accept, a
//!   timeout before accept, a refusal for good).

#![allow(dead_code)]

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::rc::Rc;

use leasesim_rt::{Handle, Sim, SimConfig};
use work_items_worker::{
    ApplyAck, ClaimError, Clock, Effect, IdempotencyKey, ItemError, ItemId, ItemWorker, Lease,
    Lookup, Provider, ProviderAck, ProviderError, RunReport, RunStatus, Store, Transport,
    WorkerConfig, WriteError,
};

/// Seeds every test runs under: the scheduling may differ, the observed calls must not.
pub const SEEDS: [u64; 4] = [0, 1, 7, 42];

/// One logged call, sleep or mark.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    Find(Option<u32>),
    Claim(u32),
    Renew(u32, u64),
    Apply(u32, u64, u32),
    Done(u32, u64),
    Release(u32, u64, ItemError),
    Fail(u32, u64, ItemError),
    Status,
    Provider(u32, u32),
    Lookup(u32, u32),
    Sleep(u64),
    Mark(&'static str),
}

/// The shared log.
#[derive(Clone, Debug)]
pub struct Log {
    handle: Handle,
    entries: Rc<RefCell<Vec<(u64, Call)>>>,
}

impl Log {
    pub fn push(&self, call: Call) {
        self.entries.borrow_mut().push((self.handle.now_ms(), call));
    }

    pub fn mark(&self, what: &'static str) {
        self.push(Call::Mark(what));
    }

    pub fn calls(&self) -> Vec<Call> {
        self.entries
            .borrow()
            .iter()
            .map(|(_, c)| c.clone())
            .collect()
    }

    pub fn entries(&self) -> Vec<(u64, Call)> {
        self.entries.borrow().clone()
    }

    /// The calls, without sleeps and marks.
    pub fn port_calls(&self) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| !matches!(c, Call::Sleep(_) | Call::Mark(_)))
            .collect()
    }
}

/// A clock reading virtual time; its sleeps are logged.
#[derive(Clone, Debug)]
pub struct FakeClock {
    handle: Handle,
    log: Log,
}

impl Clock for FakeClock {
    fn now_ms(&self) -> u64 {
        self.handle.now_ms()
    }

    fn sleep(&self, ms: u64) -> impl Future<Output = ()> {
        self.log.push(Call::Sleep(ms));
        self.handle.sleep(ms)
    }
}

/// What the next call of a kind answers instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inject {
    /// Refused before it was applied.
    Rejected,
    /// Applied, its reply lost.
    Timeout,
    /// Not applied: answers lease-lost.
    LeaseLost,
    /// A claim only: answers busy.
    Busy,
}

/// The kinds of store call injections apply to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Find,
    Claim,
    Renew,
    Apply,
    Done,
    Release,
    Fail,
    Status,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    Pending,
    Claimed { token: u64, expires_ms: u64 },
    Released { token: u64 },
    Done { token: u64 },
    Failed { token: u64, error: ItemError },
}

#[derive(Clone, Debug)]
pub struct FakeItem {
    pub state: State,
    pub chunks: u32,
    pub attempts: u32,
    pub applied: Vec<u32>,
}

/// A store that behaves as the contract says (see the module docs).
#[derive(Debug)]
pub struct FakeStore {
    handle: Handle,
    log: Log,
    pub items: RefCell<Vec<FakeItem>>,
    last_token: Cell<u64>,
    pub latency_ms: Cell<u64>,
    injections: RefCell<BTreeMap<Kind, VecDeque<Inject>>>,
}

impl FakeStore {
    /// Items of these sizes, all pending.
    pub fn set_items(&self, sizes: &[u32]) -> &Self {
        *self.items.borrow_mut() = sizes
            .iter()
            .map(|&chunks| FakeItem {
                state: State::Pending,
                chunks,
                attempts: 0,
                applied: Vec::new(),
            })
            .collect();
        self
    }

    /// The next calls of `kind` answer `answers`, in order.
    pub fn inject(&self, kind: Kind, answers: &[Inject]) -> &Self {
        self.injections
            .borrow_mut()
            .entry(kind)
            .or_default()
            .extend(answers);
        self
    }

    fn injected(&self, kind: Kind) -> Option<Inject> {
        self.injections.borrow_mut().get_mut(&kind)?.pop_front()
    }

    pub fn state(&self, item: u32) -> State {
        self.items.borrow()[item as usize].state.clone()
    }

    fn live(&self, item: u32) -> Option<u64> {
        match self.items.borrow()[item as usize].state {
            State::Claimed { token, expires_ms } if self.handle.now_ms() < expires_ms => {
                Some(token)
            }
            _ => None,
        }
    }

    fn claimable(&self, item: u32) -> bool {
        match self.items.borrow()[item as usize].state {
            State::Pending | State::Released { .. } => true,
            State::Claimed { .. } => self.live(item).is_none(),
            State::Done { .. } | State::Failed { .. } => false,
        }
    }

    /// Waits the latency, then applies `apply` unless an injection says otherwise.
    async fn answer<T>(
        &self,
        kind: Kind,
        apply: impl FnOnce() -> Result<T, WriteError>,
    ) -> Result<T, WriteError> {
        self.handle.sleep(self.latency_ms.get()).await;
        match self.injected(kind) {
            Some(Inject::Rejected) => Err(WriteError::Transport(Transport::Rejected)),
            Some(Inject::Timeout) => {
                let _ = apply();
                Err(WriteError::Transport(Transport::Timeout))
            }
            Some(Inject::LeaseLost | Inject::Busy) => Err(WriteError::LeaseLost),
            None => apply(),
        }
    }

    fn fenced(&self, item: u32, token: u64) -> Result<(), WriteError> {
        match self.live(item) == Some(token) {
            true => Ok(()),
            false => Err(WriteError::LeaseLost),
        }
    }

    fn end(&self, item: u32, token: u64, state: State) -> Result<(), WriteError> {
        if self.state(item) == state {
            return Ok(());
        }
        self.fenced(item, token)?;
        self.items.borrow_mut()[item as usize].state = state;
        Ok(())
    }
}

impl Store for FakeStore {
    async fn next_claimable(&self, after: Option<ItemId>) -> Result<Option<ItemId>, Transport> {
        self.log.push(Call::Find(after.map(|i| i.0)));
        let count = self.items.borrow().len() as u32;
        let found = self.answer(Kind::Find, || {
            let start = after.map_or(0, |a| a.0 + 1);
            Ok((0..count)
                .map(|offset| (start + offset) % count)
                .find(|&item| self.claimable(item))
                .map(ItemId))
        });
        found.await.map_err(transport_of)
    }

    async fn claim(
        &self,
        item: ItemId,
        _worker: &str,
        _now_ms: u64,
        lease_for_ms: u64,
    ) -> Result<Lease, ClaimError> {
        self.log.push(Call::Claim(item.0));
        self.handle.sleep(self.latency_ms.get()).await;
        let grant = || {
            if !self.claimable(item.0) {
                return Err(match self.state(item.0) {
                    State::Done { .. } | State::Failed { .. } => ClaimError::Closed,
                    _ => ClaimError::Busy,
                });
            }
            let token = self.last_token.get() + 1;
            self.last_token.set(token);
            let mut items = self.items.borrow_mut();
            let record = &mut items[item.0 as usize];
            record.attempts += 1;
            let expires_ms = self.handle.now_ms() + lease_for_ms;
            record.state = State::Claimed { token, expires_ms };
            Ok(Lease {
                item,
                token,
                expires_at_ms: expires_ms,
                attempt: record.attempts,
                chunks: record.chunks,
            })
        };
        match self.injected(Kind::Claim) {
            Some(Inject::Rejected) => Err(ClaimError::Transport(Transport::Rejected)),
            Some(Inject::Timeout) => {
                let _ = grant();
                Err(ClaimError::Transport(Transport::Timeout))
            }
            Some(Inject::Busy | Inject::LeaseLost) => Err(ClaimError::Busy),
            None => grant(),
        }
    }

    async fn renew_if_owner(
        &self,
        item: ItemId,
        token: u64,
        _now_ms: u64,
        lease_for_ms: u64,
    ) -> Result<u64, WriteError> {
        self.log.push(Call::Renew(item.0, token));
        self.answer(Kind::Renew, || {
            self.fenced(item.0, token)?;
            let expires_ms = self.handle.now_ms() + lease_for_ms;
            self.items.borrow_mut()[item.0 as usize].state = State::Claimed { token, expires_ms };
            Ok(expires_ms)
        })
        .await
    }

    async fn apply_if_owner(
        &self,
        item: ItemId,
        token: u64,
        _now_ms: u64,
        effect: Effect,
    ) -> Result<ApplyAck, WriteError> {
        self.log.push(Call::Apply(item.0, token, effect.chunk));
        self.answer(Kind::Apply, || {
            self.fenced(item.0, token)?;
            let mut items = self.items.borrow_mut();
            let applied = &mut items[item.0 as usize].applied;
            if applied.contains(&effect.chunk) {
                return Ok(ApplyAck::AlreadyApplied);
            }
            applied.push(effect.chunk);
            Ok(ApplyAck::Applied)
        })
        .await
    }

    async fn mark_done_if_owner(
        &self,
        item: ItemId,
        token: u64,
        _now_ms: u64,
    ) -> Result<(), WriteError> {
        self.log.push(Call::Done(item.0, token));
        self.answer(Kind::Done, || {
            self.end(item.0, token, State::Done { token })
        })
        .await
    }

    async fn release_if_owner(
        &self,
        item: ItemId,
        token: u64,
        _now_ms: u64,
        error: ItemError,
    ) -> Result<(), WriteError> {
        self.log.push(Call::Release(item.0, token, error));
        self.answer(Kind::Release, || {
            self.end(item.0, token, State::Released { token })
        })
        .await
    }

    async fn fail_if_owner(
        &self,
        item: ItemId,
        token: u64,
        _now_ms: u64,
        error: ItemError,
    ) -> Result<(), WriteError> {
        self.log.push(Call::Fail(item.0, token, error));
        self.answer(Kind::Fail, || {
            self.end(item.0, token, State::Failed { token, error })
        })
        .await
    }

    async fn status(&self) -> Result<RunStatus, Transport> {
        self.log.push(Call::Status);
        self.answer(Kind::Status, || {
            let items = self.items.borrow();
            let count = |f: fn(&State) -> bool| items.iter().filter(|i| f(&i.state)).count() as u32;
            let done = count(|s| matches!(s, State::Done { .. }));
            let failed = count(|s| matches!(s, State::Failed { .. }));
            Ok(RunStatus {
                open: items.len() as u32 - done - failed,
                done,
                failed,
            })
        })
        .await
        .map_err(transport_of)
    }
}

fn transport_of(error: WriteError) -> Transport {
    match error {
        WriteError::Transport(failure) => failure,
        WriteError::LeaseLost => unreachable!("a read cannot lose a lease"),
    }
}

/// What the provider's next apply or lookup answers instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProviderInject {
    /// Applied, its reply lost.
    TimeoutAfterAccept,
    /// Not applied, no answer.
    TimeoutBeforeAccept,
    Rejected,
    Refused,
}

/// A provider applying each key at most once.
#[derive(Debug)]
pub struct FakeProvider {
    handle: Handle,
    log: Log,
    pub latency_ms: Cell<u64>,
    pub applied: RefCell<Vec<IdempotencyKey>>,
    /// How many times each item's effect was carried out.
    pub applications: RefCell<BTreeMap<u32, u32>>,
    applies: RefCell<VecDeque<ProviderInject>>,
    lookups: RefCell<VecDeque<ProviderInject>>,
}

impl FakeProvider {
    pub fn inject_apply(&self, answers: &[ProviderInject]) -> &Self {
        self.applies.borrow_mut().extend(answers);
        self
    }

    pub fn inject_lookup(&self, answers: &[ProviderInject]) -> &Self {
        self.lookups.borrow_mut().extend(answers);
        self
    }

    fn carry_out(&self, key: IdempotencyKey, item: ItemId) -> ProviderAck {
        if self.applied.borrow().contains(&key) {
            return ProviderAck::Duplicate;
        }
        self.applied.borrow_mut().push(key);
        *self.applications.borrow_mut().entry(item.0).or_default() += 1;
        ProviderAck::Applied
    }
}

impl Provider for FakeProvider {
    async fn apply(&self, key: IdempotencyKey, item: ItemId) -> Result<ProviderAck, ProviderError> {
        self.log.push(Call::Provider(item.0, key.salt));
        self.handle.sleep(self.latency_ms.get()).await;
        let injected = self.applies.borrow_mut().pop_front();
        match injected {
            Some(ProviderInject::TimeoutAfterAccept) => {
                self.carry_out(key, item);
                Err(ProviderError::Transport(Transport::Timeout))
            }
            Some(ProviderInject::TimeoutBeforeAccept) => {
                Err(ProviderError::Transport(Transport::Timeout))
            }
            Some(ProviderInject::Rejected) => Err(ProviderError::Transport(Transport::Rejected)),
            Some(ProviderInject::Refused) => Err(ProviderError::Refused),
            None => Ok(self.carry_out(key, item)),
        }
    }

    async fn lookup(&self, key: IdempotencyKey) -> Result<Lookup, Transport> {
        self.log.push(Call::Lookup(key.item.0, key.salt));
        self.handle.sleep(self.latency_ms.get()).await;
        let injected = self.lookups.borrow_mut().pop_front();
        match injected {
            Some(ProviderInject::Rejected) => Err(Transport::Rejected),
            Some(ProviderInject::TimeoutAfterAccept | ProviderInject::TimeoutBeforeAccept) => {
                Err(Transport::Timeout)
            }
            Some(ProviderInject::Refused) => Ok(Lookup::Refused),
            None if self.applied.borrow().contains(&key) => Ok(Lookup::Applied),
            None => Ok(Lookup::Unknown),
        }
    }
}

/// The worker under test on the fakes.
pub type TestWorker = ItemWorker<FakeClock, Rc<FakeStore>, Rc<FakeProvider>>;

/// A simulation with the fakes and one worker.
pub struct World {
    pub sim: Sim,
    pub handle: Handle,
    pub log: Log,
    pub store: Rc<FakeStore>,
    pub provider: Rc<FakeProvider>,
    pub worker: Rc<TestWorker>,
}

/// The configuration the tests use: short numbers that read well in logs.
pub fn config() -> WorkerConfig {
    WorkerConfig {
        lease_ms: 1_000,
        renew_every_ms: 300,
        max_attempts: 2,
        max_retries: 3,
        backoff_ms: 100,
        backoff_cap_ms: 300,
        deadline_ms: 60_000,
    }
}

impl World {
    pub fn new(seed: u64) -> World {
        World::with_config(seed, config())
    }

    pub fn with_config(seed: u64, config: WorkerConfig) -> World {
        let sim = Sim::new(SimConfig::seeded(seed));
        let handle = sim.handle();
        let log = Log {
            handle: handle.clone(),
            entries: Rc::default(),
        };
        let clock = FakeClock {
            handle: handle.clone(),
            log: log.clone(),
        };
        let store = Rc::new(FakeStore {
            handle: handle.clone(),
            log: log.clone(),
            items: RefCell::default(),
            last_token: Cell::new(0),
            latency_ms: Cell::new(10),
            injections: RefCell::default(),
        });
        let provider = Rc::new(FakeProvider {
            handle: handle.clone(),
            log: log.clone(),
            latency_ms: Cell::new(10),
            applied: RefCell::default(),
            applications: RefCell::default(),
            applies: RefCell::default(),
            lookups: RefCell::default(),
        });
        let worker = ItemWorker::new("w1", config, clock, store.clone(), provider.clone())
            .expect("the test configuration is valid");
        World {
            sim,
            handle,
            log,
            store,
            provider,
            worker: Rc::new(worker),
        }
    }

    /// Runs one `run()` as the main future.
    pub fn run(&mut self) -> RunReport {
        let worker = self.worker.clone();
        self.sim
            .block_on(async move { worker.run().await })
            .expect_completed()
            .expect("no other run is active")
    }
}

/// Spawns `run`; the task marks "run returned" as soon as it resolves.
pub fn spawn_run(world: &World) -> leasesim_rt::JoinHandle<RunReport> {
    let worker = world.worker.clone();
    let log = world.log.clone();
    world.handle.spawn(async move {
        let report = worker.run().await.expect("no other run is active");
        log.mark("run returned");
        report
    })
}

/// Spawns a task that calls `stop` at `at_ms` and marks when it is called and returns.
pub fn spawn_stop_at(world: &World, at_ms: u64) -> leasesim_rt::JoinHandle<()> {
    let worker = world.worker.clone();
    let log = world.log.clone();
    let handle = world.handle.clone();
    world.handle.spawn(async move {
        handle.sleep(at_ms - handle.now_ms()).await;
        log.mark("stop called");
        worker.stop().await;
        log.mark("stop returned");
    })
}
