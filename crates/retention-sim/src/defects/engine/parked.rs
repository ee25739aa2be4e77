//! Renewal loops that outlive their term (`leaked-renewal` only).
//!
//! Terminology:
//! - *detached loop*: a serial renewal loop that does not look at the end of deletion.
//! - *parked loop*: a detached loop whose term has returned. The engine spawns no task, so
//!   it keeps such loops and polls them beside its next `run` (so their renewals reach the
//!   world during the next term) and drains them in `stop` (they see the stop request).
//!
//! With any other renewal flaw nothing is ever parked, and these helpers add no poll and no
//! wake-up.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::rc::Rc;
use std::task::Poll;

use futures::future::LocalBoxFuture;
use retention_worker::{Clock, Leases, Records};

use super::Engine;
use super::term::{DeletionOutcome, TermState};

impl<C: Clock + 'static, L: Leases + 'static, R: Records> Engine<C, L, R> {
    /// Drives `deletion` beside a renewal loop that does not end with the term; once deletion
    /// is over, waits only for a renewal in flight, then parks the still-scheduled loop.
    pub(super) async fn leave_loop_behind(
        &self,
        term: &Rc<TermState>,
        deletion: impl Future<Output = DeletionOutcome>,
    ) -> DeletionOutcome {
        let mut renewal: Option<LocalBoxFuture<'static, ()>> =
            Some(Box::pin(self.renewer(term).serial()));
        let mut deletion = pin!(deletion);
        let mut outcome = None;
        poll_fn(|cx| {
            if outcome.is_none()
                && let Poll::Ready(done) = deletion.as_mut().poll(cx)
            {
                outcome = Some(done);
            }
            if renewal
                .as_mut()
                .is_some_and(|r| r.as_mut().poll(cx).is_ready())
            {
                renewal = None;
            }
            // defect(leaked-renewal): the loop's pending sleep is not cancelled here; only a
            // renewal already in flight is waited for.
            let renewal_idle = renewal.is_none() || !term.renewing.get();
            if outcome.is_some() && renewal_idle {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
        if let Some(leaked) = renewal {
            self.parked.borrow_mut().push(leaked);
        }
        outcome.expect("the poll above completes only after deletion did")
    }

    /// Polls the parked renewal loops beside `work`; those still pending stay parked.
    pub(super) async fn beside_parked<T>(&self, work: impl Future<Output = T>) -> T {
        let mut parked = self.parked.take();
        if parked.is_empty() {
            return work.await;
        }
        let mut work = pin!(work);
        let out = poll_fn(|cx| {
            parked.retain_mut(|leaked| leaked.as_mut().poll(cx).is_pending());
            work.as_mut().poll(cx)
        })
        .await;
        self.parked.borrow_mut().append(&mut parked);
        out
    }

    /// Polls the parked renewal loops until every one has ended (they see the stop request).
    pub(super) async fn drain_parked(&self) {
        let mut parked = self.parked.take();
        if parked.is_empty() {
            return;
        }
        poll_fn(|cx| {
            parked.retain_mut(|leaked| leaked.as_mut().poll(cx).is_pending());
            if parked.is_empty() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
    }
}
