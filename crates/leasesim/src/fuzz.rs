//! Fuzz campaigns: many seeds of one or more scenarios, on every core.
//!
//! Terminology:
//! - *seed plan*: a count of seeds from a start seed, or a wall-clock duration.
//! - *shard K/N*: the seeds whose index `i` (from the start seed) has `i % N == K - 1`; the N
//!   shards of a plan cover it exactly once, so CI machines can split a campaign.
//! - *job*: one thread running one simulation at a time. Seeds are handed out in blocks;
//!   results are keyed by seed and sorted, so `--jobs J` reports exactly what `--jobs 1` does.
//! - *finding*: a seed whose run failed (or broke an expected invariant, which is reported
//!   but does not fail the campaign).
//!
//! The wall clock is read here only to bound `--duration` and to report seeds per second;
//! it never reaches a simulation.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use leasesim_check::CoverageTally;
use leasesim_rt::{Feed, Strategy};
use leasesim_world::Scenario;

use crate::catalog::worker_factory;
use crate::runner::{RunSpec, run};

/// Which seeds a campaign runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeedPlan {
    Count { start: u64, count: u64 },
    Duration { start: u64, wall_ms: u64 },
}

/// A campaign over one scenario.
#[derive(Clone, Debug)]
pub struct ScenarioCampaign {
    pub scenario: Scenario,
    pub worker: String,
    pub strategy: Strategy,
    pub plan: SeedPlan,
    /// `(k, n)`: this is shard k of n (1-based).
    pub shard: (u64, u64),
    pub jobs: usize,
}

/// A failing (or expected-violation) seed.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    pub seed: u64,
    pub label: String,
    pub sentence: String,
    /// The scenario declares this invariant as expected to break.
    pub expected: bool,
}

/// What one scenario's campaign found.
#[derive(Clone, Debug, Default)]
pub struct ScenarioSummary {
    pub scenario: String,
    pub seeds: u64,
    /// Failing seeds per outcome label.
    pub failures: BTreeMap<String, u64>,
    /// Seeds per expected invariant seen.
    pub expected: BTreeMap<String, u64>,
    pub coverage: CoverageTally,
    pub events: u64,
    pub steps: u64,
    pub wall_s: f64,
    /// Findings, sorted by seed.
    pub findings: Vec<Finding>,
}

impl ScenarioSummary {
    pub fn failed_seeds(&self) -> u64 {
        self.failures.values().sum()
    }

    pub fn seeds_per_s(&self) -> f64 {
        if self.wall_s > 0.0 {
            self.seeds as f64 / self.wall_s
        } else {
            0.0
        }
    }

    fn merge(&mut self, other: ScenarioSummary) {
        self.seeds += other.seeds;
        for (label, count) in other.failures {
            *self.failures.entry(label).or_insert(0) += count;
        }
        for (label, count) in other.expected {
            *self.expected.entry(label).or_insert(0) += count;
        }
        self.coverage.merge(&other.coverage);
        self.events += other.events;
        self.steps += other.steps;
        self.findings.extend(other.findings);
    }
}

/// The seed at shard-local index `j`.
pub fn shard_seed(start: u64, shard: (u64, u64), j: u64) -> u64 {
    let (k, n) = shard;
    start.wrapping_add((k - 1) + j * n)
}

/// How many seeds of a `count`-seed plan fall in `shard`.
pub fn shard_len(count: u64, shard: (u64, u64)) -> u64 {
    let (k, n) = shard;
    // invariant: 1 <= k <= n, checked when the flag was parsed.
    debug_assert!(k >= 1 && k <= n);
    count.saturating_sub(k - 1).div_ceil(n)
}

/// Live counters a progress display reads while a campaign runs.
#[derive(Debug, Default)]
pub struct Progress {
    pub done: AtomicU64,
    pub failed: AtomicU64,
}

const BLOCK: u64 = 32;

/// Runs one job: claims blocks of seed indices until the plan is exhausted.
fn job(
    campaign: &ScenarioCampaign,
    next: &AtomicU64,
    deadline: Option<Instant>,
    progress: &Progress,
) -> ScenarioSummary {
    let scenario = Rc::new(campaign.scenario.clone());
    let factory = worker_factory(&campaign.worker).expect("the worker name was checked");
    let (start, limit) = match campaign.plan {
        SeedPlan::Count { start, count } => (start, shard_len(count, campaign.shard)),
        SeedPlan::Duration { start, .. } => (start, u64::MAX),
    };
    let mut summary = ScenarioSummary::default();
    let base = RunSpec {
        scenario,
        worker: campaign.worker.clone(),
        factory,
        feed: Feed::Seed(0),
        strategy: campaign.strategy,
        keep_events: false,
        record_choices: false,
        event_limit: None,
    };
    loop {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let first = next.fetch_add(BLOCK, Ordering::Relaxed);
        if first >= limit {
            break;
        }
        for j in first..(first + BLOCK).min(limit) {
            let seed = shard_seed(start, campaign.shard, j);
            let report = run(&RunSpec {
                feed: Feed::Seed(seed),
                ..base.clone()
            });
            summary.seeds += 1;
            summary.events += report.stats.events;
            summary.steps += report.stats.steps;
            summary.coverage.add(&report.coverage);
            for expected in &report.expected {
                let label = expected.invariant.name().to_string();
                *summary.expected.entry(label.clone()).or_insert(0) += 1;
                summary.findings.push(Finding {
                    seed,
                    label,
                    sentence: expected.sentence.clone(),
                    expected: true,
                });
            }
            if report.failed() {
                let label = report.outcome.label();
                *summary.failures.entry(label.clone()).or_insert(0) += 1;
                summary.findings.push(Finding {
                    seed,
                    label,
                    sentence: report.outcome.sentence(),
                    expected: false,
                });
                progress.failed.fetch_add(1, Ordering::Relaxed);
            }
            progress.done.fetch_add(1, Ordering::Relaxed);
        }
    }
    summary
}

/// Runs a campaign over one scenario on `jobs` threads. `tick` is called about ten times a
/// second from the calling thread while jobs run.
pub fn run_campaign(
    campaign: &ScenarioCampaign,
    progress: &Progress,
    tick: &mut dyn FnMut(),
) -> ScenarioSummary {
    assert!(campaign.jobs >= 1, "at least one job");
    let started = Instant::now();
    let deadline = match campaign.plan {
        SeedPlan::Duration { wall_ms, .. } => Some(started + Duration::from_millis(wall_ms)),
        SeedPlan::Count { .. } => None,
    };
    let next = AtomicU64::new(0);
    let results = Mutex::new(Vec::new());
    let caller = std::thread::current();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..campaign.jobs)
            .map(|_| {
                scope.spawn(|| {
                    let summary = job(campaign, &next, deadline, progress);
                    let ended = Instant::now();
                    results
                        .lock()
                        .expect("no job panics while holding the lock")
                        .push((summary, ended));
                    caller.unpark();
                })
            })
            .collect();
        while handles.iter().any(|h| !h.is_finished()) {
            tick();
            std::thread::park_timeout(Duration::from_millis(100));
        }
    });
    tick();
    let mut summary = ScenarioSummary {
        scenario: campaign.scenario.name.clone(),
        ..ScenarioSummary::default()
    };
    let mut last_end = started;
    for (part, ended) in results.into_inner().expect("jobs are done") {
        summary.merge(part);
        last_end = last_end.max(ended);
    }
    summary.findings.sort();
    // Measured to the last job's end, not to when the progress loop noticed it.
    summary.wall_s = (last_end - started).as_secs_f64();
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_cover_a_plan_exactly_once() {
        for count in [0u64, 1, 7, 10, 64] {
            for n in 1..=5u64 {
                let mut seen: Vec<u64> = (1..=n)
                    .flat_map(|k| {
                        (0..shard_len(count, (k, n))).map(move |j| shard_seed(100, (k, n), j))
                    })
                    .collect();
                seen.sort();
                let expected: Vec<u64> = (100..100 + count).collect();
                assert_eq!(seen, expected, "count {count}, {n} shards");
            }
        }
    }
}
