//! "Sometimes" properties: situations a fuzz campaign must reach at least once.
//!
//! Terminology:
//! - *situation*: an interesting moment a run may or may not reach (a stop while a delete is
//!   in flight, a reply lost after the service applied the request...). Reaching one proves
//!   nothing wrong; never reaching one in a whole campaign means the campaign did not test it.
//! - *coverage*: the situations one run reached ([`Coverage`], a bitset per run).
//! - *tally*: per campaign, how many runs reached each situation; its *gaps* are the
//!   situations no run reached ([`CoverageTally`]).

use std::fmt;

use leasesim_events::{Answer, Applied, EndKind, Event, EventKind, OpKind};
use leasesim_rt::Stamped;

use crate::track::{PerReplica, replica_of};

/// A situation a fuzz campaign has to reach at least once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Situation {
    /// A renewal answer arrives while a delete of the same replica is in flight.
    RenewReplyDuringDelete,
    /// `stop()` is called while the replica's acquire is in flight.
    StopDuringAcquire,
    /// `stop()` is called while the replica's delete is in flight.
    StopDuringDelete,
    /// `stop()` is called while the replica's renewal is in flight.
    StopDuringRenew,
    /// The store refused a delete for its stale token.
    StoreRejectedStale,
    /// An acquire took over a lease that had expired.
    RivalTookOverExpired,
    /// A release freed nothing: the lease had expired or moved on.
    ReleaseFreedNothing,
    /// A term ended because it reached the cap.
    CapReached,
    /// A request was applied but its reply was lost.
    ReplyLostAfterApply,
    /// A renewal answered `None`.
    LeadershipLostByNone,
}

impl Situation {
    /// How many situations there are.
    pub const COUNT: usize = 10;

    /// Every situation, in declaration order.
    pub const ALL: [Situation; Situation::COUNT] = [
        Situation::RenewReplyDuringDelete,
        Situation::StopDuringAcquire,
        Situation::StopDuringDelete,
        Situation::StopDuringRenew,
        Situation::StoreRejectedStale,
        Situation::RivalTookOverExpired,
        Situation::ReleaseFreedNothing,
        Situation::CapReached,
        Situation::ReplyLostAfterApply,
        Situation::LeadershipLostByNone,
    ];

    /// The kebab-case name, e.g. `"stop-during-delete"`.
    pub fn name(self) -> &'static str {
        match self {
            Situation::RenewReplyDuringDelete => "renew-reply-during-delete",
            Situation::StopDuringAcquire => "stop-during-acquire",
            Situation::StopDuringDelete => "stop-during-delete",
            Situation::StopDuringRenew => "stop-during-renew",
            Situation::StoreRejectedStale => "store-rejected-stale",
            Situation::RivalTookOverExpired => "rival-took-over-expired",
            Situation::ReleaseFreedNothing => "release-freed-nothing",
            Situation::CapReached => "cap-reached",
            Situation::ReplyLostAfterApply => "reply-lost-after-apply",
            Situation::LeadershipLostByNone => "leadership-lost-by-none",
        }
    }

    /// The situation with this name, if any.
    pub fn from_name(name: &str) -> Option<Situation> {
        Situation::ALL
            .into_iter()
            .find(|situation| situation.name() == name)
    }

    /// One line: what happened when a run reaches it.
    pub fn describe(self) -> &'static str {
        match self {
            Situation::RenewReplyDuringDelete => {
                "a renewal answer reached a worker while its delete was in flight"
            }
            Situation::StopDuringAcquire => "stop() was called while an acquire was in flight",
            Situation::StopDuringDelete => "stop() was called while a delete was in flight",
            Situation::StopDuringRenew => "stop() was called while a renewal was in flight",
            Situation::StoreRejectedStale => "the store refused a delete carrying a stale token",
            Situation::RivalTookOverExpired => "an acquire took over a lease that had expired",
            Situation::ReleaseFreedNothing => {
                "a release freed nothing: the lease had already expired or moved on"
            }
            Situation::CapReached => "a term stopped because it deleted the cap",
            Situation::ReplyLostAfterApply => "a request was applied but its reply was lost",
            Situation::LeadershipLostByNone => "a renewal answered None: leadership was lost",
        }
    }

    fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

impl fmt::Display for Situation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of situations, as a bitset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SituationSet(u16);

impl SituationSet {
    /// The empty set.
    pub fn new() -> SituationSet {
        SituationSet(0)
    }

    pub fn insert(&mut self, situation: Situation) {
        self.0 |= situation.bit();
    }

    pub fn contains(self, situation: Situation) -> bool {
        self.0 & situation.bit() != 0
    }

    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The situations in the set, in declaration order.
    pub fn iter(self) -> SituationIter {
        SituationIter { bits: self.0 }
    }
}

/// The situations of a [`SituationSet`], in declaration order.
#[derive(Clone, Debug)]
pub struct SituationIter {
    bits: u16,
}

impl Iterator for SituationIter {
    type Item = Situation;

    fn next(&mut self) -> Option<Situation> {
        let index = self.bits.trailing_zeros() as usize;
        let situation = *Situation::ALL.get(index)?;
        self.bits &= !situation.bit();
        Some(situation)
    }
}

impl IntoIterator for SituationSet {
    type Item = Situation;
    type IntoIter = SituationIter;

    fn into_iter(self) -> SituationIter {
        self.iter()
    }
}

impl IntoIterator for &SituationSet {
    type Item = Situation;
    type IntoIter = SituationIter;

    fn into_iter(self) -> SituationIter {
        self.iter()
    }
}

impl FromIterator<Situation> for SituationSet {
    fn from_iter<I: IntoIterator<Item = Situation>>(iter: I) -> SituationSet {
        let mut set = SituationSet::new();
        iter.into_iter().for_each(|situation| set.insert(situation));
        set
    }
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
            EventKind::TermEnded {
                end: EndKind::CapReached,
                ..
            } => {
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

/// Per campaign: how many runs reached each situation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CoverageTally {
    runs: u64,
    counts: [u64; Situation::COUNT],
}

impl CoverageTally {
    pub fn new() -> CoverageTally {
        CoverageTally::default()
    }

    /// Counts one run.
    pub fn add(&mut self, run: &Coverage) {
        self.runs += 1;
        for situation in run.reached().iter() {
            self.counts[situation as usize] += 1;
        }
    }

    /// Adds another tally (e.g. of another worker thread).
    pub fn merge(&mut self, other: &CoverageTally) {
        self.runs += other.runs;
        for (count, more) in self.counts.iter_mut().zip(other.counts) {
            *count += more;
        }
    }

    /// Runs counted.
    pub fn runs(&self) -> u64 {
        self.runs
    }

    /// Runs that reached `situation`.
    pub fn count(&self, situation: Situation) -> u64 {
        self.counts[situation as usize]
    }

    /// The situations no run reached, in declaration order.
    pub fn gaps(&self) -> Vec<Situation> {
        Situation::ALL
            .into_iter()
            .filter(|situation| self.count(*situation) == 0)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use leasesim_events::Request;

    use super::*;
    use crate::testkit::{R1, R2, Script, lease};

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
            (&set).into_iter().collect::<Vec<_>>(),
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
        assert_eq!(tally.gaps(), Situation::ALL);
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
            tally.add(&coverage);
        }
        tally.add(&Coverage::new());
        assert_eq!((tally.runs(), tally.count(Situation::CapReached)), (4, 2));
        assert_eq!(tally.gaps().len(), Situation::COUNT - 2);
        assert!(!tally.gaps().contains(&Situation::ReplyLostAfterApply));
        let mut other = CoverageTally::default();
        let mut coverage = Coverage::new();
        let everything: Vec<Script> = Situation::ALL.into_iter().map(reaching).collect();
        everything
            .iter()
            .flat_map(|script| &script.events)
            .for_each(|event| coverage.on_event(event));
        assert_eq!(coverage.reached().len(), Situation::COUNT);
        other.add(&coverage);
        tally.merge(&other);
        assert_eq!((tally.runs(), tally.count(Situation::CapReached)), (5, 3));
        assert!(tally.gaps().is_empty());
        coverage.clear();
        assert!(coverage.reached().is_empty());
    }
}
