//! The state one term shares between its halves, and the deletion half.
//!
//! Terminology:
//! - *term state*: the acquired lease, the latest lease, the tokens held, the loss (if any),
//!   and whether deletion is over. Kept in an `Rc` because a detached renewal loop may hold
//!   it after the term ended.
//! - *deletion loop*: batches of `min(batch_rows, cap_rows - deleted)` rows, each with the
//!   latest token, until the cap, a short batch, loss, stop, or a delete error.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use retention_worker::{Clock, Lease, Leases, LossCause, Op, Records, TermEnd};

use super::{Engine, Flags};
use crate::defects::flaws::CutoffFlaw;

/// How the deletion loop finished.
pub(crate) struct DeletionOutcome {
    pub(crate) end: TermEnd,
    pub(crate) rows_deleted: u64,
    pub(crate) batches: u32,
}

/// State shared by the deletion and renewal halves of one term that acquired a lease.
pub(crate) struct TermState {
    flags: Rc<Flags>,
    /// The lease acquire answered.
    pub(crate) acquired: Lease,
    /// The cutoff of the term's deletes (with a moving cutoff: the first one read).
    pub(crate) cutoff_ms: Cell<Option<u64>>,
    pub(crate) latest: RefCell<Lease>,
    pub(crate) tokens: RefCell<Vec<u64>>,
    pub(crate) renewals: Cell<u32>,
    pub(crate) loss: RefCell<Option<LossCause>>,
    pub(crate) deletion_over: Cell<bool>,
    /// True while a renewal of this term is in flight (awaited by a serial loop).
    pub(crate) renewing: Cell<bool>,
}

impl TermState {
    pub(crate) fn new(flags: Rc<Flags>, lease: Lease, cutoff_ms: Option<u64>) -> Self {
        Self {
            flags,
            tokens: RefCell::new(vec![lease.fencing_token]),
            latest: RefCell::new(lease.clone()),
            acquired: lease,
            cutoff_ms: Cell::new(cutoff_ms),
            renewals: Cell::new(0),
            loss: RefCell::new(None),
            deletion_over: Cell::new(false),
            renewing: Cell::new(false),
        }
    }

    /// Mark deletion as finished and wake the renewal side so its sleep can be cancelled.
    pub(crate) fn close_deletion(&self) {
        // invariant: deletion finishes exactly once per term.
        debug_assert!(!self.deletion_over.get());
        self.deletion_over.set(true);
        self.flags.changed.notify_all();
    }

    /// Make a renewed lease the latest one.
    pub(crate) fn adopt(&self, next: Lease) {
        // invariant: a lease is adopted only while leadership is not known to be lost.
        debug_assert!(self.loss.borrow().is_none());
        self.tokens.borrow_mut().push(next.fencing_token);
        self.renewals.set(self.renewals.get().saturating_add(1));
        *self.latest.borrow_mut() = next;
        debug_assert_eq!(self.tokens.borrow().len(), self.renewals.get() as usize + 1);
    }

    /// Record that leadership is lost.
    pub(crate) fn lose(&self, cause: LossCause) {
        // invariant: loss is recorded once, by the single renewal loop, which then ends.
        debug_assert!(self.loss.borrow().is_none());
        *self.loss.borrow_mut() = Some(cause);
        self.flags.changed.notify_all();
    }
}

impl<C: Clock + 'static, L: Leases + 'static, R: Records> Engine<C, L, R> {
    /// Delete batches until the cap, a short batch, loss, stop, or a delete error.
    pub(super) async fn delete_loop(&self, term: &TermState) -> DeletionOutcome {
        let cap_rows = u64::from(self.config.cap_rows);
        let mut rows_deleted: u64 = 0;
        let mut batches: u32 = 0;
        let end = loop {
            let loss = term.loss.borrow().clone();
            if let Some(cause) = loss {
                // defect(delete-after-loss): the recorded loss is never looked at.
                if !self.flaws.delete_after_loss {
                    break TermEnd::LeadershipLost(cause);
                }
            }
            if self.flags.stop_requested.get() {
                break TermEnd::Stopped;
            }
            let limit = self.batch_limit(rows_deleted);
            let cutoff_ms = self.batch_cutoff_ms(term);
            let token = match self.flaws.acquired_token {
                // defect(acquired-token): the token from acquire, whatever was renewed since.
                true => term.acquired.fencing_token,
                // Read at send time, so a renewal that landed during the last batch counts.
                false => term.latest.borrow().fencing_token,
            };
            let deleted = match self.records.delete_batch(cutoff_ms, limit, token).await {
                Ok(deleted) => deleted,
                Err(error) => {
                    let op = Op::Delete;
                    break TermEnd::Failed { op, error };
                }
            };
            rows_deleted = rows_deleted.saturating_add(u64::from(deleted));
            batches = batches.saturating_add(1);
            if deleted < limit {
                break TermEnd::Drained;
            }
            // defect(uncapped): the cap never ends the term.
            if rows_deleted >= cap_rows && !self.flaws.uncapped {
                break TermEnd::CapReached;
            }
            // defect(whole-batches): the term ends when a whole batch no longer fits under the
            // cap, as if it ran `cap / batch` batches; the cap's remainder is never deleted.
            let batch_rows = u64::from(self.config.batch_rows);
            if self.flaws.whole_batches && rows_deleted + batch_rows > cap_rows {
                break TermEnd::CapReached;
            }
        };
        DeletionOutcome {
            end,
            rows_deleted,
            batches,
        }
    }

    /// The cutoff of the next batch: the term's own, or (moving cutoff) a fresh clock read.
    fn batch_cutoff_ms(&self, term: &TermState) -> u64 {
        if self.flaws.cutoff != CutoffFlaw::PerBatch {
            return term
                .cutoff_ms
                .get()
                .expect("a fixed cutoff is read before deletion starts");
        }
        // defect(moving-cutoff): the clock is read again for every batch.
        let cutoff_ms = self.read_cutoff_ms();
        if term.cutoff_ms.get().is_none() {
            term.cutoff_ms.set(Some(cutoff_ms));
        }
        cutoff_ms
    }

    /// Rows the next batch may ask for, given what the term already deleted.
    fn batch_limit(&self, rows_deleted: u64) -> u32 {
        let config = &self.config;
        if self.flaws.uncapped {
            // defect(uncapped): every batch asks for a full batch, whatever was deleted.
            return config.batch_rows;
        }
        let left_rows = u64::from(config.cap_rows).saturating_sub(rows_deleted);
        let limit = u32::try_from(left_rows.min(u64::from(config.batch_rows)))
            .expect("bounded by batch_rows, a u32");
        // invariant: the loop asks again only while the cap is not reached, and never for more
        // than one batch.
        assert!(limit >= 1, "batch requested with the cap already reached");
        debug_assert!(limit <= config.batch_rows);
        limit
    }
}
