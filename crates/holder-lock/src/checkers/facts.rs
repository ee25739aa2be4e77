//! Facts every holder-lock checker may read, kept once per run instead of once per checker.
//!
//! Terminology:
//! - *attempts*: every replica's open attempt and the call book ([`Attempts`]).
//! - *claim model*: the claim key as the store's applies describe it ([`ClaimModel`]), each
//!   entry attributed to an attempt through the call book; *change*: what the event being
//!   judged did to it (an `Applied` only).
//! - *before view*: as of the events before the one being judged; *after view*: including it.
//!
//! Ten checkers used to keep attempts of their own (five also a claim model), each fed only
//! the kinds of event it reads. Both views here see every event. A checker that judged an
//! event before taking it in reads the before view, one that took it in first the after view.
//! Where a checker used to skip a kind (job notes, for the token and release checkers), the
//! fields that kind moves (an attempt's job) are ones that checker never reads; the property
//! test below holds every view against private copies fed as each checker fed its own.

use crate::HolderLock;
use crate::events::{Event, EventKind, Stamped};

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
            _ => self.after.observe(event),
        }
    }

    fn leave(&mut self, event: &Stamped<Event>) {
        match event.event.kind {
            // The apply changed no attempt, so the before view's attribution is the after
            // view's: the before model becomes the after one.
            EventKind::Applied { .. } => self.claims_before.clone_from(&self.claims_after),
            _ => self.before.observe(event),
        }
        self.change = None;
        if let Some(replica) = event.event.replica {
            // invariant: the before view has caught up with the after view.
            debug_assert!(self.before.agree_on(&self.after, replica));
        }
    }
}

/// The shared views against private copies fed as each checker used to feed its own.
///
/// Terminology:
/// - *feed*: the kinds of event one checker read before the facts were shared (its `wants`
///   then); its private attempts took in those events only, its private claim model the
///   applies among them, attributed through its own call book.
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

    use super::*;
    use crate::checkers::track::{AttemptRef, ClaimRecord};
    use crate::events::{Answer, Applied, EPOCH_MS, EndKind, Held, Key, Note, Op, Phase};
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

    /// One private copy: attempts and claim model fed one feed's events.
    #[derive(Default)]
    struct Private {
        attempts: Attempts,
        claims: ClaimModel,
        change: Option<Change>,
    }

    impl Private {
        fn feed(&mut self, event: &Stamped<Event>) {
            self.change = None;
            if let EventKind::Applied { call, applied } = event.event.kind {
                let by = self.attempts.attempt_of(call);
                self.change = self.claims.applied(event, applied, by);
            } else {
                self.attempts.observe(event);
            }
        }
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
        })
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
        /// A kind no view reacts to: an expiry note, a rejected call, a lost reply, clock and
        /// task events.
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
            2 => (r, 0u8..8, any::<usize>()).prop_map(|(r, o, c)| Step::Other(r, o, c)),
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
            _ => EventKind::TaskStarted { task: 1, name: "t" },
        }
    }

    /// The events of `steps`, with unique seqs, rising times and call ids equal to seqs.
    fn stream(steps: &[Step]) -> Vec<Stamped<Event>> {
        let mut calls: Vec<(u64, Request)> = Vec::new();
        let mut events = Vec::new();
        let mut at_ms = 0;
        for (index, step) in steps.iter().enumerate() {
            let seq = index as u64 + 1;
            at_ms += 7;
            let pick = |c: usize| calls.get(c % calls.len().max(1)).copied();
            let (replica, kind) = match *step {
                Step::Started(r, attempt) => (r, EventKind::Note(Note::AttemptStarted { attempt })),
                Step::Ended(r) => {
                    let end = Note::AttemptEnded {
                        attempt: 1,
                        end: EndKind::JobDone,
                        release: ReleaseKind::Deleted,
                        claims_gone: 0,
                    };
                    (r, EventKind::Note(end))
                }
                Step::Restarted(r) => (r, EventKind::Restarted),
                Step::Call(r, op, key, token) => {
                    let request = request(op, key, token);
                    calls.push((seq, request));
                    (r, EventKind::Call { call: seq, request })
                }
                Step::Answered(r, c, a, token) => {
                    let (call, request) = pick(c).unwrap_or((0, request(3, 0, 1)));
                    let (op, answer) = (request.op(), answer(a, token));
                    (r, EventKind::Answered { call, op, answer })
                }
                Step::Applied(r, c, a, token, d) => {
                    let call = pick(c).map_or(0, |(call, _)| call);
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
                    let (call, op) = pick(c).map_or((0, Op::Get), |(call, r)| (call, r.op()));
                    (r, other_kind(other, call, op, ReplicaId(r)))
                }
                Step::Healed => {
                    let event = Event {
                        replica: None,
                        kind: EventKind::Phase(Phase::Liveness),
                    };
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
    /// the after view (and the change) its copy after it.
    fn check(events: &[Stamped<Event>]) -> Result<(), TestCaseError> {
        let mut facts = Facts::default();
        let mut private: Vec<Private> = FEEDS.iter().map(|_| Private::default()).collect();
        for event in events {
            facts.enter(event);
            for ((name, feed), copy) in FEEDS.iter().zip(&mut private) {
                let fed = event.event.kind.bit() & feed != 0;
                let jobs = feed & notes::JOB != 0;
                let view = |attempts: &Attempts| summary(attempts, jobs);
                prop_assert_eq!(
                    view(facts.before()),
                    view(&copy.attempts),
                    "{} before {}",
                    name,
                    event.seq
                );
                let before = record(facts.claims_before().current());
                if feed & mask::APPLIED != 0 {
                    prop_assert_eq!(before, record(copy.claims.current()), "{}", name);
                }
                if fed {
                    copy.feed(event);
                }
                prop_assert_eq!(
                    view(facts.after()),
                    view(&copy.attempts),
                    "{} after {}",
                    name,
                    event.seq
                );
                if feed & mask::APPLIED != 0 {
                    let after = record(facts.claims_after().current());
                    prop_assert_eq!(after, record(copy.claims.current()), "{}", name);
                    let changed = fed.then(|| change(copy.change.as_ref())).flatten();
                    prop_assert_eq!(change(facts.change()), changed, "{}", name);
                }
            }
            facts.leave(event);
        }
        Ok(())
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
