//! The holder-lock system's vocabulary: what its calls carry, what the store did, what a
//! worker received, and the system's own notes.
//!
//! Terminology:
//! - *key*: the store knows two: the claim (`job:nightly-rollup`) and, for a worker that keeps
//!   its token beside the claim, the holder record (`job:nightly-rollup:holder`).
//! - *token*: a holder token as a number. A fresh one from the simulated token source has a
//!   random upper half (never zero) and the run's serial number of the draw in its lower
//!   half, so two draws never collide, even when shrinking sets every random part to its
//!   simplest value; it reads `00a3f9:4`. A made-up value (a process id, a constant) has no
//!   upper half and reads as a plain number (`4101`).
//! - *held*: what a key holds: a token, and the replica whose request wrote it (the store
//!   knows its connections; the checkers never rely on it).
//! - *attempt*: one `run()` of a worker, between the notes `AttemptStarted` and
//!   `AttemptEnded`; its *job* runs between `JobStarted` and `JobFinished` or `JobFailed`, or
//!   until the worker drops it (then its steps simply stop).
//! - *effect*: one finished step of a job (`JobStep`): what a job does to the world.
//! - *forgetting*: the volatile store losing a key without its holder's release
//!   ([`Forgetting`]): an eviction under memory pressure, a failover to a replica that lacks
//!   the key's last write, a restart without persistence. Each is a world note (`Forgot`) at
//!   its instant, with its cause.
//! - *slow timer*: a replica whose clock drifts below true speed: its timers (the worker's
//!   trust, its renewal interval) run slower than the store's clock, which decides a claim's
//!   lifetime (`SlowTimer`, noted once at the start of the run).

use std::fmt;

use leasesim_events::{NetFailure, OpSet, ReplicaId, Vocabulary};
use leasesim_invariants::{ConstructionFinding, ConstructionNotes};
use serde::Serialize;

pub use leasesim_events::{ClockMs, EPOCH_MS, Phase, Stamped};

/// The claim's key, as every worker of this system is configured.
pub const CLAIM_KEY: &str = "job:nightly-rollup";
/// The key a worker that keeps its token beside the claim writes it to.
pub const HOLDER_KEY: &str = "job:nightly-rollup:holder";

/// A key of the simulated store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Key {
    /// `job:nightly-rollup`.
    Claim,
    /// `job:nightly-rollup:holder`.
    Holder,
}

impl Key {
    pub const ALL: [Key; 2] = [Key::Claim, Key::Holder];

    pub fn name(self) -> &'static str {
        match self {
            Key::Claim => CLAIM_KEY,
            Key::Holder => HOLDER_KEY,
        }
    }

    /// The key called `name`, if the store has it.
    pub fn from_name(name: &str) -> Option<Key> {
        Key::ALL.into_iter().find(|key| key.name() == name)
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// A token as traces show it (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenText(pub u64);

impl fmt::Display for TokenText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 >> 32 {
            0 => write!(f, "{}", self.0),
            random => write!(f, "{random:06x}:{}", self.0 & 0xFFFF_FFFF),
        }
    }
}

/// What a key holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Held {
    pub token: u64,
    /// The replica whose request wrote it.
    pub by: ReplicaId,
}

/// The store's operations (latencies and network faults are per operation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Create,
    Renew,
    DeleteIfHolder,
    Get,
    Delete,
    Set,
}

impl OpSet for Op {
    const ALL: &'static [Op] = &[
        Op::Create,
        Op::Renew,
        Op::DeleteIfHolder,
        Op::Get,
        Op::Delete,
        Op::Set,
    ];

    fn name(self) -> &'static str {
        match self {
            Op::Create => "create",
            Op::Renew => "renew",
            Op::DeleteIfHolder => "delete_if_holder",
            Op::Get => "get",
            Op::Delete => "delete",
            Op::Set => "set",
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
    /// Write `token` if the key is absent.
    Create {
        key: Key,
        token: u64,
        lifetime_ms: u64,
    },
    /// Start the lifetime again if the key holds `token`.
    Renew {
        key: Key,
        token: u64,
        lifetime_ms: u64,
    },
    /// Delete the key if it holds `token`, in one step.
    DeleteIfHolder {
        key: Key,
        token: u64,
    },
    Get {
        key: Key,
    },
    /// Delete whatever the key holds.
    Delete {
        key: Key,
    },
    /// Write `token` whatever the key holds.
    Set {
        key: Key,
        token: u64,
        lifetime_ms: u64,
    },
}

impl Request {
    pub fn op(&self) -> Op {
        match self {
            Request::Create { .. } => Op::Create,
            Request::Renew { .. } => Op::Renew,
            Request::DeleteIfHolder { .. } => Op::DeleteIfHolder,
            Request::Get { .. } => Op::Get,
            Request::Delete { .. } => Op::Delete,
            Request::Set { .. } => Op::Set,
        }
    }

    pub fn key(&self) -> Key {
        match *self {
            Request::Create { key, .. }
            | Request::Renew { key, .. }
            | Request::DeleteIfHolder { key, .. }
            | Request::Get { key }
            | Request::Delete { key }
            | Request::Set { key, .. } => key,
        }
    }
}

/// What the store did when it applied a request. Expiry times are on the store's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Applied {
    /// The key was absent; it holds `token` now. `took_over`: what the key held before,
    /// whose lifetime had run out.
    Created {
        key: Key,
        token: u64,
        expires_at_ms: u64,
        took_over: Option<Held>,
    },
    /// The key holds a live entry; nothing was written.
    Exists { key: Key, held: Held },
    /// The key held `token`; its lifetime starts again.
    Renewed {
        key: Key,
        token: u64,
        expires_at_ms: u64,
    },
    /// Not renewed: the key holds another token (`Some`), or nothing live (`None`).
    RenewRefused { key: Key, held: Option<Held> },
    /// The live entry `removed` is gone.
    Deleted { key: Key, removed: Held },
    /// Nothing deleted: the key holds another token (`Some`), or nothing live (`None`).
    NotDeleted { key: Key, held: Option<Held> },
    /// The store cannot compare and delete in one step.
    Unsupported { key: Key },
    /// A read: what the key holds, if anything live.
    Read { key: Key, held: Option<Held> },
    /// The key holds `token` now; `replaced`: the live entry it overwrote.
    Written {
        key: Key,
        token: u64,
        expires_at_ms: u64,
        replaced: Option<Held>,
    },
}

/// What the worker received.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// `create`: the claim is yours.
    Created,
    /// `create`: another claim is live.
    Exists,
    Renewed,
    Deleted,
    /// `renew`, `delete_if_holder`: the key holds another token.
    NotHolder,
    /// The key holds nothing live.
    Absent,
    /// `get`: the token the key holds.
    Value(u64),
    /// `set`.
    Written,
    /// The store has no compare-and-delete.
    Unsupported,
    /// The network failed the call (refused, or the reply was lost).
    Failed(NetFailure),
}

/// How an attempt ended, as its report says (see `holder_lock_worker::AttemptEnd`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EndKind {
    StoppedBeforeStart,
    NotHolder,
    CreateFailed,
    TooLate,
    JobDone,
    JobFailed,
    /// A renewal found the claim gone.
    LostRefused,
    /// A renewal failed.
    LostFailed,
    /// The trusted time passed before a renewal was answered.
    LostNotRenewed,
    Stopped,
    /// `run()` refused: another attempt of the worker was running.
    AlreadyRunning,
}

/// What an attempt did with its claim, as its report says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReleaseKind {
    /// No release (the create did not win).
    None,
    Deleted,
    LeftToExpire,
    /// The claim was gone: another token held the key.
    GoneForeign,
    /// The claim was gone: the key was absent.
    GoneAbsent,
    Failed,
}

impl ReleaseKind {
    /// Did the release find the claim gone (the signal a worker must report)?
    pub fn is_signal(self) -> bool {
        matches!(self, ReleaseKind::GoneForeign | ReleaseKind::GoneAbsent)
    }
}

/// Why the store lost what a key held, without its holder's release.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Forgetting {
    /// Memory pressure: the store evicted the claim key.
    Eviction,
    /// A failover to a replica that lacks the key's last write: the key holds what it held
    /// before that write (a claim created last is gone, a renewal undone shortens its claim's
    /// lifetime back, a release undone brings its claim back until its old lifetime ends).
    Failover,
    /// A restart without persistence: every key is gone.
    Restart,
}

impl Forgetting {
    pub const ALL: [Forgetting; 3] = [
        Forgetting::Eviction,
        Forgetting::Failover,
        Forgetting::Restart,
    ];

    /// Its key inside `[faults]` (`[faults.evict]`, ...).
    pub fn key(self) -> &'static str {
        match self {
            Forgetting::Eviction => "evict",
            Forgetting::Failover => "failover",
            Forgetting::Restart => "store_restart",
        }
    }

    /// What happened, for traces.
    pub fn describe(self) -> &'static str {
        match self {
            Forgetting::Eviction => "evicted under memory pressure",
            Forgetting::Failover => "failover to a replica without the last write",
            Forgetting::Restart => "store restarted without persistence",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// The holder-lock system's own events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Note {
    /// The driver calls `run()`; attempts are numbered per driver from 1.
    AttemptStarted { attempt: u32 },
    /// `run()` returned this report. `renewals`: renewals answered as granted;
    /// `claims_gone`: the worker's count so far of releases that found the claim gone.
    AttemptEnded {
        attempt: u32,
        end: EndKind,
        release: ReleaseKind,
        claims_gone: u64,
        renewals: u32,
    },
    /// The job starts; it will take `steps` steps, `duration_ms` in all (replica clock).
    JobStarted { duration_ms: u64, steps: u32 },
    /// The job finished a step: an effect.
    JobStep { step: u32 },
    /// The job ran to its end.
    JobFinished { steps: u32 },
    /// The job failed at this step (fault).
    JobFailed { step: u32 },
    /// The store: the entry `held` of `key` reached the end of its lifetime (world note).
    Expired { key: Key, held: Held },
    /// The store forgot `key` (its last write, for a failover) without a release (world
    /// note): `lost` is the live entry it held (`None`: nothing live).
    Forgot {
        key: Key,
        cause: Forgetting,
        lost: Option<Held>,
    },
    /// After a failover's `Forgot`: `key` holds `held` again, until `expires_at_ms` (store
    /// clock), the live entry it held before its last write (world note).
    Reverted {
        key: Key,
        held: Held,
        expires_at_ms: u64,
    },
    /// This replica's timers run slower than the store's clock: `drift_ppm` (below 0) parts
    /// per million of elapsed time (noted at the start of the run).
    SlowTimer { drift_ppm: i64 },
    /// Building this replica's worker, the production factory's construction probe found the
    /// core at odds with the settings rules: it refused valid settings, accepted invalid ones
    /// or refused them without naming a setting, read back something else, or has other
    /// defaults than documented (recorded only then; see `leasesim_invariants::probe`).
    Construction(ConstructionFinding),
}

/// Note classes for checkers' interest masks (see `Vocabulary::note_class`).
pub mod notes {
    use leasesim_events::mask;

    pub const ATTEMPTS: u32 = mask::note(0);
    pub const JOB: u32 = mask::note(1);
    pub const EXPIRED: u32 = mask::note(2);
    /// The store forgetting keys (`Forgot`, `Reverted`).
    pub const FORGOT: u32 = mask::note(3);
    pub const SLOW_TIMER: u32 = mask::note(4);
    /// What a construction probe found.
    pub const CONSTRUCTION: u32 = mask::note(5);
}

/// The holder-lock system (004): a job run under a holder-token claim in a volatile store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HolderLock;

impl ConstructionNotes for HolderLock {
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

impl Vocabulary for HolderLock {
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
            Note::AttemptStarted { .. } | Note::AttemptEnded { .. } => 0,
            Note::JobStarted { .. }
            | Note::JobStep { .. }
            | Note::JobFinished { .. }
            | Note::JobFailed { .. } => 1,
            Note::Expired { .. } => 2,
            Note::Forgot { .. } | Note::Reverted { .. } => 3,
            Note::SlowTimer { .. } => 4,
            Note::Construction(_) => 5,
        }
    }
}

/// An event of the holder-lock system.
pub type Event = leasesim_events::Event<HolderLock>;
/// What happened, in the holder-lock system.
pub type EventKind = leasesim_events::EventKind<HolderLock>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_read_as_random_part_and_serial_or_as_plain_numbers() {
        assert_eq!(TokenText((0xa3f9 << 32) | 4).to_string(), "00a3f9:4");
        assert_eq!(TokenText(4101).to_string(), "4101");
        assert_eq!(Key::from_name(HOLDER_KEY), Some(Key::Holder));
        assert_eq!(Key::from_name("other"), None);
    }
}
