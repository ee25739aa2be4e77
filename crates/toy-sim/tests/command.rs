//! The toy's own command, `toy-leasesim` (`leasesim_cli::main_with` over the built-in systems
//! and the toy), end to end: a team's binary gets every subcommand for its own system.

use std::path::Path;
use std::process::{Command, Output};

/// Runs `toy-leasesim` with `args` in `dir`.
fn toy_leasesim(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toy-leasesim"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("toy-leasesim runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("UTF-8")
}

/// The arguments of a printed command line of this binary.
fn args_of(line: &str) -> Vec<&str> {
    let rest = line
        .strip_prefix("toy-leasesim ")
        .unwrap_or_else(|| panic!("not a toy-leasesim line: {line}"));
    rest.split_whitespace().collect()
}

#[test]
fn list_shows_the_toy_next_to_the_built_in_systems() {
    let dir = tempfile::tempdir().unwrap();
    let listed = toy_leasesim(dir.path(), &["list"]);
    assert_eq!(listed.status.code(), Some(0));
    let text = stdout(&listed);
    for line in [
        "  retention ",
        "  holder-lock ",
        "  toy ",
        "toy scenarios:",
        "  counter ",
    ] {
        assert!(text.contains(line), "`{line}` missing:\n{text}");
    }
}

#[test]
fn a_defective_toy_worker_is_fuzzed_replayed_shrunk_and_drawn_through_the_teams_binary() {
    let dir = tempfile::tempdir().unwrap();
    let fuzzed = toy_leasesim(
        dir.path(),
        &[
            "fuzz",
            "--system",
            "toy",
            "--worker",
            "blind-bump",
            "--seeds",
            "20",
        ],
    );
    assert_eq!(fuzzed.status.code(), Some(1), "{}", stdout(&fuzzed));
    let text = stdout(&fuzzed);
    let replay_line = text
        .lines()
        .find(|line| line.starts_with("toy-leasesim replay --scenario counter --seed "))
        .unwrap_or_else(|| panic!("no replay line naming this binary:\n{text}"));
    // The failure database is the binary's, in its working directory, as leasesim's is.
    let db = std::fs::read_to_string(dir.path().join(".leasesim/failures.toml")).unwrap();
    assert!(db.contains("worker = \"blind-bump\""), "{db}");

    let mut replay = args_of(replay_line);
    replay.extend(["--html", "timeline.html"]);
    let replayed = toy_leasesim(dir.path(), &replay);
    assert_eq!(replayed.status.code(), Some(1));
    assert!(
        stdout(&replayed).contains("!! claimed-bump violated"),
        "{}",
        stdout(&replayed)
    );
    let html = std::fs::read_to_string(dir.path().join("timeline.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"), "{}", &html[..40]);

    let seed = args_of(replay_line)[4];
    let shrunk = toy_leasesim(
        dir.path(),
        &[
            "shrink",
            "--scenario",
            "counter",
            "--seed",
            seed,
            "--worker",
            "blind-bump",
        ],
    );
    let text = stdout(&shrunk);
    let choices_line = text
        .lines()
        .find(|line| {
            line.starts_with(
                "toy-leasesim replay --scenario counter --worker blind-bump --choices ",
            )
        })
        .unwrap_or_else(|| panic!("no replay line of the shrunk choices:\n{text}"));
    let again = toy_leasesim(dir.path(), &args_of(choices_line));
    assert_eq!(again.status.code(), Some(1));
    assert!(
        stdout(&again).contains("!! claimed-bump violated"),
        "{}",
        stdout(&again)
    );
}

#[test]
fn the_correct_toy_worker_passes_and_detect_measures_the_toys_defects() {
    let dir = tempfile::tempdir().unwrap();
    let clean = toy_leasesim(dir.path(), &["fuzz", "--system", "toy", "--seeds", "30"]);
    assert_eq!(clean.status.code(), Some(0), "{}", stdout(&clean));
    let detected = toy_leasesim(
        dir.path(),
        &[
            "detect",
            "--system",
            "toy",
            "--ranges",
            "3",
            "--strategy",
            "random",
        ],
    );
    assert_eq!(detected.status.code(), Some(0));
    let text = stdout(&detected);
    for worker in ["| blind-bump | random |", "| double-bump | random |"] {
        let row = text.lines().find(|l| l.starts_with(worker));
        let row = row.unwrap_or_else(|| panic!("no row `{worker}`:\n{text}"));
        assert!(row.contains("| 3/3 | claimed-bump |"), "{row}");
    }
}

#[test]
fn a_system_without_real_runs_is_refused_by_real() {
    let dir = tempfile::tempdir().unwrap();
    let refused = toy_leasesim(dir.path(), &["real", "--system", "toy"]);
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8(refused.stderr).unwrap();
    assert!(err.contains("no real store is registered for it"), "{err}");
    assert!(err.contains("real runs exist for: retention"), "{err}");
}
