//! The system's scenario keys: bad files are refused at `file:line:column` with the reason,
//! and the default files all load.

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
            "bad.toml:3:1",
            "batch_size 9 is above 8",
        ),
        (
            "[worker]\nbatch_size = 0\n",
            "bad.toml:3:1",
            "batch_size must be at least 1",
        ),
        (
            "[worker]\ninitial_backoff_ms = 50\nmax_backoff_ms = 10\n",
            "bad.toml:3:1",
            "initial_backoff_ms (50) is above max_backoff_ms (10)",
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
fn every_default_scenario_loads_and_names_its_system() {
    for name in common::scenario_names() {
        let scenario = common::scenario(&name);
        assert_eq!(scenario.name, name);
        assert!(scenario.settings.worker.batch_size <= 8);
    }
}
