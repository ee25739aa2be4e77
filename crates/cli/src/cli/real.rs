//! `leasesim real`: a system's production worker on tokio, in real time, against a real store,
//! inside the simulated world and judged by the system's checkers.
//!
//! Terminology:
//! - *store kind*: `sqlite` (a file; no server), `postgres` (a server: `--pg-url` or
//!   `LEASESIM_PG_URL`; the binary needs the feature `postgres`), `redis` (a server:
//!   `--redis-url` or `LEASESIM_REDIS_URL`; the feature `redis`). Each system lists its stores
//!   in its real store entry of the registry (retention, work-items and reservations on SQL,
//!   the holder-lock claim on Redis).
//! - *runs*: `--runs N` repeats the run with seeds `S..S+N` and counts verdicts, to say how
//!   often a defective worker's bug shows in real time.
//!
//! Exit codes: 0 every run passed, 1 a run failed (an invariant broke, the store diverged from
//! the model, a task panicked, the run was cut off), 2 bad input.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use leasesim::catalog;
use leasesim::error::{UsageError, parse_duration_ms, parse_seed};
use leasesim_real::StoreTarget;
use leasesim_real::remove_sqlite;

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
    /// The scenario whose faults, phases and settings the run takes, with --duration,
    /// --liveness and --replicas written over it (default: the system's steady scenario,
    /// e.g. `steady`, `items-steady`).
    #[arg(long)]
    scenario: Option<String>,
    /// Replicas, each a worker with connections of its own [default: the scenario's].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=64))]
    replicas: Option<u16>,
    /// The safety phase (faults on), e.g. 5s [default: the scenario's].
    #[arg(long, value_parser = parse_duration_ms)]
    duration: Option<u64>,
    /// The liveness phase after it (faults healed; the backlog must drain) [default: the
    /// scenario's].
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
    let registry = leasesim::registry::installed();
    let Some(entry) = registry.real_store(&args.system) else {
        let known: Vec<&str> = registry
            .systems()
            .iter()
            .map(|system| system.name())
            .filter(|name| registry.real_store(name).is_some())
            .collect();
        return Err(UsageError::BadValue {
            flag: "--system",
            given: args.system.clone(),
            why: format!(
                "no real store is registered for it; real runs exist for: {}",
                known.join(", ")
            ),
        });
    };
    world::real_on_world(&args, entry)
}

fn store_name(store: StoreKind) -> String {
    format!("{store:?}").to_lowercase()
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
        StoreKind::Redis if !cfg!(feature = "redis") => Err(bad(
            "this binary has no Redis client: run `cargo run --release --features redis -- real ...`"
                .into(),
        )),
        StoreKind::Redis => {
            let url = args
                .redis_url
                .clone()
                .or_else(|| std::env::var("LEASESIM_REDIS_URL").ok());
            let url = url.ok_or_else(|| {
                bad("no server: give --redis-url or set LEASESIM_REDIS_URL (e.g. `redis://127.0.0.1:6379/`)".into())
            })?;
            let prefix = format!("leasesim:real:{}:", std::process::id());
            Ok((StoreTarget::Redis { url, prefix }, None))
        }
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

mod world;
