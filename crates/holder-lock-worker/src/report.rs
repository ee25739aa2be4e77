//! What one attempt reports.
//!
//! Terminology:
//! - *attempt*: one call of [`JobRunner::run`](crate::JobRunner::run): a fresh token, a
//!   conditional create, the job under the claim if the create won, the release.
//! - *release*: what the attempt did with its claim at the end: deleted it (conditionally),
//!   left it to run out (on a store without compare-and-delete), or found it gone.
//! - *signal*: a release that found the claim gone (another token, or none) is the cheap
//!   evidence that the claim ran out before the job was done, so another worker may have run
//!   it too. The worker counts every one ([`AttemptReport::claims_gone`]) and never reports it
//!   as a plain success.

use std::fmt;

use crate::ports::{HolderToken, JobError, StoreError};

/// What the store held when the attempt found its claim gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Found {
    /// Another attempt's token.
    Foreign,
    /// Nothing: the claim ran out and nobody took the key yet.
    Absent,
}

/// What the attempt did with its claim at the end.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Release {
    /// The claim still held this attempt's token and was deleted in one step.
    Deleted,
    /// The store cannot compare and delete in one step, so the claim, still this attempt's,
    /// was left to run out rather than deleted after a separate read.
    LeftToExpire,
    /// The claim was gone before the release: a signal (see the module docs).
    Gone(Found),
    /// The release (or its check) gave no answer; the claim runs out on its own.
    Failed(StoreError),
}

impl Release {
    /// Did the release find the claim gone?
    pub fn is_signal(&self) -> bool {
        matches!(self, Release::Gone(_))
    }
}

/// Why an attempt stopped trusting its claim while the job ran.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LossCause {
    /// A renewal found the claim gone.
    RenewRefused(Found),
    /// A renewal gave no answer.
    RenewFailed(StoreError),
    /// The trusted time since the last renewal passed before a renewal was answered.
    NotRenewedInTime,
}

/// How an attempt ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AttemptEnd {
    /// `stop` came before this attempt: nothing was sent.
    StoppedBeforeStart,
    /// The create lost: another claim was live.
    NotHolder,
    /// The create gave no answer; nothing else was sent (a claim it may have made runs out).
    CreateFailed(StoreError),
    /// The create was answered only after the trusted time had passed: the job did not start.
    TooLate,
    /// The job ran to its end under the claim.
    JobDone,
    /// The job failed under the claim.
    JobFailed(JobError),
    /// The claim could no longer be trusted; the job was stopped at its next await.
    ClaimLost(LossCause),
    /// `stop` came after the create won; the job (if it had started) was stopped.
    Stopped,
}

/// The report of one attempt.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AttemptReport {
    pub end: AttemptEnd,
    /// The attempt's holder token (`None` when it stopped before starting).
    pub token: Option<HolderToken>,
    /// Renewals answered as granted (a stop or the trust's end that came with the answer
    /// does not take one away).
    pub renewals: u32,
    /// What the release did (`None` when the create did not win).
    pub release: Option<Release>,
    /// Releases of this worker so far, this one included, that found the claim gone.
    pub claims_gone: u64,
}

/// `run` could not start an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunError {
    /// Another `run` of this worker is in progress.
    AlreadyRunning,
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::AlreadyRunning => f.write_str("another attempt of this worker is running"),
        }
    }
}

impl std::error::Error for RunError {}
