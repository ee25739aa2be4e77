//! Lease-fenced retention worker.
//!
//! Terminology:
//! - *replica*: one instance of the service; each runs its own [`RetentionWorker`].
//! - *lease* / *fencing token*: the right to delete, and the number proving it (see
//!   [`ports`]).
//! - *term*: one call of [`RetentionWorker::run`]; it ends with a [`TermReport`].
//! - *port*: one of [`Clock`], [`Leases`], [`Records`]: the worker's only contact with the
//!   world. No runtime is named anywhere in this crate, so any executor can drive it.
//!
//! The worker is single-threaded by design: its futures are not `Send`, and its state lives in
//! `Cell`/`RefCell`. It reads no wall clock, draws no randomness and iterates no hash map,
//! so under a deterministic executor and deterministic ports it behaves identically run after
//! run.

pub mod config;
mod notify;
pub mod ports;
pub mod report;
pub mod worker;

pub use config::{ConfigError, WorkerConfig};
/// The worker's single-threaded wake-up primitive, public so workers built on the same ports
/// (the harness's defective copies, your own) can share it.
pub use notify::{Notify, WaitUntil};
pub use ports::{Clock, Lease, Leases, PortError, Records};
pub use report::{LossCause, Op, RunError, TermEnd, TermReport};
pub use worker::RetentionWorker;
