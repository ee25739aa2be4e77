//! holder-lock under madsim: the production core (`holder_lock_worker::JobRunner`) and the
//! system's defective workers on three madsim nodes, the store on a fourth, judged by
//! leasesim's own checkers (through `peers-common`'s recorder).
//!
//! Terminology:
//! - *side*: this binary is the madsim side of the peers' side-by-side
//!   (crates/peers/README.md): `measure` prints its figures, `run` one run.
//! - *run*: one madsim `Runtime` seeded with the run's seed ([`world`]).
//! - *faults*: the workload's latency through madsim's network configuration; lost replies,
//!   pauses, store restarts and replica crashes through madsim's own means ([`faults`]).
//!
//! Build and run with `RUSTFLAGS="--cfg madsim"` (madsim's simulator is compiled in only then):
//!
//! ```sh
//! RUSTFLAGS="--cfg madsim" cargo run --release -- run --worker plain-delete --seed 0 --trace
//! RUSTFLAGS="--cfg madsim" cargo run --release -- measure --out madsim.json
//! ```

#[cfg(not(madsim))]
compile_error!(
    "build with RUSTFLAGS=\"--cfg madsim\": madsim's simulator is compiled in only then"
);

mod faults;
mod store;
mod time;
mod world;

use peers_common::cli::{self, Side};
use peers_common::workers;

use faults::Faults;
use world::RunSpec;

/// The madsim version this side is built against (Cargo.lock).
const MADSIM_VERSION: &str = "0.2.34";

/// What madsim cannot express of the workload and its faults, and why.
fn cannot_express() -> Vec<String> {
    let mut items = vec![
        "slow timers (clock drift): madsim has one virtual clock for every node; a node's \
         timers cannot run slower than the store's"
            .to_string(),
    ];
    let workload = peers_common::workload::current();
    if workload.slow_ms.is_some() {
        items.push(
            "per-operation latency: madsim's send_latency is one range for every message; the \
             slow legs are the shared store port's waits on top of madsim's 1-6 ms"
                .into(),
        );
    }
    items.push(
        "replica crash and restart, left out on every side: Handle::kill/restart of a replica \
         node work (--faults crash), but the recorder credits a restarted replica's releases \
         to its old life, failing release-reported for the correct worker, and leasesim's \
         holder-lock has no replica crash to mirror (its stopped replicas restart with a fresh \
         worker after stop() returned)"
            .into(),
    );
    items
}

/// What a user of madsim gets when a run fails.
fn at_failure() -> String {
    "madsim gives the failing seed: a `#[madsim::test]` that panics prints `note: run with \
     MADSIM_TEST_SEED=N environment variable to reproduce this error`, and rerunning that seed \
     replays the same history (MADSIM_TEST_CHECK_DETERMINISM=1 checks it); madsim's own log is \
     `tracing` output. No shrinking, no trace of the system's events, no timeline: the \
     sentence and the event trace here (`run --worker W --seed N --trace`) come from \
     leasesim's recorder and checkers, not from madsim"
        .into()
}

/// The worker's name as the nodes hold it (`'static`: a node's start-up closure keeps it).
fn worker_name(name: &str) -> &'static str {
    std::iter::once("correct")
        .chain(workers::defective())
        .find(|known| *known == name)
        .unwrap_or_else(|| panic!("no worker `{name}`"))
}

fn main() {
    cli::workload_of();
    let args: Vec<String> = std::env::args().collect();
    let faults = args
        .iter()
        .position(|arg| arg == "--faults")
        .and_then(|at| args.get(at + 1))
        .map_or(Ok(Faults::of_workload()), |text| Faults::parse(text))
        .unwrap_or_else(|error| panic!("{error}"));
    let side = Side {
        peer: "madsim",
        version: MADSIM_VERSION,
        cannot_express: cannot_express(),
        at_failure: at_failure(),
    };
    cli::main(side, &mut |worker, seed, keep_trace| {
        let worker = worker_name(worker);
        world::run(RunSpec {
            seed,
            worker,
            faults,
            keep_trace,
        })
    });
}
