//! The executor figures of the page: the micro-workloads of `crates/rt/benches/micro` on
//! leasesim and on tokio, paired block by block.
//!
//! Terminology:
//! - *block*: one run of the workload's operations (`ops`) on leasesim, then the same on tokio,
//!   each timed in this thread's CPU time. A warm-up run of each precedes the blocks.

use leasesim_rt::Strategy;

use super::common::Stopwatch;
use super::micro;
use super::page::{self, Estimate, ExecutorFigure};

/// How much the executor figures run.
#[derive(Clone, Copy, Debug)]
pub struct Size {
    pub blocks: usize,
    pub polls: u64,
    pub fires: u64,
}

/// CPU seconds of one call of `run`.
fn cpu_s(run: &mut impl FnMut()) -> f64 {
    let watch = Stopwatch::start();
    run();
    watch.elapsed().cpu_s
}

/// `ours` and `theirs` (`ops` operations each), paired over `blocks` blocks.
fn paired(
    operation: &str,
    ops: u64,
    blocks: usize,
    target: f64,
    mut ours: impl FnMut(),
    mut theirs: impl FnMut(),
) -> ExecutorFigure {
    ours(); // warm up caches and allocator
    theirs();
    let pairs: Vec<(f64, f64)> = (0..blocks)
        .map(|_| {
            let leasesim_s = cpu_s(&mut ours);
            let tokio_s = cpu_s(&mut theirs);
            (tokio_s, leasesim_s)
        })
        .collect();
    let per_op = |total_s: f64| total_s * 1e9 / (ops as f64 * blocks as f64);
    ExecutorFigure {
        operation: operation.to_string(),
        ops_per_block: ops,
        leasesim_ns: per_op(pairs.iter().map(|p| p.1).sum()),
        tokio_ns: per_op(pairs.iter().map(|p| p.0).sum()),
        ratio: Estimate::of_pairs(&pairs).expect("at least one block"),
        target,
    }
}

/// A poll of one yielding task and a timer fire of one sleeping task, on both runtimes.
pub fn measure(size: Size) -> Vec<ExecutorFigure> {
    let Size {
        blocks,
        polls,
        fires,
    } = size;
    vec![
        paired(
            "poll, 1 task yielding",
            polls,
            blocks,
            page::POLL_TARGET,
            || micro::leasesim_polls(Strategy::Random, polls),
            || micro::tokio_polls(polls),
        ),
        paired(
            "timer fire, 1 task sleeping 1 ms",
            fires,
            blocks,
            page::TIMER_TARGET,
            || micro::leasesim_timers(fires),
            || micro::tokio_timers(fires),
        ),
    ]
}
