//! The expiry worker: a polling loop that claims due reservations and expires them.
//!
//! Terminology:
//! - *poll*: claim a bounded batch with a fresh token (the store checks the deadline and the
//!   status while it sets the claim), settle each reservation, release each claim whatever
//!   happened (the *finally path*), read the claim's age; or, when the claim answered nothing
//!   or failed, an *idle pause* with jitter.
//! - *settle*: the guarded transition with the retry policy ([`crate::retry`]): expired, a
//!   state conflict (acknowledged), a dead letter, or *abandoned* when a stop came first.
//! - *run slot*: the flag saying a `run` is active; at most one at a time, freed even when the
//!   `run` future is dropped.
//! - *stop request*: a permanent flag set by the first `stop`; from then on no claim and no
//!   transition is sent (a call in flight is awaited), pauses end at once, and every claim
//!   already held is still released.

use std::cell::Cell;
use std::fmt;
use std::pin::pin;

use futures::future::{Either, select};

use crate::config::{ConfigError, WorkerConfig};
use crate::letter::{DeadLetter, replay_command};
use crate::notify::Changed;
use crate::ports::{
    ClaimToken, Clock, DeadLetters, ExpireOutcome, Now, ReservationId, Store, StoreError, Tokens,
};
use crate::report::{RunEnd, RunError, RunReport};
use crate::retry::{Backoff, DeadReason, ErrorClass, RetryDecision, decide_retry};

/// How one reservation of a batch was settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Settled {
    Expired,
    /// A state conflict, acknowledged.
    Conflict(ExpireOutcome),
    DeadLettered,
    /// The worker gave up but could not record the dead letter.
    DeadLetterFailed,
    /// A stop came before it was settled.
    Abandoned,
}

/// A reservation expiry worker for one node.
///
/// [`run`](Self::run) polls until [`stop`](Self::stop): each poll claims up to `batch_size`
/// due reservations with a fresh token, expires each with the guarded transition (retrying
/// transient errors by the policy, acknowledging state conflicts, recording dead letters) and
/// releases each claim on every path. It passes [`Now::StoreClock`] everywhere: the store's
/// clock, never the worker's, decides what is due.
pub struct ExpiryWorker<S, D, C, T> {
    config: WorkerConfig,
    store: S,
    letters: D,
    clock: C,
    tokens: T,
    stop_requested: Cell<bool>,
    running: Cell<bool>,
    /// Notified whenever `stop_requested` or `running` changes.
    changed: Changed,
}

impl<S, D, C, T> fmt::Debug for ExpiryWorker<S, D, C, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExpiryWorker")
            .field("config", &self.config)
            .field("stop_requested", &self.stop_requested.get())
            .field("running", &self.running.get())
            .finish_non_exhaustive()
    }
}

/// Holds the run slot; frees it (and tells a waiting `stop`) when dropped.
struct RunSlot<'a> {
    running: &'a Cell<bool>,
    changed: &'a Changed,
}

impl<'a> RunSlot<'a> {
    fn take(running: &'a Cell<bool>, changed: &'a Changed) -> RunSlot<'a> {
        // invariant: the slot is free when a run takes it.
        assert!(!running.get(), "two runs hold the slot");
        running.set(true);
        RunSlot { running, changed }
    }
}

impl Drop for RunSlot<'_> {
    fn drop(&mut self) {
        self.running.set(false);
        self.changed.notify();
    }
}

impl<S: Store, D: DeadLetters, C: Clock, T: Tokens> ExpiryWorker<S, D, C, T> {
    /// Builds a worker; fails with the first rule `config` breaks. No port is touched.
    pub fn new(
        config: WorkerConfig,
        store: S,
        letters: D,
        clock: C,
        tokens: T,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(ExpiryWorker {
            config,
            store,
            letters,
            clock,
            tokens,
            stop_requested: Cell::new(false),
            running: Cell::new(false),
            changed: Changed::default(),
        })
    }

    /// The (validated) configuration.
    pub fn config(&self) -> &WorkerConfig {
        &self.config
    }

    /// Polls until `stop`, then reports the run's metrics.
    ///
    /// - While another `run` of this worker is active: `Err(AlreadyRunning)` at once.
    /// - After `stop`: [`RunEnd::StoppedBeforeStart`] at once, with no port call.
    /// - Otherwise poll (see the module docs) until a stop request is seen, and end with
    ///   [`RunEnd::Stopped`] once every claim of the batch in hand is released.
    ///
    /// Dropping the future mid-poll frees the run slot (so `stop` still resolves) but releases
    /// nothing: those claims simply expire, and other workers take the reservations then.
    pub async fn run(&self) -> Result<RunReport, RunError> {
        if self.running.get() {
            return Err(RunError::AlreadyRunning);
        }
        if self.stop_requested.get() {
            return Ok(RunReport::new(RunEnd::StoppedBeforeStart));
        }
        let _slot = RunSlot::take(&self.running, &self.changed);
        let mut report = RunReport::new(RunEnd::Stopped);
        while !self.stop_requested.get() {
            self.poll(&mut report).await;
        }
        // invariant: every reservation claimed was settled or abandoned, never lost.
        debug_assert!(
            report.claimed
                >= report.expired
                    + report.state_conflicts()
                    + report.dead_letters
                    + report.dead_letter_errors
        );
        Ok(report)
    }

    /// Stops the worker for good, then waits until no `run` is active.
    ///
    /// The request takes effect when this future is first polled: no new claim or transition
    /// is sent, a pause ends at once, the call in flight is awaited, and every claim held is
    /// released before the run ends. Idempotent; any number of callers may wait.
    pub async fn stop(&self) {
        self.stop_requested.set(true);
        self.changed.notify();
        while self.running.get() {
            self.changed.next().await;
        }
        // invariant: stop returns only once no run is active.
        debug_assert!(!self.running.get());
    }

    /// One poll: claim a batch, settle and release each reservation, or pause when idle.
    async fn poll(&self, report: &mut RunReport) {
        let token = self.tokens.fresh_token();
        report.polls += 1;
        let claimed = self
            .store
            .claim_expired(
                self.config.batch_size,
                Now::StoreClock,
                token,
                self.config.claim_for_ms,
            )
            .await;
        let batch = match claimed {
            Ok(batch) if !batch.is_empty() => batch,
            Ok(_) => return self.idle().await,
            Err(_) => {
                report.claim_errors += 1;
                return self.idle().await;
            }
        };
        // invariant: the store answers no more than the batch asked for.
        debug_assert!(batch.len() <= self.config.batch_size as usize);
        let first_seen_ms = self.clock.now_ms();
        report.claimed += batch.len() as u64;
        for reservation in &batch {
            let settled = match self.stop_requested.get() {
                true => Settled::Abandoned,
                false => self.settle(reservation.id, first_seen_ms, report).await,
            };
            count(report, settled);
            // The finally path: the claim is released whatever happened above.
            if self.release(reservation.id, token).await.is_err() {
                report.release_errors += 1;
            }
        }
        let age_ms = self.clock.now_ms().saturating_sub(first_seen_ms);
        report.max_claim_age_ms = report.max_claim_age_ms.max(age_ms);
    }

    async fn release(&self, id: ReservationId, token: ClaimToken) -> Result<(), StoreError> {
        self.store.release_claim(id, token).await
    }

    /// The guarded transition for `id`, attempt after attempt, as the policy decides.
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
            let (class, conflict) = match self.store.expire_if_held(id, Now::StoreClock).await {
                Ok(ExpireOutcome::Expired) => return Settled::Expired,
                Ok(conflict) => (ErrorClass::StateConflict, Some(conflict)),
                Err(error) => (ErrorClass::of(&error), None),
            };
            match decide_retry(class, attempt, &self.config.retry) {
                RetryDecision::Ack => {
                    // invariant: only a state conflict is acknowledged.
                    let conflict = conflict.expect("the policy acknowledges state conflicts only");
                    return Settled::Conflict(conflict);
                }
                RetryDecision::Retry(backoff) => {
                    if !self.pause(backoff).await {
                        return Settled::Abandoned;
                    }
                }
                RetryDecision::DeadLetter(reason) => {
                    let letter = dead_letter(id, reason, attempt, first_seen_ms, class);
                    return match self.letters.record(letter).await {
                        Ok(()) => Settled::DeadLettered,
                        Err(_) => Settled::DeadLetterFailed,
                    };
                }
            }
        }
    }

    /// The idle pause (ends early on stop).
    async fn idle(&self) {
        let pause = Backoff {
            base_ms: self.config.idle_ms,
            jitter_ms: self.config.idle_jitter_ms,
        };
        self.pause(pause).await;
    }

    /// Sleeps `pause` unless a stop request comes first; true when it slept to the end and no
    /// stop was requested.
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
            self.changed.next().await;
        }
    }
}

/// The dead letter of `id` after `attempts` attempts, the last failing with `last_error`.
fn dead_letter(
    id: ReservationId,
    reason: DeadReason,
    attempts: u32,
    first_seen_ms: u64,
    last_error: ErrorClass,
) -> DeadLetter {
    DeadLetter {
        reservation: id,
        reason,
        attempts,
        first_seen_ms,
        last_error,
        replay: replay_command(id),
    }
}

/// Adds one settled reservation to the report.
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
