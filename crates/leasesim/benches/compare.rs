//! The same world and the same worker core on two runtimes: leasesim's deterministic executor
//! and tokio's current_thread runtime in paused time.
//!
//! `cargo bench -p leasesim --bench compare` prints, per scenario, seeds per second of each
//! driver with a sanity check of the tokio driver (events per seed of the same order as
//! leasesim's, every run reaching `Phase(End)`, failing seeds listed), then the executor
//! micro-benchmarks (the method of `crates/rt/benches/runtime.rs`), and ends with one line per
//! scenario that scripts parse:
//!
//! `seeds/s SCENARIO: leasesim=A tokio=B ratio=R` (R = A / B, the "checked" mode; B is the
//! faster of the two tokio drivers: one runtime shared by all seeds, or one per seed)
//!
//! Equal work on both sides, in two modes (the drivers and the measurement are
//! `common/versus.rs`):
//! - *checked* (the figure of the last lines): every event is stamped (sequence number,
//!   virtual time), stable-hashed into a trace hash, and fed to the checkers of every
//!   invariant the scenario does not expect to break (one `CheckerSet`), to one set per
//!   expected invariant, and to the coverage; the checked set's `finish` runs at the end. The
//!   leasesim side is `leasesim::runner::run` (`keep_events = false`,
//!   `record_choices = false`), exactly what `leasesim fuzz` runs per seed; the tokio side's
//!   `Env::emit` feeds the same `leasesim::runner::Observers`, and both build the world with
//!   `leasesim_sim::world_on`.
//! - *counted*: events are only stamped, hashed and counted, no checker: leasesim is
//!   `leasesim_sim::simulate` without an observer. This isolates runtime + world + worker.
//!
//! Both sides draw every latency and fault from a `ChoiceSource` seeded with the same seed; the
//! traces still differ (the runtimes interleave ready tasks differently, and only leasesim
//! draws scheduling choices), so only their sizes are compared.
//!
//! Figures are seeds per second of this thread's CPU time (the wall clock is shown too; on a
//! loaded machine it is the noisier one). Both drivers run the same blocks of seeds, in
//! alternation, so a change of machine load hits both alike. `LEASESIM_BENCH_SECS`
//! (default 2.5) sets the CPU seconds the leasesim side must reach per scenario and mode.
// Wall clock and CPU clock are read only around whole batches of runs, never inside a run.
#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    clippy::print_stdout
)]

mod common;
// The executor micro-workloads of `crates/rt/benches/runtime.rs`, shared so both report the
// same measurement.
#[path = "../../rt/benches/micro/mod.rs"]
mod micro;

use leasesim_rt::Strategy;

use common::versus::{self, LEASESIM, Mode, ScenarioFigures, best_tokio};
use common::{Budget, Stopwatch, median};
use micro::{POLLS, TIMERS};

/// Leasesim's checked rate over the best tokio driver's, block by block: (median, lowest,
/// highest, blocks).
fn block_ratios(figures: &ScenarioFigures) -> (f64, f64, f64, usize) {
    let mut ratios: Vec<f64> = versus::paired_blocks(figures, Mode::Checked)
        .iter()
        .map(|(tokio_s, leasesim_s)| tokio_s / leasesim_s)
        .collect();
    let lowest = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let highest = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (median(&mut ratios), lowest, highest, ratios.len())
}

fn print_scenario_table(all: &[ScenarioFigures]) {
    let paired: Vec<(f64, f64, f64, usize)> = all.iter().map(block_ratios).collect();
    println!(
        "seeds per second, single thread, same seeds on both drivers (CPU time of this thread)"
    );
    println!();
    println!(
        "| scenario | mode | driver | seeds | seeds/s | median block | seeds/s (wall) | events/seed | µs/event | reached End | failing |"
    );
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for figures in all {
        for (driver, mode, totals) in &figures.rows {
            let seeds = totals.seeds as f64;
            let failing = totals.failing();
            println!(
                "| {} | {} | {driver} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.3} | {} | {failing} |",
                figures.name,
                format!("{mode:?}").to_lowercase(),
                totals.seeds,
                totals.rate(),
                median(&mut totals.block_rates()),
                seeds / totals.time.wall_s,
                totals.events as f64 / seeds,
                totals.time.cpu_s * 1e6 / totals.events as f64,
                totals
                    .reached_end
                    .map_or_else(|| "-".to_string(), |n| format!("{n}/{}", totals.seeds)),
            );
        }
    }
    println!();
    for (figures, (median_ratio, lowest, highest, blocks)) in all.iter().zip(paired) {
        let checked = figures.rate(LEASESIM, Mode::Checked) / best_tokio(figures, Mode::Checked).0;
        let counted = figures.rate(LEASESIM, Mode::Counted) / best_tokio(figures, Mode::Counted).0;
        let steps = figures
            .rows
            .iter()
            .find(|(l, m, _)| *l == LEASESIM && *m == Mode::Checked)
            .map_or(0.0, |(_, _, t)| t.steps as f64 / t.seeds as f64);
        // Time per seed: 1/rate; the checkers' share is what the counted mode does not spend.
        let check_share =
            1.0 - figures.rate(LEASESIM, Mode::Checked) / figures.rate(LEASESIM, Mode::Counted);
        println!(
            "{}: ratio checked {checked:.2}, counted (no checkers) {counted:.2} (against the faster tokio driver: {}); leasesim {steps:.0} polls/seed; checkers+coverage = {:.0}% of a leasesim checked seed",
            figures.name,
            best_tokio(figures, Mode::Checked).1,
            check_share * 100.0,
        );
        println!(
            "{}: checked ratio block by block: median {median_ratio:.2}, lowest {lowest:.2}, highest {highest:.2} ({blocks} blocks)",
            figures.name,
        );
        for (driver, mode, totals) in &figures.rows {
            for (label, seeds) in &totals.failures {
                let shown: Vec<String> = seeds.iter().take(8).map(u64::to_string).collect();
                println!(
                    "  failing on {driver} ({mode:?}): {label} x{} (seeds {}{})",
                    seeds.len(),
                    shown.join(", "),
                    if seeds.len() > 8 { ", ..." } else { "" }
                );
            }
        }
    }
    println!();
}

// ---------------------------------------------------------------------------------------------
// Executor micro-benchmarks (the method of crates/rt/benches/runtime.rs)
// ---------------------------------------------------------------------------------------------

const REPEATS: usize = 7;

/// Median nanoseconds per operation of `run` (wall, CPU), which performs `ops` operations.
fn median_ns(ops: u64, mut run: impl FnMut()) -> (f64, f64) {
    run(); // warm up caches and allocator
    let mut wall = Vec::with_capacity(REPEATS);
    let mut cpu = Vec::with_capacity(REPEATS);
    for _ in 0..REPEATS {
        let watch = Stopwatch::start();
        run();
        let elapsed = watch.elapsed();
        wall.push(elapsed.wall_s * 1e9 / ops as f64);
        cpu.push(elapsed.cpu_s * 1e9 / ops as f64);
    }
    (median(&mut wall), median(&mut cpu))
}

fn micro() {
    let poll_ours = median_ns(POLLS, || micro::leasesim_polls(Strategy::Random, POLLS));
    let poll_tokio = median_ns(POLLS, || micro::tokio_polls(POLLS));
    let timer_ours = median_ns(TIMERS, || micro::leasesim_timers(TIMERS));
    let timer_tokio = median_ns(TIMERS, || micro::tokio_timers(TIMERS));
    println!(
        "executor micro-benchmarks (method of crates/rt/benches/runtime.rs: median of {REPEATS} runs of {POLLS} polls / {TIMERS} timer fires)"
    );
    println!();
    println!("| workload | ns/op (cpu) | ns/op (wall) |");
    println!("|---|---:|---:|");
    for (name, (wall, cpu)) in [
        ("leasesim poll, 1 task yielding (random)", poll_ours),
        ("tokio paused poll, 1 task yielding", poll_tokio),
        ("leasesim timer fire, 1 task sleeping 1 ms", timer_ours),
        ("tokio paused timer fire, 1 task sleeping 1 ms", timer_tokio),
    ] {
        println!("| {name} | {cpu:.1} | {wall:.1} |");
    }
    println!();
    println!(
        "poll ns: leasesim={:.1} tokio={:.1} ratio={:.2}",
        poll_ours.1,
        poll_tokio.1,
        poll_tokio.1 / poll_ours.1
    );
    println!(
        "timer ns: leasesim={:.1} tokio={:.1} ratio={:.2}",
        timer_ours.1,
        timer_tokio.1,
        timer_tokio.1 / timer_ours.1
    );
    println!();
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is accepted and ignored.
    let all = versus::measure_all(Budget::from_env(2.5, 0.3));
    print_scenario_table(&all);
    micro();
    for figures in &all {
        let ours = figures.rate(LEASESIM, Mode::Checked);
        let (theirs, _) = best_tokio(figures, Mode::Checked);
        println!(
            "seeds/s {}: leasesim={ours:.0} tokio={theirs:.0} ratio={:.2}",
            figures.name,
            ours / theirs
        );
    }
}
