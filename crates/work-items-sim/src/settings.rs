//! The work-items system's part of a scenario file, and what one run draws from it.
//!
//! Terminology:
//! - *settings*: `[items]` (how many items the dispatcher creates, and their size in chunks),
//!   `[worker]` (the configuration every replica's worker is built with), `[store]` (whether
//!   the store checks tokens), `settle` (whether every item must end done or failed by the end
//!   of the liveness phase), and this system's fault `[faults] provider_refuses` (the
//!   provider refuses an item's effect for good).
//! - *drawn*: per run, each item's size (value 0: the smallest), and `provider_refuses`
//!   switched and scaled by swarm like every shared fault.
//!
//! Unknown keys are refused by the shared loader (top level, `[faults]`) and by serde's
//! `deny_unknown_fields` here, each at its `file:line:column`. Every number is bounded by
//! what a run can do (spans by [`MAX_SPAN_MS`], counts by the constants below) and a value
//! outside its bound is refused at the value, naming the key and the range in words.

use std::ops::Range;

use std::fmt;

use leasesim_invariants::{SettingsRule, SettingsRules};
use leasesim_sim::scenario::{MAX_SPAN_MS, Probability, whole_field};
use leasesim_sim::{Env, Scale, ScenarioError, Setup, SystemPart};
use serde::Deserialize;
use serde::de::{self, Deserializer};
use toml::Spanned;
use work_items_worker::WorkerConfig;

use crate::events::WorkItems;

/// The most chunks one item may have (the checkers keep a chunk set in a `u64`).
pub const MAX_CHUNKS: u32 = 64;
/// The most items a run may have.
pub const MAX_ITEMS: u32 = 10_000;
/// The most claims of one item a worker may make, and the most retries of one call: a run's
/// phases end long before a thousand backoffs of even a millisecond's round trip each matter.
pub const MAX_TRIES: u32 = 1_000;

fn count_field<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    whole_field(d, 1, i64::from(MAX_ITEMS))
}

fn attempts_field<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    whole_field(d, 1, i64::from(MAX_TRIES))
}

fn retries_field<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    whole_field(d, 0, i64::from(MAX_TRIES))
}

/// A span of virtual time from `MIN` ms to [`MAX_SPAN_MS`].
fn span_field<'de, D: Deserializer<'de>, const MIN: i64>(d: D) -> Result<u64, D::Error> {
    whole_field(d, MIN, MAX_SPAN_MS as i64)
}

/// `[min, max]` of chunks per item, each in `1..=MAX_CHUNKS`, `min <= max`.
fn chunks_field<'de, D: Deserializer<'de>>(d: D) -> Result<[u32; 2], D::Error> {
    struct Chunks;
    /// One end of the range, bounded like a whole field.
    struct End;
    impl<'de> de::DeserializeSeed<'de> for End {
        type Value = u32;

        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u32, D::Error> {
            whole_field(d, 1, i64::from(MAX_CHUNKS))
        }
    }
    impl<'de> de::Visitor<'de> for Chunks {
        type Value = [u32; 2];

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(
                f,
                "a range [min, max] of whole numbers from 1 to {MAX_CHUNKS}"
            )
        }

        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<[u32; 2], A::Error> {
            let min = seq.next_element_seed(End)?;
            let min = min.ok_or_else(|| de::Error::invalid_length(0, &self))?;
            let max = seq.next_element_seed(End)?;
            let max = max.ok_or_else(|| de::Error::invalid_length(1, &self))?;
            if seq.next_element::<de::IgnoredAny>()?.is_some() {
                return Err(de::Error::invalid_length(3, &self));
            }
            if min > max {
                return Err(de::Error::custom(format!(
                    "range [{min}, {max}]: min exceeds max"
                )));
            }
            Ok([min, max])
        }
    }
    d.deserialize_seq(Chunks)
}

/// `[items]`: what the dispatcher creates.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ItemsSection {
    /// Items of the run, numbered from 0.
    #[serde(deserialize_with = "count_field")]
    pub count: u32,
    /// Each item's size in chunks, drawn per item from `[min, max]`.
    #[serde(deserialize_with = "chunks_field")]
    pub chunks: [u32; 2],
}

impl Default for ItemsSection {
    fn default() -> Self {
        ItemsSection {
            count: 40,
            chunks: [1, 2],
        }
    }
}

/// `[worker]`: every replica's worker configuration.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkerSection {
    /// At least 2: a renewal interval must fit below it.
    #[serde(deserialize_with = "span_field::<_, 2>")]
    pub lease_ms: u64,
    #[serde(deserialize_with = "span_field::<_, 1>")]
    pub renew_every_ms: u64,
    #[serde(deserialize_with = "attempts_field")]
    pub max_attempts: u32,
    #[serde(deserialize_with = "retries_field")]
    pub max_retries: u32,
    #[serde(deserialize_with = "span_field::<_, 1>")]
    pub backoff_ms: u64,
    #[serde(deserialize_with = "span_field::<_, 1>")]
    pub backoff_cap_ms: u64,
    #[serde(deserialize_with = "span_field::<_, 1>")]
    pub deadline_ms: u64,
}

impl Default for WorkerSection {
    fn default() -> Self {
        WorkerSection {
            lease_ms: 2_000,
            renew_every_ms: 700,
            max_attempts: 3,
            max_retries: 3,
            backoff_ms: 50,
            backoff_cap_ms: 400,
            deadline_ms: 30_000,
        }
    }
}

impl WorkerSection {
    fn config(&self) -> WorkerConfig {
        WorkerConfig {
            lease_ms: self.lease_ms,
            renew_every_ms: self.renew_every_ms,
            max_attempts: self.max_attempts,
            max_retries: self.max_retries,
            backoff_ms: self.backoff_ms,
            backoff_cap_ms: self.backoff_cap_ms,
            deadline_ms: self.deadline_ms,
        }
    }
}

/// `[store]`: the item store.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreSection {
    /// The store refuses an apply or a done-mark whose token is not the item's live claim,
    /// judged when the write is applied. `false` shows why this matters.
    pub fencing: bool,
}

impl Default for StoreSection {
    fn default() -> Self {
        StoreSection { fencing: true }
    }
}

/// The system's keys inside `[faults]`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct FaultsFile {
    provider_refuses: Probability,
}

/// The system's keys as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SettingsFile {
    #[serde(default)]
    items: ItemsSection,
    #[serde(default)]
    worker: Option<Spanned<WorkerSection>>,
    #[serde(default)]
    store: StoreSection,
    #[serde(default = "yes")]
    settle: bool,
    #[serde(default)]
    faults: FaultsFile,
}

fn yes() -> bool {
    true
}

/// The system's checked settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub items: ItemsSection,
    /// Every replica's worker configuration.
    pub worker: WorkerConfig,
    pub store: StoreSection,
    /// Every item must end done or failed by the end of the liveness phase.
    pub settle: bool,
    pub provider_refuses: Probability,
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

/// `SettingsRule` over [`WorkerConfig`] with a numeric setting written as its field: `holds`
/// is `low <= field`, the edge sets it to `low` and the past to `low - 1`.
macro_rules! at_least {
    ($name:literal, $field:ident, $low:expr) => {
        SettingsRule {
            name: $name,
            setting: stringify!($field),
            holds: |config| config.$field >= $low,
            edge: |config| WorkerConfig {
                $field: $low,
                ..config.clone()
            },
            past: |config| WorkerConfig {
                $field: $low - 1,
                ..config.clone()
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

/// The defaults `WorkerConfig`'s documentation states: "30 s leases renewed every 10 s, 3
/// attempts per item, 3 retries per call with backoffs from 100 ms doubling up to 2 s, and an
/// hour per run".
fn documented_default() -> WorkerConfig {
    WorkerConfig {
        lease_ms: 30_000,
        renew_every_ms: 10_000,
        max_attempts: 3,
        max_retries: 3,
        backoff_ms: 100,
        backoff_cap_ms: 2_000,
        deadline_ms: 3_600_000,
    }
}

/// The rules a configuration keeps, with edges and pasts derived from the run's configuration.
const WORKER_RULES: &[SettingsRule<WorkerConfig>] = &[
    SettingsRule {
        name: "lease-at-least-2ms",
        setting: "lease_ms",
        holds: |config| config.lease_ms >= 2,
        edge: |config| WorkerConfig {
            lease_ms: 2,
            renew_every_ms: 1,
            ..config.clone()
        },
        // Also past `renewal-within-lease`, which needs a lease of 2 ms.
        past: |config| WorkerConfig {
            lease_ms: 1,
            renew_every_ms: 1,
            ..config.clone()
        },
    },
    at_least!("renewal-positive", renew_every_ms, 1),
    SettingsRule {
        name: "renewal-within-lease",
        setting: "renew_every_ms",
        holds: |config| config.renew_every_ms < config.lease_ms,
        edge: |config| WorkerConfig {
            renew_every_ms: config.lease_ms - 1,
            ..config.clone()
        },
        past: |config| WorkerConfig {
            renew_every_ms: config.lease_ms,
            ..config.clone()
        },
    },
    at_least!("attempts-positive", max_attempts, 1),
    at_least!("backoff-positive", backoff_ms, 1),
    SettingsRule {
        name: "backoff-cap-at-least-backoff",
        setting: "backoff_cap_ms",
        holds: |config| config.backoff_cap_ms >= config.backoff_ms,
        edge: |config| WorkerConfig {
            backoff_cap_ms: config.backoff_ms,
            ..config.clone()
        },
        past: |config| WorkerConfig {
            backoff_cap_ms: config.backoff_ms - 1,
            ..config.clone()
        },
    },
    at_least!("deadline-positive", deadline_ms, 1),
];

/// The work-items part of a scenario, and what a run draws from it.
impl Setup for WorkItems {
    const KEYS: &'static [&'static str] = &["items", "worker", "store", "settle"];
    const FAULT_KEYS: &'static [&'static str] = &["provider_refuses"];
    type Settings = Settings;
    type Drawn = Drawn;

    /// Checks the work-items part of a scenario file.
    fn settings(part: SystemPart<'_>) -> Result<Settings, ScenarioError> {
        let file: SettingsFile = part.deserialize()?;
        let items = file.items;
        // invariant: the fields' bounds make every item section a dispatcher can create.
        debug_assert!((1..=MAX_ITEMS).contains(&items.count));
        debug_assert!(1 <= items.chunks[0] && items.chunks[0] <= items.chunks[1]);
        debug_assert!(items.chunks[1] <= MAX_CHUNKS);
        let (worker, worker_span) = split(file.worker);
        let config = worker.config();
        config
            .validate()
            .map_err(|err| part.error_at(worker_span, &format!("[worker]: {err}")))?;
        Ok(Settings {
            items,
            worker: config,
            store: file.store,
            settle: file.settle,
            provider_refuses: file.faults.provider_refuses,
        })
    }

    fn check_scenario(
        scenario: &leasesim_sim::Scenario<WorkItems>,
    ) -> Result<(), (&'static str, String)> {
        crate::bounds::check(scenario)
    }

    fn draw(
        scenario: &leasesim_sim::Scenario<WorkItems>,
        env: &dyn Env<WorkItems>,
        scale: &Scale<'_>,
    ) -> Drawn {
        draw_items(&scenario.settings, env, scale)
    }

    /// Header lines of the drawn part (a fault that is off is left out).
    fn describe(drawn: &Drawn) -> Vec<String> {
        let chunks: u64 = drawn.sizes.iter().map(|&s| u64::from(s)).sum();
        let smallest = drawn.sizes.iter().min().copied().unwrap_or(0);
        let largest = drawn.sizes.iter().max().copied().unwrap_or(0);
        let w = &drawn.worker;
        let mut lines = vec![
            format!(
                "items: {} of {smallest}..{largest} chunks ({chunks} chunks in all)",
                drawn.sizes.len()
            ),
            format!(
                "worker: lease {}ms, renew every {}ms, {} attempts, {} retries, backoff {}..{}ms, \
             deadline {}ms",
                w.lease_ms,
                w.renew_every_ms,
                w.max_attempts,
                w.max_retries,
                w.backoff_ms,
                w.backoff_cap_ms,
                w.deadline_ms
            ),
        ];
        if drawn.provider_refuses > 0.0 {
            let p = leasesim_sim::faults::probability_text(drawn.provider_refuses);
            lines.push(format!("provider-refuses: p={p} per item"));
        }
        if !drawn.fencing {
            lines.push("store fencing: OFF (applies and done-marks are not checked)".into());
        }
        if !drawn.settle {
            lines.push("settle: not required".into());
        }
        lines
    }

    fn shrink_moves() -> &'static [(&'static str, &'static str)] {
        &[
            ("faults.provider_refuses", "0"),
            ("items.count", "1"),
            ("items.count", "2"),
            ("items.count", "4"),
            ("items.chunks", "[1, 1]"),
            ("items.chunks", "[2, 2]"),
        ]
    }

    fn shrink_end_moves() -> &'static [(&'static str, &'static str)] {
        &[("settle", "false")]
    }

    fn faults_on(settings: &Settings) -> usize {
        usize::from(settings.provider_refuses.get() > 0.0)
    }
}

/// What one run drew.
#[derive(Clone, Debug, PartialEq)]
pub struct Drawn {
    /// Every replica's worker configuration (the scenario's).
    pub worker: WorkerConfig,
    /// Each item's size in chunks, by item number.
    pub sizes: Vec<u32>,
    /// Probability that the provider refuses an item's effect for good (decided once per
    /// item, at its first apply).
    pub provider_refuses: f64,
    pub fencing: bool,
    pub settle: bool,
}

/// Draws the system's part of a run's profile (after the shared part): the item sizes
/// (value 0: the smallest) and the provider's refusals (scaled by swarm).
pub fn draw_items(settings: &Settings, env: &dyn Env<WorkItems>, scale: &Scale<'_>) -> Drawn {
    let [min, max] = settings.items.chunks;
    let sizes: Vec<u32> = (0..settings.items.count)
        .map(|_| {
            let size = env.range(u64::from(min), u64::from(max));
            u32::try_from(size).expect("within the scenario's u32 range")
        })
        .collect();
    let drawn = Drawn {
        worker: settings.worker.clone(),
        sizes,
        provider_refuses: scale.apply(settings.provider_refuses.get()),
        fencing: settings.store.fencing,
        settle: settings.settle,
    };
    // invariant: one size per item, each within the scenario's range; a drawn fault stays
    // within its envelope.
    debug_assert_eq!(drawn.sizes.len(), settings.items.count as usize);
    debug_assert!(drawn.sizes.iter().all(|&s| (min..=max).contains(&s)));
    debug_assert!(drawn.provider_refuses <= settings.provider_refuses.get());
    drawn
}
