//! leasesim-events: the vocabulary shared by the simulated world and the invariant checkers.
//!
//! What the simulated world records: the event stream checkers read.
//!
//! Terminology:
//! - *replica*: one process running a worker, `r1`..`rN` (stored 0-based).
//! - *call*: one port request a worker sends; it has an id, and its life is
//!   `Call` → (`Rejected` | `Applied` [→ `ReplyLost`]) → `Answered`.
//!   `Applied` is the instant the service acts on it (token checks happen here, not at send);
//!   `Answered` is the instant the worker receives the answer (after any pause of its process).
//! - *term*: the span between `TermStarted` and `TermEnded` of one replica: one `run()` call.
//! - *phase*: safety (faults on), liveness (faults healed, everything must settle), shutdown
//!   (every replica is stopped), end.
//!
//! Events are small `Copy` values: fuzzing emits millions of them and keeps none.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::mem;

use serde::Serialize;

/// The clock reading (ms) that virtual time 0 corresponds to. Clock values in events (clock
/// reads, cutoffs, lease expiries, row creation times) are on this scale; traces and
/// sentences show them relative to it (`-300000ms`: five minutes before the run started).
pub const EPOCH_MS: u64 = 1_000_000_000;

/// A clock value shown relative to [`EPOCH_MS`], e.g. `-299704ms` or `+1200ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockMs(pub u64);

impl fmt::Display for ClockMs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let relative = i128::from(self.0) - i128::from(EPOCH_MS);
        write!(f, "{relative:+}ms")
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
    /// The owner id this replica's worker uses with the lease service.
    pub fn owner_id(self) -> String {
        self.to_string()
    }

    /// Parses an owner id of the form `rN` back into a replica.
    pub fn from_owner_id(owner_id: &str) -> Option<ReplicaId> {
        let number: u16 = owner_id.strip_prefix('r')?.parse().ok()?;
        number.checked_sub(1).map(ReplicaId)
    }

    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

impl fmt::Display for ReplicaId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}", self.0 + 1)
    }
}

/// A lease as it travels in requests and answers (its owner is the replica of the event).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct LeaseView {
    pub token: u64,
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

/// The phases of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Faults on.
    Safety,
    /// Faults healed; terms must end, stops resolve, the backlog drain.
    Liveness,
    /// Every replica is being stopped.
    Shutdown,
    /// The run is over.
    End,
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

/// One thing that happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    Phase(Phase),
    /// The replica's driver called `run()`; terms are numbered per replica from 1.
    TermStarted {
        term: u32,
    },
    /// `run()` returned.
    TermEnded {
        term: u32,
        end: EndKind,
        rows: u64,
    },
    /// The worker sent a request.
    Call {
        call: u64,
        request: Request,
    },
    /// Fault: the request was refused before it was applied.
    Rejected {
        call: u64,
        op: OpKind,
    },
    /// The service applied the request.
    Applied {
        call: u64,
        applied: Applied,
    },
    /// Fault: the request was applied but its reply is lost; the worker will see a timeout.
    ReplyLost {
        call: u64,
    },
    /// The worker received the answer.
    Answered {
        call: u64,
        op: OpKind,
        answer: Answer,
    },
    /// The worker read its clock (replica-local time, ms).
    ClockRead {
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
    /// Fault: the lease authority dropped the lease with this token.
    Revoked {
        token: u64,
    },
    /// The replica's `stop()` was called.
    StopCalled,
    /// The replica's `stop()` returned.
    StopResolved,
    /// A stopped replica was started again with a fresh worker (liveness phase).
    Restarted,
    /// Liveness check point: rows created before `eligible_before_ms` still in the store.
    Backlog {
        eligible_before_ms: u64,
        remaining: u64,
    },
}

/// An event and the replica it concerns (None: the world itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Event {
    pub replica: Option<ReplicaId>,
    pub kind: EventKind,
}

impl Event {
    pub fn world(kind: EventKind) -> Event {
        Event {
            replica: None,
            kind,
        }
    }

    pub fn of(replica: ReplicaId, kind: EventKind) -> Event {
        Event {
            replica: Some(replica),
            kind,
        }
    }
}

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
