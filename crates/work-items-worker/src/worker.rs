//! The processor loop of one replica: find, claim, process, repeat; stoppable at any instant.
//!
//! Terminology:
//! - *run*: one call of [`ItemWorker::run`]: claim and process items one at a time until
//!   nothing is claimable, the deadline passed, the store stays unreachable, or a stop.
//! - *run slot*: the flag saying a run is active; at most one `run` holds it.
//! - *cursor*: the last item the run tried; the next find starts after it, so a run that lost
//!   a race moves on instead of asking for the same item again.
//! - *stop request*: a permanent flag set by the first `stop`. No find and no claim follow it;
//!   the call in flight is awaited, a held claim is given back, and `stop` resolves once the
//!   run has settled.
//! - *pause*: a backoff sleep; a stop request cuts it short.

use std::cell::Cell;
use std::fmt;
use std::pin::pin;

use futures::future::{Either, select};

use crate::claim::ClaimWork;
use crate::config::{ConfigError, WorkerConfig};
use crate::notify::Notify;
use crate::ports::{ClaimError, Clock, ItemId, Lease, Provider, Store, Transport};
use crate::report::{ItemReport, RunEnd, RunError, RunReport};

/// The work-item worker of one replica.
///
/// Each [`run`](Self::run) claims claimable items one at a time and processes each: it applies
/// the item's local effect chunk by chunk with the claim's fencing token, carries out its
/// external effect at the provider under the item's idempotency key (reconciling an ambiguous
/// answer before any other mutation), then marks the item done, always only if it still owns
/// it. On lease-lost it sends nothing more for that item and moves on. Transient failures are
/// retried with bounded backoff; an item given up is released while it has attempts left and
/// failed, with its last error, once they are spent. The run ends with a [`RunReport`].
///
/// The worker is single-threaded: share it with `Rc` and drive it on any executor.
pub struct ItemWorker<C: Clock, S: Store, P: Provider> {
    owner_id: String,
    config: WorkerConfig,
    clock: C,
    store: S,
    provider: P,
    /// Set by the first `stop` and never cleared.
    stop_requested: Cell<bool>,
    /// True while a `run` holds the run slot.
    running: Cell<bool>,
    /// Woken when either flag above changes.
    changed: Notify,
}

impl<C: Clock, S: Store, P: Provider> fmt::Debug for ItemWorker<C, S, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemWorker")
            .field("owner_id", &self.owner_id)
            .field("config", &self.config)
            .field("stop_requested", &self.stop_requested.get())
            .field("running", &self.running.get())
            .finish_non_exhaustive()
    }
}

/// Why the loop of a run stopped claiming.
enum Halt {
    NothingClaimable,
    Deadline,
    Stopped,
    Unavailable(Transport),
}

impl<C: Clock, S: Store, P: Provider> ItemWorker<C, S, P> {
    /// A worker that claims as `owner_id`. Fails with the first rule `config` breaks; no port
    /// is touched either way.
    pub fn new(
        owner_id: impl Into<String>,
        config: WorkerConfig,
        clock: C,
        store: S,
        provider: P,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(ItemWorker {
            owner_id: owner_id.into(),
            config,
            clock,
            store,
            provider,
            stop_requested: Cell::new(false),
            running: Cell::new(false),
            changed: Notify::new(),
        })
    }

    pub fn owner_id(&self) -> &str {
        &self.owner_id
    }

    pub fn config(&self) -> &WorkerConfig {
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

    /// Processes claimable items until none is left for it, and reports.
    ///
    /// - While another `run` is active: `Err(AlreadyRunning)` at once, with no call.
    /// - After `stop`: [`RunEnd::StoppedBeforeStart`] at once, with no call.
    /// - Otherwise: find the next claimable item, claim it, process it (see the type's docs),
    ///   until a find answers none, the deadline passed, or a stop. Then read the store's
    ///   status: the end is [`RunEnd::Complete`] only if it counts no open item.
    ///
    /// Dropping the future frees the run slot (so `stop` resolves) but gives back no claim;
    /// the claim then expires.
    pub async fn run(&self) -> Result<RunReport, RunError> {
        if self.running.get() {
            return Err(RunError::AlreadyRunning);
        }
        if self.stop_requested.get() {
            return Ok(RunReport::new(RunEnd::StoppedBeforeStart));
        }
        let _slot = RunSlot::take(&self.running, &self.changed);
        let mut report = RunReport::new(RunEnd::Complete);
        let halt = self.claim_loop(&mut report.items).await;
        self.finish(report, halt).await
    }

    /// Stops the worker for good, then waits until no run is active.
    ///
    /// The request takes effect when this future is first polled: no find and no claim is
    /// sent after it, a backoff is cut short, the call in flight is awaited, and a claim held
    /// then (or granted by a claim in flight) is released. Idempotent; dropping the future
    /// keeps the request in force.
    pub async fn stop(&self) {
        if !self.stop_requested.replace(true) {
            self.changed.wake_all();
        }
        // invariant: from here on the run can only wind down.
        debug_assert!(self.stop_requested.get());
        self.changed.until(|| !self.running.get()).await;
    }

    pub(crate) fn stopping(&self) -> bool {
        self.stop_requested.get()
    }

    /// Sleeps `ms` on the clock unless a stop request cuts it short; true if it slept fully.
    pub(crate) async fn pause(&self, ms: u64) -> bool {
        let sleep = pin!(self.clock.sleep(ms));
        let stop = pin!(self.changed.until(|| self.stop_requested.get()));
        match select(sleep, stop).await {
            Either::Left(_) => !self.stop_requested.get(),
            Either::Right(_) => false,
        }
    }

    /// Claims and processes items until the loop halts; records each claim's outcome.
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
            if now_ms.saturating_sub(started_ms) >= self.config.deadline_ms {
                return Halt::Deadline;
            }
            if self.stopping() {
                return Halt::Stopped;
            }
            let Some(lease) = self.claim(item, now_ms).await else {
                continue;
            };
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

    /// The next claimable item, with retries. `Err(None)`: a stop cut the retries short.
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

    /// Claims `item`. A refused claim is retried with backoff; a claim with no answer is not
    /// (it may hold the item now: that claim simply expires).
    async fn claim(&self, item: ItemId, mut now_ms: u64) -> Option<Lease> {
        let lease_ms = self.config.lease_ms;
        let mut retry = 0;
        loop {
            match self
                .store
                .claim(item, &self.owner_id, now_ms, lease_ms)
                .await
            {
                Ok(lease) => {
                    // invariant: a grant is for the item asked for, with at least one chunk.
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

    /// The report, with the store's status read unless the run was stopped.
    async fn finish(&self, mut report: RunReport, halt: Halt) -> Result<RunReport, RunError> {
        report.end = match halt {
            Halt::Stopped => RunEnd::Stopped,
            Halt::Unavailable(failure) => RunEnd::Unavailable(failure),
            // A stop that came during the last find: no status read after it.
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
        // invariant: completion is claimed only on the store's word that nothing is open.
        debug_assert!(report.end != RunEnd::Complete || report.status.is_some_and(|s| s.open == 0));
        Ok(report)
    }

    /// The store's status, with retries. `Err(None)`: a stop cut the retries short.
    async fn status(&self) -> Result<crate::ports::RunStatus, Option<Transport>> {
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

/// Holds the run slot for the life of a `run` future and frees it however that ends,
/// waking a `stop` that waits for it.
struct RunSlot<'w> {
    running: &'w Cell<bool>,
    changed: &'w Notify,
}

impl<'w> RunSlot<'w> {
    fn take(running: &'w Cell<bool>, changed: &'w Notify) -> RunSlot<'w> {
        // invariant: the caller saw the slot free, with no await since.
        assert!(!running.get(), "run slot taken twice");
        running.set(true);
        RunSlot { running, changed }
    }
}

impl Drop for RunSlot<'_> {
    fn drop(&mut self) {
        // invariant: the slot is held until exactly here.
        debug_assert!(self.running.get());
        self.running.set(false);
        self.changed.wake_all();
    }
}
