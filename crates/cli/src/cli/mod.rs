//! The command line: argument parsing, output, exit codes.
//!
//! Terminology:
//! - *replay line*: `leasesim replay --scenario NAME --seed S --worker NAME`, printed for
//!   every failing seed, exactly in this form (a non-default strategy is appended as
//!   `--strategy S`), so scripts can collect them.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::io::{IsTerminal, Write as _};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use leasesim::catalog::{self, check_worker, replay_line, scenario_ref};
use leasesim::error::{UsageError, parse_count, parse_duration_ms, parse_seed, parse_shard};
use leasesim::faildb::{self, Entry, FailureDb};
use leasesim::fuzz::{
    Finding, Progress, ScenarioCampaign, ScenarioSummary, SeedPlan, run_campaign,
};
use leasesim::systems::{AnyRunner, AnyScenario, ShrunkRun};
use leasesim::trace::TraceHeader;
use leasesim::{Strategy, choices};
use leasesim_rt::Feed;

mod detect;
mod envelope;
mod real;
mod report;
mod signals;

#[derive(Parser, Debug)]
#[command(
    name = "leasesim",
    version,
    about = "Deterministic simulation testing for lease-fenced workers"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List the systems, and each one's scenarios, workers, invariants and situations.
    ///
    /// Prints every system with its description; then, per system, its default scenarios
    /// (the names `--scenario` takes, each with what it makes happen), its workers (`correct`
    /// and every defective worker, each with its defect and the invariants that catch it),
    /// its invariants (each with when it holds) and its "sometimes" situations (each with what
    /// it is; a campaign flags the ones it never reached).
    List(ListArgs),
    /// Run many seeds and check every invariant.
    Fuzz(FuzzArgs),
    /// Run one seed (or a choices file) and print its full trace and verdict.
    Replay(ReplayArgs),
    /// Minimise a failing seed's choices while the same invariant still breaks.
    Shrink(ShrinkArgs),
    /// Measure how many seeds the harness needs to catch each defective worker.
    Detect(DetectArgs),
    /// Run a system's worker on tokio against a real store and judge the run.
    Real(real::RealArgs),
    /// Map where a worker's invariants hold as one or two timing settings vary.
    ///
    /// Runs the same seeds at each point of a grid of values of the keys `--vary` names
    /// (every other setting as in the scenario), searching for the boundary between points
    /// where no seed broke an invariant and points where some did instead of running every
    /// point (`--grid` runs them all). Prints a map, each point's share of seeds with its
    /// 95 % interval, how many runs that took against a full grid, and a shrunk
    /// counterexample at the unsafe point nearest the boundary with its replay line.
    Envelope(envelope::EnvelopeArgs),
}

#[derive(Args, Debug)]
struct ListArgs {
    /// Only this system.
    #[arg(long)]
    system: Option<String>,
    /// Print JSON: `{"systems": [{"name", "description", "scenarios": [..], "workers":
    /// [{"name", "defect", "caught_by": [..]}], "invariants": [..], "situations": [..]}]}`.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct DetectArgs {
    /// Only the defective workers of this system.
    #[arg(long)]
    system: Option<String>,
    /// A defective worker, or `all`.
    #[arg(long, default_value = "all")]
    worker: String,
    /// Strategies to measure (repeatable).
    #[arg(long = "strategy", value_parser = parse_strategy, default_values = ["random", "pct:3"])]
    strategies: Vec<Strategy>,
    /// Disjoint seed ranges per worker and strategy (at least 1).
    #[arg(long, default_value = "20", value_parser = parse_count)]
    ranges: u64,
    /// Give up on a range after this many seeds (1 to 1,000,000: ranges start 1,000,000
    /// seeds apart).
    #[arg(long, default_value = "200", value_parser = parse_count)]
    max_seeds: u64,
    /// Parallel jobs (default: every core).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: Option<u64>,
}

/// What every run-making command takes besides its scenario.
#[derive(Args, Debug)]
struct Target {
    /// Only this system's scenarios and workers (for `fuzz`, `--scenario all` then means all of its
    /// builtins).
    #[arg(long)]
    system: Option<String>,
    /// The worker: `correct` or a defective worker (see `leasesim list`).
    #[arg(long, default_value = "correct")]
    worker: String,
    /// Scheduling strategy: random, pct:D (D = depth), or fifo.
    #[arg(long, default_value = "random", value_parser = parse_strategy)]
    strategy: Strategy,
}

#[derive(Args, Debug)]
struct FuzzArgs {
    /// A builtin scenario's name, a path to a scenario file, or `all` (every builtin).
    #[arg(long, default_value = "all")]
    scenario: String,
    #[command(flatten)]
    target: Target,
    /// Seeds per scenario (at least 1).
    #[arg(long, default_value = "1000", value_parser = parse_count, conflicts_with = "duration")]
    seeds: u64,
    /// Run for this long instead of a seed count (e.g. 90s, 10m, 2h), split across scenarios.
    #[arg(long, value_parser = parse_duration_ms)]
    duration: Option<u64>,
    /// The first seed (decimal or 0x-hex).
    #[arg(long, default_value = "0", value_parser = parse_seed, allow_hyphen_values = true)]
    start_seed: u64,
    /// Parallel jobs (default: every core).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: Option<u64>,
    /// Run shard K of N of the seed range (1 <= K <= N).
    #[arg(long, default_value = "1/1", value_parser = parse_shard)]
    shard: (u64, u64),
    /// Print a JSON summary instead of the table.
    #[arg(long)]
    json: bool,
    /// Also write a JUnit XML report here.
    #[arg(long)]
    junit: Option<PathBuf>,
    /// The failure database (replayed first, appended to).
    #[arg(long, default_value = faildb::DEFAULT_PATH)]
    failures: PathBuf,
    /// Neither replay nor record the failure database.
    #[arg(long)]
    no_failure_db: bool,
    /// Only replay the failure database's entries of this campaign; run no new seeds.
    #[arg(long, conflicts_with_all = ["seeds", "duration", "no_failure_db"])]
    failures_only: bool,
    /// Wall-clock time a seed may go without its virtual time moving before the watchdog
    /// stops it as a hang (e.g. 30s); a slow seed whose clock moves runs on.
    #[arg(long, default_value = "60s", value_parser = parse_duration_ms)]
    seed_timeout: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

#[derive(Args, Debug)]
#[group(id = "feed", required = true, multiple = false, args = ["seed", "choices"])]
struct ReplayArgs {
    /// The scenario: a builtin scenario's name or a path to a scenario file.
    #[arg(long)]
    scenario: String,
    #[command(flatten)]
    target: Target,
    /// The seed to replay (decimal or 0x-hex).
    #[arg(long, value_parser = parse_seed, allow_hyphen_values = true)]
    seed: Option<u64>,
    /// Replay a recorded choices file (from `shrink`) instead of a seed.
    #[arg(long)]
    choices: Option<String>,
    /// Write KEY = VALUE over the scenario before the run (repeatable; e.g. `--set
    /// 'claim.lifetime_ms = 5667'`, the form `envelope` prints): a dotted scenario key and a
    /// TOML value. A choices file's own changes are written after these.
    #[arg(long = "set", value_parser = parse_set)]
    set: Vec<leasesim::overrides::Override>,
    /// Replay a choices file recorded for another scenario, worker or strategy (e.g. does the
    /// fixed worker pass the old counterexample?). Without it such a file is refused.
    #[arg(long, requires = "choices")]
    force: bool,
    /// Output format of the trace.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Also write a self-contained HTML timeline of the run here.
    #[arg(long)]
    html: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct ShrinkArgs {
    /// The scenario: a builtin scenario's name or a path to a scenario file.
    #[arg(long)]
    scenario: String,
    #[command(flatten)]
    target: Target,
    /// The failing seed (decimal or 0x-hex).
    #[arg(long, value_parser = parse_seed, allow_hyphen_values = true)]
    seed: u64,
    /// Where to save the shrunk choices (default: .leasesim/shrunk/SCENARIO-WORKER-SEED.choices).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The most candidate runs to try (at least 1).
    #[arg(long, default_value = "20000", value_parser = parse_count)]
    budget: u64,
}

fn parse_strategy(text: &str) -> Result<Strategy, String> {
    text.parse()
}

/// Runs the CLI; returns the exit code.
pub fn main() -> i32 {
    let command = leasesim::registry::installed().command_name();
    let parsed = Cli::command()
        .name(command)
        .bin_name(command)
        .try_get_matches()
        .and_then(|matches| Cli::from_arg_matches(&matches));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return if err.use_stderr() { 2 } else { 0 };
        }
    };
    let result = match cli.command {
        Command::List(args) => list(args),
        Command::Fuzz(args) => fuzz(args),
        Command::Replay(args) => replay(args),
        Command::Shrink(args) => shrink_command(args),
        Command::Detect(args) => detect::detect_command(args),
        Command::Real(args) => real::real_command(args),
        Command::Envelope(args) => envelope::envelope_command(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err}");
            2
        }
    }
}

fn list(args: ListArgs) -> Result<i32, UsageError> {
    let systems = match &args.system {
        Some(name) => vec![catalog::check_system(name)?],
        None => leasesim::registry::installed().systems().to_vec(),
    };
    if args.json {
        println!("{}", report::list_json(&systems)?);
        return Ok(0);
    }
    println!("systems:");
    for system in &systems {
        println!("  {:<24} {}", system.name(), system.description());
    }
    for system in &systems {
        report::list_system(*system)?;
    }
    Ok(0)
}

/// The scenarios `--scenario` and `--system` name, kept to the systems `--worker` belongs to:
/// `all` keeps the worker's systems' builtins; a named scenario of another system is an error.
fn target_scenarios(
    scenario: &str,
    target: &Target,
) -> Result<Vec<Arc<dyn AnyScenario>>, UsageError> {
    if let Some(system) = &target.system {
        catalog::check_system(system)?;
    }
    let worker = check_worker(&target.worker)?;
    let systems = catalog::systems_of_worker(&worker);
    let found = catalog::resolve_in(scenario, target.system.as_deref())?;
    let mismatch = |why: String| UsageError::BadValue {
        flag: "--worker",
        given: worker.clone(),
        why,
    };
    if scenario == "all" {
        let kept: Vec<_> = found
            .into_iter()
            .filter(|s| systems.contains(&s.system().name()))
            .collect();
        if kept.is_empty() {
            let asked = target.system.as_deref().unwrap_or("any system");
            return Err(mismatch(format!(
                "it is a worker of {}, and --system asks for {asked}",
                systems.join(", ")
            )));
        }
        return Ok(kept);
    }
    let scenario = &found[0];
    if !systems.contains(&scenario.system().name()) {
        return Err(mismatch(format!(
            "it is a worker of {}, and scenario `{}` is of the `{}` system",
            systems.join(", "),
            scenario.name(),
            scenario.system().name()
        )));
    }
    Ok(found)
}

/// The one scenario a replay or shrink takes.
fn single_scenario(scenario: &str, target: &Target) -> Result<Arc<dyn AnyScenario>, UsageError> {
    if scenario == "all" {
        return Err(UsageError::BadValue {
            flag: "--scenario",
            given: scenario.to_string(),
            why: "this command takes one scenario".into(),
        });
    }
    Ok(target_scenarios(scenario, target)?.remove(0))
}

/// A runner of `worker` (checked against the scenario's system by `target_scenarios`).
fn runner_of(scenario: &dyn AnyScenario, worker: &str, strategy: Strategy) -> Box<dyn AnyRunner> {
    scenario
        .runner(worker, strategy)
        .expect("target_scenarios checked the worker against the scenario's system")
}

/// Refuses a seed range that runs past the last seed (`2^64 - 1`): seeds never wrap to 0.
fn check_seed_range(args: &FuzzArgs) -> Result<(), UsageError> {
    if args.duration.is_some() || args.failures_only {
        // A timed campaign stops at the last seed (see `fuzz::seeds_left`); a replay of the
        // failure database runs no new seed.
        return Ok(());
    }
    if args
        .start_seed
        .checked_add(args.seeds.saturating_sub(1))
        .is_none()
    {
        let left = leasesim::fuzz::seeds_left(args.start_seed);
        return Err(UsageError::BadValue {
            flag: "--seeds",
            given: args.seeds.to_string(),
            why: format!(
                "from --start-seed {:#x} only {left} seed(s) remain before the last seed \
                 0xffffffffffffffff, and seeds do not wrap around to 0",
                args.start_seed
            ),
        });
    }
    Ok(())
}

/// The campaign's failure database (unless turned off), and a check that the JUnit report can
/// be written: both found before any seed runs, so a bad path can never cost a finding.
fn open_outputs(args: &FuzzArgs) -> Result<Option<FailureDb>, UsageError> {
    let db = if args.no_failure_db {
        None
    } else {
        Some(FailureDb::open(&args.failures)?)
    };
    if let Some(db) = &db {
        db.check_writable()?;
    }
    if let Some(path) = &args.junit {
        report::check_junit_writable(path)?;
    }
    Ok(db)
}

fn fuzz(args: FuzzArgs) -> Result<i32, UsageError> {
    check_seed_range(&args)?;
    let scenarios = target_scenarios(&args.scenario, &args.target)?;
    let worker = args.target.worker.clone();
    let mut db = open_outputs(&args)?;
    let strategy = args.target.strategy;
    let jobs = job_count(args.jobs);
    let interactive = std::io::stderr().is_terminal() && !args.json;
    let regressions = match &db {
        Some(db) => replay_regressions(db, &scenarios, &worker, strategy),
        None => Vec::new(),
    };
    if args.failures_only && regressions.is_empty() {
        // Said out loud: an empty regression set checks nothing.
        eprintln!(
            "note: {} records no failure of this campaign's scenarios, worker and strategy: \
             nothing was replayed",
            args.failures.display()
        );
    }
    let summaries = run_campaigns(&args, &scenarios, (&worker, strategy), jobs, interactive);
    report_findings(
        &summaries,
        &regressions,
        (&worker, strategy),
        &scenarios,
        args.json.then(|| seed_range_json(&args)),
    );
    let failed =
        summaries.iter().any(|s| s.failed_seeds() > 0) || regressions.iter().any(|r| r.still_fails);
    // The database first: a JUnit write that fails must not cost a finding.
    let saved = save_findings(
        db.as_mut(),
        &summaries,
        &scenarios,
        &worker,
        strategy,
        args.json,
    );
    if let Some(path) = &args.junit {
        report::write_junit(
            path,
            (&summaries, &scenarios),
            &regressions,
            (&worker, strategy),
        )?;
    }
    saved?;
    if let (Strategy::Pct { .. }, false) = (strategy, args.json) {
        // Last line of a PCT campaign: how much of its change-point budget took effect.
        let (applied, drawn) = report::pct_totals(&summaries);
        println!("pct change points: applied {applied} of {drawn}");
    }
    Ok(interrupted(&summaries, db.is_some()).unwrap_or(i32::from(failed)))
}

/// Each scenario's campaign in turn, until the last or an interrupt (see `signals`).
fn run_campaigns(
    args: &FuzzArgs,
    scenarios: &[Arc<dyn AnyScenario>],
    (worker, strategy): (&str, Strategy),
    jobs: usize,
    interactive: bool,
) -> Vec<ScenarioSummary> {
    let mut summaries = Vec::new();
    signals::catch();
    for (index, scenario) in scenarios.iter().enumerate() {
        if signals::caught().is_some() {
            break;
        }
        let campaign = ScenarioCampaign {
            scenario: scenario.clone(),
            worker: worker.to_string(),
            factory: None,
            strategy,
            plan: seed_plan(args, scenarios.len(), index),
            shard: args.shard,
            jobs,
            seed_timeout_ms: args.seed_timeout,
        };
        summaries.push(run_one_campaign(&campaign, interactive));
    }
    summaries
}

/// After an interrupt: says so, and the exit code (128 + the signal).
fn interrupted(summaries: &[ScenarioSummary], recorded: bool) -> Option<i32> {
    let signal = signals::caught()?;
    let ran: u64 = summaries.iter().map(|s| s.seeds).sum();
    eprintln!(
        "interrupted by {}: {ran} seeds ran; what they found is reported above{}",
        signals::name(signal),
        if recorded { " and recorded" } else { "" }
    );
    Some(128 + signal)
}

/// Parallel jobs: the flag, or every core.
pub fn job_count(jobs: Option<u64>) -> usize {
    jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |j| j as usize,
    )
}

/// The seed plan of the `index`-th of `scenarios` scenarios: the seed count, or an equal share
/// of `--duration`.
fn seed_plan(args: &FuzzArgs, scenarios: usize, index: usize) -> SeedPlan {
    let start = args.start_seed;
    match args.duration {
        Some(ms) => {
            let count = scenarios as u64;
            let share = ms / count + u64::from((index as u64) < ms % count);
            SeedPlan::Duration {
                start,
                wall_ms: share.max(1),
            }
        }
        // Only the failure database's entries run (they are replayed before any plan).
        None if args.failures_only => SeedPlan::Count { start, count: 0 },
        None => SeedPlan::Count {
            start,
            count: args.seeds,
        },
    }
}

/// Appends the campaign's failures to the failure database (when there is one).
fn save_findings(
    db: Option<&mut FailureDb>,
    summaries: &[ScenarioSummary],
    scenarios: &[Arc<dyn AnyScenario>],
    worker: &str,
    strategy: Strategy,
    json: bool,
) -> Result<(), UsageError> {
    let Some(db) = db else { return Ok(()) };
    // Nothing new leaves the file as it is (and a clean campaign creates none).
    let added = db.record(db_entries(summaries, scenarios, worker, strategy))?;
    if added == 0 {
        return Ok(());
    }
    if !json {
        println!("recorded {added} new failure(s) in {}", db.path().display());
    }
    Ok(())
}

/// A failure-database entry replayed before the campaign.
pub struct Regression {
    pub entry: Entry,
    pub still_fails: bool,
    pub sentence: String,
}

fn replay_regressions(
    db: &FailureDb,
    scenarios: &[Arc<dyn AnyScenario>],
    worker: &str,
    strategy: Strategy,
) -> Vec<Regression> {
    let mut out = Vec::new();
    for entry in db.entries() {
        let Some(scenario) = scenarios
            .iter()
            .find(|s| scenario_ref(s.as_ref()) == entry.scenario)
        else {
            continue;
        };
        if entry.worker != worker || entry.strategy != strategy.to_string() {
            continue;
        }
        let mut runner = runner_of(scenario.as_ref(), worker, strategy);
        runner.calibrate();
        let report = runner.run(Feed::Seed(entry.seed), false, false);
        out.push(Regression {
            entry: entry.clone(),
            still_fails: report.failed(),
            sentence: report.sentence(),
        });
    }
    out
}

fn db_entries(
    summaries: &[ScenarioSummary],
    scenarios: &[Arc<dyn AnyScenario>],
    worker: &str,
    strategy: Strategy,
) -> Vec<Entry> {
    summaries
        .iter()
        .zip(scenarios)
        .flat_map(|(summary, scenario)| {
            summary
                .findings
                .iter()
                .filter(|f| !f.expected)
                .map(move |f| Entry {
                    scenario: scenario_ref(scenario.as_ref()),
                    worker: worker.to_string(),
                    strategy: strategy.to_string(),
                    seed: f.seed,
                    outcome: f.label.clone(),
                    sentence: f.sentence.clone(),
                    checkers: Some(scenario.checker_set()),
                })
        })
        .collect()
}

/// The progress bar's line: `{rate}` is ours, a whole number of seeds per second (indicatif's
/// own `{per_sec}` prints four decimals).
const PROGRESS_TEMPLATE: &str = "{prefix:>24} [{bar:30}] {pos}/{len} seeds {rate} {msg}";

/// A rate as the progress bar shows it: `927 seeds/s`.
fn rate_text(per_s: f64) -> String {
    format!("{per_s:.0} seeds/s")
}

fn progress_style() -> ProgressStyle {
    ProgressStyle::with_template(PROGRESS_TEMPLATE)
        .expect("a valid template")
        .with_key(
            "rate",
            |state: &indicatif::ProgressState, out: &mut dyn std::fmt::Write| {
                let _ = out.write_str(&rate_text(state.per_sec()));
            },
        )
        .progress_chars("=> ")
}

fn run_one_campaign(campaign: &ScenarioCampaign, interactive: bool) -> ScenarioSummary {
    let progress = std::sync::Arc::new(Progress::default());
    let name = campaign.scenario.name().to_string();
    let bar = interactive.then(|| {
        let length = match campaign.plan {
            SeedPlan::Count { count, .. } => leasesim::fuzz::shard_len(count, campaign.shard),
            SeedPlan::Duration { .. } => 0,
        };
        let bar = ProgressBar::new(length);
        bar.set_style(progress_style());
        bar.set_prefix(name.clone());
        bar
    });
    let mut tick = || {
        if signals::caught().is_some() {
            progress
                .stop
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let done = progress.done.load(std::sync::atomic::Ordering::Relaxed);
        let failed = progress.failed.load(std::sync::atomic::Ordering::Relaxed);
        if let Some(bar) = &bar {
            bar.set_position(done);
            bar.set_message(format!("{failed} failing"));
        }
    };
    let summary = run_campaign(campaign, &progress, &mut tick);
    match &bar {
        Some(bar) => bar.finish_and_clear(),
        None => eprintln!(
            "fuzz {name}: {} seeds, {} failing, {:.0} seeds/s ({:.1}s)",
            summary.seeds,
            summary.failed_seeds(),
            summary.seeds_per_s(),
            summary.wall_s
        ),
    }
    summary
}

/// `--json`'s `seed_range`: the seeds each scenario was asked for: from `start`, `count` of
/// them (`last` the last one) or as many as `duration_ms` allowed, in shard `K/N`.
fn seed_range_json(args: &FuzzArgs) -> serde_json::Value {
    let shard = format!("{}/{}", args.shard.0, args.shard.1);
    let start = args.start_seed;
    match (args.duration, args.failures_only) {
        (Some(duration_ms), _) => serde_json::json!({
            "start": start, "count": null, "last": null, "duration_ms": duration_ms,
            "shard": shard,
        }),
        (None, true) => serde_json::json!({
            "start": start, "count": 0, "last": null, "duration_ms": null, "shard": shard,
        }),
        (None, false) => serde_json::json!({
            "start": start, "count": args.seeds, "last": start + (args.seeds - 1),
            "duration_ms": null, "shard": shard,
        }),
    }
}

fn report_findings(
    summaries: &[ScenarioSummary],
    regressions: &[Regression],
    (worker, strategy): (&str, Strategy),
    scenarios: &[Arc<dyn AnyScenario>],
    json: Option<serde_json::Value>,
) {
    if let Some(seed_range) = json {
        println!(
            "{}",
            report::json_summary(
                summaries,
                regressions,
                scenarios,
                (worker, strategy),
                seed_range
            )
        );
        return;
    }
    for regression in regressions {
        let entry = &regression.entry;
        let state = if regression.still_fails {
            "still fails"
        } else {
            "now passes"
        };
        println!(
            "regression {} seed {} ({}): {state}: {}",
            entry.scenario, entry.seed, entry.outcome, regression.sentence
        );
        if regression.still_fails {
            println!(
                "{}",
                replay_line(&entry.scenario, entry.seed, worker, strategy)
            );
        }
    }
    for (summary, scenario) in summaries.iter().zip(scenarios) {
        for finding in summary.findings.iter().filter(|f| !f.expected) {
            print_finding(scenario.as_ref(), finding, worker, strategy);
        }
    }
    println!("{}", report::table(summaries, scenarios));
    let risk = report::risk_lines(summaries);
    if !risk.is_empty() {
        println!("{risk}");
    }
    println!("{}", report::coverage_lines(summaries, scenarios));
    println!("{}", report::events_line(summaries));
}

fn print_finding(scenario: &dyn AnyScenario, finding: &Finding, worker: &str, strategy: Strategy) {
    let reference = scenario_ref(scenario);
    println!(
        "FAIL {} seed {}: {}: {}",
        reference, finding.seed, finding.label, finding.sentence
    );
    println!(
        "{}",
        replay_line(&reference, finding.seed, worker, strategy)
    );
}

/// What `replay` runs: a seed, or a choices file with the scenario changes it records.
struct ReplaySource {
    feed: Feed,
    /// `seed S` or `choices PATH`, for the header.
    text: String,
    /// Values the choices file holds (`None` for a seed).
    given: Option<usize>,
    /// The PCT step estimate the file was recorded with.
    pct_steps: Option<u64>,
    scenario: Arc<dyn AnyScenario>,
    overrides: Vec<String>,
}

fn replay_source(
    args: &ReplayArgs,
    base: Arc<dyn AnyScenario>,
    worker: &str,
) -> Result<ReplaySource, UsageError> {
    match (&args.choices, args.seed) {
        (Some(path), _) => {
            let file = choices::read(path)?;
            // The scenario changes a shrink made are part of the counterexample.
            let scenario = file.apply(&base)?;
            check_choices_fit(path, &file, base.as_ref(), worker, args)?;
            Ok(ReplaySource {
                given: Some(file.values.len()),
                pct_steps: recorded_pct_steps(path, &file)?,
                overrides: file.overrides.lines(),
                feed: Feed::Replay(file.values),
                text: format!("choices {path}"),
                scenario,
            })
        }
        (None, Some(seed)) => Ok(ReplaySource {
            feed: Feed::Seed(seed),
            text: format!("seed {seed}"),
            given: None,
            pct_steps: None,
            scenario: base,
            overrides: Vec::new(),
        }),
        (None, None) => unreachable!("clap requires --seed or --choices"),
    }
}

/// Refuses a choices file that holds no choices, or (unless `--force`) one recorded for
/// another scenario, worker or strategy; with `--force` the differences are warnings.
fn check_choices_fit(
    path: &str,
    file: &choices::ChoiceFile,
    base: &dyn AnyScenario,
    worker: &str,
    args: &ReplayArgs,
) -> Result<(), UsageError> {
    if file.values.is_empty() {
        return Err(UsageError::File {
            path: path.to_string(),
            why: "the file holds no choices (an empty file would replay as all zeros, a run \
                  nobody recorded)"
                .into(),
        });
    }
    let mismatches = mismatches(file, base, worker, args.target.strategy);
    if mismatches.is_empty() {
        return Ok(());
    }
    if !args.force {
        return Err(UsageError::File {
            path: path.to_string(),
            why: format!(
                "{}; replay it with what it was recorded for, or add --force",
                mismatches.join("; ")
            ),
        });
    }
    for mismatch in &mismatches {
        eprintln!("warning: {path} {mismatch} (--force)");
    }
    Ok(())
}

/// Parses one `--set KEY = VALUE`.
fn parse_set(text: &str) -> Result<leasesim::overrides::Override, String> {
    leasesim::overrides::parse(text).map_err(|err| err.why)
}

/// `scenario` with `--set`'s overrides written over it; an error names the override's key.
fn with_sets(
    scenario: Arc<dyn AnyScenario>,
    sets: &[leasesim::overrides::Override],
) -> Result<Arc<dyn AnyScenario>, UsageError> {
    if sets.is_empty() {
        return Ok(scenario);
    }
    let mut overrides = leasesim::overrides::Overrides::default();
    for o in sets {
        overrides.set(&o.key, o.value.clone());
    }
    scenario
        .with_overrides(&overrides)
        .map_err(|(key, why)| UsageError::BadValue {
            flag: "--set",
            given: key,
            why,
        })
}

fn replay(args: ReplayArgs) -> Result<i32, UsageError> {
    let base = single_scenario(&args.scenario, &args.target)?;
    let base = with_sets(base, &args.set)?;
    let worker = args.target.worker.clone();
    let mut source = replay_source(&args, base, &worker)?;
    let sets = args.set.iter().map(ToString::to_string);
    source.overrides = sets.chain(source.overrides).collect();
    let given = source.given;
    let mut runner = runner_of(source.scenario.as_ref(), &worker, args.target.strategy);
    runner.set_pct_steps(source.pct_steps);
    runner.calibrate();
    let head = TraceHeader {
        overrides: source.overrides,
        ..runner.header(source.text)
    };
    let report = runner.run(source.feed, true, given.is_some());
    if let Some(given) = given
        && report.choices().len() > given
    {
        eprintln!(
            "note: the run drew {} choices and the file holds {given}; the rest were taken as 0 \
             (the simplest)",
            report.choices().len()
        );
    }
    if let Some(path) = &args.html {
        std::fs::write(path, report.html(&head)).map_err(|err| UsageError::File {
            path: path.display().to_string(),
            why: format!("cannot write the timeline: {err}"),
        })?;
        eprintln!("timeline written to {}", path.display());
    }
    let mut stdout = std::io::stdout().lock();
    let text = match args.format {
        Format::Text => report.trace(&head),
        Format::Json => report.json(&head),
    };
    let _ = stdout.write_all(text.as_bytes());
    Ok(i32::from(report.failed()))
}

/// The PCT step estimate a choices file was recorded with (`# pct-steps: N`), if any: a
/// replay must spread change points over the same steps the recording did.
fn recorded_pct_steps(path: &str, file: &choices::ChoiceFile) -> Result<Option<u64>, UsageError> {
    let Some(text) = file.get("pct-steps") else {
        return Ok(None);
    };
    match text.parse::<u64>() {
        Ok(steps) if steps > 0 => Ok(Some(steps)),
        _ => Err(UsageError::File {
            path: path.to_string(),
            why: format!("header `pct-steps: {text}` is not a positive whole number"),
        }),
    }
}

/// How a choices file's header differs from what a replay runs: one phrase per difference
/// (scenario, worker, strategy), empty when it matches or does not say.
fn mismatches(
    file: &choices::ChoiceFile,
    scenario: &dyn AnyScenario,
    worker: &str,
    strategy: Strategy,
) -> Vec<String> {
    let now = [
        ("scenario", scenario_ref(scenario)),
        ("worker", worker.to_string()),
        ("strategy", strategy.to_string()),
    ];
    now.into_iter()
        .filter_map(|(key, value)| {
            let recorded = file.get(key)?;
            (recorded != value).then(|| {
                format!("was recorded with {key} {recorded}, and this replay runs {key} {value}")
            })
        })
        .collect()
}

/// Checks that `path` can be written (creating its directory, probing with a scratch file
/// beside it) so an unwritable destination is reported before any work is done.
fn prepare_output(path: &std::path::Path, what: &str) -> Result<(), UsageError> {
    let fail = |err: std::io::Error| UsageError::File {
        path: path.display().to_string(),
        why: format!("cannot save {what}: {err}"),
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(fail)?;
    }
    let probe = path.with_extension("write-probe");
    std::fs::write(&probe, b"").map_err(fail)?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

/// Writes the shrunk run's choices, with `header` and its scenario overrides, to `out`.
fn save_shrunk(
    out: &std::path::Path,
    header: &[String],
    shrunk: &ShrunkRun,
) -> Result<(), UsageError> {
    let text = choices::render(header, &shrunk.overrides, shrunk.report.choices());
    // The directory exists: prepare_output made it.
    std::fs::write(out, text).map_err(|err| UsageError::File {
        path: out.display().to_string(),
        why: format!("cannot save choices: {err}"),
    })
}

/// Says why a seed has nothing to shrink (it passes, or ran out of its budget with no
/// invariant broken); the exit code.
fn nothing_to_shrink(runner: &dyn AnyRunner, seed: u64, reference: &str, worker: &str) -> i32 {
    let report = runner.run(Feed::Seed(seed), false, false);
    if report.failed() {
        println!(
            "seed {seed} of {reference} with worker {worker}: nothing to shrink, no invariant \
             broke: {}",
            report.verdict_line()
        );
        return 1;
    }
    println!("seed {seed} of {reference} passes with worker {worker}: nothing to shrink");
    0
}

fn shrink_command(args: ShrinkArgs) -> Result<i32, UsageError> {
    let scenario = single_scenario(&args.scenario, &args.target)?;
    let worker = args.target.worker.clone();
    let reference = scenario_ref(scenario.as_ref());
    let mut runner = runner_of(scenario.as_ref(), &worker, args.target.strategy);
    runner.calibrate();
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from(format!(
            ".leasesim/shrunk/{}-{worker}-{}.choices",
            scenario.name(),
            args.seed
        ))
    });
    prepare_output(&out, "the shrunk choices")?;
    let started = Instant::now();
    let Some(shrunk) = runner.shrink(Feed::Seed(args.seed), args.budget) else {
        return Ok(nothing_to_shrink(
            runner.as_ref(),
            args.seed,
            &reference,
            &worker,
        ));
    };
    let elapsed = started.elapsed().as_secs_f64();
    let feed = format!("choices {} (shrunk from seed {})", out.display(), args.seed);
    let head = TraceHeader {
        overrides: shrunk.overrides.lines(),
        ..runner.header(feed)
    };
    print!("{}", shrunk.report.trace(&head));
    let mut header = vec![
        format!("scenario: {reference}"),
        format!("worker: {worker}"),
        format!("strategy: {}", args.target.strategy),
        format!("shrunk from seed {}", args.seed),
        format!("checkers: {}", head.checkers),
        format!("verdict: {}", shrunk.report.verdict_line()),
    ];
    if let Some(steps) = runner.pct_steps() {
        header.push(format!("pct-steps: {steps}"));
    }
    save_shrunk(&out, &header, &shrunk)?;
    println!(
        "shrunk: {} events -> {} events in {elapsed:.2} s ({} candidate runs)",
        shrunk.original_events,
        shrunk.report.stats().events,
        shrunk.candidates
    );
    if !shrunk.overrides.is_empty() {
        println!(
            "scenario changed: {} (saved with the choices)",
            shrunk.overrides.lines().join(", ")
        );
    }
    println!("choices saved to {}", out.display());
    let mut replay = format!(
        "{} replay --scenario {reference} --worker {worker} --choices {}",
        leasesim::registry::installed().command_name(),
        out.display()
    );
    if args.target.strategy != Strategy::Random {
        replay.push_str(&format!(" --strategy {}", args.target.strategy));
    }
    println!("{replay}");
    Ok(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_progress_bar_shows_a_whole_number_of_seeds_per_second() {
        assert_eq!(rate_text(927.3467), "927 seeds/s");
        assert_eq!(rate_text(0.4), "0 seeds/s");
        // indicatif's own `{per_sec}` would print `927.3467/s`.
        assert!(
            PROGRESS_TEMPLATE.contains("{rate}") && !PROGRESS_TEMPLATE.contains("per_sec"),
            "{PROGRESS_TEMPLATE}"
        );
        let _ = progress_style();
    }
}
