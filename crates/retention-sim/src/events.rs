//! The retention system's vocabulary: what its calls carry and what its services answer.
//!
//! Terminology:
//! - *lease view*: a lease as it travels in requests and answers (its owner is the replica of
//!   the event).
//! - *term*: the span between `TermStarted` and `TermEnded` of one replica: one `run()` call.
//!   Terms, revocations and backlog checks are this system's notes ([`Note`]); calls, applies,
//!   answers, pauses and stops are the shared event kinds of `leasesim_events`.
//!
//! [`Event`] and [`EventKind`] name the shared envelope filled with this vocabulary.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::mem;

use leasesim_events::{NetFailure, OpSet, Vocabulary, relative_clock, relative_clock_opt};

pub use leasesim_events::{ClockMs, EPOCH_MS, Flow, Phase, ReplicaId, Stamped};
use leasesim_invariants::{ConstructionFinding, ConstructionNotes};
use serde::Serialize;

/// A lease as it travels in requests and answers (its owner is the replica of the event).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct LeaseView {
    pub token: u64,
    /// A clock value (serialized relative to the epoch, as traces show it).
    #[serde(serialize_with = "relative_clock")]
    pub expires_at_ms: u64,
}

/// The four port operations that cross the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    Acquire,
    Renew,
    Release,
    Delete,
}

impl OpKind {
    pub const ALL: [OpKind; 4] = [
        OpKind::Acquire,
        OpKind::Renew,
        OpKind::Release,
        OpKind::Delete,
    ];

    pub fn name(self) -> &'static str {
        match self {
            OpKind::Acquire => "acquire",
            OpKind::Renew => "renew",
            OpKind::Release => "release",
            OpKind::Delete => "delete_batch",
        }
    }
}

/// A request as the worker sent it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    Acquire,
    Renew {
        lease: LeaseView,
    },
    Release {
        lease: LeaseView,
    },
    Delete {
        #[serde(serialize_with = "relative_clock")]
        older_than_ms: u64,
        limit: u32,
        token: u64,
    },
}

impl Request {
    pub fn op(&self) -> OpKind {
        match self {
            Request::Acquire => OpKind::Acquire,
            Request::Renew { .. } => OpKind::Renew,
            Request::Release { .. } => OpKind::Release,
            Request::Delete { .. } => OpKind::Delete,
        }
    }
}

/// What the service did when it applied a request.
///
/// `Hash` and `Debug` are written out (not derived) only so that a full answer
/// (`held_back == 0`) hashes and prints exactly as it did before short answers existed (as
/// its JSON does, by skipping the zero): traces of runs without the fault stay what they were.
#[derive(Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Applied {
    /// Acquire granted. `replaced`: the token of an expired lease this grant took over.
    Granted {
        lease: LeaseView,
        replaced: Option<u64>,
    },
    /// Acquire refused: an unexpired lease with this token is held.
    Busy { holder_token: u64 },
    /// Renew granted with a new token.
    Renewed { lease: LeaseView },
    /// Renew refused: the lease expired, moved on, or was revoked. The answer is `None`.
    RenewRefused,
    /// Release freed the lease.
    Released,
    /// Release freed nothing: the lease had expired or moved on (a signal, not an error).
    FreedNothing,
    /// Delete applied. `token_current`: the token was the current unexpired one at this
    /// instant (always true when the store enforces fencing); `current_token` is the lease
    /// that was current then, if any. `newest_created_ms`: creation time of the newest row
    /// deleted (None when no row was deleted). `held_back`: a short answer (fault): this many
    /// more eligible rows were within the limit but left in the store, as `DELETE ... LIMIT n`
    /// with `SKIP LOCKED` can do; 0 for a full answer.
    Deleted {
        rows: u32,
        token_current: bool,
        current_token: Option<u64>,
        #[serde(serialize_with = "relative_clock_opt")]
        newest_created_ms: Option<u64>,
        #[serde(skip_serializing_if = "is_zero")]
        held_back: u32,
    },
    /// Delete refused by the store's fencing check; `current_token` is the lease that was
    /// current then, if any.
    DeleteRefused { current_token: Option<u64> },
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}

impl Hash for Applied {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // As `#[derive(Hash)]` does: the discriminant, then the fields in order.
        mem::discriminant(self).hash(state);
        match self {
            Applied::Granted { lease, replaced } => {
                lease.hash(state);
                replaced.hash(state);
            }
            Applied::Busy { holder_token } => holder_token.hash(state),
            Applied::Renewed { lease } => lease.hash(state),
            Applied::RenewRefused | Applied::Released | Applied::FreedNothing => {}
            Applied::Deleted {
                rows,
                token_current,
                current_token,
                newest_created_ms,
                held_back,
            } => {
                rows.hash(state);
                token_current.hash(state);
                current_token.hash(state);
                newest_created_ms.hash(state);
                if *held_back > 0 {
                    held_back.hash(state);
                }
            }
            Applied::DeleteRefused { current_token } => current_token.hash(state),
        }
    }
}

impl fmt::Debug for Applied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // As `#[derive(Debug)]` prints, except that a zero `held_back` is left out.
        match self {
            Applied::Granted { lease, replaced } => f
                .debug_struct("Granted")
                .field("lease", lease)
                .field("replaced", replaced)
                .finish(),
            Applied::Busy { holder_token } => f
                .debug_struct("Busy")
                .field("holder_token", holder_token)
                .finish(),
            Applied::Renewed { lease } => f.debug_struct("Renewed").field("lease", lease).finish(),
            Applied::RenewRefused => f.write_str("RenewRefused"),
            Applied::Released => f.write_str("Released"),
            Applied::FreedNothing => f.write_str("FreedNothing"),
            Applied::Deleted {
                rows,
                token_current,
                current_token,
                newest_created_ms,
                held_back,
            } => {
                let mut out = f.debug_struct("Deleted");
                out.field("rows", rows)
                    .field("token_current", token_current)
                    .field("current_token", current_token)
                    .field("newest_created_ms", newest_created_ms);
                if *held_back > 0 {
                    out.field("held_back", held_back);
                }
                out.finish()
            }
            Applied::DeleteRefused { current_token } => f
                .debug_struct("DeleteRefused")
                .field("current_token", current_token)
                .finish(),
        }
    }
}

/// Why a call gave the worker an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// Refused before it was applied (injected fault).
    Rejected,
    /// No answer arrived (the reply was lost; the request may have been applied).
    Timeout,
    /// The store refused a delete with a stale token.
    StaleToken,
}

/// What the worker received.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// Answer to acquire or renew.
    Lease(Option<LeaseView>),
    /// Release succeeded (whether or not it freed anything).
    Released,
    /// Delete succeeded with this many rows.
    Rows(u32),
    Failed(Failure),
}

/// How a `run()` call ended, as the driver saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EndKind {
    StoppedBeforeStart,
    NotLeader,
    CapReached,
    Drained,
    /// A renewal answered `None`.
    LostByNone,
    /// A renewal failed.
    LostByError,
    Stopped,
    FailedAcquire,
    FailedDelete,
    /// `run()` refused to start because another run was active.
    AlreadyRunning,
}

/// The retention system's own events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Note {
    /// The replica's driver called `run()`; terms are numbered per replica from 1.
    TermStarted { term: u32 },
    /// `run()` returned.
    TermEnded { term: u32, end: EndKind, rows: u64 },
    /// Fault: the lease authority dropped the lease with this token.
    Revoked { token: u64 },
    /// Liveness check point: rows created before `eligible_before_ms` still in the store.
    Backlog {
        #[serde(serialize_with = "relative_clock")]
        eligible_before_ms: u64,
        remaining: u64,
    },
    /// Building this replica's worker, the production factory's construction probe found the
    /// core at odds with the settings rules: it refused valid settings, accepted invalid ones
    /// or refused them without naming a setting, read back something else, or has other
    /// defaults than documented (recorded only then; see `leasesim_invariants::probe`).
    Construction(ConstructionFinding),
}

/// Note classes for checkers' interest masks (see `Vocabulary::note_class`).
pub mod notes {
    use leasesim_events::mask;

    pub const TERM_STARTED: u32 = mask::note(0);
    pub const TERM_ENDED: u32 = mask::note(1);
    pub const REVOKED: u32 = mask::note(2);
    pub const BACKLOG: u32 = mask::note(3);
    /// What a construction probe found.
    pub const CONSTRUCTION: u32 = mask::note(4);
    /// Terms and the backlog check: the run's structure every checker follows.
    pub const STRUCTURE: u32 = TERM_STARTED | TERM_ENDED | BACKLOG;
}

/// The retention system (000): a lease-fenced worker deleting old rows in batches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Retention;

impl ConstructionNotes for Retention {
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

impl Vocabulary for Retention {
    type Op = OpKind;
    type Request = Request;
    type Applied = Applied;
    type Answer = Answer;
    type Note = Note;

    fn op(request: &Request) -> OpKind {
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
            Note::TermStarted { .. } => 0,
            Note::TermEnded { .. } => 1,
            Note::Revoked { .. } => 2,
            Note::Backlog { .. } => 3,
            Note::Construction(_) => 4,
        }
    }
}

impl OpSet for OpKind {
    const ALL: &'static [OpKind] = &OpKind::ALL;

    fn name(self) -> &'static str {
        OpKind::name(self)
    }

    fn key(self) -> &'static str {
        match self {
            OpKind::Acquire => "acquire",
            OpKind::Renew => "renew",
            OpKind::Release => "release",
            OpKind::Delete => "delete",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// An event of the retention system.
pub type Event = leasesim_events::Event<Retention>;
/// What happened, in the retention system.
pub type EventKind = leasesim_events::EventKind<Retention>;

#[cfg(test)]
mod tests {
    use std::hash::DefaultHasher;

    use super::*;

    /// `Applied` as it was derived before short answers existed.
    #[derive(Debug, Hash)]
    enum Before {
        Granted {
            lease: LeaseView,
            replaced: Option<u64>,
        },
        Busy {
            holder_token: u64,
        },
        Renewed {
            lease: LeaseView,
        },
        RenewRefused,
        Released,
        FreedNothing,
        Deleted {
            rows: u32,
            token_current: bool,
            current_token: Option<u64>,
            newest_created_ms: Option<u64>,
        },
        DeleteRefused {
            current_token: Option<u64>,
        },
    }

    fn hash_of(value: &impl Hash) -> u64 {
        let mut hasher = DefaultHasher::new();
        value.hash(&mut hasher);
        hasher.finish()
    }

    fn deleted(held_back: u32) -> Applied {
        Applied::Deleted {
            rows: 7,
            token_current: true,
            current_token: Some(3),
            newest_created_ms: None,
            held_back,
        }
    }

    #[test]
    fn a_full_answer_prints_and_hashes_as_before_short_answers_existed() {
        let lease = LeaseView {
            token: 4,
            expires_at_ms: 9,
        };
        let pairs = [
            (
                Applied::Granted {
                    lease,
                    replaced: Some(2),
                },
                Before::Granted {
                    lease,
                    replaced: Some(2),
                },
            ),
            (
                Applied::Busy { holder_token: 4 },
                Before::Busy { holder_token: 4 },
            ),
            (Applied::Renewed { lease }, Before::Renewed { lease }),
            (Applied::RenewRefused, Before::RenewRefused),
            (Applied::Released, Before::Released),
            (Applied::FreedNothing, Before::FreedNothing),
            (
                deleted(0),
                Before::Deleted {
                    rows: 7,
                    token_current: true,
                    current_token: Some(3),
                    newest_created_ms: None,
                },
            ),
            (
                Applied::DeleteRefused {
                    current_token: None,
                },
                Before::DeleteRefused {
                    current_token: None,
                },
            ),
        ];
        for (now, before) in &pairs {
            assert_eq!(format!("{now:?}"), format!("{before:?}"));
            assert_eq!(format!("{now:#?}"), format!("{before:#?}"));
            assert_eq!(hash_of(now), hash_of(before), "{now:?}");
        }
        let short = deleted(5);
        assert!(format!("{short:?}").ends_with("held_back: 5 }"));
        assert_ne!(hash_of(&short), hash_of(&deleted(0)));
    }
}
