//! Facts every holder-lock checker may read, kept once per run instead of once per checker.
//!
//! Terminology:
//! - *attempts*: every replica's open attempt and the call book ([`Attempts`]).
//! - *claim model*: the claim key as the store's applies and its `Forgot` notes describe it
//!   ([`ClaimModel`]), each entry attributed to an attempt through the call book; *change*:
//!   what the event being judged did to it (an `Applied`, or a `Forgot` of the claim key).
//! - *before view*: as of the events before the one being judged; *after view*: including it.
//!
//! Ten checkers read attempts (five also the claim model); each would otherwise keep its own,
//! fed only the kinds of event it reads. Both views here see every event. A checker that
//! judges an event before taking it in reads the before view, one that takes it in first the
//! after view. Where a checker's own feed would skip a kind (job notes, for the token and
//! release checkers), the fields that kind moves (an attempt's job) are ones that checker never
//! reads; the property test below holds every view against private copies fed as each checker
//! would feed its own.

use crate::HolderLock;
use crate::events::{Event, EventKind, Key, Note, Stamped};

use super::track::{Attempts, Change, ClaimModel};

/// The attempts and the claim model, before and after the event being judged.
#[derive(Debug, Default)]
pub struct Facts {
    before: Attempts,
    after: Attempts,
    claims_before: ClaimModel,
    claims_after: ClaimModel,
    /// What the event being judged did to the claim key (an `Applied` only).
    change: Option<Change>,
}

impl Facts {
    /// Attempts and call book as of the events before the one being judged.
    pub(crate) fn before(&self) -> &Attempts {
        &self.before
    }

    /// Attempts and call book including the event being judged.
    pub(crate) fn after(&self) -> &Attempts {
        &self.after
    }

    /// The claim key as of the events before the one being judged.
    pub(crate) fn claims_before(&self) -> &ClaimModel {
        &self.claims_before
    }

    /// The claim key including the event being judged.
    pub(crate) fn claims_after(&self) -> &ClaimModel {
        &self.claims_after
    }

    /// What the event being judged did to the claim key, if it was an `Applied` that changed
    /// it.
    pub(crate) fn change(&self) -> Option<&Change> {
        self.change.as_ref()
    }
}

impl leasesim_invariants::Facts<HolderLock> for Facts {
    fn enter(&mut self, event: &Stamped<Event>) {
        // invariant: a change is the judged event's only; `leave` forgot the last one.
        debug_assert!(self.change.is_none());
        if let Some(replica) = event.event.replica {
            // invariant: between events the two views agree.
            debug_assert!(self.before.agree_on(&self.after, replica));
        }
        match event.event.kind {
            // An apply moves the claim model only; its attempt is the one that sent the call.
            EventKind::Applied { call, applied } => {
                let by = self.after.attempt_of(call);
                self.change = self.claims_after.applied(event, applied, by);
            }
            // The store forgetting the claim key moves the claim model only.
            EventKind::Note(Note::Forgot {
                key: Key::Claim,
                cause,
                ..
            }) => self.change = self.claims_after.forgot(event, cause),
            _ => self.after.observe(event),
        }
    }

    fn leave(&mut self, event: &Stamped<Event>) {
        match event.event.kind {
            // The apply changed no attempt, so the before view's attribution is the after
            // view's: the before model becomes the after one.
            EventKind::Applied { .. }
            | EventKind::Note(Note::Forgot {
                key: Key::Claim, ..
            }) => self.claims_before.clone_from(&self.claims_after),
            _ => self.before.observe(event),
        }
        self.change = None;
        if let Some(replica) = event.event.replica {
            // invariant: the before view has caught up with the after view.
            debug_assert!(self.before.agree_on(&self.after, replica));
        }
    }
}

/// The shared views against private copies fed as each checker would feed its own, and
/// the claim model and the attempts against a reference written apart from them.
///
/// Terminology:
/// - *feed*: the kinds of event one checker read before the facts were shared (its `wants`
///   then); its private attempts took in those events only.
/// - *reference*: the claim key as a log of every state it went through (`Reference`), fed
///   every event, with calls attributed to attempts by its own plain book. It shares no code
///   with `track`: the claim model (what the key holds, what a failover undoes, the ghosts
///   of forgotten claims, the change an event made) is compared with it before and after
///   every event, and so are the attempts (each open attempt's create, won create, lost
///   renewal and release, worked out by looking back over the history, and the book).
///   The private copies run `track`'s own code, so only the reference catches a wrong step.
/// - *summary*: what a view tells a checker, as plain values (events by seq). An attempt's
///   job fields are compared only for feeds that took job notes in: a checker fed without
///   them never read them.
/// - Streams keep call ids unique (a call's id is its seq), as the world does; answers and
///   applies name a call drawn from the stream so far.
#[cfg(test)]
mod tests {
    use leasesim_events::{NetFailure, ReplicaId, mask};
    use leasesim_invariants::Facts as _;
    use proptest::prelude::*;

    use std::collections::BTreeMap;

    use super::*;
    use crate::checkers::track::{AttemptRef, ClaimRecord};
    use crate::events::{Answer, Applied, EPOCH_MS, EndKind, Forgetting, Held, Note, Op, Phase};
    use crate::events::{ReleaseKind, Request, notes};

    const CLAIM_EVENTS: u32 = mask::CALL
        | mask::ANSWERED
        | mask::APPLIED
        | mask::RESTARTED
        | notes::ATTEMPTS
        | notes::JOB;
    const WORKER_SIDE: u32 = mask::CALL | mask::ANSWERED | mask::RESTARTED | notes::ATTEMPTS;

    /// Every checker's feed before the facts were shared (job fields count where it has job
    /// notes).
    const FEEDS: [(&str, u32); 6] = [
        (
            "delete-own-claim, no-third-worker, job-under-claim",
            CLAIM_EVENTS,
        ),
        (
            "claim-kept",
            CLAIM_EVENTS | mask::PHASE | mask::PAUSED | notes::EXPIRED,
        ),
        ("effects-under-claim", CLAIM_EVENTS | mask::STOP_CALLED),
        ("fresh-token, own-token, release-reported", WORKER_SIDE),
        ("release-on-exit", WORKER_SIDE | notes::JOB),
        ("stop-joins", WORKER_SIDE | mask::STOP_RESOLVED),
    ];

    /// One private copy: attempts fed one feed's events.
    #[derive(Default)]
    struct Private {
        attempts: Attempts,
    }

    impl Private {
        fn feed(&mut self, event: &Stamped<Event>) {
            if !matches!(event.event.kind, EventKind::Applied { .. }) {
                self.attempts.observe(event);
            }
        }
    }

    /// A claim entry as the reference keeps it: token, attempt, the seq of the apply that
    /// made it, lifetime end (store clock).
    type Rec = (u64, Option<AttemptRef>, u64, u64);

    fn live(rec: Option<Rec>, at_ms: u64) -> Option<Rec> {
        rec.filter(|r| EPOCH_MS + at_ms < r.3)
    }

    /// The claim key written plainly (see the module docs).
    #[derive(Default)]
    struct Reference {
        /// Every state of the key, oldest first; the last is what it holds.
        states: Vec<Option<Rec>>,
        /// The last state came from a request's write (a failover may go back one state).
        undoable: bool,
        /// Forgotten claims with the seq of the note, never pruned.
        ghosts: Vec<(Rec, u64)>,
        /// Per replica, its open attempt.
        open: BTreeMap<u16, AttemptRef>,
        /// Per call sent and not answered, the attempt that sent it.
        calls: BTreeMap<u64, Option<AttemptRef>>,
        /// What the last event did, as `change` summarises one.
        change: Option<(u8, Option<u64>, Option<AttemptRef>)>,
    }

    impl Reference {
        fn current(&self) -> Option<Rec> {
            self.states.last().copied().flatten()
        }

        fn write(&mut self, state: Option<Rec>) {
            self.states.push(state);
            self.undoable = true;
        }

        fn feed(&mut self, event: &Stamped<Event>) {
            self.change = None;
            let replica = event.event.replica.map(|r| r.0);
            match event.event.kind {
                EventKind::Note(Note::AttemptStarted { attempt }) => {
                    if let Some(r) = replica {
                        let id = AttemptRef {
                            replica: ReplicaId(r),
                            number: attempt,
                            seq: event.seq,
                        };
                        self.open.insert(r, id);
                    }
                }
                EventKind::Note(Note::AttemptEnded { .. }) | EventKind::Restarted => {
                    replica.map(|r| self.open.remove(&r));
                }
                EventKind::Call { call, .. } => {
                    if let Some(r) = replica {
                        self.calls.insert(call, self.open.get(&r).copied());
                    }
                }
                EventKind::Answered { call, .. } => {
                    self.calls.remove(&call);
                }
                EventKind::Applied { call, applied } => self.applied(event, call, applied),
                EventKind::Note(Note::Forgot {
                    key: Key::Claim,
                    cause,
                    ..
                }) => self.forgot(event, cause),
                _ => {}
            }
        }

        fn applied(&mut self, event: &Stamped<Event>, call: u64, applied: Applied) {
            let by = self.calls.get(&call).copied().flatten();
            let before = self.current();
            let was_live = live(before, event.at_ms);
            match applied {
                Applied::Created {
                    key: Key::Claim,
                    token,
                    expires_at_ms,
                    ..
                } => {
                    self.write(Some((token, by, event.seq, expires_at_ms)));
                    self.change = Some((0, before.map(|r| r.2), None));
                }
                Applied::Renewed {
                    key: Key::Claim,
                    expires_at_ms,
                    ..
                } => {
                    if let Some((token, attempt, made, _)) = before {
                        self.write(Some((token, attempt, made, expires_at_ms)));
                        self.change = Some((1, None, None));
                    }
                }
                Applied::Deleted {
                    key: Key::Claim, ..
                } => {
                    self.write(None);
                    self.change = was_live.map(|r| (2, Some(r.2), by));
                }
                Applied::Written {
                    key: Key::Claim,
                    token,
                    expires_at_ms,
                    ..
                } => {
                    self.write(Some((token, by, event.seq, expires_at_ms)));
                    self.change = Some(match was_live {
                        Some(r) => (2, Some(r.2), by),
                        None => (0, None, None),
                    });
                }
                _ => {}
            }
        }

        fn forgot(&mut self, event: &Stamped<Event>, cause: Forgetting) {
            let lost = live(self.current(), event.at_ms);
            let back = self.states.len().checked_sub(2).map(|i| self.states[i]);
            let restored = match (cause, self.undoable) {
                (Forgetting::Failover, true) => live(back.flatten(), event.at_ms),
                _ => None,
            };
            self.states.push(restored);
            self.undoable = false;
            let Some(lost) = lost else {
                return;
            };
            self.change = Some((3, Some(lost.2), None));
            let kept = restored.is_some_and(|r| r.2 == lost.2 && r.3 >= lost.3);
            if !kept {
                self.ghosts.push((lost, event.seq));
            }
        }

        /// The ghosts whose claim would still be live at `at_ms`, sorted.
        fn ghosts_at(&self, at_ms: u64) -> Vec<(Rec, u64)> {
            let mut ghosts: Vec<_> = self
                .ghosts
                .iter()
                .filter(|(rec, _)| EPOCH_MS + at_ms < rec.3)
                .copied()
                .collect();
            ghosts.sort_unstable_by_key(|(rec, seq)| (*seq, rec.2));
            ghosts
        }
    }

    /// The claim model's answers in the reference's terms: what the key holds, and the live
    /// ghosts at `at_ms`.
    fn model_view(model: &ClaimModel, at_ms: u64) -> (Option<Rec>, Vec<(Rec, u64)>) {
        let current = record(model.current());
        let mut ghosts: Vec<_> = model
            .ghosts_at(at_ms)
            .filter_map(|g| record(Some(&g.record)).map(|rec| (rec, g.forgot.seq)))
            .collect();
        ghosts.sort_unstable_by_key(|(rec, seq)| (*seq, rec.2));
        (current, ghosts)
    }

    type OpenSummary = (
        AttemptRef,
        u64,
        Option<(u64, u64)>,
        Option<u64>,
        Option<u64>,
        Option<u64>,
    );
    type JobSummary = (Option<u64>, bool, bool);

    #[derive(Debug, PartialEq, Eq)]
    struct Summary {
        open: Vec<Option<OpenSummary>>,
        jobs: Vec<Option<JobSummary>>,
        book: Vec<(u64, Option<AttemptRef>, Request, u64)>,
    }

    fn summary(attempts: &Attempts, with_jobs: bool) -> Summary {
        let replicas = (0..3).map(ReplicaId);
        let open = replicas.clone().map(|replica| attempts.open(replica));
        let seq = |event: Option<&Stamped<Event>>| event.map(|event| event.seq);
        let mut book: Vec<_> = attempts
            .calls()
            .iter()
            .map(|b| (b.call, b.attempt, b.request, b.sent.seq))
            .collect();
        book.sort_unstable_by_key(|entry| entry.0);
        Summary {
            open: open
                .clone()
                .map(|open| {
                    open.map(|o| {
                        let create = o.create.as_ref().map(|(token, at)| (*token, at.seq));
                        let (won, lost) = (seq(o.won.as_ref()), seq(o.lost.as_ref()));
                        (
                            o.id,
                            o.started.seq,
                            create,
                            won,
                            lost,
                            seq(o.released.as_ref()),
                        )
                    })
                })
                .collect(),
            jobs: open
                .map(|open| {
                    let job = |o: &super::super::track::Open| {
                        (seq(o.job.as_ref()), o.job_over, o.job_running())
                    };
                    open.filter(|_| with_jobs).map(job)
                })
                .collect(),
            book,
        }
    }

    fn record(record: Option<&ClaimRecord>) -> Option<(u64, Option<AttemptRef>, u64, u64)> {
        record.map(|r| (r.token, r.attempt, r.made.seq, r.expires_at_ms))
    }

    fn change(change: Option<&Change>) -> Option<(u8, Option<u64>, Option<AttemptRef>)> {
        change.map(|change| match change {
            Change::Made { previous } => (0, previous.as_ref().map(|r| r.made.seq), None),
            Change::Renewed => (1, None, None),
            Change::Removed { removed, by } => (2, Some(removed.made.seq), *by),
            // What a forgetting restored is what the key holds after it (compared apart).
            Change::Forgot { lost, .. } => (3, Some(lost.made.seq), None),
        })
    }

    /// The attempts as the reference knows them: each replica's open attempt with what its
    /// calls and their first answers did, worked out by looking back over `history` (every
    /// event so far), and the book of calls sent and not answered.
    fn reference_attempts(reference: &Reference, history: &[Stamped<Event>]) -> Summary {
        let call_event = |call: u64| {
            history.iter().find_map(|e| match e.event.kind {
                EventKind::Call { call: c, request } if c == call => Some((request, e)),
                _ => None,
            })
        };
        let book = reference
            .calls
            .iter()
            .map(|(&call, &attempt)| {
                let (request, sent) = call_event(call).expect("a booked call was sent");
                (call, attempt, request, sent.seq)
            })
            .collect();
        let open = (0..3)
            .map(|r| reference.open.get(&r).map(|&id| open_attempt(history, id)))
            .collect();
        Summary {
            open,
            jobs: vec![None; 3],
            book,
        }
    }

    /// One open attempt: its create of the claim, its won create, its lost renewal and its
    /// first release, from the calls its replica sent since it started and their first
    /// answers.
    fn open_attempt(history: &[Stamped<Event>], id: AttemptRef) -> OpenSummary {
        let sent: Vec<(u64, Request, u64)> = history
            .iter()
            .filter(|e| e.seq > id.seq && e.event.replica == Some(id.replica))
            .filter_map(|e| match e.event.kind {
                EventKind::Call { call, request } => Some((call, request, e.seq)),
                _ => None,
            })
            .collect();
        // The first answer to each call is the one the worker read; later ones name nothing.
        let first_answer = |call: u64| {
            history.iter().find_map(|e| match e.event.kind {
                EventKind::Answered {
                    call: c, answer, ..
                } if c == call => Some((answer, e.seq)),
                _ => None,
            })
        };
        let answers = |claim_op: fn(&Request) -> bool, answered: fn(&Answer) -> bool| {
            let of_claim = sent.iter().filter(move |(_, request, _)| claim_op(request));
            let mut seqs: Vec<u64> = of_claim
                .filter_map(|&(call, ..)| first_answer(call))
                .filter(|(answer, _)| answered(answer))
                .map(|(_, seq)| seq)
                .collect();
            seqs.sort_unstable();
            seqs
        };
        let create = sent.iter().find_map(|&(_, request, seq)| match request {
            Request::Create {
                key: Key::Claim,
                token,
                ..
            } => Some((token, seq)),
            _ => None,
        });
        let creates = |r: &Request| {
            matches!(
                r,
                Request::Create {
                    key: Key::Claim,
                    ..
                }
            )
        };
        let renews = |r: &Request| {
            matches!(
                r,
                Request::Renew {
                    key: Key::Claim,
                    ..
                }
            )
        };
        let won = answers(creates, |a| matches!(a, Answer::Created))
            .last()
            .copied();
        let refused =
            |a: &Answer| matches!(a, Answer::NotHolder | Answer::Absent | Answer::Failed(_));
        let lost = answers(renews, refused).first().copied();
        let released = sent.iter().find_map(|&(_, request, seq)| {
            let gives_back = matches!(
                request,
                Request::DeleteIfHolder { .. } | Request::Delete { .. } | Request::Get { .. }
            );
            gives_back.then_some(seq)
        });
        (id, id.seq, create, won, lost, released)
    }

    /// One raw step of an arbitrary stream.
    #[derive(Clone, Debug)]
    enum Step {
        Started(u16, u32),
        Ended(u16),
        Restarted(u16),
        Call(u16, u8, u8, u64),
        Answered(u16, usize, u8, u64),
        Applied(u16, usize, u8, u64, u64),
        Job(u16, u8),
        Stop(u16, bool),
        Paused(u16, u64),
        Healed,
        /// The store forgets a key (a world note): cause, key.
        Forgot(u8, u8),
        /// A kind no view reacts to: an expiry note, a rejected call, a lost reply, clock and
        /// task events, a failover's `Reverted` note.
        Other(u16, u8, usize),
    }

    fn step() -> impl Strategy<Value = Step> {
        let r = 0u16..3;
        prop_oneof![
            2 => (r.clone(), 1u32..4).prop_map(|(r, n)| Step::Started(r, n)),
            1 => r.clone().prop_map(Step::Ended),
            1 => r.clone().prop_map(Step::Restarted),
            4 => (r.clone(), 0u8..6, 0u8..2, 1u64..4).prop_map(|(r, o, k, t)| Step::Call(r, o, k, t)),
            3 => (r.clone(), any::<usize>(), 0u8..9, 1u64..4)
                .prop_map(|(r, c, a, t)| Step::Answered(r, c, a, t)),
            3 => (r.clone(), any::<usize>(), 0u8..5, 1u64..4, 1u64..400)
                .prop_map(|(r, c, a, t, d)| Step::Applied(r, c, a, t, d)),
            2 => (r.clone(), 0u8..4).prop_map(|(r, j)| Step::Job(r, j)),
            1 => (r.clone(), any::<bool>()).prop_map(|(r, s)| Step::Stop(r, s)),
            1 => (r.clone(), 1u64..200).prop_map(|(r, d)| Step::Paused(r, d)),
            1 => Just(Step::Healed),
            2 => (0u8..3, 0u8..3).prop_map(|(c, k)| Step::Forgot(c, k)),
            2 => (r, 0u8..10, any::<usize>()).prop_map(|(r, o, c)| Step::Other(r, o, c)),
        ]
    }

    fn request(op: u8, key: u8, token: u64) -> Request {
        let key = if key == 0 { Key::Claim } else { Key::Holder };
        let lifetime_ms = 100;
        match op {
            0 => Request::Create {
                key,
                token,
                lifetime_ms,
            },
            1 => Request::Renew {
                key,
                token,
                lifetime_ms,
            },
            2 => Request::DeleteIfHolder { key, token },
            3 => Request::Get { key },
            4 => Request::Delete { key },
            _ => Request::Set {
                key,
                token,
                lifetime_ms,
            },
        }
    }

    fn answer(pick: u8, token: u64) -> Answer {
        match pick {
            0 => Answer::Created,
            1 => Answer::Exists,
            2 => Answer::Renewed,
            3 => Answer::Deleted,
            4 => Answer::NotHolder,
            5 => Answer::Absent,
            6 => Answer::Value(token),
            7 => Answer::Written,
            _ => Answer::Failed(NetFailure::Timeout),
        }
    }

    fn applied(pick: u8, token: u64, at_ms: u64, by: ReplicaId) -> Applied {
        let (key, expires_at_ms) = (Key::Claim, EPOCH_MS + at_ms + 100);
        match pick {
            0 => Applied::Created {
                key,
                token,
                expires_at_ms,
                took_over: None,
            },
            1 => Applied::Renewed {
                key,
                token,
                expires_at_ms,
            },
            2 => Applied::Deleted {
                key,
                removed: Held { token, by },
            },
            3 => Applied::Written {
                key,
                token,
                expires_at_ms,
                replaced: None,
            },
            _ => Applied::NotDeleted { key, held: None },
        }
    }

    fn note(job: u8) -> Note {
        match job {
            0 => Note::JobStarted {
                duration_ms: 10,
                steps: 2,
            },
            1 => Note::JobStep { step: 1 },
            2 => Note::JobFinished { steps: 2 },
            _ => Note::JobFailed { step: 1 },
        }
    }

    /// An event of a kind the views ignore (but the checkers' feeds may include).
    fn other_kind(pick: u8, call: u64, op: Op, by: ReplicaId) -> EventKind {
        let held = Held { token: 1, by };
        match pick {
            0 => EventKind::Note(Note::Expired {
                key: Key::Claim,
                held,
            }),
            1 => EventKind::Rejected { call, op },
            2 => EventKind::ReplyLost { call },
            3 => EventKind::ClockRead { now_ms: EPOCH_MS },
            4 => EventKind::TimerSet { duration_ms: 5 },
            5 => EventKind::Resumed,
            6 => EventKind::ClockJumped { by_ms: -2 },
            8 => EventKind::RequestLost { call, op },
            7 => EventKind::Note(Note::Reverted {
                key: Key::Claim,
                held,
                expires_at_ms: EPOCH_MS,
            }),
            _ => EventKind::TaskStarted { task: 1, name: "t" },
        }
    }

    /// The event of a world step.
    fn world_kind(step: &Step) -> EventKind {
        match *step {
            Step::Forgot(cause, key) => {
                // Mostly the claim key: the holder record moves no view.
                let key = if key == 0 { Key::Holder } else { Key::Claim };
                let cause = Forgetting::ALL[usize::from(cause)];
                let lost = None;
                EventKind::Note(Note::Forgot { key, cause, lost })
            }
            _ => EventKind::Phase(Phase::Liveness),
        }
    }

    /// A call for an answer, apply or other event of replica `r` to name: half the picks one
    /// of the last four calls `r` sent (so that one attempt's calls get several answers),
    /// half any call sent so far.
    fn pick_call(calls: &[(u64, Request, u16)], c: usize, r: u16) -> Option<(u64, Request)> {
        let own: Vec<_> = calls.iter().filter(|call| call.2 == r).collect();
        let recent = own
            .len()
            .saturating_sub(1 + (c / 2) % own.len().clamp(1, 4));
        let call = match c % 2 {
            0 => own.get(recent).copied(),
            _ => calls.get((c / 2) % calls.len().max(1)),
        };
        call.map(|&(call, request, _)| (call, request))
    }

    /// The events of `steps`, with unique seqs, rising times and call ids equal to seqs.
    fn stream(steps: &[Step]) -> Vec<Stamped<Event>> {
        let mut calls: Vec<(u64, Request, u16)> = Vec::new();
        let mut events = Vec::new();
        let mut at_ms = 0;
        for (index, step) in steps.iter().enumerate() {
            let seq = index as u64 + 1;
            at_ms += 7;
            let pick = |c: usize, r: u16| pick_call(&calls, c, r);
            let (replica, kind) = match *step {
                Step::Started(r, attempt) => (r, EventKind::Note(Note::AttemptStarted { attempt })),
                Step::Ended(r) => {
                    let end = Note::AttemptEnded {
                        attempt: 1,
                        end: EndKind::JobDone,
                        release: ReleaseKind::Deleted,
                        claims_gone: 0,
                        renewals: 0,
                    };
                    (r, EventKind::Note(end))
                }
                Step::Restarted(r) => (r, EventKind::Restarted),
                Step::Call(r, op, key, token) => {
                    let request = request(op, key, token);
                    calls.push((seq, request, r));
                    (r, EventKind::Call { call: seq, request })
                }
                Step::Answered(r, c, a, token) => {
                    let (call, request) = pick(c, r).unwrap_or((0, request(3, 0, 1)));
                    let (op, answer) = (request.op(), answer(a, token));
                    (r, EventKind::Answered { call, op, answer })
                }
                Step::Applied(r, c, a, token, d) => {
                    let call = pick(c, r).map_or(0, |(call, _)| call);
                    let applied = applied(a, token, at_ms + d, ReplicaId(r));
                    (r, EventKind::Applied { call, applied })
                }
                Step::Job(r, job) => (r, EventKind::Note(note(job))),
                Step::Stop(r, true) => (r, EventKind::StopCalled),
                Step::Stop(r, false) => (r, EventKind::StopResolved),
                Step::Paused(r, d) => (
                    r,
                    EventKind::Paused {
                        until_ms: at_ms + d,
                    },
                ),
                Step::Other(r, other, c) => {
                    let (call, op) = pick(c, r).map_or((0, Op::Get), |(call, q)| (call, q.op()));
                    (r, other_kind(other, call, op, ReplicaId(r)))
                }
                Step::Healed | Step::Forgot(..) => {
                    let event = Event::world(world_kind(step));
                    events.push(Stamped { seq, at_ms, event });
                    continue;
                }
            };
            let event = Event {
                replica: Some(ReplicaId(replica)),
                kind,
            };
            events.push(Stamped { seq, at_ms, event });
        }
        events
    }

    /// At every event, the before view equals each feed's private copy before the event, and
    /// the after view its copy after it; the claim model and the change equal the reference's.
    fn check(events: &[Stamped<Event>]) -> Result<(), TestCaseError> {
        let mut facts = Facts::default();
        let mut private: Vec<Private> = FEEDS.iter().map(|_| Private::default()).collect();
        let mut reference = Reference::default();
        for (index, event) in events.iter().enumerate() {
            facts.enter(event);
            let at_ms = event.at_ms;
            let expected = (reference.current(), reference.ghosts_at(at_ms));
            let before = model_view(facts.claims_before(), at_ms);
            prop_assert_eq!(before, expected, "claims before {}", event.seq);
            let expected = reference_attempts(&reference, &events[..index]);
            prop_assert_eq!(
                summary(facts.before(), false),
                expected,
                "attempts before {}",
                event.seq
            );
            reference.feed(event);
            let expected = reference_attempts(&reference, &events[..=index]);
            prop_assert_eq!(
                summary(facts.after(), false),
                expected,
                "attempts after {}",
                event.seq
            );
            let expected = (reference.current(), reference.ghosts_at(at_ms));
            let after = model_view(facts.claims_after(), at_ms);
            prop_assert_eq!(after, expected, "claims after {}", event.seq);
            prop_assert_eq!(
                change(facts.change()),
                reference.change,
                "change {}",
                event.seq
            );
            for ((name, feed), copy) in FEEDS.iter().zip(&mut private) {
                let jobs = feed & notes::JOB != 0;
                let view = |attempts: &Attempts| summary(attempts, jobs);
                let (seq, copied) = (event.seq, view(&copy.attempts));
                prop_assert_eq!(view(facts.before()), copied, "{} before {}", name, seq);
                if event.event.kind.bit() & feed != 0 {
                    copy.feed(event);
                }
                let copied = view(&copy.attempts);
                prop_assert_eq!(view(facts.after()), copied, "{} after {}", name, seq);
            }
            facts.leave(event);
        }
        Ok(())
    }

    /// What the arbitrary streams seldom make: one attempt whose two claim renewals both
    /// answer not-holder (its lost renewal is the first answer), and a create answered after
    /// a second create (its won create is the later answer).
    #[test]
    fn an_attempts_first_lost_renewal_and_last_won_create_stand() {
        let steps = [
            Step::Started(0, 1),
            Step::Call(0, 1, 0, 1),
            Step::Call(0, 1, 0, 1),
            Step::Answered(0, 0, 4, 1),
            Step::Answered(0, 2, 4, 1),
            Step::Call(0, 0, 0, 2),
            Step::Call(0, 0, 0, 3),
            Step::Answered(0, 2, 0, 2),
            Step::Answered(0, 0, 0, 3),
        ];
        let events = stream(&steps);
        let lost = |e: &Stamped<Event>| {
            matches!(
                e.event.kind,
                EventKind::Answered {
                    answer: Answer::NotHolder,
                    ..
                }
            )
        };
        // invariant: the stream is the case named (both renewals answered not-holder).
        assert_eq!(events.iter().filter(|e| lost(e)).count(), 2);
        check(&events).expect("the facts agree with the reference");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        #[test]
        fn shared_views_equal_every_checkers_private_copy(
            steps in proptest::collection::vec(step(), 0..80)
        ) {
            check(&stream(&steps))?;
        }
    }
}
