//! The shared world: lease authority, record store, network, replicas.
//!
//! Terminology:
//! - *send*: a request leaves the replica; its *flight* (a world task, so it completes even if
//!   the worker stops waiting) carries it to the service after a drawn latency, where it may be
//!   refused (fault), or *applied*; the answer then flies back after another drawn latency, or
//!   is lost (fault) and the caller sees a timeout.
//! - *healed*: the liveness phase switches every fault off; latencies remain.
//! - *service time*: [`EPOCH_MS`] + virtual time; lease expiry and row creation use it.
//! - *short answer*: a fault of the store: an admitted delete removes fewer rows than it
//!   could (fewer than its limit, while more eligible rows remain); `Applied::Deleted` says
//!   how many were held back.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use leasesim_events::{Answer, Applied, Event, EventKind, Failure, LeaseView, ReplicaId, Request};

use crate::authority::{Acquired, LeaseAuthority, Release};
use crate::env::{EPOCH_MS, Env};
use crate::profile::FaultProfile;
use crate::replica::ReplicaState;
use crate::scenario::Scenario;
use crate::store::RecordStore;

pub struct World {
    env: Rc<dyn Env>,
    pub(crate) scenario: Rc<Scenario>,
    pub(crate) profile: FaultProfile,
    authority: RefCell<LeaseAuthority>,
    store: RefCell<RecordStore>,
    replicas: Vec<ReplicaState>,
    next_call: Cell<u64>,
    healed: Cell<bool>,
}

impl World {
    pub fn new(scenario: Rc<Scenario>, profile: FaultProfile, env: Rc<dyn Env>) -> World {
        let (from_ms, to_ms) = scenario.created_window_ms();
        let store =
            RecordStore::spread(scenario.store.rows, from_ms, to_ms, scenario.store.fencing);
        let authority =
            LeaseAuthority::new(scenario.lease.ttl_ms.get(), scenario.lease.exact_token);
        let replicas = (0..scenario.replicas)
            .map(|index| ReplicaState::new(ReplicaId(index), profile.clocks[usize::from(index)]))
            .collect();
        World {
            env,
            scenario,
            profile,
            authority: RefCell::new(authority),
            store: RefCell::new(store),
            replicas,
            next_call: Cell::new(1),
            healed: Cell::new(false),
        }
    }

    pub fn env(&self) -> &dyn Env {
        &*self.env
    }

    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    pub fn replica(&self, id: ReplicaId) -> &ReplicaState {
        &self.replicas[id.index()]
    }

    pub fn replicas(&self) -> &[ReplicaState] {
        &self.replicas
    }

    /// Service time now.
    pub fn service_now_ms(&self) -> u64 {
        EPOCH_MS + self.env.now_ms()
    }

    pub fn next_call_id(&self) -> u64 {
        let id = self.next_call.get();
        self.next_call.set(id + 1);
        // invariant: call ids strictly increase, so a call's events are tied to it alone.
        debug_assert!(self.next_call.get() > id);
        id
    }

    pub fn healed(&self) -> bool {
        self.healed.get()
    }

    /// Switches every fault off (liveness phase).
    pub fn heal(&self) {
        // invariant: a run heals once; faults never come back.
        debug_assert!(!self.healed.get(), "healed twice");
        self.healed.set(true);
    }

    fn fault(&self, p: f64) -> bool {
        let strikes = !self.healed.get() && self.env.coin(p);
        // invariant: a healed world injects no fault.
        debug_assert!(!(strikes && self.healed.get()));
        strikes
    }

    /// Sends a request on its flight and waits for the answer.
    pub(crate) async fn send(
        self: Rc<Self>,
        replica: ReplicaId,
        call: u64,
        request: Request,
        owner_id: String,
    ) -> Answer {
        let (tx, rx) = futures::channel::oneshot::channel();
        let world = self.clone();
        let flight = async move {
            let answer = world.flight(replica, call, request, &owner_id).await;
            // The worker may have stopped waiting; the request took effect regardless.
            let _ = tx.send(answer);
        };
        self.env.spawn("flight", Box::pin(flight));
        rx.await.expect("a flight always answers")
    }

    async fn flight(&self, replica: ReplicaId, call: u64, request: Request, owner: &str) -> Answer {
        let env = self.env();
        let op = request.op();
        let sent_ms = env.now_ms();
        let latency = self.profile.latency.get(op);
        env.sleep(env.range(latency.min, latency.max)).await;
        if self.fault(self.profile.reject.get(op)) {
            env.emit_for(replica, EventKind::Rejected { call, op });
            env.sleep(env.range(latency.min, latency.max)).await;
            return Answer::Failed(Failure::Rejected);
        }
        let (applied, answer) = self.apply(request, owner);
        env.emit_for(replica, EventKind::Applied { call, applied });
        if self.fault(self.profile.reply_lost.get(op)) {
            env.emit_for(replica, EventKind::ReplyLost { call });
            let timeout_at = sent_ms + self.profile.timeout_ms;
            env.sleep_until(timeout_at.max(env.now_ms())).await;
            return Answer::Failed(Failure::Timeout);
        }
        env.sleep(env.range(latency.min, latency.max)).await;
        answer
    }

    /// Applies a request at the service, now.
    fn apply(&self, request: Request, owner: &str) -> (Applied, Answer) {
        let now_ms = self.service_now_ms();
        let mut authority = self.authority.borrow_mut();
        let view = |token, expires_at_ms| LeaseView {
            token,
            expires_at_ms,
        };
        match request {
            Request::Acquire => match authority.acquire(owner, now_ms) {
                Acquired::Granted { lease, replaced } => {
                    let lease = view(lease.token, lease.expires_at_ms);
                    (
                        Applied::Granted { lease, replaced },
                        Answer::Lease(Some(lease)),
                    )
                }
                Acquired::Busy { holder_token } => {
                    (Applied::Busy { holder_token }, Answer::Lease(None))
                }
            },
            Request::Renew { lease: shown } => match authority.renew(owner, shown.token, now_ms) {
                Some(held) => {
                    // invariant: a renewal answers a new token, above the one it was shown.
                    debug_assert!(held.token > shown.token);
                    let lease = view(held.token, held.expires_at_ms);
                    (Applied::Renewed { lease }, Answer::Lease(Some(lease)))
                }
                None => (Applied::RenewRefused, Answer::Lease(None)),
            },
            Request::Release { lease } => match authority.release(owner, lease.token, now_ms) {
                Release::Freed => (Applied::Released, Answer::Released),
                Release::FreedNothing => (Applied::FreedNothing, Answer::Released),
            },
            Request::Delete {
                older_than_ms,
                limit,
                token,
            } => {
                let current_token = authority.current_token(now_ms);
                let mut store = self.store.borrow_mut();
                if !store.admits(token, current_token) {
                    return (
                        Applied::DeleteRefused { current_token },
                        Answer::Failed(Failure::StaleToken),
                    );
                }
                let eligible = store.eligible(older_than_ms, limit, now_ms);
                let held_back = self.held_back(eligible);
                let done = store.delete_oldest(older_than_ms, eligible - held_back, now_ms);
                // invariant: a delete removes at most its limit, and a short answer leaves
                // exactly the rows it held back.
                assert!(done.rows <= limit);
                debug_assert_eq!(done.rows + held_back, eligible);
                let applied = Applied::Deleted {
                    rows: done.rows,
                    token_current: current_token == Some(token),
                    current_token,
                    newest_created_ms: done.newest_created_ms,
                    held_back,
                };
                (applied, Answer::Rows(done.rows))
            }
        }
    }

    /// Fault: how many of the `eligible` rows a delete leaves in the store (0: a full
    /// answer). A short answer holds back at least one row; holding back one is value 0.
    fn held_back(&self, eligible: u32) -> u32 {
        if eligible == 0 || !self.fault(self.profile.short_delete) {
            return 0;
        }
        let held_back = self.env.range(1, u64::from(eligible));
        // invariant: a short answer holds back at least one eligible row, and no more than
        // there are.
        debug_assert!((1..=u64::from(eligible)).contains(&held_back));
        u32::try_from(held_back).expect("at most the eligible rows, a u32")
    }

    /// Fault: the authority drops the live lease.
    pub(crate) fn revoke(&self) {
        let now_ms = self.service_now_ms();
        let mut authority = self.authority.borrow_mut();
        if let Some(token) = authority.revoke(now_ms) {
            // invariant: the revoked lease is gone at once.
            debug_assert_eq!(authority.current_token(now_ms), None);
            self.env.emit(Event::world(EventKind::Revoked { token }));
        }
    }

    /// Rows created before `before_ms` (service time) not yet deleted.
    pub fn remaining_before(&self, before_ms: u64) -> u64 {
        self.store.borrow().remaining_before(before_ms)
    }

    /// Drops the workers: they hold ports that hold the world, a cycle to break after a run.
    pub fn teardown(&self) {
        for state in &self.replicas {
            state.worker.borrow_mut().take();
        }
    }

    /// Rows not yet deleted.
    pub fn remaining_rows(&self) -> u64 {
        self.store.borrow().remaining()
    }
}
