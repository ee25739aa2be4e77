//! What one call of `run` tells its caller.
//!
//! Terminology:
//! - *term*: one leadership term, from the acquire attempt to the final release.
//! - *end*: the single reason the term finished ([`TermEnd`]).
//! - *loss*: a renewal that did not hand back a replacement lease ([`LossCause`]).
//! - *release outcome*: the answer of the final `release` call, absent when none was made.

use std::error::Error;
use std::fmt;

use crate::ports::PortError;

/// A port operation, named in [`TermEnd::Failed`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// `Leases::acquire`.
    Acquire,
    /// `Leases::renew`.
    Renew,
    /// `Records::delete_batch`.
    Delete,
    /// `Leases::release`.
    Release,
}

/// Why leadership was considered lost during a term.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LossCause {
    /// A renewal answered `None`: the lease is gone, so it is not released.
    RenewAnsweredNone,
    /// A renewal failed; the worker still releases the latest lease it holds.
    RenewFailed(PortError),
}

/// How a term finished.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TermEnd {
    /// `run` found the worker already stopped and made no call at all.
    StoppedBeforeStart,
    /// Acquire answered `None`: another replica leads. No other call was made.
    NotLeader,
    /// The term deleted `cap_rows` rows.
    CapReached,
    /// A batch deleted fewer rows than it asked for: nothing eligible is left.
    Drained,
    /// A renewal did not hand back a replacement lease; no delete was issued after that.
    LeadershipLost(LossCause),
    /// `stop` was called: the call in flight was awaited, and the lease (if still held)
    /// released.
    Stopped,
    /// A port call failed: an acquire error (no other call made) or a delete error (not
    /// retried; the lease is released).
    Failed {
        /// The operation that failed.
        op: Op,
        /// Its error.
        error: PortError,
    },
}

/// The account of one term, returned by `run`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TermReport {
    /// How the term finished.
    pub end: TermEnd,
    /// Sum of the row counts answered by the successful deletes.
    pub rows_deleted: u64,
    /// Number of deletes that answered a row count (a failed delete is not counted).
    pub batches: u32,
    /// Number of renewals that answered a replacement lease (so `tokens.len() == renewals + 1`
    /// whenever acquire succeeded).
    pub renewals: u32,
    /// Every fencing token the term held, oldest first: the one from acquire, then the one
    /// from each successful renewal.
    pub tokens: Vec<u64>,
    /// The cutoff every delete of the term used; `None` when no cutoff was taken (acquire did
    /// not succeed, or stop() came before the term could start deleting).
    pub cutoff_ms: Option<u64>,
    /// What the final release answered; `None` means the term made no release call.
    pub release: Option<Result<(), PortError>>,
}

impl TermReport {
    /// The report of a term that ended with `end` having done nothing yet: no rows, no
    /// batches, no renewals, no tokens, no cutoff, no release. A worker sets the fields its
    /// term did (`report.rows_deleted = ...`).
    pub fn new(end: TermEnd) -> Self {
        let report = Self {
            end,
            rows_deleted: 0,
            batches: 0,
            renewals: 0,
            tokens: Vec::new(),
            cutoff_ms: None,
            release: None,
        };
        // invariant: an empty account: nothing deleted, held or released.
        debug_assert!(report.tokens.is_empty() && report.release.is_none());
        report
    }

    /// A report for a term that never held a lease.
    pub(crate) fn without_lease(end: TermEnd) -> Self {
        // invariant: only ends that happen before or instead of a successful acquire.
        debug_assert!(matches!(
            end,
            TermEnd::StoppedBeforeStart
                | TermEnd::NotLeader
                | TermEnd::Failed {
                    op: Op::Acquire,
                    ..
                }
        ));
        Self::new(end)
    }
}

/// Why `run` refused to start a term.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunError {
    /// Another `run` of the same worker is still in progress.
    AlreadyRunning,
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::AlreadyRunning => f.write_str("a term of this worker is already running"),
        }
    }
}

impl Error for RunError {}
