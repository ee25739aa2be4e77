//! The drawn profile: with swarm the run may lose its renewal or its store's
//! compare-and-delete, and its job faults and the store's forgetting are switched and scaled;
//! value 0 of every draw is the scenario's own; without swarm nothing is drawn.

use std::rc::Rc;

use leasesim_holder_lock::{Profile, WorkerFactory, correct_worker, parse_scenario};
use leasesim_rt::{Feed, SimConfig};
use leasesim_sim::simulate;

const SWARM: &str = r#"
description = "swarm with a short run"
system = "holder-lock"
replicas = 2
duration_ms = 2_000
liveness_ms = 2_000
swarm = true

[claim]
lifetime_ms = 2_000
renew_every_ms = 500

[job]
long_share = 0.4

[faults]
job_fail = 0.2

[faults.evict]
probability = 0.4
every_ms = [100, 200]

[faults.failover]
probability = 0.4

[faults.store_restart]
probability = 0.2
"#;

fn profile(text: &str, feed: Feed) -> Profile {
    let scenario = Rc::new(parse_scenario("p", "p.toml", text).unwrap());
    let factory: Rc<WorkerFactory> = Rc::new(correct_worker);
    let config = SimConfig {
        feed,
        ..SimConfig::seeded(0)
    };
    simulate(&scenario, &factory, config, false, None).profile
}

#[test]
fn swarm_takes_the_renewal_and_the_compare_and_delete_away_in_some_runs() {
    let profiles: Vec<Profile> = (0..60).map(|s| profile(SWARM, Feed::Seed(s))).collect();
    let count = |f: &dyn Fn(&Profile) -> bool| profiles.iter().filter(|p| f(p)).count();
    assert!(count(&|p| p.system.claim.renew_every_ms.is_none()) >= 10);
    assert!(count(&|p| p.system.claim.renew_every_ms.is_some()) >= 10);
    assert!(count(&|p| !p.system.compare_and_delete) >= 10);
    assert!(count(&|p| p.system.job_fail == 0.0) >= 10);
    assert!(count(&|p| p.system.job_fail > 0.0) >= 10);
    for profile in &profiles {
        assert_eq!(profile.system.claim.validate(), Ok(()));
        assert!(profile.system.job_fail <= 0.2 && profile.system.job.long_share.get() <= 0.4);
        let header = profile.describe();
        let renewal_drawn = header.iter().any(|l| l.contains("never renewed (drawn)"));
        assert_eq!(renewal_drawn, profile.system.claim.renew_every_ms.is_none());
        let store_drawn = header
            .iter()
            .any(|l| l == "store: no compare-and-delete (drawn)");
        assert_eq!(store_drawn, !profile.system.compare_and_delete);
    }
}

#[test]
fn value_zero_of_every_draw_is_the_scenarios_own() {
    let zero = profile(SWARM, Feed::Replay(Vec::new()));
    assert_eq!(zero.system.claim.renew_every_ms, Some(500));
    assert!(zero.system.compare_and_delete);
    assert_eq!(
        zero.system.job_fail, 0.0,
        "value 0 switches the job faults off"
    );
    assert_eq!(zero.system.job.long_share.get(), 0.0);
    let forgetting = zero.system.forgetting.map(|tick| tick.probability);
    assert_eq!(
        forgetting, [0.0; 3],
        "value 0 switches the store's forgetting off"
    );
}

#[test]
fn swarm_switches_and_scales_each_forgetting_within_its_envelope_and_names_it() {
    let envelope = [0.4, 0.4, 0.2];
    let labels = ["evict: p=", "failover: p=", "store-restart: p="];
    let profiles: Vec<Profile> = (0..60).map(|s| profile(SWARM, Feed::Seed(s))).collect();
    for (i, (max, label)) in envelope.iter().zip(labels).enumerate() {
        let drawn = |p: &Profile| p.system.forgetting[i].probability;
        let on = profiles.iter().filter(|p| drawn(p) > 0.0).count();
        assert!((10..=50).contains(&on), "{label} on in {on} of 60 runs");
        for profile in &profiles {
            assert!(drawn(profile) <= *max);
            let named = profile.describe().iter().any(|l| l.starts_with(label));
            assert_eq!(named, drawn(profile) > 0.0, "{label}");
        }
    }
    let evict = profiles[0].system.forgetting[0].every_ms;
    assert_eq!(
        (evict.min, evict.max),
        (100, 200),
        "the period is the scenario's"
    );
}

#[test]
fn without_swarm_the_run_is_the_scenarios() {
    let text = SWARM.replace("swarm = true", "swarm = false");
    for seed in 0..10 {
        let profile = profile(&text, Feed::Seed(seed));
        assert_eq!(profile.system.swarm, None);
        assert_eq!(profile.system.claim.renew_every_ms, Some(500));
        assert!(profile.system.compare_and_delete);
        assert_eq!(profile.system.job_fail, 0.2);
        let forgetting = profile.system.forgetting.map(|tick| tick.probability);
        assert_eq!(forgetting, [0.4, 0.4, 0.2]);
        assert!(
            profile
                .describe()
                .contains(&"job-fail: p=0.2 per step".to_string())
        );
    }
}
