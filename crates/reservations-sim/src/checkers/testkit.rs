//! Scripted event streams for the checkers' unit tests.
//!
//! Terminology:
//! - *script*: events written by hand in run order, each stamped with the script's current
//!   virtual time (`at`) and a sequence number; calls get fresh call ids.
//! - *correct run*: a small run every checker must accept: holds placed, claimed, expired,
//!   conflicted, retried, dead-lettered, released, stopped.

use leasesim_invariants::{Checker, Facts as _};

use super::{AnyChecker, CheckConfig, Facts, Invariant, Violation};
use crate::events::{
    Answer, Applied, ClassView, EPOCH_MS, Event, EventKind, Failure, IdList, LetterView, Note,
    OutcomeView, Phase, ReasonView, ReplicaId, ReportView, Request, Stamped, StatusView,
};

pub const R1: ReplicaId = ReplicaId(0);
pub const R2: ReplicaId = ReplicaId(1);

/// The store's clock at virtual `ms`.
pub fn store(ms: u64) -> u64 {
    EPOCH_MS + ms
}

/// A script under construction.
#[derive(Debug, Default)]
pub struct Script {
    pub events: Vec<Stamped<Event>>,
    now_ms: u64,
    next_call: u64,
}

impl Script {
    pub fn new() -> Script {
        Script::default()
    }

    /// Moves the script's clock to `ms`.
    pub fn at(&mut self, ms: u64) -> &mut Script {
        assert!(ms >= self.now_ms, "scripts go forward");
        self.now_ms = ms;
        self
    }

    fn push(&mut self, event: Event) -> u64 {
        let seq = self.events.len() as u64;
        self.events.push(Stamped {
            seq,
            at_ms: self.now_ms,
            event,
        });
        seq
    }

    pub fn world(&mut self, kind: EventKind) -> u64 {
        self.push(Event::world(kind))
    }

    pub fn on(&mut self, replica: ReplicaId, kind: EventKind) -> u64 {
        self.push(Event::of(replica, kind))
    }

    /// The sequence number of the `Call` event of `call`.
    pub fn call_seq(&self, call: u64) -> u64 {
        let sent = |e: &&Stamped<Event>| matches!(e.event.kind, EventKind::Call { call: c, .. } if c == call);
        self.events
            .iter()
            .find(sent)
            .expect("a call of the script")
            .seq
    }

    /// An agent places `id`, due at virtual `due_ms`.
    pub fn place(&mut self, id: u32, due_ms: u64) -> u64 {
        self.world(EventKind::Note(Note::Placed {
            id,
            hold_until_ms: store(due_ms),
            malformed: false,
        }))
    }

    pub fn consume(&mut self, id: u32, due_ms: u64) -> u64 {
        self.world(EventKind::Note(Note::Consumed {
            id,
            hold_until_ms: store(due_ms),
        }))
    }

    /// Sends `request`; its call id.
    pub fn send(&mut self, replica: ReplicaId, request: Request) -> u64 {
        self.next_call += 1;
        let call = self.next_call;
        self.on(replica, EventKind::Call { call, request });
        call
    }

    pub fn apply(&mut self, replica: ReplicaId, call: u64, applied: Applied) -> u64 {
        self.on(replica, EventKind::Applied { call, applied })
    }

    pub fn answer(
        &mut self,
        replica: ReplicaId,
        call: u64,
        request: Request,
        answer: Answer,
    ) -> u64 {
        let op = request.op();
        self.on(replica, EventKind::Answered { call, op, answer })
    }

    /// A whole call: sent, applied, answered.
    pub fn call(
        &mut self,
        replica: ReplicaId,
        request: Request,
        applied: Applied,
        answer: Answer,
    ) -> u64 {
        let call = self.send(replica, request);
        self.apply(replica, call, applied);
        self.answer(replica, call, request, answer);
        call
    }

    /// A claim of `ids` with `token`, applied and answered, then the clock read after it.
    pub fn claim(&mut self, replica: ReplicaId, token: u64, ids: &[u32]) -> u64 {
        let ids = IdList::of(ids);
        let until_ms = store(self.now_ms + 5_000);
        let request = Request::Claim {
            limit: 8,
            now: None,
            token,
            claim_for_ms: 5_000,
        };
        let call = self.call(
            replica,
            request,
            Applied::Claimed {
                ids,
                token,
                until_ms,
            },
            Answer::Claimed { ids, until_ms },
        );
        if !ids.is_empty() {
            let now_ms = store(self.now_ms);
            self.on(replica, EventKind::ClockRead { now_ms });
        }
        call
    }

    /// A guarded transition of `id`, applied as `applied` and answered `answer`.
    pub fn expire(&mut self, replica: ReplicaId, id: u32, applied: Applied, answer: Answer) -> u64 {
        let request = Request::Expire { id, now: None };
        self.call(replica, request, applied, answer)
    }

    /// A transition that expired `id` (deadline virtual `due_ms`).
    pub fn expired(&mut self, replica: ReplicaId, id: u32, due_ms: u64) -> u64 {
        let applied = Applied::Expired {
            id,
            hold_until_ms: store(due_ms),
        };
        self.expire(replica, id, applied, Answer::Expire(OutcomeView::Expired))
    }

    /// A transition that failed with `failure` before it was applied (store timeout).
    pub fn failed(&mut self, replica: ReplicaId, id: u32, failure: Failure) -> u64 {
        let request = Request::Expire { id, now: None };
        let call = self.send(replica, request);
        self.answer(replica, call, request, Answer::Failed(failure))
    }

    pub fn release(&mut self, replica: ReplicaId, id: u32, token: u64, freed: bool) -> u64 {
        let request = Request::Release { id, token };
        self.call(
            replica,
            request,
            Applied::Released { id, token, freed },
            Answer::Released,
        )
    }

    pub fn pause(&mut self, replica: ReplicaId, duration_ms: u64) -> u64 {
        self.on(replica, EventKind::TimerSet { duration_ms })
    }

    pub fn letter(&mut self, replica: ReplicaId, letter: LetterView) -> u64 {
        let request = Request::DeadLetter { letter };
        self.call(
            replica,
            request,
            Applied::Parked { id: letter.id },
            Answer::Recorded,
        )
    }

    pub fn run_started(&mut self, replica: ReplicaId) -> u64 {
        self.on(replica, EventKind::Note(Note::RunStarted { run: 1 }))
    }

    pub fn run_ended(&mut self, replica: ReplicaId, report: ReportView) -> u64 {
        self.on(replica, EventKind::Note(Note::RunEnded { run: 1, report }))
    }

    /// The run every checker accepts (see the module docs).
    pub fn correct_run() -> Script {
        let mut s = Script::new();
        s.world(EventKind::Phase(Phase::Safety));
        s.place(1, 0);
        s.place(2, 0);
        s.place(3, 0);
        s.run_started(R1);
        s.at(10).claim(R1, 1, &[1, 2, 3]);
        s.expired(R1, 1, 0);
        s.release(R1, 1, 1, true);
        s.consume(2, 0);
        let not_eligible = Applied::NotEligible {
            id: 2,
            status: StatusView::Consumed,
            hold_until_ms: store(0),
        };
        s.expire(
            R1,
            2,
            not_eligible,
            Answer::Expire(OutcomeView::NotEligible),
        );
        s.release(R1, 2, 1, true);
        s.at(20).failed(R1, 3, Failure::StoreTimeout);
        s.pause(R1, 1_200);
        s.at(1_220).failed(R1, 3, Failure::Rejected);
        s.pause(R1, 2_000);
        s.at(3_220).failed(R1, 3, Failure::Timeout);
        s.letter(
            R1,
            letter(3, ReasonView::BudgetExhausted, 3, ClassView::Timeout, 10),
        );
        s.release(R1, 3, 1, true);
        s.at(3_300).claim(R1, 2, &[]);
        s.pause(R1, 1_500);
        s.at(4_000).on(R1, EventKind::StopCalled);
        s.run_ended(R1, report(2, 3, [1, 0, 1], 2, 1));
        s.on(R1, EventKind::StopResolved);
        s.at(5_000).world(EventKind::Phase(Phase::Liveness));
        s.at(9_000).world(EventKind::Phase(Phase::Shutdown));
        s.world(EventKind::Phase(Phase::End));
        s
    }
}

/// A dead letter for `id`.
pub fn letter(
    id: u32,
    reason: ReasonView,
    attempts: u32,
    last: ClassView,
    seen_ms: u64,
) -> LetterView {
    LetterView {
        id,
        reason,
        attempts,
        first_seen_ms: store(seen_ms),
        last_error: last,
        replay_id: Some(id),
    }
}

/// A stopped run's report: polls, claimed, `[expired, already done, not eligible]`,
/// retries, dead letters.
pub fn report(
    polls: u32,
    claimed: u32,
    outcomes: [u32; 3],
    retries: u32,
    letters: u32,
) -> ReportView {
    ReportView {
        end: crate::events::EndView::Stopped,
        polls,
        claim_errors: 0,
        claimed,
        expired: outcomes[0],
        already_done: outcomes[1],
        not_eligible: outcomes[2],
        retries,
        dead_letters: letters,
        dead_letter_errors: 0,
        release_errors: 0,
        abandoned: 0,
        max_claim_age_ms: 0,
    }
}

/// The checker configuration of the scripts: the default policy with 3 attempts, idle pause
/// 1000 + 1000 ms, claims of 5 s, a liveness bound of 2 s.
pub fn config() -> CheckConfig {
    let mut config = CheckConfig::default();
    config.retry.max_attempts = 3;
    config.idle_ms = 1_000;
    config.idle_jitter_ms = 1_000;
    config.due_bound_ms = 2_000;
    config.claim_for_ms = 5_000;
    config
}

/// Feeds the script to a fresh checker of `invariant`; its first violation (or at finish).
pub fn run(invariant: Invariant, script: &Script) -> Option<Violation> {
    let mut checker = AnyChecker::new(invariant, &config());
    assert_eq!(checker.invariant(), invariant);
    // The checker alone, with facts of its own, fed as a set feeds them.
    let mut facts = Facts::default();
    for event in &script.events {
        facts.enter(event);
        let verdict = match checker.wants(&event.event.kind) {
            true => checker.on_event(event, &facts),
            false => None,
        };
        facts.leave(event);
        if verdict.is_some() {
            return verdict;
        }
    }
    let end_ms = script.events.last().map_or(0, |e| e.at_ms);
    checker.finish(end_ms, &facts)
}

pub fn assert_holds(invariant: Invariant, script: &Script) {
    if let Some(violation) = run(invariant, script) {
        panic!("{invariant} broke: {violation}");
    }
}

/// The checker of `invariant` breaks at event `seq` with a sentence containing every word.
pub fn assert_broken(invariant: Invariant, script: &Script, seq: u64, words: &[&str]) {
    let violation = run(invariant, script).unwrap_or_else(|| panic!("{invariant} held"));
    assert_eq!(violation.invariant, invariant);
    assert_eq!(violation.event.seq, seq, "{violation}");
    for word in words {
        assert!(
            violation.sentence.contains(word),
            "{word:?} not in: {}",
            violation.sentence
        );
    }
}
