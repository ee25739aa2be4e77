//! The reservation system's runs on the HTML timeline: one lane per replica, each claimed
//! batch a held token (the shared timeline words it "lease token": a claim is a lease), transitions and conflicts as marks, agents' consumes on
//! the world row, a kill where it happened; the document needs nothing from outside.

use leasesim::Strategy;
use leasesim::catalog::resolve_one;
use leasesim_rt::Feed;

fn timeline(scenario: &str, seed: u64) -> String {
    let runner = resolve_one(scenario)
        .unwrap()
        .runner("correct", Strategy::Random)
        .unwrap();
    let report = runner.run(Feed::Seed(seed), true, false);
    assert!(!report.failed(), "{}", report.sentence());
    report.html(&runner.header(format!("seed {seed}")))
}

#[test]
fn a_killed_worker_run_draws_lanes_claims_marks_and_the_kill() {
    let html = timeline("expiry-killed-worker", 0);
    for lane in 1..=3 {
        assert!(
            html.contains(&format!(">r{lane}</text>")),
            "no lane r{lane}"
        );
    }
    // A claimed batch is a held-token bar (labelled `t<token>` where it is wide enough).
    assert!(
        html.contains("lease token 1 held"),
        "the first claim's batch is a segment"
    );
    for (class, what) in [
        ("md", "transitions"),
        ("mv", "consumes"),
        ("mc", "the kill"),
    ] {
        assert!(
            html.contains(&format!("class=\"{class}\"")),
            "no mark for {what}"
        );
    }
    assert!(
        html.contains("process killed (fault)"),
        "the kill's trace line is its hover text"
    );
    let lower = html.to_lowercase();
    for forbidden in ["http://", "https://", "<script", "<link", "url("] {
        assert!(!lower.contains(forbidden), "{forbidden}");
    }
}

#[test]
fn the_same_run_draws_the_same_bytes() {
    assert!(timeline("expiry-claim-takeover", 2) == timeline("expiry-claim-takeover", 2));
}
