//! The reservation system's services: the store, the claim-token source, and each replica's
//! process switches; how a request is applied at its apply instant.
//!
//! Terminology:
//! - *store time*: `leasesim_sim::EPOCH_MS` + virtual time, the store's own clock. A request
//!   whose `now` is `None` is judged by it; one with `Some(t)` by `t` (the store trusts the
//!   caller).
//! - *store timeout*: a fault of the store: a statement gives up (a lock wait timed out) and
//!   applies nothing; the caller sees a timeout.
//! - *token source*: claim tokens are numbered across the run from 1, so no two claims of any
//!   workers ever share one (production would draw a random one).
//! - *process switch*: per replica, the kill fault's switch (the driver drops the run when it
//!   trips) and the count of claims its worker holds (a pause with none held is "between
//!   terms", where a stop `at = "between-terms"` lands).

use std::cell::Cell;
use std::rc::Rc;

use leasesim_events::ReplicaId;
use leasesim_sim::{Apply, FaultProfile, Scenario, Signal, World};

use crate::events::{Answer, Applied, Failure, OutcomeView, Request, Reservations};
use crate::store::Store;

/// One replica's process switches (see the module docs).
#[derive(Debug, Default)]
pub struct Process {
    /// Tripped by the kill fault; the driver then drops the worker's run.
    pub killed: Cell<bool>,
    /// Notified when `killed` trips.
    pub kill: Signal,
    /// Reservations the worker was answered in claims and has not sent a release for.
    pub held: Cell<u32>,
}

impl Process {
    /// Trips the kill switch.
    pub fn trip(&self) {
        self.killed.set(true);
        self.held.set(0);
        self.kill.notify();
    }
}

/// The services of one reservation run.
#[derive(Debug)]
pub struct Services {
    pub store: Store,
    last_token: u64,
    processes: Vec<Rc<Process>>,
}

/// The instant that decides eligibility: the caller's, or the store's own now.
fn eligible_at(now: Option<u64>, store_now_ms: u64) -> u64 {
    now.unwrap_or(store_now_ms)
}

/// The answer a worker receives for what the store did.
pub fn answer_of(applied: &Applied) -> Answer {
    match *applied {
        Applied::Claimed { ids, until_ms, .. } => Answer::Claimed { ids, until_ms },
        Applied::Expired { .. } | Applied::ExpiredById { .. } => {
            Answer::Expire(OutcomeView::Expired)
        }
        Applied::AlreadyDone { .. } => Answer::Expire(OutcomeView::AlreadyDone),
        Applied::NotEligible { .. } => Answer::Expire(OutcomeView::NotEligible),
        Applied::Invalid { .. } | Applied::Unknown { .. } => Answer::Failed(Failure::Invalid),
        Applied::StoreTimeout => Answer::Failed(Failure::StoreTimeout),
        Applied::Released { .. } | Applied::ReleasedAny { .. } => Answer::Released,
        Applied::Parked { .. } => Answer::Recorded,
        Applied::DueRead { ids } => Answer::Due(ids),
        Applied::ClaimWritten { .. } => Answer::Written,
    }
}

impl Services {
    /// A claim token no claim has used.
    pub fn fresh_token(&mut self) -> u64 {
        self.last_token += 1;
        // invariant: tokens strictly increase, so each is fresh.
        debug_assert!(self.last_token > 0);
        self.last_token
    }

    /// The process switches of `replica`.
    pub fn process(&self, replica: ReplicaId) -> Rc<Process> {
        self.processes[replica.index()].clone()
    }
}

/// The reservation services: the store and the replicas' processes.
impl Apply for Reservations {
    type Services = Services;

    /// An empty store (the agents place the holds) and one process per replica.
    fn services(
        scenario: &Scenario<Reservations>,
        profile: &FaultProfile<Reservations>,
    ) -> Services {
        let _ = profile;
        let processes = (0..scenario.replicas)
            .map(|_| Rc::new(Process::default()))
            .collect();
        Services {
            store: Store::new(),
            last_token: 0,
            processes,
        }
    }

    /// Applies a request of `replica` at the store, now.
    fn apply(
        world: &World<Reservations>,
        replica: ReplicaId,
        request: Request,
    ) -> (Applied, Answer) {
        let _ = replica;
        if store_timed_out(world) {
            return (Applied::StoreTimeout, Answer::Failed(Failure::StoreTimeout));
        }
        let now_ms = world.service_now_ms();
        let applied = apply_at(&mut world.services().store, request, now_ms);
        (applied, answer_of(&applied))
    }
}

/// Does the `store_timeout` fault strike the request being applied now? One draw per apply
/// (none once healed): a struck request applies nothing, and its caller sees
/// [`Failure::StoreTimeout`]. A real run's store hook draws it as the simulation does.
pub fn store_timed_out(world: &World<Reservations>) -> bool {
    world.fault(world.profile().system.store_timeout)
}

/// Applies `request` to `store` at store time `now_ms`: what the store did. The simulation
/// applies every request through this function (after its fault draw); the conformance
/// drivers apply the model through it too.
pub fn apply_at(store: &mut Store, request: Request, now_ms: u64) -> Applied {
    match request {
        Request::Claim {
            limit,
            now,
            token,
            claim_for_ms,
        } => store.claim(limit, eligible_at(now, now_ms), token, claim_for_ms, now_ms),
        Request::Expire { id, now } => store.expire(id, eligible_at(now, now_ms)),
        Request::Release { id, token } => store.release(id, token, now_ms),
        Request::DeadLetter { letter } => store.park(letter.id),
        Request::ExpireById { id } => store.expire_by_id(id),
        Request::ReadDue { limit, now } => store.read_due(limit, eligible_at(now, now_ms), now_ms),
        Request::WriteClaim {
            id,
            token,
            claim_for_ms,
        } => store.write_claim(id, token, claim_for_ms, now_ms),
        Request::ReleaseAny { id } => store.release_any(id, now_ms),
    }
}
