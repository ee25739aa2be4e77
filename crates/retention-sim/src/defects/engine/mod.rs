//! The shared engine: a copy of the correct worker's term logic with defect switches.
//!
//! Terminology (the same as `retention_worker::worker`):
//! - *term*: one `run` that got past its start checks: acquire, then deletion and renewal side
//!   by side, then release.
//! - *term slot*: the flag saying a term is active; at most one `run` holds it.
//! - *latest lease*: the most recent lease the term received (acquire or a renewal).
//! - *loss*: a renewal answered `None` or an error.
//! - *stop request*: a permanent flag set by the first `stop`.
//! - *parked renewal loop*: a renewal loop a term left behind (only with
//!   [`RenewalFlaw::Detached`]); it is polled beside whatever the worker does next (the next
//!   `run`, or `stop`), since this crate, like the core, spawns no task.
//!
//! With [`Flaws::NONE`] every call, every clock read and every wake-up happens exactly as in
//! the production worker; each switch changes one place, marked `// defect(<name>):`.

mod parked;
mod renewal;
mod term;

use std::cell::{Cell, RefCell};
use std::fmt;
use std::rc::Rc;

use futures::future::LocalBoxFuture;
use retention_worker::{
    Clock, ConfigError, Lease, Leases, LossCause, Op, PortError, Records, RunError, TermEnd,
    TermReport, WorkerConfig,
};

use crate::defects::flaws::{CutoffFlaw, Flaws, RenewalFlaw};
use renewal::Renewer;
use retention_worker::Notify;
use term::{DeletionOutcome, TermState};

/// Worker-wide flags, shared with renewal loops (which may outlive a `run`).
#[derive(Debug, Default)]
pub(crate) struct Flags {
    /// Set by the first `stop` and never cleared.
    pub(crate) stop_requested: Cell<bool>,
    /// True while a `run` holds the term slot.
    pub(crate) term_active: Cell<bool>,
    /// Woken after any change to the flags above or to a term's state.
    pub(crate) changed: Notify,
}

/// One worker: the correct logic plus the switches in `flaws`.
pub(crate) struct Engine<C: Clock, L: Leases, R: Records> {
    owner_id: String,
    config: WorkerConfig,
    flaws: Flaws,
    clock: Rc<C>,
    leases: Rc<L>,
    records: R,
    flags: Rc<Flags>,
    /// Renewal loops left behind by ended terms (always empty unless detached).
    parked: RefCell<Vec<LocalBoxFuture<'static, ()>>>,
    /// The latest lease of the last term that held one; never cleared (read only with
    /// `leftover_release`).
    leftover: RefCell<Option<Lease>>,
}

impl<C: Clock, L: Leases, R: Records> fmt::Debug for Engine<C, L, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("owner_id", &self.owner_id)
            .field("config", &self.config)
            .field("flaws", &self.flaws)
            .field("stop_requested", &self.flags.stop_requested.get())
            .field("term_active", &self.flags.term_active.get())
            .field("parked_loops", &self.parked.borrow().len())
            .finish_non_exhaustive()
    }
}

/// A report for a term that never held a lease (`release` set only by a leftover release).
fn report_without_lease(end: TermEnd, release: Option<Result<(), PortError>>) -> TermReport {
    TermReport {
        end,
        rows_deleted: 0,
        batches: 0,
        renewals: 0,
        tokens: Vec::new(),
        cutoff_ms: None,
        release,
    }
}

impl<C: Clock + 'static, L: Leases + 'static, R: Records> Engine<C, L, R> {
    /// Validates `config` like the real worker, then builds the engine; no port is touched.
    pub(crate) fn new(
        owner_id: impl Into<String>,
        config: WorkerConfig,
        ports: (C, L, R),
        flaws: Flaws,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        let (clock, leases, records) = ports;
        Ok(Self {
            owner_id: owner_id.into(),
            config,
            flaws,
            clock: Rc::new(clock),
            leases: Rc::new(leases),
            records,
            flags: Rc::new(Flags::default()),
            parked: RefCell::new(Vec::new()),
            leftover: RefCell::new(None),
        })
    }

    /// One leadership term, as `RetentionWorker::run` (see the flaws for the differences).
    pub(crate) async fn run(&self) -> Result<TermReport, RunError> {
        if self.flags.term_active.get() {
            return Err(RunError::AlreadyRunning);
        }
        if self.flags.stop_requested.get() {
            let end = TermEnd::StoppedBeforeStart;
            return Ok(report_without_lease(end, None));
        }
        let _slot = TermSlot::claim(&self.flags);
        let report = self.beside_parked(self.lead_one_term()).await;
        // invariant: every token the term held is accounted for by acquire plus renewals.
        debug_assert!(
            report.tokens.is_empty() || report.tokens.len() == report.renewals as usize + 1
        );
        Ok(report)
    }

    /// Requests the stop, then (unless the stop is unjoined) waits for the active term and for
    /// any parked renewal loop to wind down.
    pub(crate) async fn stop(&self) {
        if !self.flags.stop_requested.replace(true) {
            self.flags.changed.notify_all();
        }
        // invariant: from here on no new work starts.
        debug_assert!(self.flags.stop_requested.get());
        if self.flaws.unjoined_stop {
            // defect(unjoined-stop): the flag is set and stop returns at once, without waiting
            // for the running term (nor, therefore, for its release).
            return;
        }
        let flags = &self.flags;
        flags.changed.wait_until(|| !flags.term_active.get()).await;
        self.drain_parked().await;
    }

    /// Acquire, then hand back a lease obtained too late, or run the term proper.
    async fn lead_one_term(&self) -> TermReport {
        // invariant: the slot is ours and no stop came before this acquire is issued.
        debug_assert!(self.flags.term_active.get() && !self.flags.stop_requested.get());
        // defect(early-cutoff): the clock is read before leadership is known.
        let early_cutoff_ms =
            (self.flaws.cutoff == CutoffFlaw::BeforeAcquire).then(|| self.read_cutoff_ms());
        let lease = match self.leases.acquire(&self.owner_id).await {
            Ok(Some(lease)) => lease,
            Ok(None) => return self.without_lease(TermEnd::NotLeader).await,
            Err(error) => {
                let end = TermEnd::Failed {
                    op: Op::Acquire,
                    error,
                };
                return self.without_lease(end).await;
            }
        };
        if self.flags.stop_requested.get() {
            return self.give_back(lease).await;
        }
        let cutoff_ms = match self.flaws.cutoff {
            CutoffFlaw::AfterAcquire => Some(self.read_cutoff_ms()),
            CutoffFlaw::BeforeAcquire => early_cutoff_ms,
            // defect(moving-cutoff): no cutoff now; the deletion loop reads one per batch.
            CutoffFlaw::PerBatch => None,
        };
        let term = Rc::new(TermState::new(self.flags.clone(), lease, cutoff_ms));
        let outcome = self.drive_term(&term).await;
        self.finish(&term, outcome).await
    }

    /// `now - retention`, floored at 0 (one clock read).
    fn read_cutoff_ms(&self) -> u64 {
        self.clock.now_ms().saturating_sub(self.config.retention_ms)
    }

    /// Runs deletion and renewal side by side until the term is over.
    async fn drive_term(&self, term: &Rc<TermState>) -> DeletionOutcome {
        let deletion = async {
            let outcome = self.delete_loop(term).await;
            term.close_deletion();
            outcome
        };
        match self.flaws.renewal {
            RenewalFlaw::Serial => futures::join!(deletion, self.renewer(term).serial()).0,
            // defect(interval-renewal): renewals on a fixed timer, answers never awaited in turn.
            RenewalFlaw::Interval => futures::join!(deletion, self.renewer(term).interval()).0,
            // defect(leaked-renewal): the renewal loop is not ended with the term.
            RenewalFlaw::Detached => self.leave_loop_behind(term, deletion).await,
            // defect(no-renewal): deletion runs alone; the lease is never renewed.
            RenewalFlaw::Never => deletion.await,
        }
    }

    pub(super) fn renewer(&self, term: &Rc<TermState>) -> Renewer<C, L> {
        Renewer {
            clock: self.clock.clone(),
            leases: self.leases.clone(),
            flags: self.flags.clone(),
            term: term.clone(),
            every_ms: self.config.renew_every_ms,
            ends_with_term: self.flaws.renewal != RenewalFlaw::Detached,
            renews_acquired: self.flaws.renew_acquired,
            sleepy_stop: self.flaws.sleepy_stop,
        }
    }

    /// A term whose acquire did not answer a lease: normally no further call at all.
    async fn without_lease(&self, end: TermEnd) -> TermReport {
        let leftover = self.leftover.borrow().clone();
        let release = match leftover {
            // defect(leftover-release): the lease kept from an earlier term is released,
            // though this term never acquired it.
            Some(lease) if self.flaws.leftover_release => Some(self.leases.release(&lease).await),
            _ => None,
        };
        report_without_lease(end, release)
    }

    /// Release a lease that an acquire returned after stop was requested; nothing else.
    async fn give_back(&self, lease: Lease) -> TermReport {
        // invariant: only reached with a stop request in force, so no delete may follow.
        assert!(self.flags.stop_requested.get());
        let release = if self.flaws.unjoined_stop {
            // defect(unjoined-stop): the lease an acquire in flight at stop returned is kept.
            None
        } else {
            Some(self.leases.release(&lease).await)
        };
        let tokens = vec![lease.fencing_token];
        *self.leftover.borrow_mut() = Some(lease);
        TermReport {
            end: TermEnd::Stopped,
            rows_deleted: 0,
            batches: 0,
            renewals: 0,
            tokens,
            cutoff_ms: None,
            release,
        }
    }

    /// With deletion over (and renewal ended or parked): release, unless excused, and report.
    async fn finish(&self, term: &TermState, deletion: DeletionOutcome) -> TermReport {
        // invariant: deletion is over, so no delete of this term can follow the release.
        debug_assert!(term.deletion_over.get());
        let latest = term.latest.borrow().clone();
        // defect(stale-release): the lease from acquire is released, not the latest one.
        let given_back = match self.flaws.release_acquired {
            true => term.acquired.clone(),
            false => latest.clone(),
        };
        let release = match self.release_excused(term, &deletion.end) {
            true => None,
            false => Some(self.leases.release(&given_back).await),
        };
        let tokens = term.tokens.borrow().clone();
        debug_assert_eq!(tokens.last(), Some(&latest.fencing_token));
        *self.leftover.borrow_mut() = Some(latest);
        TermReport {
            end: deletion.end,
            rows_deleted: deletion.rows_deleted,
            batches: deletion.batches,
            renewals: term.renewals.get(),
            tokens,
            cutoff_ms: term.cutoff_ms.get(),
            release,
        }
    }

    /// Whether the term ends without a release call.
    fn release_excused(&self, term: &TermState, end: &TermEnd) -> bool {
        let delete_failed = matches!(end, TermEnd::Failed { op: Op::Delete, .. });
        match &*term.loss.borrow() {
            Some(LossCause::RenewAnsweredNone) => true,
            // defect(renew-error-no-release): an error is taken for a `None` answer.
            Some(LossCause::RenewFailed(_)) if self.flaws.renew_error_no_release => true,
            // defect(unjoined-stop): a failed delete jumps past the release.
            _ if delete_failed && self.flaws.unjoined_stop => true,
            _ => false,
        }
    }
}

/// Holds the term slot for the life of a `run` future and frees it however that ends,
/// waking any `stop` waiting for it.
struct TermSlot<'w> {
    flags: &'w Flags,
}

impl<'w> TermSlot<'w> {
    fn claim(flags: &'w Flags) -> Self {
        // invariant: the caller checked the slot was free, with no await in between.
        assert!(!flags.term_active.get(), "term slot claimed twice");
        flags.term_active.set(true);
        Self { flags }
    }
}

impl Drop for TermSlot<'_> {
    fn drop(&mut self) {
        debug_assert!(self.flags.term_active.get());
        self.flags.term_active.set(false);
        self.flags.changed.notify_all();
    }
}
