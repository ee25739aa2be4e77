//! Executor micro-workloads, shared by `cargo bench --bench runtime` and the executor section
//! of `cargo bench --bench compare` (included there by path), so both report the same thing.
//!
//! Each function performs `polls` polls or `fires` timer fires (`POLLS` and `TIMERS` in a
//! full measurement, fewer in a quick one); the caller times it.
#![allow(dead_code)]

use std::time::Duration;

use leasesim_rt::{Sim, SimConfig, Strategy};

pub const POLLS: u64 = 2_000_000;
pub const TIMERS: u64 = 1_000_000;

/// One task yielding `polls` times under `strategy`.
pub fn leasesim_polls(strategy: Strategy, polls: u64) {
    // Every yield is at one virtual instant: a run would stop this as a spin; the benchmark
    // measures the polls themselves.
    let config = SimConfig {
        max_polls_per_instant: u32::MAX,
        ..SimConfig::seeded(1)
            .with_strategy(strategy)
            .with_recording(false)
    };
    let mut sim = Sim::new(config);
    let handle = sim.handle();
    let h = handle.clone();
    let task = handle.spawn(async move {
        for _ in 0..polls {
            h.yield_now().await;
        }
    });
    sim.block_on(task)
        .expect_completed()
        .expect("task completes");
}

/// One task sleeping 1 ms, `fires` times.
pub fn leasesim_timers(fires: u64) {
    let mut sim = Sim::new(SimConfig::seeded(1).with_recording(false));
    let handle = sim.handle();
    let h = handle.clone();
    let task = handle.spawn(async move {
        for _ in 0..fires {
            h.sleep(1).await;
        }
    });
    sim.block_on(task)
        .expect_completed()
        .expect("task completes");
}

/// Four tasks yielding in turn under the random strategy, `polls` in all: each step draws
/// from ChaCha.
pub fn leasesim_contended_polls(polls: u64) {
    let config = SimConfig {
        max_polls_per_instant: u32::MAX,
        ..SimConfig::seeded(1).with_recording(false)
    };
    let mut sim = Sim::new(config);
    let handle = sim.handle();
    for _ in 0..4 {
        let h = handle.clone();
        handle.spawn(async move {
            for _ in 0..polls / 4 {
                h.yield_now().await;
            }
        });
    }
    sim.run_until_quiescent().expect_completed();
}

/// tokio's current_thread runtime in paused time.
pub fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("tokio runtime builds")
}

/// One tokio task yielding `polls` times.
pub fn tokio_polls(polls: u64) {
    tokio_runtime().block_on(async move {
        tokio::spawn(async move {
            for _ in 0..polls {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("task completes");
    });
}

/// One tokio task sleeping 1 ms, `fires` times, in paused time.
pub fn tokio_timers(fires: u64) {
    tokio_runtime().block_on(async move {
        tokio::spawn(async move {
            for _ in 0..fires {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await
        .expect("task completes");
    });
}
