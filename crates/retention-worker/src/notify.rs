//! A tiny single-threaded condition variable, independent of any executor.
//!
//! Terminology:
//! - *waiter*: a pending [`WaitUntil`] future, parked on a [`Notify`] under a *key*.
//! - *condition*: a closure the waiter re-evaluates each time it is polled; the waiter
//!   completes as soon as it holds.
//! - *notify*: wake every parked waiter so it re-checks its condition. Whoever changes state a
//!   condition depends on must call [`Notify::notify_all`] afterwards. Spurious wake-ups are
//!   harmless: a waiter whose condition is still false just parks again.
//!
//! Waiters are kept sorted by key (registration order), so wake-ups happen in a deterministic
//! order, and a dropped waiter removes itself, so abandoned waits do not pile up. They live in
//! a vector that keeps its capacity across notifications (a map allocated a node each time a
//! waiter parked after a notification, the worker's most frequent allocation).

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// A set of parked waiters; see the module docs.
#[derive(Debug, Default)]
pub struct Notify {
    next_key: Cell<u64>,
    /// `(key, waker)`, ascending by key.
    parked: RefCell<Vec<(u64, Waker)>>,
    /// An empty vector with capacity, swapped in for `parked` at each notification.
    spare: RefCell<Vec<(u64, Waker)>>,
}

impl Notify {
    pub fn new() -> Self {
        Self::default()
    }

    /// Wake every waiter parked right now.
    pub fn notify_all(&self) {
        // Take the wakers out first: a waker may run arbitrary code, and none of it must find
        // `parked` borrowed.
        let mut woken = std::mem::take(&mut *self.spare.borrow_mut());
        std::mem::swap(&mut woken, &mut *self.parked.borrow_mut());
        // invariant: after taking, nobody is parked until some waiter polls again.
        debug_assert!(self.parked.borrow().is_empty());
        for (_, waker) in woken.drain(..) {
            waker.wake();
        }
        *self.spare.borrow_mut() = woken;
    }

    /// A future that completes once `condition` holds when polled.
    pub fn wait_until<F: Fn() -> bool + Unpin>(&self, condition: F) -> WaitUntil<'_, F> {
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
        let at = match parked.binary_search_by_key(&key, |(parked_key, _)| *parked_key) {
            Ok(at) if parked[at].1.will_wake(waker) => at,
            Ok(at) => {
                parked[at].1.clone_from(waker);
                at
            }
            Err(at) => {
                parked.insert(at, (key, waker.clone()));
                at
            }
        };
        // invariant: the waiter is parked under its own key, between smaller and larger keys
        // (its neighbours only: a walk over every waiter at each park would cost what the
        // vector saves).
        debug_assert!(parked[at].0 == key);
        debug_assert!(at == 0 || parked[at - 1].0 < key);
        debug_assert!(parked.get(at + 1).is_none_or(|next| next.0 > key));
    }

    fn unpark(&self, key: Option<u64>) {
        if let Some(key) = key {
            let mut parked = self.parked.borrow_mut();
            if let Ok(at) = parked.binary_search_by_key(&key, |(parked_key, _)| *parked_key) {
                parked.remove(at);
            }
        }
    }

    #[cfg(test)]
    fn parked_len(&self) -> usize {
        self.parked.borrow().len()
    }
}

/// Future returned by [`Notify::wait_until`].
#[must_use = "futures do nothing unless polled"]
pub struct WaitUntil<'a, F> {
    notify: &'a Notify,
    key: Option<u64>,
    condition: F,
}

impl<F: Fn() -> bool + Unpin> Future for WaitUntil<'_, F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if (this.condition)() {
            // invariant: a completed waiter leaves nothing parked behind.
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    struct CountingWaker(AtomicUsize);
    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn waiter_completes_only_after_condition_and_notify() {
        let flag = Cell::new(false);
        let notify = Notify::new();
        let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let waker = Waker::from(counter.clone());
        let mut cx = Context::from_waker(&waker);
        let mut wait = notify.wait_until(|| flag.get());
        assert_eq!(Pin::new(&mut wait).poll(&mut cx), Poll::Pending);
        assert_eq!(Pin::new(&mut wait).poll(&mut cx), Poll::Pending);
        assert_eq!(notify.parked_len(), 1, "re-polling must not park twice");
        flag.set(true);
        notify.notify_all();
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
        assert_eq!(Pin::new(&mut wait).poll(&mut cx), Poll::Ready(()));
        assert_eq!(notify.parked_len(), 0);
    }

    #[test]
    fn a_waiter_polled_again_from_another_task_wakes_that_task() {
        let flag = Cell::new(false);
        let notify = Notify::new();
        let first = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let second = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let mut wait = notify.wait_until(|| flag.get());
        for counter in [&first, &second] {
            let waker = Waker::from(Arc::clone(counter));
            let mut cx = Context::from_waker(&waker);
            assert_eq!(Pin::new(&mut wait).poll(&mut cx), Poll::Pending);
        }
        assert_eq!(notify.parked_len(), 1, "one waiter, parked once");
        flag.set(true);
        notify.notify_all();
        assert_eq!(
            first.0.load(Ordering::SeqCst),
            0,
            "the stale waker is forgotten"
        );
        assert_eq!(
            second.0.load(Ordering::SeqCst),
            1,
            "the latest poller is woken"
        );
    }

    #[test]
    fn waiters_are_woken_in_registration_order_whatever_order_they_park_again() {
        let notify = Notify::new();
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        struct Tagged(usize, Arc<std::sync::Mutex<Vec<usize>>>);
        impl Wake for Tagged {
            fn wake(self: Arc<Self>) {
                self.1.lock().unwrap().push(self.0);
            }
        }
        let wakers: Vec<Waker> = (0..3)
            .map(|tag| Waker::from(Arc::new(Tagged(tag, order.clone()))))
            .collect();
        let mut waits: Vec<_> = (0..3).map(|_| notify.wait_until(|| false)).collect();
        for (wait, waker) in waits.iter_mut().zip(&wakers) {
            let _ = Pin::new(wait).poll(&mut Context::from_waker(waker));
        }
        notify.notify_all();
        // They park again newest first; the oldest registration is still woken first.
        for (wait, waker) in waits.iter_mut().zip(&wakers).rev() {
            let _ = Pin::new(wait).poll(&mut Context::from_waker(waker));
        }
        notify.notify_all();
        assert_eq!(*order.lock().unwrap(), [0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn dropped_waiter_unparks() {
        let notify = Notify::new();
        let waker = Waker::from(Arc::new(CountingWaker(AtomicUsize::new(0))));
        let mut cx = Context::from_waker(&waker);
        let mut wait = notify.wait_until(|| false);
        assert_eq!(Pin::new(&mut wait).poll(&mut cx), Poll::Pending);
        assert_eq!(notify.parked_len(), 1);
        drop(wait);
        assert_eq!(notify.parked_len(), 0);
    }
}
