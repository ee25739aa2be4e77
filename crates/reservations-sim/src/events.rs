//! The reservation system's vocabulary: what its calls carry, what the store did, what a
//! worker received, and the system's own notes (agents, runs, kills, metrics).
//!
//! Terminology:
//! - *reservation id*: numbered by the agents from 1 as they place holds; traces and sentences
//!   write reservation 7 as `h7` (`#N` is a call).
//! - *id list*: the reservations of one claim answer, at most [`MAX_BATCH`] (events are small
//!   `Copy` values; a scenario's batch size is bounded by it).
//! - *now argument*: `None` lets the store decide eligibility by its own clock; `Some(t)` is
//!   an instant the worker passed (its own clock), which the store then trusts.
//! - *primitive*: a store operation the correct worker never calls (an update by id alone, a
//!   read of due ids, a plain claim write, a release without a token); defective workers and
//!   user workers may. Each travels as the operation it stands in for (`expire_by_id` as an
//!   `expire`, `read_due` and `write_claim` as a `claim`, `release_any` as a `release`), so
//!   latencies, faults and stops treat both alike.
//! - *run*: one call of the worker's `run()` (it polls until stopped), between the notes
//!   `RunStarted` and `RunEnded`; a kill ends it without `RunEnded`.

use std::fmt;

use leasesim_events::{NetFailure, OpSet, Vocabulary};
use leasesim_invariants::{ConstructionFinding, ConstructionNotes};
use serde::Serialize;
use serde::ser::SerializeSeq;

pub use leasesim_events::{ClockMs, EPOCH_MS, Phase, ReplicaId, Stamped};

/// The most reservations one claim answer carries (and the largest batch a scenario may set).
pub const MAX_BATCH: usize = 8;

/// Up to [`MAX_BATCH`] reservation ids, in the order the store answered them.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct IdList {
    len: u8,
    ids: [u32; MAX_BATCH],
}

impl IdList {
    /// The list of `ids`; panics beyond [`MAX_BATCH`].
    pub fn of(ids: &[u32]) -> IdList {
        assert!(ids.len() <= MAX_BATCH, "at most {MAX_BATCH} ids per list");
        let mut list = IdList::default();
        list.ids[..ids.len()].copy_from_slice(ids);
        list.len = ids.len() as u8;
        // invariant: the list holds exactly the ids given, in order.
        debug_assert_eq!(list.as_slice(), ids);
        list
    }

    pub fn as_slice(&self) -> &[u32] {
        &self.ids[..usize::from(self.len)]
    }

    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn contains(&self, id: u32) -> bool {
        self.as_slice().contains(&id)
    }
}

impl fmt::Debug for IdList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl fmt::Display for IdList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<String> = self.as_slice().iter().map(|id| format!("h{id}")).collect();
        write!(f, "[{}]", ids.join(" "))
    }
}

impl Serialize for IdList {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.len()))?;
        for id in self.as_slice() {
            seq.serialize_element(id)?;
        }
        seq.end()
    }
}

/// The four store operations that cross the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Claim,
    Expire,
    Release,
    DeadLetter,
}

impl OpSet for Op {
    const ALL: &'static [Op] = &[Op::Claim, Op::Expire, Op::Release, Op::DeadLetter];

    /// Its name in traces and its scenario key: `claim` covers `claim_expired` (and the
    /// primitives `read_due`, `write_claim`), `expire` covers `expire_if_held` (and
    /// `expire_by_id`), `release` covers `release_claim` (and `release_any`).
    fn name(self) -> &'static str {
        match self {
            Op::Claim => "claim",
            Op::Expire => "expire",
            Op::Release => "release",
            Op::DeadLetter => "dead_letter",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// A reservation's status, as events carry it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StatusView {
    Held,
    Expired,
    Consumed,
}

impl StatusView {
    pub fn name(self) -> &'static str {
        match self {
            StatusView::Held => "held",
            StatusView::Expired => "expired",
            StatusView::Consumed => "consumed",
        }
    }
}

/// An error class, as events carry it (the core's `ErrorClass`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClassView {
    StateConflict,
    Timeout,
    Connection,
    Invalid,
}

impl ClassView {
    pub fn name(self) -> &'static str {
        match self {
            ClassView::StateConflict => "state-conflict",
            ClassView::Timeout => "timeout",
            ClassView::Connection => "connection",
            ClassView::Invalid => "invalid",
        }
    }
}

/// Why a worker gave up on a reservation, as a dead letter says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasonView {
    NotRetryable(ClassView),
    BudgetExhausted,
}

/// A dead letter as it travels: every field of the worker's record, its replay command read
/// for the reservation it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct LetterView {
    pub id: u32,
    pub reason: ReasonView,
    pub attempts: u32,
    /// On the worker's clock.
    pub first_seen_ms: u64,
    pub last_error: ClassView,
    /// The reservation the replay command names (`--id N`), if it names one.
    pub replay_id: Option<u32>,
}

/// A request as the worker sent it. `now: None` is the store's own clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    Claim {
        limit: u32,
        now: Option<u64>,
        token: u64,
        claim_for_ms: u64,
    },
    Expire {
        id: u32,
        now: Option<u64>,
    },
    Release {
        id: u32,
        token: u64,
    },
    DeadLetter {
        letter: LetterView,
    },
    /// Primitive: `UPDATE ... SET status = 'expired' WHERE id = ?` (no guard).
    ExpireById {
        id: u32,
    },
    /// Primitive: the ids that are held, due at `now` and unclaimed (claims nothing).
    ReadDue {
        limit: u32,
        now: Option<u64>,
    },
    /// Primitive: sets the claim of `id`, whatever claim it has.
    WriteClaim {
        id: u32,
        token: u64,
        claim_for_ms: u64,
    },
    /// Primitive: frees whatever claim `id` has (no token).
    ReleaseAny {
        id: u32,
    },
}

impl Request {
    pub fn op(&self) -> Op {
        match self {
            Request::Claim { .. } | Request::ReadDue { .. } | Request::WriteClaim { .. } => {
                Op::Claim
            }
            Request::Expire { .. } | Request::ExpireById { .. } => Op::Expire,
            Request::Release { .. } | Request::ReleaseAny { .. } => Op::Release,
            Request::DeadLetter { .. } => Op::DeadLetter,
        }
    }

    /// The reservation a single-reservation request is about.
    pub fn id(&self) -> Option<u32> {
        match *self {
            Request::Expire { id, .. }
            | Request::Release { id, .. }
            | Request::ExpireById { id }
            | Request::WriteClaim { id, .. }
            | Request::ReleaseAny { id } => Some(id),
            Request::DeadLetter { letter } => Some(letter.id),
            Request::Claim { .. } | Request::ReadDue { .. } => None,
        }
    }

    /// Is this an attempt at the transition (guarded or not)?
    pub fn is_expire(&self) -> bool {
        matches!(self, Request::Expire { .. } | Request::ExpireById { .. })
    }

    /// Does this start a poll (a claim, or the read of a read-then-write claim)?
    pub fn is_poll(&self) -> bool {
        matches!(self, Request::Claim { .. } | Request::ReadDue { .. })
    }
}

/// What the store did when it applied a request (times on the store's clock).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Applied {
    /// These reservations were claimed with `token` until `until_ms` (maybe none).
    Claimed {
        ids: IdList,
        token: u64,
        until_ms: u64,
    },
    /// The guarded transition moved `id` from held to expired.
    Expired { id: u32, hold_until_ms: u64 },
    /// It was already expired.
    AlreadyDone { id: u32 },
    /// It was consumed, or held but not due at the instant used.
    NotEligible {
        id: u32,
        status: StatusView,
        hold_until_ms: u64,
    },
    /// The reservation's record is malformed: nothing changed (a permanent error).
    Invalid { id: u32 },
    /// No reservation has this id.
    Unknown { id: u32 },
    /// Fault: the store gave up on the statement (a lock wait timed out); nothing applied.
    StoreTimeout,
    /// A release: `freed` when the claim still carried `token`.
    Released { id: u32, token: u64, freed: bool },
    /// A dead letter was recorded and the reservation parked (claims skip it from now on).
    Parked { id: u32 },
    /// Primitive: the status was set to expired by id alone; `was` is what it replaced.
    ExpiredById { id: u32, was: StatusView },
    /// Primitive: these ids were held, due and unclaimed (nothing was claimed).
    DueRead { ids: IdList },
    /// Primitive: the claim of `id` was written; `replaced` the claim token it overwrote.
    ClaimWritten {
        id: u32,
        token: u64,
        until_ms: u64,
        replaced: Option<u64>,
    },
    /// Primitive: whatever claim `id` had was freed (`freed`: its token).
    ReleasedAny { id: u32, freed: Option<u64> },
}

/// Why a call gave the worker an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// The network refused the call before it was applied (a connection error).
    Rejected,
    /// No answer arrived (the reply was lost after the request was applied).
    Timeout,
    /// The store timed the statement out without applying it.
    StoreTimeout,
    /// The store refused the request for good (a malformed record, an unknown id).
    Invalid,
}

/// What the guarded transition answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeView {
    Expired,
    AlreadyDone,
    NotEligible,
}

/// What the worker received.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// The reservations claimed, and when the claim expires (store clock).
    Claimed {
        ids: IdList,
        until_ms: u64,
    },
    Expire(OutcomeView),
    Released,
    Recorded,
    /// Primitive: the due ids read.
    Due(IdList),
    /// Primitive: the claim was written.
    Written,
    Failed(Failure),
}

/// How a `run()` ended, as the driver saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EndView {
    StoppedBeforeStart,
    Stopped,
    /// `run()` refused to start: another run of the worker was active.
    AlreadyRunning,
}

/// A run's report, as the driver recorded it (counts saturate at `u32::MAX`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct ReportView {
    pub end: EndView,
    pub polls: u32,
    pub claim_errors: u32,
    pub claimed: u32,
    pub expired: u32,
    pub already_done: u32,
    pub not_eligible: u32,
    pub retries: u32,
    pub dead_letters: u32,
    pub dead_letter_errors: u32,
    pub release_errors: u32,
    pub abandoned: u32,
    pub max_claim_age_ms: u32,
}

/// The store's metrics, noted as the liveness phase ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct MetricsView {
    /// Claims applied (reservations claimed, over all claims).
    pub claimed: u32,
    /// The longest a claim was held before its release freed it (ms, store clock).
    pub max_claim_age_ms: u64,
    /// Guarded transitions that found the reservation already expired.
    pub duplicate_attempts: u32,
    /// Guarded transitions answered already-done or not-eligible.
    pub state_conflicts: u32,
    /// Reservations parked by a dead letter.
    pub dead_letters: u32,
    /// How long the oldest eligible (held, due, unclaimed, not parked) reservation has been
    /// due, if there is one.
    pub oldest_unclaimed_eligible_ms: Option<u64>,
    /// Held reservations past their deadline (claimed or not, parked excluded).
    pub due_held: u32,
}

/// The reservation system's own events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Note {
    /// An agent placed a hold (world). `malformed`: its record will fail every transition.
    Placed {
        id: u32,
        hold_until_ms: u64,
        malformed: bool,
    },
    /// An agent consumed a held reservation (world).
    Consumed { id: u32, hold_until_ms: u64 },
    /// An agent's consume found it no longer held (world).
    ConsumeRefused { id: u32, status: StatusView },
    /// The driver called `run()` (replica); runs are numbered per replica from 1.
    RunStarted { run: u32 },
    /// `run()` returned (replica).
    RunEnded { run: u32, report: ReportView },
    /// Fault: the replica's process died after a transition answered expired and before the
    /// release; its run is gone (replica).
    Killed,
    /// The store's metrics as the liveness phase ends (world).
    Metrics(MetricsView),
    // Each variant keeps its place (its hash tag): a new one goes last.
    /// Fault: a supervisor took run `run` for hung and called `run()` again while it was
    /// active; `end` is how that second call ended (replica).
    SecondRun { run: u32, end: EndView },
    /// Building this replica's worker, the production factory's construction probe found the
    /// core at odds with the settings rules: it refused valid settings, accepted invalid ones
    /// or refused them without naming a setting, read back something else, or has other
    /// defaults than documented (recorded only then; see `leasesim_invariants::probe`).
    Construction(ConstructionFinding),
}

/// Note classes for checkers' interest masks (see `Vocabulary::note_class`).
pub mod notes {
    use leasesim_events::mask;

    pub const AGENTS: u32 = mask::note(0);
    pub const RUNS: u32 = mask::note(1);
    pub const KILLED: u32 = mask::note(2);
    pub const METRICS: u32 = mask::note(3);
    /// What a construction probe found.
    pub const CONSTRUCTION: u32 = mask::note(4);
}

/// The reservation expiry system (design 002).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Reservations;

impl ConstructionNotes for Reservations {
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

impl Vocabulary for Reservations {
    type Op = Op;
    type Request = Request;
    type Applied = Applied;
    type Answer = Answer;
    type Note = Note;

    fn op(request: &Request) -> Op {
        request.op()
    }

    fn failed(failure: NetFailure) -> Answer {
        Answer::Failed(match failure {
            NetFailure::Rejected => Failure::Rejected,
            NetFailure::Timeout => Failure::Timeout,
        })
    }

    fn note_class(note: &Note) -> u32 {
        match note {
            Note::Placed { .. } | Note::Consumed { .. } | Note::ConsumeRefused { .. } => 0,
            Note::RunStarted { .. } | Note::RunEnded { .. } | Note::SecondRun { .. } => 1,
            Note::Killed => 2,
            Note::Metrics(_) => 3,
            Note::Construction(_) => 4,
        }
    }
}

/// An event of the reservation system.
pub type Event = leasesim_events::Event<Reservations>;
/// What happened, in the reservation system.
pub type EventKind = leasesim_events::EventKind<Reservations>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_list_keeps_its_ids_in_order_and_reads_as_them() {
        let list = IdList::of(&[7, 3, 9]);
        assert_eq!(list.as_slice(), [7, 3, 9]);
        assert!(list.contains(3) && !list.contains(4));
        assert_eq!(list.to_string(), "[h7 h3 h9]");
        assert_eq!(format!("{list:?}"), "[7, 3, 9]");
        assert!(IdList::default().is_empty());
    }

    #[test]
    fn primitives_travel_as_the_operation_they_stand_in_for() {
        assert_eq!(Request::ExpireById { id: 1 }.op(), Op::Expire);
        assert_eq!(
            Request::ReadDue {
                limit: 2,
                now: None
            }
            .op(),
            Op::Claim
        );
        let write = Request::WriteClaim {
            id: 1,
            token: 2,
            claim_for_ms: 3,
        };
        assert_eq!(write.op(), Op::Claim);
        assert_eq!(Request::ReleaseAny { id: 1 }.op(), Op::Release);
        assert_eq!(Op::from_key("dead_letter"), Some(Op::DeadLetter));
    }
}
