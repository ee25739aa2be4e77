//! "Sometimes" properties: the situations a campaign of the work-items system must reach.
//!
//! Terminology:
//! - *situation*: an interesting moment a run may or may not reach (a claim taken over after
//!   expiry, a provider timeout after it accepted...). Reaching one proves nothing wrong;
//!   never reaching one in a whole campaign means the campaign did not test it.
//! - *coverage*: what reads a run's events and says which situations it reached.

use leasesim_invariants::PerReplica;

use crate::events::{
    Answer, Applied, EndKind, ErrorCode, Event, EventKind, LookupView, Mark, Note, Prior, Request,
    Stamped, WorkItems,
};

leasesim_invariants::situations! {
    /// A claim was granted on an item whose previous claim had expired.
    ClaimTakenOver = "claim-taken-over",
        "a claim was granted on an item whose claim had expired";
    /// The store refused an apply: its token was not the live claim.
    StaleApplyRefused = "stale-apply-refused",
        "the store refused an apply carrying a stale token";
    /// The provider carried out an effect and its reply was lost.
    ProviderTimeoutAfterAccept = "provider-timeout-after-accept",
        "the provider carried out an effect and its reply was lost";
    /// A lookup found the effect already applied.
    ReconcileFoundApplied = "reconcile-found-applied",
        "a lookup found the effect already applied";
    /// A worker learned it lost a claim after it had applied a chunk under it.
    LeaseLostMidItem = "lease-lost-mid-item",
        "a worker learned it lost a claim after applying a chunk under it";
    /// A done-mark was refused: the final status write failed.
    DoneRefused = "done-refused",
        "a done-mark was refused: the final status write failed";
    /// The provider answered a duplicate key.
    ProviderDeduplicated = "provider-deduplicated",
        "the provider answered a duplicate key";
    /// The provider refused an item for good.
    ProviderRefused = "provider-refused",
        "the provider refused an item for good";
    /// An item was failed.
    ItemFailed = "item-failed",
        "an item ended failed";
    /// An item was released for another attempt (not by a stop).
    ItemReleased = "item-released",
        "an item was released for another attempt";
    /// A renewal extended a claim.
    RenewalGranted = "renewal-granted",
        "a renewal extended a claim";
    /// `stop()` was called while the replica held an unsettled claim.
    StopWhileHolding = "stop-while-holding",
        "stop() was called while its replica held a claim";
    /// A pass ended at its deadline with items open.
    PassDeadline = "pass-deadline",
        "a pass ended at its deadline with items still open";
    /// A store write was applied and its reply lost.
    StoreReplyLost = "store-reply-lost",
        "a store write was applied and its reply lost";
    /// A lookup after a provider timeout found the key unknown: the request was lost before
    /// the provider applied it, so the effect is applied again under the same key.
    ReconcileFoundUnknown = "reconcile-found-unknown",
        "a lookup found the key unknown: the effect is applied again under the same key";
    /// A status read failed in transport (the worker retries it, or gives up).
    StatusReadFailed = "status-read-failed",
        "a status read failed in transport";
    /// A pass ended because the store stayed unreachable through every retry.
    StoreUnavailable = "store-unavailable",
        "a pass ended because the store stayed unreachable through every retry";
    /// `stop()` was called while a pass waited out a backoff between retries.
    StopDuringBackoff = "stop-during-backoff",
        "stop() was called while a pass waited out a backoff between retries";
}

/// One replica's worker side, as coverage needs it.
#[derive(Debug, Default)]
struct Replica {
    /// Calls in flight: id and request.
    in_flight: Vec<(u64, Request)>,
    /// The held claim's item and whether a chunk of it was applied; `settled` once it ended.
    held: Option<(u32, bool)>,
    /// A pass is running (between its start and end notes).
    pass_open: bool,
    /// The pass set a timer since its last call or answer: it waits out a backoff.
    backing_off: bool,
}

/// The situations one run reached.
#[derive(Debug, Default)]
pub struct Coverage {
    reached: SituationSet,
    replicas: PerReplica<Replica>,
    /// The last call applied, and what it was: a provider application, a store write, or
    /// neither. A lost reply is recorded right after its apply, so this is the one it loses.
    last_applied: Option<(u64, Option<bool>)>,
}

impl Coverage {
    pub fn new() -> Coverage {
        Coverage::default()
    }

    fn applied(&mut self, call: u64, applied: Applied) {
        let situation = match applied {
            Applied::Claimed {
                prior: Prior::Expired { .. },
                ..
            } => Some(Situation::ClaimTakenOver),
            Applied::ProviderDuplicate { .. } => Some(Situation::ProviderDeduplicated),
            Applied::ProviderRefused { .. } => Some(Situation::ProviderRefused),
            Applied::Renewed { .. } => Some(Situation::RenewalGranted),
            Applied::Marked {
                mark: Mark::Failed,
                repeat: false,
                ..
            } => Some(Situation::ItemFailed),
            _ => None,
        };
        if let Some(situation) = situation {
            self.reached.insert(situation);
        }
        let provider = matches!(applied, Applied::ProviderApplied { .. });
        let store_write = matches!(
            applied,
            Applied::Claimed { .. }
                | Applied::Renewed { .. }
                | Applied::ChunkApplied { .. }
                | Applied::Marked { .. }
        );
        let kind = (provider || store_write).then_some(provider);
        self.last_applied = Some((call, kind));
    }

    fn reply_lost(&mut self, call: u64) {
        let Some((applied, Some(provider))) = self.last_applied else {
            return;
        };
        if applied == call {
            self.reached.insert(match provider {
                true => Situation::ProviderTimeoutAfterAccept,
                false => Situation::StoreReplyLost,
            });
        }
    }

    fn answered(call: u64, answer: Answer, replica: &mut Replica) -> Option<Situation> {
        let index = replica.in_flight.iter().position(|(id, _)| *id == call)?;
        let (_, request) = replica.in_flight.swap_remove(index);
        match (request, answer) {
            (_, Answer::Claimed(lease)) => {
                replica.held = Some((lease.item, false));
                None
            }
            (Request::Apply { .. }, Answer::Applied { .. }) => {
                if let Some((_, progressed)) = &mut replica.held {
                    *progressed = true;
                }
                None
            }
            (Request::Apply { .. }, Answer::LeaseLost) => Some(Situation::StaleApplyRefused),
            (Request::Done { .. }, Answer::LeaseLost) => Some(Situation::DoneRefused),
            (Request::Release { error, .. }, Answer::Ok) if error != ErrorCode::Stopped => {
                Some(Situation::ItemReleased)
            }
            (_, Answer::Lookup(LookupView::Applied)) => Some(Situation::ReconcileFoundApplied),
            (_, Answer::Lookup(LookupView::Unknown)) => Some(Situation::ReconcileFoundUnknown),
            (Request::Status, Answer::Failed(_)) => Some(Situation::StatusReadFailed),
            _ => None,
        }
    }

    fn replica_event(&mut self, event: &Stamped<Event>) {
        let Some(id) = event.event.replica else {
            return;
        };
        let replica = self.replicas.at(id);
        match event.event.kind {
            EventKind::Call { .. } | EventKind::Answered { .. } => replica.backing_off = false,
            EventKind::TimerSet { .. } => replica.backing_off = replica.pass_open,
            _ => {}
        }
        match event.event.kind {
            EventKind::Call { call, request } => replica.in_flight.push((call, request)),
            EventKind::Answered { call, answer, .. } => {
                let progressed = replica.held.is_some_and(|(_, p)| p);
                if answer == Answer::LeaseLost && progressed {
                    self.reached.insert(Situation::LeaseLostMidItem);
                }
                if let Some(situation) = Coverage::answered(call, answer, replica) {
                    self.reached.insert(situation);
                }
                if matches!(answer, Answer::LeaseLost | Answer::Ok) {
                    replica.held = None;
                }
            }
            EventKind::StopCalled => {
                if replica.held.is_some() {
                    self.reached.insert(Situation::StopWhileHolding);
                }
                if replica.backing_off {
                    self.reached.insert(Situation::StopDuringBackoff);
                }
            }
            EventKind::Note(Note::PassStarted { .. }) => replica.pass_open = true,
            EventKind::Note(Note::PassEnded { end, .. }) => {
                (replica.held, replica.pass_open, replica.backing_off) = (None, false, false);
                match end {
                    EndKind::Deadline => self.reached.insert(Situation::PassDeadline),
                    EndKind::Unavailable => self.reached.insert(Situation::StoreUnavailable),
                    _ => {}
                }
            }
            EventKind::Restarted => *replica = Replica::default(),
            _ => {}
        }
    }

    /// Reads one event of the run.
    pub fn on_event(&mut self, event: &Stamped<Event>) {
        match event.event.kind {
            EventKind::Applied { call, applied } => self.applied(call, applied),
            EventKind::ReplyLost { call } => self.reply_lost(call),
            _ => {}
        }
        self.replica_event(event);
    }

    /// The situations reached so far.
    pub fn reached(&self) -> SituationSet {
        self.reached
    }
}

impl leasesim_invariants::Coverage<WorkItems> for Coverage {
    fn on_event(&mut self, event: &Stamped<Event>) {
        Coverage::on_event(self, event);
    }

    fn reached(&self) -> SituationSet {
        self.reached
    }
}

#[cfg(test)]
mod tests {
    use leasesim_events::NetFailure;

    use super::*;
    use crate::checkers::testkit::{R1, R2, Script, key};
    use crate::events::{PassCounts, ProviderView};

    fn reached(script: &Script) -> SituationSet {
        let mut coverage = Coverage::new();
        script.events.iter().for_each(|e| coverage.on_event(e));
        coverage.reached()
    }

    fn apply(item: u32, token: u64) -> Request {
        Request::Apply {
            item,
            token,
            chunk: 0,
            now_ms: 0,
        }
    }

    fn release(error: ErrorCode) -> Request {
        Request::Release {
            item: 0,
            token: 1,
            error,
            now_ms: 0,
        }
    }

    fn renew() -> Request {
        Request::Renew {
            item: 0,
            token: 1,
            lease_ms: 1_000,
            now_ms: 0,
        }
    }

    fn provider(s: &mut Script, applied: Applied, answer: ProviderView) {
        let request = Request::ProviderApply {
            item: 0,
            key: key(0),
        };
        s.round(R1, request, applied, Answer::Provider(answer));
    }

    /// After r1 claimed item 0 (token 1): the steps that reach a situation of the store.
    fn store_steps(s: &mut Script, situation: Situation) {
        match situation {
            Situation::ClaimTakenOver => {
                s.at(5_000)
                    .claim_sized(R2, 0, 2, 2, 1, Prior::Expired { token: 1 });
            }
            Situation::StaleApplyRefused => s.lease_lost(R1, apply(0, 1), Some(2)),
            Situation::LeaseLostMidItem => {
                s.chunk(R1, 0, 1, 0);
                s.lease_lost(R1, renew(), None);
            }
            Situation::DoneRefused => {
                let done = Request::Done {
                    item: 0,
                    token: 1,
                    now_ms: 0,
                };
                s.lease_lost(R1, done, None);
            }
            Situation::ItemFailed => {
                let fail = Request::Fail {
                    item: 0,
                    token: 1,
                    error: ErrorCode::ProviderRefused,
                    now_ms: 0,
                };
                s.mark(R1, fail, Mark::Failed);
            }
            Situation::ItemReleased => {
                let error = ErrorCode::Timeout(crate::events::Op::Apply);
                s.mark(R1, release(error), Mark::Released);
            }
            Situation::RenewalGranted => {
                let applied = Applied::Renewed {
                    item: 0,
                    token: 1,
                    expires_at_ms: 9,
                };
                s.round(R1, renew(), applied, Answer::Renewed { expires_at_ms: 9 });
            }
            Situation::StoreReplyLost => {
                let applied = Applied::ChunkApplied {
                    item: 0,
                    token: 1,
                    chunk: 0,
                    fresh: true,
                    live: Some(1),
                };
                s.failed(R1, apply(0, 1), Some(applied), NetFailure::Timeout);
            }
            other => unreachable!("not a store situation: {other}"),
        }
    }

    /// A script that reaches `situation` (and nothing else).
    fn reaching(situation: Situation) -> Script {
        let mut s = Script::new();
        s.at(100).pass_start(R1, 1);
        s.claim(R1, 0, 1, 1);
        let (item, key) = (0, key(0));
        match situation {
            Situation::ProviderTimeoutAfterAccept => {
                let request = Request::ProviderApply { item, key };
                let applied = Applied::ProviderApplied { item, key };
                s.failed(R1, request, Some(applied), NetFailure::Timeout);
            }
            Situation::ReconcileFoundApplied => {
                let found = LookupView::Applied;
                let applied = Applied::LookedUp { key, found };
                s.round(R1, Request::Lookup { key }, applied, Answer::Lookup(found));
            }
            Situation::ProviderDeduplicated => {
                let applied = Applied::ProviderDuplicate { item, key };
                provider(&mut s, applied, ProviderView::Duplicate);
            }
            Situation::ProviderRefused => {
                let applied = Applied::ProviderRefused { item, key };
                provider(&mut s, applied, ProviderView::Refused);
            }
            Situation::StopWhileHolding => {
                s.on(R1, EventKind::StopCalled);
            }
            Situation::PassDeadline => {
                s.pass_end(R1, 1, EndKind::Deadline, PassCounts::default(), None);
            }
            Situation::ReconcileFoundUnknown => {
                let found = LookupView::Unknown;
                let applied = Applied::LookedUp { key, found };
                s.round(R1, Request::Lookup { key }, applied, Answer::Lookup(found));
            }
            Situation::StatusReadFailed => {
                s.failed(R1, Request::Status, None, NetFailure::Rejected);
            }
            Situation::StoreUnavailable => {
                let counts = PassCounts::default();
                s.pass_end(R1, 1, EndKind::Unavailable, counts, None);
            }
            Situation::StopDuringBackoff => {
                s.mark(R1, release(ErrorCode::Stopped), Mark::Released);
                s.on(R1, EventKind::TimerSet { duration_ms: 50 });
                s.on(R1, EventKind::StopCalled);
            }
            store => store_steps(&mut s, store),
        }
        s
    }

    #[test]
    fn coverage_detects_each_situation_alone() {
        for situation in Situation::ALL {
            let set = reached(&reaching(situation));
            assert_eq!(set.iter().collect::<Vec<_>>(), [situation], "{situation}");
        }
    }

    #[test]
    fn a_correct_run_reaches_no_situation() {
        assert!(reached(&Script::correct_run()).is_empty());
        // A stop after the claim ended, or a release for a stop, reaches nothing.
        let mut s = Script::new();
        s.at(100).pass_start(R1, 1);
        s.claim(R1, 0, 1, 1);
        s.mark(R1, release(ErrorCode::Stopped), Mark::Released);
        s.on(R1, EventKind::StopCalled);
        assert!(reached(&s).is_empty());
        // A stop after a backoff that ended in a call, or after the pass ended, is no stop
        // during a backoff.
        let status = Answer::Status(crate::events::StatusView::default());
        s.on(R1, EventKind::TimerSet { duration_ms: 50 });
        s.round(
            R1,
            Request::Status,
            Applied::Status(Default::default()),
            status,
        );
        s.on(R1, EventKind::StopCalled);
        s.on(R1, EventKind::TimerSet { duration_ms: 50 });
        s.pass_end(R1, 1, EndKind::Stopped, PassCounts::default(), None);
        s.on(R1, EventKind::StopCalled);
        assert!(reached(&s).is_empty());
    }
}
