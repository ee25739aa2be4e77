//! Checking a worker of one's own, with leasesim as the only dependency.

use leasesim::retention::prelude::*;
use user_crate::MyWorker;

#[test]
fn the_careful_worker_survives_the_default_scenarios() {
    for scenario in [
        "steady",
        "renewal-reorder",
        "renewal-rejection",
        "reply-lost",
        "stop-anywhere",
        "lease-expiry-successor",
        "swarm",
    ] {
        check(scenario, MyWorker::new).seeds(200);
        check(scenario, MyWorker::new)
            .strategy(Strategy::Pct { depth: 3 })
            .seeds(100);
    }
}

#[test]
fn a_leaked_renewal_task_is_caught_shrunk_traced_and_drawn() {
    // A directory of this run's own: parallel runs of this test never share a file.
    let dir = std::env::temp_dir().join(format!("user-crate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let html = dir.join("leaky.html");
    let failure = check("slow-deletes", MyWorker::leaky)
        .worker_name("leaky")
        .shrink()
        .trace()
        .html(&html)
        .try_seeds(50)
        .expect_err("a renewal task that outlives its term must be caught")
        .into_failure()
        .expect("a seed failed, not the input");
    let message = failure.to_string();
    assert!(
        ["renewal-stops", "release-last"].contains(&failure.outcome.label().as_str()),
        "{message}"
    );
    assert!(message.contains("spawns task"), "{message}");
    assert!(message.contains("the shrunk counterexample:"), "{message}");
    let document = std::fs::read_to_string(&html).expect("the timeline was written");
    assert!(document.starts_with("<!DOCTYPE html>"));
    std::fs::remove_dir_all(&dir).unwrap();
}
