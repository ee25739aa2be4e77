//! The job runner: one attempt per `run`, stoppable at any instant.
//!
//! Terminology:
//! - *attempt*: one `run` that got past its start checks: a fresh token, a conditional
//!   create, the job under the claim if the create won, then the release.
//! - *attempt slot*: the flag saying an attempt is active; at most one `run` holds it.
//! - *trust*: the [`Deadline`] the attempt keeps on its claim, started when the create (later:
//!   the last granted renewal) was sent and lasting the trusted time
//!   ([`ClaimConfig::trusted_ms`]). While it has not passed, the store holds the claim.
//! - *keeper*: the half of an attempt that watches the job. With renewal on, it renews the
//!   claim on schedule and stops the job (aborts its future, so it takes no further step) when
//!   the trust passes, a renewal finds the claim gone or fails, or `stop` comes; without
//!   renewal it watches only for the job's end and `stop`, so a long job runs past the claim's
//!   deadline. It runs beside the job inside the `run` future (no task is spawned), and is
//!   polled before the job, so a job waking at the same instant as the keeper's reason to stop
//!   it takes no further step.
//! - *release*: at the end of every attempt whose create won, on every way out: a conditional
//!   delete, or, on a store that cannot compare and delete in one step, a read that leaves
//!   the claim to run out. A release that finds the claim gone is counted and reported.

use std::cell::Cell;
use std::fmt;
use std::pin::pin;

use futures::future::{AbortHandle, Abortable, Aborted, Either, select};

use crate::config::{ClaimConfig, ConfigError};
use crate::ports::{Clock, HolderToken, Job, Removal, Renewal, Store, StoreError, TokenSource};
use crate::report::{AttemptEnd, AttemptReport, Found, LossCause, Release, RunError};
use crate::wake::{Changed, Deadline};

/// Runs a job under a holder-token claim; see the module docs.
///
/// Single-threaded: share it with `Rc` and drive its futures on any executor.
pub struct JobRunner<C: Clock, S: Store, T: TokenSource, J: Job> {
    config: ClaimConfig,
    clock: C,
    store: S,
    tokens: T,
    job: J,
    /// Set by the first `stop` and never cleared.
    stop_requested: Cell<bool>,
    /// True while a `run` holds the attempt slot.
    active: Cell<bool>,
    /// Releases so far that found the claim gone.
    claims_gone: Cell<u64>,
    /// Woken after any change of `stop_requested`, `active`, or an attempt's job ending.
    changed: Changed,
}

impl<C: Clock, S: Store, T: TokenSource, J: Job> fmt::Debug for JobRunner<C, S, T, J> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobRunner")
            .field("config", &self.config)
            .field("stop_requested", &self.stop_requested.get())
            .field("active", &self.active.get())
            .field("claims_gone", &self.claims_gone.get())
            .finish_non_exhaustive()
    }
}

/// Why the keeper let the job end.
enum Kept {
    /// The job ended by itself.
    JobOver,
    /// The claim could no longer be trusted; the job was stopped.
    Lost(LossCause),
    /// `stop` came; the job was stopped.
    Stopped,
}

/// The answer of a renewal, and whether the trust passed or a stop came while it flew.
struct RenewalOutcome {
    answer: Result<Renewal, StoreError>,
    trust_passed: bool,
}

impl<C: Clock, S: Store, T: TokenSource, J: Job> JobRunner<C, S, T, J> {
    /// Builds a worker; fails with the first rule `config` breaks. No port is touched.
    pub fn new(
        config: ClaimConfig,
        clock: C,
        store: S,
        tokens: T,
        job: J,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(JobRunner {
            config,
            clock,
            store,
            tokens,
            job,
            stop_requested: Cell::new(false),
            active: Cell::new(false),
            claims_gone: Cell::new(0),
            changed: Changed::new(),
        })
    }

    /// The (validated) configuration.
    pub fn config(&self) -> &ClaimConfig {
        &self.config
    }

    /// Releases so far that found the claim gone (the signal that the lifetime is short).
    pub fn claims_gone(&self) -> u64 {
        self.claims_gone.get()
    }

    /// One attempt, and its report.
    ///
    /// - While another `run` is in progress: `Err(AlreadyRunning)` at once, no call.
    /// - After `stop`: `Ok` with [`AttemptEnd::StoppedBeforeStart`] at once, no call.
    /// - Otherwise draw a fresh token and create the claim if the key is absent. A lost or
    ///   failed create ends the attempt with no other call.
    /// - With the claim: unless `stop` came or the trust already passed, run the job; the
    ///   keeper renews the claim every `renew_every_ms` (if set) and stops the job when the
    ///   claim can no longer be trusted or on `stop`. Without renewal the job runs to its end,
    ///   past the claim's deadline if it is long.
    /// - Then, on every way out, release: delete only while the key holds this token (or, on
    ///   a store without compare-and-delete, read it and leave the claim to run out). A
    ///   release that finds the claim gone is counted in `claims_gone`.
    ///
    /// Dropping the future mid-attempt frees the attempt slot (so `stop` still resolves) but
    /// cannot release the claim; it then runs out on its own.
    pub async fn run(&self) -> Result<AttemptReport, RunError> {
        if self.active.get() {
            return Err(RunError::AlreadyRunning);
        }
        if self.stop_requested.get() {
            return Ok(self.report(AttemptEnd::StoppedBeforeStart, None, 0, None));
        }
        let _slot = Slot::take(&self.active, &self.changed);
        Ok(self.attempt().await)
    }

    /// Stops this worker for good, then waits for the active attempt (if any) to settle.
    ///
    /// From the first poll on, no attempt starts and a running job is stopped at its next
    /// await; a renewal in flight is awaited; the claim is released. Resolves once no `run`
    /// is active. Calling it again, or from several places, is fine.
    pub async fn stop(&self) {
        if !self.stop_requested.replace(true) {
            self.changed.wake_all();
        }
        // invariant: from here on no attempt starts, so the active one can only wind down.
        debug_assert!(self.stop_requested.get());
        self.changed.until(|| !self.active.get()).await;
    }

    fn report(
        &self,
        end: AttemptEnd,
        token: Option<HolderToken>,
        renewals: u32,
        release: Option<Release>,
    ) -> AttemptReport {
        AttemptReport {
            end,
            token,
            renewals,
            release,
            claims_gone: self.claims_gone.get(),
        }
    }

    /// A deadline of the trusted time, started now.
    async fn trust_from_now(&self) -> Deadline<'_> {
        let mut trust = Deadline::new(self.clock.sleep(self.config.trusted_ms()));
        trust.start().await;
        trust
    }

    /// Token, create, the job under the claim, release.
    async fn attempt(&self) -> AttemptReport {
        // invariant: the slot is ours and no stop came before this attempt began.
        debug_assert!(self.active.get() && !self.stop_requested.get());
        let token = self.tokens.fresh();
        let mut trust = self.trust_from_now().await;
        let key = &self.config.key;
        let created = self
            .store
            .create_if_absent(key, token, self.config.lifetime_ms)
            .await;
        match created {
            Ok(true) => {}
            Ok(false) => return self.report(AttemptEnd::NotHolder, Some(token), 0, None),
            Err(error) => {
                return self.report(AttemptEnd::CreateFailed(error), Some(token), 0, None);
            }
        }
        let (end, renewals) = if self.stop_requested.get() {
            (AttemptEnd::Stopped, 0)
        } else if trust.passed().await {
            (AttemptEnd::TooLate, 0)
        } else {
            self.hold(token, trust).await
        };
        let release = self.release(token).await;
        self.report(end, Some(token), renewals, Some(release))
    }

    /// Runs the job beside the keeper until one of them ends it.
    async fn hold(&self, token: HolderToken, trust: Deadline<'_>) -> (AttemptEnd, u32) {
        let (abort, registration) = AbortHandle::new_pair();
        let job_over = Cell::new(false);
        let job = async {
            let result = Abortable::new(self.job.run(), registration).await;
            // Only a job that ended by itself is over; an aborted one was stopped.
            if result.is_ok() {
                job_over.set(true);
                self.changed.wake_all();
            }
            result
        };
        let keeper = self.keep(token, trust, &job_over, &abort);
        // The keeper first: a reason to stop the job is acted on before the job steps again.
        let ((kept, renewals), result) = futures::join!(keeper, job);
        let end = match (kept, result) {
            (Kept::Lost(cause), _) => AttemptEnd::ClaimLost(cause),
            (Kept::Stopped, _) => AttemptEnd::Stopped,
            (Kept::JobOver, Ok(Ok(()))) => AttemptEnd::JobDone,
            (Kept::JobOver, Ok(Err(error))) => AttemptEnd::JobFailed(error),
            (Kept::JobOver, Err(Aborted)) => unreachable!("only the keeper aborts the job"),
        };
        (end, renewals)
    }

    /// The keeper (see the module docs); returns why it let the job end, and the renewals
    /// granted.
    async fn keep(
        &self,
        token: HolderToken,
        mut trust: Deadline<'_>,
        job_over: &Cell<bool>,
        abort: &AbortHandle,
    ) -> (Kept, u32) {
        let mut renewals = 0;
        let Some(every_ms) = self.config.renew_every_ms else {
            // No renewal: the job runs to its end, whatever the claim's deadline.
            let reason = || job_over.get() || self.stop_requested.get();
            self.changed.until(reason).await;
            return (self.job_or_stop(job_over, abort), renewals);
        };
        loop {
            let reason = || job_over.get() || self.stop_requested.get();
            let timer = pin!(self.clock.sleep(every_ms));
            let waiting = pin!(self.changed.until(reason));
            let woken = select(waiting, select(&mut trust, timer)).await;
            match woken {
                Either::Left(_) => return (self.job_or_stop(job_over, abort), renewals),
                Either::Right((Either::Left(_), _)) => {
                    abort.abort();
                    return (Kept::Lost(LossCause::NotRenewedInTime), renewals);
                }
                Either::Right((Either::Right(_), _)) => {}
            }
            let mut candidate = self.trust_from_now().await;
            let outcome = self.renew(token, &mut trust, abort).await;
            // Counted whatever ends the job now: the store granted it.
            renewals += u32::from(matches!(outcome.answer, Ok(Renewal::Renewed)));
            // A stop or the trust's end may have come with the answer: the job stops now.
            if self.stop_requested.get() && !job_over.get() {
                abort.abort();
                return (Kept::Stopped, renewals);
            }
            if outcome.trust_passed && !job_over.get() {
                abort.abort();
                return (Kept::Lost(LossCause::NotRenewedInTime), renewals);
            }
            let loss = match outcome.answer {
                Ok(Renewal::Renewed) => None,
                Ok(Renewal::NotHolder) => Some(LossCause::RenewRefused(Found::Foreign)),
                Ok(Renewal::Absent) => Some(LossCause::RenewRefused(Found::Absent)),
                Err(error) => Some(LossCause::RenewFailed(error)),
            };
            if job_over.get() {
                return (Kept::JobOver, renewals);
            }
            if let Some(cause) = loss {
                abort.abort();
                return (Kept::Lost(cause), renewals);
            }
            // The renewal was granted: trust the claim from the instant it was sent.
            std::mem::swap(&mut trust, &mut candidate);
        }
    }

    /// The job ended, or `stop` came first (then the job is stopped).
    fn job_or_stop(&self, job_over: &Cell<bool>, abort: &AbortHandle) -> Kept {
        if job_over.get() {
            return Kept::JobOver;
        }
        // invariant: the keeper was woken for one of its two reasons.
        debug_assert!(self.stop_requested.get());
        abort.abort();
        Kept::Stopped
    }

    /// Sends one renewal and waits for its answer. If the trust passes or `stop` comes
    /// meanwhile, the job is stopped at once; the answer is awaited all the same.
    async fn renew(
        &self,
        token: HolderToken,
        trust: &mut Deadline<'_>,
        abort: &AbortHandle,
    ) -> RenewalOutcome {
        let lifetime_ms = self.config.lifetime_ms;
        let mut call = pin!(
            self.store
                .renew_if_holder(&self.config.key, token, lifetime_ms)
        );
        let stopped = || self.stop_requested.get();
        let waiting = pin!(self.changed.until(stopped));
        let reason = select(waiting, &mut *trust);
        if let Either::Left((answer, _)) = select(call.as_mut(), reason).await {
            return RenewalOutcome {
                answer,
                trust_passed: false,
            };
        }
        // Stop the job now; the renewal in flight is still awaited.
        abort.abort();
        let trust_passed = trust.passed().await;
        RenewalOutcome {
            answer: call.await,
            trust_passed,
        }
    }

    /// Releases the claim of `token` (see the module docs) and counts a signal.
    async fn release(&self, token: HolderToken) -> Release {
        let key = &self.config.key;
        let release = if self.store.compare_and_delete() {
            match self.store.delete_if_holder(key, token).await {
                Ok(Removal::Deleted) => Release::Deleted,
                Ok(Removal::NotHolder) => Release::Gone(Found::Foreign),
                Ok(Removal::Absent) => Release::Gone(Found::Absent),
                Err(error) => Release::Failed(error),
            }
        } else {
            match self.store.get(key).await {
                Ok(Some(held)) if held == token => Release::LeftToExpire,
                Ok(Some(_)) => Release::Gone(Found::Foreign),
                Ok(None) => Release::Gone(Found::Absent),
                Err(error) => Release::Failed(error),
            }
        };
        if release.is_signal() {
            let before = self.claims_gone.get();
            self.claims_gone.set(before + 1);
            // invariant: every release that found the claim gone is counted, once.
            debug_assert_eq!(self.claims_gone.get(), before + 1);
        }
        release
    }
}

/// Holds the attempt slot for the life of a `run` future and frees it however that ends,
/// waking a `stop` that waits for it.
struct Slot<'w> {
    active: &'w Cell<bool>,
    changed: &'w Changed,
}

impl<'w> Slot<'w> {
    fn take(active: &'w Cell<bool>, changed: &'w Changed) -> Slot<'w> {
        // invariant: the caller saw the slot free, with no await in between.
        assert!(!active.get(), "attempt slot taken twice");
        active.set(true);
        Slot { active, changed }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        debug_assert!(self.active.get());
        self.active.set(false);
        self.changed.wake_all();
    }
}
