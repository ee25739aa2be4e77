//! The renewal half of a term: the correct serial loop, and the interval timer.
//!
//! Terminology:
//! - *renewer*: what a renewal loop owns (ports and term state behind `Rc`s, so the loop can
//!   outlive the `run` that started it when it is detached).
//! - *wanted*: another renewal may still be scheduled: no stop request, no loss, and (unless
//!   the loop is detached) deletion not over.
//! - *tick*: one renewal interval elapsing, unless it is cancelled first.

use std::pin::pin;
use std::rc::Rc;

use futures::StreamExt;
use futures::future::{Either, select};
use futures::stream::FuturesUnordered;
use retention_worker::{Clock, Lease, Leases, LossCause, PortError};

use super::Flags;
use super::term::TermState;

/// Everything a renewal loop needs, owned.
pub(crate) struct Renewer<C, L> {
    pub(crate) clock: Rc<C>,
    pub(crate) leases: Rc<L>,
    pub(crate) flags: Rc<Flags>,
    pub(crate) term: Rc<TermState>,
    pub(crate) every_ms: u64,
    /// False when the loop is detached from the term (`leaked-renewal`).
    pub(crate) ends_with_term: bool,
    /// Renew with the lease from acquire instead of the latest (`stale-renewal`).
    pub(crate) renews_acquired: bool,
    /// A stop request does not cancel a pending sleep (`sleepy-stop`).
    pub(crate) sleepy_stop: bool,
}

impl<C: Clock, L: Leases> Renewer<C, L> {
    /// True while another renewal may still be scheduled.
    fn wanted(&self) -> bool {
        // defect(leaked-renewal): a detached loop does not look at the end of deletion.
        let term_going = !self.ends_with_term || !self.term.deletion_over.get();
        term_going && !self.flags.stop_requested.get() && self.term.loss.borrow().is_none()
    }

    /// True while a pending sleep should run on (with no flaw: while a renewal is wanted).
    fn sleep_wanted(&self) -> bool {
        if !self.sleepy_stop {
            return self.wanted();
        }
        // defect(sleepy-stop): a stop request, and the end of deletion it causes, cancel
        // nothing; only a loss or deletion ending on its own does.
        let term_going = !self.term.deletion_over.get() || self.flags.stop_requested.get();
        term_going && self.term.loss.borrow().is_none()
    }

    /// Sleep, renew with the latest lease, await the answer, repeat; one renewal at a time.
    pub(crate) async fn serial(self) {
        while self.wanted() {
            let sleep = pin!(self.clock.sleep(self.every_ms));
            let cancelled = self.flags.changed.wait_until(|| !self.sleep_wanted());
            if let Either::Right(_) = select(sleep, cancelled).await {
                return;
            }
            // The sleep and the cancellation may complete together: cancellation wins.
            if !self.wanted() {
                return;
            }
            let current = match self.renews_acquired {
                // defect(stale-renewal): the lease from acquire, whatever was renewed since.
                true => self.term.acquired.clone(),
                false => self.term.latest.borrow().clone(),
            };
            self.term.renewing.set(true);
            let answer = self.leases.renew(&current).await;
            self.term.renewing.set(false);
            match answer {
                Ok(Some(next)) => self.term.adopt(next),
                Ok(None) => return self.term.lose(LossCause::RenewAnsweredNone),
                Err(error) => return self.term.lose(LossCause::RenewFailed(error)),
            }
        }
    }

    /// One renewal interval; false when it was cancelled before it elapsed.
    async fn tick(&self) -> bool {
        let sleep = pin!(self.clock.sleep(self.every_ms));
        let cancelled = self.flags.changed.wait_until(|| !self.wanted());
        matches!(select(sleep, cancelled).await, Either::Left(_))
    }

    /// A renewal of `lease` that owns everything it needs.
    fn renewal(&self, lease: Lease) -> impl Future<Output = Result<Option<Lease>, PortError>> {
        let leases = self.leases.clone();
        async move { leases.renew(&lease).await }
    }

    /// defect(interval-renewal): every tick sends a renewal with the latest lease, whether or
    /// not earlier ones have answered. Answers are taken in arrival order; a `None` or an error
    /// is ignored. When the term ends the ticks stop and the renewals in flight are awaited.
    pub(crate) async fn interval(self) {
        let mut in_flight = FuturesUnordered::new();
        while self.wanted() {
            let mut tick = pin!(self.tick());
            let elapsed = loop {
                if in_flight.is_empty() {
                    break tick.as_mut().await;
                }
                match select(tick.as_mut(), in_flight.next()).await {
                    Either::Left((elapsed, _)) => break elapsed,
                    Either::Right((answer, _)) => self.take_answer(answer),
                }
            };
            if !elapsed || !self.wanted() {
                break;
            }
            let current = self.term.latest.borrow().clone();
            in_flight.push(self.renewal(current));
        }
        while let Some(answer) = in_flight.next().await {
            self.take_answer(Some(answer));
        }
    }

    /// An interval renewal's answer: a new lease replaces the latest, anything else is dropped.
    fn take_answer(&self, answer: Option<Result<Option<Lease>, PortError>>) {
        if let Some(Ok(Some(next))) = answer {
            self.term.adopt(next);
        }
    }
}
