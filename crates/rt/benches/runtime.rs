//! Executor micro-benchmarks, side by side with tokio's current_thread runtime in paused time.
//!
//! `cargo bench --bench runtime` prints a table and ends with two lines scripts parse:
//! `poll ns: leasesim=X tokio=Y ratio=R` and `timer ns: leasesim=X tokio=Y ratio=R`
//! (R = tokio / leasesim: how many times faster leasesim is).
//!
//! Each figure is the median of several repetitions of N operations; the wall clock is read
//! only here, around whole runs, never inside a simulation.
#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    clippy::print_stdout
)]

use std::hint::black_box;
use std::time::Instant;

use leasesim_rt::Strategy;

mod micro;

use micro::{
    POLLS, TIMERS, leasesim_contended_polls, leasesim_polls, leasesim_timers, tokio_polls,
    tokio_timers,
};

const REPEATS: usize = 7;

/// Median nanoseconds per operation of `run`, which performs `ops` operations.
fn median_ns(ops: u64, mut run: impl FnMut()) -> f64 {
    run(); // warm up caches and allocator
    let mut samples: Vec<f64> = (0..REPEATS)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed().as_nanos() as f64 / ops as f64
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[REPEATS / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is accepted and ignored.
    let poll_ours = median_ns(POLLS, || leasesim_polls(Strategy::Random, POLLS));
    let poll_fifo = median_ns(POLLS, || leasesim_polls(Strategy::Fifo, POLLS));
    let poll_contended = median_ns(POLLS, || leasesim_contended_polls(POLLS));
    let poll_tokio = median_ns(POLLS, || tokio_polls(POLLS));
    let timer_ours = median_ns(TIMERS, || leasesim_timers(TIMERS));
    let timer_tokio = median_ns(TIMERS, || tokio_timers(TIMERS));
    black_box((poll_fifo, poll_contended));

    println!("executor micro-benchmarks (median of {REPEATS} runs)");
    println!("  {:<44} {:>9}", "workload", "ns/op");
    println!(
        "  {:<44} {:>9.1}",
        "leasesim poll, 1 task yielding (random)", poll_ours
    );
    println!(
        "  {:<44} {:>9.1}",
        "leasesim poll, 1 task yielding (fifo)", poll_fifo
    );
    println!(
        "  {:<44} {:>9.1}",
        "leasesim poll, 4 tasks yielding (random)", poll_contended
    );
    println!(
        "  {:<44} {:>9.1}",
        "tokio paused poll, 1 task yielding", poll_tokio
    );
    println!(
        "  {:<44} {:>9.1}",
        "leasesim timer fire, 1 task sleeping 1 ms", timer_ours
    );
    println!(
        "  {:<44} {:>9.1}",
        "tokio paused timer fire, 1 task sleeping", timer_tokio
    );
    println!(
        "poll ns: leasesim={poll_ours:.1} tokio={poll_tokio:.1} ratio={:.2}",
        poll_tokio / poll_ours
    );
    println!(
        "timer ns: leasesim={timer_ours:.1} tokio={timer_tokio:.1} ratio={:.2}",
        timer_tokio / timer_ours
    );
}
