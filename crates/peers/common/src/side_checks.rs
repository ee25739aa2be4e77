//! Checks every side's binary passes on the store-restart workload, shared by each side's
//! `tests/store_restarts.rs` (the workload is chosen once per process, so each check runs the
//! side's binary).
//!
//! Terminology:
//! - *side's binary*: `peers-leasesim`, `peers-turmoil` or `peer-madsim`, run as
//!   `run --workload holder-volatile+restarts-only --worker W --seed N --trace`: its trace
//!   lines (`t=   N ms Event ..`) and its verdict line.
//! - *restart line*: the trace line of a store restart, `Forgot { key: Claim, cause: Restart`.

use std::process::Command;

use crate::workload::VOLATILE;

const RESTART: &str = "Forgot { key: Claim, cause: Restart";

/// `binary run --workload VOLATILE --worker WORKER --seed SEED --trace`: its standard output.
pub fn run_side(binary: &str, worker: &str, seed: u64) -> String {
    let output = Command::new(binary)
        .args([
            "run",
            "--workload",
            VOLATILE.name,
            "--worker",
            worker,
            "--trace",
        ])
        .args(["--seed", &seed.to_string()])
        .output()
        .expect("the side's binary runs");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).expect("UTF-8")
}

/// The ms of the first trace line containing `needle`.
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

/// The correct worker passes seed 0, which restarts the store at least once; returns the
/// output for a side's own further checks.
pub fn correct_worker_passes_across_restarts(binary: &str) -> String {
    let out = run_side(binary, "correct", 0);
    assert!(out.contains("pass: every invariant held"), "{out}");
    assert!(out.contains(RESTART), "no store restart in seed 0:\n{out}");
    out
}

/// A plain delete and a swallowed release each break their invariant within seeds 0..5,
/// after the run's first store restart.
pub fn a_restart_catches_a_plain_delete_and_a_swallowed_release(binary: &str) {
    for (worker, invariant) in [
        ("plain-delete", "delete-own-claim"),
        ("swallowed-release", "release-reported"),
    ] {
        let caught = (0..5)
            .map(|seed| run_side(binary, worker, seed))
            .find_map(|out| violation_ms(&out, invariant).map(|at_ms| (at_ms, out)));
        let (at_ms, out) = caught.unwrap_or_else(|| panic!("{worker}: not caught in seeds 0..5"));
        let restart_ms = first_ms(&out, RESTART).expect("a store restart");
        assert!(
            restart_ms <= at_ms,
            "{worker}: broke {invariant} at {at_ms} ms, before the first restart ({restart_ms} ms)"
        );
    }
}
