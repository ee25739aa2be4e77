//! Scenario files: every shipped file loads, and each class of mistake is reported at its place.

use leasesim_retention::{load_scenario, parse_scenario};
use leasesim_sim::scenario::MsRange;

fn scenarios_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/retention")
}

#[test]
fn every_shipped_scenario_loads() {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(scenarios_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "toml") {
            let scenario = load_scenario(&path).unwrap_or_else(|err| panic!("{err}"));
            assert!(!scenario.description.is_empty());
            names.push(scenario.name);
        }
    }
    names.sort();
    for required in [
        "steady",
        "renewal-reorder",
        "renewal-rejection",
        "reply-lost",
        "stop-during-acquire",
        "stop-anywhere",
        "lease-expiry-successor",
        "clock-skew",
        "backlog-cap",
        "slow-deletes",
        "release-race",
        "fencing-off",
        "swarm",
        "exact-token-renewal",
        "odd-batches",
    ] {
        assert!(
            names.iter().any(|n| n == required),
            "missing scenario {required}"
        );
    }
}

#[test]
fn defaults_switch_every_fault_off() {
    let scenario = parse_scenario(
        "tiny",
        "tiny.toml",
        "description = \"x\"\nsystem = \"retention\"\n",
    )
    .unwrap();
    assert_eq!(scenario.replicas, 3);
    use leasesim_retention::events::OpKind;
    assert_eq!(scenario.settings.worker.batch_rows, 200);
    assert_eq!(scenario.settings.worker.cap_rows, 1_000);
    assert_eq!(scenario.faults.reject.get(OpKind::Renew).get(), 0.0);
    assert_eq!(scenario.faults.reply_lost.get(OpKind::Delete).get(), 0.0);
    assert_eq!(scenario.faults.pause.probability.get(), 0.0);
    assert_eq!(scenario.clocks.jump.probability.get(), 0.0);
    assert_eq!(scenario.clocks.offset_ms.max, 0);
    assert!(scenario.settings.store.fencing);
    assert!(!scenario.swarm);
    assert_eq!(scenario.latency.get(OpKind::Acquire), MsRange::new(1, 5));
}

#[test]
fn a_partial_table_keeps_the_defaults_of_the_keys_it_leaves_out() {
    let text = "description = \"x\"\nsystem = \"retention\"\n[latency]\ndelete = [200, 900]\n[faults.reject]\nrenew = 0.5\n";
    let scenario = parse_scenario("p", "p.toml", text).unwrap();
    use leasesim_retention::events::OpKind;
    assert_eq!(scenario.latency.get(OpKind::Delete), MsRange::new(200, 900));
    assert_eq!(scenario.latency.get(OpKind::Renew), MsRange::new(1, 5));
    assert_eq!(scenario.faults.reject.get(OpKind::Renew).get(), 0.5);
    assert_eq!(scenario.faults.reject.get(OpKind::Acquire).get(), 0.0);
}

/// Parses `text` and returns the error as `file:line:column: message`.
fn error_of(text: &str) -> String {
    parse_scenario("bad", "bad.toml", text)
        .expect_err("the scenario must be refused")
        .to_string()
}

#[test]
fn unknown_key_names_file_line_column() {
    let err = error_of("description = \"x\"\nsystem = \"retention\"\n\n[faults]\nrejekt = 0.1\n");
    assert!(err.starts_with("bad.toml:5:1: "), "{err}");
    assert!(err.contains("rejekt"), "{err}");
}

#[test]
fn probability_outside_unit_interval_is_refused_at_the_value() {
    let err =
        error_of("description = \"x\"\nsystem = \"retention\"\n[faults.reject]\nrenew = 1.5\n");
    assert!(err.starts_with("bad.toml:4:9: "), "{err}");
    assert!(err.contains("probability 1.5 is outside [0, 1]"), "{err}");
}

#[test]
fn range_with_min_above_max_is_refused_at_the_value() {
    let err =
        error_of("description = \"x\"\nsystem = \"retention\"\n[latency]\ndelete = [50, 10]\n");
    assert!(err.starts_with("bad.toml:4:10: "), "{err}");
    assert!(err.contains("min exceeds max"), "{err}");
}

#[test]
fn zero_replicas_is_refused_at_the_value() {
    let err = error_of("description = \"x\"\nsystem = \"retention\"\nreplicas = 0\n");
    assert!(err.starts_with("bad.toml:3:12: "), "{err}");
    assert!(
        err.contains("`replicas` must be a whole number from 1 to 64, got 0"),
        "{err}"
    );
}

#[test]
fn wrong_type_is_refused_at_the_value_with_the_range_in_words() {
    let err = error_of("description = \"x\"\nsystem = \"retention\"\nduration_ms = \"long\"\n");
    assert!(err.starts_with("bad.toml:3:15: `duration_ms`: "), "{err}");
    assert!(
        err.ends_with("expected a whole number from 1 to 3600000"),
        "{err}"
    );
    // No Rust type leaks into a message, whatever the key's type.
    for (line, key) in [
        ("replicas = \"three\"", "replicas"),
        ("replicas = -1", "replicas"),
        ("[worker]\nbatch_rows = 1.5", "worker.batch_rows"),
        ("[store]\nrows = -3", "store.rows"),
        ("[store]\ncreated_to_ms = \"now\"", "store.created_to_ms"),
        ("[latency]\ndelete = [-1, 5]", "latency.delete"),
        ("[clocks]\noffset_ms = [\"a\", 1]", "clocks.offset_ms"),
        ("[faults.reject]\nrenew = \"often\"", "faults.reject.renew"),
    ] {
        let err = error_of(&format!(
            "description = \"x\"\nsystem = \"retention\"\n{line}\n"
        ));
        assert!(err.contains(&format!("`{key}`")), "{line}: {err}");
        for rust_type in ["u16", "u32", "u64", "i64", "f64"] {
            assert!(!err.contains(rust_type), "{line}: {err}");
        }
    }
}

#[test]
fn zero_duration_is_refused_naming_the_key() {
    let err = error_of("description = \"x\"\nsystem = \"retention\"\nduration_ms = 0\n");
    assert_eq!(
        err,
        "bad.toml:3:15: `duration_ms` must be a whole number from 1 to 3600000, got 0"
    );
}

/// Every key's bound: a value just past it is refused at the value, naming the key and the
/// range; the bound itself loads.
#[test]
fn every_key_is_bounded_by_what_a_run_can_do() {
    let cases: &[(&str, &str, &str)] = &[
        ("duration_ms = {}", "3_600_000", "3_600_001"),
        ("liveness_ms = {}", "3_600_000", "3_600_001"),
        ("stop_bound_ms = {}", "3_600_000", "3_600_001"),
        ("term_bound_ms = {}", "3_600_000", "3_600_001"),
        ("replicas = {}", "64", "65"),
        (
            "[schedule]\nrun_every_ms = [1, {}]",
            "3_600_000",
            "3_600_001",
        ),
        // A latency may be an hour, but a correct term could not keep any term bound then.
        (
            "term_bound_ms = 3_600_000\nstop_bound_ms = 3_600_000\n[latency]\nrenew = [1, {}]",
            "1_700_000",
            "3_600_001",
        ),
        ("[faults]\ntimeout_ms = {}", "3_600_000", "3_600_001"),
        ("[faults.pause]\nevery_ms = [{}, 5]", "1", "0"),
        (
            "[faults.pause]\nduration_ms = [1, {}]",
            "3_600_000",
            "3_600_001",
        ),
        ("[faults.revoke]\nevery_ms = [{}, 5]", "1", "0"),
        ("[clocks.jump]\nevery_ms = [{}, 5]", "1", "0"),
        (
            "[clocks.jump]\nby_ms = [{}, 0]",
            "-86_400_000",
            "-86_400_001",
        ),
        ("[clocks]\noffset_ms = [0, {}]", "86_400_000", "86_400_001"),
        ("[clocks]\ndrift_ppm = [{}, 0]", "-500_000", "-500_001"),
        ("[stop]\ndelay_ms = [0, {}]", "3_600_000", "3_600_001"),
        ("[lease]\nttl_ms = {}", "3_600_000", "3_600_001"),
        (
            "[worker]\nretention_ms = {}",
            "1_000_000_000",
            "1_000_000_001",
        ),
        // One batch of the whole cap: a correct term sends a single delete.
        (
            "[worker]\nbatch_rows = {}\ncap_rows = {}",
            "4_294_967_295",
            "4_294_967_296",
        ),
        (
            "drain = false\n[store]\nrows = {}",
            "1_000_000_000",
            "1_000_000_001",
        ),
        (
            "[store]\ncreated_from_ms = {}",
            "-1_000_000_000",
            "-1_000_000_001",
        ),
    ];
    for (template, fits, too_far) in cases {
        let text = |value: &str| {
            let body = template.replace("{}", value);
            format!("description = \"x\"\nsystem = \"retention\"\n{body}\n")
        };
        parse_scenario("ok", "ok.toml", &text(fits))
            .unwrap_or_else(|err| panic!("{template} with {fits} is within its bound: {err}"));
        let err = error_of(&text(too_far));
        assert!(
            err.contains("must be a whole number from"),
            "{template} with {too_far}: {err}"
        );
        let shown = too_far.replace('_', "");
        assert!(err.ends_with(&format!("got {shown}")), "{err}");
    }
}

#[test]
fn a_backlog_no_run_can_drain_is_refused_at_the_rows() {
    let text = "description = \"x\"\nsystem = \"retention\"\n[store]\nrows = 1_000_000_000\n";
    let err = error_of(text);
    assert!(
        err.starts_with(
            "bad.toml:4:8: `store.rows` (1000000000) leaves a backlog no run can drain"
        ),
        "{err}"
    );
    for piece in [
        "at least 600000000 rows are eligible when faults heal at t=60000ms",
        "3 replicas can delete at most 1767000 by the end of the liveness phase",
        "set `drain = false`",
    ] {
        assert!(err.contains(piece), "`{piece}` missing: {err}");
    }
    // Without the drain the same rows are a valid (if pointless) backlog.
    let undrained = text.replace("[store]", "drain = false\n[store]");
    assert!(parse_scenario("ok", "ok.toml", &undrained).is_ok());
    // The bound is an upper one: a backlog that fits loads.
    let fits = text.replace("1_000_000_000", "1_000_000");
    assert!(parse_scenario("ok", "ok.toml", &fits).is_ok());
}

#[test]
fn a_run_that_ends_before_a_first_delete_can_land_drains_nothing() {
    // Deletes of 1,050 ms each way: the first can land 1,052 ms in at the earliest (acquire
    // round trip of 2 ms), after a run of 297 ms has ended; a shrink once reached this.
    let text = "description = \"x\"\nsystem = \"retention\"\nduration_ms = 296\nliveness_ms = 1\n\
                [latency]\ndelete = [1_050, 1_050]\n";
    let err = error_of(text);
    assert!(
        err.contains("3 replicas can delete at most 0 by the end"),
        "{err}"
    );
    // The same run, long enough for one delete to land, loads.
    let long_enough = text.replace("duration_ms = 296", "duration_ms = 1_100");
    assert!(parse_scenario("ok", "ok.toml", &long_enough).is_ok());
}

#[test]
fn bounds_no_correct_worker_can_keep_are_refused_at_their_key() {
    let err = |body: &str| {
        error_of(&format!(
            "description = \"x\"\nsystem = \"retention\"\n{body}\n"
        ))
    };
    let term = err("term_bound_ms = 1_000\n[latency]\ndelete = [1, 200]");
    assert!(
        term.starts_with("bad.toml:3:17: `term_bound_ms` (1000 ms) is shorter than a correct term"),
        "{term}"
    );
    assert!(
        term.contains(
            "2030 ms: 2030 ms of round trips at the highest latencies (acquire, 5 deletes"
        ),
        "{term}"
    );
    // A pause still running and a lost reply's timeout count too (here 2030 + 600 + 6000).
    let faults = err(
        "term_bound_ms = 8_000\n[latency]\ndelete = [1, 200]\n[faults]\ntimeout_ms = 600\n\
         [faults.reply_lost]\ndelete = 0.1\n[faults.pause]\nprobability = 0.1",
    );
    assert!(faults.contains("8630 ms"), "{faults}");
    let stop = err("stop_bound_ms = 50\n[latency]\nrenew = [1, 30]");
    assert!(
        stop.starts_with("bad.toml:3:17: `stop_bound_ms` (50 ms) is shorter than a correct stop()"),
        "{stop}"
    );
    assert!(stop.contains("raise it to at least 70"), "{stop}");
    let spin = err("[schedule]\nrun_every_ms = [0, 10]\n[latency]\nacquire = [0, 5]");
    assert!(
        spin.starts_with("bad.toml:4:16: `schedule.run_every_ms` starts at 0 ms"),
        "{spin}"
    );
    // Either minimum above zero is enough.
    for body in [
        "[schedule]\nrun_every_ms = [1, 10]\n[latency]\nacquire = [0, 5]",
        "[schedule]\nrun_every_ms = [0, 10]",
    ] {
        let text = format!("description = \"x\"\nsystem = \"retention\"\n{body}\n");
        assert!(parse_scenario("ok", "ok.toml", &text).is_ok(), "{body}");
    }
}

#[test]
fn invalid_worker_configuration_is_refused_at_its_table() {
    let err = error_of(
        "description = \"x\"\nsystem = \"retention\"\n\n[worker]\nbatch_rows = 300\ncap_rows = 200\n",
    );
    assert!(err.starts_with("bad.toml:4:1: [worker]: "), "{err}");
    let err = error_of(
        "description = \"x\"\nsystem = \"retention\"\n[lease]\nttl_ms = 500\n[worker]\nrenew_every_ms = 500\n",
    );
    assert!(err.starts_with("bad.toml:5:1: [worker]: "), "{err}");
    let err = error_of("description = \"x\"\nsystem = \"retention\"\n[worker]\nbatch_rows = 0\n");
    assert!(err.contains("[worker]"), "{err}");
}

#[test]
fn store_and_stop_cross_checks_are_refused_at_their_tables() {
    let err = error_of(
        "description = \"x\"\nsystem = \"retention\"\n[store]\ncreated_from_ms = 5\ncreated_to_ms = 1\n",
    );
    assert!(
        err.starts_with("bad.toml:3:1: [store]: created_from_ms"),
        "{err}"
    );
    let err = error_of(
        "description = \"x\"\nsystem = \"retention\"\nreplicas = 2\n[stop]\nat = \"time\"\nreplicas = 3\n",
    );
    assert!(
        err.starts_with("bad.toml:4:1: [stop]: replicas must be 1..=2"),
        "{err}"
    );
    let err = error_of("description = \"x\"\nsystem = \"retention\"\n[stop]\nat = \"sometimes\"\n");
    assert!(err.starts_with("bad.toml:4:6: "), "{err}");
}

#[test]
fn missing_description_and_syntax_errors_are_located() {
    let err = error_of("replicas = 2\n");
    assert!(err.contains("description"), "{err}");
    let err = error_of("description = \"x\"\nsystem = \"retention\"\nreplicas = = 2\n");
    assert!(err.starts_with("bad.toml:3:"), "{err}");
}

#[test]
fn an_unreadable_file_is_an_error_naming_it() {
    let err = load_scenario(std::path::Path::new("/nonexistent/none.toml")).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("/nonexistent/none.toml: cannot read"),
        "{err}"
    );
}
