//! `leasesim envelope`: its output formats, its counterexample and its replay lines, and its
//! bad input.
//!
//! Terminology:
//! - *story envelope*: holder-lock's `holder-long-jobs` (a 3 s claim never renewed, jobs of
//!   0.8-1.6 s and sometimes 3.6-6 s) over the claim's lifetime, with `plain-delete` (which
//!   releases by deleting the key by name): where a job outlasts its claim, its release
//!   deletes a rival's claim.

use std::process::{Command, Output};

fn leasesim(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasesim"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the binary runs")
}

fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn scenario_path(name: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/holder-lock");
    root.join(format!("{name}.toml")).display().to_string()
}

const STORY: [&str; 8] = [
    "envelope",
    "--worker",
    "plain-delete",
    "--vary",
    "claim.lifetime_ms=2000..8000",
    "--resolution",
    "7",
    "--seeds=40",
];

#[test]
fn an_envelope_prints_its_map_and_a_counterexample_whose_choices_replay_the_violation() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = scenario_path("holder-long-jobs");
    let output = leasesim(
        dir.path(),
        &[&STORY[..], &["--scenario", &scenario]].concat(),
    );
    let (out, err) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{out}{err}");
    assert!(
        out.contains("x: claim.lifetime_ms from 2000 to 8000 (7 values)"),
        "{out}"
    );
    assert!(out.contains("runs: "), "{out}");
    let counter = out
        .lines()
        .find(|l| l.starts_with("counterexample nearest the boundary: claim.lifetime_ms = "))
        .unwrap_or_else(|| panic!("a counterexample: {out}"));
    assert!(counter.contains("breaks "), "{counter}");
    let replay = out
        .lines()
        .find(|l| l.contains(" replay ") && l.contains("--choices "))
        .unwrap_or_else(|| panic!("a choices replay line: {out}"));
    let choices = replay.rsplit("--choices ").next().unwrap();
    let args = [
        "replay",
        "--scenario",
        &scenario,
        "--worker",
        "plain-delete",
        "--choices",
        choices,
    ];
    let replayed = leasesim(dir.path(), &args);
    let (trace, err) = text(&replayed);
    assert_eq!(
        replayed.status.code(),
        Some(1),
        "the shrunk run fails again: {trace}{err}"
    );
    assert!(trace.contains("verdict:  VIOLATION "), "{trace}");
    assert!(
        trace.contains("claim.lifetime_ms = "),
        "the point's setting is in the header: {trace}"
    );
}

#[test]
fn the_seed_replay_line_with_its_settings_breaks_the_same_invariant() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = scenario_path("holder-long-jobs");
    let output = leasesim(
        dir.path(),
        &[&STORY[..], &["--scenario", &scenario, "--format", "json"]].concat(),
    );
    let (out, err) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{out}{err}");
    let json: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let points = json["points"].as_array().expect("points");
    assert!(
        !points.is_empty() && json["runs"].as_u64() < json["grid_runs"].as_u64(),
        "{json}"
    );
    assert!(
        points
            .iter()
            .all(|p| p["values"]["claim.lifetime_ms"].is_u64() && p["seeds"] == 40)
    );
    let counter = &json["counterexample"];
    let seed = counter["seed"].as_u64().expect("a seed").to_string();
    let lifetime = counter["values"]["claim.lifetime_ms"]
        .as_u64()
        .expect("a value");
    let set = format!("claim.lifetime_ms = {lifetime}");
    let args = [
        "replay",
        "--scenario",
        &scenario,
        "--worker",
        "plain-delete",
        "--seed",
        &seed,
        "--set",
        &set,
    ];
    let replayed = leasesim(dir.path(), &args);
    let (trace, err) = text(&replayed);
    assert_eq!(replayed.status.code(), Some(1), "{trace}{err}");
    let label = counter["label"].as_str().expect("a label");
    assert!(
        trace.contains(&format!("VIOLATION {label}")),
        "{label}: {trace}"
    );
    assert!(trace.contains(&format!("set:      {set}")), "{trace}");
}

#[test]
fn bad_input_is_refused_with_the_flag_it_came_from_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 11] = [
        // Keys the system does not have, in each of the loader's words for it.
        (
            &["--vary", "latency.renewx=1..10"],
            "unknown operation `renewx`",
        ),
        (
            &["--vary", "worker.renew_every_ms=100..900"],
            "unknown key `worker`",
        ),
        // A range past a rule at every point: a map of refusals says nothing.
        (
            &["--vary", "claim.lifetime_ms=5..20"],
            "refuses every point of the grid",
        ),
        // A whole-number key asked for fractions.
        (&["--vary", "claim.lifetime_ms=0.5..2.5"], "invalid type"),
        (&["--vary", "claim.lifetime_ms=5..1"], "--vary"),
        (&["--vary", "claim.lifetime_ms"], "--vary"),
        (
            &["--vary", "claim.lifetim_ms=1000..2000"],
            "unknown field `lifetim_ms`",
        ),
        (
            &["--vary", "claim.lifetime_ms=1000..1003"],
            "distinct values",
        ),
        (
            &["--vary", "a=1..2", "--vary", "b=1..2", "--vary", "c=1..2"],
            "one key or two",
        ),
        (
            &[
                "--vary",
                "claim.lifetime_ms=1000..2000",
                "--situation",
                "nope",
            ],
            "unknown situation `nope`",
        ),
        (
            &[
                "--vary",
                "claim.lifetime_ms=1000..2000",
                "--resolution",
                "1",
            ],
            "--resolution",
        ),
    ];
    for (args, expected) in cases {
        let all = [
            &["envelope", "--scenario", "holder-steady", "--seeds", "2"][..],
            args,
        ]
        .concat();
        let output = leasesim(dir.path(), &all);
        let (out, err) = text(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {out}{err}");
        assert!(err.contains(expected), "{args:?}: {err}");
    }
}

#[test]
fn an_unwritable_map_path_is_refused_before_any_seed_runs() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "").unwrap();
    let html = blocker.join("map.html");
    let args = [
        "envelope",
        "--scenario",
        "holder-steady",
        "--vary",
        "claim.lifetime_ms=2000..4000",
        "--html",
        html.to_str().unwrap(),
    ];
    let output = leasesim(dir.path(), &args);
    let (out, err) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{out}{err}");
    assert!(
        err.contains("map.html") && !err.contains("points run"),
        "{err}"
    );
}
