//! Behaviour of the deterministic runtime, one test per promise.

use std::cell::RefCell;
use std::rc::Rc;

use leasesim_rt::{ChoiceKind, Handle, JoinError, RunOutcome, Sim, SimConfig, Strategy};

type Log = Rc<RefCell<Vec<(u32, u32)>>>;

/// Four tasks that each yield, sleep a little, and log their steps: many ready tasks at once.
fn contended(handle: &Handle, log: &Log) {
    for task in 0..4u32 {
        let (h, log) = (handle.clone(), log.clone());
        handle.spawn(async move {
            for step in 0..6u32 {
                log.borrow_mut().push((task, step));
                if step % 2 == 0 {
                    h.yield_now().await;
                } else {
                    h.sleep(5).await;
                }
            }
        });
    }
}

fn contended_order(config: SimConfig) -> (Vec<(u32, u32)>, u64, Vec<u64>) {
    let mut sim = Sim::new(config);
    let handle = sim.handle();
    let log: Log = Rc::default();
    contended(&handle, &log);
    sim.run_until_quiescent().expect_completed();
    let values = sim.recorded_choices().iter().map(|c| c.value).collect();
    let order = log.borrow().clone();
    (order, handle.trace_hash(), values)
}

#[test]
fn same_seed_gives_identical_order_and_hash() {
    let (order_a, hash_a, _) = contended_order(SimConfig::seeded(42));
    let (order_b, hash_b, _) = contended_order(SimConfig::seeded(42));
    assert_eq!(order_a, order_b);
    assert_eq!(hash_a, hash_b);
}

#[test]
fn different_seeds_give_different_orders_on_a_contended_workload() {
    let orders: std::collections::BTreeSet<Vec<(u32, u32)>> = (0..20)
        .map(|seed| contended_order(SimConfig::seeded(seed)).0)
        .collect();
    assert!(
        orders.len() >= 15,
        "only {} distinct orders from 20 seeds",
        orders.len()
    );
}

#[test]
fn fifo_needs_no_draws_and_runs_oldest_first() {
    let (order, _, values) = contended_order(SimConfig::seeded(1).with_strategy(Strategy::Fifo));
    assert!(values.is_empty(), "FIFO made draws: {values:?}");
    assert_eq!(&order[..4], &[(0, 0), (1, 0), (2, 0), (3, 0)]);
}

#[test]
fn replaying_recorded_choices_reproduces_the_run() {
    for seed in 0..10 {
        let (order, hash, values) = contended_order(SimConfig::seeded(seed));
        let (replayed, replay_hash, replay_values) =
            contended_order(SimConfig::replay(values.clone()));
        assert_eq!(order, replayed, "seed {seed}");
        assert_eq!(hash, replay_hash, "seed {seed}");
        assert_eq!(values, replay_values, "seed {seed}");
    }
}

#[test]
fn truncated_choices_still_run_with_simplest_values() {
    let (_, _, values) = contended_order(SimConfig::seeded(9));
    assert!(values.len() > 4);
    let (truncated_order, _, _) = contended_order(SimConfig::replay(values[..2].to_vec()));
    assert_eq!(truncated_order.len(), 24, "every task still finishes");
    let (empty_order, _, _) = contended_order(SimConfig::replay(Vec::new()));
    let (fifo_order, _, _) = contended_order(SimConfig::seeded(0).with_strategy(Strategy::Fifo));
    assert_eq!(
        empty_order, fifo_order,
        "all-zero choices are the FIFO schedule"
    );
}

#[test]
fn equal_deadline_timers_fire_in_registration_order() {
    let mut sim = Sim::new(SimConfig::seeded(3).with_strategy(Strategy::Fifo));
    let handle = sim.handle();
    let fired: Log = Rc::default();
    let tasks: Vec<_> = (0..5u32)
        .map(|task| {
            let (h, fired) = (handle.clone(), fired.clone());
            handle.spawn(async move {
                h.sleep_until(100).await;
                fired.borrow_mut().push((task, h.now_ms() as u32));
            })
        })
        .collect();
    sim.block_on(async {
        for task in tasks {
            task.await.unwrap();
        }
    })
    .expect_completed();
    let order: Vec<_> = fired.borrow().clone();
    assert_eq!(
        order,
        vec![(0, 100), (1, 100), (2, 100), (3, 100), (4, 100)]
    );
}

#[test]
fn time_moves_only_when_nothing_is_ready_and_jumps_to_the_deadline() {
    let mut sim = Sim::new(SimConfig::seeded(5));
    let handle = sim.handle();
    let seen = sim.block_on(async {
        let before = handle.now_ms();
        for _ in 0..10 {
            handle.yield_now().await;
        }
        let after_yields = handle.now_ms();
        handle.sleep(250).await;
        (before, after_yields, handle.now_ms())
    });
    assert_eq!(seen.expect_completed(), (0, 0, 250));
}

#[test]
fn aborted_task_timers_never_fire() {
    let mut sim = Sim::new(SimConfig::seeded(4));
    let handle = sim.handle();
    let fired = Rc::new(RefCell::new(false));
    let flag = fired.clone();
    let h = handle.clone();
    let victim = handle.spawn(async move {
        h.sleep(100).await;
        *flag.borrow_mut() = true;
    });
    let result = sim.block_on(async {
        handle.sleep(10).await;
        assert_eq!(
            handle.pending_timers(),
            1,
            "the victim's timer is registered"
        );
        victim.abort();
        assert_eq!(
            handle.pending_timers(),
            0,
            "abort removed the victim's timer"
        );
        handle.sleep(500).await;
        victim.await
    });
    assert_eq!(result.expect_completed(), Err(JoinError::Aborted));
    assert!(!*fired.borrow());
}

/// Polls 1,000 sleeps once each (registering their timers) and drops them: no timer fires and
/// at most 130 entries, stale ones included, stay in the queue.
fn assert_dropped_sleeps_leave_no_entries(duration_ms: impl Fn(u64) -> u64) {
    let mut sim = Sim::new(SimConfig::seeded(8));
    let handle = sim.handle();
    sim.block_on(async {
        for round in 0..1_000u64 {
            let sleep = handle.sleep(duration_ms(round));
            let mut sleep = std::pin::pin!(sleep);
            assert!(futures::poll!(sleep.as_mut()).is_pending());
            assert_eq!(handle.pending_timers(), 1);
        }
        assert_eq!(handle.pending_timers(), 0);
        assert!(
            handle.timer_queue_len() <= 130,
            "stale entries: {}",
            handle.timer_queue_len()
        );
    })
    .expect_completed();
    assert_eq!(handle.now_ms(), 0, "no dropped timer ever fired");
}

#[test]
fn dropped_sleeps_leave_no_timer_entries() {
    // Far deadlines: the heap.
    assert_dropped_sleeps_leave_no_entries(|round| 1_000 + round);
}

#[test]
fn dropped_near_sleeps_leave_no_timer_entries_either() {
    // Deadlines within the wheel's reach (64 ms): their stale entries are compacted too.
    assert_dropped_sleeps_leave_no_entries(|round| 1 + round % 63);
}

#[test]
fn deadlock_is_an_outcome_naming_the_blocked_tasks() {
    let mut sim = Sim::new(SimConfig::seeded(2));
    let handle = sim.handle();
    let (_tx, rx) = futures::channel::oneshot::channel::<()>();
    handle.spawn_named("waiter", async move {
        let _ = rx.await;
    });
    let outcome = sim.block_on(std::future::pending::<()>());
    let RunOutcome::Deadlock { blocked } = outcome else {
        panic!("expected deadlock: {outcome:?}")
    };
    let names: Vec<_> = blocked.iter().map(|task| task.name.as_str()).collect();
    assert_eq!(names, ["waiter", "main"]);
}

#[test]
fn panic_is_an_outcome_with_task_and_message() {
    let mut sim = Sim::new(SimConfig::seeded(2));
    let handle = sim.handle();
    let h = handle.clone();
    let bad = handle.spawn_named("bad", async move {
        h.sleep(7).await;
        panic!("boom at {}", h.now_ms());
    });
    let outcome = sim.block_on(bad);
    let RunOutcome::Panic { task, message, .. } = outcome else {
        panic!("expected panic: {outcome:?}")
    };
    assert_eq!(task.name, "bad");
    assert_eq!(task.id, leasesim_rt::TaskId(0));
    assert_eq!(message, "boom at 7");
}

#[test]
fn step_and_time_budgets_end_runs_instead_of_hanging() {
    let mut sim = Sim::new(SimConfig::seeded(1).with_max_steps(100));
    let handle = sim.handle();
    let outcome = sim.block_on(async {
        loop {
            handle.yield_now().await;
        }
    });
    assert_eq!(outcome, RunOutcome::StepLimit { steps: 100 });

    let mut sim = Sim::new(SimConfig::seeded(1).with_max_time_ms(1_000));
    let handle = sim.handle();
    let outcome = sim.block_on(async {
        loop {
            handle.sleep(300).await;
        }
    });
    assert_eq!(outcome, RunOutcome::TimeLimit { now_ms: 900 });
}

#[test]
fn a_stale_waker_of_a_finished_task_never_wakes_a_later_task() {
    // Wake cells of finished tasks are reused; one whose waker someone kept must not be.
    let mut sim = Sim::new(SimConfig::seeded(7).with_strategy(Strategy::Fifo));
    let handle = sim.handle();
    let stash: Rc<RefCell<Option<std::task::Waker>>> = Rc::default();
    let keep = stash.clone();
    handle.spawn(std::future::poll_fn(move |cx| {
        *keep.borrow_mut() = Some(cx.waker().clone());
        std::task::Poll::Ready(())
    }));
    let polls = Rc::new(std::cell::Cell::new(0u32));
    let h = handle.clone();
    let outcome = sim.block_on(async move {
        h.yield_now().await;
        let counted = polls.clone();
        let later = h.spawn(std::future::poll_fn(move |_| {
            counted.set(counted.get() + 1);
            std::task::Poll::<()>::Pending
        }));
        h.yield_now().await;
        assert_eq!(polls.get(), 1, "the later task ran once");
        stash.borrow().as_ref().unwrap().wake_by_ref();
        h.yield_now().await;
        h.yield_now().await;
        later.abort();
        polls.get()
    });
    assert_eq!(
        outcome.expect_completed(),
        1,
        "a stale waker woke a later task"
    );
}

#[test]
fn join_handles_yield_outputs_and_waking_a_finished_task_is_a_no_op() {
    let mut sim = Sim::new(SimConfig::seeded(6));
    let handle = sim.handle();
    let stash: Rc<RefCell<Option<std::task::Waker>>> = Rc::default();
    let keep = stash.clone();
    let h = handle.clone();
    let child = handle.spawn(async move {
        std::future::poll_fn(|cx| {
            *keep.borrow_mut() = Some(cx.waker().clone());
            std::task::Poll::Ready(())
        })
        .await;
        h.sleep(3).await;
        21 * 2
    });
    let value = sim.block_on(async {
        let value = child.await.unwrap();
        let steps = handle.steps();
        stash.borrow().as_ref().unwrap().wake_by_ref();
        handle.yield_now().await;
        // main ran twice more; the finished child was not polled again.
        assert_eq!(handle.steps(), steps + 1);
        value
    });
    assert_eq!(value.expect_completed(), 42);
    assert_eq!(handle.live_tasks(), 0);
}

#[test]
fn pct_depth_one_is_a_fixed_priority_order() {
    // Depth 1 has no change point: the highest-priority ready task always runs. Each round,
    // every task yields (staying on top) and then sleeps, so the whole order follows from the
    // four priorities drawn at spawn: round by round, tasks in priority order, two steps each.
    for seed in 0..10 {
        let (order, _, values) =
            contended_order(SimConfig::seeded(seed).with_strategy(Strategy::Pct { depth: 1 }));
        assert_eq!(values.len(), 4, "one priority draw per task, nothing else");
        let mut by_priority: Vec<(u64, u32)> = values.iter().copied().zip(0..4).collect();
        by_priority.sort();
        let expected: Vec<(u32, u32)> = (0..3)
            .flat_map(|round| {
                by_priority
                    .iter()
                    .flat_map(move |&(_, task)| [(task, 2 * round), (task, 2 * round + 1)])
            })
            .collect();
        assert_eq!(order, expected, "seed {seed}");
    }
}

#[test]
fn pct_change_points_are_drawn_and_recorded() {
    let sim = Sim::new(SimConfig::seeded(12).with_strategy(Strategy::Pct { depth: 4 }));
    let kinds: Vec<ChoiceKind> = sim.recorded_choices().iter().map(|c| c.kind).collect();
    assert_eq!(kinds, [ChoiceKind::ChangePoint; 3]);
}

#[test]
fn strategies_parse_from_text() {
    assert_eq!("pct:3".parse::<Strategy>(), Ok(Strategy::Pct { depth: 3 }));
    assert_eq!("random".parse::<Strategy>(), Ok(Strategy::Random));
    assert!("pct:0".parse::<Strategy>().is_err());
    assert!("lifo".parse::<Strategy>().is_err());
}

#[test]
fn a_run_publishes_its_virtual_time_through_its_interrupt() {
    let interrupt = leasesim_rt::Interrupt::new();
    let mut sim = Sim::new(SimConfig::seeded(5).with_interrupt(interrupt.clone()));
    let handle = sim.handle();
    let (watched, inside) = (interrupt.clone(), std::cell::Cell::new(0));
    let outcome = sim.block_on(async {
        handle.sleep(250).await;
        inside.set(watched.virtual_ms());
        handle.sleep(750).await;
    });
    assert!(matches!(outcome, RunOutcome::Completed(())));
    assert_eq!((inside.get(), interrupt.virtual_ms()), (250, 1_000));
    interrupt.clear();
    assert_eq!(
        interrupt.virtual_ms(),
        0,
        "a cleared interrupt starts the next run at 0"
    );
}
