//! The drawn profile: with swarm, the worker's settings vary per run and stay valid; without
//! it they are the scenario's; value 0 of every draw gives the scenario's own.

use std::rc::Rc;

use leasesim_retention::{
    Profile as FaultProfile, WorkerDraw, WorkerFactory, correct_worker, parse_scenario,
};
use leasesim_rt::{Feed, SimConfig};
use leasesim_sim::simulate;

const SWARM: &str = r#"
description = "swarm with a short run"
system = "retention"
replicas = 2
duration_ms = 2_000
liveness_ms = 2_000
swarm = true

[worker]
batch_rows = 200
cap_rows = 1_000

[faults]
short_delete = 0.4
"#;

fn profile(text: &str, feed: Feed) -> FaultProfile {
    let scenario = Rc::new(parse_scenario("p", "p.toml", text).unwrap());
    let factory: Rc<WorkerFactory> = Rc::new(correct_worker);
    let config = SimConfig {
        feed,
        ..SimConfig::seeded(0)
    };
    simulate(&scenario, &factory, config, false, None).profile
}

#[test]
fn swarm_draws_valid_worker_settings_of_every_kind() {
    let profiles: Vec<FaultProfile> = (0..80)
        .map(|seed| profile(SWARM, Feed::Seed(seed)))
        .collect();
    let drawn = |kind| {
        profiles
            .iter()
            .filter(|p| p.system.worker_draw == Some(kind))
            .count()
    };
    assert!(drawn(WorkerDraw::Own) >= 10);
    assert!(drawn(WorkerDraw::Small) >= 10);
    assert!(drawn(WorkerDraw::Large) >= 10);
    for profile in &profiles {
        let worker = &profile.system.worker;
        assert_eq!(worker.validate(), Ok(()), "{worker:?}");
        match profile.system.worker_draw {
            Some(WorkerDraw::Small) => {
                assert!((1..=7).contains(&worker.batch_rows), "{worker:?}");
                assert!(
                    worker.cap_rows.div_ceil(worker.batch_rows) <= 7,
                    "{worker:?}"
                );
                assert!(
                    !profile.system.drain,
                    "a small allowance cannot be asked to drain"
                );
            }
            Some(WorkerDraw::Large) => {
                assert!((200..=400).contains(&worker.batch_rows), "{worker:?}");
                assert!(worker.cap_rows >= 1_000, "{worker:?}");
                assert_ne!(worker.cap_rows % worker.batch_rows, 0, "{worker:?}");
                assert!(profile.system.drain);
            }
            _ => assert_eq!((worker.batch_rows, worker.cap_rows), (200, 1_000)),
        }
    }
    let odd = profiles
        .iter()
        .filter(|p| p.system.worker.cap_rows % p.system.worker.batch_rows != 0)
        .count();
    assert!(
        odd >= 20,
        "caps that are not a multiple of the batch: {odd} of 80"
    );
    let described = profiles.iter().all(|p| {
        let line = format!(
            "worker: batch {} rows, cap {} rows",
            p.system.worker.batch_rows, p.system.worker.cap_rows
        );
        p.describe().iter().any(|l| l.starts_with(&line))
    });
    assert!(described, "the trace header shows the drawn settings");
}

#[test]
fn value_zero_of_every_draw_is_the_scenarios_own_settings() {
    let zero = profile(SWARM, Feed::Replay(Vec::new()));
    assert_eq!(zero.system.worker_draw, Some(WorkerDraw::Own));
    assert_eq!(
        (zero.system.worker.batch_rows, zero.system.worker.cap_rows),
        (200, 1_000)
    );
    assert_eq!(
        zero.system.short_delete, 0.0,
        "value 0 switches the short answers off"
    );
    assert!(zero.system.drain);
}

#[test]
fn without_swarm_the_worker_is_the_scenarios_and_not_printed() {
    let text = SWARM.replace("swarm = true", "swarm = false");
    for seed in 0..10 {
        let profile = profile(&text, Feed::Seed(seed));
        assert_eq!(profile.system.worker_draw, None);
        assert_eq!(
            (
                profile.system.worker.batch_rows,
                profile.system.worker.cap_rows
            ),
            (200, 1_000)
        );
        assert_eq!(profile.system.short_delete, 0.4);
        assert!(!profile.describe().iter().any(|l| l.starts_with("worker:")));
        assert!(
            profile
                .describe()
                .contains(&"short-delete: p=0.4".to_string())
        );
    }
}
