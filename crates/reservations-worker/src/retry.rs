//! The retry policy, as a pure function of what went wrong and how often.
//!
//! Terminology:
//! - *attempt*: one `expire_if_held` call for a reservation, counted from 1 within one claim.
//! - *error class*: what an attempt's failure was ([`ErrorClass`]): a *state conflict*
//!   (already done, or not eligible), a *transient* error (a timeout or a connection error),
//!   or anything else (an invalid record).
//! - *decision*: acknowledge (a state conflict is a successful no-op: never retried), retry
//!   after a *backoff*, or give up into a dead letter (a non-transient error, or a transient
//!   one after the last attempt of the *budget*, `max_attempts`).
//! - *backoff*: a base of `initial_backoff_ms * 2^attempt`, capped at `max_backoff_ms`, plus a
//!   jitter drawn from `0..=base / 2`. With the defaults: 1 s, 2 s, 4 s, 8 s, ... capped at
//!   30 s, each plus up to half of itself.

use std::fmt;

use crate::ports::StoreError;

/// The retry policy's parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The backoff base is this times `2^attempt`.
    pub initial_backoff_ms: u64,
    /// The most a backoff base may be (jitter comes on top).
    pub max_backoff_ms: u64,
    /// The most attempts per reservation and claim; at least 1.
    pub max_attempts: u32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            initial_backoff_ms: 500,
            max_backoff_ms: 30_000,
            max_attempts: 5,
        }
    }
}

/// What an attempt's failure was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// The guarded transition answered already-done or not-eligible.
    StateConflict,
    /// No answer in time (transient).
    Timeout,
    /// The store could not be reached (transient).
    Connection,
    /// The store refused the request for good.
    Invalid,
}

impl ErrorClass {
    /// The class of a store error.
    pub fn of(error: &StoreError) -> ErrorClass {
        match error {
            StoreError::Timeout => ErrorClass::Timeout,
            StoreError::Connection => ErrorClass::Connection,
            StoreError::Invalid { .. } => ErrorClass::Invalid,
        }
    }

    /// Timeouts and connection errors are worth another attempt.
    pub fn is_transient(self) -> bool {
        matches!(self, ErrorClass::Timeout | ErrorClass::Connection)
    }

    /// A short stable name (`timeout`, `state-conflict`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::StateConflict => "state-conflict",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Connection => "connection",
            ErrorClass::Invalid => "invalid",
        }
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A pause before the next attempt: `base_ms` plus a jitter drawn from `0..=jitter_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Backoff {
    pub base_ms: u64,
    pub jitter_ms: u64,
}

/// Why a reservation went to the dead letters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeadReason {
    /// An error no retry can fix (its class).
    NotRetryable(ErrorClass),
    /// Transient errors on every attempt of the budget.
    BudgetExhausted,
}

/// What to do after a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RetryDecision {
    /// Acknowledge: the reservation is settled as far as this worker is concerned.
    Ack,
    /// Try again after this pause.
    Retry(Backoff),
    /// Stop trying; record a dead letter.
    DeadLetter(DeadReason),
}

impl RetryPolicy {
    /// The backoff after the failed attempt number `attempt` (from 1).
    pub fn backoff(&self, attempt: u32) -> Backoff {
        let doubled = self
            .initial_backoff_ms
            .saturating_mul(1u64.checked_shl(attempt).unwrap_or(u64::MAX));
        let base_ms = doubled.min(self.max_backoff_ms);
        let backoff = Backoff {
            base_ms,
            jitter_ms: base_ms / 2,
        };
        // invariant: the base never exceeds the cap, and the jitter never exceeds half of it.
        debug_assert!(backoff.base_ms <= self.max_backoff_ms);
        debug_assert!(backoff.jitter_ms * 2 <= backoff.base_ms);
        backoff
    }
}

/// The policy: a state conflict is acknowledged (never retried); a transient error is retried
/// with the policy's backoff while attempts remain; anything else, or a transient error on the
/// last attempt, gives up into a dead letter.
pub fn decide_retry(class: ErrorClass, attempt: u32, policy: &RetryPolicy) -> RetryDecision {
    let decision = match class {
        ErrorClass::StateConflict => RetryDecision::Ack,
        class if !class.is_transient() => {
            RetryDecision::DeadLetter(DeadReason::NotRetryable(class))
        }
        _ if attempt >= policy.max_attempts => {
            RetryDecision::DeadLetter(DeadReason::BudgetExhausted)
        }
        _ => RetryDecision::Retry(policy.backoff(attempt)),
    };
    // invariant: only a transient error with attempts left is retried.
    debug_assert!(
        !matches!(decision, RetryDecision::Retry(_))
            || (class.is_transient() && attempt < policy.max_attempts)
    );
    decision
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_one_second_and_stops_at_the_cap() {
        let policy = RetryPolicy::default();
        let bases: Vec<u64> = (1..=8).map(|n| policy.backoff(n).base_ms).collect();
        assert_eq!(
            bases,
            [1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]
        );
        assert_eq!(policy.backoff(3).jitter_ms, 2_000);
        assert_eq!(policy.backoff(200).base_ms, 30_000, "no overflow");
    }

    #[test]
    fn conflicts_ack_transients_retry_the_rest_dead_letter() {
        let policy = RetryPolicy::default();
        for attempt in [1, 4, 5, 9] {
            assert_eq!(
                decide_retry(ErrorClass::StateConflict, attempt, &policy),
                RetryDecision::Ack
            );
            assert_eq!(
                decide_retry(ErrorClass::Invalid, attempt, &policy),
                RetryDecision::DeadLetter(DeadReason::NotRetryable(ErrorClass::Invalid))
            );
        }
        for class in [ErrorClass::Timeout, ErrorClass::Connection] {
            assert_eq!(
                decide_retry(class, 4, &policy),
                RetryDecision::Retry(Backoff {
                    base_ms: 8_000,
                    jitter_ms: 4_000
                })
            );
            assert_eq!(
                decide_retry(class, 5, &policy),
                RetryDecision::DeadLetter(DeadReason::BudgetExhausted)
            );
        }
    }
}
