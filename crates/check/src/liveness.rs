//! Progress once faults heal: `liveness`.
//!
//! Terminology:
//! - *healed*: from `Phase(Liveness)` on (liveness, shutdown, end): faults are off, so work
//!   must finish.
//! - *liveness term*: a term that started once healed; it must end within `term_bound_ms`.
//! - *deadline*: the earliest instant at which an open liveness term overruns its bound,
//!   compared with every event's time (and with the end of the run).
//! - *backlog*: rows still in the store that were eligible for deletion; the world reports it
//!   with `Backlog` at the end of the liveness phase, and it must be zero.
//! - *unresolved stop*: a `StopCalled` without its `StopResolved` at `Phase(End)` or at the
//!   end of the run.

use leasesim_events::{ClockMs, Event, EventKind, Phase, ReplicaId};
use leasesim_rt::Stamped;

use crate::track::{PerReplica, Ring, replica_of, term_number};
use crate::violation::At;
use crate::{CheckConfig, Checker, Invariant, Violation};

/// What `liveness` keeps per replica.
#[derive(Debug, Default)]
struct LiveReplica {
    /// The replica's last events, for context.
    recent: Ring<5>,
    /// The open term, if it started once healed.
    term: Option<Stamped<Event>>,
    /// `StopCalled`s not yet matched by a `StopResolved`.
    unresolved_stops: u32,
    /// The oldest unresolved `StopCalled`.
    stop: Option<Stamped<Event>>,
}

impl LiveReplica {
    fn deadline_ms(&self, bound_ms: u64) -> u64 {
        self.term
            .as_ref()
            .map_or(u64::MAX, |started| started.at_ms.saturating_add(bound_ms))
    }

    fn observe(&mut self, event: &Stamped<Event>, healed: bool) {
        match event.event.kind {
            EventKind::TermStarted { .. } => self.term = healed.then(|| event.clone()),
            EventKind::TermEnded { .. } => self.term = None,
            EventKind::StopCalled => {
                self.unresolved_stops += 1;
                self.stop.get_or_insert_with(|| event.clone());
            }
            EventKind::StopResolved => {
                self.unresolved_stops = self.unresolved_stops.saturating_sub(1);
                if self.unresolved_stops == 0 {
                    self.stop = None;
                }
            }
            _ => {}
        }
        debug_assert_eq!(self.stop.is_some(), self.unresolved_stops > 0);
        self.recent.push(event);
    }
}

/// `liveness`: terms end within the bound, stops resolve, and the backlog drains.
#[derive(Debug)]
pub struct Liveness {
    term_bound_ms: u64,
    /// The `Phase` event that healed the run, once seen.
    healed: Option<Stamped<Event>>,
    replicas: PerReplica<LiveReplica>,
    /// The earliest deadline of the open liveness terms (`u64::MAX`: none).
    deadline_ms: u64,
    /// The latest `TermEnded` of any replica.
    last_term_end: Option<Stamped<Event>>,
}

impl Liveness {
    pub fn new(config: &CheckConfig) -> Liveness {
        Liveness {
            term_bound_ms: config.term_bound_ms,
            healed: None,
            replicas: PerReplica::default(),
            deadline_ms: u64::MAX,
            last_term_end: None,
        }
    }

    fn refresh_deadline(&mut self) {
        let bound_ms = self.term_bound_ms;
        self.deadline_ms = self
            .replicas
            .iter()
            .map(|(_, live)| live.deadline_ms(bound_ms))
            .min()
            .unwrap_or(u64::MAX);
    }

    /// The open liveness term that overran first, forgotten once reported.
    fn overrun(&mut self, now_ms: u64) -> Option<(ReplicaId, Stamped<Event>)> {
        let bound_ms = self.term_bound_ms;
        let (replica, _) = self
            .replicas
            .iter()
            .filter(|(_, live)| live.deadline_ms(bound_ms) < now_ms)
            .min_by_key(|(_, live)| live.deadline_ms(bound_ms))?;
        let started = self.replicas.at(replica).term.take()?;
        self.refresh_deadline();
        Some((replica, started))
    }

    /// The overrun at `now_ms`, reported at `event` (at the end of the run: at the culprit's
    /// last event).
    fn overrun_violation(
        &mut self,
        event: Option<&Stamped<Event>>,
        now_ms: u64,
    ) -> Option<Violation> {
        let (replica, started) = self.overrun(now_ms)?;
        let sentence = format!(
            "{replica}'s term {} started at {} in the liveness phase and was still open at {}, \
             more than the {}ms bound later",
            term_number(&started),
            At(started.at_ms),
            At(now_ms),
            self.term_bound_ms
        );
        let live = self.replicas.get(replica)?;
        let event = event.or(live.recent.last()).unwrap_or(&started);
        let context = [Some(&started)].into_iter().chain(live.recent.iter());
        Some(Violation::new(Invariant::Liveness, event, context, sentence).dated(now_ms))
    }

    /// The first replica with a stop that never resolved: the violation at `event`.
    fn unresolved_stop(&self, event: Option<&Stamped<Event>>, now_ms: u64) -> Option<Violation> {
        let (replica, live) = self
            .replicas
            .iter()
            .find(|(_, live)| live.unresolved_stops > 0)?;
        let stop = live.stop.as_ref()?;
        let sentence = format!(
            "{replica}'s stop() called at {} had not resolved by {}, the end of the run",
            At(stop.at_ms),
            At(now_ms)
        );
        // At the end of the run, the replica's last event stands for the missing resolution.
        let event = event.or(live.recent.last()).unwrap_or(stop);
        let context = [Some(stop)].into_iter().chain(live.recent.iter());
        Some(Violation::new(Invariant::Liveness, event, context, sentence).dated(now_ms))
    }

    fn backlog(&self, event: &Stamped<Event>, eligible_ms: u64, remaining: u64) -> Violation {
        let sentence = format!(
            "{remaining} rows created before clock {} were still in the store at {}, the end of \
             the liveness phase",
            ClockMs(eligible_ms),
            At(event.at_ms)
        );
        let context = [self.healed.as_ref(), self.last_term_end.as_ref()];
        Violation::new(Invariant::Liveness, event, context, sentence)
    }
}

impl Checker for Liveness {
    fn invariant(&self) -> Invariant {
        Invariant::Liveness
    }

    fn on_event(&mut self, event: &Stamped<Event>) -> Option<Violation> {
        let overrun = if event.at_ms > self.deadline_ms {
            self.overrun_violation(Some(event), event.at_ms)
        } else {
            None
        };
        let verdict = match (event.event.kind, replica_of(event)) {
            (EventKind::Phase(phase), _) => {
                if phase >= Phase::Liveness && self.healed.is_none() {
                    self.healed = Some(event.clone());
                }
                (phase == Phase::End).then(|| self.unresolved_stop(Some(event), event.at_ms))
            }
            (
                EventKind::Backlog {
                    eligible_before_ms,
                    remaining,
                },
                _,
            ) if remaining > 0 => Some(Some(self.backlog(event, eligible_before_ms, remaining))),
            (kind, Some(replica)) => {
                let healed = self.healed.is_some();
                self.replicas.at(replica).observe(event, healed);
                match kind {
                    EventKind::TermStarted { .. } => self.refresh_deadline(),
                    EventKind::TermEnded { .. } => {
                        self.last_term_end = Some(event.clone());
                        self.refresh_deadline();
                    }
                    _ => {}
                }
                None
            }
            _ => None,
        };
        overrun.or(verdict.flatten())
    }

    fn finish(&mut self, end_ms: u64) -> Option<Violation> {
        if end_ms > self.deadline_ms {
            return self.overrun_violation(None, end_ms);
        }
        self.unresolved_stop(None, end_ms)
    }
}

#[cfg(test)]
mod tests {
    use leasesim_events::{EndKind, Request};

    use super::*;
    use crate::testkit::{R1, R2, Script, assert_broken, assert_holds, check};

    #[test]
    fn liveness_holds_for_a_correct_run() {
        assert_holds(Invariant::Liveness, &Script::correct_run());
    }

    #[test]
    fn liveness_ignores_long_terms_before_healing() {
        let mut script = Script::new();
        script.world(EventKind::Phase(Phase::Safety));
        script.at(100).start(R1, 1);
        script.at(60_000).world(EventKind::Phase(Phase::Liveness));
        script.end(R1, 1, EndKind::Drained, 0);
        assert_holds(Invariant::Liveness, &script);
    }

    #[test]
    fn liveness_breaks_on_a_backlog() {
        let mut script = Script::new();
        script.at(10_000).world(EventKind::Phase(Phase::Liveness));
        script.at(12_000).correct_term(R1, 1, 1);
        let backlog = EventKind::Backlog {
            eligible_before_ms: 9000,
            remaining: 412,
        };
        let seq = script.at(20_000).world(backlog);
        let words =
            ["412 rows created before clock -999991000ms were still in the store at t=20000ms"];
        assert_broken(Invariant::Liveness, &script, seq, &words);
    }

    #[test]
    fn liveness_breaks_on_a_stop_that_never_resolves() {
        let mut script = Script::new();
        script.at(10_000).world(EventKind::Phase(Phase::Shutdown));
        script.on(R1, EventKind::StopCalled);
        script.on(R1, EventKind::StopResolved);
        script.at(10_100).on(R2, EventKind::StopCalled);
        let seq = script.at(11_000).world(EventKind::Phase(Phase::End));
        let words = ["r2's stop() called at t=10100ms had not resolved by t=11000ms"];
        assert_broken(Invariant::Liveness, &script, seq, &words);
    }

    #[test]
    fn liveness_finish_reports_an_unresolved_stop_at_the_replicas_last_event() {
        let mut script = Script::new();
        script.at(100).on(R1, EventKind::StopCalled);
        script.at(200).send(R1, Request::Acquire);
        let seq = script.last_seq();
        script.at(900);
        assert_broken(
            Invariant::Liveness,
            &script,
            seq,
            &["not resolved by t=900ms"],
        );
        let violation = check(Invariant::Liveness, &script).expect("a violation");
        assert_eq!(violation.at_ms, 900);
        assert_eq!(violation.context.len(), 1);
    }

    #[test]
    fn liveness_breaks_on_a_term_that_overruns_its_bound() {
        let mut script = Script::new();
        script.at(10_000).world(EventKind::Phase(Phase::Liveness));
        script.at(10_500).start(R2, 3);
        script.acquire(R2, 1);
        script.at(15_500).clock(R2, 15_500);
        let seq = script.at(15_501).clock(R2, 15_501);
        let words = [
            "r2's term 3 started at t=10500ms",
            "still open at t=15501ms",
            "5000ms bound",
        ];
        assert_broken(Invariant::Liveness, &script, seq, &words);
    }

    #[test]
    fn liveness_finish_reports_a_term_still_open_at_the_end() {
        let mut script = Script::new();
        script.at(10_000).world(EventKind::Phase(Phase::Liveness));
        script.at(10_500).start(R1, 1);
        script.acquire(R1, 1);
        let seq = script.last_seq();
        script.at(20_000);
        assert_broken(
            Invariant::Liveness,
            &script,
            seq,
            &["still open at t=20000ms"],
        );
    }
}
