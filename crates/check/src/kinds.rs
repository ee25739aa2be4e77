//! Which events a checker reads.
//!
//! Terminology:
//! - *worker side*: what a worker does and sees, plus the run's structure: terms, calls,
//!   answers, stops, restarts, phases and the backlog check. Every checker reads these.
//! - *service side*: what the lease service and the store did with a request (`Applied`,
//!   `Rejected`): only the checkers of applied effects read these.
//! - Everything else (clock reads, timers, faults) is read only by the checkers that name it.

use leasesim_events::EventKind;

/// Terms, calls, answers, stops, restarts, phases, backlog.
pub(crate) fn worker_side(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Phase(_)
            | EventKind::TermStarted { .. }
            | EventKind::TermEnded { .. }
            | EventKind::Call { .. }
            | EventKind::Answered { .. }
            | EventKind::StopCalled
            | EventKind::StopResolved
            | EventKind::Restarted
            | EventKind::Backlog { .. }
    )
}

/// The service acting on a request.
pub(crate) fn service_side(kind: &EventKind) -> bool {
    matches!(kind, EventKind::Applied { .. } | EventKind::Rejected { .. })
}
