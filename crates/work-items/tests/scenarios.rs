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
    assert_eq!(names.len(), 9, "{names:?}");
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
            "bad.toml:3:1:",
            "count (0) must be between 1 and 10000",
        ),
        (
            "[items]\nchunks = [3, 2]\n",
            "bad.toml:3:1:",
            "chunks [3, 2] must be a range",
        ),
        (
            "[items]\nchunks = [1, 65]\n",
            "bad.toml:3:1:",
            "within [1, 64]",
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
