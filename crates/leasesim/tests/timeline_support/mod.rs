//! Test support: runs a scenario in the simulated world and renders trace lines.
//!
//! Terminology:
//! - *run*: one simulation of an inline scenario from one seed, with its events kept.
//! - *line*: a compact, byte-stable text for one event (virtual time, replica, event debug
//!   form), standing in for the CLI's trace line.

#![allow(dead_code)]

use std::rc::Rc;

use leasesim_retention::events::{Event, Stamped};
use leasesim_retention::{Retention, WorkerFactory, correct_worker, parse_scenario};
use leasesim_rt::SimConfig;
use leasesim_sim::simulate;
use leasesim_timeline::{Render, TimelineInput, ViolationMark};

/// Two replicas, a few seconds, a rejected renewal now and then and short pauses.
pub const SMALL_SCENARIO: &str = r#"
description = "timeline snapshot: two replicas, a few seconds, light faults"
system = "retention"
replicas = 2
duration_ms = 3_000
liveness_ms = 1_500

[worker]
renew_every_ms = 400

[lease]
ttl_ms = 1_200

[schedule]
run_every_ms = [100, 400]

[latency]
acquire = [2, 20]
renew = [2, 40]
release = [2, 20]
delete = [20, 120]

[faults.reject]
renew = 0.2

[faults.pause]
probability = 0.5
every_ms = [800, 1_500]
duration_ms = [300, 900]

[store]
rows = 1_500
created_from_ms = -600_000
created_to_ms = 3_000
"#;

/// Five replicas, two minutes, pauses, rejections, lost replies, revocations, stops.
pub const LONG_SCENARIO: &str = r#"
description = "timeline screenshot: five replicas, two minutes, faults"
system = "retention"
replicas = 5
duration_ms = 100_000
liveness_ms = 20_000

[worker]
renew_every_ms = 500

[lease]
ttl_ms = 2_000

[schedule]
run_every_ms = [100, 600]

[latency]
acquire = [1, 60]
renew = [1, 200]
release = [1, 100]
delete = [10, 300]

[faults.reject]
acquire = 0.1
renew = 0.1
release = 0.1
delete = 0.1

[faults.reply_lost]
renew = 0.05
delete = 0.05

[faults]
timeout_ms = 500

[faults.revoke]
probability = 0.5
every_ms = [5_000, 15_000]

[faults.pause]
probability = 0.5
every_ms = [2_000, 8_000]
duration_ms = [500, 3_000]

[stop]
at = "anywhere"
replicas = 2
window_ms = [0, 90_000]
delay_ms = [0, 30]

[store]
rows = 30_000
created_from_ms = -900_000
created_to_ms = 100_000
"#;

/// The events of one run of `toml_text` with the correct worker.
pub fn run_events(name: &str, toml_text: &str, seed: u64) -> (u16, Vec<Stamped<Event>>) {
    let scenario = parse_scenario(name, "inline", toml_text).expect("the scenario parses");
    let replicas = scenario.replicas;
    let factory = Rc::new(correct_worker) as Rc<WorkerFactory>;
    let run = simulate(
        &Rc::new(scenario),
        &factory,
        SimConfig::seeded(seed),
        true,
        None,
    );
    (replicas, run.events)
}

/// A byte-stable line for one event.
pub fn line(event: &Stamped<Event>) -> String {
    let replica = event
        .event
        .replica
        .map_or_else(|| "--".to_string(), |r| r.to_string());
    format!(
        "t={:>8}ms  {replica:<3}  {:?}",
        event.at_ms, event.event.kind
    )
}

/// Renders a run with a fixed header.
pub fn render(
    name: &str,
    seed: u64,
    replicas: u16,
    events: &[Stamped<Event>],
    violation: Option<ViolationMark>,
) -> String {
    let lines: Vec<String> = events.iter().map(line).collect();
    let (moments, strokes) = leasesim::html::strokes::<Retention>(events);
    let input = TimelineInput {
        title: format!("{name} · seed {seed} · worker correct"),
        header_lines: vec![
            format!("scenario: {name} (inline)"),
            format!("feed:     seed {seed}"),
            "worker:   correct".to_string(),
            "strategy: random".to_string(),
            "verdict:  pass: every invariant held".to_string(),
        ],
        replicas,
        moments: &moments,
        strokes: &strokes,
        lines: &lines,
        violation,
        words: <leasesim_retention::Retention as Render>::WORDS,
    };
    leasesim_timeline::render_html(&input)
}
