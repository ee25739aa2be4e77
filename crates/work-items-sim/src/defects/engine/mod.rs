//! The shared engine: a copy of the production worker's loop with one defect switch.
//!
//! Terminology (the same as `work_items_worker::worker`):
//! - *run*: one call of `run`: find, claim, process, repeat, then report.
//! - *run slot*: the flag saying a run is active; at most one `run` holds it.
//! - *stop request*: a permanent flag set by the first `stop`.
//! - *flaw*: the one defect a worker has ([`Flaw`]); every place it changes is marked
//!   `// defect(<name>):`. With no flaw every call, clock read and sleep happens exactly as
//!   in the production worker (the `faithful` test compares traces).

mod claim;

use std::cell::Cell;
use std::fmt;
use std::pin::pin;

use futures::future::{Either, select};
use work_items_worker::{
    ClaimError, Clock, ConfigError, ItemId, ItemReport, Lease, Notify, Provider, RunEnd, RunError,
    RunReport, RunStatus, Store, Transport, WorkerConfig,
};

use crate::ports::UnsafeStore;
use claim::ClaimWork;

/// The defects a worker of the engine may have, one at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flaw {
    /// `plain-write-claim`: claims an item the store's read said was claimable by writing
    /// itself as the owner with a plain (unconditional) write.
    PlainWriteClaim,
    /// `unfenced-apply`: applies chunks without the token predicate.
    UnfencedApply,
    /// `keyless-retry`: after an ambiguous provider apply, retries at once with a new key,
    /// without reconciling.
    KeylessRetry,
    /// `lease-lost-retry`: treats lease-lost like a transport error and retries the write
    /// with the same token.
    LeaseLostRetry,
    /// `unfenced-done`: marks items done without the owner check.
    UnfencedDone,
    /// `worker-token`: keeps the first token it was granted and sends it with every write of
    /// every later claim.
    WorkerToken,
    /// `store-expiry-renewal`: decides a renewal is due by comparing the store's lease expiry
    /// with its own clock instead of measuring the interval on its own clock.
    StoreExpiryRenewal,
    /// `no-deadline`: goes on claiming new items after the pass's deadline has passed.
    NoDeadline,
}

/// Why the loop of a run stopped claiming.
enum Halt {
    NothingClaimable,
    Deadline,
    Stopped,
    Unavailable(Transport),
}

/// One worker: the production loop plus its flaw.
pub(crate) struct Engine<C: Clock, S: Store + UnsafeStore, P: Provider> {
    owner_id: String,
    config: WorkerConfig,
    flaw: Option<Flaw>,
    clock: C,
    store: S,
    provider: P,
    stop_requested: Cell<bool>,
    running: Cell<bool>,
    changed: Notify,
    /// The first token this worker was granted (read only with `worker-token`).
    first_token: Cell<Option<u64>>,
}

impl<C: Clock, S: Store + UnsafeStore, P: Provider> fmt::Debug for Engine<C, S, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("owner_id", &self.owner_id)
            .field("flaw", &self.flaw)
            .field("stop_requested", &self.stop_requested.get())
            .field("running", &self.running.get())
            .finish_non_exhaustive()
    }
}

impl<C: Clock, S: Store + UnsafeStore, P: Provider> Engine<C, S, P> {
    /// Validates `config` like the production worker; no port is touched.
    pub(crate) fn new(
        owner_id: impl Into<String>,
        config: WorkerConfig,
        (clock, store, provider): (C, S, P),
        flaw: Option<Flaw>,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Engine {
            owner_id: owner_id.into(),
            config,
            flaw,
            clock,
            store,
            provider,
            stop_requested: Cell::new(false),
            running: Cell::new(false),
            changed: Notify::new(),
            first_token: Cell::new(None),
        })
    }

    pub(crate) fn has(&self, flaw: Flaw) -> bool {
        self.flaw == Some(flaw)
    }

    pub(crate) fn config(&self) -> &WorkerConfig {
        &self.config
    }

    pub(crate) fn clock(&self) -> &C {
        &self.clock
    }

    pub(crate) fn store(&self) -> &S {
        &self.store
    }

    pub(crate) fn provider(&self) -> &P {
        &self.provider
    }

    pub(crate) fn stopping(&self) -> bool {
        self.stop_requested.get()
    }

    /// As `ItemWorker::run`.
    pub(crate) async fn run(&self) -> Result<RunReport, RunError> {
        if self.running.get() {
            return Err(RunError::AlreadyRunning);
        }
        if self.stop_requested.get() {
            return Ok(RunReport::new(RunEnd::StoppedBeforeStart));
        }
        let _slot = RunSlot::take(&self.running, &self.changed);
        let mut report = RunReport::new(RunEnd::Complete);
        let halt = self.claim_loop(&mut report.items).await;
        Ok(self.finish(report, halt).await)
    }

    /// As `ItemWorker::stop`.
    pub(crate) async fn stop(&self) {
        if !self.stop_requested.replace(true) {
            self.changed.wake_all();
        }
        debug_assert!(self.stop_requested.get());
        self.changed.until(|| !self.running.get()).await;
    }

    /// As `ItemWorker::pause`.
    pub(crate) async fn pause(&self, ms: u64) -> bool {
        let sleep = pin!(self.clock.sleep(ms));
        let stop = pin!(self.changed.until(|| self.stop_requested.get()));
        match select(sleep, stop).await {
            Either::Left(_) => !self.stop_requested.get(),
            Either::Right(_) => false,
        }
    }

    async fn claim_loop(&self, items: &mut Vec<ItemReport>) -> Halt {
        let started_ms = self.clock.now_ms();
        let mut after = None;
        loop {
            if self.stopping() {
                return Halt::Stopped;
            }
            let item = match self.find(after).await {
                Ok(Some(item)) => item,
                Ok(None) => return Halt::NothingClaimable,
                Err(None) => return Halt::Stopped,
                Err(Some(failure)) => return Halt::Unavailable(failure),
            };
            after = Some(item);
            let now_ms = self.clock.now_ms();
            // defect(no-deadline): the correct worker stops claiming once the deadline passed.
            let past = now_ms.saturating_sub(started_ms) >= self.config.deadline_ms;
            if past && !self.has(Flaw::NoDeadline) {
                return Halt::Deadline;
            }
            if self.stopping() {
                return Halt::Stopped;
            }
            let Some(mut lease) = self.claim(item, now_ms).await else {
                continue;
            };
            if self.has(Flaw::WorkerToken) {
                // defect(worker-token): the correct worker uses each claim's own token.
                let first = self.first_token.get().unwrap_or(lease.token);
                self.first_token.set(Some(first));
                lease.token = first;
            }
            let (token, attempt) = (lease.token, lease.attempt);
            let outcome = ClaimWork::new(self, lease, now_ms).process().await;
            items.push(ItemReport {
                item,
                token,
                attempt,
                outcome,
            });
        }
    }

    async fn find(&self, after: Option<ItemId>) -> Result<Option<ItemId>, Option<Transport>> {
        let mut retry = 0;
        loop {
            match self.store.next_claimable(after).await {
                Ok(found) => return Ok(found),
                Err(failure) if retry >= self.config.max_retries => return Err(Some(failure)),
                Err(_) => {
                    if !self.pause(self.config.backoff(retry)).await {
                        return Err(None);
                    }
                    retry += 1;
                }
            }
        }
    }

    async fn claim(&self, item: ItemId, mut now_ms: u64) -> Option<Lease> {
        if self.has(Flaw::PlainWriteClaim) {
            return self.plain_write_claim(item, now_ms).await;
        }
        let lease_ms = self.config.lease_ms;
        let mut retry = 0;
        loop {
            match self
                .store
                .claim(item, &self.owner_id, now_ms, lease_ms)
                .await
            {
                Ok(lease) => {
                    debug_assert!(lease.item == item && lease.chunks >= 1);
                    return Some(lease);
                }
                Err(ClaimError::Transport(Transport::Rejected))
                    if retry < self.config.max_retries =>
                {
                    if !self.pause(self.config.backoff(retry)).await {
                        return None;
                    }
                    retry += 1;
                    now_ms = self.clock.now_ms();
                }
                Err(_) => return None,
            }
        }
    }

    /// defect(plain-write-claim): the correct worker claims with one conditional write; this
    /// one takes the find's answer (a read: the item was claimable then) as its licence and
    /// writes itself as owner with no condition, so a rival's claim in between is overwritten.
    async fn plain_write_claim(&self, item: ItemId, now_ms: u64) -> Option<Lease> {
        self.store
            .plain_claim(item, now_ms, self.config.lease_ms)
            .await
            .ok()
    }

    async fn finish(&self, mut report: RunReport, halt: Halt) -> RunReport {
        report.end = match halt {
            Halt::Stopped => RunEnd::Stopped,
            Halt::Unavailable(failure) => RunEnd::Unavailable(failure),
            Halt::NothingClaimable | Halt::Deadline if self.stopping() => RunEnd::Stopped,
            Halt::NothingClaimable | Halt::Deadline => match self.status().await {
                Ok(status) => {
                    report.status = Some(status);
                    match (status.open, halt) {
                        (0, _) => RunEnd::Complete,
                        (_, Halt::Deadline) => RunEnd::Deadline,
                        _ => RunEnd::Idle,
                    }
                }
                Err(None) => RunEnd::Stopped,
                Err(Some(failure)) => RunEnd::Unavailable(failure),
            },
        };
        report
    }

    async fn status(&self) -> Result<RunStatus, Option<Transport>> {
        let mut retry = 0;
        loop {
            match self.store.status().await {
                Ok(status) => return Ok(status),
                Err(failure) if retry >= self.config.max_retries => return Err(Some(failure)),
                Err(_) => {
                    if !self.pause(self.config.backoff(retry)).await {
                        return Err(None);
                    }
                    retry += 1;
                }
            }
        }
    }
}

/// As the production worker's run slot.
struct RunSlot<'w> {
    running: &'w Cell<bool>,
    changed: &'w Notify,
}

impl<'w> RunSlot<'w> {
    fn take(running: &'w Cell<bool>, changed: &'w Notify) -> RunSlot<'w> {
        assert!(!running.get(), "run slot taken twice");
        running.set(true);
        RunSlot { running, changed }
    }
}

impl Drop for RunSlot<'_> {
    fn drop(&mut self) {
        debug_assert!(self.running.get());
        self.running.set(false);
        self.changed.wake_all();
    }
}
