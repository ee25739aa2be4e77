//! A job runner under a holder-token claim in a volatile key-value store.
//!
//! Terminology:
//! - *claim*: a key with a lifetime, created only if absent; its presence means somebody runs
//!   the job (see [`ports`]).
//! - *holder token*: the fresh, unguessable value an attempt writes with its claim, so that
//!   its release deletes only its own claim, never one another worker took after the first
//!   reached its deadline.
//! - *attempt*: one call of [`JobRunner::run`]; it ends with an [`AttemptReport`].
//! - *port*: one of [`Clock`], [`Store`], [`TokenSource`], [`Job`]: the worker's only contact
//!   with the world. No runtime is named anywhere in this crate, so any executor can drive it.
//!
//! The worker is single-threaded: its futures are not `Send`, its state lives in `Cell`s. It
//! reads no wall clock, draws no randomness itself (tokens come from its [`TokenSource`]) and
//! iterates no hash map, so under a deterministic executor and deterministic ports it behaves
//! identically run after run.

pub mod config;
pub mod ports;
pub mod report;
pub mod wake;
pub mod worker;

pub use config::{ClaimConfig, ConfigError};
pub use ports::{
    Clock, HolderToken, Job, JobError, Removal, Renewal, Store, StoreError, TokenSource,
};
pub use report::{AttemptEnd, AttemptReport, Found, LossCause, Release, RunError};
pub use wake::{Changed, Deadline};
pub use worker::JobRunner;
