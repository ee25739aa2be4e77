//! Tunables of one worker, and the checks that reject nonsensical combinations.
//!
//! Terminology:
//! - *batch*: the most reservations one claim call may ask for (`batch_size`).
//! - *claim duration*: how long a claim keeps other workers off a reservation
//!   (`claim_for_ms`); longer than a normal settle, short enough to recover from a dead node.
//! - *idle pause*: the sleep after a poll that claimed nothing (or failed): `idle_ms` plus a
//!   jitter of up to `idle_jitter_ms`, so a fleet restart does not hit the store at once.
//! - *retry policy*: see [`crate::retry`].

use std::error::Error;
use std::fmt;

use crate::retry::RetryPolicy;

/// Configuration of an [`ExpiryWorker`](crate::ExpiryWorker).
///
/// The default follows design 002: batches of 50, 60 s claims, an idle pause of 1 s plus up to
/// 2 s, and the default [`RetryPolicy`] (500 ms doubling, capped at 30 s, 5 attempts).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerConfig {
    /// Most reservations one claim may ask for; at least 1.
    pub batch_size: u32,
    /// How long a claim lasts on the store's clock; at least 1.
    pub claim_for_ms: u64,
    /// The idle pause's base.
    pub idle_ms: u64,
    /// The idle pause's jitter (drawn from `0..=idle_jitter_ms`).
    pub idle_jitter_ms: u64,
    pub retry: RetryPolicy,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            batch_size: 50,
            claim_for_ms: 60_000,
            idle_ms: 1_000,
            idle_jitter_ms: 2_000,
            retry: RetryPolicy::default(),
        }
    }
}

/// The first rule a [`WorkerConfig`] breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    ZeroBatch,
    ZeroClaimDuration,
    /// An idle pause of zero with zero jitter would poll the store in a hot loop.
    ZeroIdlePause,
    ZeroAttempts,
    ZeroBackoff,
    BackoffAboveCap {
        initial_backoff_ms: u64,
        max_backoff_ms: u64,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::ZeroBatch => f.write_str("batch_size must be at least 1"),
            ConfigError::ZeroClaimDuration => f.write_str("claim_for_ms must be at least 1"),
            ConfigError::ZeroIdlePause => {
                f.write_str("idle_ms + idle_jitter_ms must be at least 1 (no hot polling)")
            }
            ConfigError::ZeroAttempts => f.write_str("max_attempts must be at least 1"),
            ConfigError::ZeroBackoff => f.write_str("initial_backoff_ms must be at least 1"),
            ConfigError::BackoffAboveCap {
                initial_backoff_ms,
                max_backoff_ms,
            } => write!(
                f,
                "initial_backoff_ms ({initial_backoff_ms}) is above max_backoff_ms \
                 ({max_backoff_ms})"
            ),
        }
    }
}

impl Error for ConfigError {}

impl WorkerConfig {
    /// Accepts the configuration or names the first rule it breaks, in this order: a zero
    /// batch, a zero claim duration, a zero idle pause, zero attempts, a zero backoff, a
    /// backoff above its cap.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let retry = &self.retry;
        let error = if self.batch_size == 0 {
            ConfigError::ZeroBatch
        } else if self.claim_for_ms == 0 {
            ConfigError::ZeroClaimDuration
        } else if self.idle_ms.saturating_add(self.idle_jitter_ms) == 0 {
            ConfigError::ZeroIdlePause
        } else if retry.max_attempts == 0 {
            ConfigError::ZeroAttempts
        } else if retry.initial_backoff_ms == 0 {
            ConfigError::ZeroBackoff
        } else if retry.initial_backoff_ms > retry.max_backoff_ms {
            ConfigError::BackoffAboveCap {
                initial_backoff_ms: retry.initial_backoff_ms,
                max_backoff_ms: retry.max_backoff_ms,
            }
        } else {
            // invariant: a valid configuration claims something, pauses when idle, and tries
            // every reservation at least once.
            debug_assert!(self.batch_size >= 1 && retry.max_attempts >= 1);
            return Ok(());
        };
        Err(error)
    }
}
