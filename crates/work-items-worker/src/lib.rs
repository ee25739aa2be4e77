//! Claimed work items: a nightly cleanup run, expanded into small items that workers claim
//! with a fenced lease, process, and commit only while they still own them.
//!
//! Terminology:
//! - *replica*: one instance of the service; each runs its own [`ItemWorker`].
//! - *item*, *claim*, *fencing token*, *fenced write*, *local* and *external effect*,
//!   *idempotency key*: see [`ports`].
//! - *run*: one call of [`ItemWorker::run`]; it ends with a [`RunReport`].
//! - *port*: one of [`Clock`], [`Store`], [`Provider`]: the worker's only contact with the
//!   world. No runtime is named in this crate, so any executor can drive it.
//!
//! The contract in one sentence (design 001's): every cleanup effect is safe to repeat, and a
//! worker without current ownership cannot commit a stale result. The store enforces the
//! second half (every commit names the claim's token); the worker keeps to it too: after a
//! lease-lost answer it sends nothing more for that claim, and it never retries the provider
//! with another key.
//!
//! The worker is single-threaded by design: its futures are not `Send`, its state lives in
//! `Cell`s. It reads no wall clock, draws no randomness and iterates no hash map.

mod claim;
pub mod config;
mod notify;
pub mod ports;
pub mod report;
pub mod worker;

pub use config::{ConfigError, WorkerConfig};
pub use ports::{
    ApplyAck, ClaimError, Clock, Effect, IdempotencyKey, ItemError, ItemId, Lease, Lookup,
    Provider, ProviderAck, ProviderError, RunStatus, Step, Store, Transport, WriteError,
};
pub use report::{ItemOutcome, ItemReport, RunEnd, RunError, RunReport};
pub use worker::ItemWorker;

/// The worker's single-threaded wake-up primitive, public so that workers built on the same
/// ports (the harness's defective copies, your own) can share it.
pub use notify::{Notify, Until};
