//! leasesim-events: the envelope every system's events travel in.
//!
//! What a simulated run records, for every system: the event stream that checkers, traces and
//! timelines read. This crate knows no executor and no system; each system brings its own
//! vocabulary (its requests, what its services applied, its answers and its own notes) by
//! implementing [`Vocabulary`], and this crate wraps it in what every system shares.
//!
//! Terminology:
//! - *replica*: one process running a worker, `r1`..`rN` (stored 0-based).
//! - *call*: one port request a worker sends; it has an id, and its life is
//!   `Call`, then `Rejected`, `RequestLost` or `Applied` (then perhaps `ReplyLost`), then
//!   `Answered`. `Applied` is the
//!   instant the service acts on it (token checks happen there, not at send); `Answered` is
//!   the instant the worker receives the answer (after any pause of its process).
//! - *operation*: the kind of a call ([`OpSet`]): faults and latencies are per operation.
//! - *note*: an event only one system has (a term starting, a lease revoked, a job finishing);
//!   it travels as [`EventKind::Note`].
//! - *phase*: safety (faults on), liveness (faults healed, everything must settle), shutdown
//!   (every replica is stopped), end.
//! - *stamped event*: an event with its position in the run and its virtual time.
//!
//! Events are small `Copy` values: fuzzing emits millions of them and keeps none.

use std::fmt;
use std::hash::Hash;

use serde::Serialize;

/// The clock reading (ms) that virtual time 0 corresponds to. Clock values in events (clock
/// reads, cutoffs, lease expiries, creation times) are on this scale; traces and sentences
/// show them relative to it (`-300000ms`: five minutes before the run started).
pub const EPOCH_MS: u64 = 1_000_000_000;

/// Virtual ms that pass while a replica clock drifting `drift_ppm` parts per million advances
/// `local_ms`, rounded up (as every sleep on it is): the world's clock model, which checkers
/// of timing share with it.
pub fn virtual_span_ms(drift_ppm: i64, local_ms: u64) -> u64 {
    let rate = 1_000_000 + drift_ppm;
    debug_assert!(rate > 0, "drift below -100% would stop the clock");
    let scaled = u128::from(local_ms) * 1_000_000;
    let span_ms = scaled.div_ceil(u128::try_from(rate.max(1)).unwrap_or(1));
    u64::try_from(span_ms).unwrap_or(u64::MAX)
}

/// A clock value shown relative to [`EPOCH_MS`], e.g. `-299704ms` or `+1200ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockMs(pub u64);

impl fmt::Display for ClockMs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let relative = i128::from(self.0) - i128::from(EPOCH_MS);
        write!(f, "{relative:+}ms")
    }
}

/// Serializes a clock value relative to [`EPOCH_MS`] (signed ms), as traces show it: for
/// `#[serde(serialize_with = "...")]` on clock fields, so JSON agrees with the text trace.
pub fn relative_clock<S: serde::Serializer>(
    value_ms: &u64,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let relative = i128::from(*value_ms) - i128::from(EPOCH_MS);
    // invariant: clock values are u64, so the difference always fits an i128.
    serializer.serialize_i128(relative)
}

/// [`relative_clock`] of a clock value that may be absent (`null`).
pub fn relative_clock_opt<S: serde::Serializer>(
    value_ms: &Option<u64>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value_ms {
        Some(value_ms) => relative_clock(value_ms, serializer),
        None => serializer.serialize_none(),
    }
}

/// A replica, stored 0-based and shown 1-based (`r1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(into = "String")]
pub struct ReplicaId(pub u16);

impl From<ReplicaId> for String {
    fn from(replica: ReplicaId) -> String {
        replica.to_string()
    }
}

impl ReplicaId {
    /// The owner id this replica's worker uses with its services (`r1`, `r2`, ...).
    pub fn owner_id(self) -> String {
        // Written by hand: the formatting machinery cost about 400 instructions a call.
        let mut number = u32::from(self.0) + 1;
        let mut digits = [0u8; 5];
        let mut len = 0;
        loop {
            digits[len] = b'0' + (number % 10) as u8;
            len += 1;
            number /= 10;
            if number == 0 {
                break;
            }
        }
        let mut id = String::with_capacity(1 + len);
        id.push('r');
        id.extend(digits[..len].iter().rev().map(|&digit| char::from(digit)));
        // invariant: `r` and the one-based number, as the replica displays (tested: formatting
        // here again would cost what writing by hand saves).
        debug_assert!(id.len() == 1 + len && id.starts_with('r'));
        id
    }

    /// Parses an owner id of the form `rN` back into a replica.
    pub fn from_owner_id(owner_id: &str) -> Option<ReplicaId> {
        let number: u32 = owner_id.strip_prefix('r')?.parse().ok()?;
        let index = u16::try_from(number.checked_sub(1)?).ok()?;
        Some(ReplicaId(index))
    }

    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

impl fmt::Display for ReplicaId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}", u32::from(self.0) + 1)
    }
}

/// An event with its virtual timestamp and position in the run.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Stamped<E> {
    pub seq: u64,
    pub at_ms: u64,
    pub event: E,
}

/// What an observer (the checkers) wants after an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// End the run before its next step.
    Halt,
}

/// The phases of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Faults on.
    Safety,
    /// Faults healed; work must end, stops resolve, backlogs drain.
    Liveness,
    /// Every replica is being stopped.
    Shutdown,
    /// The run is over.
    End,
}

/// The operations of one system's ports that cross the network. The shared fault layer needs
/// their names and their number: latencies, rejections and lost replies are per operation.
pub trait OpSet: Copy + Eq + Ord + Hash + fmt::Debug + Serialize + Send + Sync + 'static {
    /// Every operation, in the order scenario tables and traces list them.
    const ALL: &'static [Self];

    /// Its name in traces (`delete_batch`).
    fn name(self) -> &'static str;

    /// Its key in a scenario's per-operation tables (`delete`); the name by default.
    fn key(self) -> &'static str {
        self.name()
    }

    /// Its position in [`OpSet::ALL`].
    fn index(self) -> usize;

    /// The operation whose scenario key is `key`.
    fn from_key(key: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|op| op.key() == key)
    }
}

/// Why the network itself answered a call with an error (the system's service never did).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NetFailure {
    /// Refused before it was applied (fault).
    Rejected,
    /// No answer arrived (the reply was lost; the request may have been applied).
    Timeout,
}

/// What one system's events carry. The system's marker type implements it; the shared layers
/// treat every associated type as opaque.
pub trait Vocabulary: Copy + Eq + Hash + fmt::Debug + 'static {
    /// The operations crossing the network.
    type Op: OpSet;
    /// A request as the worker sent it.
    type Request: Copy + Eq + Hash + fmt::Debug + Serialize;
    /// What the service did when it applied a request.
    type Applied: Copy + Eq + Hash + fmt::Debug + Serialize;
    /// What the worker received.
    type Answer: Copy + Eq + Hash + fmt::Debug + Serialize;
    /// The system's own events.
    type Note: Copy + Eq + Hash + fmt::Debug + Serialize;

    /// The operation of a request.
    fn op(request: &Self::Request) -> Self::Op;

    /// The answer a worker receives when the network fails the call.
    fn failed(failure: NetFailure) -> Self::Answer;

    /// A small number (0..16) grouping notes for checkers' interest masks: notes a checker may
    /// ignore should have their own class.
    fn note_class(note: &Self::Note) -> u32;
}

/// One thing that happened, in any system.
///
/// `Hash` is written out (below) with a fixed number per variant: serde wants the untagged
/// `Note` last, so variants are not always declared in the order they were numbered, and a
/// trace's hash must not depend on that.
#[derive(Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", bound = "")]
pub enum EventKind<V: Vocabulary> {
    Phase(Phase),
    /// The worker sent a request.
    Call {
        call: u64,
        request: V::Request,
    },
    /// Fault: the request was refused before it was applied.
    Rejected {
        call: u64,
        op: V::Op,
    },
    /// The service applied the request.
    Applied {
        call: u64,
        applied: V::Applied,
    },
    /// Fault: the request was applied but its reply is lost; the worker will see a timeout.
    ReplyLost {
        call: u64,
    },
    /// The worker received the answer.
    Answered {
        call: u64,
        op: V::Op,
        answer: V::Answer,
    },
    /// The worker read its clock (replica-local time, ms; serialized relative to the epoch).
    ClockRead {
        #[serde(serialize_with = "relative_clock")]
        now_ms: u64,
    },
    /// The worker started a sleep of this many replica-local ms.
    TimerSet {
        duration_ms: u64,
    },
    /// Fault: the replica's process stops running until `until_ms` (virtual time).
    Paused {
        until_ms: u64,
    },
    /// The replica's process runs again.
    Resumed,
    /// Fault: the replica's clock jumped.
    ClockJumped {
        by_ms: i64,
    },
    /// The replica's `stop()` was called.
    StopCalled,
    /// The replica's `stop()` returned.
    StopResolved,
    /// A stopped replica was started again with a fresh worker (liveness phase).
    Restarted,
    /// The worker started a task of its own through its spawn port (numbered per run).
    TaskStarted {
        task: u32,
        name: &'static str,
    },
    /// A task the worker started finished (`aborted`: its handle aborted it first).
    TaskEnded {
        task: u32,
        aborted: bool,
    },
    /// Fault: the request was lost before it reached the service, so nothing was applied;
    /// the worker will see a timeout (the same answer as a reply lost after apply).
    RequestLost {
        call: u64,
        op: V::Op,
    },
    /// Something only this system records.
    #[serde(untagged)]
    Note(V::Note),
}

impl<V: Vocabulary> Hash for EventKind<V> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // As a derived `Hash` would: the tag (an `isize`), then the fields; the tags are the
        // fixed numbers below, so a trace's hash never depends on where a variant is declared.
        (self.number() as isize).hash(state);
        self.hash_fields(state);
    }
}

impl<V: Vocabulary> EventKind<V> {
    /// The variant's fixed number: its hash tag and, for the shared kinds but `RequestLost`,
    /// its interest bit. Numbers never change; a new variant takes the next free one.
    fn number(&self) -> u32 {
        match self {
            EventKind::Phase(_) => 0,
            EventKind::Call { .. } => 1,
            EventKind::Rejected { .. } => 2,
            EventKind::Applied { .. } => 3,
            EventKind::ReplyLost { .. } => 4,
            EventKind::Answered { .. } => 5,
            EventKind::ClockRead { .. } => 6,
            EventKind::TimerSet { .. } => 7,
            EventKind::Paused { .. } => 8,
            EventKind::Resumed => 9,
            EventKind::ClockJumped { .. } => 10,
            EventKind::StopCalled => 11,
            EventKind::StopResolved => 12,
            EventKind::Restarted => 13,
            EventKind::TaskStarted { .. } => 14,
            EventKind::TaskEnded { .. } => 15,
            EventKind::Note(_) => 16,
            EventKind::RequestLost { .. } => 17,
        }
    }
}

impl<V: Vocabulary> EventKind<V> {
    /// The variant's fields, in declaration order (as a derived `Hash` feeds them).
    fn hash_fields<H: std::hash::Hasher>(&self, state: &mut H) {
        match self {
            EventKind::Phase(phase) => phase.hash(state),
            EventKind::Call { call, request } => (call, request).hash(state),
            EventKind::Rejected { call, op } | EventKind::RequestLost { call, op } => {
                (call, op).hash(state)
            }
            EventKind::Applied { call, applied } => (call, applied).hash(state),
            EventKind::ReplyLost { call } => call.hash(state),
            EventKind::Answered { call, op, answer } => (call, op, answer).hash(state),
            EventKind::ClockRead { now_ms } => now_ms.hash(state),
            EventKind::TimerSet { duration_ms } => duration_ms.hash(state),
            EventKind::Paused { until_ms } => until_ms.hash(state),
            EventKind::ClockJumped { by_ms } => by_ms.hash(state),
            EventKind::TaskStarted { task, name } => (task, name).hash(state),
            EventKind::TaskEnded { task, aborted } => (task, aborted).hash(state),
            EventKind::Note(note) => note.hash(state),
            EventKind::Resumed
            | EventKind::StopCalled
            | EventKind::StopResolved
            | EventKind::Restarted => {}
        }
    }
}

/// The number of interest bits the shared kinds take; notes use the bits above.
pub const SHARED_KINDS: u32 = 17;

impl<V: Vocabulary> EventKind<V> {
    /// This kind's bit in a checker's interest mask: one bit per shared variant, then one per
    /// note class of the system.
    pub fn bit(&self) -> u32 {
        let index = match self {
            EventKind::RequestLost { .. } => 16,
            EventKind::Note(note) => SHARED_KINDS + V::note_class(note).min(31 - SHARED_KINDS),
            shared => shared.number(),
        };
        // invariant: the shared kinds take the bits below SHARED_KINDS, the notes the rest.
        debug_assert!(matches!(self, EventKind::Note(_)) == (index >= SHARED_KINDS));
        1 << index
    }
}

/// Interest masks over event kinds (see [`EventKind::bit`]).
pub mod mask {
    /// Every kind.
    pub const ALL: u32 = u32::MAX;
    pub const PHASE: u32 = 1 << 0;
    pub const CALL: u32 = 1 << 1;
    pub const REJECTED: u32 = 1 << 2;
    pub const APPLIED: u32 = 1 << 3;
    pub const REPLY_LOST: u32 = 1 << 4;
    pub const ANSWERED: u32 = 1 << 5;
    pub const CLOCK_READ: u32 = 1 << 6;
    pub const TIMER_SET: u32 = 1 << 7;
    pub const PAUSED: u32 = 1 << 8;
    pub const RESUMED: u32 = 1 << 9;
    pub const CLOCK_JUMPED: u32 = 1 << 10;
    pub const STOP_CALLED: u32 = 1 << 11;
    pub const STOP_RESOLVED: u32 = 1 << 12;
    pub const RESTARTED: u32 = 1 << 13;
    pub const TASK_STARTED: u32 = 1 << 14;
    pub const TASK_ENDED: u32 = 1 << 15;
    pub const REQUEST_LOST: u32 = 1 << 16;

    /// The bit of note class `class`.
    pub const fn note(class: u32) -> u32 {
        1 << (super::SHARED_KINDS + class)
    }

    /// What a worker does and sees, and the run's structure: phases, calls, answers, stops,
    /// restarts (a system adds its own structural notes).
    pub const WORKER_SIDE: u32 = PHASE | CALL | ANSWERED | STOP_CALLED | STOP_RESOLVED | RESTARTED;

    /// What became of a request at the service's end: applied, refused, or lost on the way.
    pub const SERVICE_SIDE: u32 = APPLIED | REJECTED | REQUEST_LOST;
}

/// An event and the replica it concerns (`None`: the world itself).
#[derive(Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(bound = "")]
pub struct Event<V: Vocabulary> {
    pub replica: Option<ReplicaId>,
    pub kind: EventKind<V>,
}

// `Clone` and `Copy` are written out for `EventKind` and `Event`: for a generic type, a derived
// `Clone` cannot rely on `Copy` and clones field by field through a match on the variant
// (about 60 instructions an event, and the checkers copy events for context); every
// associated type of a vocabulary is `Copy`, so a clone here is a plain copy.
impl<V: Vocabulary> Clone for EventKind<V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<V: Vocabulary> Copy for EventKind<V> {}

impl<V: Vocabulary> Clone for Event<V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<V: Vocabulary> Copy for Event<V> {}

impl<V: Vocabulary> Event<V> {
    pub fn world(kind: EventKind<V>) -> Event<V> {
        Event {
            replica: None,
            kind,
        }
    }

    pub fn of(replica: ReplicaId, kind: EventKind<V>) -> Event<V> {
        Event {
            replica: Some(replica),
            kind,
        }
    }

    /// A system note of the world itself.
    pub fn world_note(note: V::Note) -> Event<V> {
        Event::world(EventKind::Note(note))
    }

    /// A system note of one replica.
    pub fn note_of(replica: ReplicaId, note: V::Note) -> Event<V> {
        Event::of(replica, EventKind::Note(note))
    }
}

#[cfg(test)]
mod tests {
    use std::hash::{DefaultHasher, Hasher};

    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
    struct OneOp;

    impl OpSet for OneOp {
        const ALL: &'static [OneOp] = &[OneOp];
        fn name(self) -> &'static str {
            "op"
        }
        fn index(self) -> usize {
            0
        }
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    struct Words;

    impl Vocabulary for Words {
        type Op = OneOp;
        type Request = u16;
        type Applied = u32;
        type Answer = i8;
        type Note = (u8, u64);
        fn op(_: &u16) -> OneOp {
            OneOp
        }
        fn failed(_: NetFailure) -> i8 {
            -1
        }
        fn note_class(note: &(u8, u64)) -> u32 {
            u32::from(note.0)
        }
    }

    /// `EventKind` as it was declared, with the derived `Hash` its traces were hashed with.
    #[derive(Hash)]
    enum Declared {
        Phase(Phase),
        Call { call: u64, request: u16 },
        Rejected { call: u64, op: OneOp },
        Applied { call: u64, applied: u32 },
        ReplyLost { call: u64 },
        Answered { call: u64, op: OneOp, answer: i8 },
        ClockRead { now_ms: u64 },
        TimerSet { duration_ms: u64 },
        Paused { until_ms: u64 },
        Resumed,
        ClockJumped { by_ms: i64 },
        StopCalled,
        StopResolved,
        Restarted,
        TaskStarted { task: u32, name: &'static str },
        TaskEnded { task: u32, aborted: bool },
        Note((u8, u64)),
        RequestLost { call: u64, op: OneOp },
    }

    fn hash_of(value: &impl Hash) -> u64 {
        let mut hasher = DefaultHasher::new();
        value.hash(&mut hasher);
        hasher.finish()
    }

    /// A kind and its derived declaration, with the same variant and fields.
    macro_rules! pair {
        ($($variant:tt)*) => {
            (EventKind::<Words>::$($variant)*, Declared::$($variant)*)
        };
    }

    /// Every kind, next to its derived declaration with the same fields.
    fn declared_pairs() -> Vec<(EventKind<Words>, Declared)> {
        vec![
            pair!(Phase(Phase::Liveness)),
            pair!(Call {
                call: 7,
                request: 3
            }),
            pair!(Rejected { call: 7, op: OneOp }),
            pair!(Applied {
                call: 7,
                applied: 9
            }),
            pair!(ReplyLost { call: 7 }),
            pair!(Answered {
                call: 7,
                op: OneOp,
                answer: 2
            }),
            pair!(ClockRead { now_ms: 5 }),
            pair!(TimerSet { duration_ms: 5 }),
            pair!(Paused { until_ms: 5 }),
            pair!(Resumed),
            pair!(ClockJumped { by_ms: -5 }),
            pair!(StopCalled),
            pair!(StopResolved),
            pair!(Restarted),
            pair!(TaskStarted {
                task: 2,
                name: "renew"
            }),
            pair!(TaskEnded {
                task: 2,
                aborted: true
            }),
            pair!(Note((1, 4))),
            pair!(RequestLost { call: 7, op: OneOp }),
        ]
    }

    #[test]
    fn every_kind_hashes_as_its_derived_declaration_in_numbered_order() {
        let pairs = declared_pairs();
        assert_eq!(pairs.len(), 18, "one pair per kind");
        for (kind, declared) in &pairs {
            assert_eq!(hash_of(kind), hash_of(declared), "{kind:?}");
        }
        // Distinct kinds with the same fields hash apart.
        let rejected: EventKind<Words> = EventKind::Rejected { call: 7, op: OneOp };
        let lost: EventKind<Words> = EventKind::RequestLost { call: 7, op: OneOp };
        assert_ne!(hash_of(&rejected), hash_of(&lost));
    }

    #[test]
    fn shared_kinds_take_the_low_bits_and_notes_the_bits_above() {
        let lost: EventKind<Words> = EventKind::RequestLost { call: 7, op: OneOp };
        assert_eq!(lost.bit(), mask::REQUEST_LOST);
        let note: EventKind<Words> = EventKind::Note((2, 0));
        assert_eq!(note.bit(), mask::note(2));
        assert_eq!(
            EventKind::<Words>::TaskEnded {
                task: 1,
                aborted: false
            }
            .bit(),
            mask::TASK_ENDED
        );
    }

    #[test]
    fn owner_ids_read_as_the_replica_displays_for_every_replica() {
        for number in 0..=u16::MAX {
            let replica = ReplicaId(number);
            assert_eq!(replica.owner_id(), replica.to_string());
            assert_eq!(ReplicaId::from_owner_id(&replica.owner_id()), Some(replica));
        }
    }

    #[test]
    fn owner_ids_round_trip_and_show_one_based() {
        assert_eq!(ReplicaId(0).owner_id(), "r1");
        assert_eq!(ReplicaId(9).owner_id(), "r10");
        assert_eq!(ReplicaId(11).owner_id(), "r12");
        assert_eq!(ReplicaId(u16::MAX).owner_id(), "r65536");
        assert_eq!(ReplicaId::from_owner_id("r12"), Some(ReplicaId(11)));
        assert_eq!(ReplicaId::from_owner_id("r0"), None);
        assert_eq!(ReplicaId::from_owner_id("x1"), None);
        assert_eq!(ReplicaId::from_owner_id("r65537"), None);
        assert_eq!(ClockMs(EPOCH_MS - 300_000).to_string(), "-300000ms");
        assert_eq!(ClockMs(EPOCH_MS + 5).to_string(), "+5ms");
    }
}
