//! The system's scenario keys: bad files are refused at `file:line:column` with the reason,
//! and the default files all load.
#![allow(clippy::too_many_lines)] // tests: one function walks one table or one story

mod common;

use leasesim_reservations::parse_scenario;

fn refused(text: &str) -> String {
    let text = format!("description = \"x\"\nsystem = \"reservations\"\n{text}");
    match parse_scenario("bad", "bad.toml", &text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(err) => err.to_string(),
    }
}

#[test]
fn bad_reservation_settings_are_refused_at_their_place() {
    let cases = [
        (
            "[worker]\nbatch_size = 9\n",
            "bad.toml:4:14",
            "`worker.batch_size` must be a whole number from 1 to 8, got 9",
        ),
        (
            "[worker]\nbatch_size = 0\n",
            "bad.toml:4:14",
            "`worker.batch_size` must be a whole number from 1 to 8, got 0",
        ),
        (
            "[worker]\ninitial_backoff_ms = 50\nmax_backoff_ms = 10\n",
            "bad.toml:3:1",
            "initial_backoff_ms (50) is above max_backoff_ms (10)",
        ),
        (
            "[worker]\nclaim_for_ms = -1\n",
            "bad.toml:4:16",
            "`worker.claim_for_ms` must be a whole number from 1 to 3600000, got -1",
        ),
        (
            "[worker]\nmax_attempts = 2.5\n",
            "bad.toml:4:16",
            "`worker.max_attempts`: invalid type: floating point `2.5`, expected a whole number",
        ),
        (
            "[agents]\nbacklog = 1000000\n",
            "bad.toml:4:11",
            "`agents.backlog` must be a whole number from 0 to 100000, got 1000000",
        ),
        (
            "[worker]\nbatch = 3\n",
            "bad.toml:4:1",
            "unknown field `batch`",
        ),
        (
            "[agents]\nconsume = 1.5\n",
            "bad.toml:4:11",
            "probability 1.5 is outside [0, 1]",
        ),
        (
            "[agents]\nhold_ms = [9, 1]\n",
            "bad.toml:4:11",
            "min exceeds max",
        ),
        ("[faults]\nkill = 0.5\n", "bad.toml:4:8", "invalid type"),
        (
            "[faults]\nrevoke = 0.5\n",
            "bad.toml:4:1",
            "unknown key `faults.revoke`",
        ),
        (
            "[store]\nrows = 1\n",
            "bad.toml:3:2",
            "unknown key `store` for a reservations scenario",
        ),
        (
            "due_bound_ms = 0\n",
            "bad.toml:3:16",
            "must be a whole number from 1 to 3600000, got 0",
        ),
        (
            "[latency]\ndelete = [1, 2]\n",
            "bad.toml:4:10",
            "unknown operation `delete`",
        ),
    ];
    for (text, at, why) in cases {
        let message = refused(text);
        assert!(message.starts_with(at), "{message}\n(expected at {at})");
        assert!(message.contains(why), "{message}\n(expected: {why})");
    }
}

#[test]
fn agents_place_every_ms_is_a_period_of_at_least_one_ms() {
    // A period of 0 had the agents sleep 0 ms in a loop: the world's clock never moved and a
    // replay never returned.
    let message = refused("[agents]\nplace_every_ms = [0, 0]\n");
    assert!(message.starts_with("bad.toml:4:19"), "{message}");
    assert!(
        message.contains("`agents.place_every_ms`") && message.contains("from 1 to 3600000"),
        "{message}"
    );
}

#[test]
fn worker_counts_are_refused_at_the_value_with_their_real_range() {
    let cases = [
        (
            "[worker]\nmax_attempts = 4000000000\n",
            "bad.toml:4:16",
            "`worker.max_attempts` must be a whole number from 1 to 1000, got 4000000000",
        ),
        (
            "[worker]\nmax_attempts = 0\n",
            "bad.toml:4:16",
            "`worker.max_attempts` must be a whole number from 1 to 1000, got 0",
        ),
        (
            "[worker]\nclaim_for_ms = 0\n",
            "bad.toml:4:16",
            "`worker.claim_for_ms` must be a whole number from 1 to 3600000, got 0",
        ),
        (
            "[worker]\ninitial_backoff_ms = 0\n",
            "bad.toml:4:22",
            "`worker.initial_backoff_ms` must be a whole number from 1 to 3600000, got 0",
        ),
        (
            "[worker]\nmax_backoff_ms = 0\n",
            "bad.toml:4:18",
            "`worker.max_backoff_ms` must be a whole number from 1 to 3600000, got 0",
        ),
    ];
    for (text, at, why) in cases {
        let message = refused(text);
        assert!(message.starts_with(at), "{message}\n(expected at {at})");
        assert!(message.contains(why), "{message}\n(expected: {why})");
    }
}

#[test]
fn every_default_scenario_loads_and_names_its_system() {
    for name in common::scenario_names() {
        let scenario = common::scenario(&name);
        assert_eq!(scenario.name, name);
        assert!(scenario.settings.worker.batch_size <= 8);
    }
}

fn accepted(text: &str) -> leasesim_reservations::Scenario {
    let text = format!("description = \"x\"\nsystem = \"reservations\"\n{text}");
    parse_scenario("good", "good.toml", &text).unwrap_or_else(|err| panic!("{err}"))
}

#[test]
fn a_due_bound_no_correct_worker_can_keep_is_refused_at_due_bound_ms() {
    let message = refused("due_bound_ms = 10\n");
    assert!(message.starts_with("bad.toml:3:16"), "{message}");
    assert!(
        message.contains("`due_bound_ms` (10 ms) is shorter than")
            && message.contains("raise it to at least 35800"),
        "{message}"
    );
}

#[test]
fn the_due_bound_is_the_longest_correct_wait_to_the_millisecond() {
    // Defaults: claims of 10 s; backoffs 1 s, 2 s, 4 s, 8 s each plus half (22.5 s) and five
    // transitions, a dead letter and a release (60 ms at 5 ms each way); the rest of a batch
    // of 8 (7 x 30 ms); an idle pause of 3 s; a claim and a transition (20 ms).
    let at_least = 10_000 + 22_500 + 70 + 210 + 3_000 + 20;
    accepted(&format!("due_bound_ms = {at_least}\n"));
    let message = refused(&format!("due_bound_ms = {}\n", at_least - 1));
    assert!(
        message.contains(&format!("at least {at_least}")),
        "{message}"
    );
    // A lost reply's timeout and a pause still running come on top.
    let faults = "[faults]\ntimeout_ms = 700\n[faults.reply_lost]\nexpire = 0.1\n\
                  [faults.pause]\nprobability = 0.2\nduration_ms = [100, 900]\n";
    accepted(&format!("due_bound_ms = {}\n{faults}", at_least + 1_600));
    let message = refused(&format!("due_bound_ms = {}\n{faults}", at_least + 1_599));
    assert!(
        message.contains("700 ms of a lost request's or reply's timeout"),
        "{message}"
    );
    assert!(
        message.contains("900 ms of a pause still running"),
        "{message}"
    );
}

#[test]
fn claims_longer_than_the_due_bound_allows_are_refused_with_kills_on() {
    let message = refused("[worker]\nclaim_for_ms = 200000\n[faults.kill]\nprobability = 0.1\n");
    assert!(message.contains("`due_bound_ms` (45000 ms)"), "{message}");
    assert!(
        message.contains("200000 ms blocked by a claim (claim_for_ms, or a killed replica's"),
        "{message}"
    );
    // A replica dead longer than its claims lasts blocks for its restart instead.
    let message = refused("[faults.kill]\nprobability = 0.1\nrestart_ms = [1000, 90000]\n");
    assert!(message.contains("90000 ms blocked"), "{message}");
}

#[test]
fn a_stop_bound_no_correct_stop_can_keep_is_refused_at_stop_bound_ms() {
    // Latencies this slow need a longer due bound too; it is raised so the stop bound is what
    // is wrong.
    let slow = "[latency]\nclaim = [500, 900]\nexpire = [500, 900]\n";
    let message = refused(&format!("stop_bound_ms = 1\ndue_bound_ms = 100000\n{slow}"));
    assert!(message.starts_with("bad.toml:3:17"), "{message}");
    assert!(
        message.contains("`stop_bound_ms` (1 ms) is shorter than a correct stop()")
            && message.contains("at least 1890"),
        "{message}"
    );
    // Defaults: the call in flight, a dead letter and 8 releases, 10 ms each.
    accepted("stop_bound_ms = 100\n");
    let message = refused("stop_bound_ms = 99\n");
    assert!(message.contains("at least 100"), "{message}");
}
