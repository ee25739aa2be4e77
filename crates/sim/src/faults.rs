//! The fault profile of one run: the scenario's envelope, made concrete.
//!
//! Terminology:
//! - *envelope*: what a scenario allows (probabilities, ranges, stop mode).
//! - *profile*: what this run uses. Without swarm it is the envelope itself (clock offsets and
//!   drifts drawn per replica, `anywhere` resolved to one of its modes). With swarm, every fault
//!   is switched on or off by a coin and scaled by a draw, as in swarm testing (Groce et al.)
//!   and FoundationDB's simulator: each seed explores a different corner of the envelope.
//! - *shared faults*: the network's (latency, rejection, lost replies) and the processes'
//!   (pauses, clock skew and jumps, stops), the same for every system. The system draws its
//!   own part last ([`Setup::draw`](crate::Setup::draw)), with the same [`Scale`].
//!
//! Profile draws come first in a run's choices, and "off" / "weakest" is always value 0, so
//! shrinking a counterexample also switches off the faults it does not need.

use std::fmt::Write as _;

use leasesim_events::OpSet;

use crate::env::Env;
use crate::scenario::{MsRange, PerOp, Probability, Scenario, SignedRange, StopAt};
use crate::system::System;

/// One replica's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockSpec {
    pub offset_ms: i64,
    pub drift_ppm: i64,
}

/// A periodic fault: probability per tick, tick period.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tick {
    pub probability: f64,
    pub every_ms: MsRange,
}

/// Who is stopped in the safety phase, and when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StopPlan<Op> {
    /// Never `Anywhere`: that is resolved when the profile is drawn.
    pub at: StopAt<Op>,
    pub replicas: u16,
    pub window_ms: MsRange,
    pub delay_ms: MsRange,
}

/// The concrete faults of one run: the shared ones, and the system's drawn part.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultProfile<S: System> {
    pub latency: PerOp<MsRange>,
    pub reject: PerOp<f64>,
    pub request_lost: PerOp<f64>,
    pub reply_lost: PerOp<f64>,
    pub timeout_ms: u64,
    pub pause: Tick,
    pub pause_ms: MsRange,
    pub jump: Tick,
    pub jump_by_ms: SignedRange,
    pub clocks: Vec<ClockSpec>,
    pub stop: StopPlan<S::Op>,
    /// What the system drew for this run.
    pub system: S::Drawn,
}

/// How a fault probability of the envelope becomes the run's: as is without swarm; with swarm
/// on with probability 1/2 (value 0 = off) and then scaled by 1/4, 2/4, 3/4 or 4/4.
pub struct Scale<'a> {
    swarm: bool,
    draw: &'a dyn Fn(f64) -> f64,
}

impl Scale<'_> {
    /// The run's probability for envelope probability `p`.
    pub fn apply(&self, p: f64) -> f64 {
        if !self.swarm || p == 0.0 {
            return p;
        }
        let scaled = (self.draw)(p);
        // invariant: a drawn probability never exceeds its envelope.
        debug_assert!(scaled <= p);
        scaled
    }

    /// Is this run drawing its profile (swarm testing)?
    pub fn swarm(&self) -> bool {
        self.swarm
    }
}

/// A probability with at most four decimals and no trailing zeros (`0.075`, not
/// `0.07500000000000001`).
pub fn probability_text(p: f64) -> String {
    let text = format!("{p:.4}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A signed value in `range`, drawn through the env.
fn signed_in<S: System>(env: &dyn Env<S>, range: SignedRange) -> i64 {
    let span = range.max.abs_diff(range.min);
    range.min.saturating_add_unsigned(env.range(0, span))
}

impl<S: System> FaultProfile<S> {
    /// Draws the profile of one run from `scenario`.
    pub fn draw(scenario: &Scenario<S>, env: &dyn Env<S>) -> FaultProfile<S> {
        let draw = |p: f64| -> f64 {
            if !env.coin(0.5) {
                return 0.0;
            }
            p * (env.range(1, 4) as f64) / 4.0
        };
        let scale = Scale {
            swarm: scenario.swarm,
            draw: &draw,
        };
        let latency = match scenario.swarm {
            true => swarm_latency::<S>(&scenario.latency, env),
            false => scenario.latency.clone(),
        };
        let faults = &scenario.faults;
        let per_op = |values: &PerOp<Probability>| values.map(|p| scale.apply(p.get()));
        let reject = per_op(&faults.reject);
        let request_lost = per_op(&faults.request_lost);
        let reply_lost = per_op(&faults.reply_lost);
        let pause = Tick {
            probability: scale.apply(faults.pause.probability.get()),
            every_ms: faults.pause.every_ms,
        };
        let jump_section = &scenario.clocks.jump;
        let jump = Tick {
            probability: scale.apply(jump_section.probability.get()),
            every_ms: jump_section.every_ms,
        };
        let clocks = draw_clocks(scenario, env);
        let stop = draw_stop(scenario, env);
        let system = S::draw(scenario, env, &scale);
        let profile = FaultProfile {
            latency,
            reject,
            request_lost,
            reply_lost,
            timeout_ms: faults.timeout_ms.get(),
            pause,
            pause_ms: faults.pause.duration_ms,
            jump,
            jump_by_ms: jump_section.by_ms,
            clocks,
            stop,
            system,
        };
        // invariant: one clock per replica, and a resolved stop mode.
        assert_eq!(profile.clocks.len(), usize::from(scenario.replicas));
        debug_assert!(profile.stop.at != StopAt::Anywhere);
        profile
    }

    /// Can a call end in a timeout (a request or a reply lost on some operation)?
    pub fn timeouts(&self) -> bool {
        let on = |values: &PerOp<f64>| values.values().iter().any(|&p| p > 0.0);
        on(&self.request_lost) || on(&self.reply_lost)
    }

    /// One line per fault dimension, for trace headers. Faults that are off are omitted.
    pub fn describe(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let latency = S::Op::ALL
            .iter()
            .map(|&op| {
                let range = self.latency.get(op);
                format!("{} {}..{}ms", op.name(), range.min, range.max)
            })
            .collect::<Vec<_>>()
            .join(", ");
        lines.push(format!("latency: {latency}"));
        let tables = [
            ("reject", &self.reject),
            ("request-lost", &self.request_lost),
            ("reply-lost", &self.reply_lost),
        ];
        for (label, values) in tables {
            let on: Vec<String> = S::Op::ALL
                .iter()
                .filter(|&&op| values.get(op) > 0.0)
                .map(|&op| format!("{} {}", op.name(), probability_text(values.get(op))))
                .collect();
            if !on.is_empty() {
                lines.push(format!("{label}: {}", on.join(", ")));
            }
        }
        if self.timeouts() {
            lines.push(format!("timeout: {}ms", self.timeout_ms));
        }
        self.describe_ticks(&mut lines);
        self.describe_clocks_and_stop(&mut lines);
        lines.extend(S::describe(&self.system));
        lines
    }

    fn describe_ticks(&self, lines: &mut Vec<String>) {
        let mut push = |label: &str, tick: &Tick, extra: String| {
            if tick.probability > 0.0 {
                lines.push(tick_text(label, tick, &extra));
            }
        };
        push(
            "pause",
            &self.pause,
            format!(" for {}..{}ms", self.pause_ms.min, self.pause_ms.max),
        );
        push(
            "clock-jump",
            &self.jump,
            format!(" by {}..{}ms", self.jump_by_ms.min, self.jump_by_ms.max),
        );
    }

    fn describe_clocks_and_stop(&self, lines: &mut Vec<String>) {
        let skew: Vec<String> = self
            .clocks
            .iter()
            .enumerate()
            .filter(|(_, c)| c.offset_ms != 0 || c.drift_ppm != 0)
            .map(|(i, c)| format!("r{} {:+}ms {:+}ppm", i + 1, c.offset_ms, c.drift_ppm))
            .collect();
        if !skew.is_empty() {
            lines.push(format!("clocks: {}", skew.join(", ")));
        }
        if self.stop.at != StopAt::None {
            let stop = &self.stop;
            lines.push(format!(
                "stop: at {} for {} replica(s), window {}..{}ms, delay {}..{}ms",
                stop.at.name(),
                stop.replicas,
                stop.window_ms.min,
                stop.window_ms.max,
                stop.delay_ms.min,
                stop.delay_ms.max
            ));
        }
    }
}

/// `LABEL: p=P every A..Bms EXTRA`, a periodic fault's header line.
pub fn tick_text(label: &str, tick: &Tick, extra: &str) -> String {
    let mut line = format!(
        "{label}: p={} every {}..{}ms",
        probability_text(tick.probability),
        tick.every_ms.min,
        tick.every_ms.max
    );
    let _ = write!(line, "{extra}");
    line
}

/// Each replica's clock offset and drift (with swarm, a coin decides whether clocks are
/// skewed at all).
fn draw_clocks<S: System>(scenario: &Scenario<S>, env: &dyn Env<S>) -> Vec<ClockSpec> {
    let skewed = !scenario.swarm || env.coin(0.5);
    (0..scenario.replicas)
        .map(|_| match skewed {
            true => ClockSpec {
                offset_ms: signed_in(env, scenario.clocks.offset_ms),
                drift_ppm: signed_in(env, scenario.clocks.drift_ppm),
            },
            false => ClockSpec {
                offset_ms: 0,
                drift_ppm: 0,
            },
        })
        .collect()
}

/// With swarm, each operation's latency ceiling is drawn inside its envelope.
fn swarm_latency<S: System>(envelope: &PerOp<MsRange>, env: &dyn Env<S>) -> PerOp<MsRange> {
    envelope.map(|range| MsRange::new(range.min, env.range(range.min, range.max)))
}

/// The stop modes `anywhere` picks from: an instant, a call of each of the system's stop
/// operations in flight, or between terms.
fn stop_modes<S: System>() -> Vec<StopAt<S::Op>> {
    let mut modes = vec![StopAt::Time];
    modes.extend(S::STOP_OPS.iter().map(|&op| StopAt::During(op)));
    modes.push(StopAt::BetweenTerms);
    modes
}

fn draw_stop<S: System>(scenario: &Scenario<S>, env: &dyn Env<S>) -> StopPlan<S::Op> {
    let section = &scenario.stop;
    let mut at = section.at;
    if at == StopAt::Anywhere || (scenario.swarm && at != StopAt::None && env.coin(0.5)) {
        let modes = stop_modes::<S>();
        at = modes[env.pick(modes.len())];
    }
    let window_max = section.window_ms.max.min(scenario.duration_ms);
    let window_min = section.window_ms.min.min(window_max);
    StopPlan {
        at,
        replicas: section.replicas,
        window_ms: MsRange::new(window_min, window_max),
        delay_ms: section.delay_ms,
    }
}
