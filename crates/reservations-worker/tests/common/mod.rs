//! Scripted port fakes for the worker's tests, driven by the deterministic runtime.
//!
//! Terminology:
//! - *log*: one ordered record of every port call (with its arguments and the virtual instant
//!   it was made), plus *marks* a test pushes to order its own observations.
//! - *script*: a queue of answers per operation, each with a *latency* (virtual ms between the
//!   call and its answer). A claim with an empty script answers nothing at once (so the worker
//!   idles); a transition with an empty script is a test failure; releases and dead letters
//!   with an empty script answer `Ok` at once.
//! - *clock*: virtual time plus [`CLOCK_OFFSET_MS`]; a jittered sleep lasts its base plus half
//!   its jitter, so the log shows both what was asked and how long it took.

#![allow(dead_code)]

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::rc::Rc;

use leasesim_rt::{Handle, JoinHandle, Sim, SimConfig};
use reservations_worker::{
    ClaimToken, Clock, DeadLetter, DeadLetters, ExpireOutcome, ExpiryWorker, Now, Reservation,
    ReservationId, RunError, RunReport, Status, Store, StoreError, Tokens, WorkerConfig,
};

/// What the fake clock adds to virtual time.
pub const CLOCK_OFFSET_MS: u64 = 5_000_000;

/// One logged port call (or test mark).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    Claim {
        limit: u32,
        now: Now,
        token: u64,
        claim_for_ms: u64,
    },
    Expire(u64, Now),
    Release(u64, u64),
    Letter(DeadLetter),
    Sleep {
        base_ms: u64,
        jitter_ms: u64,
    },
    ClockRead,
    Mark(&'static str),
}

/// One scripted answer.
#[derive(Clone, Debug)]
pub struct Step<T> {
    pub latency_ms: u64,
    pub answer: T,
}

type Claimed = Result<Vec<u64>, StoreError>;

/// Every port at once, answering from scripts.
#[derive(Debug)]
pub struct Fakes {
    handle: Handle,
    log: RefCell<Vec<(u64, Call)>>,
    claims: RefCell<VecDeque<Step<Claimed>>>,
    expires: RefCell<VecDeque<Step<Result<ExpireOutcome, StoreError>>>>,
    releases: RefCell<VecDeque<Step<Result<(), StoreError>>>>,
    letters: RefCell<VecDeque<Step<Result<(), StoreError>>>>,
    next_token: Cell<u64>,
}

impl Fakes {
    pub fn new(handle: Handle) -> Rc<Fakes> {
        Rc::new(Fakes {
            handle,
            log: RefCell::default(),
            claims: RefCell::default(),
            expires: RefCell::default(),
            releases: RefCell::default(),
            letters: RefCell::default(),
            next_token: Cell::new(100),
        })
    }

    pub fn on_claim(&self, latency_ms: u64, answer: Claimed) -> &Self {
        self.claims
            .borrow_mut()
            .push_back(Step { latency_ms, answer });
        self
    }

    pub fn on_expire(&self, latency_ms: u64, answer: Result<ExpireOutcome, StoreError>) -> &Self {
        self.expires
            .borrow_mut()
            .push_back(Step { latency_ms, answer });
        self
    }

    pub fn on_release(&self, latency_ms: u64, answer: Result<(), StoreError>) -> &Self {
        self.releases
            .borrow_mut()
            .push_back(Step { latency_ms, answer });
        self
    }

    pub fn on_letter(&self, latency_ms: u64, answer: Result<(), StoreError>) -> &Self {
        self.letters
            .borrow_mut()
            .push_back(Step { latency_ms, answer });
        self
    }

    pub fn mark(&self, what: &'static str) {
        self.push(Call::Mark(what));
    }

    fn push(&self, call: Call) {
        self.log.borrow_mut().push((self.handle.now_ms(), call));
    }

    /// Every entry so far, with its instant.
    pub fn entries(&self) -> Vec<(u64, Call)> {
        self.log.borrow().clone()
    }

    /// Every call so far (clock reads left out), without instants.
    pub fn calls(&self) -> Vec<Call> {
        self.log
            .borrow()
            .iter()
            .filter(|(_, call)| *call != Call::ClockRead)
            .map(|(_, call)| call.clone())
            .collect()
    }

    async fn answer<T>(&self, step: Step<T>) -> T {
        self.handle.sleep(step.latency_ms).await;
        step.answer
    }

    fn default_ok() -> Step<Result<(), StoreError>> {
        Step {
            latency_ms: 0,
            answer: Ok(()),
        }
    }
}

fn held(id: u64, token: ClaimToken) -> Reservation {
    Reservation {
        id: ReservationId(id),
        status: Status::Held,
        hold_until_ms: 0,
        claim_token: Some(token),
        claim_until_ms: Some(1),
    }
}

impl Store for Fakes {
    async fn claim_expired(
        &self,
        limit: u32,
        now: Now,
        token: ClaimToken,
        claim_for_ms: u64,
    ) -> Result<Vec<Reservation>, StoreError> {
        self.push(Call::Claim {
            limit,
            now,
            token: token.0,
            claim_for_ms,
        });
        let step = self.claims.borrow_mut().pop_front().unwrap_or(Step {
            latency_ms: 0,
            answer: Ok(Vec::new()),
        });
        let ids = self.answer(step).await?;
        Ok(ids.into_iter().map(|id| held(id, token)).collect())
    }

    async fn expire_if_held(
        &self,
        id: ReservationId,
        now: Now,
    ) -> Result<ExpireOutcome, StoreError> {
        self.push(Call::Expire(id.0, now));
        let step = self.expires.borrow_mut().pop_front();
        self.answer(step.unwrap_or_else(|| panic!("unscripted transition of {id}")))
            .await
    }

    async fn release_claim(&self, id: ReservationId, token: ClaimToken) -> Result<(), StoreError> {
        self.push(Call::Release(id.0, token.0));
        let step = self.releases.borrow_mut().pop_front();
        self.answer(step.unwrap_or_else(Fakes::default_ok)).await
    }
}

impl DeadLetters for Fakes {
    async fn record(&self, letter: DeadLetter) -> Result<(), StoreError> {
        self.push(Call::Letter(letter));
        let step = self.letters.borrow_mut().pop_front();
        self.answer(step.unwrap_or_else(Fakes::default_ok)).await
    }
}

impl Clock for Fakes {
    fn now_ms(&self) -> u64 {
        self.push(Call::ClockRead);
        self.handle.now_ms() + CLOCK_OFFSET_MS
    }

    fn sleep_jittered(&self, base_ms: u64, jitter_ms: u64) -> impl Future<Output = ()> {
        self.push(Call::Sleep { base_ms, jitter_ms });
        self.handle.sleep(base_ms + jitter_ms / 2)
    }
}

impl Tokens for Fakes {
    fn fresh_token(&self) -> ClaimToken {
        let token = self.next_token.get();
        self.next_token.set(token + 1);
        ClaimToken(token)
    }
}

pub type TestWorker = ExpiryWorker<Rc<Fakes>, Rc<Fakes>, Rc<Fakes>, Rc<Fakes>>;

/// A simulator, the fakes, and one worker wired to them.
pub struct World {
    pub sim: Sim,
    pub handle: Handle,
    pub fakes: Rc<Fakes>,
    pub worker: Rc<TestWorker>,
}

/// The configuration most tests use: small numbers that read well in a log.
pub fn config() -> WorkerConfig {
    WorkerConfig {
        batch_size: 3,
        claim_for_ms: 5_000,
        idle_ms: 100,
        idle_jitter_ms: 40,
        ..WorkerConfig::default()
    }
}

impl World {
    pub fn new(seed: u64) -> World {
        World::with_config(seed, config())
    }

    pub fn with_config(seed: u64, config: WorkerConfig) -> World {
        let sim = Sim::new(SimConfig::seeded(seed));
        let handle = sim.handle();
        let fakes = Fakes::new(handle.clone());
        let worker = ExpiryWorker::new(
            config,
            fakes.clone(),
            fakes.clone(),
            fakes.clone(),
            fakes.clone(),
        )
        .expect("a valid test configuration");
        World {
            sim,
            handle,
            fakes,
            worker: Rc::new(worker),
        }
    }

    /// Spawns a task that stops the worker at virtual `at_ms`, marking `stop called` and
    /// `stop returned` around it.
    pub fn stop_at(&self, at_ms: u64) -> JoinHandle<()> {
        let (worker, fakes, handle) =
            (self.worker.clone(), self.fakes.clone(), self.handle.clone());
        self.handle.spawn(async move {
            handle.sleep_until(at_ms).await;
            fakes.mark("stop called");
            worker.stop().await;
            fakes.mark("stop returned");
        })
    }

    /// Runs the worker as the main future (something must stop it) and returns its result.
    pub fn run(&mut self) -> Result<RunReport, RunError> {
        let (worker, fakes) = (self.worker.clone(), self.fakes.clone());
        self.sim
            .block_on(async move {
                let result = worker.run().await;
                fakes.mark("run returned");
                result
            })
            .expect_completed()
    }

    /// Runs the worker until it is stopped at `stop_at_ms`, and the stop until it returns;
    /// the run's report.
    pub fn run_until(&mut self, stop_at_ms: u64) -> RunReport {
        let stopper = self.stop_at(stop_at_ms);
        let (worker, fakes) = (self.worker.clone(), self.fakes.clone());
        self.sim
            .block_on(async move {
                let result = worker.run().await;
                fakes.mark("run returned");
                stopper.await.expect("the stopper task completes");
                result
            })
            .expect_completed()
            .expect("no other run is active")
    }
}

/// The seeds every scenario runs under: the scheduling may differ, the calls must not.
pub const SEEDS: [u64; 4] = [0, 1, 7, 42];
