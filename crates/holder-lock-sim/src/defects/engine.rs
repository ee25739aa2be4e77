//! The engine every defective worker runs: the production core's attempt logic, copied,
//! with the defect switches of [`Flaws`].
//!
//! Terminology (as in `holder_lock_worker::worker`):
//! - *attempt*, *attempt slot*, *trust*, *keeper*, *release*: see the core's module docs.
//! - *flawed place*: each departure a switch makes carries a `// defect(<name>):` comment.
//!   With [`Flaws::NONE`] the engine makes the same calls at the same instants as the core
//!   (tested byte for byte on traces), so a verdict against a defective worker comes from its
//!   defect alone.

use std::cell::Cell;
use std::fmt;
use std::pin::pin;

use futures::future::{AbortHandle, Abortable, Aborted, Either, select};

use holder_lock_worker::{
    AttemptEnd, AttemptReport, Changed, ClaimConfig, Clock, ConfigError, Deadline, Found,
    HolderToken, Job, LossCause, Release, Removal, Renewal, RunError, Store, StoreError,
    TokenSource,
};

use super::flaws::{Flaws, LONGER, NO_TOKEN, ReleaseFlaw, TokenFlaw, TrustFlaw};
use crate::events::HOLDER_KEY;

/// The correct worker with the defects `flaws` switches on.
pub struct Engine<C: Clock, S: Store, T: TokenSource, J: Job> {
    config: ClaimConfig,
    flaws: Flaws,
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

impl<C: Clock, S: Store, T: TokenSource, J: Job> fmt::Debug for Engine<C, S, T, J> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("config", &self.config)
            .field("flaws", &self.flaws)
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

impl<C: Clock, S: Store, T: TokenSource, J: Job> Engine<C, S, T, J> {
    /// Builds a worker; fails with the first rule `config` breaks. No port is touched.
    pub fn new(
        config: ClaimConfig,
        ports: (C, S, T, J),
        flaws: Flaws,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        let (clock, store, tokens, job) = ports;
        let mut config = config;
        if flaws.token == TokenFlaw::NoToken {
            // defect(long-lifetime): a longer lifetime instead of a token.
            config.lifetime_ms *= LONGER;
        }
        Ok(Engine {
            config,
            flaws,
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

    /// The trust started before a create or renewal is sent (`None` for `trust-from-answer`,
    /// which starts it once the answer arrived).
    async fn trust_before_send(&self) -> Option<Deadline<'_>> {
        match self.flaws.trust {
            TrustFlaw::FromSend => Some(self.trust_from_now().await),
            TrustFlaw::FromAnswer => None,
        }
    }

    /// The trust once the answer arrived: the one started at the send, or
    /// (`trust-from-answer`) one started now.
    async fn trust_after_answer<'a>(&'a self, sent: Option<Deadline<'a>>) -> Deadline<'a> {
        if let Some(trust) = sent {
            return trust;
        }
        // defect(trust-from-answer): the whole lifetime on the worker's own timer, counted
        // from the answer instead of four fifths from the send.
        let mut trust = Deadline::new(self.clock.sleep(self.config.lifetime_ms));
        trust.start().await;
        trust
    }

    /// Token, create, the job under the claim, release.
    async fn attempt(&self) -> AttemptReport {
        // invariant: the slot is ours and no stop came before this attempt began.
        debug_assert!(self.active.get() && !self.stop_requested.get());
        let token = self.token();
        let sent = self.trust_before_send().await;
        let key = &self.config.key;
        let created = self
            .store
            .create_if_absent(key, token, self.config.lifetime_ms)
            .await;
        let mut trust = self.trust_after_answer(sent).await;
        match created {
            Ok(true) => {}
            Ok(false) => return self.report(AttemptEnd::NotHolder, Some(token), 0, None),
            Err(error) => {
                return self.report(AttemptEnd::CreateFailed(error), Some(token), 0, None);
            }
        }
        let stopped = self.stop_requested.get() || self.write_beside(token).await;
        let (end, renewals) = if stopped {
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
            let sent = self.trust_before_send().await;
            let outcome = self.renew(token, &mut trust, abort).await;
            let mut candidate = self.trust_after_answer(sent).await;
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
            if self.flaws.release == ReleaseFlaw::SideKey {
                // defect(side-key): the token beside the claim is renewed too, watched like
                // the claim's renewal (the loop's head then sees a stop or a passed trust).
                let lifetime_ms = self.config.lifetime_ms;
                let side = self.store.renew_if_holder(HOLDER_KEY, token, lifetime_ms);
                let _ = self.guarded(side, &mut trust, abort).await;
            }
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
        let call = self
            .store
            .renew_if_holder(&self.config.key, token, lifetime_ms);
        let (answer, trust_passed) = self.guarded(call, trust, abort).await;
        RenewalOutcome {
            answer,
            trust_passed,
        }
    }

    /// Awaits `call`; if the trust passes or `stop` comes first, stops the job at once and
    /// still awaits the answer. Returns the answer, and whether the trust had passed.
    async fn guarded<F: std::future::Future>(
        &self,
        call: F,
        trust: &mut Deadline<'_>,
        abort: &AbortHandle,
    ) -> (F::Output, bool) {
        let mut call = pin!(call);
        let stopped = || self.stop_requested.get();
        let waiting = pin!(self.changed.until(stopped));
        let reason = select(waiting, &mut *trust);
        if let Either::Left((answer, _)) = select(call.as_mut(), reason).await {
            return (answer, false);
        }
        // Stop the job now; the call in flight is still awaited.
        abort.abort();
        let trust_passed = trust.passed().await;
        (call.await, trust_passed)
    }

    /// `side-key` writes the token beside the claim (others write nothing); true when a stop
    /// came meanwhile.
    async fn write_beside(&self, token: HolderToken) -> bool {
        if self.flaws.release != ReleaseFlaw::SideKey {
            return false;
        }
        // defect(side-key): the token is also written beside the claim.
        let _ = self
            .store
            .set(HOLDER_KEY, token, self.config.lifetime_ms)
            .await;
        self.stop_requested.get()
    }

    /// The attempt's token.
    fn token(&self) -> HolderToken {
        match self.flaws.token {
            TokenFlaw::Fresh => self.tokens.fresh(),
            // defect(fixed-token): the process id, the same for every attempt.
            TokenFlaw::ProcessId(pid) => HolderToken(pid),
            // defect(long-lifetime): no token: every claim holds the same value.
            TokenFlaw::NoToken => HolderToken(NO_TOKEN),
        }
    }

    /// Releases the claim of `token` and counts a signal.
    async fn release(&self, token: HolderToken) -> Release {
        let release = match self.flaws.release {
            ReleaseFlaw::Conditional => self.release_conditionally(token).await,
            // defect(plain-delete): the key is deleted by name, whatever it holds.
            ReleaseFlaw::PlainDelete => self.delete_by_name().await,
            // defect(read-then-delete): compare in the worker, then delete: two steps.
            ReleaseFlaw::ReadThenDelete => self.read_then_delete(token).await,
            // defect(side-key): check the key beside the claim, then delete the claim by name.
            ReleaseFlaw::SideKey => self.release_by_side_key(token).await,
        };
        if release.is_signal() {
            if self.flaws.swallow_gone {
                // defect(swallowed-release): a release that deleted nothing passes for one
                // that did, and is not counted.
                return Release::Deleted;
            }
            let before = self.claims_gone.get();
            self.claims_gone.set(before + 1);
            // invariant: every release that found the claim gone is counted, once.
            debug_assert_eq!(self.claims_gone.get(), before + 1);
        }
        release
    }

    /// The correct release, of the claim key or (for `side-key`) of the key beside it.
    async fn release_conditionally(&self, token: HolderToken) -> Release {
        self.release_key(&self.config.key, token).await
    }

    async fn release_key(&self, key: &str, token: HolderToken) -> Release {
        if self.store.compare_and_delete() {
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
        }
    }

    async fn delete_by_name(&self) -> Release {
        match self.store.delete(&self.config.key).await {
            Ok(true) => Release::Deleted,
            Ok(false) => Release::Gone(Found::Absent),
            Err(error) => Release::Failed(error),
        }
    }

    async fn read_then_delete(&self, token: HolderToken) -> Release {
        match self.store.get(&self.config.key).await {
            Ok(Some(held)) if held == token => self.delete_by_name().await,
            Ok(Some(_)) => Release::Gone(Found::Foreign),
            Ok(None) => Release::Gone(Found::Absent),
            Err(error) => Release::Failed(error),
        }
    }

    async fn release_by_side_key(&self, token: HolderToken) -> Release {
        match self.release_key(HOLDER_KEY, token).await {
            Release::Deleted => self.delete_by_name().await,
            other => other,
        }
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
