//! A stuck run is a verdict, never a hang: zero-length sleeps yield, a task that spins at one
//! instant is named, an interrupt from outside ends a run, and a dropped simulator refuses
//! new work. Also: wakers refuse foreign threads, and panics can be captured quietly.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use leasesim_rt::{Interrupt, JoinError, RunOutcome, Sim, SimConfig};

#[test]
fn a_zero_length_sleep_lets_other_tasks_run() {
    let mut sim = Sim::new(SimConfig::seeded(1).with_strategy(leasesim_rt::Strategy::Fifo));
    let handle = sim.handle();
    let flag = Rc::new(Cell::new(false));
    let (h, seen) = (handle.clone(), flag.clone());
    let waiter = handle.spawn_named("waiter", async move {
        // Spawned first, so it is polled first: the setter can only run if sleep(0) yields.
        for round in 0..1_000u32 {
            if seen.get() {
                return Some(round);
            }
            h.sleep(0).await;
        }
        None
    });
    let set = flag.clone();
    handle.spawn_named("setter", async move { set.set(true) });
    let rounds = sim.block_on(waiter).expect_completed().unwrap();
    assert_eq!(
        rounds,
        Some(1),
        "the setter ran at the waiter's first zero-length sleep"
    );
    assert_eq!(handle.now_ms(), 0, "no time passed");
}

#[test]
fn a_task_spinning_at_one_instant_ends_the_run_naming_it() {
    let mut sim = Sim::new(SimConfig::seeded(2));
    let handle = sim.handle();
    let h = handle.clone();
    handle.spawn_named("poller", async move {
        h.sleep(40).await;
        loop {
            h.sleep(0).await;
        }
    });
    let h = handle.clone();
    handle.spawn_named("ticker", async move {
        loop {
            h.sleep(1_000).await;
        }
    });
    let outcome = sim.run_until_quiescent();
    let RunOutcome::Spin { task, at_ms, polls } = outcome else {
        panic!("expected a spin verdict, got {outcome:?}");
    };
    assert_eq!((task.name.as_str(), at_ms, polls), ("poller", 40, 10_001));
}

#[test]
fn busy_instants_below_the_budget_are_not_spins() {
    let config = SimConfig {
        max_polls_per_instant: 50,
        ..SimConfig::seeded(3)
    };
    let mut sim = Sim::new(config);
    let handle = sim.handle();
    let outcome = sim.block_on(async {
        // 40 yields at each of 100 instants: busy, never spinning.
        for _ in 0..100 {
            for _ in 0..40 {
                handle.yield_now().await;
            }
            handle.sleep(1).await;
        }
    });
    assert_eq!(outcome, RunOutcome::Completed(()));
}

#[test]
fn a_raised_interrupt_ends_a_stuck_run_at_its_next_step() {
    let interrupt = Interrupt::new();
    let config = SimConfig {
        max_polls_per_instant: u32::MAX,
        ..SimConfig::seeded(4).with_interrupt(interrupt.clone())
    };
    let mut sim = Sim::new(config);
    let handle = sim.handle();
    let watchdog = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        interrupt.raise();
    });
    let outcome = sim.block_on(async {
        loop {
            handle.yield_now().await;
        }
    });
    watchdog.join().unwrap();
    assert_eq!(outcome, RunOutcome::Interrupted { now_ms: 0 });
}

#[test]
fn a_raised_interrupt_ends_a_poll_that_never_returns_but_records_events() {
    let interrupt = Interrupt::new();
    let mut sim = Sim::new(SimConfig::seeded(5).with_interrupt(interrupt.clone()));
    let handle = sim.handle();
    let h = handle.clone();
    handle.spawn_named("busy", async move {
        h.sleep(7).await;
        // Never yields: only the interrupt check on every recorded event can end this.
        loop {
            h.note(1);
        }
    });
    let watchdog = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        interrupt.raise();
    });
    let outcome = sim.run_until_quiescent();
    watchdog.join().unwrap();
    assert_eq!(outcome, RunOutcome::Interrupted { now_ms: 7 });
}

#[test]
fn a_handle_outliving_its_simulator_refuses_to_spawn() {
    let sim = Sim::new(SimConfig::seeded(6));
    let handle = sim.handle();
    drop(sim);
    let dropped = Rc::new(Cell::new(false));
    let guard = DropFlag(dropped.clone());
    let join = handle.spawn(async move {
        let _keep = guard;
        7
    });
    assert!(dropped.get(), "the refused future is dropped at once");
    assert!(join.is_finished());
    assert_eq!(handle.live_tasks(), 0);
    let mut sim = Sim::new(SimConfig::seeded(6));
    let outcome = sim.block_on(join);
    assert_eq!(outcome, RunOutcome::Completed(Err(JoinError::Aborted)));
}

struct DropFlag(Rc<Cell<bool>>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.set(true);
    }
}

/// Spawns `inner` from its destructor.
struct SpawnOnDrop {
    handle: leasesim_rt::Handle,
    inner_dropped: Rc<Cell<bool>>,
}

impl Drop for SpawnOnDrop {
    fn drop(&mut self) {
        let guard = DropFlag(self.inner_dropped.clone());
        // The late task holds a handle, as real tasks do: kept, it would be a cycle.
        let handle = self.handle.clone();
        self.handle.spawn_detached(
            "late",
            Box::pin(async move {
                let _keep = (guard, handle);
            }),
        );
    }
}

#[test]
fn a_future_spawning_from_its_destructor_during_teardown_leaks_nothing() {
    let sim = Sim::new(SimConfig::seeded(7));
    let handle = sim.handle();
    let inner_dropped = Rc::new(Cell::new(false));
    let spawner = SpawnOnDrop {
        handle: handle.clone(),
        inner_dropped: inner_dropped.clone(),
    };
    let h = handle.clone();
    handle.spawn_detached(
        "parked",
        Box::pin(async move {
            let _keep = spawner;
            h.sleep(1_000).await;
        }),
    );
    drop(sim);
    assert!(
        inner_dropped.get(),
        "the task spawned during teardown was dropped"
    );
    assert_eq!(
        Rc::strong_count(&inner_dropped),
        1,
        "nothing holds the late future"
    );
}

#[test]
fn wakers_refuse_every_foreign_thread_even_after_their_owner_exits() {
    for _ in 0..20 {
        // Make a waker on a thread that then exits; its thread-local storage can be reused.
        let stash: Arc<Mutex<Option<std::task::Waker>>> = Arc::default();
        let keep = stash.clone();
        std::thread::spawn(move || {
            let mut sim = Sim::new(SimConfig::seeded(8));
            let waker = sim
                .block_on(std::future::poll_fn(|cx| {
                    std::task::Poll::Ready(cx.waker().clone())
                }))
                .expect_completed();
            *keep.lock().unwrap() = Some(waker);
        })
        .join()
        .unwrap();
        let waker = stash.lock().unwrap().take().unwrap();
        let outcome = std::thread::spawn(move || {
            let woke = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                waker.wake_by_ref();
            }));
            std::mem::forget(waker);
            woke.is_err()
        })
        .join()
        .unwrap();
        assert!(
            outcome,
            "a waker was woken on a thread that does not own it"
        );
    }
}

#[test]
fn captured_panics_carry_their_location_and_stay_quiet() {
    leasesim_rt::capture_panics();
    let was_quiet = leasesim_rt::set_quiet(true);
    let mut sim = Sim::new(SimConfig::seeded(9));
    let handle = sim.handle();
    let bad = handle.spawn_named("bad", async { panic!("worker bug") });
    let outcome = sim.block_on(bad);
    leasesim_rt::set_quiet(was_quiet);
    let RunOutcome::Panic {
        message, location, ..
    } = outcome
    else {
        panic!("expected a panic verdict, got {outcome:?}");
    };
    assert_eq!(message, "worker bug");
    let location = location.expect("the hook captured the location");
    assert!(
        location.starts_with("crates/rt/tests/stuck.rs:"),
        "{location}"
    );
}
