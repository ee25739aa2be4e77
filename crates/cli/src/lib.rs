//! The `leasesim` command as a library: fuzz, replay, shrink, detect and list, over a
//! [`Registry`] of systems. The `leasesim` binary runs it over the harness's own systems; a
//! team's binary runs it over its own system too, and gets every subcommand for it:
//!
//! ```no_run
//! # struct MySystem;
//! # fn registry() -> leasesim_cli::Registry { leasesim_cli::Registry::builtin() }
//! fn main() {
//!     // Registry::builtin().with_system::<MySystem>(&[("my-steady", include_str!(...))])
//!     let registry = registry().command("my-leasesim");
//!     std::process::exit(leasesim_cli::main_with(registry));
//! }
//! ```
//!
//! `crates/toy-sim` is such a binary (`toy-leasesim`), for the toy fenced counter.
//!
//! Exit codes: 0 clean, 1 a failure was found (or replayed), 2 bad usage or input (a registry
//! that does not validate is bad input too), 130 or 143 a campaign stopped by SIGINT or
//! SIGTERM (what it found is reported and recorded first).

mod cli;

pub use leasesim::Registry;

/// Runs this process's command line over `registry`; the exit code.
pub fn main_with(registry: Registry) -> i32 {
    restore_default_sigpipe();
    if let Err(err) = registry.install() {
        eprintln!("error: {err}");
        return 2;
    }
    cli::main()
}

/// `leasesim replay ... | head` should end quietly when the reader goes away, as other Unix
/// tools do, instead of panicking on a failed write. Rust ignores SIGPIPE by default.
fn restore_default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any thread exists; SIG_DFL is a valid handler.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
