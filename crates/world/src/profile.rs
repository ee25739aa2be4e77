//! The fault profile of one run: the scenario's envelope, made concrete.
//!
//! Terminology:
//! - *envelope*: what a scenario allows (probabilities, ranges, stop mode).
//! - *profile*: what this run uses. Without swarm it is the envelope itself (clock offsets and
//!   drifts drawn per replica, `anywhere` resolved to one stop mode). With swarm, every fault
//!   is switched on or off by a coin and scaled by a draw, as in swarm testing (Groce et al.)
//!   and FoundationDB's simulator: each seed explores a different corner of the envelope.
//!
//! Profile draws come first in a run's choices, and "off" / "weakest" is always value 0, so
//! shrinking a counterexample also switches off the faults it does not need.

use std::fmt::Write as _;

use leasesim_events::OpKind;

use crate::env::Env;
use crate::scenario::{MsRange, PerOp, Scenario, SignedRange, StopAt};

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
pub struct StopPlan {
    /// Never `Anywhere`: that is resolved when the profile is drawn.
    pub at: StopAt,
    pub replicas: u16,
    pub window_ms: MsRange,
    pub delay_ms: MsRange,
}

/// The concrete faults of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultProfile {
    pub latency: PerOp<MsRange>,
    pub reject: PerOp<f64>,
    pub reply_lost: PerOp<f64>,
    pub timeout_ms: u64,
    pub revoke: Tick,
    pub pause: Tick,
    pub pause_ms: MsRange,
    pub jump: Tick,
    pub jump_by_ms: SignedRange,
    pub clocks: Vec<ClockSpec>,
    pub stop: StopPlan,
}

/// A probability with at most four decimals and no trailing zeros (`0.075`, not
/// `0.07500000000000001`).
fn probability_text(p: f64) -> String {
    let text = format!("{p:.4}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

const STOP_MODES: [StopAt; 5] = [
    StopAt::Time,
    StopAt::Acquire,
    StopAt::Delete,
    StopAt::Renew,
    StopAt::BetweenTerms,
];

/// A signed value in `range`, drawn through the env.
fn signed_in(env: &dyn Env, range: SignedRange) -> i64 {
    let span = range.max.abs_diff(range.min);
    range.min.saturating_add_unsigned(env.range(0, span))
}

impl FaultProfile {
    /// Draws the profile of one run from `scenario`.
    pub fn draw(scenario: &Scenario, env: &dyn Env) -> FaultProfile {
        let swarm = scenario.swarm;
        // With swarm: on with probability 1/2, then scaled by 1/4, 2/4, 3/4 or 4/4.
        let scale = |p: f64| -> f64 {
            if !swarm || p == 0.0 {
                return p;
            }
            if !env.coin(0.5) {
                return 0.0;
            }
            p * (env.range(1, 4) as f64) / 4.0
        };
        let per_op = |values: &PerOp<crate::scenario::Probability>| {
            let mut out = PerOp::all(0.0);
            out.acquire = scale(values.acquire.get());
            out.renew = scale(values.renew.get());
            out.release = scale(values.release.get());
            out.delete = scale(values.delete.get());
            out
        };
        let latency = if swarm {
            swarm_latency(&scenario.latency, env)
        } else {
            scenario.latency
        };
        let faults = &scenario.faults;
        let reject = per_op(&faults.reject);
        let reply_lost = per_op(&faults.reply_lost);
        let revoke = Tick {
            probability: scale(faults.revoke.probability.get()),
            every_ms: faults.revoke.every_ms,
        };
        let pause = Tick {
            probability: scale(faults.pause.probability.get()),
            every_ms: faults.pause.every_ms,
        };
        let jump_section = &scenario.clocks.jump;
        let jump = Tick {
            probability: scale(jump_section.probability.get()),
            every_ms: jump_section.every_ms,
        };
        let clocks = draw_clocks(scenario, env);
        let stop = draw_stop(scenario, env);
        let profile = FaultProfile {
            latency,
            reject,
            reply_lost,
            timeout_ms: faults.timeout_ms.get(),
            revoke,
            pause,
            pause_ms: faults.pause.duration_ms,
            jump,
            jump_by_ms: jump_section.by_ms,
            clocks,
            stop,
        };
        // invariant: a drawn profile never exceeds its envelope.
        debug_assert!(profile.reject.get(OpKind::Renew) <= faults.reject.renew.get());
        profile
    }

    /// One line per fault dimension, for trace headers. Faults that are off are omitted.
    pub fn describe(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let latency = OpKind::ALL
            .iter()
            .map(|&op| {
                let range = self.latency.get(op);
                format!("{} {}..{}ms", op.name(), range.min, range.max)
            })
            .collect::<Vec<_>>()
            .join(", ");
        lines.push(format!("latency: {latency}"));
        for (label, values) in [("reject", &self.reject), ("reply-lost", &self.reply_lost)] {
            let on: Vec<String> = OpKind::ALL
                .iter()
                .filter(|&&op| values.get(op) > 0.0)
                .map(|&op| format!("{} {}", op.name(), probability_text(values.get(op))))
                .collect();
            if !on.is_empty() {
                lines.push(format!("{label}: {}", on.join(", ")));
            }
        }
        if self.reply_lost.get(OpKind::Delete) > 0.0 || self.reply_lost.get(OpKind::Renew) > 0.0 {
            lines.push(format!("timeout: {}ms", self.timeout_ms));
        }
        self.describe_ticks(&mut lines);
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
        lines
    }

    fn describe_ticks(&self, lines: &mut Vec<String>) {
        let mut push = |label: &str, tick: &Tick, extra: String| {
            if tick.probability > 0.0 {
                let mut line = format!(
                    "{label}: p={} every {}..{}ms",
                    probability_text(tick.probability),
                    tick.every_ms.min,
                    tick.every_ms.max
                );
                let _ = write!(line, "{extra}");
                lines.push(line);
            }
        };
        push("revoke", &self.revoke, String::new());
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
}

/// Each replica's clock offset and drift (with swarm, a coin decides whether clocks are
/// skewed at all).
fn draw_clocks(scenario: &Scenario, env: &dyn Env) -> Vec<ClockSpec> {
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

fn swarm_latency(envelope: &PerOp<MsRange>, env: &dyn Env) -> PerOp<MsRange> {
    let mut out = *envelope;
    for op in OpKind::ALL {
        let range = envelope.get(op);
        let max = env.range(range.min, range.max);
        let drawn = MsRange::new(range.min, max);
        match op {
            OpKind::Acquire => out.acquire = drawn,
            OpKind::Renew => out.renew = drawn,
            OpKind::Release => out.release = drawn,
            OpKind::Delete => out.delete = drawn,
        }
    }
    out
}

fn draw_stop(scenario: &Scenario, env: &dyn Env) -> StopPlan {
    let section = &scenario.stop;
    let mut at = section.at;
    if at == StopAt::Anywhere || (scenario.swarm && at != StopAt::None && env.coin(0.5)) {
        at = STOP_MODES[env.pick(STOP_MODES.len())];
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
