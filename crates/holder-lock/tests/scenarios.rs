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
