//! Progress once faults heal: `liveness`.
//!
//! Terminology:
//! - *healed*: from `Phase(Liveness)` on; faults are off, so work must finish.
//! - *waiting*: a reservation held, not parked by a dead letter, whose deadline has passed.
//! - *due by*: the instant a waiting reservation must have left held: `due_bound_ms` after its
//!   deadline or after the healing, whichever is later. It is judged until the shutdown
//!   begins (then the workers are stopped, on purpose).
//! - *blocking claim*: the claim the ledger last saw on an overdue reservation; when its
//!   replica was stopped or killed, the sentence says so (a stopped worker's claim must block
//!   nothing past its expiry).
//! - *unresolved stop*: a `StopCalled` without its `StopResolved` at `Phase(End)`.

use std::collections::BTreeSet;

use leasesim_invariants::{At, Checker, PerReplica, Violation};

use super::Facts;
use super::track::{HoldSeen, Ledger, Stamp};
use super::{CheckConfig, Invariant};
use crate::Reservations;
use crate::events::{Applied, ClockMs, EPOCH_MS, EventKind, Note, Phase, ReplicaId, StatusView};

type Found = Option<Violation<Reservations>>;

/// What `liveness` keeps per replica.
#[derive(Debug, Default)]
struct Process {
    /// The oldest `StopCalled` not yet resolved.
    stop: Option<Stamp>,
    unresolved: u32,
    /// The latest stop or kill, to explain a blocking claim.
    gone: Option<Stamp>,
}

/// `liveness`: see the module docs.
#[derive(Debug)]
pub struct Liveness {
    bound_ms: u64,
    /// Waiting-or-not-yet-due reservations: `(deadline on the store clock, id)`.
    held: BTreeSet<(u64, u32)>,
    /// By id: the deadline under which it sits in `held`.
    keys: Vec<Option<u64>>,
    healed: Option<Stamp>,
    shutdown: bool,
    processes: PerReplica<Process>,
}

impl Liveness {
    pub fn new(config: &CheckConfig) -> Liveness {
        Liveness {
            bound_ms: config.due_bound_ms,
            held: BTreeSet::new(),
            keys: Vec::new(),
            healed: None,
            shutdown: false,
            processes: PerReplica::default(),
        }
    }

    /// The virtual instant `(deadline, id)` is due by, once healed.
    fn due_by_ms(&self, hold_until_ms: u64) -> Option<u64> {
        let healed_ms = self.healed.as_ref()?.at_ms;
        let deadline_ms = hold_until_ms.saturating_sub(EPOCH_MS);
        Some(deadline_ms.max(healed_ms).saturating_add(self.bound_ms))
    }

    /// The first waiting reservation overdue at `now_ms` (none after shutdown): its
    /// deadline, its id and what the ledger knows of it.
    fn first_overdue<'l>(
        &self,
        ledger: &'l Ledger,
        now_ms: u64,
    ) -> Option<(u64, u32, &'l HoldSeen)> {
        if self.shutdown {
            return None;
        }
        let &(hold_until_ms, id) = self.held.first()?;
        let due_by_ms = self.due_by_ms(hold_until_ms)?;
        if now_ms <= due_by_ms {
            return None;
        }
        Some((hold_until_ms, id, ledger.get(id)?))
    }

    /// The first waiting reservation overdue at `now_ms`, reported at `event` (at the end of
    /// the run: at the last event about it).
    fn overdue(&self, ledger: &Ledger, event: Option<&Stamp>, now_ms: u64) -> Found {
        let (hold_until_ms, id, hold) = self.first_overdue(ledger, now_ms)?;
        let healed = self.healed.as_ref()?;
        let sentence = format!(
            "h{id}, due at {}, was still held at {}, more than {}ms after {}{}",
            ClockMs(hold_until_ms),
            At(now_ms),
            self.bound_ms,
            match hold_until_ms.saturating_sub(EPOCH_MS) > healed.at_ms {
                true => "its deadline".to_string(),
                false => format!("faults healed at {}", At(healed.at_ms)),
            },
            self.blocking(ledger, id)
        );
        let claim = hold.claim.as_ref().map(|c| &c.event);
        let event = event.or(claim).unwrap_or(&hold.placed);
        let context = [Some(&hold.placed), Some(healed), claim];
        Some(Violation::new(Invariant::Liveness, event, context, sentence).dated(now_ms))
    }

    /// How the claim the ledger last saw on `id` stands.
    fn blocking(&self, ledger: &Ledger, id: u32) -> String {
        let Some(claim) = ledger.get(id).and_then(|hold| hold.claim.as_ref()) else {
            return "; no claim was on it".to_string();
        };
        let gone = self
            .processes
            .get(claim.replica)
            .and_then(|p| p.gone.as_ref())
            .filter(|gone| gone.at_ms >= claim.event.at_ms)
            .map_or(String::new(), |gone| {
                let what = match gone.event.kind {
                    EventKind::Note(Note::Killed) => "killed",
                    _ => "stopped",
                };
                format!(", {} was {what} at {}", claim.replica, At(gone.at_ms))
            });
        format!(
            "; its last claim was {}'s with token {} until {}{gone}",
            claim.replica,
            claim.token,
            ClockMs(claim.until_ms)
        )
    }

    /// The first stop that never returned, reported at `event` (at the end of the run: at the
    /// stop itself).
    fn unresolved_stop(&self, event: Option<&Stamp>, now_ms: u64) -> Found {
        let (replica, process) = self
            .processes
            .iter()
            .find(|(_, process)| process.unresolved > 0)?;
        let stop = process.stop.as_ref()?;
        let event = event.unwrap_or(stop);
        let sentence = format!(
            "{replica}'s stop() called at {} had not returned by {}, the end of the run",
            At(stop.at_ms),
            At(now_ms)
        );
        Some(Violation::new(Invariant::Liveness, event, [Some(stop)], sentence).dated(now_ms))
    }

    fn follow_process(&mut self, replica: ReplicaId, event: &Stamp) {
        let process = self.processes.at(replica);
        match event.event.kind {
            EventKind::StopCalled => {
                process.unresolved += 1;
                process.stop.get_or_insert_with(|| event.clone());
                process.gone = Some(event.clone());
            }
            EventKind::StopResolved => {
                process.unresolved = process.unresolved.saturating_sub(1);
                if process.unresolved == 0 {
                    process.stop = None;
                }
            }
            EventKind::Note(Note::Killed) => process.gone = Some(event.clone()),
            _ => {}
        }
    }

    /// Keeps `held` in step with the ledger after `event`.
    fn follow_holds(&mut self, ledger: &Ledger, event: &Stamp) {
        let id = match event.event.kind {
            EventKind::Note(Note::Placed { id, .. } | Note::Consumed { id, .. }) => id,
            EventKind::Applied {
                applied:
                    Applied::Expired { id, .. }
                    | Applied::ExpiredById { id, .. }
                    | Applied::Parked { id },
                ..
            } => id,
            _ => return,
        };
        if self.keys.len() <= id as usize {
            self.keys.resize(id as usize + 1, None);
        }
        if let Some(deadline_ms) = self.keys[id as usize].take() {
            let removed = self.held.remove(&(deadline_ms, id));
            // invariant: an indexed id sits in `held` under its deadline (so `held` and `keys`
            // change in step; checked whole at the end of the run, not per event, where a
            // walk over every hold made the cost grow with their number).
            debug_assert!(removed);
        }
        let Some(hold) = ledger.get(id) else {
            return;
        };
        if hold.status == StatusView::Held && !hold.parked {
            let inserted = self.held.insert((hold.hold_until_ms, id));
            debug_assert!(inserted);
            self.keys[id as usize] = Some(hold.hold_until_ms);
        }
    }
}

impl Checker<Reservations> for Liveness {
    fn invariant(&self) -> Invariant {
        Invariant::Liveness
    }

    fn on_event(&mut self, event: &Stamp, facts: &Facts) -> Found {
        // An overdue reservation is reported before the event is followed: a set feeds nothing
        // after a violation, so following it would be moot (and building the verdict only
        // when there is one spares copying a large empty verdict through every call).
        if self.first_overdue(facts.ledger(), event.at_ms).is_some() {
            return self.overdue(facts.ledger(), Some(event), event.at_ms);
        }
        match event.event.kind {
            EventKind::Phase(Phase::Liveness) => self.healed = Some(event.clone()),
            EventKind::Phase(Phase::Shutdown) => self.shutdown = true,
            EventKind::Phase(Phase::End) => {
                let stuck = self.unresolved_stop(Some(event), event.at_ms);
                if stuck.is_some() {
                    return stuck;
                }
            }
            _ => {}
        }
        if let Some(replica) = event.event.replica {
            self.follow_process(replica, event);
        }
        self.follow_holds(facts.ledger_after(), event);
        None
    }

    fn finish(&mut self, end_ms: u64, facts: &Facts) -> Found {
        // invariant: the deadline index holds each reservation at most once.
        debug_assert_eq!(self.held.len(), self.keys.iter().flatten().count());
        self.overdue(facts.ledger(), None, end_ms)
            .or_else(|| self.unresolved_stop(None, end_ms))
    }
}
