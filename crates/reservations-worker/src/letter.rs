//! Dead letters: the record of a reservation the worker gave up on.
//!
//! Terminology:
//! - *dead letter*: what a person needs to act on a reservation the worker could not expire:
//!   which one, why ([`DeadReason`]), how many attempts were made, when the worker first saw
//!   it (on the worker's clock), the class of the last error, and a *replay command* that
//!   expires it again by hand. No customer data goes into it.

use std::fmt;

use crate::ports::ReservationId;
pub use crate::retry::DeadReason;
use crate::retry::ErrorClass;

/// A reservation the worker gave up on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeadLetter {
    pub reservation: ReservationId,
    pub reason: DeadReason,
    /// Attempts made within the claim that gave up (at least 1).
    pub attempts: u32,
    /// When the worker's claim answered this reservation, on the worker's clock.
    pub first_seen_ms: u64,
    /// The class of the last attempt's error.
    pub last_error: ErrorClass,
    /// A command that runs the guarded transition for this reservation again.
    pub replay: String,
}

/// The replay command of a dead letter for `id`.
pub fn replay_command(id: ReservationId) -> String {
    format!("reservations expire --id {} --guarded", id.0)
}

impl fmt::Display for DeadReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeadReason::NotRetryable(class) => write!(f, "not retryable ({class})"),
            DeadReason::BudgetExhausted => f.write_str("retry budget exhausted"),
        }
    }
}

impl fmt::Display for DeadLetter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} after {} attempt(s), first seen at {}ms, last error {}; replay: {}",
            self.reservation,
            self.reason,
            self.attempts,
            self.first_seen_ms,
            self.last_error,
            self.replay
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_letter_reads_as_one_line_naming_its_reservation() {
        let letter = DeadLetter {
            reservation: ReservationId(42),
            reason: DeadReason::BudgetExhausted,
            attempts: 5,
            first_seen_ms: 1_000,
            last_error: ErrorClass::Timeout,
            replay: replay_command(ReservationId(42)),
        };
        assert_eq!(
            letter.to_string(),
            "#42: retry budget exhausted after 5 attempt(s), first seen at 1000ms, last error \
             timeout; replay: reservations expire --id 42 --guarded"
        );
    }
}
