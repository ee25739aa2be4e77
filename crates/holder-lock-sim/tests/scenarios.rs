//! Scenario files: every shipped one loads, the defaults switch every fault off, and each
//! class of mistake in the system's own keys is refused at its `file:line:column`.

use leasesim_holder_lock::events::Op;
use leasesim_holder_lock::{load_scenario, parse_scenario};
use leasesim_sim::scenario::MsRange;

fn scenarios_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/holder-lock")
}

#[test]
fn every_shipped_scenario_loads_and_the_issues_five_are_there() {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(scenarios_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "toml") {
            let scenario = load_scenario(&path).unwrap_or_else(|err| panic!("{err}"));
            assert!(!scenario.description.is_empty());
            assert!(scenario.name.starts_with("holder-"), "{}", scenario.name);
            names.push(scenario.name);
        }
    }
    for required in [
        "holder-steady",
        "holder-long-jobs",
        "holder-no-cas",
        "holder-pauses",
        "holder-swarm",
    ] {
        assert!(names.iter().any(|n| n == required), "missing {required}");
    }
}

#[test]
fn defaults_switch_every_fault_off_and_renew_a_compare_and_delete_store() {
    let text = "description = \"x\"\nsystem = \"holder-lock\"\n";
    let scenario = parse_scenario("tiny", "tiny.toml", text).unwrap();
    let settings = &scenario.settings;
    assert_eq!(settings.claim.key, "job:nightly-rollup");
    assert_eq!(settings.claim.lifetime_ms, 3_000);
    assert_eq!(settings.claim.renew_every_ms, Some(1_000));
    assert!(settings.store.compare_and_delete);
    assert_eq!(settings.job.long_share.get(), 0.0);
    assert_eq!(settings.job_fail.get(), 0.0);
    for forgetting in &settings.forgetting {
        assert_eq!(forgetting.probability.get(), 0.0);
    }
    assert_eq!(scenario.faults.reject.get(Op::Renew).get(), 0.0);
    assert_eq!(scenario.latency.get(Op::DeleteIfHolder), MsRange::new(1, 5));
    let unrenewed = "description = \"x\"\nsystem = \"holder-lock\"\n[claim]\nrenew_every_ms = 0\n";
    let scenario = parse_scenario("u", "u.toml", unrenewed).unwrap();
    assert_eq!(scenario.settings.claim.renew_every_ms, None);
}

/// Parses `text` and returns the error as `file:line:column: message`.
fn error_of(text: &str) -> String {
    let text = format!("description = \"x\"\nsystem = \"holder-lock\"\n{text}");
    match parse_scenario("bad", "bad.toml", &text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(err) => err.to_string(),
    }
}

#[test]
fn each_mistake_is_refused_at_its_place_naming_what_is_valid() {
    let cases = [
        (
            "[claim]\nlifetime_ms = 1_000\nrenew_every_ms = 800\n",
            "bad.toml:3:1: [claim]: renew_every_ms (800) must be below four fifths",
        ),
        (
            "[claim]\nlifetime_ms = -1\n",
            "bad.toml:4:15: `claim.lifetime_ms` must be a whole number from 0 to 3600000, got -1",
        ),
        (
            "[claim]\nrenew_every_ms = 5_000_000\n",
            "bad.toml:4:18: `claim.renew_every_ms` must be a whole number from 0 to 3600000, got \
             5000000",
        ),
        (
            "[claim]\nttl_ms = 3\n",
            "bad.toml:4:1: unknown field `ttl_ms`",
        ),
        (
            "[store]\ncas = false\n",
            "bad.toml:4:1: unknown field `cas`",
        ),
        (
            "[job]\nlong_share = 2.0\n",
            "bad.toml:4:14: `job.long_share`: probability 2 is outside [0, 1]",
        ),
        (
            "[latency]\nrelease = [1, 2]\n",
            "unknown operation `release` in [latency]; the holder-lock system's operations \
             are create, renew, delete_if_holder, get, delete, set",
        ),
        (
            "[faults]\nrevoke = 0.1\n",
            "bad.toml:4:1: unknown key `faults.revoke` for a holder-lock scenario",
        ),
        (
            "lease = 3\n",
            "bad.toml:3:1: unknown key `lease` for a holder-lock scenario",
        ),
        (
            "expect = [\"stale-token-delete\"]\n",
            "bad.toml:3:11: unknown invariant `stale-token-delete` in expect (a holder-lock \
             scenario); valid: delete-own-claim",
        ),
        ("[stop]\nat = \"acquire\"\n", "unknown stop mode `acquire`"),
        (
            "[faults.evict]\nprobability = 1.5\n",
            "bad.toml:4:15: `faults.evict.probability`: probability 1.5 is outside [0, 1]",
        ),
        (
            "[faults.failover]\nevery_ms = [0, 10]\n",
            "bad.toml:4:13: `faults.failover.every_ms` must be a whole number from 1 to 3600000, \
             got 0",
        ),
        (
            "[faults.store_restart]\nlag_ms = 3\n",
            "bad.toml:4:1: unknown field `lag_ms`",
        ),
    ];
    for (text, expected) in cases {
        let error = error_of(text);
        assert!(
            error.contains(expected),
            "{text:?}:\n  got {error}\n  want {expected}"
        );
    }
}

#[test]
fn a_retention_file_is_not_a_holder_lock_scenario() {
    let text = "description = \"x\"\nsystem = \"retention\"\n";
    let error = parse_scenario("r", "r.toml", text).unwrap_err().to_string();
    assert!(
        error.contains("this file is a `retention` scenario, not `holder-lock`"),
        "{error}"
    );
}

/// Parses `body` after the two required keys.
fn parsed(body: &str) -> Result<leasesim_holder_lock::Scenario, String> {
    let text = format!("description = \"x\"\nsystem = \"holder-lock\"\n{body}");
    parse_scenario("bad", "bad.toml", &text).map_err(|err| err.to_string())
}

/// Asserts `body` is refused starting with `head` and saying every one of `pieces`.
fn assert_refused(body: &str, head: &str, pieces: &[&str]) {
    let error = parsed(body).expect_err("the scenario is refused");
    assert!(
        error.starts_with(head),
        "{body:?}:\n  got {error}\n  want {head}"
    );
    for piece in pieces {
        assert!(error.contains(piece), "`{piece}` missing: {error}");
    }
}

/// An attempt bound shorter than a correct attempt once faults heal is refused at
/// `attempt_bound_ms` with the figure; the figure itself loads, one below does not.
#[test]
fn an_attempt_bound_no_correct_attempt_can_keep_is_refused_with_its_figure() {
    assert_refused(
        "attempt_bound_ms = 10\n",
        "bad.toml:3:20: `attempt_bound_ms` (10 ms) is shorter than a correct attempt can take \
         once faults heal, 2030 ms",
        &[
            "30 ms of round trips",
            "2000 ms of the longest job",
            "at least 2030",
        ],
    );
    parsed("attempt_bound_ms = 2_030\n").unwrap_or_else(|err| panic!("{err}"));
    assert!(parsed("attempt_bound_ms = 2_029\n").is_err());
}

/// Long jobs count only when they can be drawn; lost replies and pauses add their figures,
/// and a slow clock stretches the job.
#[test]
fn the_attempt_figure_counts_long_jobs_timeouts_pauses_and_a_slow_clock() {
    let long = "[job]\nlong_share = 1.0\nlong_duration_ms = [40_000, 50_000]\n";
    assert_refused(
        long,
        "bad.toml:1:1: `attempt_bound_ms` (30000 ms) is shorter",
        &["50030 ms", "50000 ms of the longest job"],
    );
    let never_long = "[job]\nlong_share = 0\nlong_duration_ms = [40_000, 50_000]\n";
    parsed(never_long).unwrap_or_else(|err| panic!("{err}"));
    let faults = "attempt_bound_ms = 2_030\n[faults]\ntimeout_ms = 700\n\
                  [faults.reply_lost]\nget = 0.1\n[faults.pause]\nprobability = 0.5\n\
                  duration_ms = [10, 900]\n";
    assert_refused(
        faults,
        "bad.toml:3:20: `attempt_bound_ms` (2030 ms) is shorter",
        &[
            "3630 ms",
            "700 ms of a lost request's or reply's timeout",
            "900 ms of a pause still running",
        ],
    );
    let slow = "attempt_bound_ms = 2_030\n[clocks]\ndrift_ppm = [-200_000, 0]\n";
    assert_refused(
        slow,
        "bad.toml:3:20: `attempt_bound_ms` (2030 ms) is shorter",
        // Eight 250 ms steps, each 312.5 ms on a clock at 0.8 speed, rounded up as the replica's
        // clock rounds each sleep: 8 x 313.
        &[
            "2534 ms",
            "2504 ms of the longest job (2000 ms on a clock drifting -200000 ppm)",
        ],
    );
}

/// Without compare-and-delete the release is a `get`; with swarm it may be either; without
/// renewal no renewal is waited for.
#[test]
fn the_attempt_figure_follows_the_release_and_the_renewal_a_run_can_use() {
    let latency = "[latency]\ncreate = [1, 10]\nrenew = [1, 100]\ndelete_if_holder = [1, 1000]\n\
                   get = [1, 3000]\n";
    let cases = [
        ("", 2000 + 2 * (10 + 100 + 1000)),
        (
            "[store]\ncompare_and_delete = false\n",
            2000 + 2 * (10 + 100 + 3000),
        ),
        ("swarm = true\n", 2000 + 2 * (10 + 100 + 3000)),
        ("[claim]\nrenew_every_ms = 0\n", 2000 + 2 * (10 + 1000)),
    ];
    for (extra, figure) in cases {
        let (top, table) = match extra.starts_with('[') {
            true => ("", extra),
            false => (extra, ""),
        };
        let body = format!("{top}attempt_bound_ms = 1\n{table}{latency}");
        let error = parsed(&body).expect_err("refused");
        let want = format!("once faults heal, {figure} ms");
        assert!(error.contains(&want), "{extra:?}: want {want}, got {error}");
    }
}

/// A stop bound shorter than a correct stop() at shutdown is refused at `stop_bound_ms`.
#[test]
fn a_stop_bound_no_correct_stop_can_keep_is_refused_with_its_figure() {
    assert_refused(
        "stop_bound_ms = 1\n",
        "bad.toml:3:17: `stop_bound_ms` (1 ms) is shorter than a correct stop() can take at \
         shutdown: 20 ms",
        &["raise it to at least 20"],
    );
    let slow_create = "stop_bound_ms = 2_009\n[latency]\ncreate = [1, 1_000]\n";
    assert_refused(slow_create, "bad.toml:3:17:", &["2010 ms"]);
    parsed("stop_bound_ms = 20\n").unwrap_or_else(|err| panic!("{err}"));
}

/// With no pause between attempts and a create that can answer at once, attempts could
/// follow each other at one instant: refused at the schedule; a 1 ms minimum of either loads.
#[test]
fn a_zero_schedule_with_an_instant_create_is_refused() {
    let latency = "[latency]\ncreate = [0, 0]\nrenew = [0, 0]\ndelete_if_holder = [0, 0]\n";
    assert_refused(
        &format!("[schedule]\nrun_every_ms = [0, 0]\n{latency}"),
        "bad.toml:4:16: `schedule.run_every_ms` starts at 0 ms while create latency can be 0",
        &["at least 1 ms"],
    );
    assert_refused(
        "[schedule]\nrun_every_ms = [0, 10]\n[latency]\ncreate = [0, 5]\n",
        "bad.toml:4:16: `schedule.run_every_ms`",
        &[],
    );
    let paused = format!("[schedule]\nrun_every_ms = [1, 1]\n{latency}");
    parsed(&paused).unwrap_or_else(|err| panic!("{err}"));
    let slow_create = "[schedule]\nrun_every_ms = [0, 0]\n[latency]\ncreate = [1, 1]\n";
    parsed(slow_create).unwrap_or_else(|err| panic!("{err}"));
}

/// Timers slower than the worker's trust margin absorbs are refused at `clocks.drift_ppm`
/// with the figure: the trusted time on the slowest timer must fit in the lifetime plus the
/// shortest flight of a create or renewal; the figure itself loads, one below does not.
#[test]
fn timers_slower_than_the_trust_margin_absorbs_are_refused_with_the_lowest_drift() {
    // Lifetime 3000 ms, trusted 2400 ms, shortest flight 1 ms: the rate must be at least
    // 2400/3001 of true speed, -200267 ppm rounded up.
    assert_refused(
        "[clocks]\ndrift_ppm = [-250_000, 0]\n",
        "bad.toml:4:13: `clocks.drift_ppm` (-250000 ppm at its lowest)",
        &[
            "trusted time, 2400 ms on its own timer",
            "lasts 3200 ms of the store's clock, past the 3001 ms",
            "keep it at -200266 ppm or above",
        ],
    );
    parsed("[clocks]\ndrift_ppm = [-200_266, 0]\n").unwrap_or_else(|err| panic!("{err}"));
    assert!(parsed("[clocks]\ndrift_ppm = [-200_267, 0]\n").is_err());
    // A longer shortest flight widens the margin.
    let slow_flight = "[clocks]\ndrift_ppm = [-210_000, 0]\n[latency]\ncreate = [100, 200]\n\
                       renew = [100, 200]\n";
    parsed(slow_flight).unwrap_or_else(|err| panic!("{err}"));
}
