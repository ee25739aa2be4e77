//! One claim's work, as the production worker does it (`work_items_worker`'s `claim.rs`), with
//! the engine's flaws. Every place a flaw changes is marked `// defect(<name>):`.
//!
//! Terminology (the same as the production worker's):
//! - *claim work*: apply the item's chunks with the claim's token, carry out its external
//!   effect at the provider, mark it done.
//! - *renewal*: before any call, once `renew_every_ms` have passed since the last grant was
//!   asked for, the claim is renewed.
//! - *ambiguous*: a provider apply that got no answer; reconciled by a lookup of the same key.
//! - *exit*: lost, given up, refused, or stopped; all but lost are *settled* (released or
//!   failed).

use std::future::Future;

use work_items_worker::{
    Clock, Effect, IdempotencyKey, ItemError, ItemOutcome, Lease, Lookup, Provider, ProviderError,
    Step, Store, Transport, WorkerConfig, WriteError,
};

use super::{Engine, Flaw};
use crate::ports::UnsafeStore;

/// Why a claim's work stopped short of done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Exit {
    /// A fenced write answered lease-lost.
    Lost,
    /// A call failed `max_retries + 1` times in a row; the error is the last one.
    GiveUp(ItemError),
    /// The provider refuses the item's effect for good.
    Refused,
    /// The worker is stopping.
    Stopped,
}

/// How a claim is settled when its work stops short.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Settle {
    Release,
    Fail,
}

/// The work of one claim (see the module docs).
pub(crate) struct ClaimWork<'w, C: Clock, S: Store + UnsafeStore, P: Provider> {
    worker: &'w Engine<C, S, P>,
    lease: Lease,
    /// The worker's clock when the last grant (the claim, or a renewal) was asked for.
    granted_ms: u64,
}

impl<'w, C: Clock, S: Store + UnsafeStore, P: Provider> ClaimWork<'w, C, S, P> {
    /// Work under `lease`, whose claim was sent at `claimed_ms` on the worker's clock.
    pub(crate) fn new(worker: &'w Engine<C, S, P>, lease: Lease, claimed_ms: u64) -> Self {
        ClaimWork {
            worker,
            lease,
            granted_ms: claimed_ms,
        }
    }

    fn config(&self) -> &'w WorkerConfig {
        self.worker.config()
    }

    /// Carries the claim through to done, or exits cleanly; the claim's outcome.
    pub(crate) async fn process(mut self) -> ItemOutcome {
        let outcome = match self.carry_out().await {
            Ok(()) => ItemOutcome::Done,
            Err(exit) => self.exit(exit).await,
        };
        // invariant: a claim ends done only through its own done-mark.
        debug_assert!(outcome != ItemOutcome::Done || self.lease.chunks >= 1);
        outcome
    }

    /// Local effect, external effect, done: each only while the claim holds.
    async fn carry_out(&mut self) -> Result<(), Exit> {
        let store = self.worker.store();
        let (item, token, chunks) = (self.lease.item, self.lease.token, self.lease.chunks);
        for chunk in 0..chunks {
            let effect = Effect {
                item,
                chunk,
                chunks,
            };
            if self.worker.has(Flaw::UnfencedApply) {
                // defect(unfenced-apply): the correct worker applies only if still owner.
                self.write(Step::Apply, |now_ms| {
                    store.unguarded_apply(item, token, now_ms, effect)
                })
                .await?;
                continue;
            }
            self.write(Step::Apply, |now_ms| {
                store.apply_if_owner(item, token, now_ms, effect)
            })
            .await?;
        }
        self.external().await?;
        if self.worker.has(Flaw::UnfencedDone) {
            // defect(unfenced-done): the correct worker marks done only if still owner.
            return self
                .write(Step::Done, |now_ms| {
                    store.unguarded_done(item, token, now_ms)
                })
                .await;
        }
        self.write(Step::Done, |now_ms| {
            store.mark_done_if_owner(item, token, now_ms)
        })
        .await
    }

    /// defect(lease-lost-retry): after a lease-lost answer the correct worker stops at once;
    /// this one sleeps a backoff and sends the same write again, `max_retries` times.
    async fn retry_lost(&self, lost_retry: &mut u32) -> Result<(), Exit> {
        if !self.worker.has(Flaw::LeaseLostRetry) || *lost_retry >= self.config().max_retries {
            return Err(Exit::Lost);
        }
        let sleep_ms = self.config().backoff(*lost_retry);
        *lost_retry += 1;
        match self.worker.pause(sleep_ms).await {
            true => Ok(()),
            false => Err(Exit::Stopped),
        }
    }

    /// Before any call: a stop ends the work; a due renewal is sent first. Answers the clock
    /// reading to send the call with.
    async fn before_call(&mut self) -> Result<u64, Exit> {
        if self.worker.stopping() {
            return Err(Exit::Stopped);
        }
        let now_ms = self.worker.clock().now_ms();
        if !self.renewal_due(now_ms) {
            return Ok(now_ms);
        }
        self.renew(now_ms).await?;
        // A stop may have come while the renewal was in flight.
        if self.worker.stopping() {
            return Err(Exit::Stopped);
        }
        Ok(self.worker.clock().now_ms())
    }

    /// Is a renewal due at the worker's clock reading `now_ms`?
    fn renewal_due(&self, now_ms: u64) -> bool {
        let config = self.config();
        if self.worker.has(Flaw::StoreExpiryRenewal) {
            // defect(store-expiry-renewal): the correct worker measures the interval on its own
            // clock since it asked for the grant; this one reads the store's expiry on its own
            // clock, so a clock behind the store's renews late.
            let trusted_until_ms = self
                .lease
                .expires_at_ms
                .saturating_sub(config.lease_ms - config.renew_every_ms);
            return now_ms >= trusted_until_ms;
        }
        now_ms.saturating_sub(self.granted_ms) >= config.renew_every_ms
    }

    /// Renews the claim (with retries): lease-lost ends the work.
    async fn renew(&mut self, mut now_ms: u64) -> Result<(), Exit> {
        let (item, token) = (self.lease.item, self.lease.token);
        let lease_ms = self.config().lease_ms;
        let (mut retry, mut lost_retry) = (0, 0);
        loop {
            let renewed = self
                .worker
                .store()
                .renew_if_owner(item, token, now_ms, lease_ms);
            match renewed.await {
                Ok(expires_at_ms) => {
                    self.granted_ms = now_ms;
                    self.lease.expires_at_ms = expires_at_ms;
                    return Ok(());
                }
                Err(WriteError::LeaseLost) => {
                    self.retry_lost(&mut lost_retry).await?;
                    now_ms = self.worker.clock().now_ms();
                }
                Err(WriteError::Transport(failure)) => {
                    let error = ItemError::transport(Step::Renew, failure);
                    self.backoff(&mut retry, error).await?;
                    if self.worker.stopping() {
                        return Err(Exit::Stopped);
                    }
                    now_ms = self.worker.clock().now_ms();
                }
            }
        }
    }

    /// One fenced write of `step`, with retries after transport failures.
    async fn write<T, F, Fut>(&mut self, step: Step, call: F) -> Result<T, Exit>
    where
        F: Fn(u64) -> Fut,
        Fut: Future<Output = Result<T, WriteError>>,
    {
        let (mut retry, mut lost_retry) = (0, 0);
        loop {
            let now_ms = self.before_call().await?;
            match call(now_ms).await {
                Ok(value) => return Ok(value),
                Err(WriteError::LeaseLost) => self.retry_lost(&mut lost_retry).await?,
                Err(WriteError::Transport(failure)) => {
                    self.backoff(&mut retry, ItemError::transport(step, failure))
                        .await?;
                }
            }
        }
    }

    /// After a transport failure: give up once the retries are spent, else sleep the next
    /// backoff (a stop cuts it short).
    async fn backoff(&self, retry: &mut u32, error: ItemError) -> Result<(), Exit> {
        if *retry >= self.config().max_retries {
            return Err(Exit::GiveUp(error));
        }
        let sleep_ms = self.config().backoff(*retry);
        *retry += 1;
        match self.worker.pause(sleep_ms).await {
            true => Ok(()),
            false => Err(Exit::Stopped),
        }
    }

    /// The item's external effect under its own key; an ambiguous answer is reconciled
    /// before the key is sent again.
    async fn external(&mut self) -> Result<(), Exit> {
        let item = self.lease.item;
        let mut key = IdempotencyKey::for_item(item);
        let mut retry = 0;
        loop {
            self.before_call().await?;
            let error = match self.worker.provider().apply(key, item).await {
                Ok(_) => return Ok(()),
                Err(ProviderError::Refused) => return Err(Exit::Refused),
                Err(ProviderError::Transport(Transport::Rejected)) => {
                    ItemError::Rejected(Step::Provider)
                }
                Err(ProviderError::Transport(Transport::Timeout))
                    if self.worker.has(Flaw::KeylessRetry) =>
                {
                    // defect(keyless-retry): the correct worker looks the key up first, and
                    // sends the same key again only if the provider never accepted it.
                    key.salt += 1;
                    ItemError::Timeout(Step::Provider)
                }
                Err(ProviderError::Transport(Transport::Timeout)) => {
                    // invariant: after an ambiguous apply the next provider call is a lookup.
                    if self.reconcile(key).await? {
                        return Ok(());
                    }
                    ItemError::Timeout(Step::Provider)
                }
            };
            self.backoff(&mut retry, error).await?;
        }
    }

    /// Asks the provider what became of `key` (with retries): true if it was applied; false
    /// if the provider never accepted it.
    async fn reconcile(&mut self, key: IdempotencyKey) -> Result<bool, Exit> {
        let mut retry = 0;
        loop {
            self.before_call().await?;
            match self.worker.provider().lookup(key).await {
                Ok(Lookup::Applied) => return Ok(true),
                Ok(Lookup::Unknown) => return Ok(false),
                Ok(Lookup::Refused) => return Err(Exit::Refused),
                Err(failure) => {
                    let error = ItemError::transport(Step::Lookup, failure);
                    self.backoff(&mut retry, error).await?;
                }
            }
        }
    }

    /// Ends work that stopped short: a lost claim is left alone, any other is settled.
    async fn exit(&mut self, exit: Exit) -> ItemOutcome {
        match exit {
            Exit::Lost => ItemOutcome::Lost,
            Exit::Stopped => self.settle(Settle::Release, ItemError::Stopped).await,
            Exit::Refused => self.settle(Settle::Fail, ItemError::ProviderRefused).await,
            Exit::GiveUp(error) if self.lease.attempt >= self.config().max_attempts => {
                self.settle(Settle::Fail, error).await
            }
            Exit::GiveUp(error) => self.settle(Settle::Release, error).await,
        }
    }

    /// Releases or fails the claim with `error`, with retries that a stop does not cut short.
    async fn settle(&mut self, settle: Settle, error: ItemError) -> ItemOutcome {
        let store = self.worker.store();
        let (item, token) = (self.lease.item, self.lease.token);
        let mut retry = 0;
        loop {
            let now_ms = self.worker.clock().now_ms();
            let answer = match settle {
                Settle::Release => store.release_if_owner(item, token, now_ms, error).await,
                Settle::Fail => store.fail_if_owner(item, token, now_ms, error).await,
            };
            match answer {
                Ok(()) if settle == Settle::Release => return ItemOutcome::Released(error),
                Ok(()) => return ItemOutcome::Failed(error),
                Err(WriteError::LeaseLost) => return ItemOutcome::Lost,
                Err(WriteError::Transport(_)) if retry >= self.config().max_retries => {
                    return ItemOutcome::Abandoned(error);
                }
                Err(WriteError::Transport(_)) => {
                    self.worker
                        .clock()
                        .sleep(self.config().backoff(retry))
                        .await;
                    retry += 1;
                }
            }
        }
    }
}
