//! The renewal loop: `serial-renewal`, `renewal-stops` and `renew-latest`.
//!
//! Terminology:
//! - *renewal in flight*: a renew `Call` whose `Answered` has not arrived yet.
//! - *leaked timer*: a renewal sent after its term ended, or sent in a later term with a lease
//!   that term never received.
//! - *superseded lease*: a lease the term received before a newer one (a higher token); a
//!   renewal must carry the newest. A lease the term never received is a leaked timer's, and
//!   `renewal-stops`' verdict.

use leasesim_events::{Event, EventKind, OpKind, Request};
use leasesim_rt::Stamped;

use crate::kinds;
use crate::track::{PerReplica, TermLedger, replica_of};
use crate::violation::At;
use crate::{Checker, Invariant, Violation};

/// `serial-renewal`: a replica never has two renewals in flight.
#[derive(Debug, Default)]
pub struct SerialRenewal {
    /// Per replica: the renew call in flight (call id and its `Call` event).
    in_flight: PerReplica<Option<(u64, Stamped<Event>)>>,
}

impl SerialRenewal {
    pub fn new() -> SerialRenewal {
        SerialRenewal::default()
    }
}

impl Checker for SerialRenewal {
    fn wants(&self, kind: &EventKind) -> bool {
        kinds::worker_side(kind)
    }

    fn invariant(&self) -> Invariant {
        Invariant::SerialRenewal
    }

    fn on_event(&mut self, event: &Stamped<Event>) -> Option<Violation> {
        let replica = replica_of(event)?;
        let in_flight = self.in_flight.at(replica);
        match event.event.kind {
            EventKind::Call {
                call,
                request: Request::Renew { .. },
            } => {
                let earlier = in_flight.replace((call, event.clone()));
                let (earlier_call, earlier_event) = earlier?;
                let sentence = format!(
                    "{replica} sent renew call {call} at {} while its renew call {earlier_call}, \
                     sent at {}, was still unanswered",
                    At(event.at_ms),
                    At(earlier_event.at_ms)
                );
                return Some(Violation::new(
                    Invariant::SerialRenewal,
                    event,
                    [Some(&earlier_event)],
                    sentence,
                ));
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
            }
            // invariant: a fresh incarnation has no renewal of its own in flight.
            EventKind::Restarted => *in_flight = None,
            _ => {}
        }
        None
    }

    fn finish(&mut self, _end_ms: u64) -> Option<Violation> {
        None
    }
}

/// `renewal-stops`: renewals only inside an open term, with a lease of that term.
#[derive(Debug, Default)]
pub struct RenewalStops {
    replicas: PerReplica<TermLedger>,
}

impl RenewalStops {
    pub fn new() -> RenewalStops {
        RenewalStops::default()
    }
}

impl Checker for RenewalStops {
    fn wants(&self, kind: &EventKind) -> bool {
        kinds::worker_side(kind)
    }

    fn invariant(&self) -> Invariant {
        Invariant::RenewalStops
    }

    fn on_event(&mut self, event: &Stamped<Event>) -> Option<Violation> {
        let replica = replica_of(event)?;
        let ledger = self.replicas.at(replica);
        ledger.observe(event);
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

    fn finish(&mut self, _end_ms: u64) -> Option<Violation> {
        None
    }
}

/// `renew-latest`: every renewal carries the newest lease received in the term.
#[derive(Debug, Default)]
pub struct RenewLatest {
    replicas: PerReplica<TermLedger>,
}

impl RenewLatest {
    pub fn new() -> RenewLatest {
        RenewLatest::default()
    }
}

impl Checker for RenewLatest {
    fn wants(&self, kind: &EventKind) -> bool {
        kinds::worker_side(kind)
    }

    fn invariant(&self) -> Invariant {
        Invariant::RenewLatest
    }

    fn on_event(&mut self, event: &Stamped<Event>) -> Option<Violation> {
        let replica = replica_of(event)?;
        let ledger = self.replicas.at(replica);
        ledger.observe(event);
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

    fn finish(&mut self, _end_ms: u64) -> Option<Violation> {
        None
    }
}

#[cfg(test)]
mod tests {
    use leasesim_events::{Answer, EndKind};

    use super::*;
    use crate::testkit::{R1, R2, Script, assert_broken, assert_holds, lease};

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
    use leasesim_events::EndKind;

    use super::*;
    use crate::testkit::{R1, R2, Script, assert_broken, assert_holds, lease};

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
