//! Join handles: await a task's output, or abort it.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use crate::outcome::JoinError;
use crate::{Handle, TaskId};

/// The task's result once known, and the waker of whoever awaits it.
type Slot<T> = (Option<Result<T, JoinError>>, Option<Waker>);

pub(crate) struct JoinState<T> {
    inner: RefCell<Slot<T>>,
}

impl<T> JoinState<T> {
    pub(crate) fn new() -> Rc<JoinState<T>> {
        Rc::new(JoinState {
            inner: RefCell::new((None, None)),
        })
    }

    /// Stores the task's result (the first one wins) and wakes whoever awaits it.
    pub(crate) fn complete(&self, result: Result<T, JoinError>) {
        let waiter = {
            let mut inner = self.inner.borrow_mut();
            if inner.0.is_some() {
                return;
            }
            inner.0 = Some(result);
            inner.1.take()
        };
        if let Some(waiter) = waiter {
            waiter.wake();
        }
    }
}

/// Awaits the output of a spawned task. Dropping it detaches the task (it keeps running).
pub struct JoinHandle<T> {
    id: TaskId,
    state: Rc<JoinState<T>>,
    handle: Handle,
    taken: bool,
}

impl<T> std::fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinHandle")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl<T> JoinHandle<T> {
    pub(crate) fn new(id: TaskId, state: Rc<JoinState<T>>, handle: Handle) -> JoinHandle<T> {
        JoinHandle {
            id,
            state,
            handle,
            taken: false,
        }
    }

    /// The task's id.
    pub fn id(&self) -> TaskId {
        self.id
    }

    /// Has the task finished (or been aborted)?
    pub fn is_finished(&self) -> bool {
        self.taken || self.state.inner.borrow().0.is_some()
    }

    /// Drops the task's future; it never runs again and its timers never fire. Awaiting the
    /// handle then yields `Err(JoinError::Aborted)` unless the task had already finished.
    pub fn abort(&self) {
        if self.id.0 != u32::MAX {
            self.handle.core.abort(self.id);
        }
        self.state.complete(Err(JoinError::Aborted));
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        assert!(!this.taken, "JoinHandle polled after it completed");
        let mut inner = this.state.inner.borrow_mut();
        match inner.0.take() {
            Some(result) => {
                this.taken = true;
                Poll::Ready(result)
            }
            None => {
                match &mut inner.1 {
                    Some(waiter) if waiter.will_wake(cx.waker()) => {}
                    slot => *slot = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
        }
    }
}
