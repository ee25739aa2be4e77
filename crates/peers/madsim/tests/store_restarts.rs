//! The third workload on the madsim side, through its binary (the workload is chosen once per
//! process): the store restarts, the checkers see each restart as the store forgetting every
//! key, the correct worker passes across them, and the two workers a restart catches fail.

use std::process::Command;

const WORKLOAD: &str = "holder-volatile+restarts-only";

/// `run --workload WORKLOAD --worker WORKER --seed SEED --trace`: its standard output.
fn run(worker: &str, seed: u64) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_peer-madsim"))
        .args(["run", "--workload", WORKLOAD, "--worker", worker, "--trace"])
        .args(["--seed", &seed.to_string()])
        .output()
        .expect("the side's binary runs");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).expect("UTF-8")
}

#[test]
fn the_correct_worker_passes_across_store_restarts() {
    let out = run("correct", 0);
    assert!(out.contains("pass: every invariant held"), "{out}");
    let restarts = out.matches("Forgot { key: Claim, cause: Restart").count();
    assert!(restarts >= 1, "no store restart in seed 0:\n{out}");
    assert!(!out.contains("cause: Eviction") && !out.contains("cause: Failover"));
}

#[test]
fn a_restart_catches_a_plain_delete_and_a_swallowed_release() {
    let caught = |worker: &str, invariant: &str| {
        (0..5).any(|seed| run(worker, seed).contains(&format!("{invariant}: ")))
    };
    assert!(caught("plain-delete", "delete-own-claim"));
    assert!(caught("swallowed-release", "release-reported"));
}
