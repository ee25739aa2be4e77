//! Shrinking a failing run to a small counterexample: Hypothesis-style on the choices, plus
//! simplifications of the scenario itself.
//!
//! Terminology:
//! - *choice sequence*: the values a run drew, in order. Replaying it reproduces the run;
//!   replaying an edited one runs *some* run (a missing value reads as 0, the simplest).
//! - *point*: a scenario (the original with a set of [`Overrides`]) and a choice sequence.
//! - *target*: the outcome label to keep (an invariant name, `panic`, `deadlock`,
//!   `liveness`). A point is *interesting* when its run ends with the same label.
//! - *size*: `(events until the verdict, rank, overrides, number of choices, the choices)`,
//!   compared in that order. The *rank* of a scenario is `(replicas, faults switched on,
//!   replicas stopped)`: fewer is simpler even at the same event count. A point is adopted
//!   only if it is interesting and strictly smaller, so the search terminates, and what it
//!   returns is the smallest run it met.
//! - *choice passes*: delete chunks of choices, zero chunks, then minimise single values (try
//!   0, the largest value, halve, decrement), within the best point's scenario.
//! - *scenario passes*: end the run early (shorter phases, at the instants the best run's
//!   events happened: violations at shutdown or in the liveness phase), fewer replicas, one
//!   fault switched off at a time, fewer replicas stopped, fewer rows; then drop every
//!   override that is not needed.
//! - *feed search*: a changed scenario draws differently, so the best choices may no longer
//!   fail there; a few fixed seeds are tried too, and the first interesting run is shrunk by
//!   the choice passes (a *lookahead* with a bounded budget) before it is compared with the
//!   best.
//! - *restart*: once every pass is stuck, lookaheads from the same few seeds in the best
//!   scenario, once: the choice passes move one value at a time, and some smaller
//!   counterexamples need two values to move together.
//!
//! The largest value is tried because some draws (a driver's pause between terms) yield
//! fewer events when they are larger: fewer events is what a reviewer cares about.
//! Every pass runs in a fixed order over fixed inputs, so a shrink is deterministic.

use std::rc::Rc;

use leasesim_events::OpSet;
use leasesim_invariants::InvariantName;
use leasesim_rt::{Choice, Feed};
use leasesim_sim::scenario::StopAt;
use leasesim_sim::{Scenario, System};

use crate::overrides::Overrides;
use crate::runner::{Outcome, RunReport, RunSpec, run};

/// Seeds tried in a changed scenario when the best choices do not fail there.
const FEED_SEEDS: u64 = 32;
/// A feed run may be this many times longer than the best (and at least
/// [`FEED_LIMIT_MIN_EVENTS`] long) before it is cut off.
const FEED_LIMIT_FACTOR: u64 = 4;
const FEED_LIMIT_MIN_EVENTS: u64 = 1_000;
/// Candidate runs one lookahead may spend.
const LOOKAHEAD_BUDGET: u64 = 2_000;
/// Earliest instants tried as the end of a run when shortening its phases.
const MAX_END_INSTANTS: usize = 256;

/// The result of a shrink.
#[derive(Debug)]
pub struct Shrunk<S: System> {
    /// Events of the original failing run.
    pub original_events: u64,
    /// The smallest interesting run found, with its events kept for the trace.
    pub report: RunReport<S>,
    /// Candidate runs tried.
    pub candidates: u64,
    /// What the shrink changed in the scenario (empty: nothing).
    pub overrides: Overrides,
    /// The scenario the shrunk run ran in: the original with `overrides` applied.
    pub scenario: Rc<Scenario<S>>,
}

/// Size of an interesting run (smaller is better).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Size {
    events: u64,
    rank: [u64; 3],
    overrides: usize,
    len: usize,
    values: Vec<u64>,
}

/// A scenario and the run of a choice sequence in it.
#[derive(Debug)]
struct Point<S: System> {
    overrides: Overrides,
    scenario: Rc<Scenario<S>>,
    size: Size,
    choices: Vec<Choice>,
    /// Virtual instant the run ended (at its verdict).
    end_ms: u64,
}

impl<S: System> Clone for Point<S> {
    fn clone(&self) -> Self {
        Point {
            overrides: self.overrides.clone(),
            scenario: self.scenario.clone(),
            size: self.size.clone(),
            choices: self.choices.clone(),
            end_ms: self.end_ms,
        }
    }
}

/// A fault a shrink may switch off: its scenario key, the value that switches it off, and
/// whether the scenario has it on.
struct FaultKey {
    key: String,
    off: toml::Value,
    on: bool,
}

/// Every fault of `scenario` a shrink may switch off, shared ones first, then the system's.
fn fault_keys<S: System>(scenario: &Scenario<S>) -> Vec<FaultKey> {
    let zero = || toml::Value::Integer(0);
    let mut keys = Vec::new();
    for (table, values) in [
        ("reject", &scenario.faults.reject),
        ("request_lost", &scenario.faults.request_lost),
        ("reply_lost", &scenario.faults.reply_lost),
    ] {
        for &op in S::Op::ALL {
            keys.push(FaultKey {
                key: format!("faults.{table}.{}", op.key()),
                off: zero(),
                on: values.get(op).get() > 0.0,
            });
        }
    }
    let ranges = |range: leasesim_sim::scenario::SignedRange| range.min != 0 || range.max != 0;
    let zero_range = || toml::Value::Array(vec![zero(), zero()]);
    keys.extend([
        FaultKey {
            key: "faults.pause.probability".into(),
            off: zero(),
            on: scenario.faults.pause.probability.get() > 0.0,
        },
        FaultKey {
            key: "clocks.jump.probability".into(),
            off: zero(),
            on: scenario.clocks.jump.probability.get() > 0.0,
        },
        FaultKey {
            key: "clocks.offset_ms".into(),
            off: zero_range(),
            on: ranges(scenario.clocks.offset_ms),
        },
        FaultKey {
            key: "clocks.drift_ppm".into(),
            off: zero_range(),
            on: ranges(scenario.clocks.drift_ppm),
        },
        FaultKey {
            key: "stop.at".into(),
            off: toml::Value::String("none".into()),
            on: scenario.stop.at != StopAt::None,
        },
    ]);
    keys
}

/// `(replicas, faults switched on, replicas stopped)`.
fn rank<S: System>(scenario: &Scenario<S>) -> [u64; 3] {
    let shared = fault_keys(scenario).iter().filter(|key| key.on).count();
    let faults = (shared + S::faults_on(&scenario.settings)) as u64;
    let stopped = match scenario.stop.at {
        StopAt::None => 0,
        _ => u64::from(scenario.stop.replicas),
    };
    [u64::from(scenario.replicas), faults, stopped]
}

fn count(n: u64) -> toml::Value {
    toml::Value::Integer(i64::try_from(n).unwrap_or(i64::MAX))
}

/// A system's shrink move `(key, simplest value)` as an override value.
fn move_value(text: &str) -> toml::Value {
    let table: toml::Table = format!("v = {text}")
        .parse()
        .expect("a system's shrink moves are TOML values");
    table["v"].clone()
}

struct Search<'a, S: System> {
    /// The original run's spec: its scenario is what overrides apply to.
    spec: &'a RunSpec<S>,
    target: String,
    best: Point<S>,
    candidates: u64,
    budget: u64,
}

impl<S: System> Search<'_, S> {
    fn exhausted(&self) -> bool {
        self.candidates >= self.budget
    }

    /// Is the target the system's liveness property?
    fn target_is_liveness(&self) -> bool {
        self.target == "liveness"
            || S::Invariant::from_name(&self.target).is_some_and(|i| i.is_liveness())
    }

    /// Events a fresh run (a seed, or choices in a changed scenario) may take.
    fn feed_limit(&self) -> u64 {
        self.best
            .size
            .events
            .saturating_mul(FEED_LIMIT_FACTOR)
            .max(FEED_LIMIT_MIN_EVENTS)
    }

    /// Runs `feed` in `scenario`; the point it reached when interesting and within `limit`
    /// events.
    fn probe(
        &mut self,
        overrides: &Overrides,
        scenario: &Rc<Scenario<S>>,
        feed: Feed,
        limit: u64,
    ) -> Option<Point<S>> {
        if self.exhausted() {
            return None;
        }
        self.candidates += 1;
        let spec = RunSpec {
            scenario: scenario.clone(),
            feed,
            keep_events: false,
            record_choices: true,
            event_limit: Some(limit),
            ..self.spec.clone()
        };
        let report = run(&spec);
        if report.truncated || report.outcome.label() != self.target {
            return None;
        }
        // The choices the run actually consumed (a run that fails earlier reads fewer).
        let values: Vec<u64> = report.choices.iter().map(|c| c.value).collect();
        Some(Point {
            size: Size {
                events: report.stats.events,
                rank: rank(scenario),
                overrides: overrides.iter().count(),
                len: values.len(),
                values,
            },
            overrides: overrides.clone(),
            scenario: scenario.clone(),
            choices: report.choices,
            end_ms: report.stats.end_ms,
        })
    }

    /// Adopts `point` when it is smaller than the best. Returns whether it was adopted.
    fn adopt(&mut self, point: Option<Point<S>>) -> bool {
        match point {
            Some(point) if point.size < self.best.size => {
                // invariant: the best only ever gets smaller (the guard), and every point
                // failed as the target (probe); `finish` asserts it once more at the end.
                self.best = point;
                true
            }
            _ => false,
        }
    }

    /// Runs `values` in the best point's scenario; adopts the run when smaller.
    fn try_values(&mut self, values: Vec<u64>) -> bool {
        let (overrides, scenario) = (self.best.overrides.clone(), self.best.scenario.clone());
        // A candidate longer than the best cannot win: cut it off there.
        let point = self.probe(
            &overrides,
            &scenario,
            Feed::Replay(values),
            self.best.size.events,
        );
        self.adopt(point)
    }

    fn delete_chunks(&mut self) -> bool {
        let mut improved = false;
        for chunk in [32usize, 16, 8, 4, 2, 1] {
            let mut start = self.best.size.len.saturating_sub(chunk);
            loop {
                let values = &self.best.size.values;
                if start + chunk <= values.len() {
                    let mut candidate = values[..start].to_vec();
                    candidate.extend_from_slice(&values[start + chunk..]);
                    improved |= self.try_values(candidate);
                }
                if start == 0 {
                    break;
                }
                start -= 1;
            }
        }
        improved
    }

    fn zero_chunks(&mut self) -> bool {
        let mut improved = false;
        for chunk in [16usize, 8, 4, 2] {
            let mut start = 0;
            while start + chunk <= self.best.size.len {
                let window = &self.best.size.values[start..start + chunk];
                if window.iter().any(|&v| v != 0) {
                    let mut candidate = self.best.size.values.clone();
                    candidate[start..start + chunk].fill(0);
                    improved |= self.try_values(candidate);
                }
                start += chunk;
            }
        }
        improved
    }

    fn minimise_values(&mut self) -> bool {
        let mut improved = false;
        let mut index = 0;
        while index < self.best.size.len {
            let value = self.best.size.values[index];
            let max = self.best.choices.get(index).map_or(value, |c| c.max);
            for replacement in [0, max, value / 2, value.saturating_sub(1)] {
                if replacement == value || index >= self.best.size.len {
                    continue;
                }
                if self.try_value(index, replacement) {
                    improved = true;
                    if replacement + 1 == value {
                        self.lower_further(index);
                    }
                    break;
                }
            }
            index += 1;
        }
        improved
    }

    /// Runs the best choices with `values[index]` replaced; adopts the run when smaller.
    fn try_value(&mut self, index: usize, value: u64) -> bool {
        let mut candidate = self.best.size.values.clone();
        candidate[index] = value;
        self.try_values(candidate)
    }

    /// After `values[index]` went down by one: lowers it by 2, 4, 8, ... while that works,
    /// then bisects the last step, so a value far above its smallest working one takes
    /// O(log value) runs instead of one run per unit.
    fn lower_further(&mut self, index: usize) {
        let mut step = 2;
        loop {
            let Some(&value) = self.best.size.values.get(index) else {
                return;
            };
            if value == 0 || self.exhausted() {
                return;
            }
            if !self.try_value(index, value.saturating_sub(step)) {
                break;
            }
            step = step.saturating_mul(2);
        }
        // The last step failed: bisect it, from where the last success left the value.
        let mut gap = step / 2;
        while gap > 0 && !self.exhausted() {
            let Some(&value) = self.best.size.values.get(index) else {
                return;
            };
            if gap <= value {
                self.try_value(index, value - gap);
            }
            gap /= 2;
        }
    }

    /// The choice passes, repeated until a full round finds nothing.
    fn choice_passes(&mut self) -> bool {
        let mut improved = false;
        while !self.exhausted() {
            let deleted = self.delete_chunks();
            let zeroed = self.zero_chunks();
            let lowered = self.minimise_values();
            if !(deleted || zeroed || lowered) {
                break;
            }
            improved = true;
        }
        improved
    }
}

// The scenario passes.
impl<S: System> Search<'_, S> {
    fn scenario_passes(&mut self) -> bool {
        let mut improved = self.shorten_phases();
        improved |= self.fewer_replicas();
        improved |= self.faults_off();
        improved |= self.fewer_stopped();
        improved |= self.system_moves();
        improved
    }

    /// `overrides` applied to the original scenario, or `None` when that is invalid.
    fn scenario_of(&self, overrides: &Overrides) -> Option<Rc<Scenario<S>>> {
        overrides.apply(&self.spec.scenario).ok().map(Rc::new)
    }

    /// Did the best run fail at or after the end of its safety phase (in the liveness phase
    /// or at shutdown)? Only such a failure can come sooner when the phases are shorter.
    fn fails_late(&self) -> bool {
        self.best.end_ms >= self.best.scenario.duration_ms
    }

    /// Ends the best run early: for each instant an event of it happened (earliest first),
    /// phases that end right after it, with the same choices.
    fn shorten_phases(&mut self) -> bool {
        if !self.fails_late() {
            return false;
        }
        let base = self.best.clone();
        let limit = base.size.events;
        let found = self.end_early(&base.overrides, &base.size.values, base.end_ms, limit);
        self.adopt(found)
    }

    /// The first interesting run (of at most `limit` events) among `values` in the scenario
    /// of `overrides` ended (at shutdown) right after each instant of its events before
    /// `before_ms`, earliest first.
    fn end_early(
        &mut self,
        overrides: &Overrides,
        values: &[u64],
        before_ms: u64,
        limit: u64,
    ) -> Option<Point<S>> {
        let scenario = self.scenario_of(overrides)?;
        // Only instants inside the phases: ending there shortens them, never lengthens.
        let phases_ms = scenario.duration_ms + scenario.liveness_ms;
        let instants = self.event_instants(&scenario, values, before_ms.min(phases_ms));
        for at_ms in instants {
            let mut changed = overrides.clone();
            // The safety phase (faults on) ends at the instant, or the liveness phase does
            // when the instant lies in it; the shutdown follows 1 ms later.
            let duration_ms = scenario.duration_ms.min(at_ms).max(1);
            let liveness_ms = (at_ms + 1).saturating_sub(duration_ms).max(1);
            changed.set("duration_ms", count(duration_ms));
            changed.set("liveness_ms", count(liveness_ms));
            if !self.target_is_liveness() {
                // A phase this short cannot be asked for what liveness asks (a drain...).
                for (key, value) in S::shrink_end_moves() {
                    changed.set(key, move_value(value));
                }
            }
            let Some(shorter) = self.scenario_of(&changed) else {
                continue;
            };
            if let Some(point) =
                self.probe(&changed, &shorter, Feed::Replay(values.to_vec()), limit)
            {
                return Some(point);
            }
        }
        None
    }

    /// The distinct instants (ms) at which the run of `values` in `scenario` emitted events,
    /// earliest first, before `before_ms`, at most [`MAX_END_INSTANTS`].
    fn event_instants(
        &mut self,
        scenario: &Rc<Scenario<S>>,
        values: &[u64],
        before_ms: u64,
    ) -> Vec<u64> {
        if self.exhausted() {
            return Vec::new();
        }
        self.candidates += 1;
        let spec = RunSpec {
            scenario: scenario.clone(),
            feed: Feed::Replay(values.to_vec()),
            keep_events: true,
            record_choices: false,
            event_limit: Some(self.feed_limit()),
            ..self.spec.clone()
        };
        let mut instants: Vec<u64> = run(&spec)
            .events
            .iter()
            .map(|e| e.at_ms)
            .filter(|&at| at > 0 && at < before_ms)
            .collect();
        instants.dedup();
        instants.truncate(MAX_END_INSTANTS);
        instants
    }

    fn fewer_replicas(&mut self) -> bool {
        let mut improved = false;
        for replicas in 1..self.best.scenario.replicas {
            let mut changed = self.best.overrides.clone();
            changed.set("replicas", count(u64::from(replicas)));
            let stop = &self.best.scenario.stop;
            if stop.at != StopAt::None && stop.replicas > replicas {
                changed.set("stop.replicas", count(u64::from(replicas)));
            }
            if self.explore(changed) {
                improved = true;
                break;
            }
        }
        improved
    }

    /// Fewer replicas stopped during the safety phase (the fewest first).
    fn fewer_stopped(&mut self) -> bool {
        let stop = &self.best.scenario.stop;
        if stop.at == StopAt::None {
            return false;
        }
        for stopped in 1..stop.replicas {
            let mut changed = self.best.overrides.clone();
            changed.set("stop.replicas", count(u64::from(stopped)));
            if self.explore(changed) {
                return true;
            }
        }
        false
    }

    fn faults_off(&mut self) -> bool {
        let mut improved = false;
        for key in fault_keys(&self.best.scenario) {
            if key.on {
                let mut changed = self.best.overrides.clone();
                changed.set(&key.key, key.off);
                improved |= self.explore(changed);
            }
        }
        improved
    }

    /// The system's own simplifications (its faults off, fewer rows...), one at a time,
    /// where the best scenario does not already have that value.
    fn system_moves(&mut self) -> bool {
        let mut improved = false;
        for (key, value) in S::shrink_moves() {
            let value = move_value(value);
            if self.best.overrides.get(key) == Some(&value) {
                continue;
            }
            let mut changed = self.best.overrides.clone();
            changed.set(key, value);
            let Some(scenario) = self.scenario_of(&changed) else {
                continue;
            };
            if rank(&scenario) <= rank(&self.best.scenario) && *scenario != *self.best.scenario {
                improved |= self.explore(changed);
            }
        }
        improved
    }

    /// Tries the scenario of `overrides`: finds an interesting run there (the best choices,
    /// a few seeds, or for a late failure the best choices ended early), shrinks its choices
    /// with a bounded budget, and adopts the result when it is smaller than the best.
    fn explore(&mut self, overrides: Overrides) -> bool {
        let Some(scenario) = self.scenario_of(&overrides) else {
            return false;
        };
        let Some(found) = self.feed_search(&overrides, &scenario) else {
            return false;
        };
        self.look_ahead(found)
    }

    fn feed_search(
        &mut self,
        overrides: &Overrides,
        scenario: &Rc<Scenario<S>>,
    ) -> Option<Point<S>> {
        let limit = self.feed_limit();
        let values = self.best.size.values.clone();
        let feeds =
            std::iter::once(Feed::Replay(values.clone())).chain((0..FEED_SEEDS).map(Feed::Seed));
        for feed in feeds {
            if let Some(point) = self.probe(overrides, scenario, feed, limit) {
                return Some(point);
            }
        }
        if self.fails_late() {
            return self.end_early(overrides, &values, u64::MAX, limit);
        }
        None
    }

    /// Restarts from fresh runs: the first [`FEED_SEEDS`] seeds in the best point's scenario,
    /// each shrunk by a lookahead, the smallest adopted. The choice passes only move one value
    /// at a time; a counterexample that needs two values to change together (one replica's
    /// first term ending before another's begins, and its second falling inside the other's)
    /// is out of their reach, but one of a few fresh runs often starts near it.
    fn restarts(&mut self) -> bool {
        let mut improved = false;
        let (overrides, scenario) = (self.best.overrides.clone(), self.best.scenario.clone());
        for seed in 0..FEED_SEEDS {
            let limit = self.feed_limit();
            if let Some(found) = self.probe(&overrides, &scenario, Feed::Seed(seed), limit) {
                improved |= self.look_ahead(found);
            }
        }
        improved
    }

    /// Shrinks the choices of `found` with a bounded budget; adopts the result when it is
    /// smaller than the best.
    fn look_ahead(&mut self, found: Point<S>) -> bool {
        let mut lookahead = Search {
            spec: self.spec,
            target: self.target.clone(),
            best: found,
            candidates: 0,
            budget: LOOKAHEAD_BUDGET.min(self.budget.saturating_sub(self.candidates)),
        };
        lookahead.choice_passes();
        self.candidates += lookahead.candidates;
        self.adopt(Some(lookahead.best))
    }

    /// Drops each override that the best run does not need (the original value restored).
    fn drop_overrides(&mut self) -> bool {
        let mut improved = false;
        let keys: Vec<String> = self.best.overrides.iter().map(|o| o.key.clone()).collect();
        for key in keys {
            let mut fewer = Overrides::default();
            for o in self.best.overrides.iter().filter(|o| o.key != key) {
                fewer.set(&o.key, o.value.clone());
            }
            let Some(scenario) = self.scenario_of(&fewer) else {
                continue;
            };
            let values = self.best.size.values.clone();
            let point = self.probe(
                &fewer,
                &scenario,
                Feed::Replay(values),
                self.best.size.events,
            );
            improved |= self.adopt(point);
        }
        improved
    }
}

/// Shrinks the failing run of `spec` (its feed is the original seed or choices).
/// Returns `None` when the run does not fail, or fails only because it ran out of its own
/// budget (no invariant broke, so there is nothing to keep while shrinking).
pub fn shrink<S: System>(spec: &RunSpec<S>, budget: u64) -> Option<Shrunk<S>> {
    let original = run(&RunSpec {
        keep_events: false,
        record_choices: true,
        event_limit: None,
        ..spec.clone()
    });
    if !original.failed() || matches!(original.outcome, Outcome::Budget { .. }) {
        return None;
    }
    let values: Vec<u64> = original.choices.iter().map(|c| c.value).collect();
    let mut search = Search {
        spec,
        target: original.outcome.label(),
        best: Point {
            overrides: Overrides::default(),
            scenario: spec.scenario.clone(),
            size: Size {
                events: original.stats.events,
                rank: rank(&spec.scenario),
                overrides: 0,
                len: values.len(),
                values,
            },
            choices: original.choices,
            end_ms: original.stats.end_ms,
        },
        candidates: 0,
        budget,
    };
    let mut restarted = false;
    while !search.exhausted() {
        let scenario = search.scenario_passes();
        let choices = search.choice_passes();
        let dropped = search.drop_overrides();
        if scenario || choices || dropped {
            continue;
        }
        // A fixpoint: restart once from fresh runs of the best scenario.
        if restarted || !search.restarts() {
            break;
        }
        restarted = true;
    }
    Some(finish(spec, search, original.stats.events))
}

/// Runs the best point once more, keeping its events for the trace.
fn finish<S: System>(spec: &RunSpec<S>, search: Search<'_, S>, original_events: u64) -> Shrunk<S> {
    let best = search.best;
    let report = run(&RunSpec {
        scenario: best.scenario.clone(),
        feed: Feed::Replay(best.size.values.clone()),
        keep_events: true,
        record_choices: true,
        event_limit: None,
        ..spec.clone()
    });
    // invariant: the shrunk run reproduces the target outcome, at the size the search saw.
    assert_eq!(
        report.outcome.label(),
        search.target,
        "shrunk choices must still fail the same way"
    );
    assert_eq!(
        report.stats.events, best.size.events,
        "the shrunk run is replayable"
    );
    Shrunk {
        original_events,
        report,
        candidates: search.candidates,
        overrides: best.overrides,
        scenario: best.scenario,
    }
}
