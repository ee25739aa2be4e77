//! A restarted replica runs its fresh worker only: the driver of the worker it replaced starts
//! no term after the restart, even when a pause holds that driver past the restart. (Were it
//! to call its stopped worker once more, `term-report` would judge that call against a replica
//! whose stop the restart cleared: a false violation of the correct worker.)

use std::rc::Rc;

use leasesim::retention::Retention;
use leasesim::runner::{RunSpec, run};
use leasesim::{Strategy, Workers};
use leasesim_retention::events::{EventKind, Note};
use leasesim_retention::parse_scenario;
use leasesim_rt::Feed;

/// One replica, stopped at t=1.9 s, paused from t=1.95 s to t=4.95 s: its driver waits out
/// the pause between terms while the liveness phase (t=2 s) restarts the replica.
const HELD_PAST_RESTART: &str = r#"
description = "a stopped replica's driver is held by a pause past its restart"
system = "retention"
replicas = 1
duration_ms = 2_000
liveness_ms = 10_000

[schedule]
run_every_ms = [200, 200]

[stop]
at = "time"
replicas = 1
window_ms = [1_900, 1_900]

[faults.pause]
probability = 1.0
every_ms = [1_950, 1_950]
duration_ms = [3_000, 3_000]
"#;

#[test]
fn the_replaced_workers_driver_starts_no_term_after_the_restart() {
    let scenario = parse_scenario("held", "inline", HELD_PAST_RESTART).unwrap();
    let spec = RunSpec {
        keep_events: true,
        ..RunSpec::new(
            Rc::new(scenario),
            "correct",
            Retention::factory("correct").unwrap(),
            Feed::Seed(0),
            Strategy::Random,
        )
    };
    let report = run(&spec);
    let restarted = report
        .events
        .iter()
        .position(|e| e.event.kind == EventKind::Restarted)
        .expect("the stopped replica is restarted");
    // After the restart, terms are numbered afresh by the new driver: the terms started are
    // 1, 2, 3, ... and every term that ends is one of them (the old driver's run() of its
    // stopped worker would end a term of the old numbering, which nothing started).
    let notes = report.events[restarted..]
        .iter()
        .filter_map(|e| match e.event.kind {
            EventKind::Note(Note::TermStarted { term }) => Some((true, term)),
            EventKind::Note(Note::TermEnded { term, .. }) => Some((false, term)),
            _ => None,
        });
    let (started, ended): (Vec<_>, Vec<_>) = notes.partition(|(start, _)| *start);
    let started: Vec<u32> = started.into_iter().map(|(_, term)| term).collect();
    assert!(!started.is_empty(), "the new driver started no term");
    let fresh: Vec<u32> = (1..=started.len() as u32).collect();
    assert_eq!(
        started, fresh,
        "an old driver started a term after the restart"
    );
    let stray = ended.iter().find(|(_, term)| !started.contains(term));
    assert_eq!(stray, None, "an old driver ended a term after the restart");
    assert!(report.outcome.is_pass(), "{}", report.outcome.sentence());
}
