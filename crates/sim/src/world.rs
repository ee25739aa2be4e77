//! The shared world: one system's services, the network between them and the replicas, and
//! the replicas' processes.
//!
//! Terminology:
//! - *send*: a request leaves the replica; its *flight* (a world task, so it completes even if
//!   the worker stops waiting) carries it to the service after a drawn latency, where it may be
//!   refused (fault; the caller sees the refusal), lost before it arrives (fault; the caller
//!   sees a timeout, nothing was applied), or *applied* (by the system, [`Apply::apply`](crate::Apply::apply));
//!   the answer then flies back after another drawn latency, or is lost (fault) and the
//!   caller sees a timeout: from a timeout alone a caller cannot tell whether its request
//!   took effect.
//! - *store hook*: what applies requests in place of the simulated services in a real run
//!   ([`StoreHook`]): a real store behind the same flight, so latency, refusals and lost
//!   replies are drawn around the real call exactly as around a simulated one.
//! - *healed*: the liveness phase switches every fault off; latencies remain.
//! - *service time*: [`EPOCH_MS`] + virtual time; every service's clock.

use std::cell::{Cell, RefCell, RefMut};
use std::rc::Rc;

use leasesim_events::{EventKind, NetFailure, ReplicaId, Vocabulary};

use crate::env::{EPOCH_MS, Env};
use crate::faults::FaultProfile;
use crate::process::ReplicaState;
use crate::reply::{Replies, ReplyWait};
use crate::scenario::Scenario;
use crate::system::System;

/// How a store hook's call ended when the store did not answer it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreFailure {
    /// The store refused the call and applied nothing: the caller sees a refusal.
    Refused,
    /// The call's outcome is unknown (the connection failed after the call was sent): the
    /// caller sees a timeout, and the run's trace lacks what the store may have applied.
    Unknown,
}

/// Applies a system's requests on a real store in place of its simulated services.
///
/// A real run installs one ([`World::with_store`]); the world calls it at every request's
/// apply instant, between the drawn latencies and faults of the flight. A hook may apply the
/// simulated model beside the store ([`Apply::apply`](crate::Apply::apply)) to keep the
/// world's services in step with it, and compare the two answers.
pub trait StoreHook<S: System> {
    /// Applies `request` of `replica` now (service time [`World::service_now_ms`]).
    fn apply(
        &self,
        world: &World<S>,
        replica: ReplicaId,
        request: S::Request,
    ) -> Result<(S::Applied, S::Answer), StoreFailure>;

    /// The world changed its services outside a request, in the system's own words (a fault
    /// of the service, such as a lease revoked by its authority; a client that is not a
    /// replica, such as an agent placing a hold; a key the store evicted): the hook makes the
    /// same change on the real store, or checks that the store made it. `change` is the
    /// system's own type ([`World::services_changed`]).
    fn services_changed(&self, world: &World<S>, change: &dyn std::any::Any) {
        let _ = (world, change);
    }
}

/// One run's world of system `S`.
pub struct World<S: System> {
    env: Rc<dyn Env<S>>,
    /// The real store a real run applies requests to; `None`: the simulated services.
    store: Option<Rc<dyn StoreHook<S>>>,
    scenario: Rc<Scenario<S>>,
    profile: FaultProfile<S>,
    services: RefCell<S::Services>,
    replicas: Vec<ReplicaState<S>>,
    next_call: Cell<u64>,
    next_task: Cell<u32>,
    healed: Cell<bool>,
    /// The instant (virtual ms) of the apply under way, if any: service time during an apply
    /// is its instant, also when a real store's call takes real time.
    applying_ms: Cell<Option<u64>>,
    /// Replies no call or flight holds any more, for the next calls.
    replies: Replies<S::Answer>,
}

impl<S: System> World<S> {
    pub fn new(scenario: Rc<Scenario<S>>, profile: FaultProfile<S>, env: Rc<dyn Env<S>>) -> Self {
        let services = S::services(&scenario, &profile);
        let replicas = (0..scenario.replicas)
            .map(|index| ReplicaState::new(ReplicaId(index), profile.clocks[usize::from(index)]))
            .collect();
        World {
            env,
            store: None,
            scenario,
            profile,
            services: RefCell::new(services),
            replicas,
            next_call: Cell::new(1),
            next_task: Cell::new(1),
            healed: Cell::new(false),
            applying_ms: Cell::new(None),
            replies: Replies::default(),
        }
    }

    /// The same world applying its requests through `store` (a real run).
    #[must_use]
    pub fn with_store(mut self, store: Rc<dyn StoreHook<S>>) -> Self {
        self.store = Some(store);
        self
    }

    pub fn env(&self) -> &dyn Env<S> {
        &*self.env
    }

    pub fn scenario(&self) -> &Scenario<S> {
        &self.scenario
    }

    pub fn profile(&self) -> &FaultProfile<S> {
        &self.profile
    }

    /// The system's services, borrowed for one apply (never across an await).
    pub fn services(&self) -> RefMut<'_, S::Services> {
        self.services.borrow_mut()
    }

    pub fn replica(&self, id: ReplicaId) -> &ReplicaState<S> {
        &self.replicas[id.index()]
    }

    pub fn replicas(&self) -> &[ReplicaState<S>] {
        &self.replicas
    }

    /// Service time now: during an apply, the apply's instant.
    pub fn service_now_ms(&self) -> u64 {
        EPOCH_MS + self.applying_ms.get().unwrap_or_else(|| self.env.now_ms())
    }

    pub fn next_call_id(&self) -> u64 {
        // Call ids strictly increase, so a call's events are tied to it alone: they never wrap.
        let id = self.next_call.get();
        self.next_call
            .set(id.checked_add(1).expect("call ids never wrap"));
        id
    }

    /// The next worker task's number (see [`crate::Port::spawn`]).
    pub fn next_task_id(&self) -> u32 {
        // Task numbers strictly increase, so a task's two events are tied to it: they never
        // wrap.
        let id = self.next_task.get();
        self.next_task
            .set(id.checked_add(1).expect("task numbers never wrap"));
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

    /// Does a fault of probability `p` strike now? Never once healed, and then without a
    /// draw: a healed world's choices are the workers' alone.
    pub fn fault(&self, p: f64) -> bool {
        !self.healed.get() && self.env.coin(p)
    }

    /// Sends a request on its flight and waits for the answer.
    pub(crate) async fn send(
        self: Rc<Self>,
        replica: ReplicaId,
        call: u64,
        request: S::Request,
    ) -> S::Answer {
        let reply = self.replies.take();
        let (world, sent) = (self.clone(), reply.clone());
        let flight = async move {
            let answer = world.flight(replica, call, request).await;
            // The worker may have stopped waiting; the request took effect regardless.
            sent.send(answer);
            world.replies.recycle(sent);
        };
        self.env.spawn("flight", Box::pin(flight));
        let (answer, reply) = ReplyWait::new(reply).await;
        self.replies.recycle(reply);
        answer
    }

    async fn flight(&self, replica: ReplicaId, call: u64, request: S::Request) -> S::Answer {
        let env = self.env();
        let op = <S as Vocabulary>::op(&request);
        let sent_ms = env.now_ms();
        let latency = self.profile.latency.get(op);
        env.sleep(env.range(latency.min, latency.max)).await;
        if self.fault(self.profile.reject.get(op)) {
            return self.refused(replica, call, op).await;
        }
        if self.fault(self.profile.request_lost.get(op)) {
            env.emit_for(replica, EventKind::RequestLost { call, op });
            return self.timed_out(sent_ms).await;
        }
        let applied_ms = env.now_ms();
        let (applied, answer) = match self.apply(replica, request, applied_ms) {
            Ok(done) => done,
            Err(StoreFailure::Refused) => return self.refused(replica, call, op).await,
            Err(StoreFailure::Unknown) => {
                env.emit_for(replica, EventKind::RequestLost { call, op });
                return self.timed_out(sent_ms).await;
            }
        };
        // invariant: an apply takes no virtual time; a real store's call may take real time,
        // and what it applied is recorded at the instant it was applied.
        debug_assert!(self.store.is_some() || env.now_ms() == applied_ms);
        env.emit_at(
            applied_ms,
            leasesim_events::Event::of(replica, EventKind::Applied { call, applied }),
        );
        if self.fault(self.profile.reply_lost.get(op)) {
            env.emit_for(replica, EventKind::ReplyLost { call });
            return self.timed_out(sent_ms).await;
        }
        env.sleep(env.range(latency.min, latency.max)).await;
        answer
    }

    /// Applies `request` at the simulated services, or at the real store if the run has one,
    /// at instant `at_ms` (now).
    fn apply(
        &self,
        replica: ReplicaId,
        request: S::Request,
        at_ms: u64,
    ) -> Result<(S::Applied, S::Answer), StoreFailure> {
        let Some(store) = &self.store else {
            return Ok(S::apply(self, replica, request));
        };
        self.applying_ms.set(Some(at_ms));
        let applied = store.apply(self, replica, request);
        self.applying_ms.set(None);
        applied
    }

    /// Tells the run's store hook, if any, that the world changed its services outside a
    /// request (`change`: the system's own description). A simulated run has no hook: the
    /// call does nothing and draws nothing.
    pub fn services_changed(&self, change: &dyn std::any::Any) {
        if let Some(store) = &self.store {
            store.services_changed(self, change);
        }
    }

    /// A refusal: recorded, and its answer flies back after a drawn latency.
    async fn refused(&self, replica: ReplicaId, call: u64, op: S::Op) -> S::Answer {
        let env = self.env();
        env.emit_for(replica, EventKind::Rejected { call, op });
        let latency = self.profile.latency.get(op);
        env.sleep(env.range(latency.min, latency.max)).await;
        S::failed(NetFailure::Rejected)
    }

    /// The caller's timeout of a request sent at `sent_ms`: it comes `timeout_ms` after the
    /// send (at once if that has passed).
    async fn timed_out(&self, sent_ms: u64) -> S::Answer {
        let env = self.env();
        let timeout_at_ms = sent_ms + self.profile.timeout_ms;
        env.sleep_until(timeout_at_ms.max(env.now_ms())).await;
        S::failed(NetFailure::Timeout)
    }

    /// Drops the workers: they hold ports that hold the world, a cycle to break after a run.
    pub fn teardown(&self) {
        for state in &self.replicas {
            state.drop_worker();
        }
        // invariant: no worker outlives its run.
        debug_assert!(self.replicas.iter().all(|s| s.worker().is_none()));
    }
}
