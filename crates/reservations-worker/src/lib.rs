//! Reservation expiry worker.
//!
//! Support agents place *holds* (reservations) with a deadline; a hold that has passed its
//! deadline must become *expired*, once, even when several worker nodes see it and one of them
//! disappears halfway. Meanwhile agents may *consume* a hold at any moment. This crate is the
//! worker that does the expiring; the store decides what is due.
//!
//! Terminology:
//! - *reservation*: a hold with an id, a status ([`Status`]: held, expired, consumed) and a
//!   deadline (`hold_until_ms`, on the store's clock).
//! - *claim*: a short lease on a due reservation, taken by
//!   [`Store::claim_expired`] atomically with the eligibility check: a claim token and a claim
//!   expiry. A claim is the recovery boundary: when a worker stops, another one may claim the
//!   reservation again once the claim has expired.
//! - *claim token*: a fresh number per claim call ([`Tokens`]); a release frees only the claim
//!   carrying the caller's token.
//! - *guarded transition*: [`Store::expire_if_held`] changes `held` to `expired` only if the
//!   reservation is held and due when the update is applied; otherwise it answers
//!   [`ExpireOutcome::AlreadyDone`] or [`ExpireOutcome::NotEligible`], a *state conflict*,
//!   which is a normal outcome and never retried. The transition is safe to repeat.
//! - *poll*: one turn of the worker's loop: claim a bounded batch with a fresh token, settle
//!   each reservation, release each claim (on every path), or sleep with jitter when idle.
//! - *settle*: try the guarded transition, retrying transient errors by the [`retry`] policy,
//!   giving up into a [`DeadLetter`] on anything else or an exhausted budget.
//! - *port*: one of [`Store`], [`DeadLetters`], [`Clock`], [`Tokens`]: the worker's only
//!   contact with the world. No runtime is named anywhere in this crate.
//!
//! The worker is single-threaded by design: its futures are not `Send` and its state lives in
//! `Cell`s. It reads no wall clock (only its [`Clock`] port, for metrics and dead letters),
//! draws no randomness (jitter and tokens come from ports) and iterates no hash map.

pub mod config;
pub mod letter;
mod notify;
pub mod ports;
pub mod report;
pub mod retry;
pub mod worker;

pub use config::{ConfigError, WorkerConfig};
pub use letter::{DeadLetter, replay_command};
pub use ports::{
    ClaimToken, Clock, DeadLetters, ExpireOutcome, Now, Reservation, ReservationId, Status, Store,
    StoreError, Tokens,
};
pub use report::{RunEnd, RunError, RunReport};
pub use retry::{Backoff, DeadReason, ErrorClass, RetryDecision, RetryPolicy, decide_retry};
pub use worker::ExpiryWorker;
