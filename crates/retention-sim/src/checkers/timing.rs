//! Deadlines a worker must meet: `renewal-due` (`stop-prompt`, the other, is the shared
//! `leasesim_invariants::StopPrompt`; its tests are here).
//!
//! Terminology:
//! - *held lease*: from the answer that granted (acquire) or replaced (renew) a term's lease
//!   until the term sends its next renewal. The obligation to renew ends for good when the
//!   term ends, sends its release, learns of a loss (a renewal answered `None` or an error),
//!   or its replica's `stop()` is called.
//! - *renewal due*: the instant by which the next renewal of a held lease must be sent: the
//!   answer's instant plus the renewal interval as it lasts on the replica's drifting clock
//!   ([`ClockConfig::virtual_span_ms`]). A process pause that covers that instant moves it to
//!   the pause's end (a paused process sends nothing). The correct worker starts its renewal
//!   sleep in the very poll that reads the answer, and sends the renewal in the poll that
//!   wakes from it, so it sends exactly at the instant due unless a pause holds it back.
//!
//! The checker judges instants on the virtual clock, which every event carries; it reads no
//! worker's clock readings.

use crate::Retention;
use crate::events::{Answer, Event, EventKind, Note, OpKind, ReplicaId, Request, Stamped};

use super::kinds;
use super::track::{PerReplica, replica_of};
use super::words::At;
use super::{Checker, ClockConfig, Facts, Invariant, Violation};

/// A renewal that is due: the answer that started the wait and the instant it ends.
#[derive(Debug, Clone)]
struct Due {
    /// The answer that granted or replaced the lease.
    since: Stamped<Event>,
    /// The token that answer carried.
    token: u64,
    /// The interval's end on the virtual clock, before any pause moved it.
    interval_end_ms: u64,
    /// The instant the renewal must be sent by (later than `interval_end_ms` after a pause).
    due_ms: u64,
    /// The process pause that moved `due_ms`, if one did.
    pause: Option<Stamped<Event>>,
}

/// One replica's incarnation, for `renewal-due`.
#[derive(Debug, Default)]
struct Renewer {
    /// A term is open.
    open: bool,
    /// `stop()` was called in this incarnation.
    stopped: bool,
    /// Acquire and renew calls of the open term not answered yet.
    waiting: Vec<u64>,
    /// The renewal the replica owes, if it owes one.
    due: Option<Due>,
}

impl Renewer {
    /// The instant the next renewal is due, if one is owed.
    fn due_ms(&self) -> Option<u64> {
        self.due.as_ref().map(|due| due.due_ms)
    }

    /// Starts waiting for the renewal of the lease `answer` carried. The process is running
    /// at that instant (an answer is read only by a running process), so only a pause that
    /// starts from now on can move the instant due.
    fn owe(&mut self, answer: &Stamped<Event>, token: u64, span_ms: u64) {
        let interval_end_ms = answer.at_ms.saturating_add(span_ms);
        self.due = Some(Due {
            since: answer.clone(),
            token,
            interval_end_ms,
            due_ms: interval_end_ms,
            pause: None,
        });
        // invariant: a renewal is never due before the answer it follows.
        debug_assert!(
            self.due
                .as_ref()
                .is_some_and(|due| due.due_ms >= answer.at_ms)
        );
    }
}

impl Due {
    /// A process pause from `paused` until `until_ms`, starting no later than the instant due
    /// (a later one is itself overdue): if it lasts past that instant, the renewal can leave
    /// only when the pause ends.
    fn postpone(&mut self, paused: &Stamped<Event>, until_ms: u64) {
        debug_assert!(
            paused.at_ms <= self.due_ms,
            "an overdue renewal is reported first"
        );
        if until_ms > self.due_ms {
            self.due_ms = until_ms;
            self.pause = Some(paused.clone());
        }
    }
}

/// `renewal-due`: a held lease is renewed no later than the renewal interval after the answer
/// that granted or replaced it.
#[derive(Debug, Default)]
pub struct RenewalDue {
    /// The run's interval and clocks; `None`: the interval is unknown and nothing is checked.
    clocks: Option<ClockConfig>,
    replicas: PerReplica<Renewer>,
    /// The earliest instant due over all replicas (`u64::MAX`: none is due).
    earliest_ms: u64,
}

impl RenewalDue {
    pub fn new() -> RenewalDue {
        RenewalDue {
            earliest_ms: u64::MAX,
            ..RenewalDue::default()
        }
    }

    pub(crate) fn set_clocks(&mut self, clocks: ClockConfig) {
        self.clocks = Some(clocks);
    }

    fn refresh_earliest(&mut self) {
        self.earliest_ms = self
            .replicas
            .iter()
            .filter_map(|(_, renewer)| renewer.due.as_ref().map(|due| due.due_ms))
            .min()
            .unwrap_or(u64::MAX);
    }

    /// The violation at `event` (or at the end of the run, `now_ms`) of the replica whose
    /// renewal was due earliest, if it was due before `now_ms`.
    fn overdue(&self, event: Option<&Stamped<Event>>, now_ms: u64) -> Option<Violation> {
        if now_ms <= self.earliest_ms {
            return None;
        }
        let (replica, due) = self
            .replicas
            .iter()
            .filter_map(|(replica, renewer)| renewer.due.as_ref().map(|due| (replica, due)))
            .min_by_key(|(_, due)| due.due_ms)?;
        let clocks = self.clocks.as_ref()?;
        let moved = match &due.pause {
            Some(pause) => format!(
                ", and a process pause from {} held it until {}",
                At(pause.at_ms),
                At(due.due_ms)
            ),
            None => String::new(),
        };
        let sentence = format!(
            "{replica} had sent no renewal by {}: it received token {} at {}, and its {}ms \
             renewal interval ran out at {}{moved}",
            At(now_ms),
            due.token,
            At(due.since.at_ms),
            clocks.renew_every_ms,
            At(due.interval_end_ms)
        );
        let at = event.unwrap_or(&due.since);
        let context = [Some(&due.since), due.pause.as_ref()];
        Some(Violation::new(Invariant::RenewalDue, at, context, sentence).dated(now_ms))
    }

    /// Reads one event of `replica`: what it owes from now on.
    fn observe(&mut self, replica: ReplicaId, event: &Stamped<Event>) {
        let Some(clocks) = self.clocks.as_ref() else {
            return;
        };
        let renewer = self.replicas.at(replica);
        match event.event.kind {
            EventKind::Note(Note::TermStarted { .. }) => {
                renewer.open = true;
                renewer.waiting.clear();
                renewer.due = None;
            }
            EventKind::Note(Note::TermEnded { .. }) => {
                renewer.open = false;
                renewer.due = None;
            }
            EventKind::StopCalled => {
                renewer.stopped = true;
                renewer.due = None;
            }
            // invariant: a fresh incarnation owes nothing and is not stopped.
            EventKind::Restarted => *renewer = Renewer::default(),
            EventKind::Paused { until_ms } => {
                if let Some(due) = &mut renewer.due {
                    due.postpone(event, until_ms);
                }
            }
            EventKind::Call { call, request } if renewer.open => match request {
                Request::Acquire | Request::Renew { .. } => {
                    renewer.waiting.push(call);
                    renewer.due = None;
                }
                Request::Release { .. } => renewer.due = None,
                Request::Delete { .. } => {}
            },
            EventKind::Answered { call, op, answer } => {
                let Some(index) = renewer.waiting.iter().position(|&sent| sent == call) else {
                    return;
                };
                renewer.waiting.swap_remove(index);
                match (op, answer) {
                    (OpKind::Acquire | OpKind::Renew, Answer::Lease(Some(lease)))
                        if !renewer.stopped =>
                    {
                        // Worked out here only: a division of 128-bit values.
                        let span_ms = clocks.virtual_span_ms(replica, clocks.renew_every_ms);
                        renewer.owe(event, lease.token, span_ms);
                    }
                    _ => renewer.due = None,
                }
            }
            _ => {}
        }
    }
}

impl Checker<Retention> for RenewalDue {
    fn wants(&self, kind: &EventKind) -> bool {
        kinds::worker_side(kind) || kinds::process_pause(kind)
    }

    fn invariant(&self) -> Invariant {
        Invariant::RenewalDue
    }

    #[inline(always)]
    fn on_event(&mut self, event: &Stamped<Event>, _facts: &Facts) -> Option<Violation> {
        self.clocks.as_ref()?;
        // Any event later than the instant due shows the renewal was not sent in time: every
        // pause that could have moved it started no later, so it has been seen already.
        if let Some(violation) = self.overdue(Some(event), event.at_ms) {
            return Some(violation);
        }
        let replica = replica_of(event)?;
        let due_ms = |checker: &RenewalDue| checker.replicas.get(replica).and_then(Renewer::due_ms);
        let before = due_ms(self);
        self.observe(replica, event);
        // Only this replica's instant due may have moved: the earliest of all moves with it.
        if due_ms(self) != before {
            self.refresh_earliest();
        }
        // invariant: the earliest instant due is no later than this replica's.
        debug_assert!(due_ms(self).is_none_or(|due| self.earliest_ms <= due));
        None
    }

    fn finish(&mut self, end_ms: u64, _facts: &Facts) -> Option<Violation> {
        self.overdue(None, end_ms)
    }
}

#[cfg(test)]
mod renewal_due_tests {
    use crate::events::{Answer, EndKind, Failure, Phase};

    use super::*;
    use crate::checkers::checker_set;
    use crate::checkers::testkit::{R1, R2, Script, assert_holds, config, lease, run};

    fn clocked(renew_every_ms: u64, drift_ppm: Vec<i64>) -> RenewalDue {
        let mut checker = RenewalDue::new();
        checker.set_clocks(ClockConfig {
            renew_every_ms,
            drift_ppm,
        });
        checker
    }

    /// r2 starts a term at t=990 and its acquire answers token 1 at t=1000.
    fn acquired() -> Script {
        let mut script = Script::new();
        script.at(990).start(R2, 1);
        let call = script.send(R2, Request::Acquire);
        script
            .at(1000)
            .answer(R2, call, OpKind::Acquire, Answer::Lease(Some(lease(1))));
        script
    }

    /// Then r2 sends a delete at `at_ms`: an event that shows how late it is.
    fn delete_at(script: &mut Script, at_ms: u64) -> u64 {
        let request = Request::Delete {
            older_than_ms: 0,
            limit: 200,
            token: 1,
        };
        script.at(at_ms).send(R2, request);
        script.last_seq()
    }

    #[test]
    fn renewal_due_holds_for_a_correct_run_renewing_exactly_when_due() {
        // The scripted terms renew 1015ms after their acquire answered.
        assert_eq!(
            run(&mut clocked(1015, vec![0, 0]), &Script::correct_run()),
            None
        );
        let violation = run(&mut clocked(1014, vec![0, 0]), &Script::correct_run());
        let violation = violation.expect("one ms late");
        assert!(
            violation.sentence.starts_with(
                "r1 had sent no renewal by t=5030ms: it received token 1 at t=4015ms, and its \
                 1014ms renewal interval ran out at t=5029ms"
            ),
            "{violation}"
        );
        // Without the run's clocks the interval is unknown, and nothing is checked.
        assert_holds(Invariant::RenewalDue, &Script::correct_run());
        let mut script = acquired();
        delete_at(&mut script, 99_000);
        assert_holds(Invariant::RenewalDue, &script);
    }

    #[test]
    fn renewal_due_breaks_at_the_first_event_after_a_renewal_that_never_came() {
        let mut script = acquired();
        delete_at(&mut script, 1500);
        delete_at(&mut script, 2000);
        assert_eq!(run(&mut clocked(1000, vec![]), &script), None);
        // Any later event shows it, whoever's it is.
        script.at(2001).world(EventKind::Phase(Phase::Liveness));
        let violation = run(&mut clocked(1000, vec![]), &script).expect("a violation");
        assert_eq!(violation.event.seq, script.last_seq());
        assert_eq!(
            violation.sentence,
            "r2 had sent no renewal by t=2001ms: it received token 1 at t=1000ms, and its \
             1000ms renewal interval ran out at t=2000ms"
        );
        assert_eq!(violation.context.len(), 1);
        // A renewal answered with a new lease owes the next one an interval later.
        let mut script = acquired();
        script.at(2000).renew(R2, 1, 2);
        let answered_ms = 2010;
        delete_at(&mut script, answered_ms + 1000);
        assert_eq!(run(&mut clocked(1000, vec![]), &script), None);
        let seq = delete_at(&mut script, answered_ms + 1001);
        let violation = run(&mut clocked(1000, vec![]), &script).expect("a violation");
        assert_eq!(violation.event.seq, seq);
        assert!(
            violation.sentence.contains("token 2 at t=2010ms"),
            "{violation}"
        );
    }

    #[test]
    fn renewal_due_reports_a_renewal_still_owed_when_the_run_ends() {
        let mut script = acquired();
        delete_at(&mut script, 1500);
        let mut checker = clocked(1000, vec![]);
        // renewal-due reads no facts: empty ones will do.
        let facts = Facts::default();
        for event in &script.events {
            assert_eq!(checker.on_event(event, &facts), None);
        }
        assert_eq!(checker.finish(2000, &facts), None);
        let violation = checker.finish(2001, &facts).expect("a violation");
        assert_eq!((violation.at_ms, violation.event.seq), (2001, 2));
    }

    #[test]
    fn renewal_due_measures_the_interval_on_the_replicas_drifting_clock() {
        // r2's clock runs 5 % fast: its 1000ms lasts ceil(1000 / 1.05) = 953 virtual ms.
        let at = |late_ms: u64| {
            let mut script = acquired();
            delete_at(&mut script, 1000 + late_ms);
            script
                .at(1000 + late_ms)
                .send(R2, Request::Renew { lease: lease(1) });
            script
        };
        let fast = || clocked(1000, vec![0, 50_000]);
        assert_eq!(run(&mut fast(), &at(953)), None);
        assert!(run(&mut fast(), &at(954)).is_some());
        let slow = || clocked(1000, vec![0, -50_000]);
        assert_eq!(run(&mut slow(), &at(1053)), None);
        assert!(run(&mut slow(), &at(1054)).is_some());
    }

    #[test]
    fn renewal_due_waits_for_a_pause_that_holds_the_process_at_the_instant_due() {
        let paused = |pause_at_ms: u64, renew_at_ms: u64| {
            let mut script = acquired();
            script
                .at(pause_at_ms)
                .on(R2, EventKind::Paused { until_ms: 4000 });
            script.at(4000).on(R2, EventKind::Resumed);
            script
                .at(renew_at_ms)
                .send(R2, Request::Renew { lease: lease(1) });
            script
        };
        let checker = || clocked(1000, vec![]);
        assert_eq!(run(&mut checker(), &paused(1500, 4000)), None);
        assert_eq!(run(&mut checker(), &paused(2000, 4000)), None);
        let script = paused(1500, 4001);
        let violation = run(&mut checker(), &script).expect("a violation");
        assert_eq!(violation.event.seq, script.last_seq());
        assert!(
            violation.sentence.ends_with(
                "ran out at t=2000ms, and a process pause from t=1500ms held it until t=4000ms"
            ),
            "{violation}"
        );
        // A pause that starts after the renewal was due excuses nothing: it is itself late.
        let script = paused(2001, 4000);
        let violation = run(&mut checker(), &script).expect("a violation");
        assert_eq!(violation.event.seq, 3, "the Paused event");
    }

    #[test]
    fn renewal_due_is_not_moved_by_a_pause_over_before_it() {
        let paused_until = |until_ms: u64, renew_at_ms: u64| {
            let mut script = acquired();
            script.at(1200).on(R2, EventKind::Paused { until_ms });
            script.at(until_ms).on(R2, EventKind::Resumed);
            script
                .at(renew_at_ms)
                .send(R2, Request::Renew { lease: lease(1) });
            script
        };
        let checker = || clocked(1000, vec![]);
        assert_eq!(run(&mut checker(), &paused_until(1500, 2000)), None);
        assert!(run(&mut checker(), &paused_until(1500, 2001)).is_some());
        // A pause that ends just as the interval does holds nothing back.
        let violation = run(&mut checker(), &paused_until(2000, 2001)).expect("a violation");
        assert!(
            violation.sentence.ends_with("ran out at t=2000ms"),
            "{violation}"
        );
    }

    #[test]
    fn renewal_due_leaves_calls_outside_a_term_to_other_checkers() {
        // A renewal a leaked timer sends between terms (`renewal-stops`' verdict) owes nothing.
        let mut script = Script::new();
        script.at(100).correct_term(R1, 1, 1);
        script.at(3000).renew(R1, 2, 3);
        script.at(9000).world(EventKind::Phase(Phase::Shutdown));
        assert_eq!(run(&mut clocked(1015, vec![]), &script), None);
    }

    #[test]
    fn renewal_due_in_a_checker_set_reads_the_events_it_needs() {
        let clocks = ClockConfig {
            renew_every_ms: 1000,
            drift_ppm: vec![],
        };
        let verdict = |script: &Script| {
            let mut set = checker_set(&config(), &[Invariant::RenewalDue], Some(&clocks));
            script.events.iter().for_each(|event| {
                set.on_event(event);
            });
            set.take_violation().map(|violation| violation.event.seq)
        };
        let mut late = acquired();
        let seq = delete_at(&mut late, 2001);
        assert_eq!(verdict(&late), Some(seq));
        let mut paused = acquired();
        paused.at(1500).on(R2, EventKind::Paused { until_ms: 4000 });
        paused.at(4000).on(R2, EventKind::Resumed);
        paused.send(R2, Request::Renew { lease: lease(1) });
        assert_eq!(verdict(&paused), None);
    }

    #[test]
    fn renewal_due_ends_with_the_release_a_loss_a_stop_or_the_term() {
        let checker = || clocked(1000, vec![]);
        let mut released = acquired();
        released.at(1500).release(R2, 1);
        delete_at(&mut released, 9000);
        let mut lost = acquired();
        lost.at(1900)
            .renew_lost(R2, 1, Answer::Failed(Failure::Timeout));
        delete_at(&mut lost, 9000);
        let mut lost_by_none = acquired();
        lost_by_none.at(1900).renew_lost(R2, 1, Answer::Lease(None));
        delete_at(&mut lost_by_none, 9000);
        let mut stopped = acquired();
        stopped.at(1900).on(R2, EventKind::StopCalled);
        delete_at(&mut stopped, 9000);
        let mut ended = acquired();
        ended.at(1900).end(R2, 1, EndKind::Drained, 0);
        ended.at(9000).on(R1, EventKind::StopCalled);
        for script in [released, lost, lost_by_none, stopped, ended] {
            assert_eq!(run(&mut checker(), &script), None);
        }
        // A lease an acquire in flight at stop returns is released, never renewed.
        let mut script = Script::new();
        script.at(100).start(R1, 1);
        let call = script.send(R1, Request::Acquire);
        script.at(110).on(R1, EventKind::StopCalled);
        script
            .at(120)
            .answer(R1, call, OpKind::Acquire, Answer::Lease(Some(lease(1))));
        script.at(5000).release(R1, 1);
        assert_eq!(run(&mut checker(), &script), None);
        // A restarted replica owes nothing of its stopped incarnation and is not stopped.
        script.on(R1, EventKind::Restarted);
        script.at(6000).start(R1, 2);
        script.acquire(R1, 3);
        script.at(9000).world(EventKind::Phase(Phase::Shutdown));
        assert!(run(&mut checker(), &script).is_some());
    }
}

#[cfg(test)]
mod stop_prompt_tests {
    use crate::events::{Answer, EndKind};

    use super::*;
    use crate::checkers::checker_set;
    use crate::checkers::testkit::{
        R1, R2, Script, assert_broken, assert_holds, check, config, lease,
    };

    /// r1 holds token 1 and has a delete in flight when stop() is called at t=1000; the delete
    /// answers at t=1200. Returns the delete's call id.
    fn stopped_mid_delete(script: &mut Script) -> u64 {
        script.at(100).start(R1, 1);
        script.acquire(R1, 1);
        let request = Request::Delete {
            older_than_ms: 0,
            limit: 200,
            token: 1,
        };
        let call = script.at(900).send(R1, request);
        script.at(1000).on(R1, EventKind::StopCalled);
        script
            .at(1200)
            .answer(R1, call, OpKind::Delete, Answer::Rows(200));
        call
    }

    /// The release at `release_ms` (answered 10ms later), the term's end and the stop's return.
    fn wind_down(script: &mut Script, release_ms: u64) {
        script.at(release_ms).release(R1, 1);
        script.end(R1, 1, EndKind::Stopped, 200);
        script.on(R1, EventKind::StopResolved);
    }

    #[test]
    fn stop_prompt_holds_for_correct_runs_and_a_stop_during_acquire() {
        assert_holds(Invariant::StopPrompt, &Script::correct_run());
        let mut script = Script::new();
        stopped_mid_delete(&mut script);
        wind_down(&mut script, 1200);
        assert_holds(Invariant::StopPrompt, &script);
        let mut script = Script::new();
        script.at(100).start(R2, 1);
        let call = script.send(R2, Request::Acquire);
        script.at(110).on(R2, EventKind::StopCalled);
        script
            .at(400)
            .answer(R2, call, OpKind::Acquire, Answer::Lease(Some(lease(1))));
        script.release(R2, 1);
        script.end(R2, 1, EndKind::Stopped, 0);
        script.on(R2, EventKind::StopResolved);
        assert_holds(Invariant::StopPrompt, &script);
    }

    #[test]
    fn stop_prompt_breaks_on_a_release_that_waited_on_a_timer() {
        let mut script = Script::new();
        let call = stopped_mid_delete(&mut script);
        script.at(1700).release(R1, 1);
        let seq = script.last_seq() - 2;
        let words = [format!(
            "r1 sent release at t=1700ms while stopping, 500ms after its delete_batch call \
             {call} answered at t=1200ms"
        )];
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        assert_broken(Invariant::StopPrompt, &script, seq, &words);
        // The context shows the stop and the answer the release should have followed.
        let violation = check(Invariant::StopPrompt, &script).expect("a violation");
        let context: Vec<EventKind> = violation.context.iter().map(|e| e.event.kind).collect();
        assert!(matches!(
            context[..],
            [EventKind::StopCalled, EventKind::Answered { .. }]
        ));
    }

    #[test]
    fn stop_prompt_breaks_on_a_stop_that_resolves_late() {
        let mut script = Script::new();
        script.at(100).on(R2, EventKind::StopCalled);
        let seq = script.at(350).on(R2, EventKind::StopResolved);
        let words = [
            "r2's stop() resolved at t=350ms while stopping, 250ms after its stop() \
                      was called at t=100ms",
        ];
        assert_broken(Invariant::StopPrompt, &script, seq, &words);
        let mut script = Script::new();
        stopped_mid_delete(&mut script);
        script.at(1200).release(R1, 1);
        script.end(R1, 1, EndKind::Stopped, 200);
        let seq = script.at(1300).on(R1, EventKind::StopResolved);
        let words = ["90ms after its release call 3 answered at t=1210ms"];
        assert_broken(Invariant::StopPrompt, &script, seq, &words);
    }

    /// r2's stop() is called at t=200 in a pause that ends at t=700; it resolves at
    /// `resolved_ms`.
    fn stopped_in_a_pause(resolved_ms: u64) -> Script {
        let mut script = Script::new();
        script.at(100).on(R2, EventKind::Paused { until_ms: 700 });
        script.at(200).on(R2, EventKind::StopCalled);
        script.at(700).on(R2, EventKind::Resumed);
        script.at(resolved_ms).on(R2, EventKind::StopResolved);
        script
    }

    #[test]
    fn stop_prompt_lets_a_stopping_worker_wait_for_a_pause_to_end() {
        assert_holds(Invariant::StopPrompt, &stopped_in_a_pause(700));
        let script = stopped_in_a_pause(701);
        let words = ["1ms after its process resumed from a pause at t=700ms"];
        assert_broken(Invariant::StopPrompt, &script, script.last_seq(), &words);
        // In a checker set too: the set hands it the pause's end.
        let verdict = |script: &Script| {
            let mut set = checker_set(&config(), &[Invariant::StopPrompt], None);
            script.events.iter().for_each(|event| {
                set.on_event(event);
            });
            set.take_violation().map(|violation| violation.event.seq)
        };
        assert_eq!(verdict(&stopped_in_a_pause(700)), None);
        assert_eq!(verdict(&stopped_in_a_pause(701)), Some(3));
    }

    #[test]
    fn stop_prompt_judges_only_while_stopping_and_starts_afresh_after_a_restart() {
        let mut script = Script::new();
        // Calls before the stop, and after it resolved, are not its business.
        script.at(100).correct_term(R1, 1, 1);
        script.at(5000).on(R1, EventKind::StopCalled);
        script.on(R1, EventKind::StopResolved);
        script
            .at(6000)
            .send(R1, Request::Release { lease: lease(2) });
        script.on(R1, EventKind::Restarted);
        script.at(7000).correct_term(R1, 2, 3);
        assert_holds(Invariant::StopPrompt, &script);
        script.at(9000).on(R1, EventKind::StopCalled);
        let seq = script.at(9001).on(R1, EventKind::StopResolved);
        assert_broken(
            Invariant::StopPrompt,
            &script,
            seq,
            &["1ms after its stop()"],
        );
        // A stop left unresolved belongs to its incarnation alone.
        let mut script = Script::new();
        script.at(100).on(R1, EventKind::StopCalled);
        script.on(R1, EventKind::Restarted);
        script.at(5000).correct_term(R1, 1, 1);
        assert_holds(Invariant::StopPrompt, &script);
    }
}
