//! `toy-leasesim`: the `leasesim` command over the built-in systems and the toy, as a team's
//! own binary over its own system.

use leasesim_cli::Registry;

fn main() {
    let registry = Registry::builtin()
        .with_system::<leasesim_toy::Toy>(leasesim_toy::SCENARIOS)
        .command("toy-leasesim");
    std::process::exit(leasesim_cli::main_with(registry));
}
