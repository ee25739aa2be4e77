//! The wording helpers checker sentences are built with.

pub(crate) use leasesim_invariants::At;

use crate::events::{Answer, EndKind, Failure};

/// How an answer reads in a sentence ("None", "an error (timeout)", "token 9"...).
pub(crate) fn answer_words(answer: &Answer) -> String {
    match answer {
        Answer::Lease(Some(lease)) => format!("token {}", lease.token),
        Answer::Lease(None) => "None".to_owned(),
        Answer::Released => "released".to_owned(),
        Answer::Rows(rows) => format!("{rows} rows"),
        Answer::Failed(failure) => format!("an error ({})", failure_words(*failure)),
    }
}

fn failure_words(failure: Failure) -> &'static str {
    match failure {
        Failure::Rejected => "rejected",
        Failure::Timeout => "timeout",
        Failure::StaleToken => "stale token",
    }
}

/// How a term's end reads in a sentence.
pub(crate) fn end_words(end: EndKind) -> &'static str {
    match end {
        EndKind::StoppedBeforeStart => "stopped before start",
        EndKind::NotLeader => "not leader",
        EndKind::CapReached => "cap reached",
        EndKind::Drained => "drained",
        EndKind::LostByNone => "lost by None",
        EndKind::LostByError => "lost by error",
        EndKind::Stopped => "stopped",
        EndKind::FailedAcquire => "acquire failed",
        EndKind::FailedDelete => "delete failed",
        EndKind::AlreadyRunning => "already running",
    }
}
