//! Ctrl-C and SIGTERM during a campaign: the campaign stops taking seeds, and what it found is
//! reported and recorded before the command exits with 128 + the signal's number.
//!
//! Terminology:
//! - *caught signal*: the first SIGINT or SIGTERM after [`catch`]; the handler only records
//!   it (an atomic store is all a signal handler may do safely) and restores the default
//!   action, so a second one ends the process at once.

use std::sync::atomic::{AtomicI32, Ordering};

/// The signal caught, or 0.
static CAUGHT: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signal: libc::c_int) {
    CAUGHT.store(signal, Ordering::SeqCst);
    // SAFETY: signal(2) is async-signal-safe; SIG_DFL is a valid disposition.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
    }
}

/// Records SIGINT and SIGTERM from now on instead of ending the process.
pub fn catch() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: `on_signal` only stores to an atomic and calls signal(2), both
        // async-signal-safe.
        unsafe {
            libc::signal(signal, handler);
        }
    }
}

/// The signal caught since [`catch`], if any.
pub fn caught() -> Option<i32> {
    match CAUGHT.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
}

/// The signal's name, for the message.
pub fn name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}
