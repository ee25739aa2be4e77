//! The fault profile of one run: the scenario's envelope, made concrete.
//!
//! Terminology:
//! - *envelope*: what a scenario allows (probabilities, ranges, stop mode).
//! - *profile*: what this run uses. Without swarm it is the envelope itself (clock offsets and
//!   drifts drawn per replica, `anywhere` resolved to one stop mode). With swarm, every fault
//!   is switched on or off by a coin and scaled by a draw, as in swarm testing (Groce et al.)
//!   and FoundationDB's simulator: each seed explores a different corner of the envelope.
//!
//! - *worker settings*: the batch size and cap every replica's worker is built with. Without
//!   swarm they are the scenario's `[worker]` section; with swarm each run draws them too
//!   (small batches, large ones, caps that are not a multiple of the batch), and the checkers
//!   judge the run against the drawn settings.
//!
//! Profile draws come first in a run's choices, and "off" / "weakest" / "the scenario's own"
//! is always value 0, so shrinking a counterexample also switches off the faults it does not
//! need and moves the worker's settings back to the scenario's.

use std::fmt::Write as _;

use lease_worker::WorkerConfig;
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

/// Where a swarm run's worker settings came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerDraw {
    /// The scenario's own `[worker]` settings (value 0 of the draw).
    Own,
    /// A batch of 1 to 7 rows and a cap of one to six batches plus a remainder: many
    /// batches per term, and a per-term allowance too small to drain a large backlog, so
    /// the run does not require the drain.
    Small,
    /// A batch between the scenario's and twice it, and a cap at least the scenario's that is
    /// not a multiple of the batch.
    Large,
}

impl WorkerDraw {
    pub fn name(self) -> &'static str {
        match self {
            WorkerDraw::Own => "the scenario's",
            WorkerDraw::Small => "drawn: small batches",
            WorkerDraw::Large => "drawn: large batches",
        }
    }
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
    /// Probability a delete answers short while more eligible rows remain.
    pub short_delete: f64,
    pub clocks: Vec<ClockSpec>,
    pub stop: StopPlan,
    /// The configuration every replica's worker is built with in this run.
    pub worker: WorkerConfig,
    /// How a swarm run drew `worker` (`None` without swarm: the scenario's, not printed).
    pub worker_draw: Option<WorkerDraw>,
    /// The run checks that the eligible backlog drains in the liveness phase.
    pub drain: bool,
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
        let short_delete = scale(faults.short_delete.get());
        let clocks = draw_clocks(scenario, env);
        let stop = draw_stop(scenario, env);
        let (worker, worker_draw) = draw_worker(scenario, env);
        let drain = scenario.drain && worker_draw != Some(WorkerDraw::Small);
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
            short_delete,
            clocks,
            stop,
            worker,
            worker_draw,
            drain,
        };
        // invariant: a drawn profile never exceeds its envelope, and its worker settings are
        // ones the worker accepts.
        debug_assert!(profile.reject.get(OpKind::Renew) <= faults.reject.renew.get());
        debug_assert!(profile.short_delete <= faults.short_delete.get());
        assert!(profile.worker.validate().is_ok(), "{:?}", profile.worker);
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
        if self.short_delete > 0.0 {
            let p = probability_text(self.short_delete);
            lines.push(format!("short-delete: p={p}"));
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
        if let Some(draw) = self.worker_draw {
            let (batch_rows, cap_rows) = (self.worker.batch_rows, self.worker.cap_rows);
            let mut line = format!(
                "worker: batch {batch_rows} rows, cap {cap_rows} rows ({})",
                draw.name()
            );
            if cap_rows % batch_rows != 0 {
                line.push_str(", cap not a multiple of the batch");
            }
            if !self.drain {
                line.push_str("; backlog drain not required");
            }
            lines.push(line);
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

/// The worker settings of one run: the scenario's, or with swarm a drawn batch and cap (value
/// 0 of every draw keeps the scenario's). Every drawn pair is valid: `1 <= batch <= cap`.
fn draw_worker(scenario: &Scenario, env: &dyn Env) -> (WorkerConfig, Option<WorkerDraw>) {
    let own = scenario.worker.clone();
    if !scenario.swarm {
        return (own, None);
    }
    let to_u32 = |value: u64| u32::try_from(value).unwrap_or(u32::MAX);
    let (batch_rows, cap_rows, draw) = match env.pick(3) {
        0 => return (own, Some(WorkerDraw::Own)),
        1 => {
            let batch = env.range(1, 7);
            let batches = env.range(1, 6);
            let remainder = env.range(0, batch - 1);
            (batch, batch * batches + remainder, WorkerDraw::Small)
        }
        _ => {
            let own_batch = u64::from(own.batch_rows);
            let batch = env.range(own_batch, own_batch.saturating_mul(2));
            let batches = u64::from(own.cap_rows).div_ceil(batch) + env.range(0, 1);
            let remainder = env.range(1.min(batch - 1), batch - 1);
            let cap = batch.saturating_mul(batches).saturating_add(remainder);
            (batch, cap, WorkerDraw::Large)
        }
    };
    let cap_rows = to_u32(cap_rows);
    let config = WorkerConfig {
        batch_rows: to_u32(batch_rows).min(cap_rows),
        cap_rows,
        ..own
    };
    // invariant: the draw keeps every rule `WorkerConfig::validate` checks.
    debug_assert!(config.batch_rows >= 1 && config.batch_rows <= config.cap_rows);
    (config, Some(draw))
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
