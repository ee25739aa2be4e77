//! The retention worker: one leadership term per `run`, stoppable at any instant.
//!
//! Terminology:
//! - *term*: one call of `run` that got past its start checks: acquire, then (if leading)
//!   deletion and renewal side by side, then release.
//! - *term slot*: the flag saying a term is active; at most one `run` holds it at a time.
//! - *latest lease*: the most recent lease the term received (from acquire or a renewal).
//!   Deletes carry its token, renewals and the release send it.
//! - *cutoff*: the instant before which rows are eligible, fixed once per term.
//! - *deletion loop* / *renewal loop*: the two halves of a term, driven together inside the
//!   `run` future (no task is spawned; the crate knows no executor).
//! - *loss*: a renewal answered `None` or an error; no delete is issued after it.
//! - *stop request*: a permanent flag set by the first `stop`; it blocks every new acquire,
//!   renew and delete, but never cancels a call already in flight.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::pin::pin;

use futures::future::{Either, select};

use crate::config::{ConfigError, WorkerConfig};
use crate::notify::Notify;
use crate::ports::{Clock, Lease, Leases, Records};
use crate::report::{LossCause, Op, RunError, TermEnd, TermReport};

/// A lease-fenced retention worker for one replica.
///
/// Each [`run`](Self::run) performs at most one leadership term: acquire the lease, fix the
/// retention cutoff, then delete eligible rows in bounded batches while a renewal loop keeps
/// the lease alive, and finally release the latest lease. [`stop`](Self::stop) ends the
/// current term gracefully and keeps every later `run` from doing anything.
///
/// The worker is single-threaded: share it with `Rc` and drive its futures on any executor.
pub struct RetentionWorker<C: Clock, L: Leases, R: Records> {
    owner_id: String,
    config: WorkerConfig,
    clock: C,
    leases: L,
    records: R,
    /// Set by the first `stop` and never cleared.
    stop_requested: Cell<bool>,
    /// True while a `run` holds the term slot.
    term_active: Cell<bool>,
    /// Woken after any change to `stop_requested`, `term_active` or a term's flags.
    changed: Notify,
}

impl<C: Clock, L: Leases, R: Records> fmt::Debug for RetentionWorker<C, L, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetentionWorker")
            .field("owner_id", &self.owner_id)
            .field("config", &self.config)
            .field("stop_requested", &self.stop_requested.get())
            .field("term_active", &self.term_active.get())
            .finish_non_exhaustive()
    }
}

impl<C: Clock, L: Leases, R: Records> RetentionWorker<C, L, R> {
    /// Build a worker that asks for the lease as `owner_id`.
    ///
    /// Fails with the first rule `config` breaks (see [`WorkerConfig::validate`]); no port is
    /// touched either way.
    pub fn new(
        owner_id: impl Into<String>,
        config: WorkerConfig,
        clock: C,
        leases: L,
        records: R,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Self {
            owner_id: owner_id.into(),
            config,
            clock,
            leases,
            records,
            stop_requested: Cell::new(false),
            term_active: Cell::new(false),
            changed: Notify::new(),
        })
    }

    /// The name this worker acquires the lease under.
    pub fn owner_id(&self) -> &str {
        &self.owner_id
    }

    /// The (validated) configuration.
    pub fn config(&self) -> &WorkerConfig {
        &self.config
    }

    /// The clock port.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// The lease service port.
    pub fn leases(&self) -> &L {
        &self.leases
    }

    /// The record store port.
    pub fn records(&self) -> &R {
        &self.records
    }

    /// Perform at most one leadership term and report how it went.
    ///
    /// - While another `run` of this worker is in progress: `Err(AlreadyRunning)` on the first
    ///   poll, with no port call and no effect on the running term.
    /// - After `stop`: `Ok` with [`TermEnd::StoppedBeforeStart`] at once, with no port call.
    /// - Otherwise acquire. `None` or an error ends the term with no further call.
    /// - With a lease: read the clock once for the cutoff (`now - retention`, floored at 0),
    ///   then delete in batches of `min(batch_rows, cap_rows - deleted)` with the latest
    ///   token, while a serial renewal loop renews every `renew_every_ms`. Deletion ends at
    ///   the cap, on a short batch, on loss, on stop, or on a delete error (never retried).
    /// - On every way out after a successful acquire, the renewal loop is ended first (a
    ///   pending sleep is cancelled, a renewal in flight is awaited), then the latest lease
    ///   is released, except after a renewal that answered `None`.
    ///
    /// Dropping the future mid-term frees the term slot (so `stop` still resolves) but cannot
    /// release the lease; the lease then simply expires.
    pub async fn run(&self) -> Result<TermReport, RunError> {
        if self.term_active.get() {
            return Err(RunError::AlreadyRunning);
        }
        if self.stop_requested.get() {
            return Ok(TermReport::without_lease(TermEnd::StoppedBeforeStart));
        }
        let _slot = TermSlot::claim(&self.term_active, &self.changed);
        let report = self.lead_one_term().await;
        // invariant: every token the term held is accounted for by acquire plus renewals.
        debug_assert!(
            report.tokens.is_empty() || report.tokens.len() == report.renewals as usize + 1
        );
        Ok(report)
    }

    /// Stop this worker for good, then wait for the active term (if any) to settle.
    ///
    /// The stop request takes effect when this future is first polled. From then on no
    /// acquire, renew or delete is issued: a pending renewal sleep is cancelled, the call in
    /// flight (acquire, delete or renew) is awaited, and the term releases what it holds, even
    /// a lease that an in-flight acquire hands back afterwards. The future resolves once no
    /// `run` is active any more, which includes the term's final release; with no active
    /// `run` it resolves at once. Calling it again, or from several places at once, is fine.
    /// Dropping the future early keeps the stop request in force.
    pub async fn stop(&self) {
        if !self.stop_requested.replace(true) {
            self.changed.notify_all();
        }
        // invariant: from here on no new work starts, so the active term can only wind down.
        debug_assert!(self.stop_requested.get());
        self.changed.wait_until(|| !self.term_active.get()).await;
    }

    /// Acquire, then either hand back a lease obtained too late or run the term proper.
    async fn lead_one_term(&self) -> TermReport {
        // invariant: the term slot is ours and no stop came before this acquire is issued.
        debug_assert!(self.term_active.get() && !self.stop_requested.get());
        let lease = match self.leases.acquire(&self.owner_id).await {
            Ok(Some(lease)) => lease,
            Ok(None) => return TermReport::without_lease(TermEnd::NotLeader),
            Err(error) => {
                return TermReport::without_lease(TermEnd::Failed {
                    op: Op::Acquire,
                    error,
                });
            }
        };
        if self.stop_requested.get() {
            return self.give_back(lease).await;
        }
        let cutoff_ms = self.clock.now_ms().saturating_sub(self.config.retention_ms);
        let term = Term::new(self, lease, cutoff_ms);
        let deletion = async {
            let outcome = term.delete_loop().await;
            term.close_deletion();
            outcome
        };
        let (outcome, ()) = futures::join!(deletion, term.renew_loop());
        term.finish(outcome).await
    }

    /// Release a lease that an acquire returned after stop was requested; nothing else.
    async fn give_back(&self, lease: Lease) -> TermReport {
        // invariant: only reached with a stop request in force, so no delete may follow.
        assert!(self.stop_requested.get());
        let release = self.leases.release(&lease).await;
        TermReport {
            end: TermEnd::Stopped,
            rows_deleted: 0,
            batches: 0,
            renewals: 0,
            tokens: vec![lease.fencing_token],
            cutoff_ms: None,
            release: Some(release),
        }
    }
}

/// Holds the term slot for the life of a `run` future, and frees it however that ends
/// (completion or drop), waking any `stop` waiting for it.
struct TermSlot<'w> {
    active: &'w Cell<bool>,
    changed: &'w Notify,
}

impl<'w> TermSlot<'w> {
    fn claim(active: &'w Cell<bool>, changed: &'w Notify) -> Self {
        // invariant: the caller checked the slot was free, with no await in between.
        assert!(!active.get(), "term slot claimed twice");
        active.set(true);
        Self { active, changed }
    }
}

impl Drop for TermSlot<'_> {
    fn drop(&mut self) {
        // invariant: the slot is held until exactly this point.
        debug_assert!(self.active.get());
        self.active.set(false);
        self.changed.notify_all();
    }
}

/// How the deletion loop finished.
struct DeletionOutcome {
    end: TermEnd,
    rows_deleted: u64,
    batches: u32,
}

/// State shared by the two loops of one term that acquired a lease.
struct Term<'w, C: Clock, L: Leases, R: Records> {
    worker: &'w RetentionWorker<C, L, R>,
    cutoff_ms: u64,
    latest: RefCell<Lease>,
    tokens: RefCell<Vec<u64>>,
    renewals: Cell<u32>,
    loss: RefCell<Option<LossCause>>,
    deletion_over: Cell<bool>,
}

impl<'w, C: Clock, L: Leases, R: Records> Term<'w, C, L, R> {
    fn new(worker: &'w RetentionWorker<C, L, R>, lease: Lease, cutoff_ms: u64) -> Self {
        Self {
            worker,
            cutoff_ms,
            tokens: RefCell::new(vec![lease.fencing_token]),
            latest: RefCell::new(lease),
            renewals: Cell::new(0),
            loss: RefCell::new(None),
            deletion_over: Cell::new(false),
        }
    }

    /// Delete batches until the cap, a short batch, loss, stop, or a delete error.
    async fn delete_loop(&self) -> DeletionOutcome {
        let records = &self.worker.records;
        let cap_rows = u64::from(self.worker.config.cap_rows);
        let mut rows_deleted: u64 = 0;
        let mut batches: u32 = 0;
        let end = loop {
            let loss = self.loss.borrow().clone();
            if let Some(cause) = loss {
                break TermEnd::LeadershipLost(cause);
            }
            if self.worker.stop_requested.get() {
                break TermEnd::Stopped;
            }
            let limit = self.batch_limit(rows_deleted);
            // The token is read now, at send time, so a renewal that landed during the
            // previous batch is already in effect.
            let token = self.latest.borrow().fencing_token;
            let deleted = match records.delete_batch(self.cutoff_ms, limit, token).await {
                Ok(deleted) => deleted,
                Err(error) => {
                    break TermEnd::Failed {
                        op: Op::Delete,
                        error,
                    };
                }
            };
            rows_deleted = rows_deleted.saturating_add(u64::from(deleted));
            batches = batches.saturating_add(1);
            if deleted < limit {
                break TermEnd::Drained;
            }
            if rows_deleted >= cap_rows {
                break TermEnd::CapReached;
            }
        };
        DeletionOutcome {
            end,
            rows_deleted,
            batches,
        }
    }

    /// Rows the next batch may ask for, given what the term already deleted.
    fn batch_limit(&self, rows_deleted: u64) -> u32 {
        let config = &self.worker.config;
        let left_rows = u64::from(config.cap_rows).saturating_sub(rows_deleted);
        let limit = u32::try_from(left_rows.min(u64::from(config.batch_rows)))
            .expect("bounded by batch_rows, a u32");
        // invariant: the loop only asks again while the cap is not reached, so there is room
        // for at least one row, and never more than one batch.
        assert!(limit >= 1, "batch requested with the cap already reached");
        debug_assert!(limit <= config.batch_rows);
        limit
    }

    /// Mark deletion as finished and wake the renewal loop so its sleep is cancelled.
    fn close_deletion(&self) {
        // invariant: deletion finishes exactly once per term.
        debug_assert!(!self.deletion_over.get());
        self.deletion_over.set(true);
        self.worker.changed.notify_all();
    }

    /// True while another renewal may still be scheduled.
    fn renewal_wanted(&self) -> bool {
        !self.deletion_over.get()
            && !self.worker.stop_requested.get()
            && self.loss.borrow().is_none()
    }

    /// Sleep, renew with the latest lease, await the answer, repeat; one renewal at a time.
    async fn renew_loop(&self) {
        let worker = self.worker;
        while self.renewal_wanted() {
            let sleep = pin!(worker.clock.sleep(worker.config.renew_every_ms));
            let cancelled = worker.changed.wait_until(|| !self.renewal_wanted());
            if let Either::Right(_) = select(sleep, cancelled).await {
                return;
            }
            // The sleep and the cancellation may complete together: cancellation wins.
            if !self.renewal_wanted() {
                return;
            }
            let current = self.latest.borrow().clone();
            // The renewal in flight is never raced against anything: it is always awaited.
            match worker.leases.renew(&current).await {
                Ok(Some(next)) => self.adopt(next),
                Ok(None) => return self.lose(LossCause::RenewAnsweredNone),
                Err(error) => return self.lose(LossCause::RenewFailed(error)),
            }
        }
    }

    /// Make a renewed lease the latest one.
    fn adopt(&self, next: Lease) {
        // invariant: a lease is adopted only while leadership is not known to be lost.
        debug_assert!(self.loss.borrow().is_none());
        self.tokens.borrow_mut().push(next.fencing_token);
        self.renewals.set(self.renewals.get().saturating_add(1));
        *self.latest.borrow_mut() = next;
        debug_assert_eq!(self.tokens.borrow().len(), self.renewals.get() as usize + 1);
    }

    /// Record that leadership is lost; the deletion loop sees it before its next batch.
    fn lose(&self, cause: LossCause) {
        // invariant: loss is recorded once, by the single renewal loop, which then ends.
        debug_assert!(self.loss.borrow().is_none());
        *self.loss.borrow_mut() = Some(cause);
        self.worker.changed.notify_all();
    }

    /// With both loops finished: release the latest lease unless it is known gone, and report.
    async fn finish(self, deletion: DeletionOutcome) -> TermReport {
        // invariant: the renewal loop has ended, so `latest` can no longer change.
        debug_assert!(self.deletion_over.get());
        let loss = self.loss.into_inner();
        let latest = self.latest.into_inner();
        let release = match loss {
            Some(LossCause::RenewAnsweredNone) => None,
            None | Some(LossCause::RenewFailed(_)) => {
                Some(self.worker.leases.release(&latest).await)
            }
        };
        let tokens = self.tokens.into_inner();
        debug_assert_eq!(tokens.last(), Some(&latest.fencing_token));
        TermReport {
            end: deletion.end,
            rows_deleted: deletion.rows_deleted,
            batches: deletion.batches,
            renewals: self.renewals.get(),
            tokens,
            cutoff_ms: Some(self.cutoff_ms),
            release,
        }
    }
}
