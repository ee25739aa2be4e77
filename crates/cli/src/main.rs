//! `leasesim`: fuzz, replay and shrink lease-fenced workers in a deterministic simulation.
//!
//! Exit codes: 0 clean, 1 a failure was found (or replayed), 2 bad usage or input.

mod cli;

fn main() {
    restore_default_sigpipe();
    std::process::exit(cli::main());
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
