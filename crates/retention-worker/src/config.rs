//! Tunables of one worker and the checks that reject nonsensical combinations.
//!
//! Terminology:
//! - *batch*: one `delete_batch` call; `batch_rows` is the most rows one call may ask for.
//! - *cap*: the most rows one leadership term may delete in total (`cap_rows`).
//! - *retention*: how old a row must be to be deleted; the term's cutoff is the clock reading
//!   taken after acquire minus `retention_ms`.
//! - *renew interval*: the pause between the end of one renewal and the start of the next.
//! - *lease TTL*: how long the lease service keeps a lease alive without renewal; the worker
//!   only uses it to check that it renews often enough.

use std::error::Error;
use std::fmt;

const DEFAULT_BATCH_ROWS: u32 = 200;
const DEFAULT_CAP_ROWS: u32 = 1_000;
const DEFAULT_RETENTION_MS: u64 = 7 * 24 * 60 * 60 * 1_000;
const DEFAULT_RENEW_EVERY_MS: u64 = 10_000;
const DEFAULT_LEASE_TTL_MS: u64 = 30_000;

/// Configuration of a [`RetentionWorker`](crate::RetentionWorker).
///
/// The default is 200-row batches, a 1,000-row cap per term, 7 days of retention, a renewal
/// every 10 s and a 30 s lease lifetime. [`WorkerConfig::validate`] lists what is accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerConfig {
    /// Most rows one delete call may ask for. Must be at least 1 and at most `cap_rows`.
    pub batch_rows: u32,
    /// Most rows one leadership term may delete.
    pub cap_rows: u32,
    /// Rows older than (clock after acquire) minus this are eligible.
    pub retention_ms: u64,
    /// Pause before each renewal. Must be at least 1 and below `lease_ttl_ms`.
    pub renew_every_ms: u64,
    /// Lifetime of a lease on the lease service, used only for validation.
    pub lease_ttl_ms: u64,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        Self {
            batch_rows: DEFAULT_BATCH_ROWS,
            cap_rows: DEFAULT_CAP_ROWS,
            retention_ms: DEFAULT_RETENTION_MS,
            renew_every_ms: DEFAULT_RENEW_EVERY_MS,
            lease_ttl_ms: DEFAULT_LEASE_TTL_MS,
        }
    }
}

impl WorkerConfig {
    /// Accept the configuration or name the first rule it breaks, checked in this order:
    /// a batch of zero rows, a batch larger than the cap, a zero renew interval, a renew
    /// interval that is not strictly shorter than the lease lifetime.
    ///
    /// A valid configuration therefore has `1 <= batch_rows <= cap_rows` and
    /// `1 <= renew_every_ms < lease_ttl_ms`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.batch_rows == 0 {
            return Err(ConfigError::ZeroBatch);
        }
        if self.batch_rows > self.cap_rows {
            return Err(ConfigError::BatchAboveCap {
                batch_rows: self.batch_rows,
                cap_rows: self.cap_rows,
            });
        }
        if self.renew_every_ms == 0 {
            return Err(ConfigError::ZeroRenewInterval);
        }
        if self.renew_every_ms >= self.lease_ttl_ms {
            return Err(ConfigError::RenewNotBelowTtl {
                renew_every_ms: self.renew_every_ms,
                lease_ttl_ms: self.lease_ttl_ms,
            });
        }
        // invariant: a term can always issue a first batch of at least one row, and the lease
        // is renewed before it runs out.
        debug_assert!(self.cap_rows >= self.batch_rows && self.batch_rows >= 1);
        debug_assert!(self.renew_every_ms >= 1 && self.renew_every_ms < self.lease_ttl_ms);
        Ok(())
    }
}

/// A rule of [`WorkerConfig::validate`] that a configuration breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// `batch_rows` is zero: no delete could ever make progress.
    ZeroBatch,
    /// `batch_rows` is larger than the per-term cap.
    BatchAboveCap {
        /// The configured batch size.
        batch_rows: u32,
        /// The configured per-term cap.
        cap_rows: u32,
    },
    /// The renew interval is not strictly shorter than the lease lifetime, so the lease would
    /// expire before its first renewal.
    RenewNotBelowTtl {
        /// The configured renew interval.
        renew_every_ms: u64,
        /// The configured lease lifetime.
        lease_ttl_ms: u64,
    },
    /// The renew interval is zero: the worker would renew in a tight loop.
    ZeroRenewInterval,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ZeroBatch => f.write_str("batch_rows must be at least 1"),
            Self::BatchAboveCap {
                batch_rows,
                cap_rows,
            } => {
                write!(
                    f,
                    "batch_rows ({batch_rows}) must not exceed cap_rows ({cap_rows})"
                )
            }
            Self::RenewNotBelowTtl {
                renew_every_ms,
                lease_ttl_ms,
            } => write!(
                f,
                "renew_every_ms ({renew_every_ms}) must be below lease_ttl_ms ({lease_ttl_ms})"
            ),
            Self::ZeroRenewInterval => f.write_str("renew_every_ms must be at least 1"),
        }
    }
}

impl Error for ConfigError {}
