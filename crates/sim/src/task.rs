//! Tasks a worker starts of its own, through its spawn port.
//!
//! Terminology:
//! - *worker task*: a future a worker hands to [`crate::Port::spawn`] (a renewal loop, a
//!   heartbeat). It is a task of the run like any other: the run's strategy schedules it, it
//!   reaches the world only through the replica's ports (so pauses hold it too), and its start
//!   and end are events of the trace (`TaskStarted`, `TaskEnded`).
//! - *handle*: what `spawn` returns: [`TaskHandle::join`] waits for the task's output,
//!   [`TaskHandle::abort`] drops its future before it runs again. Dropping the handle detaches
//!   the task: it runs on, as a leaked timer does in a real process, and the checkers see what
//!   it does.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use futures::future::AbortHandle;

use crate::signal::Signal;

/// What a worker task and its handle share.
pub(crate) struct TaskShared<T> {
    output: RefCell<Option<T>>,
    ended: Cell<bool>,
    aborted: Cell<bool>,
    abort: AbortHandle,
    changed: Signal,
}

impl<T> TaskShared<T> {
    pub(crate) fn new(abort: AbortHandle) -> Rc<TaskShared<T>> {
        Rc::new(TaskShared {
            output: RefCell::new(None),
            ended: Cell::new(false),
            aborted: Cell::new(false),
            abort,
            changed: Signal::default(),
        })
    }

    /// The task ended: with its output, or aborted (`None`).
    pub(crate) fn end(&self, output: Option<T>) {
        // invariant: a task ends once.
        assert!(!self.ended.get(), "a worker task ended twice");
        self.aborted.set(output.is_none());
        *self.output.borrow_mut() = output;
        self.ended.set(true);
        self.changed.notify();
    }
}

/// The handle of a worker task (see the module docs).
pub struct TaskHandle<T> {
    shared: Rc<TaskShared<T>>,
}

impl<T> TaskHandle<T> {
    pub(crate) fn new(shared: Rc<TaskShared<T>>) -> TaskHandle<T> {
        TaskHandle { shared }
    }

    /// Asks the task to stop: its future is dropped before it is polled again (a task that
    /// has already ended is unaffected). Its end is recorded as aborted.
    pub fn abort(&self) {
        self.shared.abort.abort();
    }

    /// Has the task ended (finished or aborted)?
    pub fn is_finished(&self) -> bool {
        self.shared.ended.get()
    }

    /// Waits for the task to end: its output, or `None` when it was aborted. A second join
    /// after the output was taken also answers `None`.
    pub async fn join(&self) -> Option<T> {
        while !self.shared.ended.get() {
            self.shared.changed.changed().await;
        }
        // invariant: only an ended task's output is taken.
        debug_assert!(self.shared.ended.get());
        self.shared.output.borrow_mut().take()
    }
}

impl<T> std::fmt::Debug for TaskHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskHandle")
            .field("ended", &self.shared.ended.get())
            .field("aborted", &self.shared.aborted.get())
            .finish()
    }
}
