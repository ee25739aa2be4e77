//! The work-items system's vocabulary: what its calls carry, what its services did, what a
//! worker received, and its own notes.
//!
//! Terminology:
//! - *item*: a number `0..count`; every item of the cleanup run exists from the start.
//! - *claim*: a grant of an item to one replica, with a *token* from one store-wide counter
//!   (so a token names one claim) and an expiry on the store's clock.
//! - *live claim*: an item's claim while it is unexpired and the item is still claimed.
//! - *pass*: one `run()` of a worker, between the notes `PassStarted` and `PassEnded`.
//! - *unsafe primitive*: `PlainClaim`, `UnguardedApply`, `UnguardedDone`: store writes
//!   without a condition, which only the defective workers use. They share the operation (and
//!   so latency and faults) of their safe counterpart.
//!
//! Calls, applies, answers, pauses and stops travel in the shared envelope
//! (`leasesim_events::EventKind<WorkItems>`); only the payloads below are this system's.

use leasesim_events::{NetFailure, OpSet, Vocabulary};
use leasesim_invariants::{ConstructionFinding, ConstructionNotes};
use serde::Serialize;

pub use leasesim_events::{ClockMs, EPOCH_MS, Phase, ReplicaId, Stamped};

/// The work-items system (design 001): its marker type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WorkItems;

/// An event of the work-items system.
pub type Event = leasesim_events::Event<WorkItems>;
/// What happened, in the work-items system.
pub type EventKind = leasesim_events::EventKind<WorkItems>;

/// The operations that cross the network (latencies and network faults are per operation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Find,
    Claim,
    Renew,
    Apply,
    Done,
    Release,
    Fail,
    Status,
    Provider,
    Lookup,
}

impl OpSet for Op {
    const ALL: &'static [Op] = &[
        Op::Find,
        Op::Claim,
        Op::Renew,
        Op::Apply,
        Op::Done,
        Op::Release,
        Op::Fail,
        Op::Status,
        Op::Provider,
        Op::Lookup,
    ];

    fn name(self) -> &'static str {
        match self {
            Op::Find => "next_claimable",
            Op::Claim => "claim",
            Op::Renew => "renew_if_owner",
            Op::Apply => "apply_if_owner",
            Op::Done => "mark_done_if_owner",
            Op::Release => "release_if_owner",
            Op::Fail => "fail_if_owner",
            Op::Status => "status",
            Op::Provider => "provider_apply",
            Op::Lookup => "provider_lookup",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Op::Find => "find",
            Op::Claim => "claim",
            Op::Renew => "renew",
            Op::Apply => "apply",
            Op::Done => "done",
            Op::Release => "release",
            Op::Fail => "fail",
            Op::Status => "status",
            Op::Provider => "provider",
            Op::Lookup => "lookup",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl Op {
    /// Is a call of this operation a write (a store mutation or a provider apply)?
    pub fn is_write(self) -> bool {
        matches!(
            self,
            Op::Claim | Op::Renew | Op::Apply | Op::Done | Op::Release | Op::Fail | Op::Provider
        )
    }
}

/// An idempotency key: the item's own (`salt` 0), or another one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Key {
    pub item: u32,
    pub salt: u32,
}

/// The error a release or fail records on an item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    Rejected(Op),
    Timeout(Op),
    ProviderRefused,
    Stopped,
}

impl ErrorCode {
    /// The operation a transport failure came from (`None` for the other codes).
    pub fn op(self) -> Option<Op> {
        match self {
            ErrorCode::Rejected(op) | ErrorCode::Timeout(op) => Some(op),
            ErrorCode::ProviderRefused | ErrorCode::Stopped => None,
        }
    }
}

/// A request as the worker sent it. `now_ms` is the worker's clock (informative only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    Find {
        after: Option<u32>,
    },
    Claim {
        item: u32,
        lease_ms: u64,
        now_ms: u64,
    },
    Renew {
        item: u32,
        token: u64,
        lease_ms: u64,
        now_ms: u64,
    },
    Apply {
        item: u32,
        token: u64,
        chunk: u32,
        now_ms: u64,
    },
    Done {
        item: u32,
        token: u64,
        now_ms: u64,
    },
    Release {
        item: u32,
        token: u64,
        error: ErrorCode,
        now_ms: u64,
    },
    Fail {
        item: u32,
        token: u64,
        error: ErrorCode,
        now_ms: u64,
    },
    Status,
    ProviderApply {
        item: u32,
        key: Key,
    },
    Lookup {
        key: Key,
    },
    /// Unsafe: writes the sender as the item's owner, with no condition.
    PlainClaim {
        item: u32,
        lease_ms: u64,
        now_ms: u64,
    },
    /// Unsafe: applies a chunk without the token predicate.
    UnguardedApply {
        item: u32,
        token: u64,
        chunk: u32,
        now_ms: u64,
    },
    /// Unsafe: marks the item done without the token predicate.
    UnguardedDone {
        item: u32,
        token: u64,
        now_ms: u64,
    },
}

impl Request {
    pub fn op(&self) -> Op {
        match self {
            Request::Find { .. } => Op::Find,
            Request::Claim { .. } | Request::PlainClaim { .. } => Op::Claim,
            Request::Renew { .. } => Op::Renew,
            Request::Apply { .. } | Request::UnguardedApply { .. } => Op::Apply,
            Request::Done { .. } | Request::UnguardedDone { .. } => Op::Done,
            Request::Release { .. } => Op::Release,
            Request::Fail { .. } => Op::Fail,
            Request::Status => Op::Status,
            Request::ProviderApply { .. } => Op::Provider,
            Request::Lookup { .. } => Op::Lookup,
        }
    }

    /// The item a request concerns, if one.
    pub fn item(&self) -> Option<u32> {
        match *self {
            Request::Claim { item, .. }
            | Request::Renew { item, .. }
            | Request::Apply { item, .. }
            | Request::Done { item, .. }
            | Request::Release { item, .. }
            | Request::Fail { item, .. }
            | Request::ProviderApply { item, .. }
            | Request::PlainClaim { item, .. }
            | Request::UnguardedApply { item, .. }
            | Request::UnguardedDone { item, .. } => Some(item),
            Request::Lookup { key } => Some(key.item),
            Request::Find { .. } | Request::Status => None,
        }
    }

    /// The fencing token a store write carries, if it carries one.
    pub fn token(&self) -> Option<u64> {
        match *self {
            Request::Renew { token, .. }
            | Request::Apply { token, .. }
            | Request::Done { token, .. }
            | Request::Release { token, .. }
            | Request::Fail { token, .. }
            | Request::UnguardedApply { token, .. }
            | Request::UnguardedDone { token, .. } => Some(token),
            _ => None,
        }
    }
}

/// What an item was before a claim took it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Prior {
    /// Never claimed.
    Fresh,
    /// Given back by the claim with this token.
    Released { token: u64 },
    /// Its claim with this token had expired (a takeover).
    Expired { token: u64 },
    /// A plain write only: the live claim with this token was overwritten.
    Held { token: u64 },
    /// A plain write only: the item was done or failed.
    Closed { token: u64, state: ItemState },
}

/// The state of an item's record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemState {
    Pending,
    Claimed,
    Released,
    Done,
    Failed,
}

/// One item's record, as the tally shows the first item still open.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct ItemView {
    pub state: ItemState,
    /// The last claim's token (0: never claimed).
    pub token: u64,
    pub expires_at_ms: u64,
}

/// The store's count of open, done and failed items.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct StatusView {
    pub open: u32,
    pub done: u32,
    pub failed: u32,
}

/// The end marks a claim can write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mark {
    Done,
    Released,
    Failed,
}

/// What the provider answered an apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderView {
    Applied,
    Duplicate,
    Refused,
}

/// What the provider knows of a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LookupView {
    Applied,
    Refused,
    Unknown,
}

/// What a service did when it applied a request. `live` is the item's live claim token at
/// that instant (`None`: no live claim), so a write's fence can be read off the event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Applied {
    Found {
        item: Option<u32>,
    },
    Claimed {
        item: u32,
        token: u64,
        expires_at_ms: u64,
        attempt: u32,
        chunks: u32,
        prior: Prior,
    },
    /// Claim refused: the claim with this token is live.
    Busy {
        item: u32,
        token: u64,
    },
    /// Claim refused: the item is done or failed.
    Closed {
        item: u32,
        state: ItemState,
    },
    Renewed {
        item: u32,
        token: u64,
        expires_at_ms: u64,
    },
    /// A chunk of the local effect applied (`fresh`: for the first time).
    ChunkApplied {
        item: u32,
        token: u64,
        chunk: u32,
        fresh: bool,
        live: Option<u64>,
    },
    /// An end mark written (`repeat`: the same claim had written it already).
    Marked {
        item: u32,
        token: u64,
        mark: Mark,
        repeat: bool,
        live: Option<u64>,
    },
    /// A fenced write refused: `token` is not the live claim.
    LeaseLost {
        item: u32,
        token: u64,
        live: Option<u64>,
    },
    Status(StatusView),
    ProviderApplied {
        item: u32,
        key: Key,
    },
    /// The key had been applied already.
    ProviderDuplicate {
        item: u32,
        key: Key,
    },
    /// Refused for good (the provider's own fault).
    ProviderRefused {
        item: u32,
        key: Key,
    },
    LookedUp {
        key: Key,
        found: LookupView,
    },
}

/// A granted claim as its answer carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct LeaseView {
    pub item: u32,
    pub token: u64,
    pub expires_at_ms: u64,
    pub attempt: u32,
    pub chunks: u32,
}

/// What the worker received.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Found(Option<u32>),
    Claimed(LeaseView),
    Busy,
    Closed,
    Renewed {
        expires_at_ms: u64,
    },
    /// A chunk: `fresh` when applied now.
    Applied {
        fresh: bool,
    },
    /// A done, release or fail mark written.
    Ok,
    LeaseLost,
    Status(StatusView),
    Provider(ProviderView),
    Lookup(LookupView),
    Failed(NetFailure),
}

/// How a `run()` pass ended, as the driver saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EndKind {
    StoppedBeforeStart,
    Complete,
    Idle,
    Deadline,
    Stopped,
    Unavailable,
    /// `run()` refused: another pass of the worker was active.
    AlreadyRunning,
}

/// What a pass reports: its own claims' outcomes, and the store's status read at its end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct PassCounts {
    pub done: u32,
    pub failed: u32,
    pub released: u32,
    pub lost: u32,
    pub abandoned: u32,
}

/// An item still open as the liveness phase ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct OpenItem {
    pub item: u32,
    pub view: ItemView,
}

/// The system's own events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Note {
    /// The driver calls `run()`; passes are numbered per replica from 1.
    PassStarted { pass: u32 },
    /// `run()` returned.
    PassEnded {
        pass: u32,
        end: EndKind,
        counts: PassCounts,
        status: Option<StatusView>,
    },
    /// As the liveness phase ends: the store's count, and the first item still open.
    Tally {
        status: StatusView,
        first_open: Option<OpenItem>,
    },
    /// Building this replica's worker, the production factory's construction probe found the
    /// core at odds with the settings rules: it refused valid settings, accepted invalid ones
    /// or refused them without naming a setting, read back something else, or has other
    /// defaults than documented (recorded only then; see `leasesim_invariants::probe`).
    Construction(ConstructionFinding),
}

/// Note classes for checkers' interest masks.
pub mod notes {
    use leasesim_events::mask;

    pub const PASS: u32 = mask::note(0);
    pub const TALLY: u32 = mask::note(1);
    /// What a construction probe found.
    pub const CONSTRUCTION: u32 = mask::note(2);
}

impl ConstructionNotes for WorkItems {
    const CONSTRUCTION_NOTES: u32 = notes::CONSTRUCTION;

    fn construction_note(finding: ConstructionFinding) -> Note {
        Note::Construction(finding)
    }

    fn construction_finding(note: &Note) -> Option<ConstructionFinding> {
        match note {
            Note::Construction(finding) => Some(*finding),
            _ => None,
        }
    }
}

impl Vocabulary for WorkItems {
    type Op = Op;
    type Request = Request;
    type Applied = Applied;
    type Answer = Answer;
    type Note = Note;

    fn op(request: &Request) -> Op {
        request.op()
    }

    fn failed(failure: NetFailure) -> Answer {
        Answer::Failed(failure)
    }

    fn note_class(note: &Note) -> u32 {
        match note {
            Note::PassStarted { .. } | Note::PassEnded { .. } => 0,
            Note::Tally { .. } => 1,
            Note::Construction(_) => 2,
        }
    }
}
