//! What one call of `run` tells its caller: never a silent success.
//!
//! Terminology:
//! - *run*: one call of [`ItemWorker::run`](crate::ItemWorker::run): claim and process items
//!   until none is claimable, the deadline passed, or the worker was stopped.
//! - *item outcome*: how one claim of an item ended for this worker ([`ItemOutcome`]).
//! - *end*: why the run ended ([`RunEnd`]). `Complete` is said only when the store, read at
//!   the end, counted no open item.
//! - *status*: the store's count of open, done and failed items, read as the run ends.

use std::error::Error;
use std::fmt;

use crate::ports::{ItemError, ItemId, RunStatus, Transport};

/// How one claim of an item ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ItemOutcome {
    /// Its effect was applied and the store marked it done for this claim.
    Done,
    /// The store ended it as failed, with this error.
    Failed(ItemError),
    /// The store took it back (with this error as its last) for another attempt.
    Released(ItemError),
    /// A fenced write answered lease-lost: another claim owns it now; nothing more was sent.
    Lost,
    /// Giving it back failed too (with this error); its claim will simply expire.
    Abandoned(ItemError),
}

/// One claim this run processed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ItemReport {
    pub item: ItemId,
    pub token: u64,
    pub attempt: u32,
    pub outcome: ItemOutcome,
}

/// Why a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunEnd {
    /// `run` found the worker stopped and made no call.
    StoppedBeforeStart,
    /// Nothing was claimable and the store counted no open item: the run's work is over.
    Complete,
    /// Nothing was claimable, but the store still counts open items (claimed by others, or
    /// expired claims not yet visible as such).
    Idle,
    /// The deadline passed with items still open.
    Deadline,
    /// `stop` was called; the claim held then was given back.
    Stopped,
    /// The store did not answer a find or a status read, retries included.
    Unavailable(Transport),
}

/// The account of one run, returned by `run`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunReport {
    pub end: RunEnd,
    /// Every claim the run processed, in order.
    pub items: Vec<ItemReport>,
    /// The store's counts as read at the end (`None`: stopped, or the store unavailable).
    pub status: Option<RunStatus>,
}

impl RunReport {
    /// A report of a run that ended with `end` having processed nothing yet.
    pub fn new(end: RunEnd) -> RunReport {
        RunReport {
            end,
            items: Vec::new(),
            status: None,
        }
    }

    fn count(&self, wanted: fn(&ItemOutcome) -> bool) -> u32 {
        let count = self.items.iter().filter(|r| wanted(&r.outcome)).count();
        u32::try_from(count).unwrap_or(u32::MAX)
    }

    /// Claims that ended done.
    pub fn done(&self) -> u32 {
        self.count(|o| matches!(o, ItemOutcome::Done))
    }

    /// Claims that ended the item as failed.
    pub fn failed(&self) -> u32 {
        self.count(|o| matches!(o, ItemOutcome::Failed(_)))
    }

    /// Claims given back for another attempt.
    pub fn released(&self) -> u32 {
        self.count(|o| matches!(o, ItemOutcome::Released(_)))
    }

    /// Claims that answered lease-lost.
    pub fn lost(&self) -> u32 {
        self.count(|o| matches!(o, ItemOutcome::Lost))
    }

    /// Claims left to expire.
    pub fn abandoned(&self) -> u32 {
        self.count(|o| matches!(o, ItemOutcome::Abandoned(_)))
    }
}

/// Why `run` refused to start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunError {
    /// Another `run` of the same worker is in progress.
    AlreadyRunning,
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::AlreadyRunning => f.write_str("a run of this worker is already in progress"),
        }
    }
}

impl Error for RunError {}
