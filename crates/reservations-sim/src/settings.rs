//! The reservation system's part of a scenario file, and what one run draws from it.
//!
//! Terminology:
//! - *settings*: `[worker]` (every replica's worker configuration), `[agents]` (how support
//!   agents place and consume holds), `due_bound_ms` (the liveness bound), and this system's
//!   faults: `[faults] store_timeout` (the store times a statement out without applying it),
//!   `[faults] malformed` (a placed hold's record is malformed: every transition of it fails
//!   for good) and `[faults.kill]` (a replica's process dies right after a transition answered
//!   expired, before its release; a supervisor restarts it later).
//! - *worker settings*: with swarm each run also draws the batch size and the claim duration
//!   (value 0 keeps the scenario's); the checkers judge the run against what it drew.
//!
//! Value 0 of every draw is "off" or "the scenario's own", so shrinking moves toward them.

use std::ops::Range;

use leasesim_invariants::{SettingsRule, SettingsRules};
use leasesim_sim::scenario::{MAX_SPAN_MS, MsRange, Positive, Probability, period_ms, whole_field};
use leasesim_sim::{Env, Scale, ScenarioError, Setup, SystemPart};
use reservations_worker::{RetryPolicy, WorkerConfig};
use serde::Deserialize;
use toml::Spanned;

use crate::events::{MAX_BATCH, Reservations};

/// The most holds placed at the start: a backlog is placed in one instant, and past this a
/// typo (an extra zero) is likelier than a plan.
pub const MAX_BACKLOG: i64 = 100_000;

/// The most attempts per reservation and claim: past this a typo is likelier than a plan (each
/// attempt of a chain may wait up to `max_backoff_ms`).
pub const MAX_ATTEMPTS: i64 = 1_000;

/// `batch_size`: 1 to [`MAX_BATCH`], the most one claim answer carries in the simulation.
fn batch_field<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    whole_field(d, 1, MAX_BATCH as i64)
}

/// `max_attempts`: 1 to [`MAX_ATTEMPTS`].
fn attempts_field<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    whole_field(d, 1, MAX_ATTEMPTS)
}

/// A span of `[worker]` that may be 0 (the idle pause and its jitter: their sum is checked at
/// `[worker]`), up to the longest span a scenario takes.
fn span_field<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    whole_field(d, 0, MAX_SPAN_MS as i64)
}

/// A span of `[worker]` the worker needs above 0 (the claim duration, the backoffs).
fn positive_span_field<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    whole_field(d, 1, MAX_SPAN_MS as i64)
}

fn backlog_field<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    whole_field(d, 0, MAX_BACKLOG)
}

/// `[worker]`: the configuration every replica's worker is built with. Each value is refused
/// at its place when it is not a whole number in range; combinations the worker itself would
/// refuse are refused at `[worker]`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkerSection {
    #[serde(deserialize_with = "batch_field")]
    pub batch_size: u32,
    #[serde(deserialize_with = "positive_span_field")]
    pub claim_for_ms: u64,
    #[serde(deserialize_with = "span_field")]
    pub idle_ms: u64,
    #[serde(deserialize_with = "span_field")]
    pub idle_jitter_ms: u64,
    #[serde(deserialize_with = "attempts_field")]
    pub max_attempts: u32,
    #[serde(deserialize_with = "positive_span_field")]
    pub initial_backoff_ms: u64,
    #[serde(deserialize_with = "positive_span_field")]
    pub max_backoff_ms: u64,
}

impl Default for WorkerSection {
    fn default() -> Self {
        let retry = RetryPolicy::default();
        WorkerSection {
            batch_size: 8,
            claim_for_ms: 10_000,
            idle_ms: 1_000,
            idle_jitter_ms: 2_000,
            max_attempts: retry.max_attempts,
            initial_backoff_ms: retry.initial_backoff_ms,
            max_backoff_ms: retry.max_backoff_ms,
        }
    }
}

impl WorkerSection {
    fn config(&self) -> WorkerConfig {
        WorkerConfig {
            batch_size: self.batch_size,
            claim_for_ms: self.claim_for_ms,
            idle_ms: self.idle_ms,
            idle_jitter_ms: self.idle_jitter_ms,
            retry: RetryPolicy {
                initial_backoff_ms: self.initial_backoff_ms,
                max_backoff_ms: self.max_backoff_ms,
                max_attempts: self.max_attempts,
            },
        }
    }
}

/// `[agents]`: support agents placing and consuming holds (a world task).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentsSection {
    /// The pause between two placements: a period, at least 1 ms (agents placing at one
    /// virtual instant forever would never let the world's clock move).
    #[serde(deserialize_with = "period_ms")]
    pub place_every_ms: MsRange,
    /// How long a placed hold lasts before it is due.
    pub hold_ms: MsRange,
    /// Holds placed at the start whose deadlines have already passed (a backlog).
    #[serde(deserialize_with = "backlog_field")]
    pub backlog: u32,
    /// The probability a placed hold gets consumed by an agent.
    pub consume: Probability,
    /// Of the consumed holds, the share whose consume is aimed at the deadline.
    pub at_deadline: Probability,
    /// A consume aimed at the deadline lands this long after it.
    pub race_ms: MsRange,
}

impl Default for AgentsSection {
    fn default() -> Self {
        AgentsSection {
            place_every_ms: MsRange::new(300, 900),
            hold_ms: MsRange::new(2_000, 8_000),
            backlog: 10,
            consume: Probability::new(0.3).expect("a probability"),
            at_deadline: Probability::new(0.5).expect("a probability"),
            race_ms: MsRange::new(0, 300),
        }
    }
}

/// `[faults.kill]`: a process dies after a transition answered expired, before its release.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KillSection {
    /// Per transition answered expired (safety phase only).
    pub probability: Probability,
    /// How long the process stays dead before its supervisor starts `run()` again.
    pub restart_ms: MsRange,
}

impl Default for KillSection {
    fn default() -> Self {
        KillSection {
            probability: Probability::OFF,
            restart_ms: MsRange::new(1_000, 4_000),
        }
    }
}

/// The system's keys inside `[faults]`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct FaultsFile {
    store_timeout: Probability,
    malformed: Probability,
    kill: KillSection,
    second_run: Probability,
}

/// The system's keys as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SettingsFile {
    #[serde(default)]
    worker: Option<Spanned<WorkerSection>>,
    #[serde(default)]
    agents: AgentsSection,
    #[serde(default = "due_bound_ms")]
    due_bound_ms: Positive,
    #[serde(default)]
    faults: FaultsFile,
}

fn due_bound_ms() -> Positive {
    Positive::new(45_000)
}

/// The reservation system's checked settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// Every replica's worker configuration.
    pub worker: WorkerConfig,
    pub agents: AgentsSection,
    /// Once faults heal, a due held reservation must be expired (or parked by a dead letter)
    /// within this long of its deadline or of the healing, whichever is later.
    pub due_bound_ms: u64,
    pub store_timeout: Probability,
    pub malformed: Probability,
    pub kill: KillSection,
    /// Per run the driver starts, the chance a supervisor calls `run()` again while it is
    /// active.
    pub second_run: Probability,
}

fn split<T: Default>(section: Option<Spanned<T>>) -> (T, Range<usize>) {
    match section {
        Some(spanned) => {
            let span = spanned.span();
            (spanned.into_inner(), span)
        }
        None => (T::default(), 0..0),
    }
}

/// A rule that a setting, written as its path in [`WorkerConfig`], is at least 1: the edge
/// sets it to 1, the past to 0.
macro_rules! positive {
    ($name:literal, $setting:literal, $($field:ident).+) => {
        SettingsRule {
            name: $name,
            setting: $setting,
            holds: |config| config.$($field).+ >= 1,
            edge: |config| {
                let mut edge = config.clone();
                edge.$($field).+ = 1;
                edge
            },
            past: |config| {
                let mut past = config.clone();
                past.$($field).+ = 0;
                past
            },
        }
    };
}

/// What the harness states about the core's settings: the rules below and the documented
/// defaults. The production factory's construction probe checks the core against them
/// (`leasesim_invariants::probe`).
pub const WORKER_SETTINGS: SettingsRules<WorkerConfig> = SettingsRules {
    rules: WORKER_RULES,
    documented_default,
};

/// The defaults `WorkerConfig`'s documentation states, after design 002: "batches of 50, 60 s
/// claims, an idle pause of 1 s plus up to 2 s, and the default `RetryPolicy` (500 ms
/// doubling, capped at 30 s, 5 attempts)".
fn documented_default() -> WorkerConfig {
    WorkerConfig {
        batch_size: 50,
        claim_for_ms: 60_000,
        idle_ms: 1_000,
        idle_jitter_ms: 2_000,
        retry: RetryPolicy {
            initial_backoff_ms: 500,
            max_backoff_ms: 30_000,
            max_attempts: 5,
        },
    }
}

/// The rules a configuration keeps, with edges and pasts derived from the run's configuration.
const WORKER_RULES: &[SettingsRule<WorkerConfig>] = &[
    positive!("batch-positive", "batch_size", batch_size),
    positive!("claim-positive", "claim_for_ms", claim_for_ms),
    SettingsRule {
        name: "idle-pause-positive",
        setting: "idle_ms",
        holds: |config| config.idle_ms.saturating_add(config.idle_jitter_ms) >= 1,
        edge: |config| WorkerConfig {
            idle_ms: 1,
            idle_jitter_ms: 0,
            ..config.clone()
        },
        past: |config| WorkerConfig {
            idle_ms: 0,
            idle_jitter_ms: 0,
            ..config.clone()
        },
    },
    positive!("attempts-positive", "max_attempts", retry.max_attempts),
    positive!(
        "backoff-positive",
        "initial_backoff_ms",
        retry.initial_backoff_ms
    ),
    SettingsRule {
        name: "backoff-within-cap",
        setting: "max_backoff_ms",
        holds: |config| config.retry.initial_backoff_ms <= config.retry.max_backoff_ms,
        edge: |config| {
            let mut edge = config.clone();
            edge.retry.max_backoff_ms = edge.retry.initial_backoff_ms;
            edge
        },
        past: |config| {
            let mut past = config.clone();
            past.retry.max_backoff_ms = past.retry.initial_backoff_ms - 1;
            past
        },
    },
];

/// The reservation part of a scenario, and what a run draws from it.
impl Setup for Reservations {
    const KEYS: &'static [&'static str] = &["worker", "agents", "due_bound_ms"];
    const FAULT_KEYS: &'static [&'static str] =
        &["store_timeout", "malformed", "kill", "second_run"];
    type Settings = Settings;
    type Drawn = Drawn;

    /// Checks the reservation part of a scenario file.
    fn settings(part: SystemPart<'_>) -> Result<Settings, ScenarioError> {
        let file: SettingsFile = part.deserialize()?;
        let (worker, worker_span) = split(file.worker);
        let config = worker.config();
        config
            .validate()
            .map_err(|err| part.error_at(worker_span.clone(), &format!("[worker]: {err}")))?;
        // invariant: `batch_size` was read within 1..=MAX_BATCH, the most a claim answer carries.
        assert!((1..=MAX_BATCH).contains(&(config.batch_size as usize)));
        Ok(Settings {
            worker: config,
            agents: file.agents,
            due_bound_ms: file.due_bound_ms.get(),
            store_timeout: file.faults.store_timeout,
            malformed: file.faults.malformed,
            kill: file.faults.kill,
            second_run: file.faults.second_run,
        })
    }

    fn check_scenario(
        scenario: &leasesim_sim::Scenario<Reservations>,
    ) -> Result<(), (&'static str, String)> {
        crate::bounds::check(scenario)
    }

    /// Draws the reservation part of one run's profile.
    fn draw(
        scenario: &leasesim_sim::Scenario<Reservations>,
        env: &dyn Env<Reservations>,
        scale: &Scale<'_>,
    ) -> Drawn {
        let settings = &scenario.settings;
        let (worker, worker_draw) = draw_worker(settings, scale.swarm(), env);
        let drawn = Drawn {
            store_timeout: scale.apply(settings.store_timeout.get()),
            malformed: scale.apply(settings.malformed.get()),
            kill: scale.apply(settings.kill.probability.get()),
            restart_ms: settings.kill.restart_ms,
            second_run: scale.apply(settings.second_run.get()),
            worker,
            worker_draw,
        };
        // invariant: the drawn worker settings are ones the worker accepts, within the event
        // limit, and faults stay within their envelope.
        assert!(drawn.worker.validate().is_ok(), "{:?}", drawn.worker);
        assert!(drawn.worker.batch_size as usize <= MAX_BATCH);
        debug_assert!(drawn.kill <= settings.kill.probability.get());
        drawn
    }

    /// Header lines for the reservation part of a profile (faults that are off are left out).
    fn describe(drawn: &Drawn) -> Vec<String> {
        let p = leasesim_sim::faults::probability_text;
        let mut lines = Vec::new();
        if drawn.store_timeout > 0.0 {
            lines.push(format!("store-timeout: p={}", p(drawn.store_timeout)));
        }
        if drawn.malformed > 0.0 {
            lines.push(format!("malformed: p={} per hold", p(drawn.malformed)));
        }
        if drawn.kill > 0.0 {
            let restart = drawn.restart_ms;
            lines.push(format!(
                "kill: p={} per expired answer, restart after {}..{}ms",
                p(drawn.kill),
                restart.min,
                restart.max
            ));
        }
        if drawn.second_run > 0.0 {
            lines.push(format!("second-run: p={} per run", p(drawn.second_run)));
        }
        if let Some(draw) = drawn.worker_draw {
            lines.push(format!(
                "worker: batch {}, claims of {}ms ({})",
                drawn.worker.batch_size,
                drawn.worker.claim_for_ms,
                draw.name()
            ));
        }
        lines
    }

    fn shrink_moves() -> &'static [(&'static str, &'static str)] {
        &[
            ("faults.kill.probability", "0"),
            ("faults.store_timeout", "0"),
            ("faults.malformed", "0"),
            ("faults.second_run", "0"),
            ("agents.consume", "0"),
            ("agents.backlog", "0"),
            ("agents.hold_ms", "[0, 0]"),
            ("worker.batch_size", "1"),
        ]
    }

    fn faults_on(settings: &Settings) -> usize {
        usize::from(settings.kill.probability.get() > 0.0)
            + usize::from(settings.store_timeout.get() > 0.0)
            + usize::from(settings.malformed.get() > 0.0)
            + usize::from(settings.second_run.get() > 0.0)
    }
}

/// Where a swarm run's worker settings came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerDraw {
    /// The scenario's own `[worker]` settings (value 0 of the draw).
    Own,
    /// A batch of 1 to 8 and a short claim (0.5 to 3 s): claims expire while a worker still
    /// settles its batch, so other workers take its reservations over.
    ShortClaims,
}

impl WorkerDraw {
    pub fn name(self) -> &'static str {
        match self {
            WorkerDraw::Own => "the scenario's",
            WorkerDraw::ShortClaims => "drawn: short claims",
        }
    }
}

/// What one run of the reservation system drew.
#[derive(Clone, Debug, PartialEq)]
pub struct Drawn {
    /// Probability a store apply times out without applying.
    pub store_timeout: f64,
    /// Probability a placed hold is malformed.
    pub malformed: f64,
    /// Probability a process dies after a transition answered expired.
    pub kill: f64,
    pub restart_ms: MsRange,
    /// Probability a supervisor calls `run()` again while a run is active.
    pub second_run: f64,
    /// The configuration every replica's worker is built with in this run.
    pub worker: WorkerConfig,
    /// How a swarm run drew `worker` (`None` without swarm: the scenario's, not printed).
    pub worker_draw: Option<WorkerDraw>,
}

fn draw_worker(
    settings: &Settings,
    swarm: bool,
    env: &dyn Env<Reservations>,
) -> (WorkerConfig, Option<WorkerDraw>) {
    let own = settings.worker.clone();
    if !swarm {
        return (own, None);
    }
    if env.pick(2) == 0 {
        return (own, Some(WorkerDraw::Own));
    }
    let batch_size = u32::try_from(env.range(1, MAX_BATCH as u64)).unwrap_or(1);
    let claim_for_ms = env.range(500, 3_000);
    let config = WorkerConfig {
        batch_size,
        claim_for_ms,
        ..own
    };
    // invariant: the draw keeps every rule `WorkerConfig::validate` checks.
    debug_assert!(config.validate().is_ok());
    (config, Some(WorkerDraw::ShortClaims))
}
