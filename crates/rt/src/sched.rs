//! Scheduling strategies: which ready task runs next.
//!
//! Terminology:
//! - *FIFO*: always the oldest ready task; no draw. The readable baseline.
//! - *random*: a uniform draw among ready tasks (value 0 = the oldest).
//! - *PCT* (probabilistic concurrency testing, Burckhardt et al.): every task gets a random
//!   priority when spawned (lower value runs first; ties go to the older task), and `depth - 1`
//!   change points are drawn over an estimated step count. When the step counter reaches a
//!   change point, the task about to run is demoted below every initial priority and the
//!   choice is made again. A bug of depth `d` is then found with probability at least
//!   `1 / (n * k^(d-1))` per run.

use crate::TaskId;
use crate::choice::{ChoiceKind, ChoiceSource};

/// How the next ready task is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    Fifo,
    Random,
    Pct { depth: u32 },
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Strategy::Fifo => f.write_str("fifo"),
            Strategy::Random => f.write_str("random"),
            Strategy::Pct { depth } => write!(f, "pct:{depth}"),
        }
    }
}

impl std::str::FromStr for Strategy {
    type Err = String;

    fn from_str(text: &str) -> Result<Strategy, String> {
        match text {
            "fifo" => Ok(Strategy::Fifo),
            "random" => Ok(Strategy::Random),
            _ => {
                let depth = text.strip_prefix("pct:").ok_or_else(|| {
                    format!("unknown strategy `{text}` (expected fifo, random or pct:D)")
                })?;
                match depth.parse::<u32>() {
                    Ok(depth) if (1..=MAX_PCT_DEPTH).contains(&depth) => {
                        Ok(Strategy::Pct { depth })
                    }
                    _ => Err(format!(
                        "PCT depth `{depth}` must be a whole number 1..={MAX_PCT_DEPTH}"
                    )),
                }
            }
        }
    }
}

/// Deepest PCT depth accepted (demoted priorities live in the top `MAX_PCT_DEPTH` values).
pub const MAX_PCT_DEPTH: u32 = 64;
const DEMOTED_BASE: u64 = u64::MAX - MAX_PCT_DEPTH as u64 - 1;
const PRIORITY_MAX: u64 = u32::MAX as u64;

#[derive(Debug)]
pub(crate) struct Scheduler {
    strategy: Strategy,
    /// PCT change points, ascending, paired with their ordinal (1-based).
    change_points: Vec<(u64, u64)>,
    next_change: usize,
}

impl Scheduler {
    pub(crate) fn new(
        strategy: Strategy,
        steps_estimate: u64,
        choices: &mut ChoiceSource,
    ) -> Scheduler {
        let mut change_points = Vec::new();
        if let Strategy::Pct { depth } = strategy {
            assert!(
                (1..=MAX_PCT_DEPTH).contains(&depth),
                "PCT depth {depth} out of range"
            );
            for ordinal in 1..u64::from(depth) {
                let step = choices.draw(ChoiceKind::ChangePoint, steps_estimate.max(1) - 1);
                change_points.push((step + 1, ordinal));
            }
            change_points.sort_unstable();
        }
        Scheduler {
            strategy,
            change_points,
            next_change: 0,
        }
    }

    /// A new task's priority (only PCT draws one).
    pub(crate) fn initial_priority(&self, choices: &mut ChoiceSource) -> u64 {
        match self.strategy {
            Strategy::Pct { .. } => choices.draw(ChoiceKind::Priority, PRIORITY_MAX),
            Strategy::Fifo | Strategy::Random => 0,
        }
    }

    /// Picks an index into `ready` (two or more entries). Returns the index, and for PCT at a
    /// change point the task whose priority must be lowered, with its new priority.
    pub(crate) fn pick(
        &mut self,
        ready: &[TaskId],
        priority_of: impl Fn(TaskId) -> u64,
        step: u64,
        choices: &mut ChoiceSource,
    ) -> (usize, Option<(TaskId, u64)>) {
        debug_assert!(ready.len() >= 2);
        match self.strategy {
            Strategy::Fifo => (0, None),
            Strategy::Random => {
                let index = choices.draw(ChoiceKind::Schedule, (ready.len() - 1) as u64) as usize;
                (index, None)
            }
            Strategy::Pct { .. } => self.pick_pct(ready, priority_of, step),
        }
    }

    fn pick_pct(
        &mut self,
        ready: &[TaskId],
        priority_of: impl Fn(TaskId) -> u64,
        step: u64,
    ) -> (usize, Option<(TaskId, u64)>) {
        let best = |demoted: Option<(TaskId, u64)>| {
            let priority = |id: TaskId| match demoted {
                Some((lowered, value)) if lowered == id => value,
                _ => priority_of(id),
            };
            (0..ready.len())
                .min_by_key(|&index| (priority(ready[index]), ready[index]))
                .expect("ready is not empty")
        };
        let index = best(None);
        while self.next_change < self.change_points.len()
            && self.change_points[self.next_change].0 < step
        {
            self.next_change += 1;
        }
        match self.change_points.get(self.next_change) {
            Some(&(at_step, ordinal)) if at_step == step => {
                self.next_change += 1;
                let demoted = (ready[index], DEMOTED_BASE + ordinal);
                // invariant: a demoted priority is below every initial priority.
                debug_assert!(demoted.1 > PRIORITY_MAX);
                (best(Some(demoted)), Some(demoted))
            }
            _ => (index, None),
        }
    }
}
