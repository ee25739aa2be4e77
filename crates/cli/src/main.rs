//! `leasesim`: fuzz, replay and shrink lease-fenced workers in a deterministic simulation.
//!
//! Exit codes: 0 clean, 1 a failure was found (or replayed), 2 bad usage or input, 130/143 a
//! campaign stopped by SIGINT/SIGTERM.

fn main() {
    std::process::exit(leasesim_cli::main_with(leasesim_cli::Registry::builtin()));
}
