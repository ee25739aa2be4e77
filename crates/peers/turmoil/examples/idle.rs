//! Turmoil's floor for this workload's shape: a store host and three clients that only sleep
//! 50 s of virtual time, ticked at 1 ms: what a run costs before any worker does anything.
//!
//! `cargo run --release --example idle` prints the CPU seconds per idle run (the process's,
//! as the measurement counts them).

use std::time::Duration;

use peers_common::measure::cpu_seconds;

fn main() {
    let runs = 10;
    let start = cpu_seconds();
    for seed in 0..runs {
        let mut sim = turmoil::Builder::new()
            .rng_seed(seed)
            .tick_duration(Duration::from_millis(1))
            .simulation_duration(Duration::from_secs(120))
            .build();
        sim.host("store", || async {
            std::future::pending::<()>().await;
            Ok(())
        });
        for client in ["r1", "r2", "r3"] {
            sim.client(client, async {
                tokio::time::sleep(Duration::from_secs(50)).await;
                Ok(())
            });
        }
        sim.run().expect("an idle simulation");
    }
    let per_run = (cpu_seconds() - start) / runs as f64;
    println!("turmoil idle run (4 hosts, 50 s at 1 ms ticks): {per_run:.3} CPU s per run");
}
