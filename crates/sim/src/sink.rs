//! The event sink and the determinism self-check.
//!
//! Terminology:
//! - *event*: something the world records (a call, a reply, a timer...). The sink does not
//!   know what events mean; it stamps each with the virtual time and a sequence number, folds
//!   its stable hash into the run's trace hash (through the runtime's handle), and hands it to
//!   an observer.
//! - *observer*: reads each event as it is emitted (the invariant checkers) and may halt the
//!   run at the first violation.
//! - *divergence*: the first position where two runs of the same seed recorded different
//!   events; `check_determinism` reports it with both events.

use std::cell::RefCell;
use std::fmt::Debug;
use std::hash::Hash;

pub use leasesim_events::{Flow, Stamped};
use leasesim_rt::Handle;
use leasesim_rt::hash::stable_hash;

/// A boxed event observer.
pub type Observer<E> = Box<dyn FnMut(&Stamped<E>) -> Flow>;

/// Where the world writes its events.
pub struct EventSink<E> {
    handle: Handle,
    next_seq: RefCell<u64>,
    kept: Option<RefCell<Vec<Stamped<E>>>>,
    observer: RefCell<Option<Observer<E>>>,
}

impl<E> Debug for EventSink<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSink")
            .field("next_seq", &self.next_seq)
            .finish_non_exhaustive()
    }
}

impl<E: Hash> EventSink<E> {
    /// A log on `handle`'s clock; `keep` stores every event (replay), otherwise events only
    /// pass through the observer (fuzzing).
    pub fn new(handle: Handle, keep: bool) -> EventSink<E> {
        EventSink {
            handle,
            next_seq: RefCell::new(0),
            kept: keep.then(|| RefCell::new(Vec::new())),
            observer: RefCell::new(None),
        }
    }

    /// Installs the observer that sees every event as it is emitted.
    pub fn observe(&self, observer: impl FnMut(&Stamped<E>) -> Flow + 'static) {
        *self.observer.borrow_mut() = Some(Box::new(observer));
    }

    /// Records one event now.
    pub fn emit(&self, event: E) {
        let seq = {
            let mut next = self.next_seq.borrow_mut();
            *next += 1;
            *next - 1
        };
        let stamped = Stamped {
            seq,
            at_ms: self.handle.now_ms(),
            event,
        };
        self.handle.note(stable_hash(&stamped));
        let flow = match self.observer.borrow_mut().as_mut() {
            Some(observer) => observer(&stamped),
            None => Flow::Continue,
        };
        if flow == Flow::Halt {
            self.handle.halt();
        }
        if let Some(kept) = &self.kept {
            kept.borrow_mut().push(stamped);
        }
    }

    /// Events emitted so far.
    pub fn len(&self) -> u64 {
        *self.next_seq.borrow()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes the kept events out (empty when the log does not keep events).
    pub fn take(&self) -> Vec<Stamped<E>> {
        self.kept
            .as_ref()
            .map(|kept| std::mem::take(&mut *kept.borrow_mut()))
            .unwrap_or_default()
    }

    /// Removes the observer (and returns it), e.g. to read its verdict after the run.
    pub fn take_observer(&self) -> Option<Observer<E>> {
        self.observer.borrow_mut().take()
    }
}

/// Where two runs of one seed first differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence<E> {
    /// Index of the first differing event.
    pub index: usize,
    /// The event of the first run there (None: the first run had ended).
    pub first: Option<E>,
    /// The event of the second run there.
    pub second: Option<E>,
}

impl<E: Debug> std::fmt::Display for Divergence<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "runs diverge at event #{}: first run {:?}, second run {:?}",
            self.index, self.first, self.second
        )
    }
}

/// Runs `run` twice and compares the event sequences; reports the first divergence.
/// `run` must build a fresh simulation from the same seed each time.
pub fn check_determinism<E, F>(mut run: F) -> Result<usize, Divergence<E>>
where
    E: PartialEq + Clone + Debug,
    F: FnMut() -> Vec<E>,
{
    let first = run();
    let second = run();
    match first_difference(&first, &second) {
        Some(divergence) => Err(divergence),
        None => Ok(first.len()),
    }
}

/// Where two event sequences first differ (`None`: they are equal); a sequence that ended
/// has `None` there.
pub fn first_difference<E: PartialEq + Clone>(first: &[E], second: &[E]) -> Option<Divergence<E>> {
    let index = (0..first.len().max(second.len())).find(|&i| first.get(i) != second.get(i))?;
    Some(Divergence {
        index,
        first: first.get(index).cloned(),
        second: second.get(index).cloned(),
    })
}
