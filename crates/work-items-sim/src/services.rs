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
use leasesim_sim::{Apply, FaultProfile, Scenario, World};

use crate::events::{Answer, Applied, Key, LeaseView, Mark, ProviderView, Request, WorkItems};
use crate::provider::ExternalProvider;
use crate::store::{Grant, ItemStore, Refusal};

/// The services of one run.
#[derive(Clone, Debug)]
pub struct Services {
    pub store: ItemStore,
    pub provider: ExternalProvider,
}

/// The work-items services: the item store and the external provider.
impl Apply for WorkItems {
    type Services = Services;

    /// The run's items as drawn (every item pending), and a provider that has seen nothing.
    fn services(scenario: &Scenario<WorkItems>, profile: &FaultProfile<WorkItems>) -> Services {
        let drawn = &profile.system;
        let store = ItemStore::new(&drawn.sizes, drawn.fencing);
        let provider = ExternalProvider::new(store.len());
        // invariant: the dispatcher created exactly the scenario's items.
        debug_assert_eq!(store.len(), scenario.settings.items.count);
        Services { store, provider }
    }

    /// Applies a request of `replica` at the services, now.
    fn apply(world: &World<WorkItems>, replica: ReplicaId, request: Request) -> (Applied, Answer) {
        let applied = match request {
            Request::ProviderApply { item, key } => provider_apply(world, item, key),
            Request::Lookup { key } => {
                let found = world.services().provider.lookup(key);
                Applied::LookedUp { key, found }
            }
            store_request => {
                let now_ms = world.service_now_ms();
                apply_at(&mut world.services().store, replica, store_request, now_ms)
                    .expect("every request but the provider's is a store request")
            }
        };
        (applied, answer_of(&applied))
    }
}

/// Applies `replica`'s store request to `store` at store time `now_ms`: what the store did
/// (`None` for a provider request, which is not the store's). The simulation applies every
/// store request through this function; the conformance drivers apply the model through it.
pub fn apply_at(
    store: &mut ItemStore,
    replica: ReplicaId,
    request: Request,
    now_ms: u64,
) -> Option<Applied> {
    let applied = match request {
        Request::ProviderApply { .. } | Request::Lookup { .. } => return None,
        Request::Find { after } => Applied::Found {
            item: store.find(after, now_ms),
        },
        Request::Status => Applied::Status(store.status()),
        Request::Claim { item, lease_ms, .. } => {
            claim(store.claim(item, replica, now_ms, lease_ms), item)
        }
        Request::PlainClaim { item, lease_ms, .. } => {
            claim(Ok(store.plain_claim(item, replica, now_ms, lease_ms)), item)
        }
        other => write(store, other, now_ms),
    };
    Some(applied)
}

/// The answer a worker receives for a request its service applied this way.
pub fn answer_of(applied: &Applied) -> Answer {
    match *applied {
        Applied::Found { item } => Answer::Found(item),
        Applied::Claimed {
            item,
            token,
            expires_at_ms,
            attempt,
            chunks,
            ..
        } => Answer::Claimed(LeaseView {
            item,
            token,
            expires_at_ms,
            attempt,
            chunks,
        }),
        Applied::Busy { .. } => Answer::Busy,
        Applied::Closed { .. } => Answer::Closed,
        Applied::Renewed { expires_at_ms, .. } => Answer::Renewed { expires_at_ms },
        Applied::ChunkApplied { fresh, .. } => Answer::Applied { fresh },
        Applied::Marked { .. } => Answer::Ok,
        Applied::LeaseLost { .. } => Answer::LeaseLost,
        Applied::Status(status) => Answer::Status(status),
        Applied::ProviderApplied { .. } => Answer::Provider(ProviderView::Applied),
        Applied::ProviderDuplicate { .. } => Answer::Provider(ProviderView::Duplicate),
        Applied::ProviderRefused { .. } => Answer::Provider(ProviderView::Refused),
        Applied::LookedUp { found, .. } => Answer::Lookup(found),
    }
}

/// What a claim (conditional, or a plain write of the owner) did.
fn claim(granted: Result<Grant, Refusal>, item: u32) -> Applied {
    match granted {
        Ok(grant) => Applied::Claimed {
            item,
            token: grant.token,
            expires_at_ms: grant.expires_at_ms,
            attempt: grant.attempt,
            chunks: grant.chunks,
            prior: grant.prior,
        },
        Err(Refusal::Busy { token }) => Applied::Busy { item, token },
        Err(Refusal::Closed { state }) => Applied::Closed { item, state },
    }
}

/// A store write carrying a token: renew, apply, an end mark, guarded or not.
fn write(store: &mut ItemStore, request: Request, now_ms: u64) -> Applied {
    let (item, token) = (
        request.item().expect("a store write names its item"),
        request.token().expect("a store write carries a token"),
    );
    let live = store.live(item, now_ms);
    let refused = |live| Applied::LeaseLost { item, token, live };
    let (mark, error, guarded) = match request {
        Request::Renew { lease_ms, .. } => {
            return match store.renew(item, token, now_ms, lease_ms) {
                Ok(expires_at_ms) => Applied::Renewed {
                    item,
                    token,
                    expires_at_ms,
                },
                Err(live) => refused(live),
            };
        }
        Request::Apply { chunk, .. } | Request::UnguardedApply { chunk, .. } => {
            let guarded = matches!(request, Request::Apply { .. });
            return match store.apply(item, token, chunk, now_ms, guarded) {
                Ok(fresh) => Applied::ChunkApplied {
                    item,
                    token,
                    chunk,
                    fresh,
                    live,
                },
                Err(live) => refused(live),
            };
        }
        Request::Done { .. } => (Mark::Done, None, true),
        Request::UnguardedDone { .. } => (Mark::Done, None, false),
        Request::Release { error, .. } => (Mark::Released, Some(error), true),
        Request::Fail { error, .. } => (Mark::Failed, Some(error), true),
        other => unreachable!("not a store write: {other:?}"),
    };
    match store.mark(item, token, mark, error, (now_ms, guarded)) {
        Ok(repeat) => Applied::Marked {
            item,
            token,
            mark,
            repeat,
            live,
        },
        Err(live) => refused(live),
    }
}

/// The provider's apply: its refusal fault is drawn at the item's first apply.
fn provider_apply(world: &World<WorkItems>, item: u32, key: Key) -> Applied {
    if world.services().provider.refusal_decided(item).is_none() {
        let refuses = world.fault(world.profile().system.provider_refuses);
        world.services().provider.decide_refusal(item, refuses);
    }
    let answer = world.services().provider.apply(item, key);
    match answer {
        ProviderView::Applied => Applied::ProviderApplied { item, key },
        ProviderView::Duplicate => Applied::ProviderDuplicate { item, key },
        ProviderView::Refused => Applied::ProviderRefused { item, key },
    }
}
