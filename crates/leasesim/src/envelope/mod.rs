//! Timing envelopes: where a worker's guarantees hold as one or two of its scenario's timing
//! settings vary.
//!
//! Terminology:
//! - *envelope*: one scenario and worker, one or two varied keys ([`Axis`]), and for each grid
//!   point the scenario with those keys written over it, run over the same seeds.
//! - *mark*: what makes a seed count against a point. [`Mark::Violations`]: the run broke an
//!   invariant (or ended in a deadlock, panic, spin, hang or liveness failure; a scenario's
//!   expected violation counts too). [`Mark::Situation`]: the run reached a "sometimes"
//!   situation (e.g. holder-lock's `overlap-after-expiry`, two jobs at once), to map where a
//!   property the invariants allow to lapse does lapse.
//! - *share*: marked seeds / seeds of a point, with its 95 % interval (Wilson's score
//!   interval); a point with no marked seed reports the rule of three, `p < 3/N`.
//! - *class*, *boundary*, *adaptive search*: see [`search`]. A point the scenario loader
//!   refuses is *refused*: no correct worker could pass those settings; no seed runs there.
//! - *runs*: seeds run over the points measured; *grid runs*: what every point of the grid
//!   that is not refused would have run.
//! - *counterexample*: a marked seed of the unsafe point nearest the boundary (an unsafe
//!   point beside a safe one, the lowest share first), shrunk when the mark is a violation.
//!
//! Same spec, same envelope: points are run as campaigns (results keyed by seed, whatever
//! `jobs` is), and the search depends only on the classes found.
//!
//! ```
//! use std::sync::Arc;
//! use leasesim::envelope::{Axis, Class, EnvelopeSpec, measure, render};
//!
//! // Where does `plain-delete` (a release by key name) delete a rival's claim, as the claim's
//! // lifetime grows past the longest job (6 s)?
//! let scenario = leasesim::catalog::resolve_one("holder-long-jobs")?;
//! let axes = vec![Axis::parse("claim.lifetime_ms=2000..8000")?];
//! // `factory: Some(FactorySource::new(..))` checks a worker of your own.
//! let spec = EnvelopeSpec { resolution: 4, seeds: 20, ..EnvelopeSpec::new(scenario, "plain-delete", axes) };
//! let envelope = measure(&spec, &Arc::new(Default::default()), &mut |_| {})?;
//! assert_eq!(envelope.map.class((0, 0)), Class::Unsafe); // 2 s
//! assert_eq!(envelope.map.class((3, 0)), Class::Safe); // 8 s
//! println!("{}", render::text(&envelope));
//! # Ok::<(), leasesim::UsageError>(())
//! ```

pub mod axis;
pub mod html;
pub mod render;
pub mod search;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use leasesim_rt::{Feed, Strategy};

use crate::error::UsageError;
use crate::fuzz::{FactorySource, Progress, ScenarioCampaign, SeedPlan, run_campaign};
use crate::overrides::Overrides;
use crate::systems::{AnyRunner, AnyScenario, AnySystem, ShrunkRun};
pub use axis::{Axis, AxisValues, Shape};
pub use search::{Class, ClassMap, Index, Search};

/// What makes a seed count against a point (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mark {
    Violations,
    /// A situation's name and its index in the system's situation list.
    Situation(&'static str, usize),
}

/// What to measure.
#[derive(Clone, Debug)]
pub struct EnvelopeSpec {
    pub scenario: Arc<dyn AnyScenario>,
    pub worker: String,
    /// Builds a custom worker; `None` builds the builtin worker named `worker`.
    pub factory: Option<FactorySource>,
    pub strategy: Strategy,
    /// One or two.
    pub axes: Vec<Axis>,
    /// Values per axis (at least 2).
    pub resolution: usize,
    pub start_seed: u64,
    pub seeds: u64,
    pub jobs: usize,
    pub mark: Mark,
    pub search: Search,
    pub seed_timeout_ms: u64,
}

/// Seeds of one point that showed one outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tally {
    pub seeds: u64,
    pub first_seed: u64,
}

/// What a measured point's seeds showed.
#[derive(Clone, Debug, PartialEq)]
pub struct PointRuns {
    pub seeds: u64,
    /// Seeds marked (see [`Mark`]).
    pub marked: u64,
    /// The first marked seed, when the campaign tells it (violations; a situation's seed is
    /// found when a counterexample is asked for).
    pub first_marked: Option<u64>,
    /// Seeds per outcome label (an invariant's name, `deadlock`, `hang`, ...), sorted by name.
    pub by_outcome: BTreeMap<String, Tally>,
    /// Situations reached: seeds per situation index.
    pub situations: Vec<u64>,
}

impl PointRuns {
    pub fn share(&self) -> f64 {
        self.marked as f64 / self.seeds.max(1) as f64
    }

    /// The 95 % interval of the share (see [`interval`]).
    pub fn interval(&self) -> (f64, f64) {
        interval(self.marked, self.seeds)
    }

    /// The outcome most seeds showed (the first by name on a tie).
    pub fn main_outcome(&self) -> Option<&str> {
        let most = self.by_outcome.values().map(|t| t.seeds).max()?;
        self.by_outcome
            .iter()
            .find(|(_, t)| t.seeds == most)
            .map(|(name, _)| name.as_str())
    }
}

/// A measured point.
#[derive(Clone, Debug, PartialEq)]
pub enum PointResult {
    /// The loader refuses the point's settings: the key it blames and why.
    Refused {
        key: String,
        why: String,
    },
    Ran(PointRuns),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub index: Index,
    pub result: PointResult,
}

/// A measured envelope.
#[derive(Debug)]
pub struct Envelope {
    pub system: &'static str,
    pub scenario: String,
    pub worker: String,
    pub strategy: Strategy,
    pub start_seed: u64,
    pub seeds: u64,
    pub mark: Mark,
    pub search: Search,
    pub axes: Vec<AxisValues>,
    /// Measured points, in index order (`y`, then `x`).
    pub points: Vec<Point>,
    pub map: ClassMap,
    pub runs: u64,
    pub grid_runs: u64,
    /// Stopped by an interrupt: points not measured are inferred from fewer points.
    pub interrupted: bool,
}

/// The 95 % interval of a share of `k` in `n`: Wilson's score interval, except that with no
/// marked seed the upper end is the rule of three's `3 / n` (capped at 1), the bound a campaign
/// reports.
pub fn interval(k: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    if k == 0 {
        return (0.0, (3.0 / n as f64).min(1.0));
    }
    let (k, n, z) = (k as f64, n as f64, 1.959_964);
    let p = k / n;
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z / (1.0 + z * z / n) * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    // At k = n the upper end is 1 exactly (computed, it can fall short by a rounding).
    let hi = if k == n {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    let lo = (centre - half).max(0.0);
    // invariant: the interval holds the observed share.
    debug_assert!(lo <= p + 1e-12 && p <= hi + 1e-12);
    (lo, hi)
}

impl Mark {
    /// The mark of the "sometimes" situation called `name` of `system`; `None` when the system
    /// has no such situation.
    pub fn situation(system: &dyn AnySystem, name: &str) -> Option<Mark> {
        let situations = system.situations();
        let index = situations.iter().position(|(n, _)| *n == name)?;
        Some(Mark::Situation(situations[index].0, index))
    }
}

impl EnvelopeSpec {
    /// An envelope of `worker` (a builtin worker's name) on `scenario` over `axes`, with the
    /// command's defaults: 10 values per axis, 200 seeds from seed 0, random scheduling, every
    /// core, violations marked, the adaptive search, a 60 s limit per stuck seed.
    pub fn new(scenario: Arc<dyn AnyScenario>, worker: &str, axes: Vec<Axis>) -> EnvelopeSpec {
        EnvelopeSpec {
            scenario,
            worker: worker.to_string(),
            factory: None,
            strategy: Strategy::Random,
            axes,
            resolution: 10,
            start_seed: 0,
            seeds: 200,
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            mark: Mark::Violations,
            search: Search::Adaptive,
            seed_timeout_ms: crate::fuzz::DEFAULT_SEED_TIMEOUT_MS,
        }
    }

    /// The axes with their values and shapes, checked against the scenario file.
    fn axis_values(&self) -> Result<Vec<AxisValues>, UsageError> {
        let bad = |why: &str| UsageError::BadValue {
            flag: "--vary",
            given: self
                .axes
                .iter()
                .map(|a| a.key.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            why: why.to_string(),
        };
        if self.axes.is_empty() || self.axes.len() > 2 {
            return Err(bad("an envelope varies one key or two"));
        }
        if self.axes.len() == 2 && base_key(&self.axes[0].key) == base_key(&self.axes[1].key) {
            return Err(bad(
                "the two keys write the same scenario key (a range's two ends are one key: vary \
                 one end, or the whole range)",
            ));
        }
        let document: toml::Table = self
            .scenario
            .text()
            .parse()
            .expect("a loaded scenario's text is TOML");
        let mut found = Vec::new();
        for axis in &self.axes {
            let (shape, whole) = axis::shape_in(&document, axis)?;
            let shape = match shape {
                Some(shape) => shape,
                None => self.probe_shape(axis, whole)?,
            };
            found.push(AxisValues::new(axis, self.resolution, whole, shape)?);
        }
        Ok(found)
    }

    /// The shape of a key the scenario file does not hold: a number unless the loader says the
    /// key is a range.
    fn probe_shape(&self, axis: &Axis, whole: bool) -> Result<Shape, UsageError> {
        let probe = AxisValues {
            key: axis.key.clone(),
            values: vec![axis.lo],
            whole,
            shape: Shape::Number,
        };
        let mut overrides = Overrides::default();
        let (key, value) = probe.written(0);
        overrides.set(&key, value);
        match self.scenario.with_overrides(&overrides) {
            Err((_, why)) if why.contains("expected a range") => Ok(Shape::Range),
            _ => Ok(Shape::Number),
        }
    }
}

fn base_key(key: &str) -> &str {
    key.strip_suffix(".min")
        .or_else(|| key.strip_suffix(".max"))
        .unwrap_or(key)
}

/// A loader error that says the key or its value's type is wrong (a mistake in `--vary`), not
/// that the settings are ones no correct worker could pass.
fn is_mistake(why: &str) -> bool {
    // `unknown field`, `unknown key`, `unknown operation`, ...: the loader's words for a key
    // its system does not have.
    why.contains("unknown ") || why.contains("invalid type")
}

/// The overrides that make the point at `index`.
pub fn point_overrides(axes: &[AxisValues], (x, y): Index) -> Overrides {
    let mut overrides = Overrides::default();
    for (axis, i) in axes.iter().zip([x, y]) {
        let (key, value) = axis.written(i);
        overrides.set(&key, value);
    }
    overrides
}

/// Live counters for a progress display.
#[derive(Clone, Copy, Debug, Default)]
pub struct EnvelopeProgress {
    pub points: usize,
    pub runs: u64,
}

/// One point's campaign.
fn run_point(
    spec: &EnvelopeSpec,
    scenario: Arc<dyn AnyScenario>,
    progress: &Arc<Progress>,
    tick: &mut dyn FnMut(),
) -> PointRuns {
    let campaign = ScenarioCampaign {
        scenario,
        worker: spec.worker.clone(),
        factory: spec.factory.clone(),
        strategy: spec.strategy,
        plan: SeedPlan::Count {
            start: spec.start_seed,
            count: spec.seeds,
        },
        shard: (1, 1),
        jobs: spec.jobs,
        seed_timeout_ms: spec.seed_timeout_ms,
    };
    let summary = run_campaign(&campaign, progress, tick);
    let mut by_outcome: BTreeMap<String, Tally> = BTreeMap::new();
    let mut marked_seeds = std::collections::BTreeSet::new();
    for finding in &summary.findings {
        marked_seeds.insert(finding.seed);
        let tally = by_outcome.entry(finding.label.clone()).or_insert(Tally {
            seeds: 0,
            first_seed: finding.seed,
        });
        tally.seeds += 1;
    }
    let situations = (0..spec.scenario.system().situations().len())
        .map(|i| summary.coverage.count_at(i))
        .collect();
    let (marked, first_marked) = match spec.mark {
        Mark::Violations => (marked_seeds.len() as u64, marked_seeds.first().copied()),
        Mark::Situation(_, index) => (summary.coverage.count_at(index), None),
    };
    // invariant: no more seeds are marked than ran.
    assert!(
        marked <= summary.seeds,
        "{marked} marked of {} seeds",
        summary.seeds
    );
    PointRuns {
        seeds: summary.seeds,
        marked,
        first_marked,
        by_outcome,
        situations,
    }
}

/// A point's scenario, or its refusal.
type PointScenario = Result<Arc<dyn AnyScenario>, PointResult>;

/// Every point's scenario, or why the loader refuses it (row-major); an error is a mistake in
/// an axis. Refusals cost no run, so every point is checked before the search.
fn scenarios_of(
    spec: &EnvelopeSpec,
    axes: &[AxisValues],
    (width, height): (usize, usize),
) -> Result<Vec<PointScenario>, UsageError> {
    let mut found = Vec::with_capacity(width * height);
    for y in 0..height {
        for x in 0..width {
            found.push(
                match spec.scenario.with_overrides(&point_overrides(axes, (x, y))) {
                    Err((key, why)) if is_mistake(&why) => {
                        return Err(UsageError::BadValue {
                            flag: "--vary",
                            given: key,
                            why,
                        });
                    }
                    Err((key, why)) => Err(PointResult::Refused { key, why }),
                    Ok(scenario) => Ok(scenario),
                },
            );
        }
    }
    // A map of refusals only says nothing: most often the range lies past a rule, or the key
    // is not what was meant.
    if let Some(Err(PointResult::Refused { key, why })) = found.first()
        && found.iter().all(Result::is_err)
    {
        return Err(UsageError::BadValue {
            flag: "--vary",
            given: key.clone(),
            why: format!("the scenario loader refuses every point of the grid: {why}"),
        });
    }
    Ok(found)
}

/// Runs one point's seeds.
fn runs_at(
    spec: &EnvelopeSpec,
    scenario: Arc<dyn AnyScenario>,
    progress: &Arc<Progress>,
    (tick, counts): (&mut dyn FnMut(EnvelopeProgress), &mut EnvelopeProgress),
) -> PointRuns {
    let before = *counts;
    let runs = run_point(spec, scenario, progress, &mut || {
        let done = progress.done.load(Ordering::Relaxed);
        tick(EnvelopeProgress {
            points: before.points,
            runs: before.runs + done,
        });
    });
    progress.done.store(0, Ordering::Relaxed);
    counts.runs += runs.seeds;
    counts.points += 1;
    tick(*counts);
    runs
}

/// Measures an envelope. `tick` is called about ten times a second with the counts so far;
/// `progress.stop` ends it early (the envelope says it was interrupted). Errors are bad input:
/// an axis that is not a scenario key, a value of the wrong type, a resolution too fine for a
/// whole-number key.
pub fn measure(
    spec: &EnvelopeSpec,
    progress: &Arc<Progress>,
    tick: &mut dyn FnMut(EnvelopeProgress),
) -> Result<Envelope, UsageError> {
    assert!(
        spec.resolution >= 2 && spec.seeds >= 1 && spec.jobs >= 1,
        "checked with the flags"
    );
    let axes = spec.axis_values()?;
    let (width, height) = (
        axes[0].values.len(),
        axes.get(1).map_or(1, |a| a.values.len()),
    );
    let mut scenarios = scenarios_of(spec, &axes, (width, height))?;
    let refused: Vec<bool> = scenarios.iter().map(Result::is_err).collect();
    let mut points: BTreeMap<(usize, usize), PointResult> = BTreeMap::new();
    for (slot, found) in scenarios.iter_mut().enumerate() {
        if let Err(result) = found {
            points.insert((slot / width, slot % width), result.clone());
        }
    }
    let mut counts = EnvelopeProgress::default();
    let mut measure_point = |(x, y): Index| -> Option<Class> {
        if progress.stop.load(Ordering::Relaxed) {
            return None;
        }
        let scenario = scenarios[y * width + x]
            .as_ref()
            .expect("the search measures no refused point")
            .clone();
        let runs = runs_at(spec, scenario, progress, (&mut *tick, &mut counts));
        let class = if runs.marked > 0 {
            Class::Unsafe
        } else {
            Class::Safe
        };
        points.insert((y, x), PointResult::Ran(runs));
        Some(class)
    };
    let map = search::search(width, height, spec.search, &refused, &mut measure_point);
    let points: Vec<Point> = points
        .into_iter()
        .map(|((y, x), result)| Point {
            index: (x, y),
            result,
        })
        .collect();
    let runs = counts.runs;
    let grid_runs = map
        .cells
        .iter()
        .filter(|(c, _)| *c != Class::Refused)
        .count() as u64
        * spec.seeds;
    Ok(Envelope {
        system: spec.scenario.system().name(),
        scenario: crate::catalog::scenario_ref(spec.scenario.as_ref()),
        worker: spec.worker.clone(),
        strategy: spec.strategy,
        start_seed: spec.start_seed,
        seeds: spec.seeds,
        mark: spec.mark.clone(),
        search: spec.search,
        interrupted: progress.stop.load(Ordering::Relaxed),
        axes,
        points,
        map,
        runs,
        grid_runs,
    })
}

impl Envelope {
    /// Whether the map knows a point's class: measured (or refused), or inferred from a search
    /// that ran to its end. An interrupted envelope infers nothing.
    pub fn known(&self, index: Index) -> bool {
        !self.interrupted || self.map.was_measured(index)
    }

    /// The points that ran seeds (not refused).
    pub fn points_run(&self) -> usize {
        self.points
            .iter()
            .filter(|p| matches!(p.result, PointResult::Ran(_)))
            .count()
    }

    pub fn point(&self, index: Index) -> Option<&Point> {
        self.points.iter().find(|p| p.index == index)
    }

    /// The values of a point, one per axis.
    pub fn values(&self, (x, y): Index) -> Vec<f64> {
        self.axes
            .iter()
            .zip([x, y])
            .map(|(a, i)| a.values[i])
            .collect()
    }

    /// `key = value` of each axis at a point.
    pub fn values_text(&self, (x, y): Index) -> String {
        let parts: Vec<String> = self
            .axes
            .iter()
            .zip([x, y])
            .map(|(a, i)| format!("{} = {}", a.key, a.text(i)))
            .collect();
        parts.join(", ")
    }

    /// The unsafe point nearest the boundary (see the module docs), if any point is unsafe.
    pub fn nearest_unsafe(&self) -> Option<&Point> {
        let unsafe_points = self.points.iter().filter_map(|p| match &p.result {
            PointResult::Ran(runs) if runs.marked > 0 => Some((p, runs)),
            _ => None,
        });
        let beside_safe = |p: &Point| {
            self.map
                .neighbours(p.index)
                .into_iter()
                .any(|n| self.map.was_measured(n) && self.map.class(n) == Class::Safe)
        };
        // Beside a safe point first, then the lowest share, then index order.
        unsafe_points
            .min_by(|(a, ra), (b, rb)| {
                (!beside_safe(a), ra.marked * rb.seeds)
                    .cmp(&(!beside_safe(b), rb.marked * ra.seeds))
                    .then((a.index.1, a.index.0).cmp(&(b.index.1, b.index.0)))
            })
            .map(|(p, _)| p)
    }

    /// For each pair of neighbouring points of different classes, the two (the boundary), in
    /// index order.
    pub fn boundary(&self) -> Vec<(Index, Index)> {
        let (w, h) = (self.map.width, self.map.height);
        let mut pairs = Vec::new();
        for y in 0..h {
            for x in 0..w {
                for n in [(x + 1, y), (x, y + 1)] {
                    let known = n.0 < w && n.1 < h && self.known((x, y)) && self.known(n);
                    if known && self.map.class((x, y)) != self.map.class(n) {
                        pairs.push(((x, y), n));
                    }
                }
            }
        }
        pairs
    }
}

/// A counterexample (see the module docs).
pub struct Counterexample {
    pub index: Index,
    /// The point's overrides of the scenario.
    pub overrides: Overrides,
    pub seed: u64,
    /// The invariant (or outcome) it broke, or the situation it reached.
    pub label: String,
    /// The shrunk run (violations only; `None` when the shrink found nothing to keep).
    pub shrunk: Option<ShrunkRun>,
    pub pct_steps: Option<u64>,
}

/// The counterexample of a measured envelope, shrunk within `budget` candidate runs (0: not
/// shrunk).
pub fn counterexample(
    spec: &EnvelopeSpec,
    envelope: &Envelope,
    budget: u64,
) -> Option<Counterexample> {
    let point = envelope.nearest_unsafe()?;
    let PointResult::Ran(runs) = &point.result else {
        unreachable!("the nearest unsafe point ran");
    };
    let overrides = point_overrides(&envelope.axes, point.index);
    let scenario = spec
        .scenario
        .with_overrides(&overrides)
        .expect("a point that ran was accepted by the loader");
    let mut runner = runner_of(spec, scenario.as_ref());
    runner.calibrate();
    let (seed, label) = match spec.mark {
        Mark::Violations => {
            let seed = runs.first_marked?;
            let report = runner.run(Feed::Seed(seed), false, false);
            // A seed marked in the campaign is marked again (a hang the watchdog stopped may
            // not be: then there is no counterexample to give).
            if !report.failed() && report.expected().is_empty() {
                return None;
            }
            let label = report
                .invariant()
                .map_or_else(|| report.label(), str::to_string);
            (seed, label)
        }
        Mark::Situation(name, index) => {
            let seeds = spec.start_seed..spec.start_seed.saturating_add(runs.seeds);
            let reached =
                |s: &u64| runner.run(Feed::Seed(*s), false, false).coverage() >> index & 1 == 1;
            (seeds.into_iter().find(reached)?, name.to_string())
        }
    };
    let shrunk = match spec.mark {
        Mark::Violations if budget > 0 => runner.shrink(Feed::Seed(seed), budget),
        _ => None,
    };
    Some(Counterexample {
        index: point.index,
        overrides,
        seed,
        label,
        shrunk,
        pct_steps: runner.pct_steps(),
    })
}

fn runner_of(spec: &EnvelopeSpec, scenario: &dyn AnyScenario) -> Box<dyn AnyRunner> {
    let runner = match &spec.factory {
        Some(source) => scenario.custom_runner(&spec.worker, source.build(), spec.strategy),
        None => scenario.runner(&spec.worker, spec.strategy),
    };
    runner.expect("the worker was checked against the scenario's system")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_holds_the_share_and_narrows_with_more_seeds() {
        assert_eq!(interval(0, 200), (0.0, 0.015));
        let (lo, hi) = interval(10, 200);
        assert!(
            (0.027..0.028).contains(&lo) && (0.089..0.091).contains(&hi),
            "{lo} {hi}"
        );
        let (lo2, hi2) = interval(100, 2000);
        assert!(lo2 > lo && hi2 < hi);
        assert_eq!(interval(200, 200).1, 1.0);
    }
}
