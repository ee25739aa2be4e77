//! The third workload on the turmoil side, through its binary (the workload is chosen once per
//! process): the store restarts, the checkers see each restart as the store forgetting every
//! key, the correct worker passes across them, and the two workers a restart catches fail
//! after a restart.

use std::process::Command;

const WORKLOAD: &str = "holder-volatile+restarts-only";

/// `run --workload WORKLOAD --worker WORKER --seed SEED --trace`: its standard output.
fn run(worker: &str, seed: u64) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_peers-turmoil"))
        .args(["run", "--workload", WORKLOAD, "--worker", worker, "--trace"])
        .args(["--seed", &seed.to_string()])
        .output()
        .expect("the side's binary runs");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).expect("UTF-8")
}

/// The ms of the first trace line (`t=   N ms Event ..`) containing `needle`.
fn first_ms(out: &str, needle: &str) -> Option<u64> {
    let line = out.lines().find(|line| line.contains(needle))?;
    let rest = line.strip_prefix("t=")?.trim_start();
    rest.split("ms").next()?.parse().ok()
}

/// The instant the verdict's sentence names first (`INVARIANT: .. at t=Nms ..`), if the run
/// broke `invariant`.
fn violation_ms(out: &str, invariant: &str) -> Option<u64> {
    let verdict = format!("{invariant}: ");
    let line = out
        .lines()
        .find(|line| !line.starts_with("t=") && line.contains(&verdict))?;
    let rest = &line[line.find(&verdict)?..];
    let rest = &rest[rest.find("t=")? + 2..];
    rest.split("ms").next()?.parse().ok()
}

#[test]
fn the_correct_worker_passes_across_store_restarts() {
    let out = run("correct", 0);
    assert!(out.contains("pass: every invariant held"), "{out}");
    let restarts = out.matches("Forgot { key: Claim, cause: Restart").count();
    assert!(restarts >= 1, "no store restart in seed 0:\n{out}");
}

#[test]
fn a_restart_catches_a_plain_delete_and_a_swallowed_release() {
    for (worker, invariant) in [
        ("plain-delete", "delete-own-claim"),
        ("swallowed-release", "release-reported"),
    ] {
        let caught = (0..5)
            .map(|seed| run(worker, seed))
            .find_map(|out| violation_ms(&out, invariant).map(|at_ms| (at_ms, out)));
        let (at_ms, out) = caught.unwrap_or_else(|| panic!("{worker}: not caught in seeds 0..5"));
        let restart_ms = first_ms(&out, "cause: Restart").expect("a store restart");
        assert!(
            restart_ms <= at_ms,
            "{worker}: broke {invariant} at {at_ms} ms, before the first restart ({restart_ms} ms)"
        );
    }
}
