//! Which events a checker reads.
//!
//! Terminology:
//! - *worker side*: what a worker does and sees, plus the run's structure: terms, calls,
//!   answers, stops, restarts, phases and the backlog check. Every checker reads these.
//! - *service side*: what the lease service and the store did with a request (`Applied`,
//!   `Rejected`, `RequestLost`): only the checkers of applied effects read these.
//! - Everything else (clock reads, timers, faults, revocations) is read only by the checkers
//!   that name it.
//!
//! Each is a mask of interest bits (`EventKind::bit`), so a checker set asks once per bit.

use leasesim_events::mask;

use crate::events::{EventKind, notes};

/// Terms, calls, answers, stops, restarts, phases, backlog.
pub(crate) fn worker_side(kind: &EventKind) -> bool {
    kind.bit() & (mask::WORKER_SIDE | notes::STRUCTURE) != 0
}

/// A process pause starting (`Paused`) or ending (`Resumed`).
pub(crate) fn process_pause(kind: &EventKind) -> bool {
    kind.bit() & (mask::PAUSED | mask::RESUMED) != 0
}

/// The service acting on a request.
pub(crate) fn service_side(kind: &EventKind) -> bool {
    kind.bit() & mask::SERVICE_SIDE != 0
}

/// Any of these interest bits: for the checkers that read the term flow from the run's
/// shared facts and judge only a few kinds themselves.
pub(crate) fn any_of(kind: &EventKind, bits: u32) -> bool {
    kind.bit() & bits != 0
}
