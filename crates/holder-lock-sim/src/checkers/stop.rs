//! Stopping and ending: `stop-quiesces`, `stop-joins`, `liveness`.
//!
//! Terminology:
//! - *incarnation*: a replica's worker from its start, or from `Restarted`, to the next
//!   `Restarted`; a stop belongs to one incarnation.
//! - *new work*: a claim create, a renewal, a write, a job start or a job step. A release
//!   call is not new work: a stopped worker still gives its claim back.
//! - *bound*: once faults heal, an attempt must end within `attempt_bound_ms` of its start,
//!   or of the healing for an attempt already running then.

use leasesim_events::{ReplicaId, mask};
use leasesim_invariants::{At, PerReplica};

use crate::HolderLock;
use crate::events::{Event, EventKind, Note, Phase, Request, Stamped, notes};

use super::facts::Facts;
use super::{CheckConfig, Checker, Invariant, Violation};

/// `stop-quiesces`: no new work after `stop()`.
#[derive(Debug, Default)]
pub struct StopQuiesces {
    stopped: PerReplica<Option<Stamped<Event>>>,
}

impl StopQuiesces {
    pub fn new() -> StopQuiesces {
        StopQuiesces::default()
    }
}

/// The new work an event is, if it is any (see the module docs).
fn new_work(kind: &EventKind) -> Option<&'static str> {
    match kind {
        EventKind::Call { request, .. } => match request {
            Request::Create { .. } => Some("sent a create"),
            Request::Renew { .. } => Some("sent a renewal"),
            Request::Set { .. } => Some("sent a write"),
            _ => None,
        },
        EventKind::Note(Note::JobStarted { .. }) => Some("started a job"),
        EventKind::Note(Note::JobStep { .. }) => Some("took a job step"),
        _ => None,
    }
}

impl Checker<HolderLock> for StopQuiesces {
    fn invariant(&self) -> Invariant {
        Invariant::StopQuiesces
    }

    fn wants(&self, kind: &EventKind) -> bool {
        kind.bit() & (mask::CALL | mask::STOP_CALLED | mask::RESTARTED | notes::JOB) != 0
    }

    fn on_event(&mut self, event: &Stamped<Event>, _facts: &Facts) -> Option<Violation> {
        let replica = event.event.replica?;
        match event.event.kind {
            EventKind::StopCalled => *self.stopped.at(replica) = Some(event.clone()),
            EventKind::Restarted => *self.stopped.at(replica) = None,
            kind => {
                let (work, stop) = (new_work(&kind)?, self.stopped.at(replica).as_ref()?);
                let sentence = format!(
                    "{replica} {work} at {}, after its stop() was called at {}",
                    At(event.at_ms),
                    At(stop.at_ms)
                );
                let context = [Some(stop)];
                return Some(Violation::new(
                    Invariant::StopQuiesces,
                    event,
                    context,
                    sentence,
                ));
            }
        }
        None
    }
}

/// `stop-joins`: at `StopResolved` no attempt is open and no call is pending.
#[derive(Debug, Default)]
pub struct StopJoins {}

impl StopJoins {
    pub fn new() -> StopJoins {
        StopJoins::default()
    }

    /// Judged on the after view (a stop's return moves no attempt nor call).
    fn judge(
        &self,
        event: &Stamped<Event>,
        replica: ReplicaId,
        facts: &Facts,
    ) -> Option<Violation> {
        let at = At(event.at_ms);
        let attempts = facts.after();
        if let Some(open) = attempts.open(replica) {
            let sentence = format!(
                "{replica}'s stop() returned at {at} while {} (begun at {}) had not ended",
                open.id,
                At(open.started.at_ms)
            );
            let context = [Some(&open.started)];
            return Some(Violation::new(
                Invariant::StopJoins,
                event,
                context,
                sentence,
            ));
        }
        let pending = attempts.unanswered(replica).next()?;
        let name = leasesim_events::OpSet::name(pending.request.op());
        let sentence = format!(
            "{replica}'s stop() returned at {at} while its {name} sent at {} was unanswered",
            At(pending.sent.at_ms)
        );
        let context = [Some(&pending.sent)];
        Some(Violation::new(
            Invariant::StopJoins,
            event,
            context,
            sentence,
        ))
    }
}

impl Checker<HolderLock> for StopJoins {
    fn invariant(&self) -> Invariant {
        Invariant::StopJoins
    }

    /// Stop returns only: the facts follow the attempts and calls.
    fn wants(&self, kind: &EventKind) -> bool {
        kind.bit() & mask::STOP_RESOLVED != 0
    }

    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        match event.event.kind {
            EventKind::StopResolved => self.judge(event, event.event.replica?, facts),
            _ => None,
        }
    }
}

/// `liveness`: once faults heal, attempts end within the bound and every stop returns.
#[derive(Debug)]
pub struct Liveness {
    bound_ms: u64,
    healed_ms: Option<u64>,
    /// Per replica: its open attempt's start.
    open: PerReplica<Option<Stamped<Event>>>,
    /// Per replica: a `StopCalled` not yet resolved.
    stopping: PerReplica<Option<Stamped<Event>>>,
    last: Option<Stamped<Event>>,
}

impl Liveness {
    pub fn new(config: &CheckConfig) -> Liveness {
        Liveness {
            bound_ms: config.attempt_bound_ms,
            healed_ms: None,
            open: PerReplica::default(),
            stopping: PerReplica::default(),
            last: None,
        }
    }

    /// An attempt open past its deadline at virtual instant `now_ms`.
    fn overdue(&self, now_ms: u64) -> Option<(ReplicaId, &Stamped<Event>, u64)> {
        let healed_ms = self.healed_ms?;
        self.open.iter().find_map(|(replica, started)| {
            let started = started.as_ref()?;
            let deadline_ms = started.at_ms.max(healed_ms) + self.bound_ms;
            (now_ms > deadline_ms).then_some((replica, started, deadline_ms))
        })
    }

    fn judge(&self, event: &Stamped<Event>, now_ms: u64) -> Option<Violation> {
        let (replica, started, deadline_ms) = self.overdue(now_ms)?;
        let sentence = format!(
            "{replica}'s attempt begun at {} was still running at {}, past its bound of \
             {}ms (deadline {}) with faults healed",
            At(started.at_ms),
            At(now_ms),
            self.bound_ms,
            At(deadline_ms)
        );
        Some(Violation::new(
            Invariant::Liveness,
            event,
            [Some(started)],
            sentence,
        ))
    }
}

impl Checker<HolderLock> for Liveness {
    fn invariant(&self) -> Invariant {
        Invariant::Liveness
    }

    fn wants(&self, kind: &EventKind) -> bool {
        let wanted = mask::PHASE
            | mask::STOP_CALLED
            | mask::STOP_RESOLVED
            | mask::RESTARTED
            | notes::ATTEMPTS;
        kind.bit() & wanted != 0
    }

    fn on_event(&mut self, event: &Stamped<Event>, _facts: &Facts) -> Option<Violation> {
        if let Some(violation) = self.judge(event, event.at_ms) {
            return Some(violation);
        }
        self.last = Some(event.clone());
        if event.event.kind == EventKind::Phase(Phase::Liveness) {
            self.healed_ms = Some(event.at_ms);
        }
        let replica = event.event.replica?;
        match event.event.kind {
            EventKind::Note(Note::AttemptStarted { .. }) => {
                *self.open.at(replica) = Some(event.clone());
            }
            EventKind::Note(Note::AttemptEnded { .. }) | EventKind::Restarted => {
                *self.open.at(replica) = None;
            }
            EventKind::StopCalled => *self.stopping.at(replica) = Some(event.clone()),
            EventKind::StopResolved => *self.stopping.at(replica) = None,
            _ => {}
        }
        None
    }

    fn finish(&mut self, end_ms: u64, _facts: &Facts) -> Option<Violation> {
        let last = self.last.clone()?;
        if let Some(violation) = self.judge(&last, end_ms) {
            return Some(violation.dated(end_ms));
        }
        let (replica, stop) = self
            .stopping
            .iter()
            .find_map(|(replica, stop)| stop.as_ref().map(|s| (replica, s)))?;
        let sentence = format!(
            "{replica}'s stop() was called at {} and had not returned when the run ended at {}",
            At(stop.at_ms),
            At(end_ms)
        );
        let violation = Violation::new(Invariant::Liveness, &last, [Some(stop)], sentence);
        Some(violation.dated(end_ms))
    }
}
