//! Hand-built event sequences for the checkers' unit tests.
//!
//! Terminology:
//! - *script*: a growing list of stamped events; `seq` counts up by itself, times are set
//!   with [`Script::at`] (composite steps advance a few ms per event).
//! - *correct attempt*: create (won), job start, a step, a renewal, a step, job done, a
//!   conditional release that deletes, attempt end: what the correct worker does when its
//!   job is shorter than the claim.

use leasesim_events::{EPOCH_MS, NetFailure, ReplicaId};

use crate::events::{
    Answer, Applied, EndKind, Event, EventKind, Forgetting, Held, Key, Note, Op, Phase,
    ReleaseKind, Request, Stamped,
};

use super::{CheckConfig, Invariant, Violation};

pub(crate) const R1: ReplicaId = ReplicaId(0);
pub(crate) const R2: ReplicaId = ReplicaId(1);
pub(crate) const R3: ReplicaId = ReplicaId(2);

/// Every claim of a script lives this long.
pub(crate) const LIFETIME_MS: u64 = 1_000;

/// The part of it a worker trusts: four fifths.
pub(crate) const TRUSTED_MS: u64 = 800;

/// The configuration every test uses unless it says otherwise.
pub(crate) fn config() -> CheckConfig {
    CheckConfig {
        renewal: true,
        attempt_bound_ms: 5_000,
        trusted_ms: TRUSTED_MS,
        drift_ppm: Vec::new(),
    }
}

/// Milliseconds between the events of a composite step.
const STEP_MS: u64 = 2;

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

    fn step(&mut self) {
        self.now_ms += STEP_MS;
    }

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

    pub(crate) fn send(&mut self, replica: ReplicaId, request: Request) -> u64 {
        let call = self.next_call;
        self.next_call += 1;
        self.on(replica, EventKind::Call { call, request });
        call
    }

    pub(crate) fn apply(&mut self, replica: ReplicaId, call: u64, applied: Applied) -> u64 {
        self.on(replica, EventKind::Applied { call, applied })
    }

    pub(crate) fn answer(&mut self, replica: ReplicaId, call: u64, op: Op, answer: Answer) -> u64 {
        self.on(replica, EventKind::Answered { call, op, answer })
    }

    /// A whole call: sent, applied, answered.
    pub(crate) fn call(
        &mut self,
        replica: ReplicaId,
        request: Request,
        applied: Applied,
        answer: Answer,
    ) -> u64 {
        let call = self.send(replica, request);
        self.step();
        let seq = self.apply(replica, call, applied);
        self.step();
        self.answer(replica, call, request.op(), answer);
        seq
    }

    pub(crate) fn start(&mut self, replica: ReplicaId, attempt: u32) -> u64 {
        self.on(replica, EventKind::Note(Note::AttemptStarted { attempt }))
    }

    /// The attempt's end, reporting as many renewals as the script answered granted to
    /// `replica` since its attempt started.
    pub(crate) fn end(
        &mut self,
        replica: ReplicaId,
        attempt: u32,
        end: EndKind,
        release: ReleaseKind,
        claims_gone: u64,
    ) -> u64 {
        let renewals = self.renewals_granted(replica);
        self.end_reporting(replica, attempt, (end, release), claims_gone, renewals)
    }

    /// The attempt's end, reporting `renewals` whatever the script answered.
    pub(crate) fn end_reporting(
        &mut self,
        replica: ReplicaId,
        attempt: u32,
        (end, release): (EndKind, ReleaseKind),
        claims_gone: u64,
        renewals: u32,
    ) -> u64 {
        let note = Note::AttemptEnded {
            attempt,
            end,
            release,
            claims_gone,
            renewals,
        };
        self.on(replica, EventKind::Note(note))
    }

    /// Renewals answered granted to `replica` since its last `AttemptStarted`.
    fn renewals_granted(&self, replica: ReplicaId) -> u32 {
        let since = self.events.iter().rev().take_while(|e| {
            !(e.event.replica == Some(replica)
                && matches!(e.event.kind, EventKind::Note(Note::AttemptStarted { .. })))
        });
        let granted = since.filter(|e| {
            e.event.replica == Some(replica)
                && matches!(
                    e.event.kind,
                    EventKind::Answered {
                        op: Op::Renew,
                        answer: Answer::Renewed,
                        ..
                    }
                )
        });
        u32::try_from(granted.count()).unwrap_or(u32::MAX)
    }

    /// A create of the claim that wins (`took_over`: the run-out entry it replaced).
    pub(crate) fn create(&mut self, replica: ReplicaId, token: u64) -> u64 {
        let request = Request::Create {
            key: Key::Claim,
            token,
            lifetime_ms: LIFETIME_MS,
        };
        let expires_at_ms = EPOCH_MS + self.now_ms + STEP_MS + LIFETIME_MS;
        let applied = Applied::Created {
            key: Key::Claim,
            token,
            expires_at_ms,
            took_over: None,
        };
        self.call(replica, request, applied, Answer::Created)
    }

    /// A create of the claim answered `answer` with no apply seen (refused, or applied where
    /// the script does not show it).
    pub(crate) fn create_answered(&mut self, replica: ReplicaId, token: u64, answer: Answer) {
        let request = Request::Create {
            key: Key::Claim,
            token,
            lifetime_ms: LIFETIME_MS,
        };
        let call = self.send(replica, request);
        self.answer(replica, call, Op::Create, answer);
    }

    /// A create of the claim that loses to `held`.
    pub(crate) fn create_lost(&mut self, replica: ReplicaId, token: u64, held: Held) {
        let request = Request::Create {
            key: Key::Claim,
            token,
            lifetime_ms: LIFETIME_MS,
        };
        let applied = Applied::Exists {
            key: Key::Claim,
            held,
        };
        self.call(replica, request, applied, Answer::Exists);
    }

    pub(crate) fn renew(&mut self, replica: ReplicaId, token: u64) -> u64 {
        let request = Request::Renew {
            key: Key::Claim,
            token,
            lifetime_ms: LIFETIME_MS,
        };
        let expires_at_ms = EPOCH_MS + self.now_ms + STEP_MS + LIFETIME_MS;
        let applied = Applied::Renewed {
            key: Key::Claim,
            token,
            expires_at_ms,
        };
        self.call(replica, request, applied, Answer::Renewed)
    }

    /// A renewal that finds another token (`held`) or, with `None`, the key absent.
    pub(crate) fn renew_refused(
        &mut self,
        replica: ReplicaId,
        token: u64,
        held: Option<Held>,
    ) -> u64 {
        let request = Request::Renew {
            key: Key::Claim,
            token,
            lifetime_ms: LIFETIME_MS,
        };
        let applied = Applied::RenewRefused {
            key: Key::Claim,
            held,
        };
        let answer = held.map_or(Answer::Absent, |_| Answer::NotHolder);
        self.call(replica, request, applied, answer)
    }

    /// The store forgets `key` (`lost`: the live entry it held), a world note.
    pub(crate) fn forgot(&mut self, key: Key, cause: Forgetting, lost: Option<Held>) -> u64 {
        self.world(EventKind::Note(Note::Forgot { key, cause, lost }))
    }

    /// A conditional release that deletes `removed`.
    pub(crate) fn release(&mut self, replica: ReplicaId, token: u64, removed: Held) -> u64 {
        let request = Request::DeleteIfHolder {
            key: Key::Claim,
            token,
        };
        let applied = Applied::Deleted {
            key: Key::Claim,
            removed,
        };
        self.call(replica, request, applied, Answer::Deleted)
    }

    /// A conditional release that finds `held` (another token) and deletes nothing.
    pub(crate) fn release_refused(&mut self, replica: ReplicaId, token: u64, held: Held) -> u64 {
        let request = Request::DeleteIfHolder {
            key: Key::Claim,
            token,
        };
        let applied = Applied::NotDeleted {
            key: Key::Claim,
            held: Some(held),
        };
        self.call(replica, request, applied, Answer::NotHolder)
    }

    /// A plain delete that removes `removed`.
    pub(crate) fn blind_delete(&mut self, replica: ReplicaId, removed: Held) -> u64 {
        let request = Request::Delete { key: Key::Claim };
        let applied = Applied::Deleted {
            key: Key::Claim,
            removed,
        };
        self.call(replica, request, applied, Answer::Deleted)
    }

    pub(crate) fn note(&mut self, replica: ReplicaId, note: Note) -> u64 {
        self.on(replica, EventKind::Note(note))
    }

    /// A correct attempt from now (see the module docs).
    pub(crate) fn correct_attempt(&mut self, replica: ReplicaId, attempt: u32, token: u64) {
        let held = Held { token, by: replica };
        self.start(replica, attempt);
        self.create(replica, token);
        self.note(
            replica,
            Note::JobStarted {
                duration_ms: 400,
                steps: 2,
            },
        );
        self.now_ms += 200;
        self.note(replica, Note::JobStep { step: 1 });
        self.renew(replica, token);
        self.now_ms += 200;
        self.note(replica, Note::JobStep { step: 2 });
        self.note(replica, Note::JobFinished { steps: 2 });
        self.release(replica, token, held);
        self.end(replica, attempt, EndKind::JobDone, ReleaseKind::Deleted, 0);
    }

    /// A whole run: two replicas, an attempt each in safety and liveness, a lost create, stops.
    pub(crate) fn correct_run() -> Script {
        let mut script = Script::new();
        script.world(EventKind::Phase(Phase::Safety));
        script.at(100).correct_attempt(R1, 1, 11);
        script.at(2_000).start(R2, 1);
        script.create_lost(R2, 12, Held { token: 13, by: R1 });
        script.end(R2, 1, EndKind::NotHolder, ReleaseKind::None, 0);
        script.at(3_000).world(EventKind::Phase(Phase::Liveness));
        script.at(3_100).correct_attempt(R2, 2, 14);
        script.at(5_000).world(EventKind::Phase(Phase::Shutdown));
        script.on(R1, EventKind::StopCalled);
        script.on(R2, EventKind::StopCalled);
        script.on(R2, EventKind::StopResolved);
        script.on(R1, EventKind::StopResolved);
        script.world(EventKind::Phase(Phase::End));
        script
    }

    pub(crate) fn now_ms(&self) -> u64 {
        self.now_ms
    }
}

/// A network failure's answer.
pub(crate) fn failed() -> Answer {
    Answer::Failed(NetFailure::Timeout)
}

/// Feeds the script to a checker set of `invariant` alone (which feeds it only the kinds it
/// wants, as in a run); the first violation (finish at the script's last time).
pub(crate) fn check_with(
    invariant: Invariant,
    config: &CheckConfig,
    script: &Script,
) -> Option<Violation> {
    let mut set = super::checker_set(config, &[invariant]);
    for event in &script.events {
        if set.on_event(event) == leasesim_events::Flow::Halt {
            return set.take_violation();
        }
    }
    set.finish(script.now_ms).cloned()
}

/// Asserts a violation of `invariant` at event `seq` whose sentence has every `words`.
pub(crate) fn assert_broken(invariant: Invariant, script: &Script, seq: u64, words: &[&str]) {
    assert_broken_with(invariant, &config(), script, seq, words);
}

pub(crate) fn assert_broken_with(
    invariant: Invariant,
    config: &CheckConfig,
    script: &Script,
    seq: u64,
    words: &[&str],
) {
    let Some(violation) = check_with(invariant, config, script) else {
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
    assert!(
        violation
            .context
            .iter()
            .all(|e| e.seq < violation.event.seq)
    );
}

/// Asserts that `invariant` holds over the script.
pub(crate) fn assert_holds(invariant: Invariant, script: &Script) {
    assert_holds_with(invariant, &config(), script);
}

pub(crate) fn assert_holds_with(invariant: Invariant, config: &CheckConfig, script: &Script) {
    if let Some(violation) = check_with(invariant, config, script) {
        panic!("unexpected violation: {violation}");
    }
}
