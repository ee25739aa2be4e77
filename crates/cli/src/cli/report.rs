//! Campaign summaries: the table, coverage lines, JSON and JUnit; and `list`.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use leasesim::Strategy;
use leasesim::catalog::{self, replay_line, scenario_ref};
use leasesim::error::UsageError;
use leasesim::fuzz::ScenarioSummary;
use leasesim::registry::installed;
use leasesim::systems::{AnyScenario, AnySystem};
use leasesim_invariants::{CoverageTally, Landing};

use super::Regression;

fn join_counts(counts: &std::collections::BTreeMap<String, u64>) -> String {
    if counts.is_empty() {
        return "-".into();
    }
    counts
        .iter()
        .map(|(label, n)| format!("{label}={n}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One system's `list` section: its scenarios, workers, invariants and situations.
pub fn list_system(system: &dyn AnySystem) -> Result<(), UsageError> {
    let name = system.name();
    println!("\n{name} scenarios:");
    for scenario in catalog::resolve_in("all", Some(name))? {
        println!("  {:<24} {}", scenario.name(), scenario.description());
    }
    println!("\n{name} workers:");
    for worker in system.workers() {
        let caught = match worker.caught_by.is_empty() {
            true => String::new(),
            false => format!(" [caught by {}]", worker.caught_by.join(", ")),
        };
        println!("  {:<24} {}{caught}", worker.name, worker.description);
    }
    println!("\n{name} invariants:");
    for (invariant, holds_when) in system.invariants() {
        println!("  {invariant:<24} {holds_when}");
    }
    println!("\n{name} situations (\"sometimes\" coverage):");
    for (situation, describe) in system.situations() {
        println!("  {situation:<24} {describe}");
    }
    Ok(())
}

/// `list --json`: `{"systems": [{"name", "description", "scenarios": [names], "workers":
/// [{"name", "defect", "caught_by": [invariants]}], "invariants": [names], "situations":
/// [names]}]}`.
pub fn list_json(systems: &[&'static dyn AnySystem]) -> Result<String, UsageError> {
    let mut values = Vec::new();
    for system in systems {
        let scenarios: Vec<String> = catalog::resolve_in("all", Some(system.name()))?
            .iter()
            .map(|s| s.name().to_string())
            .collect();
        let workers: Vec<serde_json::Value> = system
            .workers()
            .iter()
            .map(|w| serde_json::json!({"name": w.name, "defect": w.description, "caught_by": w.caught_by}))
            .collect();
        let names = |pairs: Vec<(&'static str, &'static str)>| -> Vec<&'static str> {
            pairs.into_iter().map(|(name, _)| name).collect()
        };
        values.push(serde_json::json!({
            "name": system.name(),
            "description": system.description(),
            "scenarios": scenarios,
            "workers": workers,
            "invariants": names(system.invariants()),
            "situations": names(system.situations()),
        }));
    }
    let document = serde_json::json!({ "systems": values });
    Ok(serde_json::to_string_pretty(&document).expect("JSON values serialise"))
}

/// `(situations reached, situations)` of a summary, out of its system's list.
fn reached(summary: &ScenarioSummary, scenario: &dyn AnyScenario) -> (usize, usize) {
    let all = scenario.system().situations().len();
    let reached = (0..all)
        .filter(|&i| summary.coverage.count_at(i) > 0)
        .count();
    (reached, all)
}

/// One row per scenario: seeds, failing seeds by outcome, expected violations, coverage.
pub fn table(summaries: &[ScenarioSummary], scenarios: &[Arc<dyn AnyScenario>]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{:<24} {:>9} {:>8}  {:<34} {:<24} {:>8} {:>9}",
        "scenario",
        "seeds",
        "failing",
        "violations by invariant",
        "expected",
        "coverage",
        "seeds/s"
    );
    let mut total = (0u64, 0u64);
    for (summary, scenario) in summaries.iter().zip(scenarios) {
        let (reached, all) = reached(summary, scenario.as_ref());
        let _ = writeln!(
            out,
            "{:<24} {:>9} {:>8}  {:<34} {:<24} {:>8} {:>9.0}",
            summary.scenario,
            summary.seeds,
            summary.failed_seeds(),
            join_counts(&summary.failures),
            join_counts(&summary.expected),
            format!("{reached}/{all}"),
            summary.seeds_per_s()
        );
        total.0 += summary.seeds;
        total.1 += summary.failed_seeds();
    }
    let _ = write!(out, "{:<24} {:>9} {:>8}", "total", total.0, total.1);
    out
}

/// How often each "sometimes" situation was reached over the whole campaign, system by
/// system; gaps flagged.
pub fn coverage_lines(summaries: &[ScenarioSummary], scenarios: &[Arc<dyn AnyScenario>]) -> String {
    let mut out = String::new();
    for system in installed().systems() {
        let mut tally = CoverageTally::new();
        let mut ran = false;
        for (summary, scenario) in summaries.iter().zip(scenarios) {
            if scenario.system().name() == system.name() {
                tally.merge(&summary.coverage);
                ran = true;
            }
        }
        if ran {
            coverage_of(&mut out, *system, &tally);
            in_flight_of(
                &mut out,
                *system,
                &in_flight_tally(summaries, scenarios, *system),
            );
        }
    }
    out.trim_end().to_string()
}

fn coverage_of(out: &mut String, system: &dyn AnySystem, tally: &CoverageTally) {
    let _ = writeln!(
        out,
        "\nsometimes-coverage of {} (runs that reached each situation):",
        system.name()
    );
    let mut gaps = Vec::new();
    for (index, (situation, _)) in system.situations().into_iter().enumerate() {
        let count = tally.count_at(index);
        let flag = match count {
            0 => "  <- never reached: coverage gap",
            _ => "",
        };
        if count == 0 {
            gaps.push(situation);
        }
        let _ = writeln!(out, "  {situation:<28} {count:>9}{flag}");
    }
    match gaps.is_empty() {
        true => out.push_str("every situation was reached\n"),
        false => {
            let _ = writeln!(out, "coverage gaps: {}", gaps.join(", "));
        }
    }
}

/// The in-flight cells of `system`'s scenarios, summed over the campaign.
fn in_flight_tally(
    summaries: &[ScenarioSummary],
    scenarios: &[Arc<dyn AnyScenario>],
    system: &dyn AnySystem,
) -> CoverageTally {
    let mut tally = CoverageTally::new();
    let of_system = summaries
        .iter()
        .zip(scenarios)
        .filter(|(_, scenario)| scenario.system().name() == system.name());
    for (summary, _) in of_system {
        tally.merge(&summary.in_flight);
    }
    tally
}

/// The in-flight cells as a table: one row per operation the campaign called, one column per
/// landing (runs that reached the cell); cells no run reached listed as gaps.
fn in_flight_of(out: &mut String, system: &dyn AnySystem, tally: &CoverageTally) {
    let ops = system.ops();
    let count = |landing: Landing, op: usize| tally.count_at(landing.cell(op, ops.len()));
    let _ = writeln!(
        out,
        "\nin-flight coverage of {} (runs in which each fault met a call of that kind in flight):",
        system.name()
    );
    let _ = write!(out, "  {:<20}", "call");
    for landing in Landing::ALL {
        let _ = write!(out, " {:>10}", landing.name());
    }
    out.push('\n');
    let (mut gaps, mut uncalled) = (Vec::new(), Vec::new());
    for (index, op) in ops.iter().enumerate() {
        if count(Landing::Called, index) == 0 {
            uncalled.push(*op);
            continue;
        }
        let _ = write!(out, "  {op:<20}");
        for landing in Landing::ALL {
            let runs = count(landing, index);
            if runs == 0 {
                gaps.push(landing.situation(op));
            }
            let _ = write!(out, " {runs:>10}");
        }
        out.push('\n');
    }
    if !uncalled.is_empty() {
        let _ = writeln!(out, "never called: {}", uncalled.join(", "));
    }
    match gaps.is_empty() {
        true => out.push_str("every fault met every call kind in flight\n"),
        false => {
            let _ = writeln!(out, "in-flight gaps: {}", gaps.join(", "));
        }
    }
}

/// PCT change points applied and drawn over the whole campaign.
/// `(events, events per second)` over a whole campaign: every event every seed ran, over the
/// wall time of its scenarios' campaigns (0 per second when no time was measured).
pub fn event_totals(summaries: &[ScenarioSummary]) -> (u64, f64) {
    let events: u64 = summaries.iter().map(|s| s.events).sum();
    let wall_s: f64 = summaries.iter().map(|s| s.wall_s).sum();
    let per_s = if wall_s > 0.0 {
        events as f64 / wall_s
    } else {
        0.0
    };
    (events, per_s)
}

/// The campaign's event line, exactly `events: N (E/s)`: instructions per event can be
/// computed from it by anyone who counts the instructions.
pub fn events_line(summaries: &[ScenarioSummary]) -> String {
    let (events, per_s) = event_totals(summaries);
    format!("events: {events} ({per_s:.0}/s)")
}

pub fn pct_totals(summaries: &[ScenarioSummary]) -> (u64, u64) {
    let applied = summaries.iter().map(|s| s.pct_applied).sum();
    let drawn = summaries.iter().map(|s| s.pct_drawn).sum();
    (applied, drawn)
}

/// One scenario's campaign as JSON.
fn scenario_json(s: &ScenarioSummary, scenario: &dyn AnyScenario) -> serde_json::Value {
    let coverage: serde_json::Map<String, serde_json::Value> = scenario
        .system()
        .situations()
        .iter()
        .enumerate()
        .map(|(i, (name, _))| (name.to_string(), s.coverage.count_at(i).into()))
        .collect();
    let in_flight = in_flight_json(&s.in_flight, &scenario.system().ops());
    serde_json::json!({
        "scenario": s.scenario,
        "system": scenario.system().name(),
        "seeds": s.seeds,
        "failing": s.failed_seeds(),
        "failures": s.failures,
        "expected": s.expected,
        "coverage": coverage,
        "in_flight": in_flight,
        "events": s.events,
        "seeds_per_s": s.seeds_per_s(),
        "checkers": scenario.checker_set(),
        "pct_steps_estimate": s.pct_steps,
        "pct_change_points": {"applied": s.pct_applied, "drawn": s.pct_drawn},
        "residual_risk": s.residual_risk().map(|p| serde_json::json!({
            "seeds": s.seeds,
            "confidence": 0.95,
            "p_upper": p,
        })),
    })
}

/// Per scenario with no failing seed, the bound its seeds support (see
/// [`ScenarioSummary::residual_risk`]); empty when every scenario had a failure.
pub fn risk_lines(summaries: &[ScenarioSummary]) -> String {
    let lines: Vec<String> = summaries
        .iter()
        .filter_map(|s| {
            let p = s.residual_risk()?;
            Some(format!(
                "  {:<24} no failing seed in {}: p < 3/{} = {:.2} %",
                s.scenario,
                s.seeds,
                s.seeds,
                100.0 * p
            ))
        })
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    format!(
        "\nresidual risk, at 95 % confidence (p: the chance that a further seed fails)\n{}",
        lines.join("\n")
    )
}

/// `{"op": {"calls": n, "stop": n, ...}}`: runs per in-flight cell, every operation.
fn in_flight_json(tally: &CoverageTally, ops: &[&'static str]) -> serde_json::Value {
    let row = |index: usize| -> serde_json::Map<String, serde_json::Value> {
        Landing::ALL
            .iter()
            .map(|l| {
                (
                    l.name().to_string(),
                    tally.count_at(l.cell(index, ops.len())).into(),
                )
            })
            .collect()
    };
    let rows: serde_json::Map<String, serde_json::Value> = ops
        .iter()
        .enumerate()
        .map(|(index, op)| (op.to_string(), row(index).into()))
        .collect();
    rows.into()
}

/// The whole campaign's totals: seeds run, failing seeds (and by outcome), expected
/// violations, regressions replayed and still failing.
fn totals_json(summaries: &[ScenarioSummary], regressions: &[Regression]) -> serde_json::Value {
    let mut failures: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
    let mut expected: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
    for summary in summaries {
        for (label, n) in &summary.failures {
            *failures.entry(label.clone()).or_insert(0) += n;
        }
        for (label, n) in &summary.expected {
            *expected.entry(label.clone()).or_insert(0) += n;
        }
    }
    serde_json::json!({
        "scenarios": summaries.len(),
        "seeds": summaries.iter().map(|s| s.seeds).sum::<u64>(),
        "failing": summaries.iter().map(ScenarioSummary::failed_seeds).sum::<u64>(),
        "failures": failures,
        "expected": expected,
        "events": event_totals(summaries).0,
        "events_per_s": event_totals(summaries).1,
        "regressions": regressions.len(),
        "regressions_still_failing": regressions.iter().filter(|r| r.still_fails).count(),
    })
}

/// The campaign as one JSON document. `seed_range` says which seeds it asked for.
pub fn json_summary(
    summaries: &[ScenarioSummary],
    regressions: &[Regression],
    scenarios: &[Arc<dyn AnyScenario>],
    (worker, strategy): (&str, Strategy),
    seed_range: serde_json::Value,
) -> String {
    let scenario_values: Vec<serde_json::Value> = summaries
        .iter()
        .zip(scenarios)
        .map(|(s, scenario)| scenario_json(s, scenario.as_ref()))
        .collect();
    let findings: Vec<serde_json::Value> = summaries
        .iter()
        .zip(scenarios)
        .flat_map(|(s, scenario)| {
            let reference = scenario_ref(scenario.as_ref());
            s.findings.iter().map(move |f| {
                serde_json::json!({
                    "scenario": reference,
                    "seed": f.seed,
                    "outcome": f.label,
                    "expected": f.expected,
                    "sentence": f.sentence,
                    "replay": replay_line(&reference, f.seed, worker, strategy),
                })
            })
        })
        .collect();
    let regression_values: Vec<serde_json::Value> = regressions
        .iter()
        .map(|r| {
            serde_json::json!({
                "scenario": r.entry.scenario,
                "seed": r.entry.seed,
                "outcome": r.entry.outcome,
                "still_fails": r.still_fails,
                "sentence": r.sentence,
                "replay": replay_line(&r.entry.scenario, r.entry.seed, worker, strategy),
            })
        })
        .collect();
    let (applied, drawn) = pct_totals(summaries);
    let document = serde_json::json!({
        "worker": worker,
        "strategy": strategy.to_string(),
        "seed_range": seed_range,
        "totals": totals_json(summaries, regressions),
        "pct_change_points": {"applied": applied, "drawn": drawn},
        "scenarios": scenario_values,
        "findings": findings,
        "regressions": regression_values,
    });
    serde_json::to_string_pretty(&document).expect("JSON values serialise")
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Fails early when the JUnit report cannot be written (creates an empty file).
pub fn check_junit_writable(path: &Path) -> Result<(), UsageError> {
    std::fs::write(path, b"").map_err(|err| UsageError::File {
        path: path.display().to_string(),
        why: format!("cannot write JUnit report: {err}"),
    })
}

fn junit_case(
    xml: &mut String,
    class: &str,
    name: &str,
    time_s: f64,
    failures: &[String],
    message: &str,
) {
    let _ = write!(
        xml,
        "    <testcase classname=\"{}\" name=\"{}\" time=\"{time_s:.3}\"",
        xml_escape(class),
        xml_escape(name)
    );
    if failures.is_empty() {
        xml.push_str("/>\n");
        return;
    }
    let _ = writeln!(
        xml,
        ">\n      <failure message=\"{}\">",
        xml_escape(message)
    );
    for line in failures {
        let _ = writeln!(xml, "{}", xml_escape(line));
    }
    xml.push_str("      </failure>\n    </testcase>\n");
}

/// A JUnit XML report: one test case per scenario (failing with its findings, each with its
/// replay line), and one per failure-database regression that was replayed.
/// One JUnit case per replayed regression; the number that still fail.
fn junit_regressions(
    cases: &mut String,
    class: &str,
    regressions: &[Regression],
    (worker, strategy): (&str, Strategy),
) -> usize {
    let mut failing = 0;
    for regression in regressions {
        let entry = &regression.entry;
        let name = format!("regression {} seed {}", entry.scenario, entry.seed);
        let failures: Vec<String> = match regression.still_fails {
            true => {
                let replay = replay_line(&entry.scenario, entry.seed, worker, strategy);
                vec![format!(
                    "{}: {}\n{replay}",
                    entry.outcome, regression.sentence
                )]
            }
            false => Vec::new(),
        };
        failing += usize::from(regression.still_fails);
        junit_case(
            cases,
            class,
            &name,
            0.0,
            &failures,
            "a recorded failure still fails",
        );
    }
    failing
}

pub fn write_junit(
    path: &Path,
    (summaries, scenarios): (&[ScenarioSummary], &[Arc<dyn AnyScenario>]),
    regressions: &[Regression],
    (worker, strategy): (&str, Strategy),
) -> Result<(), UsageError> {
    let class = format!("leasesim.{worker}");
    let mut cases = String::new();
    let mut failing = 0;
    for (summary, scenario) in summaries.iter().zip(scenarios) {
        let reference = scenario_ref(scenario.as_ref());
        let failures: Vec<String> = summary
            .findings
            .iter()
            .filter(|f| !f.expected)
            .map(|f| {
                let replay = replay_line(&reference, f.seed, worker, strategy);
                format!("seed {}: {}: {}\n{replay}", f.seed, f.label, f.sentence)
            })
            .collect();
        failing += usize::from(!failures.is_empty());
        let message = format!("{} of {} seeds failed", failures.len(), summary.seeds);
        junit_case(
            &mut cases,
            &class,
            &summary.scenario,
            summary.wall_s,
            &failures,
            &message,
        );
    }
    failing += junit_regressions(&mut cases, &class, regressions, (worker, strategy));
    let tests = summaries.len() + regressions.len();
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        xml,
        "<testsuites name=\"leasesim\" tests=\"{tests}\" failures=\"{failing}\">"
    );
    let _ = writeln!(
        xml,
        "  <testsuite name=\"leasesim fuzz ({})\" tests=\"{tests}\" failures=\"{failing}\">",
        xml_escape(worker)
    );
    xml.push_str(&cases);
    xml.push_str("  </testsuite>\n</testsuites>\n");
    std::fs::write(path, xml).map_err(|err| UsageError::File {
        path: path.display().to_string(),
        why: format!("cannot write JUnit report: {err}"),
    })
}
