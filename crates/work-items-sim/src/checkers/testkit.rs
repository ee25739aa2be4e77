//! Hand-built event sequences for the checkers' unit tests.
//!
//! Terminology:
//! - *script*: a growing list of stamped events; `seq` counts up by itself, times are set with
//!   [`Script::at`] (composite steps advance a few ms per event).
//! - *correct item*: claim, every chunk applied, the provider applied, done: what a correct
//!   worker does with an item when nothing goes wrong.
//! - *correct run*: one replica's pass over one item in the safety phase, the tally, stops.

use leasesim_events::NetFailure;

use super::{AnyChecker, CheckConfig, Checker, Invariant, Violation};
use crate::events::{
    Answer, Applied, EPOCH_MS, EndKind, Event, EventKind, Key, LeaseView, Mark, Note, Op,
    PassCounts, Phase, Prior, ProviderView, ReplicaId, Request, Stamped, StatusView,
};

pub(crate) const R1: ReplicaId = ReplicaId(0);
pub(crate) const R2: ReplicaId = ReplicaId(1);

/// Every test's configuration.
pub(crate) fn config() -> CheckConfig {
    CheckConfig {
        max_attempts: 2,
        max_retries: 1,
        renew_every_ms: RENEW_EVERY_MS,
        deadline_ms: DEADLINE_MS,
        backoff_ms: BACKOFF_MS,
        backoff_cap_ms: 8 * BACKOFF_MS,
    }
}

/// The first backoff of every scripted worker (doubling, capped at eight times this).
pub(crate) const BACKOFF_MS: u64 = 50;

/// The pass deadline of every scripted worker.
pub(crate) const DEADLINE_MS: u64 = 5_000;

/// The renewal interval of every scripted worker.
pub(crate) const RENEW_EVERY_MS: u64 = 1_000;

/// Lease lifetime of every scripted claim.
pub(crate) const LEASE_MS: u64 = 2_000;

/// Milliseconds between the events of a composite step.
const STEP_MS: u64 = 5;

/// The item's own key.
pub(crate) fn key(item: u32) -> Key {
    Key { item, salt: 0 }
}

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

    pub(crate) fn at(&mut self, at_ms: u64) -> &mut Script {
        self.now_ms = at_ms;
        self
    }

    pub(crate) fn now_ms(&self) -> u64 {
        self.now_ms
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

    /// A `Call`; returns the call id.
    pub(crate) fn send(&mut self, replica: ReplicaId, request: Request) -> u64 {
        let call = self.next_call;
        self.next_call += 1;
        self.on(replica, EventKind::Call { call, request });
        call
    }

    /// The service applies `call` (of `replica`); returns the event's seq.
    pub(crate) fn apply(&mut self, replica: ReplicaId, call: u64, applied: Applied) -> u64 {
        self.on(replica, EventKind::Applied { call, applied })
    }

    /// `replica` receives the answer of `call`; returns the event's seq.
    pub(crate) fn answer(&mut self, replica: ReplicaId, call: u64, op: Op, answer: Answer) -> u64 {
        self.on(replica, EventKind::Answered { call, op, answer })
    }

    /// A call, its apply and its answer, a step apart; returns the call id.
    pub(crate) fn round(
        &mut self,
        replica: ReplicaId,
        request: Request,
        applied: Applied,
        answer: Answer,
    ) -> u64 {
        let call = self.send(replica, request);
        self.step();
        self.apply(replica, call, applied);
        self.step();
        self.answer(replica, call, request.op(), answer);
        call
    }

    /// A call answered by a network failure (it was applied when `applied` is given).
    pub(crate) fn failed(
        &mut self,
        replica: ReplicaId,
        request: Request,
        applied: Option<Applied>,
        failure: NetFailure,
    ) -> u64 {
        let call = self.send(replica, request);
        self.step();
        match applied {
            Some(applied) => {
                self.apply(replica, call, applied);
                self.on(replica, EventKind::ReplyLost { call });
            }
            None => {
                let op = request.op();
                self.on(replica, EventKind::Rejected { call, op });
            }
        }
        self.step();
        self.answer(replica, call, request.op(), Answer::Failed(failure));
        call
    }

    pub(crate) fn pass_start(&mut self, replica: ReplicaId, pass: u32) -> u64 {
        self.on(replica, EventKind::Note(Note::PassStarted { pass }))
    }

    pub(crate) fn pass_end(
        &mut self,
        replica: ReplicaId,
        pass: u32,
        end: EndKind,
        counts: PassCounts,
        status: Option<StatusView>,
    ) -> u64 {
        let note = Note::PassEnded {
            pass,
            end,
            counts,
            status,
        };
        self.on(replica, EventKind::Note(note))
    }

    pub(crate) fn find(&mut self, replica: ReplicaId, item: Option<u32>) {
        let request = Request::Find { after: None };
        self.round(
            replica,
            request,
            Applied::Found { item },
            Answer::Found(item),
        );
    }

    pub(crate) fn status(&mut self, replica: ReplicaId, status: StatusView) {
        self.round(
            replica,
            Request::Status,
            Applied::Status(status),
            Answer::Status(status),
        );
    }

    /// A granted claim of `item` with `token` (expiring `LEASE_MS` after the apply).
    pub(crate) fn claim(&mut self, replica: ReplicaId, item: u32, token: u64, attempt: u32) {
        self.claim_sized(replica, item, token, attempt, 1, Prior::Fresh);
    }

    pub(crate) fn claim_sized(
        &mut self,
        replica: ReplicaId,
        item: u32,
        token: u64,
        attempt: u32,
        chunks: u32,
        prior: Prior,
    ) {
        let request = Request::Claim {
            item,
            lease_ms: LEASE_MS,
            now_ms: EPOCH_MS + self.now_ms,
        };
        let expires_at_ms = EPOCH_MS + self.now_ms + STEP_MS + LEASE_MS;
        let applied = Applied::Claimed {
            item,
            token,
            expires_at_ms,
            attempt,
            chunks,
            prior,
        };
        let lease = LeaseView {
            item,
            token,
            expires_at_ms,
            attempt,
            chunks,
        };
        self.round(replica, request, applied, Answer::Claimed(lease));
    }

    /// Chunk `chunk` of `item` applied under `token`, which was the live claim.
    pub(crate) fn chunk(&mut self, replica: ReplicaId, item: u32, token: u64, chunk: u32) {
        let request = Request::Apply {
            item,
            token,
            chunk,
            now_ms: 0,
        };
        let applied = Applied::ChunkApplied {
            item,
            token,
            chunk,
            fresh: true,
            live: Some(token),
        };
        self.round(replica, request, applied, Answer::Applied { fresh: true });
    }

    /// The provider carries out `item`'s effect under its own key.
    pub(crate) fn provider(&mut self, replica: ReplicaId, item: u32) {
        let key = key(item);
        let request = Request::ProviderApply { item, key };
        let applied = Applied::ProviderApplied { item, key };
        self.round(
            replica,
            request,
            applied,
            Answer::Provider(ProviderView::Applied),
        );
    }

    /// An end mark written under the live claim `token`.
    pub(crate) fn mark(&mut self, replica: ReplicaId, request: Request, mark: Mark) {
        let (item, token) = (request.item().unwrap(), request.token().unwrap());
        let applied = Applied::Marked {
            item,
            token,
            mark,
            repeat: false,
            live: Some(token),
        };
        self.round(replica, request, applied, Answer::Ok);
    }

    pub(crate) fn done(&mut self, replica: ReplicaId, item: u32, token: u64) {
        let request = Request::Done {
            item,
            token,
            now_ms: 0,
        };
        self.mark(replica, request, Mark::Done);
    }

    /// A write of `item` refused as lease-lost (the live claim is `live`).
    pub(crate) fn lease_lost(&mut self, replica: ReplicaId, request: Request, live: Option<u64>) {
        let (item, token) = (request.item().unwrap(), request.token().unwrap());
        let applied = Applied::LeaseLost { item, token, live };
        self.round(replica, request, applied, Answer::LeaseLost);
    }

    /// Claim, chunk, provider, done.
    pub(crate) fn correct_item(&mut self, replica: ReplicaId, item: u32, token: u64) {
        self.claim(replica, item, token, 1);
        self.chunk(replica, item, token, 0);
        self.provider(replica, item);
        self.done(replica, item, token);
    }

    /// A whole correct run: r1 processes item 0 and reports the run complete.
    pub(crate) fn correct_run() -> Script {
        let mut script = Script::new();
        script.world(EventKind::Phase(Phase::Safety));
        script.at(1_000).pass_start(R1, 1);
        script.find(R1, Some(0));
        script.correct_item(R1, 0, 1);
        script.find(R1, None);
        let status = StatusView {
            open: 0,
            done: 1,
            failed: 0,
        };
        script.status(R1, status);
        let counts = PassCounts {
            done: 1,
            ..PassCounts::default()
        };
        script.pass_end(R1, 1, EndKind::Complete, counts, Some(status));
        script.at(10_000).world(EventKind::Phase(Phase::Liveness));
        script.at(20_000).world(EventKind::Note(Note::Tally {
            status,
            first_open: None,
        }));
        script.world(EventKind::Phase(Phase::Shutdown));
        script.on(R1, EventKind::StopCalled);
        script.on(R1, EventKind::StopResolved);
        script.world(EventKind::Phase(Phase::End));
        script
    }
}

/// Feeds the script to `checker`, with facts of its own that see every event; the first
/// violation (finish at the last time).
pub(crate) fn run(checker: &mut AnyChecker, script: &Script) -> Option<Violation> {
    use leasesim_invariants::Facts as _;
    let mut facts = super::Facts::default();
    for event in &script.events {
        facts.enter(event);
        if let Some(violation) = checker.on_event(event, &facts) {
            return Some(violation);
        }
        facts.leave(event);
    }
    checker.finish(script.now_ms(), &facts)
}

/// Runs the script through `invariant`'s checker with the test configuration.
pub(crate) fn check(invariant: Invariant, script: &Script) -> Option<Violation> {
    run(&mut AnyChecker::new(invariant, &config()), script)
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
            .iter()
            .all(|e| e.seq < violation.event.seq)
    );
}

/// Asserts that `invariant` holds over the script.
pub(crate) fn assert_holds(invariant: Invariant, script: &Script) {
    if let Some(violation) = check(invariant, script) {
        panic!("unexpected violation: {violation}");
    }
}
