//! A single-threaded "something changed" notification.
//!
//! Terminology:
//! - *generation*: bumped by every `notify`; a waiter completes once it sees a generation
//!   other than the one it started from, so no notification between check and wait is lost.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

#[derive(Debug, Default)]
pub struct Signal {
    generation: Cell<u64>,
    waiters: RefCell<Vec<Waker>>,
}

impl Signal {
    /// Wakes everyone waiting for a change.
    pub fn notify(&self) {
        self.generation.set(self.generation.get() + 1);
        let waiters = std::mem::take(&mut *self.waiters.borrow_mut());
        for waker in waiters {
            waker.wake();
        }
    }

    /// Completes at the next `notify` after this call.
    pub fn changed(&self) -> Changed<'_> {
        Changed {
            signal: self,
            start: self.generation.get(),
        }
    }
}

#[derive(Debug)]
pub struct Changed<'a> {
    signal: &'a Signal,
    start: u64,
}

impl Future for Changed<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.signal.generation.get() != self.start {
            return Poll::Ready(());
        }
        let mut waiters = self.signal.waiters.borrow_mut();
        if !waiters.iter().any(|w| w.will_wake(cx.waker())) {
            waiters.push(cx.waker().clone());
        }
        Poll::Pending
    }
}
