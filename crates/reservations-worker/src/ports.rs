//! The outside world as the worker sees it: four small traits.
//!
//! Terminology:
//! - *port*: a trait the worker calls through; production wires real services behind it, the
//!   simulation wires fakes. The worker never names a runtime, only these traits.
//! - *store clock*: the store's own notion of now. Eligibility (`status = held and
//!   hold_until <= now`) is evaluated when a request is applied; with [`Now::StoreClock`] the
//!   store uses its own clock, with [`Now::At`] it uses the instant the caller passed.
//! - *claim*: see the crate docs; [`Store::claim_expired`] checks the deadline and the status
//!   while it sets the claim fields, in one atomic step.
//! - *state conflict*: an [`ExpireOutcome`] other than `Expired`: another worker won, an agent
//!   consumed the hold, or it is not due. A normal outcome.

use std::fmt;
use std::future::Future;
use std::rc::Rc;

/// A reservation's identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReservationId(pub u64);

impl fmt::Display for ReservationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// A claim's token: fresh for every claim call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClaimToken(pub u64);

/// Where a reservation is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Placed by an agent, not yet expired or consumed.
    Held,
    /// The deadline passed and a worker expired it (final).
    Expired,
    /// An agent used it (final).
    Consumed,
}

/// A reservation as the store hands it to a claimer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reservation {
    pub id: ReservationId,
    pub status: Status,
    /// The deadline, on the store's clock.
    pub hold_until_ms: u64,
    /// The claim the store set for this caller.
    pub claim_token: Option<ClaimToken>,
    /// When that claim expires, on the store's clock.
    pub claim_until_ms: Option<u64>,
}

/// Which instant decides eligibility when the store applies a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Now {
    /// The store's own clock at the apply instant (`hold_until <= now()` in SQL terms).
    StoreClock,
    /// The instant the caller passes; the store trusts it.
    At(u64),
}

/// What the guarded transition did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExpireOutcome {
    /// This call moved the reservation from held to expired (one row updated).
    Expired,
    /// It was already expired (another attempt, maybe this worker's own, won).
    AlreadyDone,
    /// It was consumed, or is held but not due: nothing changed.
    NotEligible,
}

/// Why a store call did not give an answer the worker can use.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StoreError {
    /// No answer in time: the request may or may not have been applied.
    Timeout,
    /// The store could not be reached; the request was not applied.
    Connection,
    /// The store refused the request for good (a malformed record): retrying cannot help.
    Invalid {
        /// The store's explanation.
        reason: String,
    },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Timeout => f.write_str("timeout (the request may have been applied)"),
            StoreError::Connection => f.write_str("connection error (not applied)"),
            StoreError::Invalid { reason } => write!(f, "invalid: {reason}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// The reservation store.
pub trait Store {
    /// Atomically claims up to `limit` reservations that are held and due at `now` and not
    /// under a live claim, setting their claim to `token` until `claim_for_ms` after the
    /// store's now; answers them.
    fn claim_expired(
        &self,
        limit: u32,
        now: Now,
        token: ClaimToken,
        claim_for_ms: u64,
    ) -> impl Future<Output = Result<Vec<Reservation>, StoreError>>;

    /// The guarded transition: held and due at `now` becomes expired; anything else is left
    /// alone and answered as a state conflict.
    fn expire_if_held(
        &self,
        id: ReservationId,
        now: Now,
    ) -> impl Future<Output = Result<ExpireOutcome, StoreError>>;

    /// Frees the claim on `id` only if it still carries `token`.
    fn release_claim(
        &self,
        id: ReservationId,
        token: ClaimToken,
    ) -> impl Future<Output = Result<(), StoreError>>;
}

/// Where a reservation the worker gave up on is recorded for a person to look at.
pub trait DeadLetters {
    fn record(
        &self,
        letter: crate::letter::DeadLetter,
    ) -> impl Future<Output = Result<(), StoreError>>;
}

/// This worker's clock and its pauses.
///
/// `now_ms` may be skewed against the store; the worker reads it only for metrics and for a
/// dead letter's first-seen time, never to decide eligibility.
pub trait Clock {
    /// Now on this worker's clock, in ms.
    fn now_ms(&self) -> u64;
    /// Completes after `base_ms` plus a jitter drawn from `0..=jitter_ms`. The worker may drop
    /// it before it completes.
    fn sleep_jittered(&self, base_ms: u64, jitter_ms: u64) -> impl Future<Output = ()>;
}

/// A source of claim tokens no other claim (of any worker) has used.
pub trait Tokens {
    fn fresh_token(&self) -> ClaimToken;
}

// Forwarding impls, so a port can be shared (by reference or by `Rc`).

macro_rules! forward {
    ($($wrapper:ty),*) => {$(
        impl<T: Store + ?Sized> Store for $wrapper {
            fn claim_expired(
                &self,
                limit: u32,
                now: Now,
                token: ClaimToken,
                claim_for_ms: u64,
            ) -> impl Future<Output = Result<Vec<Reservation>, StoreError>> {
                (**self).claim_expired(limit, now, token, claim_for_ms)
            }
            fn expire_if_held(
                &self,
                id: ReservationId,
                now: Now,
            ) -> impl Future<Output = Result<ExpireOutcome, StoreError>> {
                (**self).expire_if_held(id, now)
            }
            fn release_claim(
                &self,
                id: ReservationId,
                token: ClaimToken,
            ) -> impl Future<Output = Result<(), StoreError>> {
                (**self).release_claim(id, token)
            }
        }

        impl<T: DeadLetters + ?Sized> DeadLetters for $wrapper {
            fn record(
                &self,
                letter: crate::letter::DeadLetter,
            ) -> impl Future<Output = Result<(), StoreError>> {
                (**self).record(letter)
            }
        }

        impl<T: Clock + ?Sized> Clock for $wrapper {
            fn now_ms(&self) -> u64 {
                (**self).now_ms()
            }
            fn sleep_jittered(&self, base_ms: u64, jitter_ms: u64) -> impl Future<Output = ()> {
                (**self).sleep_jittered(base_ms, jitter_ms)
            }
        }

        impl<T: Tokens + ?Sized> Tokens for $wrapper {
            fn fresh_token(&self) -> ClaimToken {
                (**self).fresh_token()
            }
        }
    )*};
}

forward!(&T, Rc<T>);
