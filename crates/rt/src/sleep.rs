//! Futures that wait in virtual time.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::Handle;
use crate::time::TimerKey;

/// Completes at a virtual deadline. Registers its timer on first poll; dropping it removes
/// the timer, so an aborted task's sleeps never fire.
///
/// A sleep whose deadline had already come when it was made (`sleep(0)`, `sleep_until` a past
/// instant) still yields once: it completes at the task's next step, never inside the poll
/// that made it, so a loop of zero-length sleeps lets other tasks run (and, if it never lets
/// time move, ends the run with `RunOutcome::Spin` instead of hanging it).
#[must_use = "a sleep does nothing unless awaited"]
pub struct Sleep {
    handle: Handle,
    deadline_ms: u64,
    key: Option<TimerKey>,
    /// Zero-length: it must yield once before completing.
    must_yield: bool,
}

impl std::fmt::Debug for Sleep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline_ms", &self.deadline_ms)
            .finish()
    }
}

impl Sleep {
    /// The instant this sleep completes at.
    pub fn deadline_ms(&self) -> u64 {
        self.deadline_ms
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.must_yield {
            this.must_yield = false;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if this.handle.now_ms() >= this.deadline_ms {
            if let Some(key) = this.key.take() {
                this.handle.core.timers.borrow_mut().cancel(key);
            }
            return Poll::Ready(());
        }
        let mut timers = this.handle.core.timers.borrow_mut();
        match this.key {
            Some(key) if timers.is_pending(key) => timers.update_waker(key, cx.waker()),
            _ => this.key = Some(timers.register(this.deadline_ms, cx.waker().clone())),
        }
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            // A sleep dropped by `Sim`'s teardown may find the timers already borrowed for
            // clearing; the queue is being emptied anyway.
            if let Ok(mut timers) = self.handle.core.timers.try_borrow_mut() {
                timers.cancel(key);
            }
        }
    }
}

/// Yields once: the task is woken again at once and other ready tasks may run first.
#[must_use = "yield_now does nothing unless awaited"]
#[derive(Debug, Default)]
pub struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl Handle {
    /// Completes `duration_ms` after now.
    pub fn sleep(&self, duration_ms: u64) -> Sleep {
        self.sleep_until(self.now_ms().saturating_add(duration_ms))
    }

    /// Completes at `deadline_ms` (at once if that has passed).
    pub fn sleep_until(&self, deadline_ms: u64) -> Sleep {
        Sleep {
            handle: self.clone(),
            deadline_ms,
            key: None,
            must_yield: deadline_ms <= self.now_ms(),
        }
    }

    /// Lets other ready tasks run before this one continues.
    pub fn yield_now(&self) -> YieldNow {
        YieldNow::default()
    }
}
