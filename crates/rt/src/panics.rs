//! Quiet panic capture for campaigns.
//!
//! Terminology:
//! - *capture*: a process-wide panic hook, installed once by [`capture_panics`], that records
//!   the `file:line` of every panic on the panicking thread, so a run's
//!   [`crate::RunOutcome::Panic`] can name where the worker panicked.
//! - *quiet*: a per-thread switch ([`set_quiet`]). On a quiet thread the hook prints nothing:
//!   a campaign of thousands of failing seeds reports each panic in one line of its own, not
//!   with Rust's default message and backtrace. Elsewhere the previous hook runs as before, so
//!   `replay` shows the full panic and, with `RUST_BACKTRACE=1`, its backtrace.
//!
//! Neither switch can change a run: they only decide what is printed and remembered.

use std::cell::{Cell, RefCell};
use std::sync::Once;

thread_local! {
    static QUIET: Cell<bool> = const { Cell::new(false) };
    static LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

static INSTALL: Once = Once::new();

/// Installs the capturing hook (once per process; later calls do nothing).
pub fn capture_panics() {
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let location = info
                .location()
                .map(|at| format!("{}:{}", at.file(), at.line()));
            LOCATION.with(|slot| *slot.borrow_mut() = location);
            if !QUIET.get() {
                previous(info);
            }
        }));
    });
}

/// Makes panics on this thread quiet (or loud again); returns the previous setting.
pub fn set_quiet(quiet: bool) -> bool {
    QUIET.replace(quiet)
}

/// The location of the latest panic captured on this thread, taken out.
pub(crate) fn take_location() -> Option<String> {
    LOCATION.with(|slot| slot.borrow_mut().take())
}
