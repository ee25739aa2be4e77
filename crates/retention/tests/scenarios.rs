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
    assert!(err.contains("replicas must be 1..=64, got 0"), "{err}");
}

#[test]
fn wrong_type_is_refused_at_the_value() {
    let err = error_of("description = \"x\"\nsystem = \"retention\"\nduration_ms = \"long\"\n");
    assert!(err.starts_with("bad.toml:3:15: "), "{err}");
}

#[test]
fn zero_duration_is_refused() {
    let err = error_of("description = \"x\"\nsystem = \"retention\"\nduration_ms = 0\n");
    assert!(err.contains("must be greater than zero"), "{err}");
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
