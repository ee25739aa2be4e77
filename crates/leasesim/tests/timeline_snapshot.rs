//! The HTML of one small run, pinned as a snapshot, and properties every timeline keeps.
//!
//! Terminology:
//! - *small run*: `support::SMALL_SCENARIO` (2 replicas, about 4.5 s of virtual time) with a
//!   fixed seed; its document is stored in the workspace's `snapshots/` directory. The
//!   snapshot was written by another process (another hash seed, another machine), so it
//!   also proves the rendering is byte-stable across processes.
//! - *self-contained*: no reference to anything outside the document (no URL, no external
//!   script or stylesheet).

#[path = "timeline_support/mod.rs"]
mod support;

use leasesim_timeline::{Render, TimelineInput, ViolationMark, render_html};

const SEED: u64 = 7;

#[test]
fn small_run_snapshot() {
    let (replicas, events) = support::run_events("small", support::SMALL_SCENARIO, SEED);
    let html = support::render("small", SEED, replicas, &events, None);
    insta::with_settings!({
        snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/../../snapshots/retention"),
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!("timeline__small_run", html);
    });
}

#[test]
fn the_document_is_self_contained() {
    let (replicas, events) = support::run_events("long", support::LONG_SCENARIO, 3);
    let html = support::render("long", 3, replicas, &events, None).to_lowercase();
    for forbidden in [
        "http://", "https://", "<script", "<link", "<img", "<iframe", "url(",
    ] {
        assert!(
            !html.contains(forbidden),
            "the document contains {forbidden:?}"
        );
    }
    assert!(html.starts_with("<!doctype html>"));
    assert!(html.trim_end().ends_with("</html>"));
    assert_eq!(html.matches("<svg").count(), html.matches("</svg>").count());
    assert_eq!(
        html.matches("<title>").count(),
        html.matches("</title>").count()
    );
    assert_eq!(html.matches("<g ").count(), html.matches("</g>").count());
}

#[test]
fn every_lane_is_drawn_with_its_documented_fill() {
    let (replicas, events) = support::run_events("long", support::LONG_SCENARIO, 3);
    let html = support::render("long", 3, replicas, &events, None);
    for lane in 1..=replicas {
        assert!(
            html.contains(&format!(">r{lane}</text>")),
            "no name for lane r{lane}"
        );
    }
    let odd = html
        .matches(&format!("fill=\"{}\"", leasesim_timeline::LANE_FILL_ODD))
        .count();
    let even = html
        .matches(&format!("fill=\"{}\"", leasesim_timeline::LANE_FILL_EVEN))
        .count();
    // Each lane fill appears twice: in the name column and behind the plot.
    assert_eq!((odd, even), (2 * 3, 2 * 2));
}

#[test]
fn the_violation_is_highlighted_and_all_text_escaped() {
    let (replicas, events) = support::run_events("small", support::SMALL_SCENARIO, SEED);
    let lines: Vec<String> = events.iter().map(support::line).collect();
    let (moments, strokes) = leasesim::html::strokes::<leasesim::retention::Retention>(&events);
    let target = &events[events.len() / 2];
    let input = TimelineInput {
        title: "small <b>&</b>".to_string(),
        header_lines: vec!["verdict:  VIOLATION \"x\" <y>".to_string()],
        replicas,
        moments: &moments,
        strokes: &strokes,
        lines: &lines,
        violation: Some(ViolationMark {
            seq: target.seq,
            invariant: "stale-token-delete".to_string(),
            sentence: "a delete <applied> with token 3 & not 4".to_string(),
        }),
        words: <leasesim_retention::Retention as Render>::WORDS,
    };
    let html = render_html(&input);
    assert!(html.contains("<title>small &lt;b&gt;&amp;&lt;/b&gt;</title>"));
    assert!(html.contains("VIOLATION &quot;x&quot; &lt;y&gt;"));
    assert!(html.contains(
        "<b>VIOLATION stale-token-delete</b>: a delete &lt;applied&gt; with token 3 &amp; not 4"
    ));
    assert!(html.contains(&format!("event #{} at t={} ms", target.seq, target.at_ms)));
    assert!(html.contains("<g id=\"violation\" class=\"vi\"><title>VIOLATION stale-token-delete"));
    assert!(!html.contains("<applied>") && !html.contains("<y>"));
}

#[test]
fn a_violation_outside_the_events_still_gets_its_banner() {
    let lines: Vec<String> = Vec::new();
    let input = TimelineInput {
        title: "empty".to_string(),
        header_lines: Vec::new(),
        replicas: 2,
        moments: &[],
        strokes: &[],
        lines: &lines,
        violation: Some(ViolationMark {
            seq: 99,
            invariant: "liveness".to_string(),
            sentence: "the backlog did not drain".to_string(),
        }),
        words: <leasesim_retention::Retention as Render>::WORDS,
    };
    let html = render_html(&input);
    assert!(html.contains("(event #99 is not in this timeline)"));
    assert!(!html.contains("id=\"violation\""));
    assert!(html.contains(">r2</text>"));
}
