//! `leasesim envelope`: where a worker's guarantees hold as one or two timing settings vary.
//!
//! Terminology: see `leasesim::envelope` (axis, mark, share, class, boundary, counterexample).
//! This module parses the flags, shows progress, prints the table or JSON, writes the HTML
//! map, and saves the counterexample's shrunk choices.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use leasesim::catalog::scenario_ref;
use leasesim::choices;
use leasesim::envelope::{
    self, Axis, Counterexample, Envelope, EnvelopeProgress, EnvelopeSpec, Mark, PointResult, Search,
};
use leasesim::error::{UsageError, parse_count, parse_duration_ms, parse_seed};
use leasesim::fuzz::Progress;
use leasesim::overrides::Overrides;

use super::{Target, job_count, prepare_output, signals, single_scenario};

#[derive(Args, Debug)]
pub struct EnvelopeArgs {
    /// A builtin scenario's name or a path to a scenario file: every setting not varied is as
    /// it says.
    #[arg(long)]
    scenario: String,
    #[command(flatten)]
    target: Target,
    /// A scenario key and the values it spans, both ends included: KEY=LO..HI (e.g.
    /// claim.lifetime_ms=500..5000). Give it twice for a two-key map. A range key
    /// (`job.duration_ms = [500, 2000]`) is set to [V, V]; KEY.min or KEY.max sets one end.
    #[arg(long = "vary", required = true, value_parser = parse_axis)]
    vary: Vec<Axis>,
    /// Values per key, evenly spaced (2 to 100).
    #[arg(long, default_value = "10", value_parser = clap::value_parser!(u64).range(2..=100))]
    resolution: u64,
    /// Seeds run at each point.
    #[arg(long, default_value = "200", value_parser = parse_count)]
    seeds: u64,
    /// The first seed (decimal or 0x-hex).
    #[arg(long, default_value = "0", value_parser = parse_seed, allow_hyphen_values = true)]
    start_seed: u64,
    /// Parallel jobs (default: every core).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: Option<u64>,
    /// Map where this "sometimes" situation is reached (see `leasesim list`) instead of where
    /// an invariant breaks.
    #[arg(long)]
    situation: Option<String>,
    /// Run every point of the grid instead of searching for the boundary.
    #[arg(long)]
    grid: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: EnvelopeFormat,
    /// Also write the map as a self-contained HTML page here.
    #[arg(long)]
    html: Option<PathBuf>,
    /// The most candidate runs the counterexample's shrink may try (0: not shrunk).
    #[arg(long, default_value = "2000")]
    shrink_budget: u64,
    /// Wall-clock time a seed may go without its virtual time moving before it is stopped as
    /// a hang.
    #[arg(long, default_value = "60s", value_parser = parse_duration_ms)]
    seed_timeout: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum EnvelopeFormat {
    Text,
    Json,
}

fn parse_axis(text: &str) -> Result<Axis, String> {
    Axis::parse(text).map_err(|err| match err {
        UsageError::BadValue { why, .. } => why,
        other => other.to_string(),
    })
}

/// The mark `--situation` names, checked against the system's situations.
fn mark_of(
    args: &EnvelopeArgs,
    system: &'static dyn leasesim::systems::AnySystem,
) -> Result<Mark, UsageError> {
    let Some(name) = &args.situation else {
        return Ok(Mark::Violations);
    };
    Mark::situation(system, name).ok_or_else(|| UsageError::UnknownName {
        what: "situation",
        given: name.clone(),
        valid: system
            .situations()
            .iter()
            .map(|(n, _)| n.to_string())
            .collect(),
    })
}

fn spec_of(args: &EnvelopeArgs) -> Result<EnvelopeSpec, UsageError> {
    let scenario = single_scenario(&args.scenario, &args.target)?;
    let mark = mark_of(args, scenario.system())?;
    if let Some(path) = &args.html {
        prepare_output(path, "the envelope's map")?;
    }
    Ok(EnvelopeSpec {
        scenario,
        worker: args.target.worker.clone(),
        factory: None,
        strategy: args.target.strategy,
        axes: args.vary.clone(),
        resolution: args.resolution as usize,
        start_seed: args.start_seed,
        seeds: args.seeds,
        jobs: job_count(args.jobs),
        mark,
        search: if args.grid {
            Search::Grid
        } else {
            Search::Adaptive
        },
        seed_timeout_ms: args.seed_timeout,
    })
}

/// The envelope as text or JSON, with its counterexample.
fn print_envelope(
    args: &EnvelopeArgs,
    envelope: &Envelope,
    counter: Option<(&Counterexample, &Saved)>,
) {
    match args.format {
        EnvelopeFormat::Text => {
            print!("{}", envelope::render::text(envelope));
            if let Some((c, saved)) = counter {
                print!("{}", counterexample_text(envelope, c, saved));
            }
        }
        EnvelopeFormat::Json => println!("{}", json(envelope, counter)),
    }
}

pub fn envelope_command(args: EnvelopeArgs) -> Result<i32, UsageError> {
    let spec = spec_of(&args)?;
    let check = leasesim::fuzz::seeds_left(spec.start_seed);
    if spec.seeds > check {
        return Err(UsageError::BadValue {
            flag: "--seeds",
            given: spec.seeds.to_string(),
            why: format!(
                "from --start-seed {} only {check} seeds are left",
                spec.start_seed
            ),
        });
    }
    signals::catch();
    let started = Instant::now();
    let envelope = measure_with_progress(&spec)?;
    let elapsed_s = started.elapsed().as_secs_f64();
    // After an interrupt the counterexample is the nearest unsafe point's seed, not shrunk.
    let budget = if envelope.interrupted {
        0
    } else {
        args.shrink_budget
    };
    let counter = envelope::counterexample(&spec, &envelope, budget);
    let saved = counter
        .as_ref()
        .map(|c| save_counterexample(&spec, &envelope, c))
        .transpose();
    // What was measured is printed before anything can fail to be written.
    let (saved, save_error) = match saved {
        Ok(saved) => (saved, None),
        Err(err) => (None, Some(err)),
    };
    print_envelope(&args, &envelope, counter.as_ref().zip(saved.as_ref()));
    if let Some(err) = save_error {
        return Err(err);
    }
    if let Some(path) = &args.html {
        std::fs::write(path, envelope::html::page(&envelope)).map_err(|err| UsageError::File {
            path: path.display().to_string(),
            why: format!("cannot save the envelope's map (the envelope is printed above): {err}"),
        })?;
        eprintln!("map written to {}", path.display());
    }
    eprintln!(
        "envelope: {} points run, {} runs in {elapsed_s:.1} s",
        envelope.points_run(),
        envelope.runs
    );
    if let Some(signal) = signals::caught() {
        eprintln!(
            "interrupted by {}: the points run are reported above",
            signals::name(signal)
        );
        return Ok(128 + signal);
    }
    Ok(0)
}

fn measure_with_progress(spec: &EnvelopeSpec) -> Result<Envelope, UsageError> {
    let progress = Arc::new(Progress::default());
    let bar = std::io::IsTerminal::is_terminal(&std::io::stderr()).then(|| {
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} envelope: {msg} [{elapsed}]")
                .expect("a valid template"),
        );
        bar
    });
    let mut tick = |counts: EnvelopeProgress| {
        if signals::caught().is_some() {
            progress.stop.store(true, Ordering::Relaxed);
        }
        if let Some(bar) = &bar {
            bar.set_message(format!("{} points, {} runs", counts.points, counts.runs));
            bar.tick();
        }
    };
    let envelope = envelope::measure(spec, &progress, &mut tick);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    envelope
}

/// Where the counterexample was saved and how to replay it.
struct Saved {
    choices: Option<PathBuf>,
    replay: Vec<String>,
    /// `original -> shrunk` events, and candidate runs, when it was shrunk.
    shrink: Option<(u64, u64, u64)>,
}

/// The scenario reference, the command's name and ` --strategy S` (empty for random) of a
/// replay line.
fn replay_parts(spec: &EnvelopeSpec) -> (String, &'static str, String) {
    let strategy = match spec.strategy {
        leasesim::Strategy::Random => String::new(),
        other => format!(" --strategy {other}"),
    };
    let command = leasesim::registry::installed().command_name();
    let reference = leasesim::catalog::shell_word(&scenario_ref(spec.scenario.as_ref()));
    (reference, command, strategy)
}

fn save_counterexample(
    spec: &EnvelopeSpec,
    envelope: &Envelope,
    c: &Counterexample,
) -> Result<Saved, UsageError> {
    let (reference, command, strategy) = replay_parts(spec);
    let sets: Vec<String> = c.overrides.iter().map(|o| format!("--set '{o}'")).collect();
    let seed_line = format!(
        "{command} replay --scenario {reference} --worker {}{strategy} --seed {} {}",
        spec.worker,
        c.seed,
        sets.join(" ")
    );
    let Some(shrunk) = &c.shrunk else {
        return Ok(Saved {
            choices: None,
            replay: vec![seed_line],
            shrink: None,
        });
    };
    let point: Vec<String> = envelope
        .values(c.index)
        .iter()
        .zip(&envelope.axes)
        .map(|(v, a)| format!("{}={}", a.key, envelope::axis::number_text(*v)))
        .collect();
    let out = PathBuf::from(format!(
        ".leasesim/envelope/{}-{}-{}-seed{}.choices",
        spec.scenario.name(),
        spec.worker,
        point.join("-"),
        c.seed
    ));
    prepare_output(&out, "the counterexample's choices")?;
    // The point's settings, then what the shrink changed (it may change them again).
    let mut overrides: Overrides = c.overrides.clone();
    for o in shrunk.overrides.iter() {
        overrides.set(&o.key, o.value.clone());
    }
    let mut header = vec![
        format!("scenario: {}", scenario_ref(spec.scenario.as_ref())),
        format!("worker: {}", spec.worker),
        format!("strategy: {}", spec.strategy),
        format!(
            "shrunk from seed {} at {}",
            c.seed,
            envelope.values_text(c.index)
        ),
        format!("verdict: {}", shrunk.report.verdict_line()),
    ];
    if let Some(steps) = c.pct_steps {
        header.push(format!("pct-steps: {steps}"));
    }
    let text = choices::render(&header, &overrides, shrunk.report.choices());
    std::fs::write(&out, text).map_err(|err| UsageError::File {
        path: out.display().to_string(),
        why: format!("cannot save choices: {err}"),
    })?;
    let choices_line = format!(
        "{command} replay --scenario {reference} --worker {}{strategy} --choices {}",
        spec.worker,
        out.display()
    );
    Ok(Saved {
        choices: Some(out),
        replay: vec![choices_line, seed_line],
        shrink: Some((
            shrunk.original_events,
            shrunk.report.stats().events,
            shrunk.candidates,
        )),
    })
}

fn counterexample_text(envelope: &Envelope, c: &Counterexample, saved: &Saved) -> String {
    let share = match envelope.point(c.index).map(|p| &p.result) {
        Some(PointResult::Ran(runs)) => format!("{} of {} seeds", runs.marked, runs.seeds),
        _ => unreachable!("a counterexample's point ran"),
    };
    let what = match envelope.mark {
        Mark::Violations => format!("breaks {}", c.label),
        Mark::Situation(..) => format!("reaches {}", c.label),
    };
    let mut out = format!(
        "\ncounterexample nearest the boundary: {} ({share}): seed {} {what}\n",
        envelope.values_text(c.index),
        c.seed
    );
    if let (Some((from, to, candidates)), Some(path)) = (saved.shrink, &saved.choices) {
        out.push_str(&format!(
            "  shrunk: {from} events -> {to} events ({candidates} candidate runs); choices saved to {}\n",
            path.display()
        ));
    }
    for line in &saved.replay {
        out.push_str(line);
        out.push('\n');
    }
    if let Mark::Situation(..) = envelope.mark {
        out.push_str(
            "  (a situation, not a violation: the replayed run passes its invariants, and its \
             trace is the run that reached it)\n",
        );
    }
    out
}

fn json_number(v: f64, whole: bool) -> serde_json::Value {
    if whole {
        serde_json::json!(v as i64)
    } else {
        serde_json::json!(v)
    }
}

fn class_name(class: envelope::Class) -> &'static str {
    match class {
        envelope::Class::Safe => "safe",
        envelope::Class::Unsafe => "unsafe",
        envelope::Class::Refused => "refused",
    }
}

/// `{key: value}` of a point's axes.
fn values_json(envelope: &Envelope, index: envelope::Index) -> serde_json::Value {
    let mut map = serde_json::Map::new();
    for (axis, v) in envelope.axes.iter().zip(envelope.values(index)) {
        map.insert(axis.key.clone(), json_number(v, axis.whole));
    }
    serde_json::Value::Object(map)
}

fn point_json(envelope: &Envelope, p: &envelope::Point) -> serde_json::Value {
    let mut point = serde_json::json!({
        "index": [p.index.0, p.index.1],
        "values": values_json(envelope, p.index),
        "class": class_name(envelope.map.class(p.index)),
    });
    match &p.result {
        PointResult::Refused { key, why } => {
            point["refused"] = serde_json::json!({ "key": key, "why": why });
            point["seeds"] = serde_json::json!(0);
        }
        PointResult::Ran(runs) => {
            let (lo, hi) = runs.interval();
            let by: serde_json::Map<String, serde_json::Value> = runs
                .by_outcome
                .iter()
                .map(|(name, t)| {
                    let (lo, hi) = envelope::interval(t.seeds, runs.seeds);
                    let tally = serde_json::json!({
                        "seeds": t.seeds,
                        "share": t.seeds as f64 / runs.seeds.max(1) as f64,
                        "interval": [lo, hi],
                        "first_seed": t.first_seed,
                    });
                    (name.clone(), tally)
                })
                .collect();
            point["refused"] = serde_json::Value::Null;
            point["seeds"] = serde_json::json!(runs.seeds);
            point["marked"] = serde_json::json!(runs.marked);
            point["share"] = serde_json::json!(runs.share());
            point["interval"] = serde_json::json!([lo, hi]);
            point["violations"] = serde_json::Value::Object(by);
        }
    }
    point
}

fn json(envelope: &Envelope, counter: Option<(&Counterexample, &Saved)>) -> serde_json::Value {
    let points: Vec<serde_json::Value> = envelope
        .points
        .iter()
        .map(|p| point_json(envelope, p))
        .collect();
    let (w, h) = (envelope.map.width, envelope.map.height);
    let map: Vec<Vec<serde_json::Value>> = (0..h)
        .map(|y| {
            (0..w)
                .map(|x| {
                    serde_json::json!({
                        "class": if envelope.known((x, y)) {
                            class_name(envelope.map.class((x, y)))
                        } else {
                            "unknown"
                        },
                        "measured": envelope.map.was_measured((x, y)),
                    })
                })
                .collect()
        })
        .collect();
    let mark = match &envelope.mark {
        Mark::Violations => serde_json::json!({ "kind": "violations" }),
        Mark::Situation(name, _) => serde_json::json!({ "kind": "situation", "name": name }),
    };
    let counterexample = counter.map(|(c, saved)| {
        serde_json::json!({
            "values": values_json(envelope, c.index),
            "seed": c.seed,
            "label": c.label,
            "choices": saved.choices.as_ref().map(|p| p.display().to_string()),
            "replay": saved.replay,
        })
    });
    serde_json::json!({
        "system": envelope.system,
        "scenario": envelope.scenario,
        "worker": envelope.worker,
        "strategy": envelope.strategy.to_string(),
        "start_seed": envelope.start_seed,
        "seeds": envelope.seeds,
        "mark": mark,
        "search": if envelope.search == Search::Grid { "grid" } else { "adaptive" },
        "axes": envelope.axes.iter().map(|a| serde_json::json!({
            "key": a.key,
            "values": a.values.iter().map(|v| json_number(*v, a.whole)).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "points": points,
        "map": map,
        "runs": envelope.runs,
        "grid_runs": envelope.grid_runs,
        "interrupted": envelope.interrupted,
        "counterexample": counterexample,
    })
}
