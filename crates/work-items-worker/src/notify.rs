//! A single-threaded "wait until this holds" primitive that needs no executor.
//!
//! Terminology:
//! - *condition*: a closure a [`Until`] future checks each time it is polled.
//! - *waiter*: a pending [`Until`]; it parks its waker in the [`Notify`] under a *key* of its
//!   own, taken once from a counter, so no two waiters ever share one.
//! - *wake*: [`Notify::wake_all`] takes every parked waker out and wakes it, so each waiter
//!   checks its condition again (and parks again if it still does not hold). Whoever changes
//!   what a condition reads must call it; a needless wake-up is harmless.
//!
//! Parked wakers are kept in key order, so wake-ups happen in a fixed order; a waiter removes
//! its own entry (found by its key) when it completes or is dropped.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// Waiters parked until some condition holds; see the module docs.
#[derive(Debug, Default)]
pub struct Notify {
    next_key: Cell<u64>,
    parked: RefCell<Vec<(u64, Waker)>>,
}

impl Notify {
    pub fn new() -> Notify {
        Notify::default()
    }

    /// Wakes every parked waiter.
    pub fn wake_all(&self) {
        // Take the wakers out first: waking may run code that parks again.
        let woken = std::mem::take(&mut *self.parked.borrow_mut());
        for (_, waker) in woken {
            waker.wake();
        }
    }

    /// Completes once `condition` holds when polled.
    pub fn until<F: Fn() -> bool>(&self, condition: F) -> Until<'_, F> {
        Until {
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
        match parked.binary_search_by_key(&key, |(k, _)| *k) {
            Ok(index) if parked[index].1.will_wake(waker) => {}
            Ok(index) => parked[index].1 = waker.clone(),
            Err(index) => parked.insert(index, (key, waker.clone())),
        }
        // invariant: a parked waiter is found under its own key, and keys stay sorted.
        debug_assert!(parked.windows(2).all(|pair| pair[0].0 < pair[1].0));
    }

    fn leave(&self, key: Option<u64>) {
        if let Some(key) = key {
            let mut parked = self.parked.borrow_mut();
            if let Ok(index) = parked.binary_search_by_key(&key, |(k, _)| *k) {
                parked.remove(index);
            }
        }
    }

    #[cfg(test)]
    fn parked(&self) -> usize {
        self.parked.borrow().len()
    }
}

/// The future of [`Notify::until`].
#[must_use = "futures do nothing unless polled"]
pub struct Until<'a, F: Fn() -> bool> {
    notify: &'a Notify,
    key: Option<u64>,
    condition: F,
}

impl<F: Fn() -> bool + Unpin> Future for Until<'_, F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if (this.condition)() {
            this.notify.leave(this.key.take());
            return Poll::Ready(());
        }
        this.notify.park(&mut this.key, cx.waker());
        Poll::Pending
    }
}

impl<F: Fn() -> bool> Drop for Until<'_, F> {
    fn drop(&mut self) {
        self.notify.leave(self.key.take());
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    use super::*;

    struct Counter(AtomicUsize);

    impl Wake for Counter {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_waiter_completes_once_its_condition_holds_and_it_is_woken() {
        let flag = Cell::new(false);
        let notify = Notify::new();
        let counter = Arc::new(Counter(AtomicUsize::new(0)));
        let waker = Waker::from(counter.clone());
        let mut cx = Context::from_waker(&waker);
        let mut until = std::pin::pin!(notify.until(|| flag.get()));
        assert!(until.as_mut().poll(&mut cx).is_pending());
        assert!(until.as_mut().poll(&mut cx).is_pending());
        assert_eq!(notify.parked(), 1, "polling again keeps one slot");
        flag.set(true);
        notify.wake_all();
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
        assert!(until.as_mut().poll(&mut cx).is_ready());
        assert_eq!(notify.parked(), 0);
    }

    #[test]
    fn a_woken_waiter_that_completes_never_removes_another_waiters_entry() {
        // A waits for a flag; B parks after a wake emptied A's entry. When A then completes it
        // must leave B parked: B is woken by the next wake.
        let flag = Cell::new(false);
        let other = Cell::new(false);
        let notify = Notify::new();
        let counter = Arc::new(Counter(AtomicUsize::new(0)));
        let waker = Waker::from(counter.clone());
        let mut cx = Context::from_waker(&waker);
        let mut a = std::pin::pin!(notify.until(|| flag.get()));
        assert!(a.as_mut().poll(&mut cx).is_pending());
        flag.set(true);
        notify.wake_all();
        let mut b = std::pin::pin!(notify.until(|| other.get()));
        assert!(b.as_mut().poll(&mut cx).is_pending());
        assert!(a.as_mut().poll(&mut cx).is_ready());
        assert_eq!(notify.parked(), 1, "B is still parked");
        other.set(true);
        let before = counter.0.load(Ordering::SeqCst);
        notify.wake_all();
        assert_eq!(counter.0.load(Ordering::SeqCst), before + 1, "B was woken");
        assert!(b.as_mut().poll(&mut cx).is_ready());
    }

    #[test]
    fn a_dropped_waiter_leaves_nothing_parked() {
        let notify = Notify::new();
        let mut cx = Context::from_waker(Waker::noop());
        {
            let mut until = std::pin::pin!(notify.until(|| false));
            assert!(until.as_mut().poll(&mut cx).is_pending());
            assert_eq!(notify.parked(), 1);
        }
        assert_eq!(notify.parked(), 0);
    }
}
