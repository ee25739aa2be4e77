//! The renewal loop: `serial-renewal`, `renewal-stops`, `renew-latest` and `renewal-pause`.
//!
//! Terminology:
//! - *renewal in flight*: a renew `Call` whose `Answered` has not arrived yet.
//! - *leaked timer*: a renewal sent after its term ended, or sent in a later term with a lease
//!   that term never received.
//! - *pause*: a sleep the worker started (`TimerSet`) in an open term, no earlier than its
//!   previous renewal was sent (or the term began). A renewal must follow one of the renewal
//!   interval that has run its course on the replica's clock (`renewal-pause`). A loop may
//!   start its next pause at the very instant it sends a renewal, so pauses are kept by time,
//!   not by event order.
//! - *superseded lease*: a lease the term received before a newer one (a higher token); a
//!   renewal must carry the newest. A lease the term never received is a leaked timer's, and
//!   `renewal-stops`' verdict.

use crate::Retention;
use crate::events::Stamped;
use crate::events::{Event, EventKind, Note, OpKind, ReplicaId, Request};

use leasesim_events::mask;

use super::kinds;
use super::track::{PerReplica, replica_of};
use super::words::At;
use super::{Checker, ClockConfig, Facts, Invariant, Violation};

/// `serial-renewal`: a replica never has two renewals in flight.
#[derive(Debug, Default)]
pub struct SerialRenewal {
    /// Per replica: the renew call in flight (call id and its `Call` event).
    in_flight: PerReplica<Option<(u64, Stamped<Event>)>>,
    /// Per replica: the `TermEnded` of a term that ended with that renewal still in flight
    /// (the term abandoned it), so a later renewal's sentence can say why it is unanswered.
    abandoned: PerReplica<Option<(u32, Stamped<Event>)>>,
}

impl SerialRenewal {
    pub fn new() -> SerialRenewal {
        SerialRenewal::default()
    }
}

impl Checker<Retention> for SerialRenewal {
    fn wants(&self, kind: &EventKind) -> bool {
        kinds::worker_side(kind)
    }

    fn invariant(&self) -> Invariant {
        Invariant::SerialRenewal
    }

    #[inline(always)]
    fn on_event(&mut self, event: &Stamped<Event>, _facts: &Facts) -> Option<Violation> {
        let replica = replica_of(event)?;
        let in_flight = self.in_flight.at(replica);
        let abandoned = self.abandoned.at(replica);
        match event.event.kind {
            EventKind::Call {
                call,
                request: Request::Renew { .. },
            } => {
                let earlier = in_flight.replace((call, event.clone()));
                let ended = abandoned.take();
                let (earlier_call, earlier_event) = earlier?;
                let mut sentence = format!(
                    "{replica} sent renew call {call} at {} while its renew call {earlier_call}, \
                     sent at {}, was still unanswered",
                    At(event.at_ms),
                    At(earlier_event.at_ms)
                );
                if let Some((term, ended)) = &ended {
                    // The cause: the earlier renewal's term ended without waiting for it.
                    sentence.push_str(&format!(
                        ": term {term} ended at {} with that renewal in flight, abandoning it \
                         instead of waiting for its answer",
                        At(ended.at_ms)
                    ));
                }
                return Some(Violation::new(
                    Invariant::SerialRenewal,
                    event,
                    [Some(&earlier_event), ended.as_ref().map(|(_, ended)| ended)],
                    sentence,
                ));
            }
            EventKind::Note(Note::TermEnded { term, .. }) if in_flight.is_some() => {
                abandoned.get_or_insert_with(|| (term, event.clone()));
            }
            EventKind::Answered {
                call,
                op: OpKind::Renew,
                ..
            } if in_flight
                .as_ref()
                .is_some_and(|(pending, _)| *pending == call) =>
            {
                *in_flight = None;
                *abandoned = None;
            }
            // invariant: a fresh incarnation has no renewal of its own in flight.
            EventKind::Restarted => {
                *in_flight = None;
                *abandoned = None;
            }
            _ => {}
        }
        None
    }
}

/// `renewal-stops`: renewals only inside an open term, with a lease of that term.
#[derive(Debug, Default)]
pub struct RenewalStops;

impl RenewalStops {
    pub fn new() -> RenewalStops {
        RenewalStops
    }
}

impl Checker<Retention> for RenewalStops {
    fn wants(&self, kind: &EventKind) -> bool {
        // The term flow comes from the run's facts: only the kinds judged here.
        kinds::any_of(kind, mask::CALL)
    }

    fn invariant(&self) -> Invariant {
        Invariant::RenewalStops
    }

    #[inline(always)]
    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = replica_of(event)?;
        // Judged on the replica's term including this event (the run's after view).
        let ledger = &facts.after(replica).ledger;
        let EventKind::Call {
            request: Request::Renew { lease },
            ..
        } = event.event.kind
        else {
            return None;
        };
        if ledger.open && ledger.tokens.contains(&lease.token) {
            return None;
        }
        let sent = format!(
            "{replica} sent renew with token {} at {}",
            lease.token,
            At(event.at_ms)
        );
        let sentence = if !ledger.open {
            match &ledger.ended {
                Some(ended) => format!(
                    "{sent}, after its term {} had ended at {} (a leaked renewal timer)",
                    ledger.term(),
                    At(ended.at_ms)
                ),
                None => format!("{sent}, before any term had started"),
            }
        } else {
            format!(
                "{sent} in term {}, which never received that token (a timer of an earlier term)",
                ledger.term()
            )
        };
        let context = [
            ledger.started.as_ref(),
            ledger.ended.as_ref(),
            ledger.latest_answer(),
        ];
        Some(Violation::new(
            Invariant::RenewalStops,
            event,
            context,
            sentence,
        ))
    }
}

/// `renew-latest`: every renewal carries the newest lease received in the term.
#[derive(Debug, Default)]
pub struct RenewLatest;

impl RenewLatest {
    pub fn new() -> RenewLatest {
        RenewLatest
    }
}

impl Checker<Retention> for RenewLatest {
    fn wants(&self, kind: &EventKind) -> bool {
        // The term flow comes from the run's facts: only the kinds judged here.
        kinds::any_of(kind, mask::CALL)
    }

    fn invariant(&self) -> Invariant {
        Invariant::RenewLatest
    }

    #[inline(always)]
    fn on_event(&mut self, event: &Stamped<Event>, facts: &Facts) -> Option<Violation> {
        let replica = replica_of(event)?;
        // Judged on the replica's term including this event (the run's after view).
        let ledger = &facts.after(replica).ledger;
        let EventKind::Call {
            request: Request::Renew { lease },
            ..
        } = event.event.kind
        else {
            return None;
        };
        // Outside a term, or with a lease the term never received: `renewal-stops` judges.
        if !ledger.open || !ledger.tokens.contains(&lease.token) {
            return None;
        }
        let latest = ledger.latest_token()?;
        if lease.token == latest {
            return None;
        }
        let received_ms = ledger.latest_answer().map_or(0, |answer| answer.at_ms);
        let sentence = format!(
            "{replica} sent renew with token {} at {}, but had received token {latest} at {} in \
             the same term (term {})",
            lease.token,
            At(event.at_ms),
            At(received_ms),
            ledger.term()
        );
        let context = [ledger.started.as_ref(), ledger.latest_answer()];
        Some(Violation::new(
            Invariant::RenewLatest,
            event,
            context,
            sentence,
        ))
    }
}

/// One replica's open term, for `renewal-pause`.
#[derive(Debug, Default)]
struct PauseTerm {
    open: bool,
    /// Since when the next renewal's pause is counted: the term's start or its last renewal.
    since: Option<Stamped<Event>>,
    /// The first and the last pause long enough started since then (their `TimerSet`s).
    /// Every pause of a replica lasts as long, so the first one is the first to be over.
    first_pause: Option<Stamped<Event>>,
    last_pause: Option<Stamped<Event>>,
}

/// `renewal-pause`: a renewal follows a pause of the renewal interval.
#[derive(Debug, Default)]
pub struct RenewalPause {
    /// The run's interval and clocks; `None`: any pause counts, of any length.
    clocks: Option<ClockConfig>,
    replicas: PerReplica<PauseTerm>,
}

impl RenewalPause {
    pub fn new() -> RenewalPause {
        RenewalPause::default()
    }

    pub(crate) fn set_clocks(&mut self, clocks: ClockConfig) {
        self.clocks = Some(clocks);
    }

    /// Does a sleep of `duration_ms` count as a renewal pause?
    fn long_enough(&self, duration_ms: u64) -> bool {
        self.clocks
            .as_ref()
            .is_none_or(|clocks| duration_ms >= clocks.renew_every_ms)
    }

    /// When a pause started at `started_ms` by `replica` is over (just started, without
    /// clocks: only its start is checked then).
    fn pause_end_ms(&self, replica: ReplicaId, started_ms: u64) -> u64 {
        let span_ms = self.clocks.as_ref().map_or(0, |clocks| {
            clocks.virtual_span_ms(replica, clocks.renew_every_ms)
        });
        started_ms.saturating_add(span_ms)
    }

    /// Why the renewal `event` of `replica` came without its pause, if it did.
    fn unpaused(&self, replica: ReplicaId, event: &Stamped<Event>) -> Option<String> {
        let term = self.replicas.get(replica)?;
        let first = term.first_pause.as_ref();
        if first.is_some_and(|pause| self.pause_end_ms(replica, pause.at_ms) <= event.at_ms) {
            return None;
        }
        let sent = format!("{replica} sent renew at {}", At(event.at_ms));
        let since = match &term.since {
            Some(since) if matches!(since.event.kind, EventKind::Call { .. }) => {
                format!("its previous renewal at {}", At(since.at_ms))
            }
            Some(since) => format!("its term began at {}", At(since.at_ms)),
            None => "its term began".to_owned(),
        };
        let Some(pause) = first else {
            let length = self.clocks.as_ref().map_or(String::new(), |clocks| {
                format!(" of {}ms", clocks.renew_every_ms)
            });
            return Some(format!("{sent} without a pause{length} since {since}"));
        };
        let clocks = self.clocks.as_ref()?;
        Some(format!(
            "{sent}, {}ms into the {}ms pause it started at {} (which lasts until {} on its \
             clock)",
            event.at_ms - pause.at_ms,
            clocks.renew_every_ms,
            At(pause.at_ms),
            At(self.pause_end_ms(replica, pause.at_ms))
        ))
    }
}

impl Checker<Retention> for RenewalPause {
    fn wants(&self, kind: &EventKind) -> bool {
        kinds::worker_side(kind) || matches!(kind, EventKind::TimerSet { .. })
    }

    fn invariant(&self) -> Invariant {
        Invariant::RenewalPause
    }

    #[inline(always)]
    fn on_event(&mut self, event: &Stamped<Event>, _facts: &Facts) -> Option<Violation> {
        let replica = replica_of(event)?;
        match event.event.kind {
            EventKind::Note(Note::TermStarted { .. }) => {
                let term = self.replicas.at(replica);
                term.open = true;
                term.since = Some(event.clone());
                term.first_pause = None;
                term.last_pause = None;
            }
            EventKind::Note(Note::TermEnded { .. }) => self.replicas.at(replica).open = false,
            EventKind::TimerSet { duration_ms } if self.long_enough(duration_ms) => {
                let term = self.replicas.at(replica);
                if term.open {
                    term.first_pause.get_or_insert_with(|| event.clone());
                    term.last_pause = Some(event.clone());
                }
            }
            EventKind::Call {
                request: Request::Renew { .. },
                ..
            } if self.replicas.at(replica).open => {
                let sentence = self.unpaused(replica, event);
                let term = self.replicas.at(replica);
                let since = term.since.replace(event.clone());
                // Each renewal uses up the pauses before it; one started at this very instant
                // may be the next renewal's.
                let next = term.last_pause.take().filter(|p| p.at_ms >= event.at_ms);
                let pause = std::mem::replace(&mut term.first_pause, next.clone());
                term.last_pause = next;
                let context = [since.as_ref(), pause.as_ref()];
                return Some(Violation::new(
                    Invariant::RenewalPause,
                    event,
                    context,
                    sentence?,
                ));
            }
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::events::{Answer, EndKind};

    use super::*;
    use crate::checkers::testkit::{R1, R2, Script, assert_broken, assert_holds, lease};

    #[test]
    fn serial_renewal_holds_for_correct_terms_and_across_restarts() {
        assert_holds(Invariant::SerialRenewal, &Script::correct_run());
        let mut script = Script::new();
        script.start(R1, 1);
        script.acquire(R1, 1);
        script.send(R1, Request::Renew { lease: lease(1) });
        script.on(R1, EventKind::Restarted);
        script.start(R1, 2);
        script.acquire(R1, 3);
        script.renew(R1, 3, 4);
        assert_holds(Invariant::SerialRenewal, &script);
    }

    #[test]
    fn serial_renewal_breaks_on_overlapping_renewals() {
        let mut script = Script::new();
        script.start(R2, 1);
        script.acquire(R2, 1);
        script.at(2000).renew(R2, 1, 2);
        let first = script.at(3000).send(R2, Request::Renew { lease: lease(2) });
        let second = script.at(4000).send(R2, Request::Renew { lease: lease(2) });
        let seq = script.last_seq();
        script.answer(R2, first, OpKind::Renew, Answer::Lease(Some(lease(3))));
        let words = [
            format!("r2 sent renew call {second} at t=4000ms"),
            format!("renew call {first}, sent at t=3000ms"),
        ];
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        assert_broken(Invariant::SerialRenewal, &script, seq, &words);
    }

    #[test]
    fn serial_renewal_says_when_a_term_ended_with_its_renewal_in_flight() {
        let mut script = Script::new();
        script.start(R1, 1);
        script.acquire(R1, 1);
        let first = script.at(2000).send(R1, Request::Renew { lease: lease(1) });
        script.at(2500).end(R1, 1, EndKind::CapReached, 1000);
        script.at(3000).start(R1, 2);
        script.acquire(R1, 3);
        let second = script.at(4000).send(R1, Request::Renew { lease: lease(3) });
        let seq = script.last_seq();
        let words = [
            format!("r1 sent renew call {second} at t=4000ms"),
            format!("renew call {first}, sent at t=2000ms, was still unanswered"),
            "term 1 ended at t=2500ms with that renewal in flight, abandoning it".to_string(),
        ];
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        assert_broken(Invariant::SerialRenewal, &script, seq, &words);
    }

    #[test]
    fn renewal_stops_holds_for_a_correct_run() {
        assert_holds(Invariant::RenewalStops, &Script::correct_run());
    }

    #[test]
    fn renewal_stops_breaks_on_a_renewal_after_the_term() {
        let mut script = Script::new();
        script.at(1000).correct_term(R1, 1, 1);
        script.at(9000).send(R1, Request::Renew { lease: lease(2) });
        let seq = script.last_seq();
        let words = [
            "r1 sent renew with token 2 at t=9000ms",
            "term 1 had ended",
            "leaked",
        ];
        assert_broken(Invariant::RenewalStops, &script, seq, &words);
    }

    #[test]
    fn renewal_stops_breaks_on_a_lease_of_an_earlier_term() {
        let mut script = Script::new();
        script.at(1000).correct_term(R1, 1, 1);
        script.at(5000).start(R1, 2);
        script.acquire(R1, 5);
        script.at(6000).send(R1, Request::Renew { lease: lease(2) });
        let seq = script.last_seq();
        let words = [
            "r1 sent renew with token 2 at t=6000ms in term 2",
            "never received",
        ];
        assert_broken(Invariant::RenewalStops, &script, seq, &words);
        let mut script = Script::new();
        script.start(R1, 1);
        script.send(R1, Request::Renew { lease: lease(1) });
        script.end(R1, 1, EndKind::Stopped, 0);
        assert_broken(Invariant::RenewalStops, &script, 1, &["never received"]);
    }
}

#[cfg(test)]
mod renew_latest_tests {
    use crate::events::EndKind;

    use super::*;
    use crate::checkers::testkit::{R1, R2, Script, assert_broken, assert_holds, lease};

    /// r2 acquires token 4 and renews it to 5 and 6: each renewal with the newest lease.
    fn renewing(script: &mut Script) {
        script.at(1000).start(R2, 2);
        script.acquire(R2, 4);
        script.clock(R2, 1010);
        script.at(2000).renew(R2, 4, 5);
        script.at(3000).renew(R2, 5, 6);
    }

    #[test]
    fn renew_latest_holds_for_renewals_with_the_newest_lease() {
        assert_holds(Invariant::RenewLatest, &Script::correct_run());
        let mut script = Script::new();
        renewing(&mut script);
        script.release(R2, 6);
        script.end(R2, 2, EndKind::Drained, 0);
        assert_holds(Invariant::RenewLatest, &script);
    }

    #[test]
    fn renew_latest_breaks_on_a_renewal_with_a_superseded_lease() {
        let mut script = Script::new();
        renewing(&mut script);
        script.at(4000).send(R2, Request::Renew { lease: lease(4) });
        let seq = script.last_seq();
        let words = [
            "r2 sent renew with token 4 at t=4000ms",
            "received token 6 at t=3010ms",
            "term 2",
        ];
        assert_broken(Invariant::RenewLatest, &script, seq, &words);
    }

    #[test]
    fn renew_latest_leaves_a_leaked_timers_lease_to_renewal_stops() {
        let mut script = Script::new();
        script.at(1000).correct_term(R1, 1, 1);
        script.at(5000).start(R1, 2);
        script.acquire(R1, 5);
        script.renew(R1, 5, 6);
        script.send(R1, Request::Renew { lease: lease(2) });
        assert_holds(Invariant::RenewLatest, &script);
        assert_broken(
            Invariant::RenewalStops,
            &script,
            script.last_seq(),
            &["never received"],
        );
    }
}

#[cfg(test)]
mod renewal_pause_tests {
    use crate::events::EndKind;

    use super::*;
    use crate::checkers::testkit::{R1, R2, Script, assert_broken, assert_holds, lease, run};

    fn clocked(renew_every_ms: u64, drift_ppm: Vec<i64>) -> RenewalPause {
        let mut checker = RenewalPause::new();
        checker.set_clocks(ClockConfig {
            renew_every_ms,
            drift_ppm,
        });
        checker
    }

    /// r2 acquires at t=1000, starts a pause of `pause_ms` and renews at `renew_at_ms`.
    fn renewal_after(pause_ms: u64, renew_at_ms: u64) -> Script {
        let mut script = Script::new();
        script.at(990).start(R2, 1);
        script.at(1000).acquire(R2, 1);
        script.on(
            R2,
            EventKind::TimerSet {
                duration_ms: pause_ms,
            },
        );
        script
            .at(renew_at_ms)
            .send(R2, Request::Renew { lease: lease(1) });
        script
    }

    #[test]
    fn renewal_pause_holds_for_correct_runs_with_and_without_clocks() {
        assert_holds(Invariant::RenewalPause, &Script::correct_run());
        let mut checker = clocked(1000, vec![0, 0]);
        assert_eq!(run(&mut checker, &Script::correct_run()), None);
        let mut script = Script::new();
        script.at(100).correct_term(R1, 1, 1);
        script.end(R1, 1, EndKind::Drained, 0);
        assert_eq!(run(&mut clocked(1000, vec![]), &script), None);
    }

    #[test]
    fn renewal_pause_breaks_on_a_renewal_without_a_pause() {
        let mut script = Script::new();
        script.at(100).start(R1, 2);
        script.acquire(R1, 1);
        script.at(200).send(R1, Request::Renew { lease: lease(1) });
        let seq = script.last_seq();
        let words = ["r1 sent renew at t=200ms without a pause since its term began at t=100ms"];
        assert_broken(Invariant::RenewalPause, &script, seq, &words);
        // A second renewal needs a pause of its own.
        let mut script = renewal_after(1000, 2010);
        script.at(2100).send(R2, Request::Renew { lease: lease(1) });
        let seq = script.last_seq();
        let words = ["without a pause since its previous renewal at t=2010ms"];
        assert_broken(Invariant::RenewalPause, &script, seq, &words);
    }

    #[test]
    fn renewal_pause_breaks_on_a_pause_too_short_for_the_interval() {
        let mut checker = clocked(1000, vec![0, 0]);
        assert_eq!(run(&mut checker, &renewal_after(1000, 2010)), None);
        let script = renewal_after(1000, 1600);
        let violation = run(&mut clocked(1000, vec![0, 0]), &script).expect("a violation");
        assert_eq!(violation.event.seq, script.last_seq());
        let words = "r2 sent renew at t=1600ms, 590ms into the 1000ms pause it started at \
                     t=1010ms (which lasts until t=2010ms on its clock)";
        assert_eq!(violation.sentence, words);
        let script = renewal_after(10, 2010);
        let violation = run(&mut clocked(1000, vec![0, 0]), &script).expect("a violation");
        assert!(
            violation.sentence.contains("without a pause of 1000ms"),
            "{violation}"
        );
    }

    #[test]
    fn renewal_pause_counts_a_pause_started_at_the_instant_of_the_previous_renewal() {
        // An interval timer starts its next pause in the same instant it sends a renewal.
        let mut script = renewal_after(1000, 2010);
        script
            .at(2010)
            .on(R2, EventKind::TimerSet { duration_ms: 1000 });
        script.at(3010).send(R2, Request::Renew { lease: lease(1) });
        assert_eq!(run(&mut clocked(1000, vec![0, 0]), &script), None);
        assert_holds(Invariant::RenewalPause, &script);
        // But not a pause that ended before that renewal.
        let mut script = renewal_after(1000, 2010);
        script.at(3010).send(R2, Request::Renew { lease: lease(1) });
        assert!(run(&mut clocked(1000, vec![0, 0]), &script).is_some());
    }

    #[test]
    fn renewal_pause_measures_the_pause_on_the_replicas_drifting_clock() {
        // r2's clock runs 5 % fast: its 1000ms pause lasts ceil(1000 / 1.05) = 953 virtual ms.
        let fast = || clocked(1000, vec![0, 50_000]);
        assert_eq!(run(&mut fast(), &renewal_after(1000, 1010 + 953)), None);
        assert!(run(&mut fast(), &renewal_after(1000, 1010 + 952)).is_some());
        let slow = || clocked(1000, vec![0, -50_000]);
        assert!(run(&mut slow(), &renewal_after(1000, 2010)).is_some());
        assert_eq!(run(&mut slow(), &renewal_after(1000, 1010 + 1053)), None);
    }
}
