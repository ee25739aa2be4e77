//! Campaign summaries: the table, coverage lines, JSON and JUnit.

use std::fmt::Write as _;
use std::path::Path;

use leasesim::Scenario;
use leasesim::Strategy;
use leasesim::error::UsageError;
use leasesim::fuzz::ScenarioSummary;
use leasesim_check::{CoverageTally, Situation};

use leasesim::catalog::{replay_line, scenario_ref};

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

/// One row per scenario: seeds, failing seeds by outcome, expected violations, coverage.
pub fn table(summaries: &[ScenarioSummary]) -> String {
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
    for summary in summaries {
        let reached = Situation::ALL
            .iter()
            .filter(|&&s| summary.coverage.count(s) > 0)
            .count();
        let _ = writeln!(
            out,
            "{:<24} {:>9} {:>8}  {:<34} {:<24} {:>8} {:>9.0}",
            summary.scenario,
            summary.seeds,
            summary.failed_seeds(),
            join_counts(&summary.failures),
            join_counts(&summary.expected),
            format!("{reached}/{}", Situation::ALL.len()),
            summary.seeds_per_s()
        );
        total.0 += summary.seeds;
        total.1 += summary.failed_seeds();
    }
    let _ = write!(out, "{:<24} {:>9} {:>8}", "total", total.0, total.1);
    out
}

/// How often each "sometimes" situation was reached over the whole campaign; gaps flagged.
pub fn coverage_lines(summaries: &[ScenarioSummary]) -> String {
    let mut tally = CoverageTally::new();
    for summary in summaries {
        tally.merge(&summary.coverage);
    }
    let mut out = String::from("\nsometimes-coverage (runs that reached each situation):\n");
    for situation in Situation::ALL {
        let count = tally.count(situation);
        let flag = if count == 0 {
            "  <- never reached: coverage gap"
        } else {
            ""
        };
        let _ = writeln!(out, "  {:<28} {:>9}{flag}", situation.name(), count);
    }
    let gaps = tally.gaps();
    if gaps.is_empty() {
        out.push_str("every situation was reached");
    } else {
        let names: Vec<&str> = gaps.iter().map(|s| s.name()).collect();
        let _ = write!(out, "coverage gaps: {}", names.join(", "));
    }
    out
}

/// PCT change points applied and drawn over the whole campaign.
pub fn pct_totals(summaries: &[ScenarioSummary]) -> (u64, u64) {
    let applied = summaries.iter().map(|s| s.pct_applied).sum();
    let drawn = summaries.iter().map(|s| s.pct_drawn).sum();
    (applied, drawn)
}

/// The campaign as one JSON document.
pub fn json_summary(
    summaries: &[ScenarioSummary],
    regressions: &[Regression],
    scenarios: &[Scenario],
    worker: &str,
    strategy: Strategy,
) -> String {
    let scenario_values: Vec<serde_json::Value> = summaries
        .iter()
        .zip(scenarios)
        .map(|(s, scenario)| {
            let coverage: serde_json::Map<String, serde_json::Value> = Situation::ALL
                .iter()
                .map(|&sit| (sit.name().to_string(), s.coverage.count(sit).into()))
                .collect();
            serde_json::json!({
                "scenario": s.scenario,
                "seeds": s.seeds,
                "failing": s.failed_seeds(),
                "failures": s.failures,
                "expected": s.expected,
                "coverage": coverage,
                "events": s.events,
                "seeds_per_s": s.seeds_per_s(),
                "checkers": leasesim::runner::checker_set(scenario),
                "pct_steps_estimate": s.pct_steps,
                "pct_change_points": {"applied": s.pct_applied, "drawn": s.pct_drawn},
            })
        })
        .collect();
    let findings: Vec<serde_json::Value> = summaries
        .iter()
        .zip(scenarios)
        .flat_map(|(s, scenario)| {
            let reference = scenario_ref(scenario);
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

/// A JUnit XML report: one test case per scenario (failing with its findings), and one per
/// failure-database regression that was replayed.
pub fn write_junit(
    path: &Path,
    summaries: &[ScenarioSummary],
    regressions: &[Regression],
    worker: &str,
) -> Result<(), UsageError> {
    let class = format!("leasesim.{worker}");
    let mut cases = String::new();
    let mut failing = 0;
    for summary in summaries {
        let failures: Vec<String> = summary
            .findings
            .iter()
            .filter(|f| !f.expected)
            .map(|f| format!("seed {}: {}: {}", f.seed, f.label, f.sentence))
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
    for regression in regressions {
        let entry = &regression.entry;
        let name = format!("regression {} seed {}", entry.scenario, entry.seed);
        let failures: Vec<String> = match regression.still_fails {
            true => vec![format!("{}: {}", entry.outcome, regression.sentence)],
            false => Vec::new(),
        };
        failing += usize::from(regression.still_fails);
        junit_case(
            &mut cases,
            &class,
            &name,
            0.0,
            &failures,
            "a recorded failure still fails",
        );
    }
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
