//! Two small single-threaded building blocks, independent of any executor.
//!
//! Terminology:
//! - *changed*: a [`Changed`] wakes every future waiting on it so each re-reads the state it
//!   waits for ([`Changed::until`]). Whoever changes such state calls [`Changed::wake_all`]
//!   afterwards; a waiter woken for nothing just waits again. Waiters are kept in
//!   registration order (a `BTreeMap` by number), so wake-ups come in the same order on
//!   every run, and a dropped waiter takes itself out.
//! - *deadline*: a [`Deadline`] is a timer that stays passed once it has passed, so it can be
//!   asked again and again ([`Deadline::passed`] polls it once without waiting).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// Futures waiting for some state to change; see the module docs.
#[derive(Debug, Default)]
pub struct Changed {
    next: Cell<u64>,
    waiting: RefCell<BTreeMap<u64, Waker>>,
}

impl Changed {
    pub fn new() -> Changed {
        Changed::default()
    }

    /// Wakes every waiter registered now.
    pub fn wake_all(&self) {
        // Taken out first: a waker may run code that registers again.
        let woken = std::mem::take(&mut *self.waiting.borrow_mut());
        // invariant: nobody is registered until a woken waiter polls again.
        debug_assert!(self.waiting.borrow().is_empty());
        woken.into_values().for_each(Waker::wake);
    }

    /// Completes once `holds` is true when polled.
    pub fn until<F: Fn() -> bool + Unpin>(&self, holds: F) -> Until<'_, F> {
        Until {
            changed: self,
            number: None,
            holds,
        }
    }

    fn register(&self, number: &mut Option<u64>, waker: &Waker) {
        let number = *number.get_or_insert_with(|| {
            let fresh = self.next.get();
            self.next.set(fresh + 1);
            fresh
        });
        let mut waiting = self.waiting.borrow_mut();
        match waiting.get_mut(&number) {
            Some(known) if known.will_wake(waker) => {}
            Some(known) => known.clone_from(waker),
            None => {
                waiting.insert(number, waker.clone());
            }
        }
        // invariant: a registered waiter is found under its own number.
        debug_assert!(waiting.contains_key(&number));
    }

    fn forget(&self, number: Option<u64>) {
        if let Some(number) = number {
            self.waiting.borrow_mut().remove(&number);
        }
    }
}

/// The future of [`Changed::until`].
#[must_use = "futures do nothing unless polled"]
pub struct Until<'a, F> {
    changed: &'a Changed,
    number: Option<u64>,
    holds: F,
}

impl<F: Fn() -> bool + Unpin> Future for Until<'_, F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if (this.holds)() {
            this.changed.forget(this.number.take());
            return Poll::Ready(());
        }
        this.changed.register(&mut this.number, cx.waker());
        Poll::Pending
    }
}

impl<F> Drop for Until<'_, F> {
    fn drop(&mut self) {
        self.changed.forget(self.number.take());
    }
}

/// A timer that, once passed, stays passed (see the module docs).
pub struct Deadline<'a> {
    timer: Pin<Box<dyn Future<Output = ()> + 'a>>,
    passed: bool,
}

impl<'a> Deadline<'a> {
    /// A deadline at the end of `timer`. Call [`Deadline::start`] at once, so a clock whose
    /// timers start at their first poll starts this one now.
    pub fn new(timer: impl Future<Output = ()> + 'a) -> Deadline<'a> {
        Deadline {
            timer: Box::pin(timer),
            passed: false,
        }
    }

    /// Polls the timer once (starting it, on a clock that starts timers at their first poll).
    pub async fn start(&mut self) {
        let _ = futures::poll!(&mut *self);
    }

    /// Has the deadline passed? Polls the timer once; never waits.
    pub async fn passed(&mut self) -> bool {
        futures::poll!(&mut *self).is_ready()
    }
}

impl Future for Deadline<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if !this.passed && this.timer.as_mut().poll(cx).is_ready() {
            this.passed = true;
        }
        // invariant: a deadline that passed never becomes pending again.
        match this.passed {
            true => Poll::Ready(()),
            false => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    struct Counting(AtomicUsize);

    impl Wake for Counting {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_waiter_completes_once_its_state_holds_and_leaves_nothing_behind() {
        let flag = Cell::new(false);
        let changed = Changed::new();
        let counting = Arc::new(Counting(AtomicUsize::new(0)));
        let waker = Waker::from(counting.clone());
        let mut cx = Context::from_waker(&waker);
        let mut wait = changed.until(|| flag.get());
        assert!(Pin::new(&mut wait).poll(&mut cx).is_pending());
        assert!(Pin::new(&mut wait).poll(&mut cx).is_pending());
        assert_eq!(changed.waiting.borrow().len(), 1, "registered once");
        flag.set(true);
        changed.wake_all();
        assert_eq!(counting.0.load(Ordering::SeqCst), 1);
        assert!(Pin::new(&mut wait).poll(&mut cx).is_ready());
        assert!(changed.waiting.borrow().is_empty());
        let mut dropped = changed.until(|| false);
        assert!(Pin::new(&mut dropped).poll(&mut cx).is_pending());
        drop(dropped);
        assert!(
            changed.waiting.borrow().is_empty(),
            "a dropped waiter leaves"
        );
    }

    #[test]
    fn a_passed_deadline_stays_passed_and_its_timer_is_not_polled_again() {
        let polls = Cell::new(0);
        let timer = std::future::poll_fn(|_| {
            polls.set(polls.get() + 1);
            Poll::Ready(())
        });
        let mut deadline = Deadline::new(timer);
        let mut cx = Context::from_waker(Waker::noop());
        assert!(Pin::new(&mut deadline).poll(&mut cx).is_ready());
        assert!(Pin::new(&mut deadline).poll(&mut cx).is_ready());
        assert_eq!(polls.get(), 1);
    }
}
