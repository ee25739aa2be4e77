//! How a run ends.

use std::fmt;

use crate::TaskId;

/// A task as named in an outcome.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TaskInfo {
    pub id: TaskId,
    pub name: String,
}

impl fmt::Display for TaskInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "task {} ({})", self.id, self.name)
    }
}

/// Why a run stopped. Every way a simulation can end is a value, never a hang or an abort.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunOutcome<T> {
    /// The awaited future finished (or, for `run_until_quiescent`, every task did).
    Completed(T),
    /// Something observing the run (an event observer) asked it to stop.
    Halted,
    /// Tasks are waiting and no timer is pending: nothing can ever wake them.
    Deadlock { blocked: Vec<TaskInfo> },
    /// A task panicked; the run stops and the panic is reported instead of unwinding further.
    /// `location` is the panic's `file:line` when [`crate::capture_panics`] is installed.
    Panic {
        task: TaskInfo,
        message: String,
        location: Option<String>,
    },
    /// A task used up its instant budget: it was polled `polls` times at virtual instant
    /// `at_ms` without letting time move (it spins on zero-length waits or yields).
    Spin {
        task: TaskInfo,
        at_ms: u64,
        polls: u64,
    },
    /// The run's interrupt was raised from outside (a wall-clock watchdog): it was stuck.
    Interrupted { now_ms: u64 },
    /// The step budget ran out.
    StepLimit { steps: u64 },
    /// The next timer lies beyond the virtual-time budget.
    TimeLimit { now_ms: u64 },
}

impl<T: fmt::Debug> RunOutcome<T> {
    /// The completed value; panics with the outcome otherwise (for tests).
    #[track_caller]
    pub fn expect_completed(self) -> T {
        match self {
            RunOutcome::Completed(value) => value,
            other => panic!("run did not complete: {other:?}"),
        }
    }
}

impl<T> RunOutcome<T> {
    /// Applies `f` to a completed value.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> RunOutcome<U> {
        match self {
            RunOutcome::Completed(value) => RunOutcome::Completed(f(value)),
            RunOutcome::Halted => RunOutcome::Halted,
            RunOutcome::Deadlock { blocked } => RunOutcome::Deadlock { blocked },
            RunOutcome::Panic {
                task,
                message,
                location,
            } => RunOutcome::Panic {
                task,
                message,
                location,
            },
            RunOutcome::Spin { task, at_ms, polls } => RunOutcome::Spin { task, at_ms, polls },
            RunOutcome::Interrupted { now_ms } => RunOutcome::Interrupted { now_ms },
            RunOutcome::StepLimit { steps } => RunOutcome::StepLimit { steps },
            RunOutcome::TimeLimit { now_ms } => RunOutcome::TimeLimit { now_ms },
        }
    }

    pub fn is_completed(&self) -> bool {
        matches!(self, RunOutcome::Completed(_))
    }
}

/// Why a join handle yields no value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JoinError {
    /// The task was aborted before it finished; its future was dropped.
    Aborted,
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JoinError::Aborted => f.write_str("task was aborted"),
        }
    }
}

impl std::error::Error for JoinError {}
