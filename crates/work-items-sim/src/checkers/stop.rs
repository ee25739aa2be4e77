//! Stopping a worker: `stop-quiesces`, `stop-joins`.
//!
//! Terminology:
//! - *incarnation*: a replica's worker from its start, or from `Restarted`, to the next
//!   `Restarted`; a stop belongs to one incarnation.
//! - *quiet*: after `StopCalled` the worker may only give back the claim it holds (a release
//!   or a fail) and wait for what is in flight.
//! - *claim held at the stop*: the held claim, not settled, when `StopCalled` came; by
//!   `StopResolved` a release, fail or done of it must have been answered, or a write of it
//!   answered lease-lost.

use leasesim_events::mask;
use leasesim_invariants::{At, Checker, PerReplica};

use super::claims::calls;
use super::facts::Facts;
use super::track::{Ending, Held, Ledger};
use super::{CheckConfig, Invariant, Violation};
use crate::events::{Event, EventKind, Op, Stamped, WorkItems};

/// `stop-quiesces`: after `stop()` nothing but a release or fail is sent.
#[derive(Debug, Default)]
pub struct StopQuiesces {}

impl StopQuiesces {
    pub fn new() -> StopQuiesces {
        StopQuiesces::default()
    }
}

impl Checker<WorkItems> for StopQuiesces {
    fn invariant(&self) -> Invariant {
        Invariant::StopQuiesces
    }

    fn wants(&self, kind: &EventKind) -> bool {
        calls(kind)
    }

    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = event.event.replica?;
        // The before view: the stop of this incarnation, if it came before this call.
        match (event.event.kind, &facts.ledger(replica).stop) {
            (EventKind::Call { request, .. }, Some(stop))
                if !matches!(request.op(), Op::Release | Op::Fail) =>
            {
                let item = request
                    .item()
                    .map_or(String::new(), |i| format!(" for item {i}"));
                let sentence = format!(
                    "{replica} sent {}{item} at {}, after its stop() was called at {}",
                    leasesim_events::OpSet::name(request.op()),
                    At(event.at_ms),
                    At(stop.at_ms)
                );
                let context = [Some(stop)];
                Some(Violation::new(
                    Invariant::StopQuiesces,
                    event,
                    context,
                    sentence,
                ))
            }
            _ => None,
        }
    }
}

/// The claim a replica held, unsettled, when its stop was called.
#[derive(Debug)]
struct HeldAtStop {
    item: u32,
    token: u64,
    granted: Stamped<Event>,
    /// A release, fail or done of it was answered, or a write of it answered lease-lost.
    answered: bool,
}

/// `stop-joins`: `stop()` returns only once the pass ended, nothing is in flight and the
/// claim held at the stop was settled.
#[derive(Debug)]
pub struct StopJoins {
    /// Per replica: the claim its current incarnation held, unsettled, at its stop.
    held_at_stop: PerReplica<Option<HeldAtStop>>,
    /// A give-back that failed this many times (its first try and every retry) was
    /// abandoned for good: the worker owes no settle of it any more.
    give_backs_allowed: u32,
}

impl StopJoins {
    pub fn new(config: &CheckConfig) -> StopJoins {
        StopJoins {
            held_at_stop: PerReplica::default(),
            give_backs_allowed: config.max_retries + 1,
        }
    }
}

/// Why a stop that resolves now resolves too early, if it does (`ledger`: the before view).
fn too_early<'a>(
    ledger: &'a Ledger,
    held_at_stop: Option<&'a HeldAtStop>,
) -> Option<(String, Option<&'a Stamped<Event>>)> {
    if let Some(pass) = &ledger.pass {
        return Some((
            format!("its pass begun at {} had not ended", At(pass.at_ms)),
            Some(pass),
        ));
    }
    if let Some((_, request, call)) = ledger.in_flight.first() {
        let op = leasesim_events::OpSet::name(request.op());
        return Some((
            format!("its {op} sent at {} was unanswered", At(call.at_ms)),
            Some(call),
        ));
    }
    let held = held_at_stop.filter(|h| !h.answered)?;
    Some((
        format!(
            "the claim it held at the stop (item {}, token {}) was neither given back nor \
             marked",
            held.item, held.token
        ),
        Some(&held.granted),
    ))
}

/// Follows the claim held at the stop through `event` (`ledger`: the before view; a give-back
/// failed `give_backs_allowed` times was abandoned for good).
fn follow(
    held_at_stop: &mut Option<HeldAtStop>,
    ledger: &Ledger,
    event: &Stamped<Event>,
    give_backs_allowed: u32,
) {
    match event.event.kind {
        EventKind::StopCalled => {
            // A claim whose release or fail ran out of retries before the stop was given up
            // for good: the worker owes it no settle (it may already be claiming anew). One
            // with retries left is still owed.
            let owed = |held: &&Held| {
                let given_up = held.ending == Ending::Abandoned
                    && held.give_backs_failed >= give_backs_allowed;
                !held.settled() && !given_up
            };
            *held_at_stop = ledger.held.as_ref().filter(owed).map(|held| HeldAtStop {
                item: held.item,
                token: held.token,
                granted: held.granted.clone(),
                answered: false,
            });
        }
        EventKind::Answered { call, answer, .. } => {
            let (Some(request), Some(held)) = (ledger.request_of(call), held_at_stop.as_mut())
            else {
                return;
            };
            let ends = matches!(request.op(), Op::Release | Op::Fail | Op::Done)
                || answer == crate::events::Answer::LeaseLost;
            if ends && request.item() == Some(held.item) && request.token() == Some(held.token) {
                held.answered = true;
            }
        }
        EventKind::Restarted => *held_at_stop = None,
        _ => {}
    }
}

impl Checker<WorkItems> for StopJoins {
    fn invariant(&self) -> Invariant {
        Invariant::StopJoins
    }

    /// Stops, their returns, answers and restarts: what it judges and what moves the claim
    /// it follows from a stop; the facts follow the rest.
    fn wants(&self, kind: &EventKind) -> bool {
        let wanted = mask::STOP_CALLED | mask::STOP_RESOLVED | mask::ANSWERED | mask::RESTARTED;
        kind.bit() & wanted != 0
    }

    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = event.event.replica?;
        let ledger = facts.ledger(replica);
        let held_at_stop = self.held_at_stop.at(replica);
        let verdict = match event.event.kind {
            EventKind::StopResolved => {
                too_early(ledger, held_at_stop.as_ref()).map(|(why, culprit)| {
                    let stop = ledger.stop.as_ref();
                    let called =
                        stop.map_or(String::new(), |s| format!(" (called at {})", At(s.at_ms)));
                    let sentence = format!(
                        "{replica}'s stop(){called} returned at {}, but {why}",
                        At(event.at_ms)
                    );
                    Violation::new(Invariant::StopJoins, event, [stop, culprit], sentence)
                })
            }
            _ => None,
        };
        follow(held_at_stop, ledger, event, self.give_backs_allowed);
        // Moved out only when found: a violation is large, and most events find none.
        let violation = verdict?;
        Some(violation)
    }
}

#[cfg(test)]
mod tests {
    use leasesim_events::NetFailure;

    use super::*;
    use crate::checkers::testkit::{R1, R2, Script, assert_broken, assert_holds};
    use crate::events::{EndKind, ErrorCode, Mark, PassCounts, Request};

    fn release(item: u32, token: u64) -> Request {
        Request::Release {
            item,
            token,
            error: ErrorCode::Stopped,
            now_ms: 0,
        }
    }

    /// r1 holds item 1 (token 3), then is stopped.
    fn stopped_holding() -> Script {
        let mut script = Script::new();
        script.at(100).pass_start(R1, 1);
        script.claim(R1, 1, 3, 1);
        script.at(200).on(R1, EventKind::StopCalled);
        script
    }

    #[test]
    fn stop_prompt_lets_a_release_wait_out_its_backoff_but_nothing_else() {
        // The release failed; its resend after the backoff is left to retry-backoff.
        let mut script = stopped_holding();
        script.failed(R1, release(1, 3), None, NetFailure::Rejected);
        script.on(R1, EventKind::TimerSet { duration_ms: 50 });
        script.at(400).mark(R1, release(1, 3), Mark::Released);
        script.pass_end(R1, 1, EndKind::Stopped, released(), None);
        script.on(R1, EventKind::StopResolved);
        assert_holds(Invariant::StopPrompt, &script);
        // A release sent 100ms after the stop, with nothing to wait for, waited on a timer.
        let mut script = stopped_holding();
        script.at(300).send(R1, release(1, 3));
        let seq = script.last_seq();
        let words = ["r1 sent release_if_owner at t=300ms while stopping, 100ms after its stop()"];
        assert_broken(Invariant::StopPrompt, &script, seq, &words);
    }

    fn released() -> PassCounts {
        PassCounts {
            released: 1,
            ..PassCounts::default()
        }
    }

    #[test]
    fn stop_checkers_hold_for_a_correct_run_and_a_released_claim() {
        for invariant in [Invariant::StopQuiesces, Invariant::StopJoins] {
            assert_holds(invariant, &Script::correct_run());
            let mut script = stopped_holding();
            script.mark(R1, release(1, 3), Mark::Released);
            let counts = PassCounts {
                released: 1,
                ..PassCounts::default()
            };
            script.pass_end(R1, 1, EndKind::Stopped, counts, None);
            script.on(R1, EventKind::StopResolved);
            assert_holds(invariant, &script);
        }
    }

    #[test]
    fn stop_quiesces_breaks_on_a_call_after_stop() {
        let mut script = stopped_holding();
        script.at(300).send(
            R1,
            Request::Apply {
                item: 1,
                token: 3,
                chunk: 0,
                now_ms: 0,
            },
        );
        let seq = script.last_seq();
        let words = [
            "r1 sent apply_if_owner for item 1 at t=300ms, after its stop() was called at t=200ms",
        ];
        assert_broken(Invariant::StopQuiesces, &script, seq, &words);
        // Another replica's calls are not r1's.
        let mut script = stopped_holding();
        script.send(R2, Request::Find { after: None });
        assert_holds(Invariant::StopQuiesces, &script);
    }

    /// r1 holds item 1 and tried to fail it `failures` times, each refused in transport, then
    /// is stopped; its pass ends and the stop returns.
    fn stopped_after_failed_fails(failures: u32) -> (Script, u64) {
        let mut script = Script::new();
        script.at(100).pass_start(R1, 1);
        script.claim(R1, 1, 3, 1);
        let fail = Request::Fail {
            item: 1,
            token: 3,
            error: ErrorCode::ProviderRefused,
            now_ms: 0,
        };
        for _ in 0..failures {
            script.failed(R1, fail, None, NetFailure::Timeout);
        }
        script.at(200).on(R1, EventKind::StopCalled);
        script.pass_end(R1, 1, EndKind::Stopped, PassCounts::default(), None);
        let seq = script.on(R1, EventKind::StopResolved);
        (script, seq)
    }

    /// With one retry allowed, a fail that failed twice was abandoned for good before the
    /// stop: the worker owes no settle any more. After one failure a retry was still owed,
    /// and a stop that returns without it returns too early.
    #[test]
    fn stop_joins_excuses_a_give_back_only_once_its_retries_ran_out() {
        let (spent, _) = stopped_after_failed_fails(2);
        assert_holds(Invariant::StopJoins, &spent);
        let (owed, seq) = stopped_after_failed_fails(1);
        let words = ["the claim it held at the stop (item 1, token 3) was neither given back"];
        assert_broken(Invariant::StopJoins, &owed, seq, &words);
    }

    #[test]
    fn stop_joins_breaks_when_stop_returns_early() {
        let mut script = stopped_holding();
        let seq = script.on(R1, EventKind::StopResolved);
        assert_broken(
            Invariant::StopJoins,
            &script,
            seq,
            &["its pass begun at t=100ms had not ended"],
        );
        let mut script = stopped_holding();
        script.send(R1, release(1, 3));
        script.pass_end(R1, 1, EndKind::Stopped, PassCounts::default(), None);
        let seq = script.on(R1, EventKind::StopResolved);
        let words = ["its release_if_owner sent at t=200ms was unanswered"];
        assert_broken(Invariant::StopJoins, &script, seq, &words);
        let mut script = stopped_holding();
        script.pass_end(R1, 1, EndKind::Stopped, PassCounts::default(), None);
        let seq = script.on(R1, EventKind::StopResolved);
        let words = ["the claim it held at the stop (item 1, token 3) was neither given back"];
        assert_broken(Invariant::StopJoins, &script, seq, &words);
    }
}
