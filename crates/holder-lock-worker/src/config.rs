//! What one worker is configured with, and the checks that refuse nonsense.
//!
//! Terminology:
//! - *key*: the name of the claim in the store (`job:nightly-rollup`).
//! - *lifetime*: how long the store keeps a claim after it was created or renewed.
//! - *trusted time*: the part of the lifetime the worker relies on, counted on its own timer
//!   from the moment it sent the create or the renewal: four fifths. The last fifth absorbs
//!   the request's flight and the timer's drift, so whenever the worker still trusts its
//!   claim, the store still holds it.
//! - *renewal*: with `renew_every_ms` set, the claim is renewed that long after the previous
//!   renewal (or the create) was answered, well inside the trusted time; without it the
//!   claim simply runs out, and a job longer than the lifetime runs on past its deadline.

use std::error::Error;
use std::fmt;

/// The part of the lifetime kept back from the trusted time: one fifth.
const UNTRUSTED_DIVISOR: u64 = 5;

/// Configuration of a [`JobRunner`](crate::JobRunner).
///
/// The default claims `job:nightly-rollup` for five minutes and renews it every minute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimConfig {
    /// The claim's key. Must not be empty.
    pub key: String,
    /// Lifetime of the claim in the store. Must be at least 5 ms.
    pub lifetime_ms: u64,
    /// Pause between the answer of one renewal (or of the create) and the next renewal;
    /// `None`: never renew. When set, at least 1 and below the trusted time.
    pub renew_every_ms: Option<u64>,
}

impl Default for ClaimConfig {
    fn default() -> Self {
        ClaimConfig {
            key: "job:nightly-rollup".into(),
            lifetime_ms: 300_000,
            renew_every_ms: Some(60_000),
        }
    }
}

impl ClaimConfig {
    /// The part of the lifetime the worker trusts after sending a create or renewal.
    pub fn trusted_ms(&self) -> u64 {
        self.lifetime_ms - self.lifetime_ms / UNTRUSTED_DIVISOR
    }

    /// Accepts the configuration or names the first rule it breaks, in this order: an empty
    /// key, a lifetime below 5 ms, a zero renewal interval, a renewal interval not below the
    /// trusted time.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.key.is_empty() {
            return Err(ConfigError::EmptyKey);
        }
        if self.lifetime_ms < UNTRUSTED_DIVISOR {
            return Err(ConfigError::LifetimeTooShort {
                lifetime_ms: self.lifetime_ms,
            });
        }
        match self.renew_every_ms {
            Some(0) => return Err(ConfigError::ZeroRenewInterval),
            Some(renew_every_ms) if renew_every_ms >= self.trusted_ms() => {
                return Err(ConfigError::RenewNotWithinTrust {
                    renew_every_ms,
                    trusted_ms: self.trusted_ms(),
                });
            }
            _ => {}
        }
        // invariant: the claim is trusted for a positive span shorter than its lifetime, and
        // a renewal falls due inside that span.
        debug_assert!(self.trusted_ms() >= 1 && self.trusted_ms() < self.lifetime_ms);
        debug_assert!(
            self.renew_every_ms
                .is_none_or(|r| r >= 1 && r < self.trusted_ms())
        );
        Ok(())
    }
}

/// A rule of [`ClaimConfig::validate`] that a configuration breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// The key is empty.
    EmptyKey,
    /// The lifetime is too short to keep a fifth of it back.
    LifetimeTooShort {
        /// The configured lifetime.
        lifetime_ms: u64,
    },
    /// The renewal interval is zero: the worker would renew in a tight loop.
    ZeroRenewInterval,
    /// The renewal interval is not below the trusted time, so the worker would stop
    /// trusting its claim before the first renewal.
    RenewNotWithinTrust {
        /// The configured interval.
        renew_every_ms: u64,
        /// Four fifths of the lifetime.
        trusted_ms: u64,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::EmptyKey => f.write_str("the claim key must not be empty"),
            Self::LifetimeTooShort { lifetime_ms } => {
                write!(f, "lifetime_ms ({lifetime_ms}) must be at least 5")
            }
            Self::ZeroRenewInterval => f.write_str("renew_every_ms must be at least 1"),
            Self::RenewNotWithinTrust {
                renew_every_ms,
                trusted_ms,
            } => write!(
                f,
                "renew_every_ms ({renew_every_ms}) must be below four fifths of the lifetime \
                 ({trusted_ms})"
            ),
        }
    }
}

impl Error for ConfigError {}
