//! Which events a checker reads.
//!
//! Terminology:
//! - *worker side*: what a worker does and sees, plus the run's structure: terms, calls,
//!   answers, stops, restarts, phases and the backlog check. Every checker reads these.
//! - *service side*: what the lease service and the store did with a request (`Applied`,
//!   `Rejected`): only the checkers of applied effects read these.
//! - Everything else (clock reads, timers, faults) is read only by the checkers that name it.

use leasesim_events::{Answer, EventKind, OpKind, Phase, Request};

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

/// One event of every kind (variant), to ask each checker once which kinds it reads.
pub(crate) const SAMPLES: [EventKind; 18] = [
    EventKind::Phase(Phase::Safety),
    EventKind::TermStarted { term: 0 },
    EventKind::TermEnded {
        term: 0,
        end: leasesim_events::EndKind::Drained,
        rows: 0,
    },
    EventKind::Call {
        call: 0,
        request: Request::Acquire,
    },
    EventKind::Rejected {
        call: 0,
        op: OpKind::Acquire,
    },
    EventKind::Applied {
        call: 0,
        applied: leasesim_events::Applied::Released,
    },
    EventKind::ReplyLost { call: 0 },
    EventKind::Answered {
        call: 0,
        op: OpKind::Acquire,
        answer: Answer::Released,
    },
    EventKind::ClockRead { now_ms: 0 },
    EventKind::TimerSet { duration_ms: 0 },
    EventKind::Paused { until_ms: 0 },
    EventKind::Resumed,
    EventKind::ClockJumped { by_ms: 0 },
    EventKind::Revoked { token: 0 },
    EventKind::StopCalled,
    EventKind::StopResolved,
    EventKind::Restarted,
    EventKind::Backlog {
        eligible_before_ms: 0,
        remaining: 0,
    },
];

/// The bit of `kind`'s variant: its index in [`SAMPLES`].
pub(crate) fn bit(kind: &EventKind) -> u32 {
    let index = match kind {
        EventKind::Phase(_) => 0,
        EventKind::TermStarted { .. } => 1,
        EventKind::TermEnded { .. } => 2,
        EventKind::Call { .. } => 3,
        EventKind::Rejected { .. } => 4,
        EventKind::Applied { .. } => 5,
        EventKind::ReplyLost { .. } => 6,
        EventKind::Answered { .. } => 7,
        EventKind::ClockRead { .. } => 8,
        EventKind::TimerSet { .. } => 9,
        EventKind::Paused { .. } => 10,
        EventKind::Resumed => 11,
        EventKind::ClockJumped { .. } => 12,
        EventKind::Revoked { .. } => 13,
        EventKind::StopCalled => 14,
        EventKind::StopResolved => 15,
        EventKind::Restarted => 16,
        EventKind::Backlog { .. } => 17,
    };
    1 << index
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_bit_and_sample() {
        let bits: Vec<u32> = SAMPLES.iter().map(bit).collect();
        let expected: Vec<u32> = (0..SAMPLES.len()).map(|index| 1 << index).collect();
        assert_eq!(bits, expected);
    }
}
