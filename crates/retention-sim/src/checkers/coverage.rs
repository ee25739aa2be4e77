//! "Sometimes" properties: situations a fuzz campaign must reach at least once.
//!
//! Terminology:
//! - *situation*: an interesting moment a run may or may not reach (a stop while a delete is
//!   in flight, a reply lost after the service applied the request...). Reaching one proves
//!   nothing wrong; never reaching one in a whole campaign means the campaign did not test it.
//! - *coverage*: the situations one run reached ([`Coverage`], a bitset per run).
//! - *tally*: per campaign, how many runs reached each situation; its *gaps* are the
//!   situations no run reached ([`CoverageTally`]).

use super::track::{PerReplica, replica_of};
use crate::Retention;
use crate::events::{Answer, Applied, EndKind, Event, EventKind, Note, OpKind, Stamped};

leasesim_invariants::situations! {
    /// A renewal answer arrives while a delete of the same replica is in flight.
    RenewReplyDuringDelete = "renew-reply-during-delete",
        "a renewal answer reached a worker while its delete was in flight";
    /// `stop()` is called while the replica's acquire is in flight.
    StopDuringAcquire = "stop-during-acquire",
        "stop() was called while an acquire was in flight";
    /// `stop()` is called while the replica's delete is in flight.
    StopDuringDelete = "stop-during-delete",
        "stop() was called while a delete was in flight";
    /// `stop()` is called while the replica's renewal is in flight.
    StopDuringRenew = "stop-during-renew",
        "stop() was called while a renewal was in flight";
    /// The store refused a delete for its stale token.
    StoreRejectedStale = "store-rejected-stale",
        "the store refused a delete carrying a stale token";
    /// An acquire took over a lease that had expired.
    RivalTookOverExpired = "rival-took-over-expired",
        "an acquire took over a lease that had expired";
    /// A release freed nothing: the lease had expired or moved on.
    ReleaseFreedNothing = "release-freed-nothing",
        "a release freed nothing: the lease had already expired or moved on";
    /// A term ended because it reached the cap.
    CapReached = "cap-reached",
        "a term stopped because it deleted the cap";
    /// A request was applied but its reply was lost.
    ReplyLostAfterApply = "reply-lost-after-apply",
        "a request was applied but its reply was lost";
    /// A renewal answered `None`.
    LeadershipLostByNone = "leadership-lost-by-none",
        "a renewal answered None: leadership was lost";
}

/// The situations one run reached; fed every event of the run.
#[derive(Debug, Default)]
pub struct Coverage {
    reached: SituationSet,
    /// Per replica: calls sent and not answered yet.
    in_flight: PerReplica<Vec<(u64, OpKind)>>,
}

impl Coverage {
    pub fn new() -> Coverage {
        Coverage::default()
    }

    /// Reads one event of the run.
    pub fn on_event(&mut self, event: &Stamped<Event>) {
        match event.event.kind {
            EventKind::Applied { applied, .. } => self.applied(applied),
            EventKind::Note(Note::TermEnded {
                end: EndKind::CapReached,
                ..
            }) => {
                self.reached.insert(Situation::CapReached);
            }
            EventKind::ReplyLost { .. } => self.reached.insert(Situation::ReplyLostAfterApply),
            _ => self.replica_event(event),
        }
    }

    /// The situations reached so far.
    pub fn reached(&self) -> SituationSet {
        self.reached
    }

    /// Forgets the run, keeping allocations, to cover the next one.
    pub fn clear(&mut self) {
        self.reached = SituationSet::new();
        self.in_flight.values_mut().for_each(Vec::clear);
    }

    fn applied(&mut self, applied: Applied) {
        match applied {
            Applied::DeleteRefused { .. } => self.reached.insert(Situation::StoreRejectedStale),
            Applied::Granted {
                replaced: Some(_), ..
            } => {
                self.reached.insert(Situation::RivalTookOverExpired);
            }
            Applied::FreedNothing => self.reached.insert(Situation::ReleaseFreedNothing),
            _ => {}
        }
    }

    fn replica_event(&mut self, event: &Stamped<Event>) {
        let Some(replica) = replica_of(event) else {
            return;
        };
        let in_flight = self.in_flight.at(replica);
        match event.event.kind {
            EventKind::Call { call, request } => in_flight.push((call, request.op())),
            EventKind::Answered { call, op, answer } => {
                let delete_in_flight = in_flight.iter().any(|(_, sent)| *sent == OpKind::Delete);
                in_flight.retain(|(sent, _)| *sent != call);
                if op == OpKind::Renew && delete_in_flight {
                    self.reached.insert(Situation::RenewReplyDuringDelete);
                }
                if op == OpKind::Renew && answer == Answer::Lease(None) {
                    self.reached.insert(Situation::LeadershipLostByNone);
                }
            }
            EventKind::StopCalled => {
                for (_, op) in in_flight.iter() {
                    let situation = match op {
                        OpKind::Acquire => Situation::StopDuringAcquire,
                        OpKind::Delete => Situation::StopDuringDelete,
                        OpKind::Renew => Situation::StopDuringRenew,
                        OpKind::Release => continue,
                    };
                    self.reached.insert(situation);
                }
            }
            EventKind::Restarted => in_flight.clear(),
            _ => {}
        }
    }
}

impl leasesim_invariants::Coverage<Retention> for Coverage {
    fn on_event(&mut self, event: &Stamped<Event>) {
        Coverage::on_event(self, event);
    }

    fn reached(&self) -> SituationSet {
        self.reached
    }
}

#[cfg(test)]
mod tests {
    use crate::events::Request;

    use super::*;
    use crate::checkers::testkit::{R1, R2, Script, lease};
    use leasesim_invariants::CoverageTally;

    fn reached(script: &Script) -> SituationSet {
        let mut coverage = Coverage::new();
        script
            .events
            .iter()
            .for_each(|event| coverage.on_event(event));
        coverage.reached()
    }

    /// A stop while a call of `request`'s kind is in flight.
    fn stop_during(request: Request) -> Script {
        let mut script = Script::new();
        script.start(R1, 1);
        script.send(R1, request);
        script.on(R1, EventKind::StopCalled);
        script
    }

    /// A script that reaches `situation` (and, ideally, nothing else).
    fn reaching(situation: Situation) -> Script {
        let mut script = Script::new();
        match situation {
            Situation::RenewReplyDuringDelete => {
                script.start(R1, 1);
                script.acquire(R1, 1);
                let renew = script.send(R1, Request::Renew { lease: lease(1) });
                script.send(
                    R1,
                    Request::Delete {
                        older_than_ms: 0,
                        limit: 200,
                        token: 1,
                    },
                );
                script.answer(R1, renew, OpKind::Renew, Answer::Lease(Some(lease(2))));
            }
            Situation::StopDuringAcquire => script = stop_during(Request::Acquire),
            Situation::StopDuringDelete => {
                script = stop_during(Request::Delete {
                    older_than_ms: 0,
                    limit: 200,
                    token: 1,
                });
            }
            Situation::StopDuringRenew => script = stop_during(Request::Renew { lease: lease(1) }),
            Situation::StoreRejectedStale => {
                script.apply(
                    3,
                    Applied::DeleteRefused {
                        current_token: Some(4),
                    },
                );
            }
            Situation::RivalTookOverExpired => {
                script.apply(
                    3,
                    Applied::Granted {
                        lease: lease(5),
                        replaced: Some(4),
                    },
                );
            }
            Situation::ReleaseFreedNothing => {
                script.apply(3, Applied::FreedNothing);
            }
            Situation::CapReached => {
                script.end(R2, 1, EndKind::CapReached, 1000);
            }
            Situation::ReplyLostAfterApply => {
                script.world(EventKind::ReplyLost { call: 3 });
            }
            Situation::LeadershipLostByNone => {
                script.start(R2, 1);
                script.acquire(R2, 1);
                script.renew_lost(R2, 1, Answer::Lease(None));
            }
        }
        script
    }

    #[test]
    fn coverage_detects_each_situation() {
        for situation in Situation::ALL {
            let set = reached(&reaching(situation));
            assert_eq!(set.iter().collect::<Vec<_>>(), [situation], "{situation}");
        }
    }

    #[test]
    fn a_correct_run_reaches_no_situation() {
        assert!(reached(&Script::correct_run()).is_empty());
    }

    #[test]
    fn answers_and_restarts_end_what_is_in_flight() {
        let mut script = Script::new();
        script.start(R1, 1);
        script.acquire(R1, 1);
        script.delete(R1, 0, 1, 10);
        script.renew(R1, 1, 2);
        script.send(R1, Request::Renew { lease: lease(2) });
        script.on(R1, EventKind::Restarted);
        script.on(R1, EventKind::StopCalled);
        assert!(reached(&script).is_empty());
    }

    #[test]
    fn situation_sets_and_names() {
        let set: SituationSet = [Situation::CapReached, Situation::StopDuringAcquire]
            .into_iter()
            .collect();
        assert_eq!(set.len(), 2);
        assert!(set.contains(Situation::CapReached) && !set.contains(Situation::StopDuringRenew));
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            [Situation::StopDuringAcquire, Situation::CapReached]
        );
        for situation in Situation::ALL {
            assert_eq!(Situation::from_name(situation.name()), Some(situation));
            assert!(!situation.describe().is_empty());
        }
        assert_eq!(
            Situation::ReplyLostAfterApply.to_string(),
            "reply-lost-after-apply"
        );
    }

    #[test]
    fn the_tally_counts_runs_and_lists_gaps() {
        let mut tally = CoverageTally::new();
        assert_eq!(tally.gaps::<Situation>(), Situation::ALL);
        for situation in [
            Situation::CapReached,
            Situation::CapReached,
            Situation::ReplyLostAfterApply,
        ] {
            let mut coverage = Coverage::new();
            reaching(situation)
                .events
                .iter()
                .for_each(|event| coverage.on_event(event));
            tally.add(coverage.reached());
        }
        tally.add(Coverage::new().reached());
        assert_eq!((tally.runs(), tally.count(Situation::CapReached)), (4, 2));
        assert_eq!(tally.gaps::<Situation>().len(), Situation::COUNT - 2);
        assert!(
            !tally
                .gaps::<Situation>()
                .contains(&Situation::ReplyLostAfterApply)
        );
        let mut other = CoverageTally::default();
        let mut coverage = Coverage::new();
        let everything: Vec<Script> = Situation::ALL.into_iter().map(reaching).collect();
        everything
            .iter()
            .flat_map(|script| &script.events)
            .for_each(|event| coverage.on_event(event));
        assert_eq!(coverage.reached().len(), Situation::COUNT);
        other.add(coverage.reached());
        tally.merge(&other);
        assert_eq!((tally.runs(), tally.count(Situation::CapReached)), (5, 3));
        assert!(tally.gaps::<Situation>().is_empty());
        coverage.clear();
        assert!(coverage.reached().is_empty());
    }
}
