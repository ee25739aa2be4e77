//! A single-threaded "something changed" signal, independent of any executor.
//!
//! Terminology:
//! - *waiter*: a pending [`WaitUntil`]; it re-checks its *condition* whenever it is polled and
//!   completes as soon as the condition holds.
//! - *parking*: a waiter whose condition is false leaves its waker here, under a *key* fixed at
//!   its first parking, so waiters are woken in the order they first waited.
//! - *notify*: wake every parked waiter. Whoever changes state a condition reads calls
//!   [`Notify::notify_all`] afterwards; a waiter woken for nothing simply parks again.
//!
//! This mirrors the wake-up order of the production worker's own signal on purpose: the
//! engine with no defect must produce the very same trace as the real worker.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// The parked waiters of one signal.
#[derive(Debug, Default)]
pub(crate) struct Notify {
    next_key: Cell<u64>,
    parked: RefCell<BTreeMap<u64, Waker>>,
}

impl Notify {
    /// Wake every waiter parked right now, oldest first.
    pub(crate) fn notify_all(&self) {
        // The wakers leave the map before any of them runs, so no wake finds it borrowed.
        let woken = std::mem::take(&mut *self.parked.borrow_mut());
        for waker in woken.into_values() {
            waker.wake();
        }
    }

    /// A future that completes once `condition` holds when it is polled.
    pub(crate) fn wait_until<F: Fn() -> bool + Unpin>(&self, condition: F) -> WaitUntil<'_, F> {
        WaitUntil {
            notify: self,
            key: None,
            condition,
        }
    }

    fn park(&self, key: &mut Option<u64>, waker: &Waker) {
        let key = *key.get_or_insert_with(|| {
            let fresh = self.next_key.get();
            self.next_key.set(fresh + 1);
            fresh
        });
        let mut parked = self.parked.borrow_mut();
        match parked.get_mut(&key) {
            Some(known) if known.will_wake(waker) => {}
            Some(known) => known.clone_from(waker),
            None => {
                parked.insert(key, waker.clone());
            }
        }
    }

    fn unpark(&self, key: Option<u64>) {
        if let Some(key) = key {
            self.parked.borrow_mut().remove(&key);
        }
    }
}

/// Future returned by [`Notify::wait_until`].
#[must_use = "futures do nothing unless polled"]
pub(crate) struct WaitUntil<'a, F> {
    notify: &'a Notify,
    key: Option<u64>,
    condition: F,
}

impl<F: Fn() -> bool + Unpin> Future for WaitUntil<'_, F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if (this.condition)() {
            // invariant: a finished waiter leaves no waker behind.
            this.notify.unpark(this.key.take());
            return Poll::Ready(());
        }
        this.notify.park(&mut this.key, cx.waker());
        Poll::Pending
    }
}

impl<F> Drop for WaitUntil<'_, F> {
    fn drop(&mut self) {
        self.notify.unpark(self.key.take());
    }
}
