//! What one call of `run` tells its caller: how it ended, and the run's metrics.
//!
//! Terminology:
//! - *duplicate attempt*: a guarded transition that answered already-done (another attempt,
//!   maybe this worker's own earlier one whose answer was lost, had won).
//! - *state conflict*: already-done or not-eligible; a normal outcome, never retried.
//! - *claim age*: on the worker's clock, from the moment a claim answered to the moment the
//!   last reservation of its batch was released.
//! - *abandoned*: a reservation of a claimed batch that a stop kept the worker from settling
//!   (its claim is released, so another worker takes it).

use std::error::Error;
use std::fmt;

/// How `run` ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunEnd {
    /// `stop` had been called before `run` started: no call was made.
    StoppedBeforeStart,
    /// `stop` was called; the call in flight was awaited and every claim released.
    Stopped,
}

/// The metrics of one `run`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RunReport {
    pub end: RunEnd,
    /// Claim calls made.
    pub polls: u64,
    /// Claim calls that answered an error.
    pub claim_errors: u64,
    /// Reservations claimed, over all polls.
    pub claimed: u64,
    /// Guarded transitions that expired a reservation.
    pub expired: u64,
    /// Duplicate attempts: transitions that answered already-done.
    pub already_done: u64,
    /// Transitions that answered not-eligible.
    pub not_eligible: u64,
    /// Attempts after the first, over all reservations.
    pub retries: u64,
    /// Dead letters recorded.
    pub dead_letters: u64,
    /// Dead letters the worker could not record (the reservation stays to be claimed again).
    pub dead_letter_errors: u64,
    /// Releases that answered an error (the claim then simply expires).
    pub release_errors: u64,
    /// Reservations left unsettled because of a stop.
    pub abandoned: u64,
    /// The longest claim age seen, in ms of the worker's clock.
    pub max_claim_age_ms: u64,
}

impl RunReport {
    /// A report with nothing counted yet.
    pub fn new(end: RunEnd) -> RunReport {
        RunReport {
            end,
            polls: 0,
            claim_errors: 0,
            claimed: 0,
            expired: 0,
            already_done: 0,
            not_eligible: 0,
            retries: 0,
            dead_letters: 0,
            dead_letter_errors: 0,
            release_errors: 0,
            abandoned: 0,
            max_claim_age_ms: 0,
        }
    }

    /// State conflicts: already-done plus not-eligible answers.
    pub fn state_conflicts(&self) -> u64 {
        self.already_done + self.not_eligible
    }
}

/// Why `run` refused to start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunError {
    /// Another `run` of this worker is in progress.
    AlreadyRunning,
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::AlreadyRunning => f.write_str("another run of this worker is in progress"),
        }
    }
}

impl Error for RunError {}
