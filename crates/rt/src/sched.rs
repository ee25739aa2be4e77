//! Scheduling strategies: which ready task runs next.
//!
//! Terminology:
//! - *FIFO*: always the oldest ready task; no draw. The readable baseline.
//! - *random*: a uniform draw among ready tasks (value 0 = the oldest).
//! - *PCT* (probabilistic concurrency testing, Burckhardt et al. 2010): every task gets a
//!   random priority when spawned (lower value runs first; ties go to the older task), and
//!   `depth - 1` *change points* are drawn uniformly over `1..=k` steps, `k` being the run's
//!   step estimate. At the step a change point names, the task that runs at that step is
//!   demoted below every initial priority, whatever the number of ready tasks: a lone task
//!   loses its rank for every later contest. A bug of depth `d` among `n` tasks is then found
//!   with probability at least `1 / (n * k^(d-1))` per run, provided `k` covers the run's
//!   steps. The runner sizes `k` per scenario from measured step counts.
//! - *applied*: a change point whose step the run reached. Points drawn past the run's last
//!   step are never applied; [`PctStats`] reports both numbers so a campaign can tell how much
//!   of its PCT budget took effect.

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

/// How many PCT change points a run drew and how many it reached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PctStats {
    pub drawn: u32,
    pub applied: u32,
}

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

    /// Does every step need [`Scheduler::pick`], even with one task ready? Only PCT does: its
    /// change points fall on steps, not on contests.
    pub(crate) fn consults_every_step(&self) -> bool {
        matches!(self.strategy, Strategy::Pct { .. })
    }

    /// Change points drawn, and reached so far.
    pub(crate) fn pct_stats(&self) -> PctStats {
        let drawn = u32::try_from(self.change_points.len()).expect("at most 63 change points");
        let applied = u32::try_from(self.next_change).expect("at most 63 change points");
        // invariant: a change point is applied at most once.
        debug_assert!(applied <= drawn);
        PctStats { drawn, applied }
    }

    /// Picks an index into `ready` (at least one entry) for the 1-based step `step`. For PCT
    /// at a change point it also pushes onto `demoted` each task whose priority must be
    /// lowered, with its new priority (the caller stores them).
    pub(crate) fn pick(
        &mut self,
        ready: &[TaskId],
        priority_of: impl Fn(TaskId) -> u64,
        step: u64,
        choices: &mut ChoiceSource,
        demoted: &mut Vec<(TaskId, u64)>,
    ) -> usize {
        debug_assert!(!ready.is_empty());
        match self.strategy {
            Strategy::Fifo => 0,
            Strategy::Random => {
                choices.draw(ChoiceKind::Schedule, (ready.len() - 1) as u64) as usize
            }
            Strategy::Pct { .. } => self.pick_pct(ready, priority_of, step, demoted),
        }
    }

    fn pick_pct(
        &mut self,
        ready: &[TaskId],
        priority_of: impl Fn(TaskId) -> u64,
        step: u64,
        demoted: &mut Vec<(TaskId, u64)>,
    ) -> usize {
        let best = |demoted: &[(TaskId, u64)]| {
            let priority = |id: TaskId| {
                demoted
                    .iter()
                    .rev()
                    .find(|(lowered, _)| *lowered == id)
                    .map_or_else(|| priority_of(id), |(_, value)| *value)
            };
            (0..ready.len())
                .min_by_key(|&index| (priority(ready[index]), ready[index]))
                .expect("ready is not empty")
        };
        let first_demotion = demoted.len();
        let mut index = best(demoted);
        // Every step is offered to the scheduler, so no change point can be stepped over;
        // several points drawn on one step demote the successive winners of that step.
        while let Some(&(at_step, ordinal)) = self.change_points.get(self.next_change) {
            // invariant: change points are consumed in step order, none of them skipped.
            assert!(
                at_step >= step,
                "change point {at_step} passed unapplied at {step}"
            );
            if at_step != step {
                break;
            }
            self.next_change += 1;
            let lowered = (ready[index], DEMOTED_BASE + ordinal);
            // invariant: a demoted priority is below every initial priority.
            debug_assert!(lowered.1 > PRIORITY_MAX);
            demoted.push(lowered);
            index = best(demoted);
        }
        // invariant: this step applied exactly the points drawn on it, in order.
        debug_assert!(
            self.change_points
                .get(self.next_change)
                .is_none_or(|&(at_step, _)| at_step > step)
                && demoted.len() - first_demotion <= self.next_change
        );
        index
    }
}
