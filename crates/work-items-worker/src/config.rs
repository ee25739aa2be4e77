//! Tunables of one worker and the rules that reject nonsensical combinations.
//!
//! Terminology:
//! - *lease*: how long a claim (and each renewal) lasts on the store, `lease_ms`.
//! - *renewal*: before any call of an item, the worker renews its claim once `renew_every_ms`
//!   have passed on its clock since the claim or the last renewal was sent.
//! - *attempt*: one claim of an item. A worker that gives an item up releases it while it has
//!   attempts left and fails it for good once `max_attempts` claims were spent.
//! - *retry*: a call that failed in transport is tried again after a *backoff* sleep of
//!   `backoff_ms`, doubled each time up to `backoff_cap_ms`, at most `max_retries` times.
//! - *deadline*: a run claims no new item once `deadline_ms` have passed on its clock since it
//!   started; it finishes the item it holds and reports what is still open.

use std::error::Error;
use std::fmt;

/// Configuration of an [`ItemWorker`](crate::ItemWorker).
///
/// The default: 30 s leases renewed every 10 s, 3 attempts per item, 3 retries per call with
/// backoffs from 100 ms doubling up to 2 s, and an hour per run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerConfig {
    /// How long a claim or a renewal lasts (store time). At least 2.
    pub lease_ms: u64,
    /// Renew once this long has passed since the last grant was asked for. At least 1 and
    /// below `lease_ms`.
    pub renew_every_ms: u64,
    /// Claims of one item before giving it up fails it. At least 1.
    pub max_attempts: u32,
    /// Retries of one call after a transport failure.
    pub max_retries: u32,
    /// The first backoff. At least 1.
    pub backoff_ms: u64,
    /// The longest backoff. At least `backoff_ms`.
    pub backoff_cap_ms: u64,
    /// A run claims no new item after this long. At least 1.
    pub deadline_ms: u64,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            lease_ms: 30_000,
            renew_every_ms: 10_000,
            max_attempts: 3,
            max_retries: 3,
            backoff_ms: 100,
            backoff_cap_ms: 2_000,
            deadline_ms: 3_600_000,
        }
    }
}

impl WorkerConfig {
    /// Accepts the configuration or names the first rule it breaks, in this order: the lease,
    /// the renewal interval, the attempts, the backoff, the cap, the deadline.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.lease_ms < 2 {
            return Err(ConfigError::LeaseTooShort {
                lease_ms: self.lease_ms,
            });
        }
        if self.renew_every_ms == 0 || self.renew_every_ms >= self.lease_ms {
            return Err(ConfigError::RenewNotWithinLease {
                renew_every_ms: self.renew_every_ms,
                lease_ms: self.lease_ms,
            });
        }
        if self.max_attempts == 0 {
            return Err(ConfigError::NoAttempts);
        }
        if self.backoff_ms == 0 {
            return Err(ConfigError::ZeroBackoff);
        }
        if self.backoff_cap_ms < self.backoff_ms {
            return Err(ConfigError::CapBelowBackoff {
                backoff_ms: self.backoff_ms,
                backoff_cap_ms: self.backoff_cap_ms,
            });
        }
        if self.deadline_ms == 0 {
            return Err(ConfigError::ZeroDeadline);
        }
        // invariant: a valid configuration renews inside the lease and always waits before a
        // retry.
        debug_assert!(0 < self.renew_every_ms && self.renew_every_ms < self.lease_ms);
        debug_assert!(self.backoff(0) >= 1);
        Ok(())
    }

    /// The sleep before retry number `retry + 1`: `backoff_ms * 2^retry`, at most the cap.
    pub fn backoff(&self, retry: u32) -> u64 {
        let doubled = self
            .backoff_ms
            .saturating_mul(1u64.checked_shl(retry.min(63)).unwrap_or(u64::MAX));
        let sleep_ms = doubled.min(self.backoff_cap_ms);
        // invariant: a backoff never exceeds the cap.
        debug_assert!(sleep_ms <= self.backoff_cap_ms);
        sleep_ms
    }
}

/// A rule of [`WorkerConfig::validate`] that a configuration breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// `lease_ms` below 2: no renewal interval fits inside it.
    LeaseTooShort { lease_ms: u64 },
    /// The renewal interval is zero, or not shorter than the lease: the claim would expire
    /// before its first renewal.
    RenewNotWithinLease { renew_every_ms: u64, lease_ms: u64 },
    /// `max_attempts` is zero: no item could ever be processed.
    NoAttempts,
    /// `backoff_ms` is zero: retries would not wait.
    ZeroBackoff,
    /// The backoff cap is below the first backoff.
    CapBelowBackoff {
        backoff_ms: u64,
        backoff_cap_ms: u64,
    },
    /// `deadline_ms` is zero: a run could claim nothing.
    ZeroDeadline,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::LeaseTooShort { lease_ms } => {
                write!(f, "lease_ms ({lease_ms}) must be at least 2")
            }
            Self::RenewNotWithinLease {
                renew_every_ms,
                lease_ms,
            } => write!(
                f,
                "renew_every_ms ({renew_every_ms}) must be at least 1 and below lease_ms \
                 ({lease_ms})"
            ),
            Self::NoAttempts => f.write_str("max_attempts must be at least 1"),
            Self::ZeroBackoff => f.write_str("backoff_ms must be at least 1"),
            Self::CapBelowBackoff {
                backoff_ms,
                backoff_cap_ms,
            } => write!(
                f,
                "backoff_cap_ms ({backoff_cap_ms}) must not be below backoff_ms ({backoff_ms})"
            ),
            Self::ZeroDeadline => f.write_str("deadline_ms must be at least 1"),
        }
    }
}

impl Error for ConfigError {}
