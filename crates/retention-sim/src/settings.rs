//! The retention system's part of a scenario file, and what one run draws from it.
//!
//! Terminology:
//! - *settings*: `[worker]` (the configuration every replica's worker is built with),
//!   `[lease]` (the lease authority), `[store]` (the rows and the store's fencing), `drain`,
//!   `term_bound_ms`, and two faults of this system: `[faults.revoke]` (the authority drops
//!   the live lease) and `[faults] short_delete` (a delete answers short).
//! - *worker settings*: the batch size and cap every replica's worker is built with. Without
//!   swarm they are the scenario's `[worker]` section; with swarm each run draws them too
//!   (small batches, large ones, caps that are not a multiple of the batch), and the checkers
//!   judge the run against the drawn settings.
//!
//! Value 0 of every draw is "off" or "the scenario's own", so shrinking moves toward them.

use std::ops::Range;

use leasesim_invariants::{SettingsRule, SettingsRules};
use leasesim_sim::scenario::{MAX_SPAN_MS, Periodic, Probability, SpanMs, whole_field};
use leasesim_sim::{EPOCH_MS, Env, Scale, ScenarioError, Setup, SystemPart, Tick};
use retention_worker::WorkerConfig;
use serde::Deserialize;
use toml::Spanned;

use crate::Retention;

/// The most rows a store may hold: the store computes rows from their index, so any count
/// costs what a small one does; past a billion a typo (an extra zero) is likelier than a plan.
pub const MAX_ROWS: i64 = 1_000_000_000;

/// The longest retention: clocks read [`EPOCH_MS`] at the start of a run, so a longer one
/// would put every cutoff before the clock's zero.
pub const MAX_RETENTION_MS: i64 = EPOCH_MS as i64;

fn rows_field<'de, D: serde::Deserializer<'de>, T: TryFrom<i64>>(d: D) -> Result<T, D::Error> {
    whole_field(d, 0, i64::from(u32::MAX))
}

fn retention_field<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    whole_field(d, 0, MAX_RETENTION_MS)
}

fn interval_field<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    whole_field(d, 0, MAX_SPAN_MS as i64)
}

fn store_rows_field<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    whole_field(d, 0, MAX_ROWS)
}

fn creation_field<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    whole_field(d, -(EPOCH_MS as i64), EPOCH_MS as i64)
}

/// `[worker]`: the configuration every replica's worker is built with.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkerSection {
    #[serde(deserialize_with = "rows_field")]
    pub batch_rows: u32,
    #[serde(deserialize_with = "rows_field")]
    pub cap_rows: u32,
    #[serde(deserialize_with = "retention_field")]
    pub retention_ms: u64,
    #[serde(deserialize_with = "interval_field")]
    pub renew_every_ms: u64,
}

impl Default for WorkerSection {
    fn default() -> Self {
        WorkerSection {
            batch_rows: 200,
            cap_rows: 1_000,
            retention_ms: 300_000,
            renew_every_ms: 1_000,
        }
    }
}

/// `[lease]`: the lease authority.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LeaseSection {
    pub ttl_ms: SpanMs,
    pub exact_token: bool,
}

impl Default for LeaseSection {
    fn default() -> Self {
        LeaseSection {
            ttl_ms: SpanMs::new(3_000),
            exact_token: false,
        }
    }
}

/// `[store]`: the rows and the store's fencing.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreSection {
    #[serde(deserialize_with = "store_rows_field")]
    pub rows: u64,
    /// Creation time of the oldest row, ms relative to the start of the run (may be negative).
    #[serde(deserialize_with = "creation_field")]
    pub created_from_ms: i64,
    /// Creation time of the newest row; rows after the start arrive as time passes.
    #[serde(deserialize_with = "creation_field")]
    pub created_to_ms: i64,
    pub fencing: bool,
}

impl Default for StoreSection {
    fn default() -> Self {
        StoreSection {
            rows: 2_000,
            created_from_ms: -600_000,
            created_to_ms: 0,
            fencing: true,
        }
    }
}

/// The system's faults inside `[faults]`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct FaultsFile {
    revoke: Periodic,
    /// Probability a delete answers short: it removes fewer rows than its limit while more
    /// eligible rows remain (as `DELETE ... LIMIT n` with `SKIP LOCKED` can).
    short_delete: Probability,
}

/// The system's keys as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SettingsFile {
    #[serde(default)]
    worker: Option<Spanned<WorkerSection>>,
    #[serde(default)]
    lease: LeaseSection,
    #[serde(default)]
    store: Option<Spanned<StoreSection>>,
    #[serde(default = "yes")]
    drain: bool,
    #[serde(default = "term_bound_ms")]
    term_bound_ms: SpanMs,
    #[serde(default)]
    faults: FaultsFile,
}

fn yes() -> bool {
    true
}

fn term_bound_ms() -> SpanMs {
    SpanMs::new(20_000)
}

/// The retention system's checked settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// Every replica's worker configuration (`lease_ttl_ms` is `[lease] ttl_ms`).
    pub worker: WorkerConfig,
    pub lease: LeaseSection,
    pub store: StoreSection,
    /// Check that the eligible backlog drains during the liveness phase.
    pub drain: bool,
    /// Once faults heal, a term must end within this long.
    pub term_bound_ms: u64,
    pub revoke: Periodic,
    pub short_delete: Probability,
}

impl Settings {
    /// Creation times of the initial rows, on the store's clock.
    pub fn created_window_ms(&self) -> (u64, u64) {
        let at = |relative: i64| EPOCH_MS.saturating_add_signed(relative);
        (at(self.store.created_from_ms), at(self.store.created_to_ms))
    }
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

/// What the harness states about the core's settings: the rules below and the documented
/// defaults. The production factory's construction probe checks the core against them
/// (`leasesim_invariants::probe`).
pub const WORKER_SETTINGS: SettingsRules<WorkerConfig> = SettingsRules {
    rules: WORKER_RULES,
    documented_default,
};

/// The defaults `WorkerConfig`'s documentation states: "200-row batches, a 1,000-row cap per
/// term, 7 days of retention, a renewal every 10 s and a 30 s lease lifetime".
fn documented_default() -> WorkerConfig {
    WorkerConfig {
        batch_rows: 200,
        cap_rows: 1_000,
        retention_ms: 604_800_000,
        renew_every_ms: 10_000,
        lease_ttl_ms: 30_000,
    }
}

/// The rules a configuration keeps, with edges and pasts derived from the run's configuration.
const WORKER_RULES: &[SettingsRule<WorkerConfig>] = &[
    SettingsRule {
        name: "batch-positive",
        setting: "batch_rows",
        holds: |config| config.batch_rows >= 1,
        edge: |config| WorkerConfig {
            batch_rows: 1,
            ..config.clone()
        },
        past: |config| WorkerConfig {
            batch_rows: 0,
            ..config.clone()
        },
    },
    SettingsRule {
        name: "batch-within-cap",
        setting: "cap_rows",
        holds: |config| config.batch_rows <= config.cap_rows,
        edge: |config| WorkerConfig {
            cap_rows: config.batch_rows,
            ..config.clone()
        },
        past: |config| WorkerConfig {
            cap_rows: config.batch_rows - 1,
            ..config.clone()
        },
    },
    SettingsRule {
        name: "renewal-positive",
        setting: "renew_every_ms",
        holds: |config| config.renew_every_ms >= 1,
        edge: |config| WorkerConfig {
            renew_every_ms: 1,
            ..config.clone()
        },
        past: |config| WorkerConfig {
            renew_every_ms: 0,
            ..config.clone()
        },
    },
    SettingsRule {
        name: "renewal-below-lifetime",
        setting: "lease_ttl_ms",
        holds: |config| config.renew_every_ms < config.lease_ttl_ms,
        edge: |config| WorkerConfig {
            renew_every_ms: config.lease_ttl_ms - 1,
            ..config.clone()
        },
        past: |config| WorkerConfig {
            renew_every_ms: config.lease_ttl_ms,
            ..config.clone()
        },
    },
];

/// The retention part of a scenario, and what a run draws from it.
impl Setup for Retention {
    const KEYS: &'static [&'static str] = &["worker", "lease", "store", "drain", "term_bound_ms"];
    const FAULT_KEYS: &'static [&'static str] = &["revoke", "short_delete"];
    type Settings = Settings;
    type Drawn = Drawn;

    /// Checks the retention part of a scenario file.
    fn settings(part: SystemPart<'_>) -> Result<Settings, ScenarioError> {
        let file: SettingsFile = part.deserialize()?;
        let (worker, worker_span) = split(file.worker);
        let config = WorkerConfig {
            batch_rows: worker.batch_rows,
            cap_rows: worker.cap_rows,
            retention_ms: worker.retention_ms,
            renew_every_ms: worker.renew_every_ms,
            lease_ttl_ms: file.lease.ttl_ms.get(),
        };
        config
            .validate()
            .map_err(|err| part.error_at(worker_span, &format!("[worker]: {err}")))?;
        let (store, store_span) = split(file.store);
        check_store(&store).map_err(|message| part.error_at(store_span, &message))?;
        Ok(Settings {
            worker: config,
            lease: file.lease,
            store,
            drain: file.drain,
            term_bound_ms: file.term_bound_ms.get(),
            revoke: file.faults.revoke,
            short_delete: file.faults.short_delete,
        })
    }

    fn check_scenario(
        scenario: &leasesim_sim::Scenario<Retention>,
    ) -> Result<(), (&'static str, String)> {
        crate::bounds::check(scenario)
    }

    /// Draws the retention part of one run's profile.
    fn draw(
        scenario: &leasesim_sim::Scenario<Retention>,
        env: &dyn Env<Retention>,
        scale: &Scale<'_>,
    ) -> Drawn {
        let settings = &scenario.settings;
        let revoke = Tick {
            probability: scale.apply(settings.revoke.probability.get()),
            every_ms: settings.revoke.every_ms,
        };
        let short_delete = scale.apply(settings.short_delete.get());
        let (worker, worker_draw) = draw_worker(settings, scale.swarm(), env);
        let drain = settings.drain && worker_draw != Some(WorkerDraw::Small);
        let drawn = Drawn {
            revoke,
            short_delete,
            worker,
            worker_draw,
            drain,
        };
        // invariant: the drawn worker settings are ones the worker accepts, and faults stay
        // within their envelope.
        assert!(drawn.worker.validate().is_ok(), "{:?}", drawn.worker);
        debug_assert!(drawn.short_delete <= settings.short_delete.get());
        drawn
    }

    /// Header lines for the retention part of a profile (faults that are off are left out).
    fn describe(drawn: &Drawn) -> Vec<String> {
        let mut lines = Vec::new();
        if drawn.short_delete > 0.0 {
            let p = leasesim_sim::faults::probability_text(drawn.short_delete);
            lines.push(format!("short-delete: p={p}"));
        }
        if drawn.revoke.probability > 0.0 {
            lines.push(leasesim_sim::faults::tick_text("revoke", &drawn.revoke, ""));
        }
        if let Some(draw) = drawn.worker_draw {
            let (batch_rows, cap_rows) = (drawn.worker.batch_rows, drawn.worker.cap_rows);
            let mut line = format!(
                "worker: batch {batch_rows} rows, cap {cap_rows} rows ({})",
                draw.name()
            );
            if cap_rows % batch_rows != 0 {
                line.push_str(", cap not a multiple of the batch");
            }
            if !drawn.drain {
                line.push_str("; backlog drain not required");
            }
            lines.push(line);
        }
        lines
    }

    fn shrink_moves() -> &'static [(&'static str, &'static str)] {
        &[
            ("faults.revoke.probability", "0"),
            ("faults.short_delete", "0"),
            ("store.rows", "0"),
        ]
    }

    fn shrink_end_moves() -> &'static [(&'static str, &'static str)] {
        &[("drain", "false")]
    }

    fn faults_on(settings: &Settings) -> usize {
        usize::from(settings.revoke.probability.get() > 0.0)
            + usize::from(settings.short_delete.get() > 0.0)
    }
}

fn check_store(store: &StoreSection) -> Result<(), String> {
    if store.created_from_ms > store.created_to_ms {
        return Err(format!(
            "[store]: created_from_ms ({}) is after created_to_ms ({})",
            store.created_from_ms, store.created_to_ms
        ));
    }
    // invariant: each creation time was read within ±EPOCH_MS of the start.
    debug_assert!(store.created_from_ms >= -(EPOCH_MS as i64));
    debug_assert!(store.created_to_ms <= EPOCH_MS as i64);
    Ok(())
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

/// What one run of the retention system drew.
#[derive(Clone, Debug, PartialEq)]
pub struct Drawn {
    pub revoke: Tick,
    /// Probability a delete answers short while more eligible rows remain.
    pub short_delete: f64,
    /// The configuration every replica's worker is built with in this run.
    pub worker: WorkerConfig,
    /// How a swarm run drew `worker` (`None` without swarm: the scenario's, not printed).
    pub worker_draw: Option<WorkerDraw>,
    /// The run checks that the eligible backlog drains in the liveness phase.
    pub drain: bool,
}

/// The worker settings of one run: the scenario's, or with swarm a drawn batch and cap (value
/// 0 of every draw keeps the scenario's). Every drawn pair is valid: `1 <= batch <= cap`.
fn draw_worker(
    settings: &Settings,
    swarm: bool,
    env: &dyn Env<Retention>,
) -> (WorkerConfig, Option<WorkerDraw>) {
    let own = settings.worker.clone();
    if !swarm {
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
