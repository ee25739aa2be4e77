//! `leasesim real` for a system that runs on the shared world (its entry in the registry's
//! real stores): a scenario's faults, phases and checkers in real time, on a real store.
//!
//! Terminology:
//! - *scenario*: `--scenario NAME` (default: the entry's own, e.g. `items-steady`), with `--duration`,
//!   `--liveness` and `--replicas` written over its keys as `--set` would.
//! - *preflight*: the scenario must pass the correct worker in simulation first
//!   ([`leasesim::real_world::PREFLIGHT_SEEDS`] seeds), or the real run is refused.

use std::sync::Arc;

use leasesim::catalog;
use leasesim::error::UsageError;
use leasesim::overrides::{self, Overrides};
use leasesim::real_world::{RealOutcome, RealRequest, RealStore, StoreKind as Kind};
use leasesim::systems::AnyScenario;

use super::{RealArgs, StoreKind, print_summary, remove_sqlite, target};

/// Runs the seeds of `args` on the system's real store entry; the exit code.
pub fn real_on_world(args: &RealArgs, entry: &RealStore) -> Result<i32, UsageError> {
    let store = store_of(args, entry)?;
    let scenario = scenario_of(args, entry)?;
    let workers: Vec<String> = scenario
        .system()
        .workers()
        .iter()
        .map(|w| w.name.to_string())
        .collect();
    if !workers.contains(&args.worker) {
        return Err(UsageError::UnknownName {
            what: "worker",
            given: args.worker.clone(),
            valid: workers,
        });
    }
    let end = args
        .seed
        .checked_add(args.runs)
        .ok_or_else(|| UsageError::BadValue {
            flag: "--seed",
            given: args.seed.to_string(),
            why: format!("{} runs from it would pass the last seed", args.runs),
        })?;
    let (target, scratch) = target(args, store)?;
    (entry.preflight)(scenario.as_ref())?;
    print_header(args, scenario.as_ref(), &target);
    let mut caught = Vec::new();
    let mut outcome = Ok(());
    for seed in args.seed..end {
        let request = RealRequest {
            scenario: scenario.clone(),
            worker: args.worker.clone(),
            target: target.clone(),
            seed,
            keep_events: args.trace && seed + 1 == end,
        };
        match (entry.run)(&request) {
            Ok(run) => {
                print_run(args, seed, &run);
                if run.failed {
                    caught.push(run.cause());
                }
            }
            Err(error) => {
                outcome = Err(error);
                break;
            }
        }
    }
    // The scratch file goes whether the runs ended or one could not start.
    if let Some(path) = scratch {
        remove_sqlite(&path);
    }
    outcome?;
    if args.runs > 1 {
        print_summary(args, &caught);
    }
    Ok(i32::from(!caught.is_empty()))
}

/// The store kind asked for (default: the entry's first), if the system's hook opens it.
fn store_of(args: &RealArgs, entry: &RealStore) -> Result<StoreKind, UsageError> {
    let kind = |store: StoreKind| match store {
        StoreKind::Sqlite => Kind::Sqlite,
        StoreKind::Postgres => Kind::Postgres,
        StoreKind::Redis => Kind::Redis,
    };
    let default = match entry.kinds.first() {
        Some(Kind::Postgres) => StoreKind::Postgres,
        Some(Kind::Redis) => StoreKind::Redis,
        _ => StoreKind::Sqlite,
    };
    let store = args.store.unwrap_or(default);
    if entry.kinds.contains(&kind(store)) {
        return Ok(store);
    }
    let names: Vec<&str> = entry.kinds.iter().map(|k| k.name()).collect();
    Err(UsageError::BadValue {
        flag: "--store",
        given: kind(store).name().to_string(),
        why: format!(
            "the {} system's real stores are: {}",
            entry.system,
            names.join(", ")
        ),
    })
}

/// The scenario of the run, with the phases and replicas given on the command line.
fn scenario_of(args: &RealArgs, entry: &RealStore) -> Result<Arc<dyn AnyScenario>, UsageError> {
    let name = args
        .scenario
        .as_deref()
        .unwrap_or(entry.scenario)
        .to_string();
    let scenario = catalog::resolve_one(&name)?;
    if scenario.system().name() != args.system {
        return Err(UsageError::BadValue {
            flag: "--scenario",
            given: name,
            why: format!(
                "it is a `{}` scenario, not a `{}` one",
                scenario.system().name(),
                args.system
            ),
        });
    }
    let mut overrides = Overrides::default();
    let given = [
        ("duration_ms", args.duration),
        ("liveness_ms", args.liveness),
        ("replicas", args.replicas.map(u64::from)),
    ];
    for (key, value) in given {
        if let Some(value) = value {
            let set = overrides::parse(&format!("{key}={value}"))
                .expect("a key and a whole number make an override");
            overrides.set(&set.key, set.value);
        }
    }
    scenario
        .with_overrides(&overrides)
        .map_err(|(key, why)| UsageError::BadValue {
            flag: flag_of(&key),
            given: overrides
                .get(&key)
                .map_or_else(String::new, ToString::to_string),
            why,
        })
}

/// The flag that set a scenario key.
fn flag_of(key: &str) -> &'static str {
    match key {
        "duration_ms" => "--duration",
        "liveness_ms" => "--liveness",
        "replicas" => "--replicas",
        _ => "--scenario",
    }
}

fn print_header(args: &RealArgs, scenario: &dyn AnyScenario, target: &leasesim_real::StoreTarget) {
    let store = match target {
        leasesim_real::StoreTarget::Sqlite { path } => format!("sqlite ({})", path.display()),
        leasesim_real::StoreTarget::Postgres { schema, .. } => {
            format!("postgres (schema {schema})")
        }
        leasesim_real::StoreTarget::Redis { prefix, .. } => format!("redis (namespace {prefix})"),
    };
    let more = match args.runs > 1 {
        true => format!(" (+{} more runs)", args.runs - 1),
        false => String::new(),
    };
    println!("system:   {}", args.system);
    println!("store:    {store}");
    println!("worker:   {}", args.worker);
    println!(
        "scenario: {} ({} replicas)",
        scenario.name(),
        scenario.replicas()
    );
    println!(
        "run:      seed {}{more}; faults, latencies and phases as the scenario draws them",
        args.seed
    );
}

fn print_run(args: &RealArgs, seed: u64, run: &RealOutcome) {
    let several = args.runs > 1;
    match several {
        true => println!("seed {seed}: {}", run.verdict),
        false => println!("verdict:  {}", run.verdict),
    }
    let prefix = if several { "  " } else { "" };
    let tally = &run.tally;
    println!(
        "{prefix}counts:   {} events, {} store calls answered, {} refused, {} of unknown outcome \
         ({:.1} s)",
        run.events,
        tally.answered,
        tally.refused,
        tally.unknown,
        run.end_ms as f64 / 1000.0
    );
    println!(
        "{prefix}coverage: reached {} of {}: {}; not reached: {}",
        run.reached.len(),
        run.reached.len() + run.missed.len(),
        run.reached.join(", "),
        run.missed.join(", ")
    );
    for violation in &run.observed {
        println!(
            "{prefix}observed: {violation} (expected by the scenario, or an exact instant real time cannot keep)"
        );
    }
    if tally.skewed > 0 {
        println!(
            "{prefix}clock:    {} answers matched the model only at an instant shifted within \
             the clock margin (the store ends lifetimes on its own clock)",
            tally.skewed
        );
    }
    if let Some(divergence) = &tally.divergence {
        println!("{prefix}STORE DIVERGES FROM THE MODEL: {divergence}");
    }
    if let Some(error) = &tally.last_error {
        println!("{prefix}last store error: {error}");
    }
    if run.trace.is_empty() {
        return;
    }
    println!();
    for line in &run.trace {
        println!("{line}");
    }
    if run.failed {
        println!("                    !! {}", run.verdict);
    }
}
