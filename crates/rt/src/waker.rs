//! Wakers that wake by task id.
//!
//! Terminology:
//! - *inbox*: the executor's ready list, shared with every waker of the executor.
//! - *wake cell*: one per live task; holds the task id and a `queued` flag so a task woken
//!   twice before it runs is listed once. A finished task's cell is *reused* for a later task
//!   only when nothing else holds it (no waker of the old task survives), so no stale waker
//!   can ever wake the new task.
//!
//! - *thread id*: a number given to each thread the first time it asks, from a process-wide
//!   counter; ids are never reused, even after a thread exits (an address of a thread-local
//!   would be: a new thread can get the storage of one that ended).
//!
//! The executor is single-threaded, so wakers use `Rc` and `RefCell` instead of atomics: a
//! poll costs no atomic operation. `Waker` is `Send + Sync` by type, so every vtable entry
//! first checks that it runs on the thread that created the executor. On another thread,
//! clone and wake panic and drop leaks the cell; no shared state is ever touched from a
//! foreign thread, so no data race is possible.

use std::cell::{Cell, RefCell};
use std::mem::ManuallyDrop;
use std::rc::Rc;
use std::task::{RawWaker, RawWakerVTable, Waker};

use crate::TaskId;

static NEXT_THREAD_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

thread_local! {
    static THREAD_ID: u64 = NEXT_THREAD_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// This thread's id: unique for the life of the process, never reused.
fn thread_mark() -> u64 {
    let id = THREAD_ID.with(|id| *id);
    // invariant: ids start at 1, so 0 never names a thread.
    debug_assert!(id >= 1);
    id
}

/// The executor's list of ready tasks, in the order they were woken.
#[derive(Debug)]
pub(crate) struct Inbox {
    pub(crate) ready: RefCell<Vec<TaskId>>,
    owner_thread: u64,
}

impl Inbox {
    pub(crate) fn new() -> Inbox {
        Inbox {
            ready: RefCell::new(Vec::with_capacity(16)),
            owner_thread: thread_mark(),
        }
    }

    fn on_owner_thread(&self) -> bool {
        self.owner_thread == thread_mark()
    }
}

/// Per-task wake state.
#[derive(Debug)]
pub(crate) struct WakeCell {
    id: Cell<TaskId>,
    pub(crate) queued: Cell<bool>,
    /// Cleared when the task finishes or is aborted: waking it is then a no-op.
    pub(crate) live: Cell<bool>,
    inbox: Rc<Inbox>,
}

impl WakeCell {
    pub(crate) fn new(id: TaskId, inbox: Rc<Inbox>) -> Rc<WakeCell> {
        Rc::new(WakeCell {
            id: Cell::new(id),
            queued: Cell::new(false),
            live: Cell::new(true),
            inbox,
        })
    }

    /// A finished task's cell, given to task `id`; `Err` (the cell back, unchanged) while
    /// anything else holds it (a waker of the finished task could still wake it).
    pub(crate) fn reuse(cell: Rc<WakeCell>, id: TaskId) -> Result<Rc<WakeCell>, Rc<WakeCell>> {
        if Rc::strong_count(&cell) != 1 || Rc::weak_count(&cell) != 0 {
            return Err(cell);
        }
        // invariant: only a finished task's cell is reused.
        debug_assert!(!cell.live.get() && !cell.queued.get());
        cell.id.set(id);
        cell.live.set(true);
        Ok(cell)
    }

    /// Lists the task as ready unless it is listed already or has finished.
    pub(crate) fn wake(&self) {
        if self.live.get() && !self.queued.replace(true) {
            self.inbox.ready.borrow_mut().push(self.id.get());
        }
    }

    /// A `Waker` borrowing this cell, valid while `cell` lives; no reference count is taken.
    pub(crate) fn borrowed_waker(cell: &Rc<WakeCell>) -> ManuallyDrop<Waker> {
        let raw = RawWaker::new(Rc::as_ptr(cell).cast::<()>(), &VTABLE);
        // SAFETY: the vtable below upholds the RawWaker contract for pointers obtained from
        // `Rc::<WakeCell>::as_ptr`/`into_raw`; ManuallyDrop keeps this borrowed waker from
        // releasing a reference count it never took.
        ManuallyDrop::new(unsafe { Waker::from_raw(raw) })
    }
}

static VTABLE: RawWakerVTable = RawWakerVTable::new(clone_raw, wake_raw, wake_by_ref_raw, drop_raw);

/// The cell behind a waker's data pointer.
///
/// # Safety
/// `ptr` comes from `Rc::<WakeCell>::as_ptr` of a live `Rc` or from `Rc::into_raw`, and the
/// cell outlives the returned reference.
unsafe fn cell_ref<'a>(ptr: *const ()) -> &'a WakeCell {
    // SAFETY: guaranteed by the caller; the cell outlives every waker pointing at it.
    unsafe { &*ptr.cast::<WakeCell>() }
}

/// The vtable's `clone`: a new waker owning one more strong reference to the cell.
///
/// # Safety
/// `ptr` is a `WakeCell` pointer this vtable was installed with (from `Rc::as_ptr` of a live
/// `Rc` or `Rc::into_raw`), and the cell is alive.
unsafe fn clone_raw(ptr: *const ()) -> RawWaker {
    // SAFETY: the vtable is only installed with WakeCell pointers.
    let cell = unsafe { cell_ref(ptr) };
    assert!(
        cell.inbox.on_owner_thread(),
        "a leasesim waker was cloned on a foreign thread"
    );
    // SAFETY: the pointer is a live Rc allocation; we add the reference the new waker owns.
    unsafe { Rc::increment_strong_count(ptr.cast::<WakeCell>()) };
    RawWaker::new(ptr, &VTABLE)
}

/// The vtable's `wake`: lists the task, then releases the waker's reference.
///
/// # Safety
/// As [`clone_raw`], and the waker owns one strong reference (it was made by `clone_raw`),
/// which this call consumes.
unsafe fn wake_raw(ptr: *const ()) {
    // SAFETY: vtable contract: `wake` consumes the waker's reference.
    unsafe {
        wake_by_ref_raw(ptr);
        drop_raw(ptr);
    }
}

/// The vtable's `wake_by_ref`: lists the task; the reference count is untouched.
///
/// # Safety
/// As [`clone_raw`].
unsafe fn wake_by_ref_raw(ptr: *const ()) {
    // SAFETY: the vtable is only installed with WakeCell pointers.
    let cell = unsafe { cell_ref(ptr) };
    assert!(
        cell.inbox.on_owner_thread(),
        "a leasesim waker was woken on a foreign thread"
    );
    cell.wake();
}

/// The vtable's `drop`: releases the waker's reference on the owning thread (on a foreign
/// thread it is leaked rather than touched: `Rc` counts are not atomic).
///
/// # Safety
/// As [`clone_raw`], and the waker owns one strong reference, which this call consumes.
unsafe fn drop_raw(ptr: *const ()) {
    // SAFETY: the vtable is only installed with WakeCell pointers.
    let cell = unsafe { cell_ref(ptr) };
    if cell.inbox.on_owner_thread() {
        // SAFETY: this waker owned one strong reference (taken in clone_raw).
        unsafe { drop(Rc::from_raw(ptr.cast::<WakeCell>())) };
    }
    // On a foreign thread the reference is leaked rather than touched.
}
