//! What a run draws: swarm switches and scales the system's faults and may draw the worker's
//! batch and claim duration; every draw stays valid and within its envelope, and value 0 of
//! every choice is the scenario's own settings with every fault off.

mod common;

use common::{scenario, worker};
use leasesim_reservations::settings::WorkerDraw;
use leasesim_rt::SimConfig;
use leasesim_sim::simulate;

#[test]
fn swarm_draws_stay_valid_and_within_their_envelope() {
    let swarm = scenario("expiry-swarm");
    let envelope = &swarm.settings;
    let (mut short, mut own, mut kill_on) = (0, 0, 0);
    for seed in 0..60 {
        let run = simulate(
            &swarm,
            &worker("correct"),
            SimConfig::seeded(seed),
            false,
            None,
        );
        let drawn = &run.profile.system;
        assert!(
            drawn.worker.validate().is_ok(),
            "seed {seed}: {:?}",
            drawn.worker
        );
        assert!((1..=8).contains(&drawn.worker.batch_size));
        assert!(drawn.kill <= envelope.kill.probability.get());
        assert!(drawn.store_timeout <= envelope.store_timeout.get());
        assert!(drawn.malformed <= envelope.malformed.get());
        match drawn.worker_draw {
            Some(WorkerDraw::ShortClaims) => {
                short += 1;
                assert!((500..=3_000).contains(&drawn.worker.claim_for_ms));
            }
            Some(WorkerDraw::Own) => {
                own += 1;
                assert_eq!(drawn.worker, envelope.worker);
            }
            None => panic!("a swarm run says how it drew its worker"),
        }
        kill_on += u32::from(drawn.kill > 0.0);
    }
    assert!(short > 10 && own > 10, "short {short}, own {own}");
    assert!(
        kill_on > 10 && kill_on < 50,
        "kill switched on in {kill_on} of 60"
    );
}

#[test]
fn value_zero_of_every_choice_is_the_scenarios_own_with_faults_off() {
    let swarm = scenario("expiry-swarm");
    let run = simulate(
        &swarm,
        &worker("correct"),
        SimConfig::replay(Vec::new()),
        false,
        None,
    );
    let drawn = &run.profile.system;
    assert_eq!(drawn.worker, swarm.settings.worker);
    assert_eq!(drawn.worker_draw, Some(WorkerDraw::Own));
    assert_eq!(
        (drawn.kill, drawn.store_timeout, drawn.malformed),
        (0.0, 0.0, 0.0)
    );
    let steady = scenario("expiry-steady");
    let run = simulate(
        &steady,
        &worker("correct"),
        SimConfig::seeded(3),
        false,
        None,
    );
    assert_eq!(run.profile.system.worker_draw, None, "no swarm, no draw");
    assert!(
        <leasesim_reservations::Reservations as leasesim_sim::Setup>::describe(&run.profile.system)
            .is_empty()
    );
}
