//! PCT does what it claims: change points apply on every step, lone or contested, and a
//! depth-2 bug is found at no less than the rate `1 / (n * k)` the algorithm promises.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use leasesim_rt::{ChoiceKind, Handle, Sim, SimConfig, Strategy, pct_steps_from};

/// `a` runs alone for `solo` steps at t=1 (while `b` sleeps: nothing else is ready), then both
/// wake at t=5 and the scheduler decides who goes first. Returns the step numbers of a's lone polls, who ran first
/// at t=5, the steps the run took, and its recorded choice values.
struct Contest {
    lone_steps: Vec<u64>,
    first_at_5: char,
    steps: u64,
    values: Vec<u64>,
}

fn contest(config: SimConfig, solo: u32) -> Contest {
    let mut sim = Sim::new(config);
    let handle = sim.handle();
    let lone: Rc<RefCell<Vec<u64>>> = Rc::default();
    let first: Rc<Cell<char>> = Rc::new(Cell::new('-'));
    let (h, log, won) = (handle.clone(), lone.clone(), first.clone());
    handle.spawn_named("a", async move {
        h.sleep_until(1).await;
        for _ in 0..solo {
            h.yield_now().await;
            // +1: `steps()` counts the polls before this one.
            log.borrow_mut().push(h.steps());
        }
        h.sleep_until(5).await;
        if won.get() == '-' {
            won.set('a');
        }
    });
    let (h, won) = (handle.clone(), first.clone());
    handle.spawn_named("b", async move {
        h.sleep_until(5).await;
        if won.get() == '-' {
            won.set('b');
        }
    });
    sim.run_until_quiescent().expect_completed();
    let values = sim.recorded_choices().iter().map(|c| c.value).collect();
    let lone_steps = lone.borrow().clone();
    Contest {
        lone_steps,
        first_at_5: first.get(),
        steps: handle.steps(),
        values,
    }
}

#[test]
fn a_change_point_on_a_lone_step_demotes_that_task_for_later_contests() {
    const SOLO: u32 = 6;
    let k = contest(SimConfig::seeded(0).with_strategy(Strategy::Fifo), SOLO).steps;
    let (mut on_lone_steps, mut flipped) = (0, 0);
    for seed in 0..400 {
        let config = SimConfig::seeded(seed)
            .with_strategy(Strategy::Pct { depth: 2 })
            .with_pct_steps_estimate(k);
        let run = contest(config, SOLO);
        // The first recorded value is the change point: step = value + 1.
        let change_step = run.values[0] + 1;
        if !run.lone_steps.contains(&change_step) {
            continue;
        }
        on_lone_steps += 1;
        assert_eq!(
            run.first_at_5, 'b',
            "seed {seed}: a was demoted at its lone step {change_step}, yet ran first at t=5"
        );
        // The same priorities with the change point moved past the run: a flip iff a won.
        let mut values = run.values.clone();
        values[0] = k - 1;
        let replay = SimConfig::replay(values)
            .with_strategy(Strategy::Pct { depth: 2 })
            .with_pct_steps_estimate(k);
        let unchanged = contest(replay, SOLO);
        flipped += u32::from(unchanged.first_at_5 == 'a');
    }
    assert!(
        on_lone_steps >= 100,
        "only {on_lone_steps} change points fell on lone steps"
    );
    assert!(
        flipped >= 25,
        "change points on lone steps flipped only {flipped} contests"
    );
}

/// A depth-2 atomicity bug: `a` sets `x = 1`, yields `window` times, then sets `x = 0`; `b`
/// reads `x` once after a few yields of its own. The bug is `b` reading 1: it needs `a` to go
/// first (one ordering) and `a` to lose the processor inside its window (a second one).
fn atomicity(handle: &Handle, window: u32, bug: Rc<Cell<bool>>) {
    let x = Rc::new(Cell::new(0u8));
    let (h, xa) = (handle.clone(), x.clone());
    handle.spawn_named("a", async move {
        xa.set(1);
        for _ in 0..window {
            h.yield_now().await;
        }
        xa.set(0);
    });
    let h = handle.clone();
    handle.spawn_named("b", async move {
        for _ in 0..2 {
            h.yield_now().await;
        }
        if x.get() == 1 {
            bug.set(true);
        }
    });
}

fn atomicity_run(config: SimConfig) -> (bool, u64, leasesim_rt::PctStats) {
    let mut sim = Sim::new(config);
    let handle = sim.handle();
    let bug = Rc::new(Cell::new(false));
    atomicity(&handle, 3, bug.clone());
    sim.run_until_quiescent().expect_completed();
    (bug.get(), handle.steps(), handle.pct_stats())
}

#[test]
fn pct_depth_two_finds_a_depth_two_bug_at_least_at_its_theoretical_rate() {
    // n = 2 tasks; k = the steps the program takes, measured from unchecked runs.
    let n = 2u64;
    let k = pct_steps_from((0..4).map(|seed| atomicity_run(SimConfig::seeded(seed)).1));
    let seeds = 4_000u64;
    let mut hits = 0u64;
    let (mut drawn, mut applied) = (0u64, 0u64);
    for seed in 0..seeds {
        let config = SimConfig::seeded(seed)
            .with_strategy(Strategy::Pct { depth: 2 })
            .with_pct_steps_estimate(k);
        let (bug, _, stats) = atomicity_run(config);
        hits += u64::from(bug);
        drawn += u64::from(stats.drawn);
        applied += u64::from(stats.applied);
    }
    let bound = seeds / (n * k);
    println!("k={k}: bug hit in {hits} of {seeds} seeds (bound 1/(n*k) gives {bound})");
    assert!(
        hits >= bound,
        "PCT hit the depth-2 bug in {hits} of {seeds} seeds, below 1/(n*k) = {bound}"
    );
    assert_eq!(drawn, seeds, "depth 2 draws one change point per run");
    // Every run takes exactly k steps, so every change point (drawn in 1..=k) is reached.
    assert_eq!(
        applied, drawn,
        "change points drawn inside the run must all be applied"
    );
}

#[test]
fn change_points_past_the_end_are_drawn_but_not_applied() {
    let config = SimConfig::seeded(3)
        .with_strategy(Strategy::Pct { depth: 4 })
        .with_pct_steps_estimate(1_000_000);
    let (_, steps, stats) = atomicity_run(config);
    assert!(steps < 20);
    assert_eq!(stats.drawn, 3);
    assert!(
        stats.applied < 3,
        "points drawn over a million steps landed in {steps}"
    );
    let sim = Sim::new(SimConfig::seeded(12).with_strategy(Strategy::Pct { depth: 4 }));
    let kinds: Vec<ChoiceKind> = sim.recorded_choices().iter().map(|c| c.kind).collect();
    assert_eq!(kinds, [ChoiceKind::ChangePoint; 3]);
}

#[test]
fn change_points_sharing_a_step_demote_the_lone_task_twice_without_panicking() {
    // Replayed (edited) choices can put every change point on one step; with a lone task
    // ready, each of them demotes that same task.
    let mut sim = Sim::new(
        SimConfig::replay(vec![0, 0, 0, 5, 9])
            .with_strategy(Strategy::Pct { depth: 4 })
            .with_pct_steps_estimate(10),
    );
    let handle = sim.handle();
    let h = handle.clone();
    let outcome = sim.block_on(async move {
        for _ in 0..3 {
            h.yield_now().await;
        }
    });
    assert!(outcome.is_completed());
    assert_eq!(
        handle.pct_stats(),
        leasesim_rt::PctStats {
            drawn: 3,
            applied: 3
        }
    );
}
