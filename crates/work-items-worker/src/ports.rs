//! The outside world as the worker sees it: a clock, the item store and the effect provider.
//!
//! Terminology:
//! - *item*: one small unit of a nightly cleanup run ([`ItemId`]), created by a dispatcher.
//!   Its cleanup has a *size*: the number of *chunks* of its local effect.
//! - *claim*: the store's conditional write that gives an item to one worker for a while (a
//!   [`Lease`]): it changes the owner, takes the next *fencing token* (tokens only ever grow)
//!   and counts one more *attempt*. Only an unclaimed, released or expired item can be
//!   claimed; a done or failed item never.
//! - *fenced write*: a store write that names the item and the token in its predicate
//!   (`apply_if_owner`, `mark_done_if_owner`, `renew_if_owner`, `release_if_owner`,
//!   `fail_if_owner`). When the token is not the item's current, unexpired claim the store
//!   applies nothing and answers [`WriteError::LeaseLost`], an answer distinct from a transport
//!   failure.
//! - *local effect*: the item's cleanup in the store, chunk by chunk, each chunk a fenced
//!   write. Repeating a chunk is harmless (the store answers [`ApplyAck::AlreadyApplied`]).
//! - *external effect*: the item's cleanup at the provider, carried with an *idempotency key*
//!   derived from the item; the provider applies one key at most once. A call may time out
//!   after the provider accepted it (*ambiguous*): [`Provider::lookup`] tells what became of
//!   the key (*reconciliation*).
//! - *transport failure*: a call refused before it was applied ([`Transport::Rejected`]), or
//!   one whose answer never came ([`Transport::Timeout`]: it may have been applied).
//!
//! Times passed to the store (`now_ms`) are the worker's own clock and only inform the store;
//! the store judges expiry in its own time.

use std::fmt;
use std::future::Future;
use std::rc::Rc;

/// One item of the run, by its number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ItemId(pub u32);

impl fmt::Display for ItemId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "item {}", self.0)
    }
}

/// A claim the store granted.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Lease {
    pub item: ItemId,
    /// The fencing token of this claim; every fenced write of the claim carries it.
    pub token: u64,
    /// When the claim expires, on the store's clock.
    pub expires_at_ms: u64,
    /// How many claims the item has had, this one included (1 for its first).
    pub attempt: u32,
    /// The item's size: the chunks of its local effect (at least 1).
    pub chunks: u32,
}

/// One chunk of an item's local effect: what `apply_if_owner` applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Effect {
    pub item: ItemId,
    /// 0-based, below `chunks`.
    pub chunk: u32,
    pub chunks: u32,
}

/// The key that makes the item's external effect safe to repeat: the provider applies a key
/// at most once. The worker derives it from the item ([`IdempotencyKey::for_item`]) and
/// reuses it on every retry; `salt` is 0 for such a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IdempotencyKey {
    pub item: ItemId,
    pub salt: u32,
}

impl IdempotencyKey {
    /// The item's own key: the same for every attempt, every claim and every worker.
    pub fn for_item(item: ItemId) -> IdempotencyKey {
        IdempotencyKey { item, salt: 0 }
    }
}

/// Why a call produced no answer the worker can use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    /// Refused before it was applied: it certainly had no effect.
    Rejected,
    /// No answer: it may or may not have been applied.
    Timeout,
}

/// Why a claim was not granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClaimError {
    /// Another claim of the item is live.
    Busy,
    /// The item is done or failed: it is never claimed again.
    Closed,
    Transport(Transport),
}

/// Why a fenced write was not applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WriteError {
    /// The token is not the item's current, unexpired claim: this worker no longer owns the
    /// item, and must send no further write for it under this claim.
    LeaseLost,
    Transport(Transport),
}

/// What `apply_if_owner` did with a chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ApplyAck {
    Applied,
    /// An earlier claim (or an earlier try of this one) had applied it already.
    AlreadyApplied,
}

/// What the provider did with an effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProviderAck {
    Applied,
    /// The key had been applied already; nothing was done again.
    Duplicate,
}

/// Why the provider did not apply an effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProviderError {
    /// It refuses the item's effect for good (a business error); retrying cannot help.
    Refused,
    Transport(Transport),
}

/// What the provider knows of a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lookup {
    /// The effect under this key was applied.
    Applied,
    /// The provider refused the effect for good.
    Refused,
    /// The provider never accepted this key.
    Unknown,
}

/// The store's count of the run's items, read at one instant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RunStatus {
    /// Unclaimed, released or claimed (expired or not): not finished.
    pub open: u32,
    pub done: u32,
    pub failed: u32,
}

/// A call of an item's processing, named in errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    Renew,
    Apply,
    Provider,
    Lookup,
    Done,
}

/// The error the worker records on an item when it gives it up (`release_if_owner`,
/// `fail_if_owner`): the last one it received, or why it stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ItemError {
    /// A call of `Step` was refused before it was applied, `max_retries + 1` times in a row.
    Rejected(Step),
    /// A call of `Step` got no answer, `max_retries + 1` times in a row.
    Timeout(Step),
    /// The provider refuses the item's effect for good.
    ProviderRefused,
    /// The worker was stopped while it held the item.
    Stopped,
}

impl ItemError {
    /// The error a transport failure of `step` leaves.
    pub fn transport(step: Step, failure: Transport) -> ItemError {
        match failure {
            Transport::Rejected => ItemError::Rejected(step),
            Transport::Timeout => ItemError::Timeout(step),
        }
    }
}

/// This replica's notion of time: only ever used for durations (renewal, backoff, deadline)
/// and as the `now_ms` the store is told.
pub trait Clock {
    /// Current time on this replica's clock, in milliseconds.
    fn now_ms(&self) -> u64;
    /// Completes once `ms` milliseconds have passed on this clock. The worker may drop it
    /// early (a stop cancels a backoff).
    fn sleep(&self, ms: u64) -> impl Future<Output = ()>;
}

/// The item store: items, claims, fenced writes.
pub trait Store {
    /// The first claimable item after `after` (wrapping round), if any. A read: the claim
    /// that follows may still lose the race.
    fn next_claimable(
        &self,
        after: Option<ItemId>,
    ) -> impl Future<Output = Result<Option<ItemId>, Transport>>;
    /// Claims `item` for `worker` for `lease_for_ms` (store time): granted only if the item is
    /// unclaimed, released or its claim expired, and it is not done or failed.
    fn claim(
        &self,
        item: ItemId,
        worker: &str,
        now_ms: u64,
        lease_for_ms: u64,
    ) -> impl Future<Output = Result<Lease, ClaimError>>;
    /// Extends the claim `token` of `item` to `lease_for_ms` from now (store time). Answers the
    /// new expiry.
    fn renew_if_owner(
        &self,
        item: ItemId,
        token: u64,
        now_ms: u64,
        lease_for_ms: u64,
    ) -> impl Future<Output = Result<u64, WriteError>>;
    /// Applies one chunk of the item's local effect, if `token` is the current claim.
    fn apply_if_owner(
        &self,
        item: ItemId,
        token: u64,
        now_ms: u64,
        effect: Effect,
    ) -> impl Future<Output = Result<ApplyAck, WriteError>>;
    /// Marks the item done, if `token` is the current claim (a repeat by the same claim
    /// answers `Ok`).
    fn mark_done_if_owner(
        &self,
        item: ItemId,
        token: u64,
        now_ms: u64,
    ) -> impl Future<Output = Result<(), WriteError>>;
    /// Gives the item back with `error` as its last error, if `token` is the current claim;
    /// it can be claimed again at once.
    fn release_if_owner(
        &self,
        item: ItemId,
        token: u64,
        now_ms: u64,
        error: ItemError,
    ) -> impl Future<Output = Result<(), WriteError>>;
    /// Ends the item as failed with `error` as its last error, if `token` is the current
    /// claim.
    fn fail_if_owner(
        &self,
        item: ItemId,
        token: u64,
        now_ms: u64,
        error: ItemError,
    ) -> impl Future<Output = Result<(), WriteError>>;
    /// How many of the run's items are open, done and failed.
    fn status(&self) -> impl Future<Output = Result<RunStatus, Transport>>;
}

/// The external provider the item's effect is carried out at.
pub trait Provider {
    /// Carries out the item's external effect under `key` (applied at most once per key).
    fn apply(
        &self,
        key: IdempotencyKey,
        item: ItemId,
    ) -> impl Future<Output = Result<ProviderAck, ProviderError>>;
    /// What became of `key`: a read, to reconcile an ambiguous `apply`.
    fn lookup(&self, key: IdempotencyKey) -> impl Future<Output = Result<Lookup, Transport>>;
}

// Forwarding impls, so one port can be shared (by reference or `Rc`) between the worker and
// a test, or several workers.

impl<T: Clock + ?Sized> Clock for &T {
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }
    fn sleep(&self, ms: u64) -> impl Future<Output = ()> {
        (**self).sleep(ms)
    }
}

impl<T: Clock + ?Sized> Clock for Rc<T> {
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }
    fn sleep(&self, ms: u64) -> impl Future<Output = ()> {
        (**self).sleep(ms)
    }
}

macro_rules! forward_store {
    ($($wrapper:ty),*) => {$(
        impl<T: Store + ?Sized> Store for $wrapper {
            fn next_claimable(
                &self,
                after: Option<ItemId>,
            ) -> impl Future<Output = Result<Option<ItemId>, Transport>> {
                (**self).next_claimable(after)
            }
            fn claim(
                &self,
                item: ItemId,
                worker: &str,
                now_ms: u64,
                lease_for_ms: u64,
            ) -> impl Future<Output = Result<Lease, ClaimError>> {
                (**self).claim(item, worker, now_ms, lease_for_ms)
            }
            fn renew_if_owner(
                &self,
                item: ItemId,
                token: u64,
                now_ms: u64,
                lease_for_ms: u64,
            ) -> impl Future<Output = Result<u64, WriteError>> {
                (**self).renew_if_owner(item, token, now_ms, lease_for_ms)
            }
            fn apply_if_owner(
                &self,
                item: ItemId,
                token: u64,
                now_ms: u64,
                effect: Effect,
            ) -> impl Future<Output = Result<ApplyAck, WriteError>> {
                (**self).apply_if_owner(item, token, now_ms, effect)
            }
            fn mark_done_if_owner(
                &self,
                item: ItemId,
                token: u64,
                now_ms: u64,
            ) -> impl Future<Output = Result<(), WriteError>> {
                (**self).mark_done_if_owner(item, token, now_ms)
            }
            fn release_if_owner(
                &self,
                item: ItemId,
                token: u64,
                now_ms: u64,
                error: ItemError,
            ) -> impl Future<Output = Result<(), WriteError>> {
                (**self).release_if_owner(item, token, now_ms, error)
            }
            fn fail_if_owner(
                &self,
                item: ItemId,
                token: u64,
                now_ms: u64,
                error: ItemError,
            ) -> impl Future<Output = Result<(), WriteError>> {
                (**self).fail_if_owner(item, token, now_ms, error)
            }
            fn status(&self) -> impl Future<Output = Result<RunStatus, Transport>> {
                (**self).status()
            }
        }
    )*};
}

forward_store!(&T, Rc<T>);

impl<T: Provider + ?Sized> Provider for &T {
    fn apply(
        &self,
        key: IdempotencyKey,
        item: ItemId,
    ) -> impl Future<Output = Result<ProviderAck, ProviderError>> {
        (**self).apply(key, item)
    }
    fn lookup(&self, key: IdempotencyKey) -> impl Future<Output = Result<Lookup, Transport>> {
        (**self).lookup(key)
    }
}

impl<T: Provider + ?Sized> Provider for Rc<T> {
    fn apply(
        &self,
        key: IdempotencyKey,
        item: ItemId,
    ) -> impl Future<Output = Result<ProviderAck, ProviderError>> {
        (**self).apply(key, item)
    }
    fn lookup(&self, key: IdempotencyKey) -> impl Future<Output = Result<Lookup, Transport>> {
        (**self).lookup(key)
    }
}
