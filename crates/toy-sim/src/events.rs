//! The toy's vocabulary: what its calls carry, what its service did, what a worker received,
//! and the toy's own notes.
//!
//! Terminology:
//! - *claim*: the right to bump the counter: a token (strictly increasing) and an expiry on
//!   the service's clock. At most one claim is *live* (not expired, not dropped) at a time.
//! - *bump*: adds one to the counter, under a claim's token.
//! - *round*: one `run()` of a worker, between the notes `RoundStarted` and `RoundEnded`.
//!
//! Calls, applies, answers, pauses and stops travel in the shared envelope
//! (`leasesim_events::EventKind<Toy>`); only the payloads below are the toy's.

use leasesim_events::{NetFailure, OpSet, Vocabulary};
use serde::Serialize;

/// The toy system's marker type: it names the vocabulary, the judgement and the system.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Toy;

/// One event of a toy run.
pub type Event = leasesim_events::Event<Toy>;

/// The two operations that cross the network (latencies and network faults are per op).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Claim,
    Bump,
}

impl OpSet for Op {
    const ALL: &'static [Op] = &[Op::Claim, Op::Bump];

    fn name(self) -> &'static str {
        match self {
            Op::Claim => "claim",
            Op::Bump => "bump",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// A request as the worker sent it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    Claim,
    Bump { token: u64 },
}

/// What the counter service did when it applied a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Applied {
    /// A new claim, expiring at `expires_at_ms` (service clock).
    Granted { token: u64, expires_at_ms: u64 },
    /// Refused: the claim with this token is live.
    Busy { holder_token: u64 },
    /// The counter went up to `count` under `token`.
    Bumped { token: u64, count: u64 },
    /// Refused by the fence: `token` is not the live claim's (`live_token`, if any).
    Fenced { token: u64, live_token: Option<u64> },
}

/// What the worker received.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// The claim is yours, with this token.
    Granted(u64),
    /// Someone else's claim is live.
    Busy,
    /// The counter's new value.
    Bumped(u64),
    /// The fence refused the bump (the service's own error).
    Fenced,
    /// The network failed the call (refused before apply, or the reply was lost).
    Failed(NetFailure),
}

/// How a round ended, as the worker reports it (a real core would have its own report type,
/// mapped to a note by the driver, as `leasesim_retention::driver::end_kind` does).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RoundEnd {
    /// `stop()` came first: no call was sent, or none after it.
    Stopped,
    /// The claim was busy or failed.
    Refused,
    /// The bump was applied.
    Bumped,
    /// The bump was fenced or failed.
    BumpFailed,
}

/// The toy's own events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Note {
    /// The driver calls `run()` (replica note).
    RoundStarted { round: u32 },
    /// `run()` returned (replica note).
    RoundEnded { round: u32, end: RoundEnd },
    /// Fault: the service dropped the live claim (world note).
    ClaimLost { token: u64 },
    /// As the liveness phase ends: the counter's value (world note).
    Tally { count: u64 },
}

/// Note classes (interest bits for checkers): rounds, lost claims, tallies.
pub const ROUND_NOTES: u32 = 0;
pub const CLAIM_NOTES: u32 = 1;
pub const TALLY_NOTES: u32 = 2;

impl Vocabulary for Toy {
    type Op = Op;
    type Request = Request;
    type Applied = Applied;
    type Answer = Answer;
    type Note = Note;

    fn op(request: &Request) -> Op {
        match request {
            Request::Claim => Op::Claim,
            Request::Bump { .. } => Op::Bump,
        }
    }

    fn failed(failure: NetFailure) -> Answer {
        Answer::Failed(failure)
    }

    fn note_class(note: &Note) -> u32 {
        match note {
            Note::RoundStarted { .. } | Note::RoundEnded { .. } => ROUND_NOTES,
            Note::ClaimLost { .. } => CLAIM_NOTES,
            Note::Tally { .. } => TALLY_NOTES,
        }
    }
}
