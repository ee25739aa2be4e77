//! leasesim-rt: a deterministic, single-threaded async runtime in virtual time.
//!
//! Terminology:
//! - *run*: one execution of a simulation, from one [`SimConfig`] (a seed or recorded
//!   choices, a strategy and limits) to one [`RunOutcome`].
//! - *virtual time*: milliseconds since the start of the run, as a `u64`. It moves only when
//!   no task is ready, jumping to the next timer; no wall clock is ever read.
//! - *choice*: every nondeterministic decision (which ready task runs, a value in a range, a
//!   coin) is drawn from one [`ChoiceSource`]. A run is therefore a function of its seed, and
//!   of its recorded choices, which is what replay and shrinking build on.
//!
//! The runtime knows nothing about leases, systems or events; the shared simulation layer
//! (`leasesim-sim`) is built on top of it, and records its events through [`Handle::note`].
//!
//! Two limits of the model, by design:
//! - Wakers are bound to the thread that created the simulator. They carry no atomics; a
//!   waker used on another thread panics (clone, wake) or leaks (drop) instead of touching
//!   shared state. Owner threads are told apart by an id that is never reused.
//! - Nothing outside the simulation can wake a task: a real thread, a real timer or a channel
//!   fed from outside shows up as [`RunOutcome::Deadlock`] (or a watchdog's
//!   [`RunOutcome::Interrupted`]), never as a silent hang.

mod choice;
mod executor;
pub mod hash;
mod join;
mod outcome;
mod panics;
mod sched;
mod sleep;
mod time;
mod waker;

pub use choice::{Choice, ChoiceKind, ChoiceSource, Feed};
pub use executor::{Handle, Interrupt, Sim, SimConfig, pct_steps_from};
pub use join::JoinHandle;
pub use outcome::{JoinError, RunOutcome, TaskInfo};
pub use panics::{capture_panics, set_quiet};
pub use sched::{MAX_PCT_DEPTH, PctStats, Strategy};
pub use sleep::{Sleep, YieldNow};

/// A task's id: its spawn order within the run, never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId(pub u32);

impl TaskId {
    fn index(self) -> usize {
        self.0 as usize
    }
}

impl std::fmt::Display for TaskId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "t{}", self.0)
    }
}
