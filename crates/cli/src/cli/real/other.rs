//! `leasesim real` for the holder-lock system (Redis), the one left on a legacy real-run
//! module: its loop over seeds, header, verdict, counts and coverage lines.
//!
//! Terminology:
//! - *run line*: one run's verdict, counts and coverage.

use leasesim::error::UsageError;
#[cfg(feature = "redis")]
use leasesim_real::RealError;
#[cfg(feature = "redis")]
use leasesim_real::phases::ProcessFaults;

use super::{RealArgs, check_worker};
#[cfg(feature = "redis")]
use super::{coverage_line, print_summary};

#[cfg(feature = "redis")]
/// What one run printed and whether it broke an invariant (its name).
type Judged = Result<Option<String>, UsageError>;

#[cfg(feature = "redis")]
/// Runs seeds `SEED..SEED+RUNS` with `one` (given the seed and whether to keep a trace) and
/// prints the summary; the exit code.
fn repeat(args: &RealArgs, mut one: impl FnMut(u64, bool) -> Judged) -> Result<i32, UsageError> {
    let mut caught = Vec::new();
    for seed in args.seed..args.seed + args.runs {
        let keep = args.trace && seed + 1 == args.seed + args.runs;
        if let Some(invariant) = one(seed, keep)? {
            caught.push(invariant);
        }
    }
    if args.runs > 1 {
        print_summary(args, &caught);
    }
    Ok(i32::from(!caught.is_empty()))
}

#[cfg(feature = "redis")]
fn header(args: &RealArgs, store: &str, settings: &str, faults: &ProcessFaults) {
    println!("system:   {}", args.system);
    println!("store:    {store}");
    println!("worker:   {}", args.worker);
    let more = match args.runs > 1 {
        true => format!(" (+{} more runs)", args.runs - 1),
        false => String::new(),
    };
    println!(
        "run:      {} replicas; safety {}ms, liveness {}ms; seed {}{more}",
        args.replicas(),
        args.duration(),
        args.liveness(),
        args.seed
    );
    println!("settings: {settings}");
    println!("faults:   {faults}");
}

#[cfg(feature = "redis")]
fn verdict(args: &RealArgs, seed: u64, line: &str, counts: &str, coverage: &str) {
    let prefix = match args.runs > 1 {
        true => {
            println!("seed {seed}: {line}");
            "  "
        }
        false => {
            println!("verdict:  {line}");
            ""
        }
    };
    println!("{prefix}counts:   {counts}");
    println!("{prefix}coverage: {coverage}");
}

#[cfg(feature = "redis")]
fn run_error(error: RealError, store: &str) -> UsageError {
    let (flag, given) = match &error {
        RealError::Store(_) => ("--store", store.to_string()),
        RealError::UnknownWorker { given, .. } => ("--worker", given.clone()),
        RealError::BadConfig(_) => ("--system", "settings".to_string()),
    };
    UsageError::BadValue {
        flag,
        given,
        why: error.to_string(),
    }
}

#[cfg(feature = "redis")]
fn trace<S: leasesim_sim::System + leasesim_timeline::Render>(
    events: &[leasesim_events::Stamped<leasesim_events::Event<S>>],
    violation: &Option<leasesim_invariants::Violation<S>>,
) {
    println!();
    for event in events {
        println!("{}", leasesim::trace::line::<S>(event));
    }
    if let Some(violation) = violation {
        println!("                    !! {violation}");
    }
}

/// The Redis server: `--redis-url`, else `LEASESIM_REDIS_URL`.
fn redis_url(args: &RealArgs) -> Result<String, UsageError> {
    let bad = |why: String| UsageError::BadValue {
        flag: "--store",
        given: "redis".into(),
        why,
    };
    if !cfg!(feature = "redis") {
        return Err(bad(
            "this binary has no Redis client: run `cargo run --release --features redis -- real ...`"
                .into(),
        ));
    }
    let url = args
        .redis_url
        .clone()
        .or_else(|| std::env::var("LEASESIM_REDIS_URL").ok());
    url.ok_or_else(|| {
        bad("no server: give --redis-url or set LEASESIM_REDIS_URL (e.g. `redis://127.0.0.1:6379/`)".into())
    })
}

/// `leasesim real --system holder-lock` (Redis).
#[cfg(feature = "redis")]
pub(super) fn holder_lock(args: &RealArgs) -> Result<i32, UsageError> {
    use leasesim_real::holder_lock;
    check_worker(&args.worker, &holder_lock::workers())?;
    let url = redis_url(args)?;
    let settings = holder_lock::RealSettings::default();
    let described = format!(
        "lifetime {}ms, renew every {:?}ms; jobs {}..{}ms ({} of them {}..{}ms), a step every \
         {}ms, step failure p={}; latency {}..{}ms; calls {}; the store forgets {}",
        settings.claim.lifetime_ms,
        settings.claim.renew_every_ms,
        settings.job.min,
        settings.job.max,
        settings.long_share,
        settings.long_job.min,
        settings.long_job.max,
        settings.step_ms,
        settings.job_fail,
        settings.latency.min,
        settings.latency.max,
        settings.net,
        settings.forgetting
    );
    let store = "redis (a fresh namespace per run)";
    header(args, store, &described, &settings.process);
    repeat(args, |seed, keep_events| {
        let config = holder_lock::RealConfig {
            url: url.clone(),
            worker: args.worker.clone(),
            replicas: args.replicas(),
            duration_ms: args.duration(),
            liveness_ms: args.liveness(),
            seed,
            settings: settings.clone(),
            keep_events,
        };
        let report = holder_lock::run(&config).map_err(|e| run_error(e, "redis"))?;
        let s = &report.stats;
        let counts = format!(
            "{} events, {} calls, {} attempts, {} claims won, {} jobs, {} steps, {} releases \
             found the claim gone, {} pauses, {} stops, {} store errors ({:.1} s)",
            s.events,
            s.calls,
            s.attempts,
            s.claims,
            s.jobs,
            s.steps,
            s.found_gone,
            s.pauses,
            s.stops,
            s.store_errors,
            s.wall_ms as f64 / 1000.0
        );
        let coverage = coverage_line(report.coverage);
        verdict(args, seed, &report.verdict_line(), &counts, &coverage);
        if keep_events {
            trace::<leasesim_holder_lock::HolderLock>(&report.events, &report.violation);
        }
        Ok(report.violation.map(|v| v.invariant.to_string()))
    })
}

/// Without the Redis client: refused as bad input.
#[cfg(not(feature = "redis"))]
pub(super) fn holder_lock(args: &RealArgs) -> Result<i32, UsageError> {
    check_worker(&args.worker, &holder_lock_workers())?;
    redis_url(args).map(|_| 2)
}

/// The holder-lock workers, from the system's catalogue (no Redis client needed).
#[cfg(not(feature = "redis"))]
fn holder_lock_workers() -> Vec<&'static str> {
    std::iter::once("correct")
        .chain(
            leasesim_holder_lock::defects::DEFECTS
                .iter()
                .map(|d| d.info.name),
        )
        .collect()
}
