//! A single-threaded "something changed" signal, independent of any executor.
//!
//! Terminology:
//! - *epoch*: a counter bumped by every [`Changed::notify`]; a waiter remembers the epoch it
//!   started in and completes once the epoch moved.
//! - *parked waker*: the waker of a pending waiter, woken (and forgotten) at the next notify.
//!   Spurious wake-ups are harmless: the caller re-checks its own condition in a loop.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// See the module docs.
#[derive(Debug, Default)]
pub(crate) struct Changed {
    epoch: Cell<u64>,
    parked: RefCell<Vec<Waker>>,
}

impl Changed {
    /// Wakes every waiter parked now.
    pub(crate) fn notify(&self) {
        self.epoch.set(self.epoch.get() + 1);
        let woken = std::mem::take(&mut *self.parked.borrow_mut());
        // invariant: nobody stays parked across a notify.
        debug_assert!(self.parked.borrow().is_empty());
        woken.into_iter().for_each(Waker::wake);
    }

    /// Completes at the next notify after this call.
    pub(crate) fn next(&self) -> Next<'_> {
        Next {
            changed: self,
            epoch: self.epoch.get(),
        }
    }
}

/// The future of [`Changed::next`].
pub(crate) struct Next<'a> {
    changed: &'a Changed,
    epoch: u64,
}

impl Future for Next<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.changed.epoch.get() != self.epoch {
            return Poll::Ready(());
        }
        let mut parked = self.changed.parked.borrow_mut();
        if !parked.iter().any(|waker| waker.will_wake(cx.waker())) {
            parked.push(cx.waker().clone());
        }
        Poll::Pending
    }
}
