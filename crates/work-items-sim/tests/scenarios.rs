//! Work-items scenario files: every shipped file loads, the defaults switch every fault off,
//! and each mistake in the system's own keys is refused at its place, naming the valid keys.

use leasesim_work_items::events::Op;
use leasesim_work_items::{load_scenario, parse_scenario};

fn scenarios_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/work-items")
}

#[test]
fn every_shipped_scenario_loads_and_names_its_system() {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(scenarios_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "toml") {
            let scenario = load_scenario(&path).unwrap_or_else(|err| panic!("{err}"));
            assert!(!scenario.description.is_empty());
            assert!(scenario.name.starts_with("items-"), "{}", scenario.name);
            names.push(scenario.name);
        }
    }
    names.sort();
    assert_eq!(names.len(), 10, "{names:?}");
}

#[test]
fn the_defaults_switch_every_fault_off() {
    let text = "description = \"x\"\nsystem = \"work-items\"\n";
    let scenario = parse_scenario("tiny", "tiny.toml", text).unwrap();
    let settings = &scenario.settings;
    assert_eq!((settings.items.count, settings.items.chunks), (40, [1, 2]));
    assert_eq!(settings.worker.lease_ms, 2_000);
    assert_eq!(settings.provider_refuses.get(), 0.0);
    assert!(settings.store.fencing && settings.settle);
    assert_eq!(scenario.faults.reply_lost.get(Op::Provider).get(), 0.0);
    assert_eq!(scenario.faults.reject.get(Op::Apply).get(), 0.0);
}

/// The error of `body` (after the two required keys) as `file:line:column: message`.
fn error_of(body: &str) -> String {
    let text = format!("description = \"x\"\nsystem = \"work-items\"\n{body}");
    parse_scenario("bad", "bad.toml", &text)
        .expect_err("the scenario is refused")
        .to_string()
}

#[test]
fn mistakes_in_the_systems_keys_are_refused_at_their_place() {
    let cases = [
        (
            "[items]\ncount = 0\n",
            "bad.toml:4:9:",
            "`items.count` must be a whole number from 1 to 10000, got 0",
        ),
        (
            "[items]\nchunks = [3, 2]\n",
            "bad.toml:4:10:",
            "`items.chunks`: range [3, 2]: min exceeds max",
        ),
        (
            "[items]\nchunks = [1, 65]\n",
            "bad.toml:4:14:",
            "`items.chunks` must be a whole number from 1 to 64, got 65",
        ),
        (
            "[items]\nchunks = [1]\n",
            "bad.toml:4:10:",
            "invalid length 1, expected a range [min, max] of whole numbers from 1 to 64",
        ),
        (
            "[worker]\nlease_ms = 500\nrenew_every_ms = 500\n",
            "bad.toml:3:1:",
            "[worker]: renew_every_ms (500) must be at least 1 and below lease_ms (500)",
        ),
        (
            "[items]\nsize = 3\n",
            "bad.toml:4:1:",
            "unknown field `size`",
        ),
        (
            "[store]\nfence = true\n",
            "bad.toml:4:1:",
            "unknown field `fence`, expected `fencing`",
        ),
        (
            "[faults]\nprovider_refuses = 2.0\n",
            "bad.toml:4:20:",
            "outside [0, 1]",
        ),
        (
            "[faults.reject]\nprovide = 0.1\n",
            "bad.toml:4:11:",
            "unknown operation `provide`",
        ),
    ];
    for (body, place, words) in cases {
        let error = error_of(body);
        assert!(error.starts_with(place), "{body:?}: {error}");
        assert!(error.contains(words), "{body:?}: {error}");
    }
}

/// Every number of the system's keys is bounded by what a run can do: a value just past the
/// bound is refused at the value, naming the key and the range; the bound itself loads.
#[test]
fn every_key_is_bounded_by_what_a_run_can_do() {
    let cases: &[(&str, &str, &str)] = &[
        ("[items]\ncount = {}", "10_000", "10_001"),
        ("[items]\ncount = {}", "1", "0"),
        ("[items]\nchunks = [{}, 1]", "1", "0"),
        ("[items]\nchunks = [1, {}]", "64", "65"),
        ("[worker]\nlease_ms = {}", "3_600_000", "3_600_001"),
        ("[worker]\nlease_ms = {}\nrenew_every_ms = 1", "2", "1"),
        ("[worker]\nrenew_every_ms = {}", "1", "0"),
        ("[worker]\nmax_attempts = {}", "1_000", "1_001"),
        ("[worker]\nmax_attempts = {}", "1", "0"),
        ("[worker]\nmax_retries = {}", "1_000", "1_001"),
        ("[worker]\nmax_retries = {}", "0", "-1"),
        ("[worker]\nbackoff_ms = {}", "1", "0"),
        (
            "[worker]\nbackoff_ms = 1\nbackoff_cap_ms = {}",
            "3_600_000",
            "3_600_001",
        ),
        ("[worker]\ndeadline_ms = {}", "3_600_000", "3_600_001"),
    ];
    for (template, fits, too_far) in cases {
        let body = |value: &str| format!("{}\n", template.replace("{}", value));
        let text = format!(
            "description = \"x\"\nsystem = \"work-items\"\n{}",
            body(fits)
        );
        parse_scenario("ok", "ok.toml", &text)
            .unwrap_or_else(|err| panic!("{template} with {fits} is within its bound: {err}"));
        let err = error_of(&body(too_far));
        assert!(
            err.contains("must be a whole number from"),
            "{template}: {err}"
        );
        let shown = too_far.replace('_', "");
        assert!(err.ends_with(&format!("got {shown}")), "{template}: {err}");
    }
}

/// A value of the wrong type is refused with the range in words, never a Rust type.
#[test]
fn no_rust_type_leaks_into_a_message() {
    for (line, key) in [
        ("[items]\ncount = \"many\"", "items.count"),
        ("[items]\ncount = -1", "items.count"),
        ("[items]\nchunks = [1.5, 2]", "items.chunks"),
        ("[worker]\nlease_ms = -5", "worker.lease_ms"),
        (
            "[worker]\nmax_attempts = 4_294_967_296",
            "worker.max_attempts",
        ),
        ("[worker]\ndeadline_ms = \"soon\"", "worker.deadline_ms"),
    ] {
        let err = error_of(&format!("{line}\n"));
        assert!(err.starts_with("bad.toml:4:"), "{line}: {err}");
        assert!(err.contains(&format!("`{key}`")), "{line}: {err}");
        for rust_type in ["u16", "u32", "u64", "i64", "f64"] {
            assert!(!err.contains(rust_type), "{line}: {err}");
        }
    }
}

/// Items no run could settle by the end of the liveness phase are refused at `items.count`,
/// with the figures; the same items without `settle`, or with the capacity they need, load.
#[test]
fn items_no_run_can_settle_are_refused_at_the_count() {
    let text = "duration_ms = 1_000\nliveness_ms = 1_000\n[items]\ncount = 10_000\n";
    let err = error_of(text);
    assert!(
        err.starts_with("bad.toml:6:9: `items.count` (10000) is more than any run can settle"),
        "{err}"
    );
    for piece in [
        "3 replica(s) settle at most 600 item(s) in the 2000ms",
        "each item taking at least 10ms",
        "set `settle = false`",
    ] {
        assert!(err.contains(piece), "`{piece}` missing: {err}");
    }
    let head = "description = \"x\"\nsystem = \"work-items\"\n";
    let unsettled = format!("{head}settle = false\n{text}");
    assert!(parse_scenario("ok", "ok.toml", &unsettled).is_ok());
    let fits = format!("{head}{}", text.replace("10_000", "600"));
    parse_scenario("ok", "ok.toml", &fits).unwrap_or_else(|err| panic!("{err}"));
    let over = format!("{head}{}", text.replace("10_000", "601"));
    assert!(parse_scenario("bad", "bad.toml", &over).is_err());
}

/// Every chunk of an item is applied before it can be done: big items take longer to settle
/// (10,000 items of 64 chunks cannot settle in the default phases: a review found the
/// correct worker failing that scenario); only where an apply can fail may an item be failed
/// sooner, after its attempts.
#[test]
fn the_settle_bound_counts_every_chunk_and_the_provider() {
    let text = "[items]\ncount = 10_000\nchunks = [64, 64]\n";
    let err = error_of(text);
    for piece in [
        "`items.count` (10000)",
        "at most 2646 item(s)",
        "at least 136ms",
    ] {
        assert!(err.contains(piece), "`{piece}` missing: {err}");
    }
    let head = "description = \"x\"\nsystem = \"work-items\"\n";
    // With applies that can be refused, an item can be failed after 3 attempts of a find, a
    // claim and one apply (18ms) and a fail (2ms): 18,000 items fit.
    let failing = format!("{head}{text}[faults.reject]\napply = 0.5\n");
    parse_scenario("ok", "ok.toml", &failing).unwrap_or_else(|err| panic!("{err}"));
}

/// With no pause between runs and a find and a status read that can answer at once, a
/// replica with nothing to claim could run at one instant forever: refused at the schedule;
/// a 1 ms minimum of the pause, the find or the status read loads.
#[test]
fn a_zero_schedule_with_instant_empty_runs_is_refused() {
    let zero = "[schedule]\nrun_every_ms = [0, 0]\n[latency]\nfind = [0, 0]\nstatus = [0, 3]\n";
    let err = error_of(zero);
    assert!(
        err.starts_with(
            "bad.toml:4:16: `schedule.run_every_ms` starts at 0 ms while find and status \
             latencies can be 0 too"
        ),
        "{err}"
    );
    let head = "description = \"x\"\nsystem = \"work-items\"\n";
    for (from, to) in [
        ("[0, 0]\n[l", "[1, 1]\n[l"),
        ("find = [0, 0]", "find = [1, 1]"),
        ("status = [0, 3]", "status = [1, 3]"),
    ] {
        let text = format!("{head}{}", zero.replace(from, to));
        parse_scenario("ok", "ok.toml", &text).unwrap_or_else(|err| panic!("{text}: {err}"));
    }
}
