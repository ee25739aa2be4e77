//! The shared engine of the defective workers: a copy of the production core's loop with
//! defect switches.
//!
//! Terminology:
//! - *flaw*: one departure from the correct worker, at one place; each such place carries a
//!   `// defect(<worker name>):` comment. [`Flaws::NONE`] is the correct worker: with it the
//!   engine sends the very calls the core sends, in the same order, with the same clock reads
//!   and pauses (a test compares the two traces byte for byte), so a verdict against a
//!   defective worker is due to its defect alone.
//! - the rest (poll, settle, finally path, stop) is as in `reservations_worker::worker`.
//!
//! These switches exist only here, never in the production core.

use std::cell::Cell;
use std::fmt;
use std::pin::pin;

use futures::future::{Either, select};
use leasesim_sim::Signal;
use reservations_worker::{
    Backoff, ClaimToken, Clock, DeadLetter, DeadLetters, ErrorClass, ExpireOutcome, Now,
    ReservationId, RetryDecision, RunEnd, RunError, RunReport, Store, StoreError, Tokens,
    WorkerConfig, decide_retry, replay_command,
};

use crate::ports::RawStore;

/// How the transition is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpireFlaw {
    /// Correct: the guarded `expire_if_held`.
    Guarded,
    /// `expire_by_id`: an update by id alone.
    ById,
}

/// How a batch is claimed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimFlaw {
    /// Correct: one atomic `claim_expired`.
    Atomic,
    /// `read_due`, then a plain `write_claim` per id read.
    ReadThenWrite,
}

/// How a claim is released.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReleaseFlaw {
    /// Correct: `release_claim` with the claim's token.
    ByToken,
    /// `release_any`: without a token.
    Tokenless,
}

/// Which instant decides eligibility.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NowFlaw {
    /// Correct: the store's own clock.
    StoreClock,
    /// The worker's clock, read for each claim and transition.
    WorkerClock,
    /// The worker's clock, read for each claim; the transition leaves the store's clock to
    /// decide, so a clock ahead of the store's claims holds the transition then refuses.
    WorkerClockClaims,
}

/// Where claim tokens come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenFlaw {
    /// Correct: a fresh token for every claim.
    PerClaim,
    /// One token drawn once, used for every claim of the worker.
    PerWorker,
}

/// What happens after a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryFlaw {
    /// Correct: `decide_retry`.
    Policy,
    /// Every outcome but expired is retried, forever, after the first backoff's base.
    Everything,
}

/// Every switch of the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flaws {
    pub expire: ExpireFlaw,
    pub claim: ClaimFlaw,
    pub release: ReleaseFlaw,
    pub now: NowFlaw,
    pub token: TokenFlaw,
    pub retry: RetryFlaw,
    /// No release for a reservation whose settling ended in an error (a dead letter).
    pub skip_release_on_error: bool,
}

impl Flaws {
    /// The correct worker.
    pub const NONE: Flaws = Flaws {
        expire: ExpireFlaw::Guarded,
        claim: ClaimFlaw::Atomic,
        release: ReleaseFlaw::ByToken,
        now: NowFlaw::StoreClock,
        token: TokenFlaw::PerClaim,
        retry: RetryFlaw::Policy,
        skip_release_on_error: false,
    };
}

/// How one reservation was settled (as in the core).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Settled {
    Expired,
    Conflict(ExpireOutcome),
    DeadLettered,
    DeadLetterFailed,
    Abandoned,
}

/// The engine: the core's worker with [`Flaws`].
pub struct Engine<S, D, C, T> {
    config: WorkerConfig,
    store: S,
    letters: D,
    clock: C,
    tokens: T,
    flaws: Flaws,
    /// The token of a worker with `TokenFlaw::PerWorker`, once drawn.
    fixed_token: Cell<Option<ClaimToken>>,
    stop_requested: Cell<bool>,
    running: Cell<bool>,
    changed: Signal,
}

impl<S, D, C, T> fmt::Debug for Engine<S, D, C, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("flaws", &self.flaws)
            .field("stop_requested", &self.stop_requested.get())
            .finish_non_exhaustive()
    }
}

struct RunSlot<'a> {
    running: &'a Cell<bool>,
    changed: &'a Signal,
}

impl Drop for RunSlot<'_> {
    fn drop(&mut self) {
        self.running.set(false);
        self.changed.notify();
    }
}

impl<S: Store + RawStore, D: DeadLetters, C: Clock, T: Tokens> Engine<S, D, C, T> {
    pub fn new(config: WorkerConfig, ports: (S, D, C, T), flaws: Flaws) -> Engine<S, D, C, T> {
        config
            .validate()
            .expect("scenario loading validated the configuration");
        let (store, letters, clock, tokens) = ports;
        Engine {
            config,
            store,
            letters,
            clock,
            tokens,
            flaws,
            fixed_token: Cell::new(None),
            stop_requested: Cell::new(false),
            running: Cell::new(false),
            changed: Signal::default(),
        }
    }

    pub async fn run(&self) -> Result<RunReport, RunError> {
        if self.running.get() {
            return Err(RunError::AlreadyRunning);
        }
        if self.stop_requested.get() {
            return Ok(RunReport::new(RunEnd::StoppedBeforeStart));
        }
        self.running.set(true);
        let _slot = RunSlot {
            running: &self.running,
            changed: &self.changed,
        };
        let mut report = RunReport::new(RunEnd::Stopped);
        while !self.stop_requested.get() {
            self.poll(&mut report).await;
        }
        Ok(report)
    }

    pub async fn stop(&self) {
        self.stop_requested.set(true);
        self.changed.notify();
        while self.running.get() {
            self.changed.changed().await;
        }
    }

    fn token(&self) -> ClaimToken {
        match self.flaws.token {
            TokenFlaw::PerClaim => self.tokens.fresh_token(),
            // defect(token-per-worker): the correct worker draws a fresh token per claim.
            TokenFlaw::PerWorker => match self.fixed_token.get() {
                Some(token) => token,
                None => {
                    let token = self.tokens.fresh_token();
                    self.fixed_token.set(Some(token));
                    token
                }
            },
        }
    }

    /// The `now` a claim passes.
    fn claim_now(&self) -> Now {
        match self.flaws.now {
            NowFlaw::StoreClock => Now::StoreClock,
            // defect(worker-clock-now, worker-clock-claim): the correct worker lets the
            // store's clock decide what is due.
            NowFlaw::WorkerClock | NowFlaw::WorkerClockClaims => Now::At(self.clock.now_ms()),
        }
    }

    /// The `now` a transition passes.
    fn expire_now(&self) -> Now {
        match self.flaws.now {
            NowFlaw::StoreClock | NowFlaw::WorkerClockClaims => Now::StoreClock,
            // defect(worker-clock-now): the correct worker lets the store's clock decide.
            NowFlaw::WorkerClock => Now::At(self.clock.now_ms()),
        }
    }

    async fn claim(&self, token: ClaimToken) -> Result<Vec<ReservationId>, StoreError> {
        let (batch, claim_for_ms) = (self.config.batch_size, self.config.claim_for_ms);
        if self.flaws.claim == ClaimFlaw::Atomic {
            let claimed = self
                .store
                .claim_expired(batch, self.claim_now(), token, claim_for_ms)
                .await?;
            return Ok(claimed.into_iter().map(|r| r.id).collect());
        }
        // defect(read-then-write-claim): the correct worker claims in one atomic call.
        let read = self.store.read_due(batch, self.claim_now()).await?;
        let mut claimed = Vec::new();
        for id in read {
            if self.stop_requested.get() {
                break;
            }
            if self
                .store
                .write_claim(id, token, claim_for_ms)
                .await
                .is_ok()
            {
                claimed.push(id);
            }
        }
        Ok(claimed)
    }

    async fn poll(&self, report: &mut RunReport) {
        let token = self.token();
        report.polls += 1;
        let batch = match self.claim(token).await {
            Ok(batch) if !batch.is_empty() => batch,
            Ok(_) => return self.idle().await,
            Err(_) => {
                report.claim_errors += 1;
                return self.idle().await;
            }
        };
        let first_seen_ms = self.clock.now_ms();
        report.claimed += batch.len() as u64;
        for &id in &batch {
            let settled = match self.stop_requested.get() {
                true => Settled::Abandoned,
                false => self.settle(id, first_seen_ms, report).await,
            };
            count(report, settled);
            let failed = matches!(settled, Settled::DeadLettered | Settled::DeadLetterFailed);
            // defect(release-skipped-on-error): the correct worker always releases.
            if failed && self.flaws.skip_release_on_error {
                continue;
            }
            if self.release(id, token).await.is_err() {
                report.release_errors += 1;
            }
        }
        let age_ms = self.clock.now_ms().saturating_sub(first_seen_ms);
        report.max_claim_age_ms = report.max_claim_age_ms.max(age_ms);
    }

    async fn release(&self, id: ReservationId, token: ClaimToken) -> Result<(), StoreError> {
        match self.flaws.release {
            ReleaseFlaw::ByToken => self.store.release_claim(id, token).await,
            // defect(tokenless-release): the correct worker releases with its token.
            ReleaseFlaw::Tokenless => self.store.release_any(id).await,
        }
    }

    async fn attempt(&self, id: ReservationId) -> Result<ExpireOutcome, StoreError> {
        match self.flaws.expire {
            ExpireFlaw::Guarded => self.store.expire_if_held(id, self.expire_now()).await,
            // defect(unguarded-expire): the correct worker sends the guarded transition.
            ExpireFlaw::ById => self.store.expire_by_id(id).await,
        }
    }

    fn decide(&self, class: ErrorClass, attempt: u32) -> RetryDecision {
        match self.flaws.retry {
            RetryFlaw::Policy => decide_retry(class, attempt, &self.config.retry),
            // defect(retry-everything): the correct worker follows the policy.
            RetryFlaw::Everything => RetryDecision::Retry(Backoff {
                base_ms: self.config.retry.backoff(1).base_ms,
                jitter_ms: 0,
            }),
        }
    }

    async fn settle(
        &self,
        id: ReservationId,
        first_seen_ms: u64,
        report: &mut RunReport,
    ) -> Settled {
        let mut attempt = 0;
        loop {
            attempt += 1;
            if attempt > 1 {
                report.retries += 1;
            }
            let (class, conflict) = match self.attempt(id).await {
                Ok(ExpireOutcome::Expired) => return Settled::Expired,
                Ok(conflict) => (ErrorClass::StateConflict, Some(conflict)),
                Err(error) => (ErrorClass::of(&error), None),
            };
            match self.decide(class, attempt) {
                RetryDecision::Ack => {
                    return Settled::Conflict(conflict.expect("only conflicts are acknowledged"));
                }
                RetryDecision::Retry(backoff) => {
                    if !self.pause(backoff).await {
                        return Settled::Abandoned;
                    }
                }
                RetryDecision::DeadLetter(reason) => {
                    let letter = DeadLetter {
                        reservation: id,
                        reason,
                        attempts: attempt,
                        first_seen_ms,
                        last_error: class,
                        replay: replay_command(id),
                    };
                    return match self.letters.record(letter).await {
                        Ok(()) => Settled::DeadLettered,
                        Err(_) => Settled::DeadLetterFailed,
                    };
                }
            }
        }
    }

    async fn idle(&self) {
        let pause = Backoff {
            base_ms: self.config.idle_ms,
            jitter_ms: self.config.idle_jitter_ms,
        };
        self.pause(pause).await;
    }

    async fn pause(&self, pause: Backoff) -> bool {
        if self.stop_requested.get() {
            return false;
        }
        let sleep = pin!(self.clock.sleep_jittered(pause.base_ms, pause.jitter_ms));
        let stopped = pin!(self.until_stopped());
        match select(sleep, stopped).await {
            Either::Left(((), _)) => !self.stop_requested.get(),
            Either::Right(((), _)) => false,
        }
    }

    async fn until_stopped(&self) {
        while !self.stop_requested.get() {
            self.changed.changed().await;
        }
    }
}

fn count(report: &mut RunReport, settled: Settled) {
    let slot = match settled {
        Settled::Expired => &mut report.expired,
        Settled::Conflict(ExpireOutcome::AlreadyDone) => &mut report.already_done,
        Settled::Conflict(_) => &mut report.not_eligible,
        Settled::DeadLettered => &mut report.dead_letters,
        Settled::DeadLetterFailed => &mut report.dead_letter_errors,
        Settled::Abandoned => &mut report.abandoned,
    };
    *slot += 1;
}
