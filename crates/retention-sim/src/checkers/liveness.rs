//! Progress once faults heal: `liveness`.
//!
//! Terminology:
//! - *healed*: from `Phase(Liveness)` on (liveness, shutdown, end): faults are off, so work
//!   must finish.
//! - *bounded term*: a term that is open once healed: one that started after healing must end
//!   within `term_bound_ms` of its start, one still open when faults healed within
//!   `term_bound_ms` of the healing (faults no longer excuse it from then on).
//! - *deadline*: the earliest instant at which an open bounded term overruns its bound,
//!   compared with every event's time (and with the end of the run).
//! - *backlog*: rows still in the store that were eligible for deletion; the world reports it
//!   with `Backlog` at the end of the liveness phase, and it must be zero.
//! - *unresolved stop*: a `StopCalled` without its `StopResolved` at `Phase(End)` or at the
//!   end of the run.

use crate::Retention;
use crate::events::Stamped;
use crate::events::{ClockMs, Event, EventKind, Note, Phase, ReplicaId};

use super::track::{PerReplica, Ring, replica_of, term_number};
use super::words::At;
use super::{CheckConfig, Checker, Facts, Invariant, Violation};

/// What `liveness` keeps per replica.
#[derive(Debug, Default)]
struct LiveReplica {
    /// The replica's last events, for context.
    recent: Ring<5>,
    /// The `TermStarted` of the open term, whenever it started.
    term: Option<Stamped<Event>>,
    /// `StopCalled`s not yet matched by a `StopResolved`.
    unresolved_stops: u32,
    /// The oldest unresolved `StopCalled`.
    stop: Option<Stamped<Event>>,
}

impl LiveReplica {
    /// When the open term overruns: `bound_ms` after its start or after the healing at
    /// `healed_ms`, whichever is later (`u64::MAX`: no open term, or not healed yet).
    fn deadline_ms(&self, bound_ms: u64, healed_ms: Option<u64>) -> u64 {
        match (&self.term, healed_ms) {
            (Some(started), Some(healed_ms)) => {
                started.at_ms.max(healed_ms).saturating_add(bound_ms)
            }
            _ => u64::MAX,
        }
    }

    fn observe(&mut self, event: &Stamped<Event>) {
        match event.event.kind {
            EventKind::Note(Note::TermStarted { .. }) => self.term = Some(event.clone()),
            EventKind::Note(Note::TermEnded { .. }) => self.term = None,
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

    fn healed_ms(&self) -> Option<u64> {
        self.healed.as_ref().map(|phase| phase.at_ms)
    }

    fn refresh_deadline(&mut self) {
        let (bound_ms, healed_ms) = (self.term_bound_ms, self.healed_ms());
        self.deadline_ms = self
            .replicas
            .iter()
            .map(|(_, live)| live.deadline_ms(bound_ms, healed_ms))
            .min()
            .unwrap_or(u64::MAX);
    }

    /// The open bounded term that overran first, forgotten once reported.
    fn overrun(&mut self, now_ms: u64) -> Option<(ReplicaId, Stamped<Event>)> {
        let (bound_ms, healed_ms) = (self.term_bound_ms, self.healed_ms());
        let (replica, _) = self
            .replicas
            .iter()
            .filter(|(_, live)| live.deadline_ms(bound_ms, healed_ms) < now_ms)
            .min_by_key(|(_, live)| live.deadline_ms(bound_ms, healed_ms))?;
        let started = self.replicas.at(replica).term.take()?;
        self.refresh_deadline();
        // invariant: a reported term is forgotten, so it is reported once.
        debug_assert!(self.replicas.get(replica).is_some_and(|l| l.term.is_none()));
        Some((replica, started))
    }

    /// The overrun at `now_ms`, reported at `event` (at the end of the run: at the culprit's
    /// last event).
    fn overrun_violation(
        &mut self,
        event: Option<&Stamped<Event>>,
        now_ms: u64,
    ) -> Option<Violation> {
        let healed_ms = self.healed_ms()?;
        let (replica, started) = self.overrun(now_ms)?;
        let (term, bound_ms) = (term_number(&started), self.term_bound_ms);
        let sentence = if started.at_ms < healed_ms {
            format!(
                "{replica}'s term {term}, open since {} when faults healed at {}, had not ended \
                 by {} (bound {bound_ms}ms)",
                At(started.at_ms),
                At(healed_ms),
                At(now_ms)
            )
        } else {
            format!(
                "{replica}'s term {term} started at {} in the liveness phase and was still open \
                 at {}, more than the {bound_ms}ms bound later",
                At(started.at_ms),
                At(now_ms)
            )
        };
        let live = self.replicas.get(replica)?;
        let event = event.or(live.recent.last()).unwrap_or(&started);
        let context = [Some(&started), self.healed.as_ref()]
            .into_iter()
            .chain(live.recent.iter());
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

    /// Takes `event` in: phases, the backlog check, each replica's terms and stops. Returns
    /// the violation the event itself shows (an unresolved stop or a backlog at the end).
    fn take_in(&mut self, event: &Stamped<Event>) -> Option<Violation> {
        match (event.event.kind, replica_of(event)) {
            (EventKind::Phase(phase), _) => {
                if phase >= Phase::Liveness && self.healed.is_none() {
                    // From here on, terms still open are bounded too.
                    self.healed = Some(event.clone());
                    self.refresh_deadline();
                }
                match phase == Phase::End {
                    true => self.unresolved_stop(Some(event), event.at_ms),
                    false => None,
                }
            }
            (
                EventKind::Note(Note::Backlog {
                    eligible_before_ms,
                    remaining,
                }),
                _,
            ) if remaining > 0 => Some(self.backlog(event, eligible_before_ms, remaining)),
            (kind, Some(replica)) => {
                self.replicas.at(replica).observe(event);
                match kind {
                    EventKind::Note(Note::TermStarted { .. }) => self.refresh_deadline(),
                    EventKind::Note(Note::TermEnded { .. }) => {
                        self.last_term_end = Some(event.clone());
                        self.refresh_deadline();
                    }
                    _ => {}
                }
                None
            }
            _ => None,
        }
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

impl Checker<Retention> for Liveness {
    fn invariant(&self) -> Invariant {
        Invariant::Liveness
    }

    #[inline(always)]
    fn on_event(&mut self, event: &Stamped<Event>, _facts: &Facts) -> Option<Violation> {
        if event.at_ms > self.deadline_ms && self.healed.is_some() {
            // A term overran: reported at this event, after the event is taken in.
            let overrun = self.overrun_violation(Some(event), event.at_ms);
            let verdict = self.take_in(event);
            return overrun.or(verdict);
        }
        // The common path builds no violation to move (one is large).
        self.take_in(event)
    }

    fn finish(&mut self, end_ms: u64, _facts: &Facts) -> Option<Violation> {
        if end_ms > self.deadline_ms {
            return self.overrun_violation(None, end_ms);
        }
        self.unresolved_stop(None, end_ms)
    }
}

#[cfg(test)]
mod tests {
    use crate::events::{EndKind, Request};

    use super::*;
    use crate::checkers::testkit::{R1, R2, Script, assert_broken, assert_holds, check};

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
    fn liveness_breaks_on_a_term_open_at_healing_that_never_ends() {
        let mut script = Script::new();
        script.world(EventKind::Phase(Phase::Safety));
        script.at(100).start(R2, 3);
        script.acquire(R2, 1);
        script.at(10_000).world(EventKind::Phase(Phase::Liveness));
        script.at(14_000).start(R1, 1);
        let seq = script.at(15_001).clock(R1, 15_001);
        let words = [
            "r2's term 3, open since t=100ms when faults healed at t=10000ms, had not ended by \
              t=15001ms (bound 5000ms)",
        ];
        assert_broken(Invariant::Liveness, &script, seq, &words);
        // At the end of the run too, with the replica's last event as the offending one.
        let mut script = Script::new();
        script.at(100).start(R1, 2);
        let seq = script.clock(R1, 100);
        script.at(10_000).world(EventKind::Phase(Phase::Liveness));
        script.at(20_000);
        let words = [
            "r1's term 2, open since t=100ms",
            "had not ended by t=20000ms",
        ];
        assert_broken(Invariant::Liveness, &script, seq, &words);
    }

    #[test]
    fn liveness_breaks_on_a_backlog() {
        let mut script = Script::new();
        script.at(10_000).world(EventKind::Phase(Phase::Liveness));
        script.at(12_000).correct_term(R1, 1, 1);
        let backlog = EventKind::Note(Note::Backlog {
            eligible_before_ms: 9000,
            remaining: 412,
        });
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
