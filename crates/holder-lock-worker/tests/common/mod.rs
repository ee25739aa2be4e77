//! Port fakes for the worker's tests, driven by the deterministic runtime.
//!
//! Terminology:
//! - *log*: one ordered record of every port call and job step, with the virtual instant it
//!   happened at, shared by all fakes of a test.
//! - *model store*: [`FakeStore`] keeps real entries with lifetimes on virtual time and
//!   applies each request halfway through its latency (one way there, one way back), so a
//!   claim runs out while a job runs exactly as it would against a real store. A test can
//!   also plant a rival's claim, or force the next answers of one operation.
//! - *job*: [`FakeJob`] takes `steps` steps of `step_ms` each; each finished step is logged
//!   (an *effect*); it can fail at a given step.

#![allow(dead_code)]

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::rc::Rc;

use holder_lock_worker::{
    ClaimConfig, Clock, HolderToken, Job, JobError, JobRunner, Removal, Renewal, Store, StoreError,
    TokenSource,
};
use leasesim_rt::{Handle, Sim, SimConfig};

/// The key every test claims.
pub const KEY: &str = "job:nightly-rollup";

/// A claim of one second, trusted for 800 ms, renewed every 300 ms.
pub fn config(renew_every_ms: Option<u64>) -> ClaimConfig {
    ClaimConfig {
        key: KEY.into(),
        lifetime_ms: 1_000,
        renew_every_ms,
    }
}

/// One logged call or job step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    Create(HolderToken),
    Renew(HolderToken),
    DeleteIfHolder(HolderToken),
    Get,
    Delete,
    Set(HolderToken),
    Step(u32),
    Mark(&'static str),
}

/// The shared log.
#[derive(Clone)]
pub struct Log {
    handle: Handle,
    entries: Rc<RefCell<Vec<(u64, Call)>>>,
}

impl Log {
    pub fn push(&self, call: Call) {
        self.entries.borrow_mut().push((self.handle.now_ms(), call));
    }

    pub fn entries(&self) -> Vec<(u64, Call)> {
        self.entries.borrow().clone()
    }

    pub fn calls(&self) -> Vec<Call> {
        self.entries
            .borrow()
            .iter()
            .map(|(_, c)| c.clone())
            .collect()
    }

    /// The instants of the job's steps.
    pub fn step_times(&self) -> Vec<u64> {
        self.entries
            .borrow()
            .iter()
            .filter(|(_, c)| matches!(c, Call::Step(_)))
            .map(|(at, _)| *at)
            .collect()
    }

    /// Every store call, without job steps or marks.
    pub fn store_calls(&self) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| !matches!(c, Call::Step(_) | Call::Mark(_)))
            .collect()
    }
}

/// An answer forced on the next call of one operation.
#[derive(Clone, Debug)]
pub enum Forced {
    Create(Result<bool, StoreError>),
    Renew(Result<Renewal, StoreError>),
}

/// The model store (see the module docs).
pub struct FakeStore {
    handle: Handle,
    log: Log,
    entries: RefCell<BTreeMap<String, (HolderToken, u64)>>,
    /// One-way latency per operation name (`create`, `renew`, ...); 1 ms by default.
    latency_ms: RefCell<BTreeMap<&'static str, u64>>,
    forced: RefCell<VecDeque<Forced>>,
    pub compare_and_delete: Cell<bool>,
}

impl FakeStore {
    pub fn set_latency(&self, op: &'static str, one_way_ms: u64) {
        self.latency_ms.borrow_mut().insert(op, one_way_ms);
    }

    pub fn force(&self, forced: Forced) {
        self.forced.borrow_mut().push_back(forced);
    }

    /// Plants a claim of someone else, now.
    pub fn plant(&self, token: HolderToken, lifetime_ms: u64) {
        let expires = self.handle.now_ms() + lifetime_ms;
        self.entries
            .borrow_mut()
            .insert(KEY.to_string(), (token, expires));
    }

    /// The token the key holds now, if it is live.
    pub fn holder(&self) -> Option<HolderToken> {
        self.live(KEY)
    }

    fn live(&self, key: &str) -> Option<HolderToken> {
        let now = self.handle.now_ms();
        let entries = self.entries.borrow();
        entries
            .get(key)
            .filter(|(_, expires)| now < *expires)
            .map(|(token, _)| *token)
    }

    fn forced_create(&self) -> Option<Result<bool, StoreError>> {
        let mut forced = self.forced.borrow_mut();
        match forced.front() {
            Some(Forced::Create(answer)) => {
                let answer = answer.clone();
                forced.pop_front();
                Some(answer)
            }
            _ => None,
        }
    }

    fn forced_renew(&self) -> Option<Result<Renewal, StoreError>> {
        let mut forced = self.forced.borrow_mut();
        match forced.front() {
            Some(Forced::Renew(answer)) => {
                let answer = answer.clone();
                forced.pop_front();
                Some(answer)
            }
            _ => None,
        }
    }

    /// Waits the way there, applies, waits the way back.
    async fn flight<T>(&self, op: &'static str, apply: impl FnOnce() -> T) -> T {
        let one_way = self.latency_ms.borrow().get(op).copied().unwrap_or(1);
        self.handle.sleep(one_way).await;
        let answer = apply();
        self.handle.sleep(one_way).await;
        answer
    }

    fn write(&self, key: &str, token: HolderToken, lifetime_ms: u64) {
        let expires = self.handle.now_ms() + lifetime_ms;
        self.entries
            .borrow_mut()
            .insert(key.to_string(), (token, expires));
    }
}

impl Store for &FakeStore {
    fn create_if_absent(
        &self,
        key: &str,
        token: HolderToken,
        lifetime_ms: u64,
    ) -> impl Future<Output = Result<bool, StoreError>> {
        self.log.push(Call::Create(token));
        let key = key.to_string();
        async move {
            self.flight("create", || {
                if let Some(answer) = self.forced_create() {
                    return answer;
                }
                if self.live(&key).is_some() {
                    return Ok(false);
                }
                self.write(&key, token, lifetime_ms);
                Ok(true)
            })
            .await
        }
    }

    fn renew_if_holder(
        &self,
        key: &str,
        token: HolderToken,
        lifetime_ms: u64,
    ) -> impl Future<Output = Result<Renewal, StoreError>> {
        self.log.push(Call::Renew(token));
        let key = key.to_string();
        async move {
            self.flight("renew", || {
                if let Some(answer) = self.forced_renew() {
                    return answer;
                }
                match self.live(&key) {
                    Some(held) if held == token => {
                        self.write(&key, token, lifetime_ms);
                        Ok(Renewal::Renewed)
                    }
                    Some(_) => Ok(Renewal::NotHolder),
                    None => Ok(Renewal::Absent),
                }
            })
            .await
        }
    }

    fn delete_if_holder(
        &self,
        key: &str,
        token: HolderToken,
    ) -> impl Future<Output = Result<Removal, StoreError>> {
        self.log.push(Call::DeleteIfHolder(token));
        let key = key.to_string();
        async move {
            self.flight("delete_if_holder", || {
                if !self.compare_and_delete.get() {
                    return Err(StoreError::Unsupported);
                }
                match self.live(&key) {
                    Some(held) if held == token => {
                        self.entries.borrow_mut().remove(&key);
                        Ok(Removal::Deleted)
                    }
                    Some(_) => Ok(Removal::NotHolder),
                    None => Ok(Removal::Absent),
                }
            })
            .await
        }
    }

    fn get(&self, key: &str) -> impl Future<Output = Result<Option<HolderToken>, StoreError>> {
        self.log.push(Call::Get);
        let key = key.to_string();
        async move { self.flight("get", || Ok(self.live(&key))).await }
    }

    fn delete(&self, key: &str) -> impl Future<Output = Result<bool, StoreError>> {
        self.log.push(Call::Delete);
        let key = key.to_string();
        async move {
            self.flight("delete", || {
                let live = self.live(&key).is_some();
                self.entries.borrow_mut().remove(&key);
                Ok(live)
            })
            .await
        }
    }

    fn set(
        &self,
        key: &str,
        token: HolderToken,
        lifetime_ms: u64,
    ) -> impl Future<Output = Result<(), StoreError>> {
        self.log.push(Call::Set(token));
        let key = key.to_string();
        async move {
            self.flight("set", || {
                self.write(&key, token, lifetime_ms);
                Ok(())
            })
            .await
        }
    }

    fn compare_and_delete(&self) -> bool {
        self.compare_and_delete.get()
    }
}

/// Tokens 1, 2, 3, ... (fresh ones, as far as these tests care).
#[derive(Default)]
pub struct FakeTokens {
    next: Cell<u64>,
}

impl TokenSource for &FakeTokens {
    fn fresh(&self) -> HolderToken {
        self.next.set(self.next.get() + 1);
        HolderToken(self.next.get())
    }
}

/// Timers on virtual time.
pub struct FakeClock {
    handle: Handle,
}

impl Clock for &FakeClock {
    fn sleep(&self, ms: u64) -> impl Future<Output = ()> {
        self.handle.sleep(ms)
    }
}

/// A job of `steps` steps of `step_ms`; fails at step `fail_at` if set.
pub struct FakeJob {
    handle: Handle,
    log: Log,
    pub steps: Cell<u32>,
    pub step_ms: Cell<u64>,
    pub fail_at: Cell<Option<u32>>,
}

impl Job for &FakeJob {
    async fn run(&self) -> Result<(), JobError> {
        for step in 1..=self.steps.get() {
            self.handle.sleep(self.step_ms.get()).await;
            if self.fail_at.get() == Some(step) {
                return Err(JobError {
                    reason: format!("step {step} failed"),
                });
            }
            self.log.push(Call::Step(step));
        }
        Ok(())
    }
}

/// Everything one test needs but the runtime itself.
pub struct World {
    pub handle: Handle,
    pub log: Log,
    pub store: FakeStore,
    pub tokens: FakeTokens,
    pub clock: FakeClock,
    pub job: FakeJob,
}

/// The worker on a world's fakes.
pub type Worker<'w> = JobRunner<&'w FakeClock, &'w FakeStore, &'w FakeTokens, &'w FakeJob>;

impl World {
    /// The runtime and a world on it; the job takes 4 steps of 100 ms. Every test drives the
    /// worker's futures inside one task, so no scheduling choice is ever drawn: the calls
    /// and their instants are the same on every run.
    pub fn new() -> (Sim, World) {
        let sim = Sim::new(SimConfig::seeded(0));
        let handle = sim.handle();
        let log = Log {
            handle: handle.clone(),
            entries: Rc::default(),
        };
        let world = World {
            store: FakeStore {
                handle: handle.clone(),
                log: log.clone(),
                entries: RefCell::default(),
                latency_ms: RefCell::default(),
                forced: RefCell::default(),
                compare_and_delete: Cell::new(true),
            },
            tokens: FakeTokens::default(),
            clock: FakeClock {
                handle: handle.clone(),
            },
            job: FakeJob {
                handle: handle.clone(),
                log: log.clone(),
                steps: Cell::new(4),
                step_ms: Cell::new(100),
                fail_at: Cell::new(None),
            },
            handle,
            log,
        };
        (sim, world)
    }

    pub fn worker(&self, config: ClaimConfig) -> Worker<'_> {
        JobRunner::new(config, &self.clock, &self.store, &self.tokens, &self.job)
            .expect("a valid configuration")
    }
}

/// Runs `future` to its end on `sim`.
pub fn drive<T: std::fmt::Debug>(sim: &mut Sim, future: impl Future<Output = T>) -> T {
    sim.block_on(future).expect_completed()
}
