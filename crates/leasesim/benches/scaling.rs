//! How leasesim's cost grows with the work, one dimension at a time from a small baseline.
//!
//! `cargo bench -p leasesim --bench scaling` prints one markdown table per dimension (rows in
//! the store, replicas, virtual duration of the safety phase, fault density) with seeds per
//! second, events per seed, events per second and µs per event, single-threaded, on the path
//! `leasesim fuzz` takes for every seed (`leasesim::runner::run`: every checker, coverage,
//! trace hash; no kept events, no recorded choices). It ends with one line saying whether the
//! cost per event stayed within ±30 % (of the dimension's median) across each dimension.
//!
//! The baseline (inline scenario): 2 replicas, 1 min safety + 10 s liveness, 10,000 rows, no
//! faults, default latencies. Terms are capped at 4 rows (batches of 2) and start every 2-4 s
//! per replica, with a 60 s retention, so that no configuration deletes every row (at 60 min,
//! ~9,600 of 10,000 at most): the work per term is the same at 1,000 rows as at 100,000, and
//! `drain = false` so the liveness check does not ask for the backlog to go. A column shows the
//! rows one sample seed deleted, to prove it.
//!
//! Then the same for every other system, from its no-fault default scenario (`holder-steady`,
//! `expiry-steady`, `items-steady`) with one key moved at a time through the scenario overrides
//! `shrink` uses: replicas, the safety phase's length, shared fault density (rejects and lost
//! replies on every operation, pauses), for reservations the holds already due at the start
//! and for work-items the number of items.
//!
//! Figures are per CPU second of this thread (the wall clock is also read, around batches only).
//! `LEASESIM_BENCH_SECS` (default 2.0) sets the CPU seconds measured per table row.
// Wall clock and CPU clock are read only around whole batches of runs, never inside a run.
#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    clippy::print_stdout
)]

mod common;

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

use common::{BatchTotals, Elapsed, leasesim_batch};

/// One configuration of the world.
#[derive(Clone, Copy, Debug)]
struct Config {
    rows: u64,
    replicas: u16,
    duration_min: u64,
    faults: Faults,
}

const BASELINE: Config = Config {
    rows: 10_000,
    replicas: 2,
    duration_min: 1,
    faults: Faults::Off,
};

/// Fault density: per-operation reject and reply-lost probabilities, and the per-tick
/// probabilities of a process pause and of a lease revocation.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Faults {
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
        common::inline_scenario(name, &text)
    }
}

/// One measured row of a table.
struct Row {
    value: String,
    totals: BatchTotals,
    time: Elapsed,
    /// Rows one sample seed deleted, of the rows in the store (retention only).
    deleted: Option<(u64, u64)>,
}

impl Row {
    fn us_per_event(&self) -> f64 {
        self.time.cpu_s * 1e6 / self.totals.events as f64
    }
}

fn target_cpu_s() -> f64 {
    std::env::var("LEASESIM_BENCH_SECS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(2.0)
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
        &common::correct_factory(),
        SimConfig::seeded(0).with_recording(false),
        false,
        Some(Box::new(move |_: &leasesim_retention::Profile| observer)),
    );
    std::hint::black_box(run.events_emitted);
    deleted.get()
}

fn measure(value: String, config: Config) -> Row {
    let scenario = config.scenario(&value);
    let mut row = measure_scenario(value, &scenario);
    row.deleted = Some((rows_deleted(&scenario), config.rows));
    row
}

/// Seeds of `scenario` with the correct worker until the row's CPU time is spent.
fn measure_scenario<S: System>(value: String, scenario: &Rc<leasesim_sim::Scenario<S>>) -> Row {
    let factory = common::correct_factory_of::<S>();
    let spec = common::fuzz_spec(scenario, &factory);
    // Warm up and size the batches (at least three seeds per row).
    let (_, warm) = leasesim_batch(&spec, 1_000_000, 2);
    let per_seed_s = warm.cpu_s / 2.0;
    let batch = ((0.25 / per_seed_s) as u64).max(1);
    let mut totals = BatchTotals::default();
    let mut time = Elapsed::default();
    let mut first = 0;
    while time.cpu_s < target_cpu_s() || totals.seeds < 3 {
        let (part, elapsed) = leasesim_batch(&spec, first, batch);
        totals.seeds += part.seeds;
        totals.events += part.events;
        totals.steps += part.steps;
        totals.failed += part.failed;
        time += elapsed;
        first += batch;
    }
    Row {
        value,
        totals,
        time,
        deleted: None,
    }
}

/// `base` (a builtin scenario of `S`) with `overrides` (`key = value` in TOML) written in.
fn overridden<S: System + leasesim::Render>(
    base: &str,
    overrides: &[(&str, String)],
) -> Rc<leasesim_sim::Scenario<S>> {
    let scenario = common::builtin_scenario_of::<S>(base);
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
/// `S`, pauses), as the retention tables use (without revocations, a retention fault).
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
) -> Vec<(String, Vec<Row>)> {
    let one = |label: String, overrides: Vec<(String, String)>| {
        let pairs: Vec<(&str, String)> = overrides
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        measure_scenario(label, &overridden::<S>(base, &pairs))
    };
    let mut dimensions = vec![
        (
            format!("{}: replicas", S::NAME),
            [1u64, 2, 4, 8]
                .into_iter()
                .map(|n| {
                    one(
                        format!("{n} replicas"),
                        vec![("replicas".into(), n.to_string())],
                    )
                })
                .collect(),
        ),
        (
            format!("{}: duration", S::NAME),
            [1u64, 5, 15]
                .into_iter()
                .map(|min| {
                    let ms = (min * 60_000).to_string();
                    one(format!("{min} min"), vec![("duration_ms".into(), ms)])
                })
                .collect(),
        ),
        (
            format!("{}: faults", S::NAME),
            [Faults::Off, Faults::Light, Faults::Medium, Faults::Heavy]
                .into_iter()
                .map(|f| one(format!("{f:?}").to_lowercase(), fault_overrides::<S>(f)))
                .collect(),
        ),
    ];
    if let Some((key, values)) = size {
        let rows = values
            .iter()
            .map(|v| {
                one(
                    format!("{key} = {v}"),
                    vec![(key.to_string(), v.to_string())],
                )
            })
            .collect();
        dimensions.push((format!("{}: {key}", S::NAME), rows));
    }
    dimensions
}

fn print_table(title: &str, rows: &[Row]) {
    println!("### {title}");
    println!();
    println!(
        "| value | seeds | seeds/s | events/seed | events/s | µs/event | steps/seed | failing | rows deleted (seed 0) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in rows {
        let t = row.totals;
        let seeds = t.seeds as f64;
        println!(
            "| {} | {} | {:.1} | {:.0} | {:.0} | {:.3} | {:.0} | {} | {} |",
            row.value,
            t.seeds,
            seeds / row.time.cpu_s,
            t.events as f64 / seeds,
            t.events as f64 / row.time.cpu_s,
            row.us_per_event(),
            t.steps as f64 / seeds,
            t.failed,
            row.deleted
                .map_or_else(|| "-".to_string(), |(done, of)| format!("{done} of {of}")),
        );
    }
    println!();
}

/// The largest deviation of µs/event from the dimension's median, as (low, high) fractions.
fn spread(rows: &[Row]) -> (f64, f64) {
    let mut costs: Vec<f64> = rows.iter().map(Row::us_per_event).collect();
    let mid = common::median(&mut costs);
    let low = costs.iter().copied().fold(f64::INFINITY, f64::min) / mid - 1.0;
    let high = costs.iter().copied().fold(0.0, f64::max) / mid - 1.0;
    (low, high)
}

/// Retention's dimensions: rows, replicas, virtual duration and fault density, one at a time.
fn retention_dimensions() -> Vec<(String, Vec<Row>)> {
    vec![
        (
            "rows".to_string(),
            [1_000u64, 10_000, 100_000]
                .into_iter()
                .map(|rows| measure(format!("{rows} rows"), Config { rows, ..BASELINE }))
                .collect(),
        ),
        (
            "replicas".to_string(),
            [1u16, 2, 4, 8, 16]
                .into_iter()
                .map(|replicas| {
                    measure(
                        format!("{replicas} replicas"),
                        Config {
                            replicas,
                            ..BASELINE
                        },
                    )
                })
                .collect(),
        ),
        (
            "duration".to_string(),
            [1u64, 5, 15, 60]
                .into_iter()
                .map(|duration_min| {
                    measure(
                        format!("{duration_min} min"),
                        Config {
                            duration_min,
                            ..BASELINE
                        },
                    )
                })
                .collect(),
        ),
        (
            "faults".to_string(),
            [Faults::Off, Faults::Light, Faults::Medium, Faults::Heavy]
                .into_iter()
                .map(|faults| measure(faults.label(), Config { faults, ..BASELINE }))
                .collect(),
        ),
    ]
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is accepted and ignored.
    println!(
        "leasesim scaling, single thread, runner::run (all checkers), CPU time of this thread"
    );
    println!(
        "baseline: {} replicas, {} min safety + 10 s liveness, {} rows, faults off; cap 4 rows/term",
        BASELINE.replicas, BASELINE.duration_min, BASELINE.rows
    );
    println!();
    let mut dimensions = retention_dimensions();
    dimensions.extend(system_dimensions::<HolderLock>("holder-steady", None));
    dimensions.extend(system_dimensions::<Reservations>(
        "expiry-steady",
        Some(("agents.backlog", &[10, 100, 1_000])),
    ));
    dimensions.extend(system_dimensions::<WorkItems>(
        "items-steady",
        Some(("items.count", &[10, 40, 160])),
    ));
    for (name, rows) in &dimensions {
        print_table(name, rows);
    }
    let verdicts: Vec<String> = dimensions
        .iter()
        .map(|(name, rows)| {
            let (low, high) = spread(rows);
            let within = low >= -0.30 && high <= 0.30;
            format!(
                "{name} {} ({:+.0}%..{:+.0}%)",
                if within { "yes" } else { "NO" },
                low * 100.0,
                high * 100.0
            )
        })
        .collect();
    println!(
        "cost per event within ±30% of each dimension's median: {}",
        verdicts.join(", ")
    );
}
