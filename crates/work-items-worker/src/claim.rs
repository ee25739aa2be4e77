//! Processing one claim: the local effect, the external effect, done; or a clean exit.
//!
//! Terminology:
//! - *claim work*: everything one worker does under one [`Lease`]: apply the item's chunks
//!   with the claim's token, carry out its external effect at the provider, mark it done.
//! - *fenced write*: a store write carrying the claim's token; a lease-lost answer ends the
//!   claim work at once (*lost*): no further write, no provider call.
//! - *renewal*: before any call, once `renew_every_ms` have passed on the worker's clock
//!   since the last grant was asked for, the claim is renewed (a fenced write too).
//! - *ambiguous*: a provider apply that got no answer: it may have been applied. The next
//!   provider call for the item is then a lookup of the same key (*reconciliation*); only an
//!   `Unknown` answer lets the same key be applied again.
//! - *exit*: how the work stops short: lost, given up (a call's retries spent), refused by the
//!   provider, or stopped. Given up and stopped claims are *settled*: released, or failed
//!   when the attempts are spent or the provider refused; a lost claim is left alone.

use std::future::Future;

use crate::config::WorkerConfig;
use crate::ports::{
    Clock, Effect, IdempotencyKey, ItemError, Lease, Lookup, Provider, ProviderError, Step, Store,
    Transport, WriteError,
};
use crate::report::ItemOutcome;
use crate::worker::ItemWorker;

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
pub(crate) struct ClaimWork<'w, C: Clock, S: Store, P: Provider> {
    worker: &'w ItemWorker<C, S, P>,
    lease: Lease,
    /// The worker's clock when the last grant (the claim, or a renewal) was asked for.
    granted_ms: u64,
    /// A fenced write answered lease-lost: nothing more may be sent under this claim.
    lost: bool,
}

impl<'w, C: Clock, S: Store, P: Provider> ClaimWork<'w, C, S, P> {
    /// Work under `lease`, whose claim was sent at `claimed_ms` on the worker's clock.
    pub(crate) fn new(worker: &'w ItemWorker<C, S, P>, lease: Lease, claimed_ms: u64) -> Self {
        ClaimWork {
            worker,
            lease,
            granted_ms: claimed_ms,
            lost: false,
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
        // invariant: a claim is reported lost exactly when a write answered lease-lost.
        debug_assert_eq!(outcome == ItemOutcome::Lost, self.lost);
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
            self.write(Step::Apply, |now_ms| {
                store.apply_if_owner(item, token, now_ms, effect)
            })
            .await?;
        }
        self.external().await?;
        self.write(Step::Done, |now_ms| {
            store.mark_done_if_owner(item, token, now_ms)
        })
        .await
    }

    /// Before any call: a stop ends the work; a due renewal is sent first. Answers the clock
    /// reading to send the call with.
    async fn before_call(&mut self) -> Result<u64, Exit> {
        // invariant: no call of any kind follows a lease-lost answer under this claim.
        debug_assert!(!self.lost, "a call after lease-lost");
        if self.worker.stopping() {
            return Err(Exit::Stopped);
        }
        let now_ms = self.worker.clock().now_ms();
        if now_ms.saturating_sub(self.granted_ms) < self.config().renew_every_ms {
            return Ok(now_ms);
        }
        self.renew(now_ms).await?;
        // A stop may have come while the renewal was in flight.
        if self.worker.stopping() {
            return Err(Exit::Stopped);
        }
        Ok(self.worker.clock().now_ms())
    }

    /// Renews the claim (with retries): lease-lost ends the work.
    async fn renew(&mut self, mut now_ms: u64) -> Result<(), Exit> {
        let (item, token) = (self.lease.item, self.lease.token);
        let lease_ms = self.config().lease_ms;
        let mut retry = 0;
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
                Err(WriteError::LeaseLost) => return Err(self.lose()),
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
        let mut retry = 0;
        loop {
            let now_ms = self.before_call().await?;
            match call(now_ms).await {
                Ok(value) => return Ok(value),
                Err(WriteError::LeaseLost) => return Err(self.lose()),
                Err(WriteError::Transport(failure)) => {
                    self.backoff(&mut retry, ItemError::transport(step, failure))
                        .await?;
                }
            }
        }
    }

    /// Records that the claim is lost; the exit that ends its work.
    fn lose(&mut self) -> Exit {
        self.lost = true;
        Exit::Lost
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
        let key = IdempotencyKey::for_item(item);
        let mut retry = 0;
        loop {
            self.before_call().await?;
            let error = match self.worker.provider().apply(key, item).await {
                Ok(_) => return Ok(()),
                Err(ProviderError::Refused) => return Err(Exit::Refused),
                Err(ProviderError::Transport(Transport::Rejected)) => {
                    ItemError::Rejected(Step::Provider)
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
        // invariant: a lost claim is never given back: it belongs to someone else now.
        debug_assert!(!self.lost, "a settle after lease-lost");
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
                Err(WriteError::LeaseLost) => {
                    self.lost = true;
                    return ItemOutcome::Lost;
                }
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
