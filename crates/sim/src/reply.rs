//! A flight's answer on its way back to its call: a single-threaded one-shot slot.
//!
//! Terminology:
//! - *reply*: shared by one call and its flight. The flight *sends* the answer once; the call
//!   *waits* for it ([`ReplyWait`]). It replaces a channel: no atomics, and no allocation per
//!   call once the world has spares.
//! - *abandoned*: the call stopped waiting (its future was dropped, e.g. a worker that gave up
//!   on the call). Its waker is forgotten at once, so the answer, when it lands, wakes no one,
//!   exactly as a closed channel would.
//! - *spare*: a reply whose call and flight have both let go of it (the world holds the only
//!   reference), reset and kept for the next call.
//!
//! A flight always runs to its end within a run (flights are never aborted); only the end of
//! the simulation drops one unsent, and then no one is waiting any more.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// One call's reply (see the module docs).
pub(crate) struct Reply<T> {
    answer: Cell<Option<T>>,
    sent: Cell<bool>,
    abandoned: Cell<bool>,
    waiter: RefCell<Option<Waker>>,
}

impl<T: Copy> Reply<T> {
    fn fresh() -> Reply<T> {
        Reply {
            answer: Cell::new(None),
            sent: Cell::new(false),
            abandoned: Cell::new(false),
            waiter: RefCell::new(None),
        }
    }

    /// Hands the answer over and wakes the call, unless it stopped waiting.
    pub(crate) fn send(&self, answer: T) {
        // invariant: a reply is sent once.
        assert!(!self.sent.replace(true), "a flight answered twice");
        if !self.abandoned.get() {
            self.answer.set(Some(answer));
        }
        let waiter = self.waiter.borrow_mut().take();
        if let Some(waiter) = waiter {
            waiter.wake();
        }
        // invariant: after a send no waker is kept, and an abandoned call keeps no answer.
        debug_assert!(self.waiter.borrow().is_none());
        debug_assert!(!(self.abandoned.get() && self.answer.get().is_some()));
    }
}

/// The spare replies of one world.
pub(crate) struct Replies<T> {
    spare: RefCell<Vec<Rc<Reply<T>>>>,
}

impl<T> Default for Replies<T> {
    fn default() -> Self {
        Replies {
            spare: RefCell::new(Vec::new()),
        }
    }
}

impl<T: Copy> Replies<T> {
    /// A reply for a new call: a spare one, or a fresh one.
    pub(crate) fn take(&self) -> Rc<Reply<T>> {
        let reply = self
            .spare
            .borrow_mut()
            .pop()
            .unwrap_or_else(|| Rc::new(Reply::fresh()));
        // invariant: a reply handed out is unused and held by no one else.
        debug_assert!(Rc::strong_count(&reply) == 1 && !reply.sent.get());
        debug_assert!(reply.answer.get().is_none() && reply.waiter.borrow().is_none());
        reply
    }

    /// Keeps `reply` for a later call if its call and flight have both let go of it.
    pub(crate) fn recycle(&self, reply: Rc<Reply<T>>) {
        if Rc::strong_count(&reply) != 1 {
            return;
        }
        reply.answer.set(None);
        reply.sent.set(false);
        reply.abandoned.set(false);
        reply.waiter.borrow_mut().take();
        self.spare.borrow_mut().push(reply);
    }
}

/// A call waiting for its reply; dropping it abandons the reply.
pub(crate) struct ReplyWait<T> {
    reply: Option<Rc<Reply<T>>>,
}

impl<T> ReplyWait<T> {
    pub(crate) fn new(reply: Rc<Reply<T>>) -> ReplyWait<T> {
        ReplyWait { reply: Some(reply) }
    }
}

impl<T: Copy> Future for ReplyWait<T> {
    /// The answer, and the reply to give back to the world's spares.
    type Output = (T, Rc<Reply<T>>);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let reply = this
            .reply
            .as_ref()
            .expect("a reply is not awaited after it came");
        if let Some(answer) = reply.answer.take() {
            let reply = this.reply.take().expect("checked above");
            // invariant: an answer is read once, after its send.
            debug_assert!(reply.sent.get() && reply.answer.get().is_none());
            return Poll::Ready((answer, reply));
        }
        // invariant: a sent reply that the call still waits for holds its answer.
        assert!(!reply.sent.get(), "a flight always answers");
        let mut waiter = reply.waiter.borrow_mut();
        match waiter.as_ref() {
            Some(kept) if kept.will_wake(cx.waker()) => {}
            _ => *waiter = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

impl<T> Drop for ReplyWait<T> {
    fn drop(&mut self) {
        if let Some(reply) = self.reply.take() {
            reply.abandoned.set(true);
            reply.waiter.borrow_mut().take();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::task::Wake;

    struct Count(AtomicU32);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn poll_once(wait: &mut ReplyWait<u32>, waker: &Waker) -> Poll<(u32, Rc<Reply<u32>>)> {
        Pin::new(wait).poll(&mut Context::from_waker(waker))
    }

    #[test]
    fn a_waiting_call_is_woken_once_and_reads_the_answer() {
        let replies = Replies::default();
        let reply = replies.take();
        let mut wait = ReplyWait::new(reply.clone());
        let count = Arc::new(Count(AtomicU32::new(0)));
        let waker = Waker::from(count.clone());
        assert!(poll_once(&mut wait, &waker).is_pending());
        reply.send(7);
        assert_eq!(count.0.load(Ordering::Relaxed), 1);
        drop(reply);
        let Poll::Ready((answer, back)) = poll_once(&mut wait, &waker) else {
            panic!("the answer was sent");
        };
        assert_eq!(answer, 7);
        replies.recycle(back);
        assert_eq!(
            replies.spare.borrow().len(),
            1,
            "the reply went back to the spares"
        );
    }

    #[test]
    fn an_abandoned_call_is_not_woken_and_its_reply_is_reused_only_when_free() {
        let replies = Replies::default();
        let reply = replies.take();
        let mut wait = ReplyWait::new(reply.clone());
        let count = Arc::new(Count(AtomicU32::new(0)));
        assert!(poll_once(&mut wait, &Waker::from(count.clone())).is_pending());
        drop(wait);
        let held = reply.clone();
        replies.recycle(reply);
        assert!(
            replies.spare.borrow().is_empty(),
            "the flight still holds it"
        );
        held.send(3);
        assert_eq!(
            count.0.load(Ordering::Relaxed),
            0,
            "the abandoned call was woken"
        );
        replies.recycle(held);
        let again = replies.take();
        assert!(again.answer.get().is_none() && !again.sent.get() && !again.abandoned.get());
    }
}
