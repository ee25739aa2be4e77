//! `leasesim real` for the reservations system (SQLite, PostgreSQL): the same loop, header,
//! verdict, counts and coverage lines as retention's.
//!
//! Terminology:
//! - *run line*: one run's verdict, counts and coverage, as `print_run` writes retention's.

use leasesim::error::UsageError;
use leasesim_real::RealError;
use leasesim_real::phases::ProcessFaults;
use leasesim_real::reservations;

use super::{RealArgs, StoreKind, check_worker, coverage_line, print_summary, remove_sqlite};

/// What one run printed and whether it broke an invariant (its name).
type Judged = Result<Option<String>, UsageError>;

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

/// `leasesim real --system reservations`.
pub(super) fn reservations(args: &RealArgs, store: StoreKind) -> Result<i32, UsageError> {
    check_worker(&args.worker, &reservations::workers())?;
    let (target, scratch) = super::target(args, store)?;
    let settings = reservations::RealSettings::default();
    let store_name = super::store_name(store);
    header(args, &store_name, &described(&settings), &settings.process);
    let code = repeat(args, |seed, keep_events| {
        let config = reservations::RealConfig {
            target: target.clone(),
            worker: args.worker.clone(),
            replicas: args.replicas(),
            duration_ms: args.duration(),
            liveness_ms: args.liveness(),
            seed,
            settings: settings.clone(),
            keep_events,
        };
        let report = reservations::run(&config).map_err(|e| run_error(e, &store_name))?;
        let s = &report.stats;
        let counts = format!(
            "{} events, {} calls, {} holds placed, {} consumed, {} claimed, {} expired, {} dead \
             letters, {} refused, {} pauses, {} stops, {} store errors ({:.1} s)",
            s.events,
            s.calls,
            s.placed,
            s.consumed,
            s.claimed,
            s.expired,
            s.dead_letters,
            s.refused,
            s.pauses,
            s.stops,
            s.store_errors,
            s.wall_ms as f64 / 1000.0
        );
        let coverage = coverage_line(report.coverage);
        verdict(args, seed, &report.verdict_line(), &counts, &coverage);
        if let Some(error) = &s.last_store_error {
            println!("  last store error: {error}");
        }
        if keep_events {
            trace::<leasesim_reservations::Reservations>(&report.events, &report.violation);
        }
        Ok(report.violation.map(|v| v.invariant.to_string()))
    });
    if let Some(path) = scratch {
        remove_sqlite(&path);
    }
    code
}

/// The reservations run's settings in one line.
fn described(settings: &reservations::RealSettings) -> String {
    let w = &settings.worker;
    format!(
        "batch {}, claim {}ms, idle {}+{}ms, retry {}..{}ms x{}; agents place every {}..{}ms, \
         holds {}..{}ms, consume p={} (at the deadline {}), malformed p={}; latency {}..{}ms; \
         skew up to {}ms; second run p={}; calls {}",
        w.batch_size,
        w.claim_for_ms,
        w.idle_ms,
        w.idle_jitter_ms,
        w.retry.initial_backoff_ms,
        w.retry.max_backoff_ms,
        w.retry.max_attempts,
        settings.place_every.min,
        settings.place_every.max,
        settings.hold_for.min,
        settings.hold_for.max,
        settings.consume_probability,
        settings.at_deadline,
        settings.malformed,
        settings.latency.min,
        settings.latency.max,
        settings.skew_ms,
        settings.second_run_probability,
        settings.net
    )
}

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
