//! The work-items system's runs on the HTML timeline: one lane per replica, each claim a held
//! token bar, the end of a claim that learned it was lost, and the item's story as marks whose
//! hover text is the trace line naming the item: chunks applied, takeovers after expiry, stale
//! writes refused, done-marks. The legend and hover texts say so in the system's own words
//! (claims, effects, end marks), not the retention system's (leases, deletes, releases). The
//! document needs nothing from outside.

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

/// The hover texts of the marks drawn with `class`.
fn titles(html: &str, class: &str) -> Vec<String> {
    let opening = format!("class=\"{class}\"");
    html.split(opening.as_str())
        .skip(1)
        .filter_map(|rest| {
            let start = rest.find("<title>")? + "<title>".len();
            let end = rest[start..].find("</title>")?;
            Some(rest[start..start + end].to_string())
        })
        .collect()
}

/// `class`'s marks exist and one of their hover texts says `words`.
fn some_mark_says(html: &str, class: &str, words: &str) {
    let found = titles(html, class);
    assert!(!found.is_empty(), "no `{class}` mark");
    assert!(
        found.iter().any(|title| title.contains(words)),
        "no `{class}` mark says `{words}`: {:?}",
        &found[..found.len().min(3)]
    );
}

#[test]
fn the_ugly_transition_draws_lanes_claims_takeovers_and_refused_writes() {
    let html = timeline("items-ugly-transition", 0);
    for lane in 1..=3 {
        assert!(
            html.contains(&format!(">r{lane}</text>")),
            "no lane r{lane}"
        );
    }
    assert!(
        html.contains("claim token "),
        "no claim is drawn as a held token"
    );
    assert!(
        html.contains("lost: a write answered LEASE LOST"),
        "no claim bar ends where its worker learned the claim was lost"
    );
    // Each mark's hover text is the trace line that names the item.
    some_mark_says(&html, "md", "chunk 0 of item ");
    some_mark_says(&html, "mt", "(took over exp");
    some_mark_says(&html, "mx", "is not item ");
    some_mark_says(&html, "mr", " done under token ");
    some_mark_says(&html, "mq", "lost after apply (fault)");
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
fn the_legend_and_hover_texts_speak_of_claims_effects_and_end_marks() {
    let html = timeline("items-ugly-transition", 0);
    let legend = legend(&html);
    for own in [
        "item claimed, labelled with its fencing token",
        "claim call",
        "effect call (apply_if_owner",
        "chunk or provider effect applied",
        "claim renewed (same token",
        "write answered LEASE LOST",
        "item marked done, released or failed",
        "tally as liveness ends (items open)",
    ] {
        assert!(legend.contains(own), "the legend does not say `{own}`");
    }
    for retention in [
        "lease held",
        "acquire call",
        "delete call",
        "delete applied",
        "renewal (new token)",
        "leadership lost",
        "release freed the lease",
        "revoked by the authority",
        "backlog check",
    ] {
        assert!(!legend.contains(retention), "the legend says `{retention}`");
    }
    // A mark's hover summary (its first line) names it with the system's noun.
    for (class, noun) in [("md", "effect"), ("mr", "end mark"), ("mo", "lease lost")] {
        let found = titles(&html, class);
        assert!(!found.is_empty(), "no `{class}` mark");
        assert!(
            found
                .iter()
                .all(|title| title.lines().next().unwrap().contains(noun)),
            "a `{class}` mark is not called `{noun}`"
        );
    }
    for retention in [
        "<title>delete",
        "<title>release freed",
        "<title>lease token",
        " rows",
    ] {
        assert!(!html.contains(retention), "a hover text says `{retention}`");
    }
}

#[test]
fn the_same_run_draws_the_same_bytes() {
    assert!(timeline("items-clock-skew", 2) == timeline("items-clock-skew", 2));
}
