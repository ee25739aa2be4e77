//! Campaign summaries: the table, coverage lines, JSON and JUnit.

use std::fmt::Write as _;
use std::path::Path;

use leasesim::Scenario;
use leasesim::Strategy;
use leasesim::error::UsageError;
use leasesim::fuzz::ScenarioSummary;
use leasesim_check::{CoverageTally, Situation};

use super::{Regression, replay_line, scenario_ref};

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
        .map(|s| {
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
            })
        })
        .collect();
    let document = serde_json::json!({
        "worker": worker,
        "strategy": strategy.to_string(),
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

/// A JUnit XML report: one test case per scenario, failing with its findings.
pub fn write_junit(
    path: &Path,
    summaries: &[ScenarioSummary],
    worker: &str,
) -> Result<(), UsageError> {
    let failing = summaries.iter().filter(|s| s.failed_seeds() > 0).count();
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        xml,
        "<testsuites name=\"leasesim\" tests=\"{}\" failures=\"{failing}\">",
        summaries.len()
    );
    let _ = writeln!(
        xml,
        "  <testsuite name=\"leasesim fuzz ({})\" tests=\"{}\" failures=\"{failing}\">",
        xml_escape(worker),
        summaries.len()
    );
    for summary in summaries {
        let _ = write!(
            xml,
            "    <testcase classname=\"leasesim.{}\" name=\"{}\" time=\"{:.3}\"",
            xml_escape(worker),
            xml_escape(&summary.scenario),
            summary.wall_s
        );
        let failures: Vec<_> = summary.findings.iter().filter(|f| !f.expected).collect();
        if failures.is_empty() {
            xml.push_str("/>\n");
            continue;
        }
        xml.push_str(">\n");
        let message = format!("{} of {} seeds failed", failures.len(), summary.seeds);
        let _ = writeln!(xml, "      <failure message=\"{}\">", xml_escape(&message));
        for finding in failures {
            let _ = writeln!(
                xml,
                "seed {}: {}: {}",
                finding.seed,
                xml_escape(&finding.label),
                xml_escape(&finding.sentence)
            );
        }
        xml.push_str("      </failure>\n    </testcase>\n");
    }
    xml.push_str("  </testsuite>\n</testsuites>\n");
    std::fs::write(path, xml).map_err(|err| UsageError::File {
        path: path.display().to_string(),
        why: format!("cannot write JUnit report: {err}"),
    })
}
