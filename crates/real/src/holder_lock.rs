//! The holder-lock system's store hook: its claim store on Redis in place of the simulated
//! one, in a real run on the shared world ([`crate::world`]).
//!
//! Terminology:
//! - *claim store*: the run's two keys (the claim and the holder record) in a Redis namespace
//!   of the run's own, emptied at the start; each replica has a connection of its own, and
//!   the hook one more (the *harness connection*) for the world's own changes.
//! - *observed call*: every request runs as one Redis script that also answers the token the
//!   key held live when it ran ([`Seen`]), so the store's answer is compared with the
//!   model's on both.
//! - *store clock*: Redis ends lifetimes on its own clock (`StoreClock::Own`), not at the
//!   `now_ms` the world passes. The model reads the run's clock just before each call; Redis
//!   runs the call within the call's round trip after that, so each lifetime the model
//!   starts ends no later than Redis's, and earlier by at most the round trip of the call
//!   that started it (plus Redis's millisecond: a key is live at its last millisecond).
//! - *clock margin*: twice the longest round trip of the run so far, plus a millisecond
//!   each for the run's clock and Redis's ([`ClaimStoreHook::margin_ms`]): how far apart
//!   the two clocks can put one comparison of a call's instant with a lifetime's end.
//! - *model in step*: every call the store answers is applied to the world's model too. At
//!   the call's instant when the model answers as the store did (answer and token found);
//!   else at the instant, within the clock margin, that explains the store's answer by the
//!   clock alone: just before the key's lifetime end in the model (Redis still held it) or
//!   at it (Redis had already let it go). Such a call is *skewed* ([`StoreTally::skewed`]).
//!   A store answer no instant within the margin explains is a divergence: a correct run
//!   never reports one, and a store that answers wrongly is caught unless its error is a
//!   lifetime end moved by less than the margin.
//! - *what the checkers rely on*: the `Applied` facts come from the model (the writer of
//!   each token, each lifetime's end), applied at the call's instant or the skewed one; a
//!   lifetime end they judge against is never later than Redis's, so "the claim had run
//!   out" is never wrong, and "the claim was still live" can be wrong only within the
//!   margin, which a correct worker keeps a fifth of a lifetime away from.
//! - *forgetting*: the world's forgetters (eviction, failover, restart) change the model;
//!   told of each ([`Forgotten`]), the hook makes every key it touched hold on Redis what
//!   the model holds (the token with the rest of its lifetime, or nothing). A lifetime's
//!   end in the model (the watcher's note) is not told: Redis ends it itself.

use std::any::Any;
use std::cell::{Cell, RefCell};

use leasesim_events::ReplicaId;
use leasesim_holder_lock::HolderLock;
use leasesim_holder_lock::events::{Answer, Applied, Forgetting, Key, Request};
use leasesim_holder_lock::store::{ClaimStore, Forgotten};
use leasesim_sim::{FaultProfile, Scenario, StoreFailure, StoreHook, World};
use leasesim_stores::StoreError;
use leasesim_stores::holder_lock::ClaimSetup;

use crate::world::{RealHook, StoreTally};
use crate::{RealError, StoreTarget};

/// What an observed call saw: the answer, and the token its key held live when it ran.
pub type Seen = (Answer, Option<u64>);

/// One connection to the claim store: runs a request as one observed call.
pub type Connection = Box<dyn FnMut(Request) -> Result<Seen, StoreError>>;

/// The holder-lock store hook (see the module docs).
pub struct ClaimStoreHook {
    /// One per replica, by index, then the harness connection.
    connections: RefCell<Vec<Connection>>,
    tally: RefCell<StoreTally>,
    /// The longest round trip of a store call so far, in run ms.
    worst_trip_ms: Cell<u64>,
}

impl ClaimStoreHook {
    /// A hook on `connections` (the replicas' then the harness's).
    pub fn new(connections: Vec<Connection>) -> ClaimStoreHook {
        ClaimStoreHook {
            connections: RefCell::new(connections),
            tally: RefCell::new(StoreTally::default()),
            worst_trip_ms: Cell::new(0),
        }
    }

    /// The clock margin now (see the module docs).
    pub fn margin_ms(&self) -> u64 {
        2 * self.worst_trip_ms.get() + 2
    }

    /// Runs `request` on connection `index`, counting its round trip on the run's clock.
    fn call(
        &self,
        world: &World<HolderLock>,
        index: usize,
        request: Request,
    ) -> Result<Seen, StoreError> {
        let sent_ms = world.env().now_ms();
        let seen = (self.connections.borrow_mut()[index])(request);
        let trip_ms = world.env().now_ms() - sent_ms;
        self.worst_trip_ms
            .set(self.worst_trip_ms.get().max(trip_ms + 1));
        seen
    }

    /// The harness connection's index.
    fn harness(&self) -> usize {
        self.connections.borrow().len() - 1
    }
}

impl StoreHook<HolderLock> for ClaimStoreHook {
    fn apply(
        &self,
        world: &World<HolderLock>,
        replica: ReplicaId,
        request: Request,
    ) -> Result<(Applied, Answer), StoreFailure> {
        let now_ms = world.service_now_ms();
        let real = self.call(world, replica.index(), request);
        let seen = real.as_ref().ok().copied();
        let margin_ms = self.margin_ms();
        let mut applied = None;
        let model = || {
            let mut store = world.services();
            let seen = seen.expect("the model applies only what the store answered");
            let at_ms = explaining(&store, replica, request, seen, now_ms, margin_ms);
            let expected = store.probe(replica, request, at_ms);
            applied = Some((store.apply(replica, request, at_ms).0, at_ms != now_ms));
            expected
        };
        let mut tally = self.tally.borrow_mut();
        let (answer, _) = tally.shadow(&request, real, model)?;
        let (applied, skewed) = applied.expect("an answered call was applied to the model");
        tally.skewed += u64::from(skewed);
        Ok((applied, answer))
    }

    /// Makes each key a forgetting touched hold on Redis what the model holds now.
    fn services_changed(&self, world: &World<HolderLock>, change: &dyn Any) {
        let forgotten = change
            .downcast_ref::<Forgotten>()
            .expect("the holder-lock world changes its store only by forgetting");
        let now_ms = world.service_now_ms();
        for loss in forgotten.losses.iter().flatten() {
            let key = loss.key;
            let live = world.services().live(key, now_ms);
            let request = match live {
                Some(entry) => Request::Set {
                    key,
                    token: entry.held.token,
                    lifetime_ms: entry.expires_at_ms - now_ms,
                },
                None => Request::Delete { key },
            };
            // invariant: only a failover leaves a key it touched holding something.
            assert!(live.is_none() || forgotten.cause == Forgetting::Failover);
            if let Err(error) = self.call(world, self.harness(), request) {
                let mut tally = self.tally.borrow_mut();
                let why = format!(
                    "the store could not make the {:?} of {key:?}: {error}",
                    forgotten.cause
                );
                tally.divergence.get_or_insert(why);
                tally.last_error = Some(error.to_string());
            }
        }
    }
}

/// The instant within `margin_ms` of `now_ms` at which the model answers what the store saw
/// (see the module docs): `now_ms` when it does, else just before or at the end of the key's
/// lifetime in the model; `now_ms` when none does (a divergence).
fn explaining(
    store: &ClaimStore,
    replica: ReplicaId,
    request: Request,
    seen: Seen,
    now_ms: u64,
    margin_ms: u64,
) -> u64 {
    let end_ms = store.entry(request.key()).map(|entry| entry.expires_at_ms);
    [Some(now_ms), end_ms.map(|end| end - 1), end_ms]
        .into_iter()
        .flatten()
        .filter(|at_ms| at_ms.abs_diff(now_ms) <= margin_ms)
        .find(|&at_ms| store.probe(replica, request, at_ms) == seen)
        .unwrap_or(now_ms)
}

impl RealHook<HolderLock> for ClaimStoreHook {
    /// A fresh claim store in the namespace of `target` (its keys deleted), set up as the
    /// profile drew it, with a connection per replica and the harness's.
    fn open(
        target: &StoreTarget,
        scenario: &Scenario<HolderLock>,
        profile: &FaultProfile<HolderLock>,
    ) -> Result<ClaimStoreHook, RealError> {
        let StoreTarget::Redis { url, prefix } = target else {
            return Err(RealError::BadConfig(format!(
                "the holder-lock system's claim store runs on redis, not {}",
                target.kind()
            )));
        };
        let setup = ClaimSetup {
            compare_and_delete: profile.system.compare_and_delete,
        };
        let mut connections = redis(url, prefix, &setup, usize::from(scenario.replicas) + 1)?;
        let harness = connections.last_mut().expect("the harness connection");
        for key in Key::ALL {
            harness(Request::Delete { key }).map_err(RealError::Store)?;
        }
        Ok(ClaimStoreHook::new(connections))
    }

    fn tally(&self) -> StoreTally {
        self.tally.borrow().clone()
    }
}

/// `count` connections to the namespace `prefix` of the Redis server at `url`.
#[cfg(feature = "redis")]
fn redis(
    url: &str,
    prefix: &str,
    setup: &ClaimSetup,
    count: usize,
) -> Result<Vec<Connection>, RealError> {
    use leasesim_stores::redis::holder_lock::RedisStore;
    let store = RedisStore::connect(url).map_err(RealError::Store)?;
    let connections = store
        .open_in(prefix, setup, count)
        .map_err(RealError::Store)?;
    let observing = |mut connection: leasesim_stores::redis::holder_lock::RedisConnection| {
        let observe = move |request| {
            let observed = connection.observe(request)?;
            Ok((observed.answer, observed.held))
        };
        Box::new(observe) as Connection
    };
    Ok(connections.into_iter().map(observing).collect())
}

#[cfg(not(feature = "redis"))]
fn redis(
    _url: &str,
    _prefix: &str,
    _setup: &ClaimSetup,
    _count: usize,
) -> Result<Vec<Connection>, RealError> {
    Err(RealError::BadConfig(
        "this build has no Redis client: build with `--features redis`".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const R1: ReplicaId = ReplicaId(0);
    const R2: ReplicaId = ReplicaId(1);

    fn create(token: u64) -> Request {
        Request::Create {
            key: Key::Claim,
            token,
            lifetime_ms: 100,
        }
    }

    /// A store whose claim (token 7) was created at 0 and ends at 100.
    fn claimed() -> ClaimStore {
        let mut store = ClaimStore::new(true);
        store.apply(R1, create(7), 0);
        store
    }

    #[test]
    fn an_answer_the_model_gives_at_the_calls_instant_is_taken_there() {
        let store = claimed();
        let seen = (Answer::Exists, Some(7));
        assert_eq!(explaining(&store, R2, create(8), seen, 50, 10), 50);
    }

    #[test]
    fn a_lifetime_end_within_the_margin_explains_the_stores_answer_either_way() {
        let store = claimed();
        // Redis had let the claim go a few ms before the model's end: the model applies the
        // create at its end.
        let gone = (Answer::Created, None);
        assert_eq!(explaining(&store, R2, create(8), gone, 96, 10), 100);
        // Redis still held it a few ms past the model's end: just before that end.
        let held = (Answer::Exists, Some(7));
        assert_eq!(explaining(&store, R2, create(8), held, 104, 10), 99);
    }

    #[test]
    fn an_answer_no_instant_within_the_margin_explains_stays_a_divergence() {
        let store = claimed();
        let gone = (Answer::Created, None);
        assert_eq!(
            explaining(&store, R2, create(8), gone, 80, 10),
            80,
            "too early"
        );
        let held = (Answer::Exists, Some(7));
        assert_eq!(
            explaining(&store, R2, create(8), held, 120, 10),
            120,
            "too late"
        );
        let foreign = (Answer::Exists, Some(9));
        assert_eq!(
            explaining(&store, R2, create(8), foreign, 99, 10),
            99,
            "no such token"
        );
    }
}
