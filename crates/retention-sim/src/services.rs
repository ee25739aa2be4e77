//! The retention system's services: the lease authority and the record store, and how a
//! request is applied to them at its apply instant.
//!
//! Terminology:
//! - *owner*: the service knows a replica by its owner id (`r1`, ...): leases are granted to,
//!   renewed for and released by the replica that sent the request.
//! - *fencing*: the store checks a delete's token against the authority's live lease when the
//!   delete is applied; a scenario can switch it off to show why it is needed.
//! - *short answer*: a fault of the store: an admitted delete removes fewer rows than it
//!   could (fewer than its limit, while more eligible rows remain); `Applied::Deleted` says
//!   how many were held back.
//! - *revocation*: a fault of the authority: the live lease is dropped (the next renewal
//!   answers `None`).

use leasesim_events::{Event, ReplicaId};
use leasesim_sim::{Apply, FaultProfile, Scenario, World};

use crate::Retention;
use crate::authority::{Acquired, LeaseAuthority, Release};
use crate::events::{Answer, Applied, Failure, LeaseView, Note, Request};
use crate::store::RecordStore;

/// The services of one retention run.
#[derive(Clone, Debug)]
pub struct Services {
    pub authority: LeaseAuthority,
    pub store: RecordStore,
}

/// The retention services: the lease authority and the record store.
impl Apply for Retention {
    type Services = Services;

    /// The initial state: the scenario's rows spread over their creation window.
    fn services(scenario: &Scenario<Retention>, profile: &FaultProfile<Retention>) -> Services {
        let settings = &scenario.settings;
        let (from_ms, to_ms) = settings.created_window_ms();
        let store =
            RecordStore::spread(settings.store.rows, from_ms, to_ms, settings.store.fencing);
        let authority =
            LeaseAuthority::new(settings.lease.ttl_ms.get(), settings.lease.exact_token);
        // invariant: the services start with no lease and every row in place.
        debug_assert_eq!(authority.last_token(), 0);
        debug_assert_eq!(store.remaining(), settings.store.rows);
        let _ = profile;
        Services { authority, store }
    }

    /// Applies a request of `replica` at the services, now.
    fn apply(world: &World<Retention>, replica: ReplicaId, request: Request) -> (Applied, Answer) {
        let now_ms = world.service_now_ms();
        let owner = world.replica(replica).owner_id();
        let services = &mut *world.services();
        services.apply_at(owner, request, now_ms, |eligible| {
            held_back(world, eligible)
        })
    }
}

fn view(token: u64, expires_at_ms: u64) -> LeaseView {
    LeaseView {
        token,
        expires_at_ms,
    }
}

impl Services {
    /// Applies `owner`'s request at `now_ms` (the services' clock): what the simulated world
    /// does at a request's apply instant, without the world. `held_back` says how many of a
    /// delete's eligible rows to leave in the store (0: a full answer; see [`Applied`]); it
    /// is asked only for an admitted delete. The conformance drivers compare real stores with
    /// this function (`leasesim-conformance`).
    pub fn apply_at(
        &mut self,
        owner: &str,
        request: Request,
        now_ms: u64,
        held_back: impl FnOnce(u32) -> u32,
    ) -> (Applied, Answer) {
        let authority = &mut self.authority;
        match request {
            Request::Acquire => match authority.acquire(owner, now_ms) {
                Acquired::Granted { lease, replaced } => {
                    let lease = view(lease.token, lease.expires_at_ms);
                    let applied = Applied::Granted { lease, replaced };
                    (applied, Answer::Lease(Some(lease)))
                }
                Acquired::Busy { holder_token } => {
                    (Applied::Busy { holder_token }, Answer::Lease(None))
                }
            },
            Request::Renew { lease: shown } => match authority.renew(owner, shown.token, now_ms) {
                Some(held) => {
                    // invariant: a renewal answers a new token, the highest handed out.
                    debug_assert!(held.token == authority.last_token());
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
            } => self.delete(older_than_ms, limit, token, now_ms, held_back),
        }
    }

    /// Applies a delete: the fencing check, then oldest-first removal (maybe answered short).
    fn delete(
        &mut self,
        older_than_ms: u64,
        limit: u32,
        token: u64,
        now_ms: u64,
        held_back: impl FnOnce(u32) -> u32,
    ) -> (Applied, Answer) {
        let current_token = self.authority.current_token(now_ms);
        if !self.store.admits(token, current_token) {
            let applied = Applied::DeleteRefused { current_token };
            return (applied, Answer::Failed(Failure::StaleToken));
        }
        let eligible = self.store.eligible(older_than_ms, limit, now_ms);
        let held_back = held_back(eligible);
        // invariant: a short answer holds back no more rows than were eligible.
        assert!(held_back <= eligible);
        let done = self
            .store
            .delete_oldest(older_than_ms, eligible - held_back, now_ms);
        // invariant: a delete removes at most its limit, and a short answer leaves exactly the
        // rows it held back.
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

/// Fault: how many of the `eligible` rows a delete leaves in the store (0: a full answer). A
/// short answer holds back at least one row; holding back one is value 0.
pub fn held_back(world: &World<Retention>, eligible: u32) -> u32 {
    if eligible == 0 || !world.fault(world.profile().system.short_delete) {
        return 0;
    }
    let held_back = world.env().range(1, u64::from(eligible));
    // invariant: a short answer holds back at least one eligible row, and no more than there
    // are.
    debug_assert!((1..=u64::from(eligible)).contains(&held_back));
    u32::try_from(held_back).expect("at most the eligible rows, a u32")
}

/// The authority's revocation at `now_ms` (service time), as the world tells a real run's
/// store hook ([`World::services_changed`]): the token it dropped, if a lease was live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Revoked {
    pub now_ms: u64,
    pub token: Option<u64>,
}

/// Fault: the authority drops the live lease.
pub fn revoke(world: &World<Retention>) {
    let now_ms = world.service_now_ms();
    let revoked = {
        let mut services = world.services();
        let revoked = services.authority.revoke(now_ms);
        // invariant: the revoked lease is gone at once.
        debug_assert!(revoked.is_none() || services.authority.current_token(now_ms).is_none());
        revoked
    };
    world.services_changed(&Revoked {
        now_ms,
        token: revoked,
    });
    if let Some(token) = revoked {
        world.env().emit(Event::world_note(Note::Revoked { token }));
    }
}
