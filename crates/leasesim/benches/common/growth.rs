//! How leasesim's cost grows with the work, one dimension at a time from a small baseline.
//! Measured here, printed by the `scaling` and `report` benches.
//!
//! Terminology:
//! - *dimension*: one knob of a scenario moved through a few values, every other key at the
//!   baseline (a *row* per value).
//! - *baseline*: for retention, an inline scenario (2 replicas, 1 min safety + 10 s liveness,
//!   10,000 rows, no faults, default latencies; terms capped at 4 rows in batches of 2, starting
//!   every 2-4 s per replica, 60 s retention, so no configuration deletes every row and the work
//!   per term is the same at 1,000 rows as at 100,000; `drain = false` so the liveness check
//!   does not ask for the backlog to go). For the other systems, their no-fault default
//!   scenario (`holder-steady`, `expiry-steady`, `items-steady`) with one key moved at a time
//!   through the scenario overrides `shrink` uses.
//! - *block*: a batch of consecutive seeds timed as one (about `Budget::block_s` of CPU time);
//!   a row runs blocks until it has spent `Budget::total_s` and run at least three seeds.
//!
//! Every seed takes the path `leasesim fuzz` takes (`leasesim::runner::run`: every checker,
//! coverage, trace hash; no kept events, no recorded choices), on this thread; times are this
//! thread's CPU time.

use std::cell::Cell;
use std::rc::Rc;

use leasesim::overrides::Overrides;
use leasesim::retention::Scenario;
use leasesim_events::{Flow, OpSet};
use leasesim_holder_lock::HolderLock;
use leasesim_reservations::Reservations;
use leasesim_retention::events::{Applied, Event, EventKind, Stamped};
use leasesim_rt::SimConfig;
use leasesim_sim::System;
use leasesim_sim::simulate;
use leasesim_work_items::WorkItems;

use super::{BatchTotals, Budget, Elapsed, leasesim_batch};

/// One configuration of the retention world.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub rows: u64,
    pub replicas: u16,
    pub duration_min: u64,
    pub faults: Faults,
}

pub const BASELINE: Config = Config {
    rows: 10_000,
    replicas: 2,
    duration_min: 1,
    faults: Faults::Off,
};

/// Fault density: per-operation reject and reply-lost probabilities, and the per-tick
/// probabilities of a process pause and of a lease revocation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Faults {
    Off,
    Light,
    Medium,
    Heavy,
}

impl Faults {
    /// (reject, reply_lost, pause, revoke)
    fn probabilities(self) -> (f64, f64, f64, f64) {
        match self {
            Faults::Off => (0.0, 0.0, 0.0, 0.0),
            Faults::Light => (0.01, 0.01, 0.02, 0.02),
            Faults::Medium => (0.05, 0.05, 0.10, 0.10),
            Faults::Heavy => (0.20, 0.10, 0.30, 0.30),
        }
    }

    fn label(self) -> String {
        let (reject, lost, pause, revoke) = self.probabilities();
        let name = format!("{self:?}").to_lowercase();
        if self == Faults::Off {
            return name;
        }
        format!("{name} (reject {reject}, reply-lost {lost}, pause {pause}, revoke {revoke})")
    }

    fn toml(self) -> String {
        let (reject, lost, pause, revoke) = self.probabilities();
        if self == Faults::Off {
            return String::new();
        }
        let per_op = |p: f64| format!("acquire = {p}\nrenew = {p}\nrelease = {p}\ndelete = {p}\n");
        format!(
            "[faults.reject]\n{}\n[faults.reply_lost]\n{}\n[faults.pause]\nprobability = {pause}\n\n[faults.revoke]\nprobability = {revoke}\n",
            per_op(reject),
            per_op(lost)
        )
    }
}

impl Config {
    fn scenario(self, name: &str) -> Rc<Scenario> {
        let text = format!(
            r#"description = "scaling bench: {name}"
system = "retention"
replicas = {replicas}
duration_ms = {duration_ms}
liveness_ms = 10_000
drain = false

[worker]
batch_rows = 2
cap_rows = 4
retention_ms = 60_000

[schedule]
run_every_ms = [2_000, 4_000]

[store]
rows = {rows}
created_from_ms = -600_000
created_to_ms = 0

{faults}"#,
            replicas = self.replicas,
            duration_ms = self.duration_min * 60_000,
            rows = self.rows,
            faults = self.faults.toml(),
        );
        super::inline_scenario(name, &text)
    }
}

/// One measured row of a dimension.
pub struct Row {
    pub value: String,
    pub totals: BatchTotals,
    pub time: Elapsed,
    /// (totals, time) of each block, in the order run.
    pub blocks: Vec<(BatchTotals, Elapsed)>,
    /// Rows one sample seed deleted, of the rows in the store (retention only).
    pub deleted: Option<(u64, u64)>,
}

impl Row {
    pub fn us_per_event(&self) -> f64 {
        self.time.cpu_s * 1e6 / self.totals.events as f64
    }
}

/// One dimension of one system: its rows, one per value.
pub struct Dimension {
    /// `System::NAME`.
    pub system: &'static str,
    pub name: String,
    pub rows: Vec<Row>,
}

impl Dimension {
    /// The largest deviation of µs/event from the dimension's median row, as (low, high)
    /// fractions.
    pub fn spread(&self) -> (f64, f64) {
        let mut costs: Vec<f64> = self.rows.iter().map(Row::us_per_event).collect();
        let mid = super::median(&mut costs);
        let low = costs.iter().copied().fold(f64::INFINITY, f64::min) / mid - 1.0;
        let high = costs.iter().copied().fold(0.0, f64::max) / mid - 1.0;
        (low, high)
    }
}

/// Rows deleted in one run of `scenario` from seed 0 (outside every timing).
fn rows_deleted(scenario: &Rc<Scenario>) -> u64 {
    let deleted = Rc::new(Cell::new(0u64));
    let sink = deleted.clone();
    let observer = Box::new(move |event: &Stamped<Event>| {
        if let EventKind::Applied {
            applied: Applied::Deleted { rows, .. },
            ..
        } = event.event.kind
        {
            sink.set(sink.get() + u64::from(rows));
        }
        Flow::Continue
    });
    let run = simulate(
        scenario,
        &super::correct_factory(),
        SimConfig::seeded(0).with_recording(false),
        false,
        Some(Box::new(move |_: &leasesim_retention::Profile| observer)),
    );
    std::hint::black_box(run.events_emitted);
    deleted.get()
}

fn measure(value: String, config: Config, budget: Budget) -> Row {
    let scenario = config.scenario(&value);
    let mut row = measure_scenario(value, &scenario, budget);
    row.deleted = Some((rows_deleted(&scenario), config.rows));
    row
}

/// Seeds of `scenario` with the correct worker until the row's budget is spent.
fn measure_scenario<S: System>(
    value: String,
    scenario: &Rc<leasesim_sim::Scenario<S>>,
    budget: Budget,
) -> Row {
    let factory = super::correct_factory_of::<S>();
    let spec = super::fuzz_spec(scenario, &factory);
    // Warm up and size the blocks (at least three seeds per row).
    let (_, warm) = leasesim_batch(&spec, 1_000_000, 2);
    let per_seed_s = warm.cpu_s / 2.0;
    let batch = ((budget.block_s / per_seed_s) as u64).max(1);
    let mut row = Row {
        value,
        totals: BatchTotals::default(),
        time: Elapsed::default(),
        blocks: Vec::new(),
        deleted: None,
    };
    let mut first = 0;
    while row.time.cpu_s < budget.total_s || row.totals.seeds < 3 {
        let (part, elapsed) = leasesim_batch(&spec, first, batch);
        row.totals.seeds += part.seeds;
        row.totals.events += part.events;
        row.totals.steps += part.steps;
        row.totals.failed += part.failed;
        row.time += elapsed;
        row.blocks.push((part, elapsed));
        first += batch;
    }
    row
}

/// `base` (a builtin scenario of `S`) with `overrides` (`key = value` in TOML) written in.
fn overridden<S: System + leasesim::Render>(
    base: &str,
    overrides: &[(&str, String)],
) -> Rc<leasesim_sim::Scenario<S>> {
    let scenario = super::builtin_scenario_of::<S>(base);
    let mut set = Overrides::default();
    for (key, value) in overrides {
        let value: toml::Value = toml::from_str::<toml::Table>(&format!("v = {value}"))
            .map(|mut table| table.remove("v").expect("the value just written"))
            .unwrap_or_else(|err| panic!("override {key} = {value}: {err}"));
        set.set(key, value);
    }
    let changed = set
        .apply(&scenario)
        .unwrap_or_else(|(key, why)| panic!("{base} with {key}: {why}"));
    Rc::new(changed)
}

/// The shared fault overrides of a density (rejects and lost replies on every operation of
/// `S`, pauses), as the retention dimensions use (without revocations, a retention fault).
fn fault_overrides<S: System>(faults: Faults) -> Vec<(String, String)> {
    let (reject, lost, pause, _) = faults.probabilities();
    let mut out = Vec::new();
    for op in S::Op::ALL {
        out.push((format!("faults.reject.{}", op.key()), reject.to_string()));
        out.push((format!("faults.reply_lost.{}", op.key()), lost.to_string()));
    }
    out.push(("faults.pause.probability".to_string(), pause.to_string()));
    out
}

/// The dimensions of system `S` from its no-fault scenario `base`; `size` is the system's own
/// dimension (a key and its values), if it has one.
fn system_dimensions<S: System + leasesim::Render>(
    base: &str,
    size: Option<(&str, &[u64])>,
    budget: Budget,
) -> Vec<Dimension> {
    let one = |label: String, overrides: Vec<(String, String)>| {
        let pairs: Vec<(&str, String)> = overrides
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        measure_scenario(label, &overridden::<S>(base, &pairs), budget)
    };
    let dimension = |name: &str, rows: Vec<Row>| Dimension {
        system: S::NAME,
        name: name.to_string(),
        rows,
    };
    let replicas = [1u64, 2, 4, 8].into_iter().map(|n| {
        let overrides = vec![("replicas".into(), n.to_string())];
        one(format!("{n} replicas"), overrides)
    });
    let duration = [1u64, 5, 15].into_iter().map(|min| {
        let ms = (min * 60_000).to_string();
        one(format!("{min} min"), vec![("duration_ms".into(), ms)])
    });
    let faults = [Faults::Off, Faults::Light, Faults::Medium, Faults::Heavy]
        .into_iter()
        .map(|f| one(format!("{f:?}").to_lowercase(), fault_overrides::<S>(f)));
    let mut dimensions = vec![
        dimension("replicas", replicas.collect()),
        dimension("duration", duration.collect()),
        dimension("faults", faults.collect()),
    ];
    if let Some((key, values)) = size {
        let rows = values.iter().map(|v| {
            let overrides = vec![(key.to_string(), v.to_string())];
            one(format!("{key} = {v}"), overrides)
        });
        dimensions.push(dimension(key, rows.collect()));
    }
    dimensions
}

/// Retention's dimensions: rows, replicas, virtual duration and fault density, one at a time.
fn retention_dimensions(budget: Budget) -> Vec<Dimension> {
    let dimension = |name: &str, rows: Vec<Row>| Dimension {
        system: "retention",
        name: name.to_string(),
        rows,
    };
    let rows = [1_000u64, 10_000, 100_000].into_iter().map(|rows| {
        let config = Config { rows, ..BASELINE };
        measure(format!("{rows} rows"), config, budget)
    });
    let replicas = [1u16, 2, 4, 8, 16].into_iter().map(|replicas| {
        let config = Config {
            replicas,
            ..BASELINE
        };
        measure(format!("{replicas} replicas"), config, budget)
    });
    let duration = [1u64, 5, 15, 60].into_iter().map(|duration_min| {
        let config = Config {
            duration_min,
            ..BASELINE
        };
        measure(format!("{duration_min} min"), config, budget)
    });
    let faults = [Faults::Off, Faults::Light, Faults::Medium, Faults::Heavy]
        .into_iter()
        .map(|faults| measure(faults.label(), Config { faults, ..BASELINE }, budget));
    vec![
        dimension("rows", rows.collect()),
        dimension("replicas", replicas.collect()),
        dimension("duration", duration.collect()),
        dimension("faults", faults.collect()),
    ]
}

/// Every system's dimensions, in the order printed: retention, holder-lock, reservations
/// (with the holds already due at the start), work-items (with the number of items).
pub fn all_dimensions(budget: Budget) -> Vec<Dimension> {
    let mut dimensions = retention_dimensions(budget);
    dimensions.extend(system_dimensions::<HolderLock>(
        "holder-steady",
        None,
        budget,
    ));
    dimensions.extend(system_dimensions::<Reservations>(
        "expiry-steady",
        Some(("agents.backlog", &[10, 100, 1_000])),
        budget,
    ));
    dimensions.extend(system_dimensions::<WorkItems>(
        "items-steady",
        Some(("items.count", &[10, 40, 160])),
        budget,
    ));
    dimensions
}
