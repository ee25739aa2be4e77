//! When a pass stops claiming, and by which clock: `pass-deadline`.
//!
//! Terminology:
//! - *pass start*: the worker's first clock reading after `PassStarted`; a pass measures its
//!   deadline from it, on the worker's own clock (the store's clock decides leases, not how
//!   long a pass may go on claiming).
//! - *first claim*: the first claim request after a find; a claim of the same item retried
//!   after a refusal belongs to the same decision and is not judged again. It carries the
//!   reading the worker decided with. Any other claim (of another item, or with no find
//!   before it) is a decision of its own and is judged.
//! - *late claim*: a first claim carrying a reading `deadline_ms` or more past the pass start.

use leasesim_events::mask;
use leasesim_invariants::{At, Checker, PerReplica, Violation};

use super::{CheckConfig, Facts, Invariant, notes_pass};
use crate::events::{ClockMs, Event, EventKind, Note, Request, Stamped, WorkItems};

type Found = Option<Violation<WorkItems>>;

/// One replica's open pass, as this checker follows it.
#[derive(Debug, Default)]
struct Pass {
    started: Option<Stamped<Event>>,
    /// The pass start reading, once read.
    start_ms: Option<u64>,
    /// A find was sent since the last claim request.
    found: bool,
    /// The item of the last first claim: its retries are not judged again.
    decided: Option<u32>,
}

/// `pass-deadline`: no first claim of a pass carries a reading past its deadline.
#[derive(Debug)]
pub struct PassDeadline {
    deadline_ms: u64,
    passes: PerReplica<Pass>,
}

impl PassDeadline {
    pub fn new(config: &CheckConfig) -> PassDeadline {
        PassDeadline {
            deadline_ms: config.deadline_ms,
            passes: PerReplica::default(),
        }
    }

    fn claimed(&mut self, event: &Stamped<Event>, item: u32, now_ms: u64) -> Found {
        let replica = event.event.replica?;
        let deadline_ms = self.deadline_ms;
        let pass = self.passes.at(replica);
        let found = std::mem::replace(&mut pass.found, false);
        let retry = !found && pass.decided == Some(item);
        pass.decided = Some(item);
        let start_ms = pass.start_ms.filter(|_| !retry)?;
        let since_ms = now_ms.saturating_sub(start_ms);
        if since_ms < deadline_ms {
            return None;
        }
        let sentence = format!(
            "{replica} claimed item {item} at {} with its clock at {}, {since_ms}ms after its \
             pass began (clock {}): a pass claims nothing new once its deadline of \
             {deadline_ms}ms has passed on the worker's clock",
            At(event.at_ms),
            ClockMs(now_ms),
            ClockMs(start_ms)
        );
        let context = [pass.started.as_ref()];
        Some(Violation::new(
            Invariant::PassDeadline,
            event,
            context,
            sentence,
        ))
    }
}

impl Checker<WorkItems> for PassDeadline {
    fn invariant(&self) -> Invariant {
        Invariant::PassDeadline
    }

    fn wants(&self, kind: &EventKind) -> bool {
        kind.bit() & (mask::CALL | mask::CLOCK_READ | mask::RESTARTED | notes_pass()) != 0
    }

    fn on_event(&mut self, event: &Stamped<Event>, _facts: &Facts) -> Found {
        let replica = event.event.replica?;
        match event.event.kind {
            EventKind::Note(Note::PassStarted { .. }) => {
                *self.passes.at(replica) = Pass {
                    started: Some(event.clone()),
                    ..Pass::default()
                };
            }
            EventKind::Note(Note::PassEnded { .. }) | EventKind::Restarted => {
                *self.passes.at(replica) = Pass::default();
            }
            EventKind::ClockRead { now_ms } => {
                let pass = self.passes.at(replica);
                if pass.started.is_some() && pass.start_ms.is_none() {
                    pass.start_ms = Some(now_ms);
                }
            }
            EventKind::Call {
                request: Request::Find { .. },
                ..
            } => self.passes.at(replica).found = true,
            EventKind::Call {
                request:
                    Request::Claim { item, now_ms, .. } | Request::PlainClaim { item, now_ms, .. },
                ..
            } => return self.claimed(event, item, now_ms),
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkers::testkit::{DEADLINE_MS, R1, Script, assert_broken, assert_holds};
    use crate::events::EPOCH_MS;

    /// r1's pass begins at t=0 with its clock at +0ms.
    fn pass() -> Script {
        let mut s = Script::new();
        s.pass_start(R1, 1);
        s.on(R1, EventKind::ClockRead { now_ms: EPOCH_MS });
        s
    }

    /// A find, then a claim of `item` sent with the worker's clock at `clock_ms`.
    fn find_then_claim(s: &mut Script, item: u32, clock_ms: u64) -> u64 {
        s.send(R1, Request::Find { after: None });
        let claim = Request::Claim {
            item,
            lease_ms: 1_000,
            now_ms: EPOCH_MS + clock_ms,
        };
        s.send(R1, claim);
        s.last_seq()
    }

    #[test]
    fn a_first_claim_past_the_deadline_breaks_pass_deadline() {
        let mut s = pass();
        find_then_claim(&mut s, 1, DEADLINE_MS - 1);
        assert_holds(Invariant::PassDeadline, &s);
        let seq = find_then_claim(&mut s, 2, DEADLINE_MS);
        let words = [
            "r1 claimed item 2",
            "5000ms after its pass began (clock +0ms)",
            "deadline of 5000ms",
        ];
        assert_broken(Invariant::PassDeadline, &s, seq, &words);
    }

    #[test]
    fn a_claim_retried_past_the_deadline_keeps_pass_deadline() {
        // The decision was made before the deadline; the retry after a refusal is its tail.
        let mut s = pass();
        find_then_claim(&mut s, 1, DEADLINE_MS - 1);
        let retry = Request::Claim {
            item: 1,
            lease_ms: 1_000,
            now_ms: EPOCH_MS + DEADLINE_MS + 50,
        };
        s.send(R1, retry);
        assert_holds(Invariant::PassDeadline, &s);
    }

    #[test]
    fn a_claim_of_another_item_without_a_find_is_judged_as_its_own_decision() {
        let mut s = pass();
        find_then_claim(&mut s, 1, DEADLINE_MS - 1);
        let other = Request::Claim {
            item: 2,
            lease_ms: 1_000,
            now_ms: EPOCH_MS + DEADLINE_MS + 50,
        };
        s.send(R1, other);
        let seq = s.last_seq();
        assert_broken(Invariant::PassDeadline, &s, seq, &["r1 claimed item 2"]);
    }
}
