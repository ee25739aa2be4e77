//! The holder-lock system's runs on the HTML timeline: one lane per replica, each claim a held
//! bar labelled with its token's serial, job steps as effect marks, a key running out or lost
//! by the store on the world row, all named in the system's own words (claims, creates, job
//! steps, keys running out), not the retention system's (leases, acquires, deletes, revocations); the document
//! needs nothing from outside.

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

/// The legend: everything between its opening and closing tags.
fn legend(html: &str) -> &str {
    let start = html.find("<div class=\"legend\">").expect("a legend");
    let end = start + html[start..].find("</div>").expect("the legend ends");
    &html[start..end]
}

#[test]
fn a_run_draws_lanes_claims_job_steps_and_keys_running_out() {
    let html = timeline("holder-no-cas", 0);
    for lane in 1..=3 {
        assert!(
            html.contains(&format!(">r{lane}</text>")),
            "no lane r{lane}"
        );
    }
    assert!(
        html.contains("<title>claim with token serial "),
        "no claim is drawn as a held bar"
    );
    for (class, summary) in [
        ("md", "<title>job step"),
        ("mn", "<title>renewal"),
        ("mv", "<title>run out"),
        ("mt", "<title>takeover"),
    ] {
        assert!(
            html.contains(&format!("<g class=\"{class}\">{summary}")),
            "no `{class}` mark reads `{summary}`"
        );
    }
    let lower = html.to_lowercase();
    for forbidden in ["http://", "https://", "<script", "<link", "url("] {
        assert!(!lower.contains(forbidden), "{forbidden}");
    }
}

#[test]
fn the_legend_and_hover_texts_speak_of_claims_creates_and_job_steps() {
    let html = timeline("holder-no-cas", 0);
    let legend = legend(&html);
    for own in [
        "claim held, labelled with the serial of its holder token",
        "create call",
        "renew or set call",
        "release or read call (delete_if_holder, get, delete)",
        "job step done",
        "create took over a claim that ran out",
        "a key ran out (lifetime over)",
    ] {
        assert!(legend.contains(own), "the legend does not say `{own}`");
    }
    for retention in [
        "lease held",
        "acquire call",
        "delete call<",
        "delete applied",
        "release freed the lease",
        "renewal (new token)",
        "leadership lost",
        "revoked by the authority",
    ] {
        assert!(!legend.contains(retention), "the legend says `{retention}`");
    }
    // No effect call row, no refused effects, no backlog: the legend leaves them out.
    assert!(!legend.contains("class=\"cd\"") && !legend.contains("refused: stale token"));
    assert!(!legend.contains("backlog") && !legend.contains("rows"));
    for retention in [
        "<title>delete:",
        "<title>revocation",
        "<title>lease token",
        " rows",
    ] {
        assert!(!html.contains(retention), "a hover text says `{retention}`");
    }
}

#[test]
fn the_same_run_draws_the_same_bytes() {
    assert!(timeline("holder-pauses", 1) == timeline("holder-pauses", 1));
}

#[test]
fn a_key_the_store_forgot_is_drawn_on_the_world_row_in_the_systems_words() {
    let html = timeline("holder-volatile", 0);
    assert!(
        html.contains("<g class=\"mx\"><title>key lost by the store"),
        "no forgotten key is drawn"
    );
    let legend = legend(&html);
    assert!(
        legend.contains("the store lost a key without a release (eviction, failover, restart)"),
        "the legend does not name the store's forgetting"
    );
}
