//! Fuzz campaigns: many seeds of one or more scenarios, on every core.
//!
//! Terminology:
//! - *seed plan*: a count of seeds from a start seed, or a wall-clock duration.
//! - *shard K/N*: the seeds whose index `i` (from the start seed) has `i % N == K - 1`; the N
//!   shards of a plan cover it exactly once, so CI machines can split a campaign.
//! - *job*: one thread running one simulation at a time, taking seed indices one by one
//!   from a shared counter. Results are keyed by seed and sorted, so `--jobs J` reports
//!   exactly what `--jobs 1` does.
//! - *finding*: a seed whose run failed (or broke an expected invariant, which is reported
//!   but does not fail the campaign).
//! - *watchdog*: the calling thread, while jobs run, checks how long each job's current seed
//!   has gone without its virtual time moving (the run publishes it through its interrupt)
//!   against the per-seed wall-clock limit. A slow run whose clock moves is left alone (the
//!   scenario's length bounds it); past the limit without a move, it raises the run's
//!   interrupt: the simulation ends at its next step or event with a `hang` verdict. A job that does not answer within
//!   a second limit is stuck inside one poll of user code: the watchdog records the seed as a
//!   `hang` itself, leaves that thread behind (it is never joined; the process exits without
//!   it) and starts a fresh job, so the campaign goes on. The watchdog never changes a run
//!   that is not stuck: it reads the wall clock, never the simulation's.
//! - *quiet panics*: job threads capture panics (message and `file:line`) into the verdict
//!   instead of printing Rust's default report for every failing seed.
//!
//! The wall clock is read here only to bound `--duration`, to watch for stuck seeds and to
//! report seeds per second; it never reaches a simulation.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use leasesim_invariants::CoverageTally;
use leasesim_rt::{Feed, Interrupt, Strategy};

use crate::systems::{AnyReport, AnyRunner, AnyScenario};

/// Which seeds a campaign runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeedPlan {
    Count { start: u64, count: u64 },
    Duration { start: u64, wall_ms: u64 },
}

/// The per-seed wall-clock limit, without virtual time moving, when none is given.
pub const DEFAULT_SEED_TIMEOUT_MS: u64 = 60_000;

/// Builds a worker factory on a job's own thread (factories hold `Rc`s and stay on the thread
/// that built them). Campaigns of builtin workers need none: they build by name.
#[derive(Clone)]
pub struct FactorySource(Arc<dyn Fn() -> Box<dyn std::any::Any> + Send + Sync>);

impl FactorySource {
    /// A source of `Rc<WorkerFactory<S>>` for the scenario's system `S`.
    pub fn new<S: leasesim_sim::System>(
        build: impl Fn() -> Rc<leasesim_sim::WorkerFactory<S>> + Send + Sync + 'static,
    ) -> FactorySource {
        FactorySource(Arc::new(move || {
            Box::new(build()) as Box<dyn std::any::Any>
        }))
    }
}

impl FactorySource {
    /// A factory, built on the calling thread.
    pub fn build(&self) -> Box<dyn std::any::Any> {
        (self.0)()
    }
}

impl std::fmt::Debug for FactorySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FactorySource(..)")
    }
}

/// A campaign over one scenario.
#[derive(Clone, Debug)]
pub struct ScenarioCampaign {
    pub scenario: Arc<dyn AnyScenario>,
    /// The worker's name (a builtin name, or how a custom worker is reported).
    pub worker: String,
    /// Builds a custom worker; `None` builds the builtin worker named `worker`.
    pub factory: Option<FactorySource>,
    pub strategy: Strategy,
    pub plan: SeedPlan,
    /// `(k, n)`: this is shard k of n (1-based).
    pub shard: (u64, u64),
    pub jobs: usize,
    /// Wall-clock time one seed may take before the watchdog stops it.
    pub seed_timeout_ms: u64,
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
    /// Runs per in-flight cell (see `leasesim_invariants::InFlightCoverage`).
    pub in_flight: CoverageTally,
    pub events: u64,
    pub steps: u64,
    /// PCT change points drawn and applied, summed over the seeds.
    pub pct_drawn: u64,
    pub pct_applied: u64,
    /// The PCT step estimate the campaign measured (PCT only).
    pub pct_steps: Option<u64>,
    pub wall_s: f64,
    /// Findings, sorted by seed.
    pub findings: Vec<Finding>,
}

impl ScenarioSummary {
    pub fn failed_seeds(&self) -> u64 {
        self.failures.values().sum()
    }

    /// The residual risk of a scenario none of whose seeds failed: an upper bound, at 95 %
    /// confidence, on the chance that one more seed breaks an invariant. With no failure in
    /// `N` independent seeds it is the rule of three, `3 / N` (the exact bound, `1 - 0.05^(1/N)`,
    /// is a little lower, so `3 / N` errs on the safe side). `None` when a seed failed or none
    /// ran, and under 3 seeds, where the bound would say nothing (`3 / N >= 1`).
    pub fn residual_risk(&self) -> Option<f64> {
        let bound = (self.failed_seeds() == 0 && self.seeds > 3).then(|| 3.0 / self.seeds as f64);
        // invariant: the rule of three is never below the exact one-sided 95 % bound.
        debug_assert!(bound.is_none_or(|p| p >= 1.0 - 0.05f64.powf(1.0 / self.seeds as f64)));
        bound
    }

    pub fn seeds_per_s(&self) -> f64 {
        if self.wall_s > 0.0 {
            self.seeds as f64 / self.wall_s
        } else {
            0.0
        }
    }

    /// Counts one finished run of `seed` (a hang stopped by the watchdog is reported with
    /// the campaign's limit).
    fn add_run(&mut self, seed: u64, report: &dyn AnyReport, limit_ms: u64) {
        let stats = report.stats();
        self.seeds += 1;
        self.events += stats.events;
        self.steps += stats.steps;
        self.pct_drawn += u64::from(stats.pct_drawn);
        self.pct_applied += u64::from(stats.pct_applied);
        self.coverage.add_bits(u128::from(report.coverage()));
        self.in_flight.add_bits(report.in_flight());
        for (invariant, sentence) in report.expected() {
            let label = invariant.to_string();
            *self.expected.entry(label.clone()).or_insert(0) += 1;
            self.findings.push(Finding {
                seed,
                label,
                sentence,
                expected: true,
            });
        }
        if report.failed() {
            let sentence = match report.label().as_str() {
                "hang" => crate::runner::hang_sentence(limit_ms, Some(stats.end_ms)),
                _ => report.sentence(),
            };
            self.add_failure(seed, report.label(), sentence);
        }
        // invariant: applied change points never outnumber the drawn ones.
        debug_assert!(self.pct_applied <= self.pct_drawn);
    }

    fn add_failure(&mut self, seed: u64, label: String, sentence: String) {
        *self.failures.entry(label.clone()).or_insert(0) += 1;
        self.findings.push(Finding {
            seed,
            label,
            sentence,
            expected: false,
        });
    }
}

/// The seed at shard-local index `j`. Seeds never wrap: the plan is cut at the last seed.
pub fn shard_seed(start: u64, shard: (u64, u64), j: u64) -> u64 {
    let (k, n) = shard;
    let seed = j
        .checked_mul(n)
        .and_then(|offset| offset.checked_add(k - 1))
        .and_then(|offset| start.checked_add(offset));
    // invariant: callers stay within `seeds_left(start)` seeds, so no seed wraps to 0.
    seed.expect("a seed plan never runs past the last seed")
}

/// How many seeds there are from `start` to the last one (`2^64 - 1`), saturated at
/// `u64::MAX` (only `start == 0` has one more).
pub fn seeds_left(start: u64) -> u64 {
    (u64::MAX - start).saturating_add(1)
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
    /// Set to end the campaign early (an interrupt from the user): jobs take no new seed,
    /// the seeds running finish, and the summary holds every seed that ran.
    pub stop: AtomicBool,
}

/// No seed is running in a job slot.
const IDLE: u64 = u64::MAX;

/// What the watchdog sees of one job.
#[derive(Debug, Default)]
struct JobSlot {
    /// The seed being run, or [`IDLE`].
    seed: AtomicU64,
    /// When it started, or when the watchdog last saw its virtual time move, in ms since the
    /// campaign started.
    started_ms: AtomicU64,
    /// The run's virtual time at the watchdog's last look.
    seen_virtual_ms: AtomicU64,
    interrupt: Interrupt,
    /// Given up by the watchdog: the thread must not report anything any more.
    abandoned: AtomicBool,
    /// The job ran out of seeds (or time) and is about to return.
    ended: AtomicBool,
}

/// State shared by the jobs, the watchdog and the caller.
struct Shared {
    campaign: ScenarioCampaign,
    next: AtomicU64,
    limit: u64,
    started: Instant,
    deadline: Option<Instant>,
    summary: Mutex<ScenarioSummary>,
    progress: Arc<Progress>,
    /// How many jobs have ended, and the signal the watching thread waits on: it wakes as
    /// soon as one ends, not at its next tick (a short campaign would otherwise last a tick).
    ended: (Mutex<usize>, Condvar),
}

impl Shared {
    fn elapsed_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }
}

impl ScenarioCampaign {
    /// The runner of this campaign's worker, built on the calling thread.
    fn runner(&self) -> Box<dyn AnyRunner> {
        let runner = match &self.factory {
            Some(source) => {
                self.scenario
                    .custom_runner(&self.worker, source.build(), self.strategy)
            }
            None => self.scenario.runner(&self.worker, self.strategy),
        };
        runner.expect("the worker was checked against the scenario's system")
    }
}

/// Runs one job: takes seed indices until the plan is exhausted or the job is abandoned.
fn job(shared: &Shared, slot: &JobSlot) {
    leasesim_rt::set_quiet(true);
    let campaign = &shared.campaign;
    let mut runner = campaign.runner();
    runner.set_interrupt(slot.interrupt.clone());
    // PCT's step estimate, measured here under the watchdog's eye (the same on every job).
    slot.started_ms
        .store(shared.elapsed_ms(), Ordering::Relaxed);
    slot.seed
        .store(crate::runner::CALIBRATION_SEEDS.start, Ordering::Relaxed);
    runner.calibrate();
    slot.seed.store(IDLE, Ordering::Relaxed);
    if slot.abandoned.load(Ordering::Relaxed) {
        return;
    }
    shared
        .summary
        .lock()
        .expect("no job panics holding the lock")
        .pct_steps = runner.pct_steps();
    loop {
        if shared.deadline.is_some_and(|d| Instant::now() >= d)
            || shared.progress.stop.load(Ordering::Relaxed)
        {
            break;
        }
        let index = shared.next.fetch_add(1, Ordering::Relaxed);
        if index >= shared.limit {
            break;
        }
        let seed = shard_seed(start_of(campaign.plan), campaign.shard, index);
        slot.interrupt.clear();
        slot.seen_virtual_ms.store(0, Ordering::Relaxed);
        slot.started_ms
            .store(shared.elapsed_ms(), Ordering::Relaxed);
        slot.seed.store(seed, Ordering::Relaxed);
        let report = runner.run(Feed::Seed(seed), false, false);
        slot.seed.store(IDLE, Ordering::Relaxed);
        if slot.abandoned.load(Ordering::Relaxed) {
            // The watchdog already reported this seed and replaced this job.
            return;
        }
        let failed = report.failed();
        let mut summary = shared
            .summary
            .lock()
            .expect("no job panics holding the lock");
        summary.add_run(seed, &*report, campaign.seed_timeout_ms);
        drop(summary);
        if failed {
            shared.progress.failed.fetch_add(1, Ordering::Relaxed);
        }
        shared.progress.done.fetch_add(1, Ordering::Relaxed);
    }
}

fn start_of(plan: SeedPlan) -> u64 {
    match plan {
        SeedPlan::Count { start, .. } | SeedPlan::Duration { start, .. } => start,
    }
}

/// Starts one job thread; it is joined by the caller unless the watchdog abandons it.
fn spawn_job(shared: &Arc<Shared>, slot: &Arc<JobSlot>) -> std::thread::JoinHandle<()> {
    let (shared, slot) = (shared.clone(), slot.clone());
    std::thread::spawn(move || {
        job(&shared, &slot);
        slot.ended.store(true, Ordering::Release);
        let (ended, signal) = &shared.ended;
        *ended.lock().expect("no job panics holding the lock") += 1;
        signal.notify_all();
    })
}

/// Waits until a job ends or `tick_ms` pass, whichever comes first.
fn wait_for_a_job(shared: &Shared, seen: &mut usize, tick_ms: u64) {
    let (ended, signal) = &shared.ended;
    let guard = ended.lock().expect("no job panics holding the lock");
    let (guard, _) = signal
        .wait_timeout_while(guard, Duration::from_millis(tick_ms), |ended| {
            *ended == *seen
        })
        .expect("no job panics holding the lock");
    *seen = *guard;
}

/// The watchdog's look at one job: interrupt a seed whose virtual time has not moved for the
/// limit (a slow run whose clock moves is left alone: a scenario's length bounds it); give
/// up on a job that ignored the interrupt for another limit (stuck inside one poll).
/// Returns true when the job was abandoned.
fn watch(shared: &Shared, slot: &JobSlot, now_ms: u64) -> bool {
    let seed = slot.seed.load(Ordering::Relaxed);
    if seed == IDLE {
        return false;
    }
    let virtual_ms = slot.interrupt.virtual_ms();
    if slot.seen_virtual_ms.swap(virtual_ms, Ordering::Relaxed) != virtual_ms {
        slot.started_ms.store(now_ms, Ordering::Relaxed);
    }
    let limit_ms = shared.campaign.seed_timeout_ms;
    let stalled_ms = now_ms.saturating_sub(slot.started_ms.load(Ordering::Relaxed));
    if stalled_ms > limit_ms {
        slot.interrupt.raise();
    }
    if stalled_ms <= limit_ms.saturating_mul(2) || slot.abandoned.swap(true, Ordering::Relaxed) {
        return false;
    }
    let sentence = crate::runner::hang_sentence(limit_ms, None);
    let mut summary = shared
        .summary
        .lock()
        .expect("no job panics holding the lock");
    summary.seeds += 1;
    summary.add_failure(seed, "hang".into(), sentence);
    shared.progress.failed.fetch_add(1, Ordering::Relaxed);
    shared.progress.done.fetch_add(1, Ordering::Relaxed);
    true
}

/// How many seeds this shard of `campaign` runs at most, and the wall-clock deadline of a
/// duration plan started at `started`.
fn seed_limit(campaign: &ScenarioCampaign, started: Instant) -> (u64, Option<Instant>) {
    match campaign.plan {
        SeedPlan::Count { start, count } => {
            // invariant: a count plan was checked to end at or before the last seed.
            assert!(
                count <= seeds_left(start),
                "the seed plan wraps past 2^64 - 1"
            );
            (shard_len(count, campaign.shard), None)
        }
        SeedPlan::Duration { start, wall_ms } => (
            shard_len(seeds_left(start), campaign.shard),
            Some(started + Duration::from_millis(wall_ms)),
        ),
    }
}

/// Runs a campaign over one scenario on `jobs` threads. `tick` is called about ten times a
/// second from the calling thread while jobs run (which also watches them for stuck seeds).
pub fn run_campaign(
    campaign: &ScenarioCampaign,
    progress: &Arc<Progress>,
    tick: &mut dyn FnMut(),
) -> ScenarioSummary {
    assert!(campaign.jobs >= 1, "at least one job");
    leasesim_rt::capture_panics();
    let started = Instant::now();
    let (limit, deadline) = seed_limit(campaign, started);
    let shared = Arc::new(Shared {
        campaign: campaign.clone(),
        next: AtomicU64::new(0),
        limit,
        started,
        deadline,
        summary: Mutex::new(ScenarioSummary {
            scenario: campaign.scenario.name().to_string(),
            ..ScenarioSummary::default()
        }),
        progress: progress.clone(),
        ended: (Mutex::new(0), Condvar::new()),
    });
    let mut jobs: Vec<(Arc<JobSlot>, std::thread::JoinHandle<()>)> = (0..campaign.jobs)
        .map(|_| {
            let slot = Arc::new(JobSlot {
                seed: AtomicU64::new(IDLE),
                ..JobSlot::default()
            });
            let handle = spawn_job(&shared, &slot);
            (slot, handle)
        })
        .collect();
    let mut ended_seen = 0;
    while jobs
        .iter()
        .any(|(slot, _)| !slot.ended.load(Ordering::Acquire))
    {
        tick();
        wait_for_a_job(&shared, &mut ended_seen, 100);
        for (slot, handle) in &mut jobs {
            if watch(&shared, slot, shared.elapsed_ms()) {
                // Replace the stuck job; its thread is left behind, never joined.
                *slot = Arc::new(JobSlot {
                    seed: AtomicU64::new(IDLE),
                    ..JobSlot::default()
                });
                *handle = spawn_job(&shared, slot);
            }
        }
    }
    tick();
    for (_, handle) in jobs {
        handle
            .join()
            .expect("a job thread never panics: runs catch their panics");
    }
    let wall_s = started.elapsed().as_secs_f64();
    let mut summary = std::mem::take(&mut *shared.summary.lock().expect("jobs are done"));
    summary.findings.sort();
    summary.wall_s = wall_s;
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scenario_with_no_failing_seed_bounds_its_risk_by_the_rule_of_three() {
        let mut summary = ScenarioSummary {
            seeds: 1_000,
            ..ScenarioSummary::default()
        };
        summary.expected.insert("stale-apply".into(), 900);
        // Expected violations are not failures: the bound holds for the halting checkers.
        assert_eq!(summary.residual_risk(), Some(0.003));
        summary.failures.insert("release-latest".into(), 1);
        assert_eq!(summary.residual_risk(), None, "a failing seed says more");
        assert_eq!(
            ScenarioSummary::default().residual_risk(),
            None,
            "no seed, no bound"
        );
        let three = ScenarioSummary {
            seeds: 3,
            ..ScenarioSummary::default()
        };
        assert_eq!(three.residual_risk(), None, "3/3 bounds nothing");
    }

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

    /// A one-job campaign of `steady` whose watchdog limit is `limit_ms`.
    fn watched(limit_ms: u64) -> Shared {
        let scenario = crate::catalog::builtin("steady")
            .expect("a builtin")
            .expect("it loads");
        let campaign = ScenarioCampaign {
            scenario,
            worker: "correct".into(),
            factory: None,
            strategy: Strategy::Random,
            plan: SeedPlan::Count { start: 0, count: 1 },
            shard: (1, 1),
            jobs: 1,
            seed_timeout_ms: limit_ms,
        };
        Shared {
            campaign,
            next: AtomicU64::new(0),
            limit: 1,
            started: Instant::now(),
            deadline: None,
            summary: Mutex::new(ScenarioSummary::default()),
            progress: Arc::new(Progress::default()),
            ended: (Mutex::new(0), Condvar::new()),
        }
    }

    #[test]
    fn the_watchdog_stops_a_run_whose_virtual_time_stands_not_one_whose_time_moves() {
        let shared = watched(200);
        let slot = JobSlot::default();
        slot.seed.store(7, Ordering::Relaxed);
        slot.started_ms.store(1_000, Ordering::Relaxed);
        slot.interrupt.reached(100);
        assert!(!watch(&shared, &slot, 1_000) && !slot.interrupt.is_raised());
        // Past the limit of wall time, but the run's clock moved: slow, not stuck.
        slot.interrupt.reached(200);
        assert!(!watch(&shared, &slot, 1_350));
        assert!(
            !slot.interrupt.is_raised(),
            "a run whose clock moves was stopped"
        );
        // Past the limit again with the clock standing: stuck.
        assert!(!watch(&shared, &slot, 1_600));
        assert!(
            slot.interrupt.is_raised(),
            "a run whose clock stands was left running"
        );
        // Past twice the limit without an answer: the job is given up, the seed a hang.
        assert!(
            watch(&shared, &slot, 1_800),
            "a job that ignores its interrupt is abandoned"
        );
        let summary = shared.summary.lock().unwrap();
        assert_eq!(summary.failed_seeds(), 1);
    }
}
