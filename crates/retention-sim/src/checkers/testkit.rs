//! Hand-built event sequences for the unit tests.
//!
//! Terminology:
//! - *script*: a growing list of stamped events; `seq` counts up by itself, times are set
//!   explicitly with [`Script::at`] (composite steps advance the time a few ms per event).
//! - *correct term*: acquire, clock read, delete, renew, delete, release, end: what a correct
//!   worker does when it drains the backlog in two batches.

use crate::events::{
    Answer, Applied, EndKind, Event, EventKind, LeaseView, Note, OpKind, Phase, ReplicaId, Request,
    Stamped,
};

use super::{CheckConfig, Checker, Facts, Invariant, Violation, checker_for};
use leasesim_invariants::Facts as _;

pub(crate) const R1: ReplicaId = ReplicaId(0);
pub(crate) const R2: ReplicaId = ReplicaId(1);

/// The configuration every test uses.
pub(crate) fn config() -> CheckConfig {
    CheckConfig {
        batch_rows: 200,
        cap_rows: 1000,
        retention_ms: 3000,
        term_bound_ms: 5000,
    }
}

pub(crate) fn lease(token: u64) -> LeaseView {
    LeaseView {
        token,
        expires_at_ms: 100_000 + token,
    }
}

/// Milliseconds between the events of a composite step.
const STEP_MS: u64 = 5;

#[derive(Debug, Default)]
pub(crate) struct Script {
    now_ms: u64,
    next_call: u64,
    pub(crate) events: Vec<Stamped<Event>>,
}

impl Script {
    pub(crate) fn new() -> Script {
        Script {
            now_ms: 0,
            next_call: 1,
            events: Vec::new(),
        }
    }

    /// Sets the time of the next events.
    pub(crate) fn at(&mut self, at_ms: u64) -> &mut Script {
        self.now_ms = at_ms;
        self
    }

    /// Appends an event now; returns its seq.
    pub(crate) fn push(&mut self, replica: Option<ReplicaId>, kind: EventKind) -> u64 {
        let seq = self.events.len() as u64;
        self.events.push(Stamped {
            seq,
            at_ms: self.now_ms,
            event: Event { replica, kind },
        });
        seq
    }

    pub(crate) fn on(&mut self, replica: ReplicaId, kind: EventKind) -> u64 {
        self.push(Some(replica), kind)
    }

    pub(crate) fn world(&mut self, kind: EventKind) -> u64 {
        self.push(None, kind)
    }

    fn step(&mut self) {
        self.now_ms += STEP_MS;
    }

    /// The seq of the latest event.
    pub(crate) fn last_seq(&self) -> u64 {
        self.events.len() as u64 - 1
    }

    /// A `Call`; returns the new call id (its seq is `last_seq()`).
    pub(crate) fn send(&mut self, replica: ReplicaId, request: Request) -> u64 {
        let call = self.next_call;
        self.next_call += 1;
        self.on(replica, EventKind::Call { call, request });
        call
    }

    /// The service acts on `call` (a world event: it names no replica).
    pub(crate) fn apply(&mut self, call: u64, applied: Applied) -> u64 {
        self.world(EventKind::Applied { call, applied })
    }

    pub(crate) fn answer(&mut self, replica: ReplicaId, call: u64, op: OpKind, answer: Answer) {
        self.on(replica, EventKind::Answered { call, op, answer });
    }

    pub(crate) fn start(&mut self, replica: ReplicaId, term: u32) -> u64 {
        self.on(replica, EventKind::Note(Note::TermStarted { term }))
    }

    pub(crate) fn end(&mut self, replica: ReplicaId, term: u32, end: EndKind, rows: u64) -> u64 {
        self.on(
            replica,
            EventKind::Note(Note::TermEnded { term, end, rows }),
        )
    }

    pub(crate) fn clock(&mut self, replica: ReplicaId, now_ms: u64) -> u64 {
        self.on(replica, EventKind::ClockRead { now_ms })
    }

    /// A granted acquire with `token`: call, applied, answered.
    pub(crate) fn acquire(&mut self, replica: ReplicaId, token: u64) -> u64 {
        let call = self.send(replica, Request::Acquire);
        self.step();
        self.apply(
            call,
            Applied::Granted {
                lease: lease(token),
                replaced: None,
            },
        );
        self.step();
        self.answer(
            replica,
            call,
            OpKind::Acquire,
            Answer::Lease(Some(lease(token))),
        );
        call
    }

    /// A delete that removes `rows` rows (the newest created 1ms before the cutoff).
    pub(crate) fn delete(&mut self, replica: ReplicaId, cutoff_ms: u64, token: u64, rows: u32) {
        let request = Request::Delete {
            older_than_ms: cutoff_ms,
            limit: 200,
            token,
        };
        let call = self.send(replica, request);
        self.step();
        let newest_created_ms = (rows > 0).then(|| cutoff_ms.checked_sub(1)).flatten();
        let applied = Applied::Deleted {
            rows,
            token_current: true,
            current_token: Some(token),
            newest_created_ms,
            held_back: 0,
        };
        self.apply(call, applied);
        self.step();
        self.answer(replica, call, OpKind::Delete, Answer::Rows(rows));
    }

    /// A renewal of `old` answered with `new`.
    pub(crate) fn renew(&mut self, replica: ReplicaId, old: u64, new: u64) {
        let call = self.send(replica, Request::Renew { lease: lease(old) });
        self.step();
        self.apply(call, Applied::Renewed { lease: lease(new) });
        self.step();
        self.answer(
            replica,
            call,
            OpKind::Renew,
            Answer::Lease(Some(lease(new))),
        );
    }

    /// A renewal of `old` that answers `answer` (None or an error).
    pub(crate) fn renew_lost(&mut self, replica: ReplicaId, old: u64, answer: Answer) {
        let call = self.send(replica, Request::Renew { lease: lease(old) });
        self.step();
        self.apply(call, Applied::RenewRefused);
        self.step();
        self.answer(replica, call, OpKind::Renew, answer);
    }

    pub(crate) fn release(&mut self, replica: ReplicaId, token: u64) {
        let call = self.send(
            replica,
            Request::Release {
                lease: lease(token),
            },
        );
        self.step();
        self.apply(call, Applied::Released);
        self.step();
        self.answer(replica, call, OpKind::Release, Answer::Released);
    }

    /// A correct term from now: tokens `token` then `token + 1`, 320 rows in two batches.
    pub(crate) fn correct_term(&mut self, replica: ReplicaId, term: u32, token: u64) {
        self.start(replica, term);
        self.step();
        self.acquire(replica, token);
        let cutoff_ms = self.now_ms.saturating_sub(config().retention_ms);
        self.clock(replica, self.now_ms);
        self.on(replica, EventKind::TimerSet { duration_ms: 1000 });
        self.step();
        self.delete(replica, cutoff_ms, token, 200);
        self.now_ms += 1000;
        self.renew(replica, token, token + 1);
        self.delete(replica, cutoff_ms, token + 1, 120);
        self.release(replica, token + 1);
        self.end(replica, term, EndKind::Drained, 320);
    }

    /// A whole run: two replicas, a term each in safety and liveness, stops, end.
    pub(crate) fn correct_run() -> Script {
        let mut script = Script::new();
        script.world(EventKind::Phase(Phase::Safety));
        script.at(4000).correct_term(R1, 1, 1);
        script.at(8000).start(R2, 1);
        script.on(
            R2,
            EventKind::Call {
                call: 900,
                request: Request::Acquire,
            },
        );
        script.apply(900, Applied::Busy { holder_token: 2 });
        script.answer(R2, 900, OpKind::Acquire, Answer::Lease(None));
        script.end(R2, 1, EndKind::NotLeader, 0);
        script.at(10_000).world(EventKind::Phase(Phase::Liveness));
        script.at(11_000).correct_term(R2, 2, 3);
        script.world(EventKind::Note(Note::Backlog {
            eligible_before_ms: 8000,
            remaining: 0,
        }));
        script.at(15_000).world(EventKind::Phase(Phase::Shutdown));
        script.on(R1, EventKind::StopCalled);
        script.on(R2, EventKind::StopCalled);
        script.on(R2, EventKind::StopResolved);
        script.on(R1, EventKind::StopResolved);
        script.world(EventKind::Phase(Phase::End));
        script
    }
}

/// Feeds the script to `checker`; returns the first violation (finish at the last time).
pub(crate) fn run(
    checker: &mut dyn Checker<crate::Retention>,
    script: &Script,
) -> Option<Violation> {
    // The checker alone, with facts of its own, fed as a set of one feeds it: only the kinds
    // it reads, the facts every event.
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
    checker.finish(script.now_ms, &facts)
}

/// Runs the script through `invariant`'s checker with the test configuration.
pub(crate) fn check(invariant: Invariant, script: &Script) -> Option<Violation> {
    run(checker_for(invariant, &config()).as_mut(), script)
}

/// Asserts a violation of `invariant` at event `seq` whose sentence has every `words`.
pub(crate) fn assert_broken(invariant: Invariant, script: &Script, seq: u64, words: &[&str]) {
    let Some(violation) = check(invariant, script) else {
        panic!("{invariant} held, expected a violation at event #{seq}");
    };
    assert_eq!(violation.invariant, invariant);
    assert_eq!(violation.event.seq, seq, "{violation}");
    for word in words {
        assert!(
            violation.sentence.contains(word),
            "{word:?} missing from: {violation}"
        );
    }
    assert!(violation.context.len() <= leasesim_invariants::MAX_CONTEXT);
    assert!(
        violation
            .context
            .windows(2)
            .all(|pair| pair[0].seq < pair[1].seq)
    );
    assert!(
        violation
            .context
            .iter()
            .all(|earlier| earlier.seq < violation.event.seq)
    );
}

/// Asserts that `invariant` holds over the script.
pub(crate) fn assert_holds(invariant: Invariant, script: &Script) {
    if let Some(violation) = check(invariant, script) {
        panic!("unexpected violation: {violation}");
    }
}
