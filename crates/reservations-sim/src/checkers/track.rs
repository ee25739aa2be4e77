//! What the checkers follow. The desks and the ledger are kept once per run in the shared
//! facts (`super::Facts`, tested against desks and ledgers rebuilt from scratch); what else a
//! checker follows it keeps itself. No checker trusts another's verdict, and none trusts the
//! store's answers.
//!
//! Terminology:
//! - *ledger*: the store side, per reservation: its deadline and status (from the agents'
//!   notes and the applied transitions), its claim (from applied claims and releases),
//!   whether a dead letter parked it. Built from what the store *applied*, never from what it
//!   answered a worker.
//! - *desk*: the worker side, per replica: its calls in flight, the reservations it was
//!   answered as claimed and has not sent a release for (each with its attempts, its latest
//!   transition answer, the pause since, its dead letter), its latest clock reading, its stop,
//!   its run, its kill.
//! - *judge, then observe*: a checker judges an event against the state *before* it, then
//!   feeds the event to its ledger or desk.
//! - *incarnation*: a replica's worker from its start, or from `Restarted`, to the next
//!   `Restarted`; a desk forgets everything at `Restarted`.

use leasesim_invariants::{PerReplica, Ring};

use crate::events::{
    Answer, Applied, EPOCH_MS, Event, EventKind, Failure, Note, OutcomeView, ReplicaId, Request,
    Stamped, StatusView,
};

/// A stamped event of the system.
pub type Stamp = Stamped<Event>;

/// The store's clock at an event.
pub fn store_ms(event: &Stamp) -> u64 {
    EPOCH_MS + event.at_ms
}

/// A claim as the ledger saw the store set it.
#[derive(Clone, Debug)]
pub struct ClaimSeen {
    pub token: u64,
    /// On the store's clock.
    pub until_ms: u64,
    pub replica: ReplicaId,
    /// The call that set it.
    pub call: u64,
    pub event: Stamp,
}

/// One reservation, as the ledger follows it.
#[derive(Clone, Debug)]
pub struct HoldSeen {
    pub hold_until_ms: u64,
    pub status: StatusView,
    pub malformed: bool,
    pub parked: bool,
    pub placed: Stamp,
    /// The event that moved it out of held.
    pub changed: Option<Stamp>,
    /// The latest claim the store set, until a release freed it.
    pub claim: Option<ClaimSeen>,
}

impl HoldSeen {
    /// The claim, if it is still live at store time `now_ms`.
    pub fn live_claim(&self, now_ms: u64) -> Option<&ClaimSeen> {
        self.claim.as_ref().filter(|claim| claim.until_ms > now_ms)
    }
}

/// Reservations per chunk of the ledger.
const CHUNK: usize = 64;

/// The store side (see the module docs).
///
/// Holds live in chunks of 64 that never move once allocated: following one more
/// reservation never copies the ones already followed (a growing `Vec` of holds copied every
/// hold at each doubling, ~3 % of an `expiry-steady` seed, three ledgers a run).
#[derive(Debug, Default)]
pub struct Ledger {
    /// Reservation `id` lives at `chunks[id / CHUNK][id % CHUNK]`.
    chunks: Vec<Box<[Option<HoldSeen>]>>,
    /// One past the highest id placed (0: none yet).
    len: usize,
}

impl Ledger {
    /// One past the highest reservation id placed so far (0: none yet).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Has the ledger seen no reservation yet?
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, id: u32) -> Option<&HoldSeen> {
        let index = id as usize;
        self.chunks.get(index / CHUNK)?[index % CHUNK].as_ref()
    }

    fn get_mut(&mut self, id: u32) -> Option<&mut HoldSeen> {
        let index = id as usize;
        self.chunks.get_mut(index / CHUNK)?[index % CHUNK].as_mut()
    }

    /// Every reservation followed, by id.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &HoldSeen)> {
        self.chunks
            .iter()
            .flat_map(|chunk| chunk.iter())
            .enumerate()
            .filter_map(|(id, hold)| Some((u32::try_from(id).ok()?, hold.as_ref()?)))
    }

    fn place(&mut self, id: u32, hold_until_ms: u64, malformed: bool, event: &Stamp) {
        let index = id as usize;
        while self.chunks.len() <= index / CHUNK {
            self.chunks.push(vec![None; CHUNK].into_boxed_slice());
        }
        self.len = self.len.max(index + 1);
        self.chunks[index / CHUNK][index % CHUNK] = Some(HoldSeen {
            hold_until_ms,
            status: StatusView::Held,
            malformed,
            parked: false,
            placed: event.clone(),
            changed: None,
            claim: None,
        });
        // invariant: a placed hold is found under its id, within the ledger's length.
        debug_assert!(self.get(id).is_some() && index < self.len);
    }

    fn settle(&mut self, id: u32, to: StatusView, event: &Stamp) {
        if let Some(hold) = self.get_mut(id)
            && hold.status != to
        {
            hold.status = to;
            hold.changed = Some(event.clone());
        }
    }

    fn claim(&mut self, id: u32, token: u64, until_ms: u64, call: u64, event: &Stamp) {
        let Some(replica) = event.event.replica else {
            return;
        };
        if let Some(hold) = self.get_mut(id) {
            hold.claim = Some(ClaimSeen {
                token,
                until_ms,
                replica,
                call,
                event: event.clone(),
            });
        }
    }

    /// Takes in one event (judge it first).
    pub fn observe(&mut self, event: &Stamp) {
        match event.event.kind {
            EventKind::Note(Note::Placed {
                id,
                hold_until_ms,
                malformed,
            }) => self.place(id, hold_until_ms, malformed, event),
            EventKind::Note(Note::Consumed { id, .. }) => {
                self.settle(id, StatusView::Consumed, event);
            }
            EventKind::Applied { call, applied } => self.applied(call, applied, event),
            _ => {}
        }
    }

    fn applied(&mut self, call: u64, applied: Applied, event: &Stamp) {
        match applied {
            Applied::Expired { id, .. } | Applied::ExpiredById { id, .. } => {
                self.settle(id, StatusView::Expired, event);
            }
            Applied::Claimed {
                ids,
                token,
                until_ms,
            } => {
                for &id in ids.as_slice() {
                    self.claim(id, token, until_ms, call, event);
                }
            }
            Applied::ClaimWritten {
                id,
                token,
                until_ms,
                ..
            } => self.claim(id, token, until_ms, call, event),
            Applied::Released {
                id, freed: true, ..
            }
            | Applied::ReleasedAny {
                id, freed: Some(_), ..
            } => {
                if let Some(hold) = self.get_mut(id) {
                    hold.claim = None;
                }
            }
            Applied::Parked { id } => {
                if let Some(hold) = self.get_mut(id) {
                    hold.parked = true;
                }
            }
            _ => {}
        }
    }
}

/// Is this transition answer a transient failure (worth another attempt)?
pub fn is_transient(answer: &Answer) -> bool {
    matches!(
        answer,
        Answer::Failed(Failure::Rejected | Failure::Timeout | Failure::StoreTimeout)
    )
}

/// Is this transition answer a state conflict?
pub fn is_conflict(answer: &Answer) -> bool {
    matches!(
        answer,
        Answer::Expire(OutcomeView::AlreadyDone | OutcomeView::NotEligible)
    )
}

/// One reservation a replica was answered as claimed and has not sent a release for.
#[derive(Clone, Debug)]
pub struct Claimed {
    pub id: u32,
    pub token: u64,
    /// The call whose answer claimed it (a claim, or a claim write).
    pub claim_call: u64,
    pub answered: Stamp,
    /// The first clock reading of the replica after that answer.
    pub first_seen_ms: Option<u64>,
    /// Transition calls sent for it under this claim.
    pub attempts: u32,
    /// The latest transition answer, with its event.
    pub last_answer: Option<(Answer, Stamp)>,
    /// The first pause started after the latest transition answer: its length and event.
    pub pause: Option<(u64, Stamp)>,
    /// The dead-letter call sent for it.
    pub letter: Option<Stamp>,
}

/// How the replica's latest poll ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollEnd {
    /// It claimed something.
    Claimed,
    /// It answered nothing, or failed.
    Idle,
}

/// The worker side of one replica (see the module docs).
#[derive(Debug, Default)]
pub struct Desk {
    pub calls: Vec<(u64, Request, Stamp)>,
    pub claimed: Vec<Claimed>,
    /// Reservations answered by a read of due ids and not yet claimed (read-then-write).
    pub read: Vec<u32>,
    pub last_clock_ms: Option<u64>,
    pub stop: Option<Stamp>,
    pub run: Option<Stamp>,
    pub killed: Option<Stamp>,
    /// The latest poll's end and its event, and the first pause started after it.
    pub poll: Option<(PollEnd, Stamp)>,
    pub poll_pause: Option<(u64, Stamp)>,
    /// The replica's last events, for context.
    pub recent: Ring<Event, 4>,
}

impl Desk {
    pub fn claimed(&self, id: u32) -> Option<&Claimed> {
        self.claimed.iter().find(|held| held.id == id)
    }

    fn claimed_mut(&mut self, id: u32) -> Option<&mut Claimed> {
        self.claimed.iter_mut().find(|held| held.id == id)
    }

    /// The request of call `call`, if it is in flight.
    pub fn request(&self, call: u64) -> Option<&(u64, Request, Stamp)> {
        self.calls.iter().find(|(sent, _, _)| *sent == call)
    }

    /// Takes in one event of this replica (judge it first).
    pub fn observe(&mut self, event: &Stamp) {
        match event.event.kind {
            EventKind::Call { call, request } => self.sent(call, request, event),
            EventKind::Answered { call, answer, .. } => self.answered(call, answer, event),
            EventKind::ClockRead { now_ms } => {
                self.last_clock_ms = Some(now_ms);
                for held in self
                    .claimed
                    .iter_mut()
                    .filter(|h| h.first_seen_ms.is_none())
                {
                    held.first_seen_ms = Some(now_ms);
                }
            }
            EventKind::TimerSet { duration_ms } => self.paused(duration_ms, event),
            EventKind::StopCalled => self.stop = Some(event.clone()),
            EventKind::Restarted => *self = Desk::default(),
            EventKind::Note(Note::RunStarted { .. }) => self.run = Some(event.clone()),
            EventKind::Note(Note::RunEnded { .. }) => self.run = None,
            EventKind::Note(Note::Killed) => {
                self.killed = Some(event.clone());
                self.run = None;
                self.claimed.clear();
                self.calls.clear();
                self.poll = None;
            }
            _ => {}
        }
        self.recent.push(event);
    }

    fn paused(&mut self, duration_ms: u64, event: &Stamp) {
        let pause = Some((duration_ms, event.clone()));
        for held in &mut self.claimed {
            if held.last_answer.is_some() && held.pause.is_none() {
                held.pause.clone_from(&pause);
            }
        }
        if self.poll.is_some() && self.poll_pause.is_none() {
            self.poll_pause = pause;
        }
    }

    fn sent(&mut self, call: u64, request: Request, event: &Stamp) {
        self.calls.push((call, request, event.clone()));
        match request {
            Request::Release { id, .. } | Request::ReleaseAny { id } => {
                self.claimed.retain(|held| held.id != id);
            }
            Request::Expire { id, .. } | Request::ExpireById { id } => {
                if let Some(held) = self.claimed_mut(id) {
                    held.attempts += 1;
                    held.pause = None;
                }
            }
            Request::DeadLetter { letter } => {
                if let Some(held) = self.claimed_mut(letter.id) {
                    held.letter = Some(event.clone());
                }
            }
            Request::Claim { .. } | Request::ReadDue { .. } => {
                self.poll = None;
                self.poll_pause = None;
                self.read.clear();
            }
            Request::WriteClaim { .. } => {}
        }
    }

    fn claim(&mut self, id: u32, token: u64, claim_call: u64, event: &Stamp) {
        self.claimed.retain(|held| held.id != id);
        self.claimed.push(Claimed {
            id,
            token,
            claim_call,
            answered: event.clone(),
            first_seen_ms: None,
            attempts: 0,
            last_answer: None,
            pause: None,
            letter: None,
        });
    }

    fn answered(&mut self, call: u64, answer: Answer, event: &Stamp) {
        let Some(index) = self.calls.iter().position(|(sent, _, _)| *sent == call) else {
            return;
        };
        let (_, request, _) = self.calls.swap_remove(index);
        match (request, answer) {
            (Request::Claim { token, .. }, Answer::Claimed { ids, .. }) => {
                for &id in ids.as_slice() {
                    self.claim(id, token, call, event);
                }
                let end = if ids.is_empty() {
                    PollEnd::Idle
                } else {
                    PollEnd::Claimed
                };
                self.poll = Some((end, event.clone()));
            }
            (Request::Claim { .. } | Request::ReadDue { .. }, Answer::Failed(_)) => {
                self.poll = Some((PollEnd::Idle, event.clone()));
            }
            (Request::ReadDue { .. }, Answer::Due(ids)) => {
                self.read = ids.as_slice().to_vec();
                let end = if ids.is_empty() {
                    PollEnd::Idle
                } else {
                    PollEnd::Claimed
                };
                self.poll = Some((end, event.clone()));
            }
            (Request::WriteClaim { id, token, .. }, Answer::Written) => {
                self.claim(id, token, call, event);
            }
            (request, answer) if request.is_expire() => {
                let id = request.id().expect("a transition names its reservation");
                if let Some(held) = self.claimed_mut(id) {
                    held.last_answer = Some((answer, event.clone()));
                    held.pause = None;
                }
            }
            _ => {}
        }
    }
}

/// One desk per replica.
pub type Desks = PerReplica<Desk>;

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn placed(seq: u64, id: u32) -> Stamp {
        let note = Note::Placed {
            id,
            hold_until_ms: 1_000 + u64::from(id),
            malformed: false,
        };
        Stamped {
            seq,
            at_ms: seq,
            event: Event {
                replica: None,
                kind: EventKind::Note(note),
            },
        }
    }

    /// Ids on both sides of chunk boundaries, out of order and with gaps: the ledger finds
    /// every placed hold under its id and no other, lists them by id, and counts room up to the
    /// highest id, as a map of id to hold does.
    #[test]
    fn holds_are_found_by_id_across_chunks() {
        let ids = [5, 0, 63, 64, 200, 127, 128, 64, 191, 192];
        let mut ledger = Ledger::default();
        let mut reference = BTreeMap::new();
        for (seq, id) in (0u64..).zip(ids) {
            ledger.observe(&placed(seq, id));
            reference.insert(id, seq);
            let found = |id: u32| ledger.get(id).map(|hold| hold.placed.seq);
            for probe in 0..300 {
                assert_eq!(found(probe), reference.get(&probe).copied(), "id {probe}");
            }
            let listed: Vec<(u32, u64)> = ledger.iter().map(|(id, h)| (id, h.placed.seq)).collect();
            let expected: Vec<(u32, u64)> = reference.iter().map(|(&id, &seq)| (id, seq)).collect();
            assert_eq!(listed, expected);
            let highest = reference.keys().next_back().copied().unwrap_or_default();
            assert_eq!(ledger.len(), highest as usize + 1);
        }
        // A hold in a later chunk changes under its own id only (`get_mut`).
        let consumed = |id: u32| Stamped {
            seq: 100 + u64::from(id),
            at_ms: 100,
            event: Event {
                replica: None,
                kind: EventKind::Note(Note::Consumed {
                    id,
                    hold_until_ms: 1_000 + u64::from(id),
                }),
            },
        };
        for id in [191, 127] {
            ledger.observe(&consumed(id));
        }
        for (id, hold) in ledger.iter() {
            let expected = match id {
                191 | 127 => StatusView::Consumed,
                _ => StatusView::Held,
            };
            assert_eq!(hold.status, expected, "id {id}");
        }
        assert_eq!(ledger.iter().count(), 9);
    }
}
