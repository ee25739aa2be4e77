//! How a worker retries a call that failed on the network: `retry-backoff`.
//!
//! Terminology:
//! - *chain*: the calls a worker sends for one purpose until one is answered: the finds of a
//!   pass, its status reads, the claims of one item after one find, the renewals, chunk
//!   applies and done-marks of one claim (each chunk its own), the release or fail of one
//!   claim, the provider applies and the lookups of one key under one claim. A chain's
//!   *failures* are its calls answered with a transport failure since its last other answer.
//! - *retryable*: a failure the worker retries: any, except a claim's timeout (a claim with
//!   no answer may hold the item now: it is left to expire, never sent again).
//! - *backoff* before retry `n + 1` (after `n + 1` failures): `backoff_ms * 2^n`, at most
//!   `backoff_cap_ms`, on the worker's clock.
//! - *expectation*: what must come next from the replica after a failure, among its calls,
//!   its timers and its pass's end. While retries are left (`n < max_retries`), a timer of
//!   exactly the backoff (a stop may cut it short, but it is set); once they are spent, or
//!   the failure is not retryable, no timer and no call of the same chain. A provider apply
//!   answered a timeout is reconciled first (its lookups and a due renewal come before the
//!   expectation): a lookup answered `unknown` brings it back, any other end of the
//!   reconciliation drops it.
//!
//! A worker that retries too often hammers a store that is down; one that gives up early
//! turns a blip into a released or abandoned claim; one that skips the backoff, or never
//! doubles it, retries into the same outage.

use leasesim_events::{NetFailure, ReplicaId, mask};
use leasesim_invariants::{At, Checker, PerReplica};

use super::{CheckConfig, Facts, Invariant, Violation, notes_pass};
use crate::events::{
    Answer, Event, EventKind, Key, LookupView, Note, Op, Request, Stamped, WorkItems,
};

type Found = Option<Violation>;

/// One chain of calls (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chain {
    Find,
    Status,
    Claim {
        item: u32,
    },
    Write {
        op: Op,
        item: u32,
        token: u64,
        chunk: u32,
    },
    Settle {
        item: u32,
        token: u64,
    },
    Provider {
        key: Key,
    },
    Lookup {
        key: Key,
    },
}

impl Chain {
    fn of(request: &Request) -> Chain {
        match *request {
            Request::Find { .. } => Chain::Find,
            Request::Status => Chain::Status,
            Request::Claim { item, .. } | Request::PlainClaim { item, .. } => Chain::Claim { item },
            Request::Apply {
                item, token, chunk, ..
            }
            | Request::UnguardedApply {
                item, token, chunk, ..
            } => Chain::Write {
                op: Op::Apply,
                item,
                token,
                chunk,
            },
            Request::Renew { item, token, .. } => Chain::Write {
                op: Op::Renew,
                item,
                token,
                chunk: 0,
            },
            Request::Done { item, token, .. } | Request::UnguardedDone { item, token, .. } => {
                Chain::Write {
                    op: Op::Done,
                    item,
                    token,
                    chunk: 0,
                }
            }
            Request::Release { item, token, .. } | Request::Fail { item, token, .. } => {
                Chain::Settle { item, token }
            }
            Request::ProviderApply { key, .. } => Chain::Provider { key },
            Request::Lookup { key } => Chain::Lookup { key },
        }
    }
}

/// What must come next after a failure (see the module docs).
#[derive(Clone, Debug)]
enum Expect {
    /// A timer of `backoff_ms`, before retry `retry` (1-based).
    Backoff { backoff_ms: u64, retry: u32 },
    /// No timer, and no call of `chain`.
    GiveUp { chain: Chain, why: &'static str },
}

/// A failure and what it calls for.
#[derive(Clone, Debug)]
struct Pending {
    expect: Expect,
    /// The failed call's `Call` and `Answered` events.
    call: Stamped<Event>,
    answer: Stamped<Event>,
}

/// One replica's incarnation.
#[derive(Debug, Default)]
struct Replica {
    /// Failures of each chain with any (few: the worker runs one chain at a time).
    failures: Vec<(Chain, u32)>,
    pending: Option<Pending>,
    /// A provider apply's expectation, held while the apply is reconciled.
    reconciling: Option<(Key, Pending)>,
}

impl Replica {
    fn failures(&mut self, chain: Chain) -> &mut u32 {
        let index = match self.failures.iter().position(|(known, _)| *known == chain) {
            Some(index) => index,
            None => {
                self.failures.push((chain, 0));
                self.failures.len() - 1
            }
        };
        &mut self.failures[index].1
    }

    fn answered_ok(&mut self, chain: Chain) {
        self.failures.retain(|(known, _)| *known != chain);
    }
}

/// `retry-backoff`: failed calls are retried with the doubling backoff, as often as allowed.
#[derive(Debug)]
pub struct RetryBackoff {
    max_retries: u32,
    backoff_ms: u64,
    backoff_cap_ms: u64,
    replicas: PerReplica<Replica>,
}

impl RetryBackoff {
    pub fn new(config: &CheckConfig) -> RetryBackoff {
        RetryBackoff {
            max_retries: config.max_retries,
            backoff_ms: config.backoff_ms,
            backoff_cap_ms: config.backoff_cap_ms,
            replicas: PerReplica::default(),
        }
    }

    /// The backoff after `failures` failures: `backoff_ms * 2^(failures - 1)`, capped.
    fn backoff_after_ms(&self, failures: u32) -> u64 {
        let doublings = failures.saturating_sub(1).min(63);
        self.backoff_ms
            .saturating_mul(1u64 << doublings)
            .min(self.backoff_cap_ms)
    }

    /// What a failure of `request` calls for, once counted in its chain.
    fn expect(&mut self, replica: ReplicaId, request: &Request, failure: NetFailure) -> Expect {
        let chain = Chain::of(request);
        if matches!(chain, Chain::Claim { .. }) && failure == NetFailure::Timeout {
            self.replicas.at(replica).answered_ok(chain);
            let why = "a claim that got no answer is not sent again";
            return Expect::GiveUp { chain, why };
        }
        let failures = self.replicas.at(replica).failures(chain);
        *failures += 1;
        let failures = *failures;
        // invariant: a failure is counted before it is judged.
        debug_assert!(failures >= 1);
        match failures > self.max_retries {
            true => Expect::GiveUp {
                chain,
                why: "its retries were spent",
            },
            false => Expect::Backoff {
                backoff_ms: self.backoff_after_ms(failures),
                retry: failures,
            },
        }
    }

    fn answered(&mut self, event: &Stamped<Event>, call: u64, answer: Answer, facts: &Facts) {
        let Some(replica) = event.event.replica else {
            return;
        };
        let ledger = facts.ledger(replica);
        let Some((_, request, sent)) = ledger.in_flight.iter().find(|(id, _, _)| *id == call)
        else {
            return;
        };
        let (request, sent) = (*request, sent.clone());
        let chain = Chain::of(&request);
        let Answer::Failed(failure) = answer else {
            self.reconciled(replica, &request, answer);
            let state = self.replicas.at(replica);
            state.answered_ok(chain);
            if matches!(answer, Answer::Claimed(_)) {
                // A new claim's provider applies and lookups count afresh.
                let of_key = |c: &Chain| matches!(c, Chain::Provider { .. } | Chain::Lookup { .. });
                state.failures.retain(|(known, _)| !of_key(known));
            }
            return;
        };
        let pending = Pending {
            expect: self.expect(replica, &request, failure),
            call: sent,
            answer: event.clone(),
        };
        let state = self.replicas.at(replica);
        match (request, failure) {
            (Request::ProviderApply { key, .. }, NetFailure::Timeout) => {
                state.reconciling = Some((key, pending));
            }
            _ => state.pending = Some(pending),
        }
    }

    /// A lookup's answer ends the reconciliation of its key: `unknown` brings the provider
    /// apply's expectation back.
    fn reconciled(&mut self, replica: ReplicaId, request: &Request, answer: Answer) {
        let state = self.replicas.at(replica);
        let Request::Lookup { key } = *request else {
            return;
        };
        if state
            .reconciling
            .as_ref()
            .is_none_or(|(known, _)| *known != key)
        {
            return;
        }
        let (_, pending) = state.reconciling.take().expect("checked just above");
        if answer == Answer::Lookup(LookupView::Unknown) {
            state.pending = Some(pending);
        }
    }

    fn timer(&mut self, event: &Stamped<Event>, duration_ms: u64) -> Found {
        let replica = event.event.replica?;
        let pending = self.replicas.at(replica).pending.take()?;
        let max_retries = self.max_retries;
        let why = match pending.expect {
            Expect::Backoff { backoff_ms, .. } if backoff_ms == duration_ms => return None,
            Expect::Backoff { backoff_ms, retry } => format!(
                "the backoff before retry {retry} is {backoff_ms}ms (backoff doubling from {}ms, \
                 at most {}ms)",
                self.backoff_ms, self.backoff_cap_ms
            ),
            Expect::GiveUp { why, .. } => {
                format!("it may not retry: {why} ({max_retries} retries)")
            }
        };
        let sentence = format!(
            "{replica} set a timer of {duration_ms}ms at {} after its {} failed at {}, but {why}",
            At(event.at_ms),
            op_name(&pending.call),
            At(pending.answer.at_ms)
        );
        Some(self.violation(event, &pending, sentence))
    }

    fn call(&mut self, event: &Stamped<Event>, request: &Request) -> Found {
        let replica = event.event.replica?;
        let state = self.replicas.at(replica);
        // A call other than the reconciliation's ends it: a stop, a lookup given up.
        if !matches!(request, Request::Lookup { .. } | Request::Renew { .. }) {
            state.reconciling = None;
        }
        if matches!(request, Request::Find { .. }) {
            // Each find begins a new decision: the claims after it count afresh.
            state
                .failures
                .retain(|(known, _)| !matches!(known, Chain::Claim { .. }));
        }
        let pending = state.pending.take()?;
        let max_retries = self.max_retries;
        let why = match pending.expect {
            Expect::Backoff { retry, backoff_ms } => format!(
                "it had retries left ({} of {max_retries} spent): it must wait {backoff_ms}ms \
                 and retry",
                retry - 1
            ),
            Expect::GiveUp { chain, why } if chain == Chain::of(request) => {
                format!("it sent the same call again, and {why} ({max_retries} retries)")
            }
            Expect::GiveUp { .. } => return None,
        };
        let sentence = format!(
            "{replica} sent {} at {} after its {} failed at {}, but {why}",
            leasesim_events::OpSet::name(request.op()),
            At(event.at_ms),
            op_name(&pending.call),
            At(pending.answer.at_ms)
        );
        Some(self.violation(event, &pending, sentence))
    }

    fn pass_ended(&mut self, event: &Stamped<Event>) -> Found {
        let replica = event.event.replica?;
        let state = self.replicas.at(replica);
        state.reconciling = None;
        state.failures.clear();
        let pending = state.pending.take()?;
        let Expect::Backoff { retry, .. } = pending.expect else {
            return None;
        };
        let sentence = format!(
            "{replica}'s pass ended at {} after its {} failed at {}, but it had retries left \
             ({} of {} spent): it must wait and retry",
            At(event.at_ms),
            op_name(&pending.call),
            At(pending.answer.at_ms),
            retry - 1,
            self.max_retries
        );
        Some(self.violation(event, &pending, sentence))
    }

    fn violation(&self, event: &Stamped<Event>, pending: &Pending, sentence: String) -> Violation {
        let context = [Some(&pending.call), Some(&pending.answer)];
        Violation::new(Invariant::RetryBackoff, event, context, sentence)
    }
}

/// The name of the op a `Call` event sent.
fn op_name(call: &Stamped<Event>) -> &'static str {
    match call.event.kind {
        EventKind::Call { request, .. } => leasesim_events::OpSet::name(request.op()),
        _ => "call",
    }
}

impl Checker<WorkItems> for RetryBackoff {
    fn invariant(&self) -> Invariant {
        Invariant::RetryBackoff
    }

    fn wants(&self, kind: &EventKind) -> bool {
        let bits = mask::CALL | mask::ANSWERED | mask::TIMER_SET | mask::RESTARTED | notes_pass();
        kind.bit() & bits != 0
    }

    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Found {
        let replica = event.event.replica?;
        match event.event.kind {
            EventKind::Answered { call, answer, .. } => {
                self.answered(event, call, answer, facts);
                None
            }
            EventKind::TimerSet { duration_ms } => self.timer(event, duration_ms),
            EventKind::Call { request, .. } => self.call(event, &request),
            EventKind::Note(Note::PassEnded { .. }) => self.pass_ended(event),
            EventKind::Note(Note::PassStarted { .. }) | EventKind::Restarted => {
                *self.replicas.at(replica) = Replica::default();
                None
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkers::testkit::{BACKOFF_MS, R1, Script, assert_broken, assert_holds};

    fn find() -> Request {
        Request::Find { after: None }
    }

    /// r1's pass begins and its first find fails with `failure`.
    fn failed_find(failure: NetFailure) -> Script {
        let mut s = Script::new();
        s.at(100).pass_start(R1, 1);
        s.failed(R1, find(), None, failure);
        s
    }

    #[test]
    fn a_doubling_backoff_before_each_retry_holds() {
        let mut s = failed_find(NetFailure::Rejected);
        s.on(
            R1,
            EventKind::TimerSet {
                duration_ms: BACKOFF_MS,
            },
        );
        s.find(R1, None);
        assert_holds(Invariant::RetryBackoff, &s);
        // max_retries is 1: after the second failure the worker gives up, with no timer.
        let mut s = failed_find(NetFailure::Timeout);
        s.on(
            R1,
            EventKind::TimerSet {
                duration_ms: BACKOFF_MS,
            },
        );
        s.failed(R1, find(), None, NetFailure::Timeout);
        s.pass_end(
            R1,
            1,
            crate::events::EndKind::Unavailable,
            Default::default(),
            None,
        );
        assert_holds(Invariant::RetryBackoff, &s);
    }

    #[test]
    fn a_retry_without_its_backoff_breaks() {
        let mut s = failed_find(NetFailure::Rejected);
        s.send(R1, find());
        let seq = s.last_seq();
        let words = [
            "r1 sent next_claimable at t=110ms",
            "had retries left (0 of 1 spent)",
            "wait 50ms",
        ];
        assert_broken(Invariant::RetryBackoff, &s, seq, &words);
    }

    #[test]
    fn a_backoff_of_the_wrong_length_breaks() {
        let mut s = failed_find(NetFailure::Rejected);
        s.on(R1, EventKind::TimerSet { duration_ms: 1 });
        let seq = s.last_seq();
        let words = [
            "r1 set a timer of 1ms",
            "the backoff before retry 1 is 50ms",
        ];
        assert_broken(Invariant::RetryBackoff, &s, seq, &words);
    }

    #[test]
    fn a_retry_past_the_bound_breaks() {
        let mut s = failed_find(NetFailure::Rejected);
        s.on(
            R1,
            EventKind::TimerSet {
                duration_ms: BACKOFF_MS,
            },
        );
        s.failed(R1, find(), None, NetFailure::Rejected);
        s.on(
            R1,
            EventKind::TimerSet {
                duration_ms: 2 * BACKOFF_MS,
            },
        );
        let seq = s.last_seq();
        let words = [
            "timer of 100ms",
            "it may not retry: its retries were spent (1 retries)",
        ];
        assert_broken(Invariant::RetryBackoff, &s, seq, &words);
    }

    #[test]
    fn giving_up_with_retries_left_breaks() {
        let mut s = failed_find(NetFailure::Timeout);
        let end = crate::events::EndKind::Unavailable;
        let seq = s.pass_end(R1, 1, end, Default::default(), None);
        let words = ["r1's pass ended", "it had retries left (0 of 1 spent)"];
        assert_broken(Invariant::RetryBackoff, &s, seq, &words);
    }

    #[test]
    fn a_claim_with_no_answer_is_not_sent_again() {
        let claim = Request::Claim {
            item: 2,
            lease_ms: 1_000,
            now_ms: 0,
        };
        let mut s = Script::new();
        s.at(100).pass_start(R1, 1);
        s.failed(R1, claim, None, NetFailure::Timeout);
        s.send(R1, find());
        assert_holds(Invariant::RetryBackoff, &s);
        let mut s = Script::new();
        s.at(100).pass_start(R1, 1);
        s.failed(R1, claim, None, NetFailure::Timeout);
        s.send(R1, claim);
        let seq = s.last_seq();
        let words = [
            "sent the same call again",
            "a claim that got no answer is not sent again",
        ];
        assert_broken(Invariant::RetryBackoff, &s, seq, &words);
    }

    /// A lookup of `key` answered unknown.
    fn unknown(s: &mut Script, key: Key) {
        let found = LookupView::Unknown;
        let applied = crate::events::Applied::LookedUp { key, found };
        s.round(R1, Request::Lookup { key }, applied, Answer::Lookup(found));
    }

    #[test]
    fn a_provider_timeout_is_reconciled_before_its_backoff() {
        let key = crate::checkers::testkit::key(4);
        let apply = Request::ProviderApply { item: 4, key };
        let mut s = Script::new();
        s.at(100).pass_start(R1, 1);
        s.claim(R1, 4, 2, 1);
        s.failed(R1, apply, None, NetFailure::Timeout);
        unknown(&mut s, key);
        s.on(
            R1,
            EventKind::TimerSet {
                duration_ms: BACKOFF_MS,
            },
        );
        s.send(R1, apply);
        assert_holds(Invariant::RetryBackoff, &s);
        // Unknown brings the backoff back: an apply sent at once breaks.
        let mut s = Script::new();
        s.at(100).pass_start(R1, 1);
        s.claim(R1, 4, 2, 1);
        s.failed(R1, apply, None, NetFailure::Timeout);
        unknown(&mut s, key);
        s.send(R1, apply);
        let seq = s.last_seq();
        assert_broken(Invariant::RetryBackoff, &s, seq, &["had retries left"]);
    }
}
