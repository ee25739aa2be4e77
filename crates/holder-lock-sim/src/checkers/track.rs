//! What the checkers' shared facts are made of (see `super::facts`): the attempts and the
//! claim model, derived from the events alone.
//!
//! Terminology:
//! - *attempt ref*: an attempt's identity: its replica, the driver's number for it (what
//!   traces show) and the position of its `AttemptStarted` note in the run (unique, also
//!   across a restart that numbers attempts from 1 again).
//! - *open attempt*: a replica's attempt between `AttemptStarted` and `AttemptEnded` (or a
//!   restart), with what its calls and answers told so far: its create's token, whether the
//!   create won, its job, a renewal that found the claim gone or failed (*lost*), and its
//!   first *release call* (`delete_if_holder`, `delete` or `get`, on either key: how every
//!   worker of this system gives its claim back or checks it at the end).
//! - *call book*: each call's attempt and request, from `Call` to `Answered`; an `Applied` is
//!   attributed through it.
//! - *claim model*: the claim key as the store's `Applied` events and its `Forgot` notes
//!   describe it, with each entry's creating attempt and lifetime end; liveness is worked out
//!   from the event's time (`EPOCH_MS` + virtual time), never from the store's `Expired`
//!   notes. The model keeps what the key held before its last write itself, and undoes that
//!   write at a failover's `Forgot` (the store's `Reverted` note is for readers only).
//! - *ghost*: a claim the store forgot (lost, or a renewal undone) while it would still have
//!   been live: the record as it was, with the lifetime end it would have had, and the note.
//!   Until that end the ghost's attempt may not know its claim is gone; the checkers excuse
//!   exactly what that attempt could not have prevented (see `claims` and `job`).

use std::fmt;

use leasesim_events::{EPOCH_MS, ReplicaId};
use leasesim_invariants::PerReplica;

use crate::events::{
    Answer, Applied, Event, EventKind, Forgetting, Key, Note, Request, Stamped, TokenText,
};

/// An attempt's identity (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct AttemptRef {
    pub replica: ReplicaId,
    pub number: u32,
    pub seq: u64,
}

impl fmt::Display for AttemptRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}'s attempt {}", self.replica, self.number)
    }
}

/// Is this request one of the ways an attempt gives back or checks its claim at the end?
pub fn is_release(request: &Request) -> bool {
    matches!(
        request,
        Request::DeleteIfHolder { .. } | Request::Delete { .. } | Request::Get { .. }
    )
}

/// A replica's open attempt (see the module docs).
#[derive(Clone, Debug)]
pub struct Open {
    pub id: AttemptRef,
    pub started: Stamped<Event>,
    /// The token of its claim create, and that call.
    pub create: Option<(u64, Stamped<Event>)>,
    /// The answer that said its create won.
    pub won: Option<Stamped<Event>>,
    pub job: Option<Stamped<Event>>,
    pub job_over: bool,
    /// A renewal answer that said the claim was gone, or an error.
    pub lost: Option<Stamped<Event>>,
    /// Its first release call.
    pub released: Option<Stamped<Event>>,
}

impl Open {
    pub fn token(&self) -> Option<u64> {
        self.create.as_ref().map(|(token, _)| *token)
    }

    /// Is its job running (started, not over, no release sent)?
    pub fn job_running(&self) -> bool {
        self.job.is_some() && !self.job_over && self.released.is_none()
    }
}

/// One call on its way, in the call book.
#[derive(Clone, Debug)]
pub struct Booked {
    pub call: u64,
    pub attempt: Option<AttemptRef>,
    pub request: Request,
    pub sent: Stamped<Event>,
}

/// The worker side of every replica: open attempts and the call book.
#[derive(Debug, Default)]
pub struct Attempts {
    open: PerReplica<Option<Open>>,
    book: Vec<Booked>,
}

impl Attempts {
    /// The replica's open attempt.
    pub fn open(&self, replica: ReplicaId) -> Option<&Open> {
        self.open.get(replica).and_then(Option::as_ref)
    }

    /// A booked call (sent and not answered yet).
    pub fn booked(&self, call: u64) -> Option<&Booked> {
        self.book.iter().find(|booked| booked.call == call)
    }

    /// The attempt that sent `call`.
    pub fn attempt_of(&self, call: u64) -> Option<AttemptRef> {
        self.booked(call).and_then(|booked| booked.attempt)
    }

    /// Every booked call, in the book's order (the facts' test compares whole books).
    #[cfg(test)]
    pub fn calls(&self) -> &[Booked] {
        &self.book
    }

    /// Do these attempts and `other` agree on `replica`'s open attempt and on the size of
    /// the book? (Two views that have seen the same events do.)
    pub fn agree_on(&self, other: &Attempts, replica: ReplicaId) -> bool {
        let id = |attempts: &Attempts| attempts.open(replica).map(|open| open.id);
        self.book.len() == other.book.len() && id(self) == id(other)
    }

    /// Calls of `replica` sent and not answered.
    pub fn unanswered(&self, replica: ReplicaId) -> impl Iterator<Item = &Booked> {
        self.book
            .iter()
            .filter(move |booked| booked.sent.event.replica == Some(replica))
    }

    /// Takes in one event of a replica (calls, answers, attempt and job notes, restarts).
    pub fn observe(&mut self, event: &Stamped<Event>) {
        let Some(replica) = event.event.replica else {
            return;
        };
        match event.event.kind {
            EventKind::Note(Note::AttemptStarted { attempt }) => {
                let id = AttemptRef {
                    replica,
                    number: attempt,
                    seq: event.seq,
                };
                *self.open.at(replica) = Some(Open {
                    id,
                    started: event.clone(),
                    create: None,
                    won: None,
                    job: None,
                    job_over: false,
                    lost: None,
                    released: None,
                });
            }
            EventKind::Note(Note::AttemptEnded { .. }) | EventKind::Restarted => {
                *self.open.at(replica) = None;
            }
            EventKind::Call { call, request } => self.sent(replica, call, request, event),
            EventKind::Answered { call, answer, .. } => self.answered(call, answer, event),
            EventKind::Note(note) => self.job_note(replica, note, event),
            _ => {}
        }
    }

    fn sent(&mut self, replica: ReplicaId, call: u64, request: Request, event: &Stamped<Event>) {
        let open = self.open.at(replica).as_mut();
        let attempt = open.as_ref().map(|open| open.id);
        if let Some(open) = open {
            match request {
                Request::Create {
                    key: Key::Claim,
                    token,
                    ..
                } if open.create.is_none() => open.create = Some((token, event.clone())),
                _ if is_release(&request) && open.released.is_none() => {
                    open.released = Some(event.clone());
                }
                _ => {}
            }
        }
        self.book.push(Booked {
            call,
            attempt,
            request,
            sent: event.clone(),
        });
    }

    fn answered(&mut self, call: u64, answer: Answer, event: &Stamped<Event>) {
        let Some(index) = self.book.iter().position(|booked| booked.call == call) else {
            return;
        };
        let booked = self.book.swap_remove(index);
        let Some(replica) = booked.attempt.map(|attempt| attempt.replica) else {
            return;
        };
        let Some(open) = self.open.at(replica).as_mut() else {
            return;
        };
        if Some(open.id) != booked.attempt {
            return;
        }
        match (booked.request, answer) {
            (
                Request::Create {
                    key: Key::Claim, ..
                },
                Answer::Created,
            ) => open.won = Some(event.clone()),
            (
                Request::Renew {
                    key: Key::Claim, ..
                },
                Answer::NotHolder | Answer::Absent | Answer::Failed(_),
            ) if open.lost.is_none() => open.lost = Some(event.clone()),
            _ => {}
        }
    }

    fn job_note(&mut self, replica: ReplicaId, note: Note, event: &Stamped<Event>) {
        let Some(open) = self.open.at(replica).as_mut() else {
            return;
        };
        match note {
            Note::JobStarted { .. } => open.job = Some(event.clone()),
            Note::JobFinished { .. } | Note::JobFailed { .. } => open.job_over = true,
            _ => {}
        }
    }
}

/// One entry of the claim key, as the model knows it.
#[derive(Clone, Debug)]
pub struct ClaimRecord {
    pub token: u64,
    /// The attempt whose create (or write) made it.
    pub attempt: Option<AttemptRef>,
    /// The `Applied` event that made it.
    pub made: Stamped<Event>,
    /// The end of its lifetime (store clock), as last renewed.
    pub expires_at_ms: u64,
}

impl ClaimRecord {
    /// Is it live at virtual instant `at_ms`?
    pub fn live_at(&self, at_ms: u64) -> bool {
        EPOCH_MS + at_ms < self.expires_at_ms
    }

    /// Its lifetime's end in virtual time.
    pub fn ends_at_ms(&self) -> u64 {
        self.expires_at_ms.saturating_sub(EPOCH_MS)
    }

    /// `token 00a3f9:4 of r1's attempt 2`.
    pub fn describe(&self) -> String {
        match self.attempt {
            Some(attempt) => format!("token {} of {attempt}", TokenText(self.token)),
            None => format!("token {}", TokenText(self.token)),
        }
    }
}

/// What an `Applied` did to the claim key.
#[derive(Clone, Debug)]
pub enum Change {
    /// A new entry; `previous` is the one it replaced (whose lifetime had ended).
    Made { previous: Option<ClaimRecord> },
    /// The live entry's lifetime starts again.
    Renewed,
    /// The live entry `removed` was deleted or overwritten by `by`.
    Removed {
        removed: ClaimRecord,
        by: Option<AttemptRef>,
    },
    /// The store forgot the live entry `lost` without a release; `restored`: the live entry
    /// the key holds again after a failover (`lost` itself with its earlier lifetime end
    /// when the failover undid a renewal).
    Forgot {
        lost: ClaimRecord,
        restored: Option<ClaimRecord>,
    },
}

/// A claim the store forgot while it would still have been live (see the module docs).
#[derive(Clone, Debug)]
pub struct Ghost {
    /// The claim as it was, with the lifetime end it would have had.
    pub record: ClaimRecord,
    /// The store's `Forgot` note.
    pub forgot: Stamped<Event>,
}

/// The claim key, per the store's applies and forgettings (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct ClaimModel {
    current: Option<ClaimRecord>,
    /// What the key held before its last write (`None`: nothing to undo).
    before_write: Option<Option<ClaimRecord>>,
    /// Forgotten claims, pruned of those whose lifetime would have ended by the last
    /// forgetting.
    ghosts: Vec<Ghost>,
}

impl ClaimModel {
    /// The entry the key holds (live or not).
    pub fn current(&self) -> Option<&ClaimRecord> {
        self.current.as_ref()
    }

    /// The live entry at virtual instant `at_ms`.
    pub fn live(&self, at_ms: u64) -> Option<&ClaimRecord> {
        self.current.as_ref().filter(|record| record.live_at(at_ms))
    }

    /// The ghost of `attempt`'s claim that would still be live at `at_ms`, if any: the store
    /// forgot that claim without the attempt's release, before its lifetime would have ended.
    pub fn ghost_of(&self, attempt: AttemptRef, at_ms: u64) -> Option<&Ghost> {
        self.ghosts
            .iter()
            .rev()
            .find(|g| g.record.attempt == Some(attempt) && g.record.live_at(at_ms))
    }

    /// Every ghost that would still be live at `at_ms` (the facts' test compares them).
    #[cfg(test)]
    pub fn ghosts_at(&self, at_ms: u64) -> impl Iterator<Item = &Ghost> {
        self.ghosts.iter().filter(move |g| g.record.live_at(at_ms))
    }

    /// A request's write: what the key held becomes what a failover goes back to.
    fn written(&mut self, record: Option<ClaimRecord>) -> Option<ClaimRecord> {
        let before = std::mem::replace(&mut self.current, record);
        self.before_write = Some(before.clone());
        before
    }

    /// Takes in the store's `Forgot` note of the claim key: it lost its live entry (and, for
    /// a failover, went back to its state before its last write).
    pub fn forgot(&mut self, event: &Stamped<Event>, cause: Forgetting) -> Option<Change> {
        let at_ms = event.at_ms;
        let lost = self.live(at_ms).cloned();
        let before = self.before_write.take();
        let restored = match cause {
            Forgetting::Failover => before.flatten().filter(|r| r.live_at(at_ms)),
            Forgetting::Eviction | Forgetting::Restart => None,
        };
        self.current = restored.clone();
        self.ghosts.retain(|ghost| ghost.record.live_at(at_ms));
        let lost = lost?;
        let shortened = restored
            .as_ref()
            .is_none_or(|r| r.made.seq != lost.made.seq || r.expires_at_ms < lost.expires_at_ms);
        if shortened {
            let ghost = Ghost {
                record: lost.clone(),
                forgot: event.clone(),
            };
            self.ghosts.push(ghost);
        }
        // invariant: what the key holds after a forgetting is live: a failover never brings
        // back an entry past its end.
        debug_assert!(self.current.as_ref().is_none_or(|c| c.live_at(at_ms)));
        Some(Change::Forgot { lost, restored })
    }

    /// Takes in an `Applied` of a request sent by `by` (attributed through a call book).
    pub fn applied(
        &mut self,
        event: &Stamped<Event>,
        applied: Applied,
        by: Option<AttemptRef>,
    ) -> Option<Change> {
        let make = |token, expires_at_ms| ClaimRecord {
            token,
            attempt: by,
            made: event.clone(),
            expires_at_ms,
        };
        let live = self.live(event.at_ms).cloned();
        match applied {
            Applied::Created {
                key: Key::Claim,
                token,
                expires_at_ms,
                ..
            } => {
                let previous = self.written(Some(make(token, expires_at_ms)));
                Some(Change::Made { previous })
            }
            Applied::Renewed {
                key: Key::Claim,
                expires_at_ms,
                ..
            } => {
                let mut record = self.current.clone()?;
                record.expires_at_ms = expires_at_ms;
                self.written(Some(record));
                Some(Change::Renewed)
            }
            Applied::Deleted {
                key: Key::Claim, ..
            } => {
                self.written(None);
                live.map(|removed| Change::Removed { removed, by })
            }
            Applied::Written {
                key: Key::Claim,
                token,
                expires_at_ms,
                ..
            } => {
                self.written(Some(make(token, expires_at_ms)));
                Some(match live {
                    Some(removed) => Change::Removed { removed, by },
                    None => Change::Made { previous: None },
                })
            }
            _ => None,
        }
    }
}
