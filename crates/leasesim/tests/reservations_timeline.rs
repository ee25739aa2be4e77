//! The reservation system's runs on the HTML timeline: one lane per replica, each claimed
//! batch a held token, transitions and conflicts as marks, agents' consumes on the world row,
//! a kill where it happened, all named in the system's own words (claims, expiries, consumes,
//! dead letters), not the retention system's (leases, deletes, revocations, backlog checks);
//! the document needs nothing from outside.

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
        html.contains("claim token 1 held"),
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

/// The legend: everything between its opening and closing tags.
fn legend(html: &str) -> &str {
    let start = html.find("<div class=\"legend\">").expect("a legend");
    let end = start + html[start..].find("</div>").expect("the legend ends");
    &html[start..end]
}

#[test]
fn the_legend_and_hover_texts_speak_of_claims_expiries_and_consumes() {
    let html = timeline("expiry-killed-worker", 0);
    let legend = legend(&html);
    for own in [
        "batch claimed, labelled with its claim token",
        "claim call",
        "dead_letter call",
        "expire call",
        "reservation expired (count)",
        "expire refused: already expired, not eligible or malformed",
        "process killed (fault)",
        "agent consumed a reservation",
        "dead letter recorded, reservation parked",
    ] {
        assert!(legend.contains(own), "the legend does not say `{own}`");
    }
    for retention in [
        "lease held",
        "acquire call",
        "renew call",
        "delete call",
        "delete applied",
        "delete refused",
        "revoked by the authority",
        "backlog check",
    ] {
        assert!(!legend.contains(retention), "the legend says `{retention}`");
    }
    // The system has no renewals: the legend lists only the kinds it draws.
    assert!(!legend.contains("renewal") && !legend.contains("renew answered"));
    for retention in [
        "<title>delete",
        "<title>revocation",
        "<title>lease token",
        "rows",
    ] {
        assert!(!html.contains(retention), "a hover text says `{retention}`");
    }
    assert!(html.contains("<title>expiry: 1 expired"));
    assert!(html.contains("<title>consume\n"));
    assert!(html.contains(", lost: process killed"));
}

#[test]
fn the_same_run_draws_the_same_bytes() {
    assert!(timeline("expiry-claim-takeover", 2) == timeline("expiry-claim-takeover", 2));
}
