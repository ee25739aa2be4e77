//! `leasesim real`: its verdicts and exit codes on SQLite, and its bad input.

use std::process::{Command, Output};

fn leasesim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasesim"))
        .arg("real")
        .args(args)
        .env_remove("LEASESIM_PG_URL")
        .env_remove("LEASESIM_REDIS_URL")
        .output()
        .expect("the binary runs")
}

fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
#[ignore = "real time on tokio against a real store: .ci/run runs it on its own, not in the default run"]
fn a_defective_worker_breaks_its_invariant_in_a_real_run_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("run.db");
    let args = [
        "--worker",
        "stale-release",
        "--scenario",
        "reply-lost",
        "--duration",
        "3s",
        "--liveness",
        "4s",
    ];
    let output = leasesim(&[&args[..], &["--db", db.to_str().unwrap(), "--trace"]].concat());
    let (out, err) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{out}{err}");
    assert!(
        out.contains("verdict:  VIOLATION release-latest: "),
        "{out}"
    );
    assert!(
        out.contains("!! VIOLATION release-latest"),
        "the trace ends at the violation: {out}"
    );
    assert!(
        out.contains("applied #"),
        "the trace shows what the store applied: {out}"
    );
}

#[test]
#[ignore = "real time on tokio against a real store: .ci/run runs it on its own, not in the default run"]
fn the_correct_worker_passes_a_real_run_and_exits_0() {
    let output = leasesim(&["--duration", "2s", "--liveness", "3s", "--replicas", "2"]);
    let (out, err) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{out}{err}");
    assert!(
        out.contains("verdict:  pass: every invariant held"),
        "{out}"
    );
    assert!(out.contains("coverage: reached "), "{out}");
}

/// Each of `cases` exits 2 before any run, its message saying what it says.
fn assert_refused(cases: &[(&[&str], &str)]) {
    for (args, says) in cases {
        let output = leasesim(args);
        let (out, err) = text(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {out}{err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!out.contains("verdict:"), "{args:?} ran: {out}");
    }
}

#[test]
fn a_shared_world_systems_bad_input_is_refused_with_exit_2_before_any_run() {
    let cases: [(&[&str], &str); 10] = [
        (
            &["--system", "holder-lock", "--worker", "stale-release"],
            "unknown worker `stale-release`",
        ),
        (
            &["--system", "holder-lock", "--scenario", "items-steady"],
            "it is a `work-items` scenario, not a `holder-lock` one",
        ),
        (
            &["--system", "work-items", "--store", "redis"],
            "the work-items system's real stores are: sqlite, postgres",
        ),
        (
            &["--system", "reservations", "--store", "redis"],
            "the reservations system's real stores are: sqlite, postgres",
        ),
        (
            &["--system", "reservations", "--worker", "plain-delete"],
            "unknown worker `plain-delete`",
        ),
        (
            &["--system", "reservations", "--scenario", "items-steady"],
            "it is a `work-items` scenario, not a `reservations` one",
        ),
        (
            &["--system", "work-items", "--worker", "stale-release"],
            "unknown worker `stale-release`",
        ),
        (
            &["--system", "work-items", "--scenario", "steady"],
            "it is a `retention` scenario, not a `work-items` one",
        ),
        (&["--system", "work-items", "--scenario", "nope"], "nope"),
        // A liveness phase too short for the backlog: the correct worker fails it in
        // simulation, so the real run is refused rather than blaming the worker.
        (
            &[
                "--system",
                "work-items",
                "--scenario",
                "items-clock-skew",
                "--duration",
                "1s",
                "--liveness",
                "1s",
            ],
            "the correct worker fails it in simulation",
        ),
    ];
    assert_refused(&cases);
}

#[test]
fn bad_input_is_refused_with_exit_2_before_any_run() {
    let cases: [(&[&str], &str); 7] = [
        (
            &["--store", "redis"],
            "the retention system's real stores are: sqlite, postgres",
        ),
        (
            &["--system", "holder-lock", "--store", "sqlite"],
            "the holder-lock system's real stores are: redis",
        ),
        (&["--worker", "nope"], "unknown worker `nope`"),
        (&["--system", "nope"], "unknown system `nope`"),
        (&["--duration", "soon"], "soon"),
        // The command's own check names the flag (the library's refusal would not).
        (
            &["--duration", "50ms"],
            "for --duration: a real run's safety phase lasts at least",
        ),
        (
            &["--db", "/nonexistent-dir/run.db"],
            "for --db: cannot set up the store",
        ),
    ];
    assert_refused(&cases);
    let output = leasesim(&["--store", "postgres"]);
    let (_, err) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    let expected = match cfg!(feature = "postgres") {
        true => "no server: give --pg-url or set LEASESIM_PG_URL",
        false => "this binary has no PostgreSQL client",
    };
    assert!(err.contains(expected), "{err}");
    let output = leasesim(&["--system", "holder-lock"]);
    let (_, err) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    let expected = match cfg!(feature = "redis") {
        true => "no server: give --redis-url or set LEASESIM_REDIS_URL",
        false => "this binary has no Redis client",
    };
    assert!(err.contains(expected), "{err}");
}

#[test]
#[ignore = "real time on tokio against a real store: .ci/run runs it on its own, not in the default run"]
fn a_work_items_real_run_takes_its_scenario_on_the_shared_world() {
    let output = leasesim(&[
        "--system",
        "work-items",
        "--duration",
        "2s",
        "--liveness",
        "3s",
        "--runs",
        "2",
    ]);
    let (out, err) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{out}{err}");
    for line in [
        "scenario: items-steady (3 replicas)",
        "seed 0: pass: every invariant held",
        "seed 1: pass: every invariant held",
        "0 of 2 runs broke an invariant",
    ] {
        assert!(out.contains(line), "`{line}` missing: {out}");
    }
    assert!(out.contains("store calls answered, 0 refused"), "{out}");
    assert!(!out.contains("DIVERGES"), "{out}");
}

#[test]
#[ignore = "real time on tokio against a real store: .ci/run runs it on its own, not in the default run"]
fn a_reservations_real_run_takes_its_scenario_on_the_shared_world() {
    let output = leasesim(&[
        "--system",
        "reservations",
        "--duration",
        "1s",
        "--liveness",
        "2s",
        "--seed",
        "1",
    ]);
    let (out, err) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{out}{err}");
    for line in [
        "system:   reservations",
        "scenario: expiry-steady (3 replicas)",
        "verdict:  pass: every invariant held",
        "store calls answered, 0 refused",
        "coverage: reached ",
    ] {
        assert!(out.contains(line), "`{line}` missing: {out}");
    }
    assert!(!out.contains("DIVERGES"), "{out}");
}

#[test]
fn an_existing_db_file_is_refused_unless_replace_db_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let kept = dir.path().join("kept.db");
    std::fs::write(&kept, b"not a run's store").unwrap();
    let output = leasesim(&["--db", kept.to_str().unwrap()]);
    let (out, err) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{out}{err}");
    assert!(
        err.contains("--db") && err.contains("--replace-db"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&kept).unwrap(),
        b"not a run's store",
        "the file was touched"
    );
    // --replace-db alone names no file.
    let output = leasesim(&["--replace-db"]);
    let (out, err) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{out}{err}");
    assert!(err.contains("--db"), "{err}");
}

#[test]
#[ignore = "real time on tokio against a real store: .ci/run runs it on its own, not in the default run"]
fn replace_db_lets_a_run_use_an_existing_file() {
    let dir = tempfile::tempdir().unwrap();
    let kept = dir.path().join("kept.db");
    std::fs::write(&kept, b"not a run's store").unwrap();
    let path = kept.to_str().unwrap();
    let output = leasesim(&["--db", path, "--replace-db", "--duration", "200ms"]);
    let (out, err) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("verdict:  pass"), "{out}");
    assert_ne!(std::fs::read(&kept).unwrap(), b"not a run's store");
}

#[cfg(feature = "redis")]
#[test]
#[ignore = "real time on tokio against a Redis server (LEASESIM_REDIS_URL): .ci/run runs it"]
fn a_holder_lock_real_run_on_redis_takes_its_scenario_on_the_shared_world() {
    let url = std::env::var("LEASESIM_REDIS_URL").expect("LEASESIM_REDIS_URL names the server");
    let output = leasesim(&[
        "--system",
        "holder-lock",
        "--redis-url",
        &url,
        "--scenario",
        "holder-volatile",
        "--duration",
        "3s",
        "--liveness",
        "4s",
        "--runs",
        "2",
    ]);
    let (out, err) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{out}{err}");
    for line in [
        "store:    redis (namespace leasesim:real:",
        "scenario: holder-volatile (3 replicas)",
        "seed 0: pass: every invariant held",
        "seed 1: pass: every invariant held",
        "0 of 2 runs broke an invariant",
    ] {
        assert!(out.contains(line), "`{line}` missing: {out}");
    }
    assert!(out.contains("store calls answered, 0 refused"), "{out}");
    assert!(!out.contains("DIVERGES"), "{out}");
}
