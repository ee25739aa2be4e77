//! Stopping a worker: `stop-quiesces` and `stop-joins`.
//!
//! Terminology:
//! - *stopped*: `StopCalled` was seen for the replica and no `Restarted` since.
//! - *new work*: an acquire, renew or delete `Call`; a release is not new work (a stopping
//!   worker must still give its lease back).
//! - *settled*: at `StopResolved`, no term is open, no call is in flight (a call counts as in
//!   flight until its `Answered`) and the latest term's lease, if it was held and not lost by
//!   a `None` renewal, has a release answered.

use crate::Retention;
use crate::events::Stamped;
use crate::events::{Event, EventKind, Request};

use super::kinds;
use super::track::{PerReplica, TermLedger, replica_of};
use super::words::At;
use super::{Checker, Facts, Invariant, Violation};

/// `stop-quiesces`: no acquire, renew or delete after `stop()` was called.
#[derive(Debug, Default)]
pub struct StopQuiesces {
    /// Per replica: the first `StopCalled` of the current incarnation.
    stopped: PerReplica<Option<Stamped<Event>>>,
}

impl StopQuiesces {
    pub fn new() -> StopQuiesces {
        StopQuiesces::default()
    }
}

impl Checker<Retention> for StopQuiesces {
    fn wants(&self, kind: &EventKind) -> bool {
        kinds::worker_side(kind)
    }

    fn invariant(&self) -> Invariant {
        Invariant::StopQuiesces
    }

    #[inline(always)]
    fn on_event(&mut self, event: &Stamped<Event>, _facts: &Facts) -> Option<Violation> {
        let replica = replica_of(event)?;
        let stopped = self.stopped.at(replica);
        match event.event.kind {
            EventKind::StopCalled => {
                stopped.get_or_insert_with(|| event.clone());
            }
            // invariant: a fresh incarnation starts unstopped.
            EventKind::Restarted => *stopped = None,
            EventKind::Call { request, .. } if !matches!(request, Request::Release { .. }) => {
                let stop = stopped.as_ref()?;
                let sentence = format!(
                    "{replica} sent {} at {} after its stop() was called at {}",
                    request.op().name(),
                    At(event.at_ms),
                    At(stop.at_ms)
                );
                return Some(Violation::new(
                    Invariant::StopQuiesces,
                    event,
                    [Some(stop)],
                    sentence,
                ));
            }
            _ => {}
        }
        None
    }
}

/// One incarnation of a replica, for `stop-joins`.
#[derive(Debug, Default)]
struct Incarnation {
    ledger: TermLedger,
    /// Every call of the incarnation not answered yet, oldest first.
    in_flight: Vec<(u64, Stamped<Event>)>,
    stop: Option<Stamped<Event>>,
}

impl Incarnation {
    /// Why `stop()` must not have resolved yet, if it must not have.
    fn unsettled(&self, event: &Stamped<Event>) -> Option<(String, Option<&Stamped<Event>>)> {
        let head = format!(
            "{}'s stop() resolved at {}",
            replica_of(event)?,
            At(event.at_ms)
        );
        let ledger = &self.ledger;
        if ledger.open {
            let started = ledger.started.as_ref()?;
            let term = ledger.term();
            let sentence = format!(
                "{head} while its term {term}, started at {}, was still running",
                At(started.at_ms)
            );
            return Some((sentence, Some(started)));
        }
        if let Some((call, sent)) = self.in_flight.first() {
            let op = match sent.event.kind {
                EventKind::Call { request, .. } => request.op().name(),
                _ => "a",
            };
            let sentence = format!(
                "{head} while its {op} call {call}, sent at {}, was unanswered",
                At(sent.at_ms)
            );
            return Some((sentence, Some(sent)));
        }
        if !ledger.acquired || ledger.lost_by_none.is_some() {
            return None;
        }
        let latest = ledger.latest_token()?;
        if ledger.release_answered == Some(latest) {
            return None;
        }
        let why = match ledger.released.as_ref().map(|(token, _)| *token) {
            None => "no release was sent".to_owned(),
            Some(token) if token == latest => "its release was never answered".to_owned(),
            Some(token) => format!("its release carried token {token}"),
        };
        let sentence = format!(
            "{head}, but the lease of its term {} (token {latest}) was not released: {why}",
            ledger.term()
        );
        Some((sentence, ledger.latest_answer()))
    }
}

/// `stop-joins`: `stop()` resolves only after `run` settled and the lease was released.
#[derive(Debug, Default)]
pub struct StopJoins {
    replicas: PerReplica<Incarnation>,
}

impl StopJoins {
    pub fn new() -> StopJoins {
        StopJoins::default()
    }
}

impl Checker<Retention> for StopJoins {
    fn wants(&self, kind: &EventKind) -> bool {
        kinds::worker_side(kind)
    }

    fn invariant(&self) -> Invariant {
        Invariant::StopJoins
    }

    #[inline(always)]
    fn on_event(&mut self, event: &Stamped<Event>, _facts: &Facts) -> Option<Violation> {
        let replica = replica_of(event)?;
        let incarnation = self.replicas.at(replica);
        if let EventKind::Restarted = event.event.kind {
            // invariant: a fresh incarnation owns no term, call or stop of the previous one.
            incarnation.ledger = TermLedger::default();
            incarnation.in_flight.clear();
            incarnation.stop = None;
            return None;
        }
        incarnation.ledger.observe(event);
        match event.event.kind {
            EventKind::Call { call, .. } => incarnation.in_flight.push((call, event.clone())),
            EventKind::Answered { call, .. } => {
                incarnation.in_flight.retain(|(sent, _)| *sent != call)
            }
            EventKind::StopCalled => {
                incarnation.stop.get_or_insert_with(|| event.clone());
            }
            EventKind::StopResolved => {
                let (sentence, culprit) = incarnation.unsettled(event)?;
                let context = [
                    incarnation.stop.as_ref(),
                    incarnation.ledger.started.as_ref(),
                    culprit,
                ];
                return Some(Violation::new(
                    Invariant::StopJoins,
                    event,
                    context,
                    sentence,
                ));
            }
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::events::{Answer, EndKind, OpKind};

    use super::*;
    use crate::checkers::testkit::{R1, R2, Script, assert_broken, assert_holds, lease};

    #[test]
    fn stop_quiesces_holds_for_a_correct_run_and_a_stop_during_acquire() {
        assert_holds(Invariant::StopQuiesces, &Script::correct_run());
        assert_holds(Invariant::StopQuiesces, &stop_during_acquire());
    }

    /// Stop comes while the acquire is in flight; the lease it returns is released.
    fn stop_during_acquire() -> Script {
        let mut script = Script::new();
        script.at(100).start(R1, 1);
        let call = script.send(R1, Request::Acquire);
        script.at(110).on(R1, EventKind::StopCalled);
        script
            .at(120)
            .answer(R1, call, OpKind::Acquire, Answer::Lease(Some(lease(1))));
        script.release(R1, 1);
        script.end(R1, 1, EndKind::Stopped, 0);
        script.on(R1, EventKind::StopResolved);
        script.on(R1, EventKind::Restarted);
        script.at(500).correct_term(R1, 2, 2);
        script
    }

    #[test]
    fn stop_quiesces_breaks_on_a_renewal_after_stop() {
        let mut script = Script::new();
        script.start(R2, 1);
        script.acquire(R2, 1);
        script.at(900).on(R2, EventKind::StopCalled);
        script.at(1000).send(R2, Request::Renew { lease: lease(1) });
        let seq = script.last_seq();
        let words = ["r2 sent renew at t=1000ms after its stop() was called at t=900ms"];
        assert_broken(Invariant::StopQuiesces, &script, seq, &words);
    }

    #[test]
    fn stop_quiesces_breaks_on_a_run_after_stop() {
        let mut script = Script::new();
        script.at(1000).correct_term(R1, 1, 1);
        script.at(5000).on(R1, EventKind::StopCalled);
        script.on(R1, EventKind::StopResolved);
        script.at(6000).start(R1, 2);
        script.send(R1, Request::Acquire);
        let seq = script.last_seq();
        assert_broken(
            Invariant::StopQuiesces,
            &script,
            seq,
            &["r1 sent acquire at t=6000ms"],
        );
    }

    #[test]
    fn stop_joins_holds_for_a_correct_run_and_a_stop_during_acquire() {
        assert_holds(Invariant::StopJoins, &Script::correct_run());
        assert_holds(Invariant::StopJoins, &stop_during_acquire());
    }

    #[test]
    fn stop_joins_breaks_while_the_term_runs() {
        let mut script = Script::new();
        script.at(100).start(R1, 2);
        script.acquire(R1, 1);
        script.at(900).on(R1, EventKind::StopCalled);
        let seq = script.on(R1, EventKind::StopResolved);
        let words = ["r1's stop() resolved at t=900ms while its term 2, started at t=100ms"];
        assert_broken(Invariant::StopJoins, &script, seq, &words);
    }

    #[test]
    fn stop_joins_breaks_with_a_call_in_flight() {
        let mut script = Script::new();
        script.at(100).start(R1, 1);
        script.acquire(R1, 1);
        script.at(700).send(R1, Request::Renew { lease: lease(1) });
        script.end(R1, 1, EndKind::Stopped, 0);
        script.at(900).on(R1, EventKind::StopCalled);
        let seq = script.on(R1, EventKind::StopResolved);
        let words = ["while its renew call 2, sent at t=700ms, was unanswered"];
        assert_broken(Invariant::StopJoins, &script, seq, &words);
    }

    #[test]
    fn stop_joins_breaks_when_the_lease_was_not_released() {
        let mut script = Script::new();
        script.at(100).start(R1, 4);
        script.acquire(R1, 1);
        script.end(R1, 4, EndKind::Stopped, 0);
        script.at(900).on(R1, EventKind::StopCalled);
        let seq = script.on(R1, EventKind::StopResolved);
        let words = [
            "lease of its term 4 (token 1) was not released",
            "no release was sent",
        ];
        assert_broken(Invariant::StopJoins, &script, seq, &words);
    }
}
