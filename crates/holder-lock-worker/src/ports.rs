//! The world as the worker sees it: a key-value store, a token source, a clock and a job.
//!
//! Terminology:
//! - *claim*: a key whose presence means "somebody is running this job"; written with a
//!   *conditional create* (it succeeds only while the key is absent) and a *lifetime*, after
//!   which the store forgets it on its own.
//! - *holder token*: the value an attempt writes with its claim. It is drawn fresh for every
//!   attempt and nobody else can produce it, so it names exactly one claim.
//! - *conditional release*: delete the key only while it still holds this token, as one step
//!   on the store's side (`delete_if_holder`). A store that cannot do that says so
//!   ([`Store::compare_and_delete`]).
//! - *port*: a trait the worker calls through; production wires a real store, job and timer
//!   behind it, the simulation wires fakes. No runtime is named here.

use std::error::Error;
use std::fmt;
use std::future::Future;
use std::rc::Rc;

/// The value an attempt stores with its claim. Fresh for every attempt; compared, never
/// ordered or interpreted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HolderToken(pub u64);

impl fmt::Display for HolderToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// What a conditional renewal did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Renewal {
    /// The key held this token; its lifetime starts again now.
    Renewed,
    /// The key holds another token: the claim reached its deadline and somebody took it.
    NotHolder,
    /// The key is absent: the claim reached its deadline.
    Absent,
}

/// What a conditional release did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Removal {
    /// The key held this token and is gone now.
    Deleted,
    /// The key holds another token; nothing was deleted.
    NotHolder,
    /// The key was absent; nothing was deleted.
    Absent,
}

/// Why a store call gave no usable answer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StoreError {
    /// The store turned the request down without applying it.
    Unavailable {
        /// Free-form explanation.
        reason: String,
    },
    /// No answer arrived: the request may or may not have taken effect.
    Timeout,
    /// The store has no such operation (e.g. no server-side compare-and-delete).
    Unsupported,
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unavailable { reason } => write!(f, "store unavailable: {reason}"),
            Self::Timeout => f.write_str("no answer (the request may or may not have applied)"),
            Self::Unsupported => f.write_str("the store does not offer this operation"),
        }
    }
}

impl Error for StoreError {}

/// A volatile key-value store with per-key lifetimes.
///
/// Lifetimes run on the store's own clock. A key whose lifetime ran out is absent for every
/// operation. The conditional operations compare and act in one step on the store's side.
pub trait Store {
    /// Writes `token` under `key` with a lifetime, only if the key is absent: `true` when
    /// this call created the claim.
    fn create_if_absent(
        &self,
        key: &str,
        token: HolderToken,
        lifetime_ms: u64,
    ) -> impl Future<Output = Result<bool, StoreError>>;

    /// Starts the key's lifetime again, only while it holds `token`.
    fn renew_if_holder(
        &self,
        key: &str,
        token: HolderToken,
        lifetime_ms: u64,
    ) -> impl Future<Output = Result<Renewal, StoreError>>;

    /// Deletes the key, only while it holds `token`. Answers `Err(Unsupported)` on a store
    /// without compare-and-delete.
    fn delete_if_holder(
        &self,
        key: &str,
        token: HolderToken,
    ) -> impl Future<Output = Result<Removal, StoreError>>;

    /// The token the key holds, if it is present.
    fn get(&self, key: &str) -> impl Future<Output = Result<Option<HolderToken>, StoreError>>;

    /// Deletes whatever the key holds: `true` when something was deleted.
    fn delete(&self, key: &str) -> impl Future<Output = Result<bool, StoreError>>;

    /// Writes `token` under `key` with a lifetime, whatever it held.
    fn set(
        &self,
        key: &str,
        token: HolderToken,
        lifetime_ms: u64,
    ) -> impl Future<Output = Result<(), StoreError>>;

    /// Can this store compare and delete in one step (`delete_if_holder`)? Known from the
    /// store's kind; asking sends nothing.
    fn compare_and_delete(&self) -> bool;
}

/// Where fresh holder tokens come from: unguessable, and never the same twice.
pub trait TokenSource {
    /// A token no attempt has used before.
    fn fresh(&self) -> HolderToken;
}

/// This replica's timers.
pub trait Clock {
    /// Completes once `ms` milliseconds have passed. The timer starts when the future is
    /// created or first polled, whichever the clock does; the worker polls it once at once.
    fn sleep(&self, ms: u64) -> impl Future<Output = ()>;
}

/// Why a job gave up.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct JobError {
    /// Free-form explanation.
    pub reason: String,
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "job failed: {}", self.reason)
    }
}

impl Error for JobError {}

/// The job the claim protects. The worker drops the future to stop the job's further
/// effects (at its next await) when the claim can no longer be trusted or on stop.
pub trait Job {
    /// Runs the job to its end.
    fn run(&self) -> impl Future<Output = Result<(), JobError>>;
}

// Forwarding impls, so a port can be shared by reference or by `Rc`.

macro_rules! forward {
    ($($wrapper:ty),*) => {$(
        impl<T: Store + ?Sized> Store for $wrapper {
            fn create_if_absent(
                &self,
                key: &str,
                token: HolderToken,
                lifetime_ms: u64,
            ) -> impl Future<Output = Result<bool, StoreError>> {
                (**self).create_if_absent(key, token, lifetime_ms)
            }
            fn renew_if_holder(
                &self,
                key: &str,
                token: HolderToken,
                lifetime_ms: u64,
            ) -> impl Future<Output = Result<Renewal, StoreError>> {
                (**self).renew_if_holder(key, token, lifetime_ms)
            }
            fn delete_if_holder(
                &self,
                key: &str,
                token: HolderToken,
            ) -> impl Future<Output = Result<Removal, StoreError>> {
                (**self).delete_if_holder(key, token)
            }
            fn get(&self, key: &str) -> impl Future<Output = Result<Option<HolderToken>, StoreError>> {
                (**self).get(key)
            }
            fn delete(&self, key: &str) -> impl Future<Output = Result<bool, StoreError>> {
                (**self).delete(key)
            }
            fn set(
                &self,
                key: &str,
                token: HolderToken,
                lifetime_ms: u64,
            ) -> impl Future<Output = Result<(), StoreError>> {
                (**self).set(key, token, lifetime_ms)
            }
            fn compare_and_delete(&self) -> bool {
                (**self).compare_and_delete()
            }
        }

        impl<T: TokenSource + ?Sized> TokenSource for $wrapper {
            fn fresh(&self) -> HolderToken {
                (**self).fresh()
            }
        }

        impl<T: Clock + ?Sized> Clock for $wrapper {
            fn sleep(&self, ms: u64) -> impl Future<Output = ()> {
                (**self).sleep(ms)
            }
        }

        impl<T: Job + ?Sized> Job for $wrapper {
            fn run(&self) -> impl Future<Output = Result<(), JobError>> {
                (**self).run()
            }
        }
    )*};
}

forward!(&T, Rc<T>);
