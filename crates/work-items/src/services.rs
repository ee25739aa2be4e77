//! The work-items system's services, and how a request is applied to them at its apply
//! instant.
//!
//! Terminology:
//! - *store*: the item store ([`ItemStore`]); the replica that sent a claim is its owner.
//! - *provider*: the external provider ([`ExternalProvider`]); its own fault refuses an
//!   item's effect for good (decided once per item, at its first apply, never once healed).
//! - *live*: every store write's `Applied` carries the item's live claim token at that
//!   instant, so a trace (and a checker) can tell a stale write from a current one.

use leasesim_events::ReplicaId;
use leasesim_sim::{FaultProfile, Scenario, World};

use crate::events::{
    Answer, Applied, ErrorCode, Key, LeaseView, Mark, ProviderView, Request, WorkItems,
};
use crate::provider::ExternalProvider;
use crate::store::{ItemStore, Refusal};

/// The services of one run.
#[derive(Clone, Debug)]
pub struct Services {
    pub store: ItemStore,
    pub provider: ExternalProvider,
}

impl Services {
    /// The run's items as drawn (every item pending), and a provider that has seen nothing.
    pub fn new(scenario: &Scenario<WorkItems>, profile: &FaultProfile<WorkItems>) -> Services {
        let drawn = &profile.system;
        let store = ItemStore::new(&drawn.sizes, drawn.fencing);
        let provider = ExternalProvider::new(store.len());
        // invariant: the dispatcher created exactly the scenario's items.
        debug_assert_eq!(store.len(), scenario.settings.items.count);
        Services { store, provider }
    }
}

/// Applies a request of `replica` at the services, now.
pub fn apply(world: &World<WorkItems>, replica: ReplicaId, request: Request) -> (Applied, Answer) {
    let now_ms = world.service_now_ms();
    match request {
        Request::ProviderApply { item, key } => provider_apply(world, item, key),
        Request::Lookup { key } => {
            let found = world.services().provider.lookup(key);
            (Applied::LookedUp { key, found }, Answer::Lookup(found))
        }
        Request::Find { after } => {
            let item = world.services().store.find(after, now_ms);
            (Applied::Found { item }, Answer::Found(item))
        }
        Request::Status => {
            let status = world.services().store.status();
            (Applied::Status(status), Answer::Status(status))
        }
        Request::Claim { item, lease_ms, .. } => claim(world, replica, item, lease_ms, true),
        Request::PlainClaim { item, lease_ms, .. } => claim(world, replica, item, lease_ms, false),
        other => write(world, other, now_ms),
    }
}

/// A claim (conditional), or a plain write of the owner (`conditional` false).
fn claim(
    world: &World<WorkItems>,
    replica: ReplicaId,
    item: u32,
    lease_ms: u64,
    conditional: bool,
) -> (Applied, Answer) {
    let now_ms = world.service_now_ms();
    let store = &mut world.services().store;
    let granted = match conditional {
        true => store.claim(item, replica, now_ms, lease_ms),
        false => Ok(store.plain_claim(item, replica, now_ms, lease_ms)),
    };
    match granted {
        Ok(grant) => {
            let lease = LeaseView {
                item,
                token: grant.token,
                expires_at_ms: grant.expires_at_ms,
                attempt: grant.attempt,
                chunks: grant.chunks,
            };
            let applied = Applied::Claimed {
                item,
                token: grant.token,
                expires_at_ms: grant.expires_at_ms,
                attempt: grant.attempt,
                chunks: grant.chunks,
                prior: grant.prior,
            };
            (applied, Answer::Claimed(lease))
        }
        Err(Refusal::Busy { token }) => (Applied::Busy { item, token }, Answer::Busy),
        Err(Refusal::Closed { state }) => (Applied::Closed { item, state }, Answer::Closed),
    }
}

/// A store write carrying a token: renew, apply, an end mark, guarded or not.
fn write(world: &World<WorkItems>, request: Request, now_ms: u64) -> (Applied, Answer) {
    let store = &mut world.services().store;
    let (item, token) = (
        request.item().expect("a store write names its item"),
        request.token().expect("a store write carries a token"),
    );
    let live = store.live(item, now_ms);
    let refused = |live| (Applied::LeaseLost { item, token, live }, Answer::LeaseLost);
    let (mark, error, guarded) = match request {
        Request::Renew { lease_ms, .. } => {
            return match store.renew(item, token, now_ms, lease_ms) {
                Ok(expires_at_ms) => (
                    Applied::Renewed {
                        item,
                        token,
                        expires_at_ms,
                    },
                    Answer::Renewed { expires_at_ms },
                ),
                Err(live) => refused(live),
            };
        }
        Request::Apply { chunk, .. } | Request::UnguardedApply { chunk, .. } => {
            let guarded = matches!(request, Request::Apply { .. });
            return match store.apply(item, token, chunk, now_ms, guarded) {
                Ok(fresh) => {
                    let applied = Applied::ChunkApplied {
                        item,
                        token,
                        chunk,
                        fresh,
                        live,
                    };
                    (applied, Answer::Applied { fresh })
                }
                Err(live) => refused(live),
            };
        }
        Request::Done { .. } => (Mark::Done, None, true),
        Request::UnguardedDone { .. } => (Mark::Done, None, false),
        Request::Release { error, .. } => (Mark::Released, Some(error), true),
        Request::Fail { error, .. } => (Mark::Failed, Some(error), true),
        other => unreachable!("not a store write: {other:?}"),
    };
    marked(store, (item, token, live), mark, error, (now_ms, guarded))
}

/// An end mark, and what it answers.
fn marked(
    store: &mut ItemStore,
    (item, token, live): (u32, u64, Option<u64>),
    mark: Mark,
    error: Option<ErrorCode>,
    when: (u64, bool),
) -> (Applied, Answer) {
    match store.mark(item, token, mark, error, when) {
        Ok(repeat) => {
            let applied = Applied::Marked {
                item,
                token,
                mark,
                repeat,
                live,
            };
            (applied, Answer::Ok)
        }
        Err(live) => (Applied::LeaseLost { item, token, live }, Answer::LeaseLost),
    }
}

/// The provider's apply: its refusal fault is drawn at the item's first apply.
fn provider_apply(world: &World<WorkItems>, item: u32, key: Key) -> (Applied, Answer) {
    if world.services().provider.refusal_decided(item).is_none() {
        let refuses = world.fault(world.profile().system.provider_refuses);
        world.services().provider.decide_refusal(item, refuses);
    }
    let answer = world.services().provider.apply(item, key);
    let applied = match answer {
        ProviderView::Applied => Applied::ProviderApplied { item, key },
        ProviderView::Duplicate => Applied::ProviderDuplicate { item, key },
        ProviderView::Refused => Applied::ProviderRefused { item, key },
    };
    (applied, Answer::Provider(answer))
}
