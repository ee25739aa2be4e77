//! The event sink: stamping, observers that halt a run, and the determinism self-check.

use std::rc::Rc;

use leasesim_events::Flow;
use leasesim_rt::{RunOutcome, Sim, SimConfig};
use leasesim_sim::{EventSink, check_determinism};

fn logged_run(seed: u64, flip_at: Option<u64>) -> Vec<(u64, String)> {
    let mut sim = Sim::new(SimConfig::seeded(seed));
    let handle = sim.handle();
    let events = Rc::new(EventSink::<String>::new(handle.clone(), true));
    for task in 0..3u32 {
        let (h, events) = (handle.clone(), events.clone());
        handle.spawn(async move {
            for step in 0..4u64 {
                h.sleep(h.range(1, 3)).await;
                let odd = flip_at == Some(h.now_ms());
                events.emit(format!(
                    "task {task} step {step}{}",
                    if odd { "!" } else { "" }
                ));
            }
        });
    }
    sim.run_until_quiescent().expect_completed();
    events
        .take()
        .into_iter()
        .map(|e| (e.at_ms, e.event))
        .collect()
}

#[test]
fn check_determinism_passes_a_deterministic_run_and_names_the_first_divergence() {
    assert_eq!(check_determinism(|| logged_run(77, None)), Ok(12));
    let mut calls = 0;
    let divergence = check_determinism(|| {
        calls += 1;
        logged_run(77, (calls == 2).then_some(4))
    })
    .unwrap_err();
    let text = divergence.to_string();
    assert!(
        text.contains(&format!("event #{}", divergence.index)),
        "{text}"
    );
    let first = divergence.first.expect("both runs are long enough");
    let second = divergence.second.expect("both runs are long enough");
    assert_eq!(first.0, 4);
    assert_eq!(second.1, format!("{}!", first.1));
}

#[test]
fn an_observer_can_halt_the_run_at_an_event() {
    let mut sim = Sim::new(SimConfig::seeded(1));
    let handle = sim.handle();
    let events = Rc::new(EventSink::<u64>::new(handle.clone(), true));
    events.observe(|e| {
        if e.event == 3 {
            Flow::Halt
        } else {
            Flow::Continue
        }
    });
    let log = events.clone();
    let h = handle.clone();
    let outcome = sim.block_on(async move {
        for tick in 0..10u64 {
            h.sleep(1).await;
            log.emit(tick);
        }
    });
    assert_eq!(outcome, RunOutcome::Halted);
    assert_eq!(events.len(), 4);
    assert_eq!(handle.now_ms(), 4);
}
