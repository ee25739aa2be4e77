//! `leasesim real`: a system's production worker on tokio against a real store, judged by the
//! system's checkers.
//!
//! Terminology:
//! - *store kind*: `sqlite` (a file; no server), `postgres` (a server: `--pg-url` or
//!   `LEASESIM_PG_URL`; the binary needs the feature `postgres`), `redis` (a server:
//!   `--redis-url` or `LEASESIM_REDIS_URL`; the feature `redis`). Each system has its stores
//!   ([`STORES`]): retention and reservations on SQL, the holder-lock claim on Redis.
//! - *runs*: `--runs N` repeats the run with seeds `S..S+N` and counts verdicts, to say how
//!   often a defective worker's bug shows in real time.
//!
//! Exit codes: 0 every run passed, 1 a run broke an invariant, 2 bad input.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use leasesim::catalog;
use leasesim::error::{UsageError, parse_duration_ms, parse_seed};
use leasesim_invariants::{SituationName, SituationSet};
use leasesim_real::remove_sqlite;
use leasesim_real::retention::{
    self, RealConfig, RealError, RealReport, RealSettings, StoreTarget,
};
use leasesim_retention::Retention;
use leasesim_retention::checkers::Situation;

/// The systems that have a real-run module, and the stores each one runs on.
const STORES: &[(&str, &[StoreKind])] = &[
    ("retention", &[StoreKind::Sqlite, StoreKind::Postgres]),
    ("reservations", &[StoreKind::Sqlite, StoreKind::Postgres]),
    ("holder-lock", &[StoreKind::Redis]),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StoreKind {
    Sqlite,
    Postgres,
    Redis,
}

#[derive(Args, Debug)]
pub struct RealArgs {
    /// The system whose worker runs.
    #[arg(long, default_value = "retention")]
    system: String,
    /// The store the replicas share (default: the system's first: sqlite, or redis for
    /// holder-lock).
    #[arg(long, value_enum)]
    store: Option<StoreKind>,
    /// The worker: `correct` or a defective worker of the system.
    #[arg(long, default_value = "correct")]
    worker: String,
    /// The scenario of a system that runs on the shared world (work-items): its faults,
    /// phases and settings, with --duration, --liveness and --replicas written over it
    /// (default: the system's steady scenario, e.g. `items-steady`).
    #[arg(long)]
    scenario: Option<String>,
    /// Replicas, each a worker with connections of its own [default: 3, or the scenario's].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=64))]
    replicas: Option<u16>,
    /// The safety phase (pauses and stops injected), e.g. 20s [default: 20s, or the
    /// scenario's].
    #[arg(long, value_parser = parse_duration_ms)]
    duration: Option<u64>,
    /// The liveness phase after it (faults healed; the backlog must drain) [default: 5s, or
    /// the scenario's].
    #[arg(long, value_parser = parse_duration_ms)]
    liveness: Option<u64>,
    /// Seeds the fault plan (decimal or 0x-hex).
    #[arg(long, default_value = "0", value_parser = parse_seed)]
    seed: u64,
    /// Runs, with seeds SEED, SEED+1, ...
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1000))]
    runs: u64,
    /// The SQLite file to create; default: a file in the temporary directory, removed after.
    /// An existing file is refused unless --replace-db is given (the run deletes it).
    #[arg(long)]
    db: Option<PathBuf>,
    /// Let --db name an existing file: the run deletes it and creates a fresh store.
    #[arg(long, requires = "db")]
    replace_db: bool,
    /// The PostgreSQL server (default: $LEASESIM_PG_URL).
    #[arg(long)]
    pg_url: Option<String>,
    /// The Redis server (default: $LEASESIM_REDIS_URL).
    #[arg(long)]
    redis_url: Option<String>,
    /// Print every event of the (last) run.
    #[arg(long)]
    trace: bool,
}

impl RealArgs {
    /// The replicas of a real run with settings of its own.
    fn replicas(&self) -> u16 {
        self.replicas.unwrap_or(3)
    }

    /// The safety phase of a real run with settings of its own.
    fn duration(&self) -> u64 {
        self.duration.unwrap_or(20_000)
    }

    /// The liveness phase of a real run with settings of its own.
    fn liveness(&self) -> u64 {
        self.liveness.unwrap_or(5_000)
    }
}

/// Runs `leasesim real`; the exit code.
pub fn real_command(args: RealArgs) -> Result<i32, UsageError> {
    catalog::check_system(&args.system)?;
    if let Some(duration) = args.duration.filter(|&ms| ms < 100) {
        return Err(UsageError::BadValue {
            flag: "--duration",
            given: format!("{duration}ms"),
            why: "a real run's safety phase lasts at least 100ms".into(),
        });
    }
    if let Some(entry) = leasesim::registry::installed().real_store(&args.system) {
        return world::real_on_world(&args, entry);
    }
    if let Some(scenario) = &args.scenario {
        return Err(UsageError::BadValue {
            flag: "--scenario",
            given: scenario.clone(),
            why: format!(
                "the {} system's real run has settings of its own, not a scenario's",
                args.system
            ),
        });
    }
    let store = check_store(&args)?;
    match args.system.as_str() {
        "reservations" => return other::reservations(&args, store),
        "holder-lock" => return other::holder_lock(&args),
        _ => {}
    }
    check_worker(&args.worker, &retention::workers())?;
    let (target, scratch) = target(&args, store)?;
    let runs = retention_runs(&args, &target);
    // The scratch file goes whether the runs ended or one could not start.
    if let Some(path) = scratch {
        remove_sqlite(&path);
    }
    let (caught, last) = runs?;
    if args.trace {
        print_trace(&last);
    }
    if args.runs > 1 {
        print_summary(&args, &caught);
    }
    Ok(i32::from(!caught.is_empty()))
}

/// The retention runs of `args` on `target`: the invariants they broke, and the last report.
fn retention_runs(
    args: &RealArgs,
    target: &StoreTarget,
) -> Result<(Vec<String>, RealReport), UsageError> {
    let mut caught = Vec::new();
    let mut last = None;
    for seed in args.seed..args.seed + args.runs {
        let config = RealConfig {
            target: target.clone(),
            worker: args.worker.clone(),
            replicas: args.replicas(),
            duration_ms: args.duration(),
            liveness_ms: args.liveness(),
            seed,
            settings: RealSettings::default(),
            keep_events: args.trace && seed + 1 == args.seed + args.runs,
        };
        if seed == args.seed {
            print_header(&config, args);
        }
        let report = retention::run(&config).map_err(|error| run_error(error, target))?;
        print_run(seed, &report, args.runs > 1);
        if let Some(violation) = &report.violation {
            caught.push(violation.invariant.to_string());
        }
        last = Some(report);
    }
    Ok((caught, last.expect("at least one run")))
}

/// A run that could not start, as bad input: the store could not be set up (unreachable
/// server, unwritable file), or the run's settings were refused.
fn run_error(error: RealError, target: &StoreTarget) -> UsageError {
    let (flag, given) = match &error {
        RealError::Store(_) => ("--store", target.kind().to_string()),
        RealError::UnknownWorker { given, .. } => ("--worker", given.clone()),
        RealError::BadConfig(_) => ("--system", "retention".to_string()),
    };
    UsageError::BadValue {
        flag,
        given,
        why: error.to_string(),
    }
}

/// The store the run uses: the one asked for, if the system has an adapter on it.
fn check_store(args: &RealArgs) -> Result<StoreKind, UsageError> {
    let system = args.system.as_str();
    let Some((_, stores)) = STORES.iter().find(|(name, _)| *name == system) else {
        let mut known: Vec<&str> = STORES.iter().map(|(name, _)| *name).collect();
        let registry = leasesim::registry::installed();
        known.extend(
            registry
                .systems()
                .iter()
                .map(|system| system.name())
                .filter(|name| registry.real_store(name).is_some()),
        );
        return Err(UsageError::BadValue {
            flag: "--system",
            given: args.system.clone(),
            why: format!(
                "no real-run adapter yet; real runs exist for: {}",
                known.join(", ")
            ),
        });
    };
    let store = args.store.unwrap_or(stores[0]);
    if stores.contains(&store) {
        return Ok(store);
    }
    let names: Vec<String> = stores.iter().map(|s| store_name(*s)).collect();
    Err(UsageError::BadValue {
        flag: "--store",
        given: store_name(store),
        why: format!(
            "the {system} system's real stores are: {}",
            names.join(", ")
        ),
    })
}

fn store_name(store: StoreKind) -> String {
    format!("{store:?}").to_lowercase()
}

fn check_worker(name: &str, known: &[&str]) -> Result<(), UsageError> {
    match known.contains(&name) {
        true => Ok(()),
        false => Err(UsageError::UnknownName {
            what: "worker",
            given: name.to_string(),
            valid: known.iter().map(ToString::to_string).collect(),
        }),
    }
}

/// Where the store is, and the scratch SQLite file to remove afterwards (if one was made).
fn target(args: &RealArgs, store: StoreKind) -> Result<(StoreTarget, Option<PathBuf>), UsageError> {
    let bad = |why: String| UsageError::BadValue {
        flag: "--store",
        given: store_name(store),
        why,
    };
    match store {
        StoreKind::Sqlite => {
            let scratch = std::env::temp_dir()
                .join(format!("leasesim-real-{}.db", std::process::id()));
            if let Some(db) = args.db.as_ref().filter(|db| db.exists() && !args.replace_db) {
                return Err(UsageError::BadValue {
                    flag: "--db",
                    given: db.display().to_string(),
                    why: "the file exists and a real run would delete it: name a new file, or \
                          add --replace-db"
                        .into(),
                });
            }
            let path = args.db.clone().unwrap_or_else(|| scratch.clone());
            let made = args.db.is_none().then_some(scratch);
            Ok((StoreTarget::Sqlite { path }, made))
        }
        StoreKind::Postgres if !cfg!(feature = "postgres") => Err(bad(
            "this binary has no PostgreSQL client: run `cargo run --release --features postgres -- real ...`"
                .into(),
        )),
        StoreKind::Postgres => {
            let url = args.pg_url.clone().or_else(|| std::env::var("LEASESIM_PG_URL").ok());
            let url = url.ok_or_else(|| {
                bad("no server: give --pg-url or set LEASESIM_PG_URL (e.g. `host=localhost user=postgres password=...`)".into())
            })?;
            let schema = format!("leasesim_real_{}", std::process::id());
            Ok((StoreTarget::Postgres { url, schema }, None))
        }
        StoreKind::Redis => Err(bad(format!(
            "Redis holds the holder-lock system's claims; the {} system's store is sqlite or postgres",
            args.system
        ))),
    }
}

fn print_header(config: &RealConfig, args: &RealArgs) {
    let s = &config.settings;
    let store = match &config.target {
        StoreTarget::Sqlite { path } => format!("sqlite ({})", path.display()),
        StoreTarget::Postgres { schema, .. } => format!("postgres (schema {schema})"),
    };
    println!("system:   {}", args.system);
    println!("store:    {store}");
    println!("worker:   {}", config.worker);
    println!(
        "run:      {} replicas; safety {}ms, liveness {}ms; seed {}{}",
        config.replicas,
        config.duration_ms,
        config.liveness_ms,
        config.seed,
        if args.runs > 1 {
            format!(" (+{} more runs)", args.runs - 1)
        } else {
            String::new()
        }
    );
    println!(
        "settings: lease {}ms, renew every {}ms, batch {}, cap {}, retention {}ms, {} rows",
        s.worker.lease_ttl_ms,
        s.worker.renew_every_ms,
        s.worker.batch_rows,
        s.worker.cap_rows,
        s.worker.retention_ms,
        s.rows
    );
    println!(
        "faults:   {}; latency lease {}..{}ms, delete {}..{}ms each way",
        s.process,
        s.lease_latency.min,
        s.lease_latency.max,
        s.delete_latency.min,
        s.delete_latency.max
    );
    println!("calls:    {}", s.net);
}

fn print_run(seed: u64, report: &RealReport, several: bool) {
    let stats = &report.stats;
    if several {
        println!("seed {seed}: {}", report.verdict_line());
    } else {
        println!("verdict:  {}", report.verdict_line());
    }
    let counts = format!(
        "{} events, {} calls, {} terms, {} rows deleted, {} stale deletes refused, {} pauses, \
         {} stops, {} store errors ({:.1} s)",
        stats.events,
        stats.calls,
        stats.terms,
        stats.rows_deleted,
        stats.stale_refused,
        stats.pauses,
        stats.stops,
        stats.store_errors,
        stats.wall_ms as f64 / 1000.0
    );
    let prefix = if several { "  " } else { "" };
    println!("{prefix}counts:   {counts}");
    println!(
        "{prefix}coverage: {}",
        coverage_line::<Situation>(report.coverage)
    );
    if let Some(error) = &stats.last_store_error {
        println!("{prefix}last store error: {error}");
    }
}

fn print_trace(report: &RealReport) {
    println!();
    for event in &report.events {
        println!("{}", leasesim::trace::line::<Retention>(event));
    }
    if let Some(violation) = &report.violation {
        println!("                    !! {violation}");
    }
}

fn print_summary(args: &RealArgs, caught: &[String]) {
    let mut names: Vec<&str> = caught.iter().map(String::as_str).collect();
    names.sort_unstable();
    names.dedup();
    println!(
        "{} of {} runs broke an invariant{}",
        caught.len(),
        args.runs,
        if names.is_empty() {
            String::new()
        } else {
            format!(" ({})", names.join(", "))
        }
    );
}

/// `reached N of M: a, b; not reached: c` for any system's situations.
fn coverage_line<S: SituationName>(coverage: SituationSet<S>) -> String {
    let (reached, missed): (Vec<S>, Vec<S>) = S::ALL
        .iter()
        .partition(|&&situation| coverage.contains(situation));
    let names = |list: &[S]| list.iter().map(|s| s.name()).collect::<Vec<_>>().join(", ");
    format!(
        "reached {} of {}: {}; not reached: {}",
        reached.len(),
        S::ALL.len(),
        names(&reached),
        names(&missed)
    )
}

mod other;
mod world;
