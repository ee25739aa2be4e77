//! The production holder-lock worker (`holder-lock-worker`) on the store port adapter
//! (`WorkerStore`): against the model here, against Redis when a server is given.

use std::future::{Future, pending, ready};
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use holder_lock_worker::{
    AttemptEnd, AttemptReport, ClaimConfig, Clock, HolderToken, Job, JobError, JobRunner, Release,
    TokenSource,
};
use leasesim_holder_lock::events::{CLAIM_KEY, Key, Request};
use leasesim_stores::holder_lock::{
    ClaimConnection, ClaimModel, ClaimSetup, ClaimStoreKind, WorkerStore,
};

/// Timers that never fire: the job below finishes before any renewal is due.
struct NoTimers;

impl Clock for NoTimers {
    fn sleep(&self, _: u64) -> impl Future<Output = ()> {
        pending()
    }
}

/// Tokens 0x10_0000_0001, 0x10_0000_0002, ... (a run's own: never used before).
struct Tokens(std::cell::Cell<u64>);

impl TokenSource for Tokens {
    fn fresh(&self) -> HolderToken {
        self.0.set(self.0.get() + 1);
        HolderToken((0x10 << 32) | self.0.get())
    }
}

/// A job that is done at once.
struct Instant;

impl Job for Instant {
    fn run(&self) -> impl Future<Output = Result<(), JobError>> {
        ready(Ok(()))
    }
}

/// Polls `future` to its end; it must not wait for a wake-up (every port answers at once).
fn finish<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut context = Context::from_waker(Waker::noop());
    for _ in 0..1_000 {
        if let Poll::Ready(out) = future.as_mut().poll(&mut context) {
            return out;
        }
    }
    panic!("the attempt did not finish without a timer");
}

/// One attempt of the production worker on `connection`.
fn attempt<C: ClaimConnection>(connection: C, setup: &ClaimSetup) -> AttemptReport {
    let store = WorkerStore::new(connection, setup, || 1_000);
    let config = ClaimConfig {
        key: CLAIM_KEY.into(),
        lifetime_ms: 60_000,
        renew_every_ms: Some(20_000),
    };
    let tokens = Tokens(std::cell::Cell::new(0));
    let worker = JobRunner::new(config, NoTimers, store, tokens, Instant).expect("valid");
    finish(worker.run()).expect("one attempt at a time")
}

/// The worker claims, runs the job and releases its own claim; a rival's claim stops it; a
/// store without compare-and-delete leaves the claim to run out.
fn the_worker_claims_runs_and_releases_on<S: ClaimStoreKind>(kind: &mut S) {
    let setup = ClaimSetup::default();
    let mut connections = kind.open(&setup, 2).expect("the store opens");
    let watcher = connections.pop().expect("two connections");
    let report = attempt(connections.pop().expect("two"), &setup);
    assert_eq!(report.end, AttemptEnd::JobDone, "{report:?}");
    assert_eq!(report.release, Some(Release::Deleted), "{report:?}");
    let mut watcher = watcher;
    assert_eq!(watcher.state(1_000).unwrap().keys[Key::Claim.index()], None);
    let rival = Request::Create {
        key: Key::Claim,
        token: 7,
        lifetime_ms: 60_000,
    };
    let mut shared = kind.open(&setup, 2).expect("the store opens");
    let mut rival_side = shared.pop().unwrap();
    rival_side.apply(rival, 1_000).unwrap();
    let report = attempt(shared.pop().unwrap(), &setup);
    assert_eq!(report.end, AttemptEnd::NotHolder, "{report:?}");
    let held = rival_side.state(1_000).unwrap().keys[Key::Claim.index()].map(|k| k.token);
    assert_eq!(held, Some(7), "the rival's claim stays");
    let two_step = ClaimSetup {
        compare_and_delete: false,
    };
    let mut plain = kind.open(&two_step, 2).expect("the store opens");
    let mut look = plain.pop().unwrap();
    let report = attempt(plain.pop().unwrap(), &two_step);
    assert_eq!(report.release, Some(Release::LeftToExpire), "{report:?}");
    assert!(look.state(1_000).unwrap().keys[Key::Claim.index()].is_some());
}

#[test]
fn the_production_worker_runs_on_the_model_store() {
    the_worker_claims_runs_and_releases_on(&mut ClaimModel);
}

#[cfg(feature = "redis")]
#[test]
#[ignore = "needs Redis: LEASESIM_REDIS_URL; .ci/run starts one"]
fn redis_the_production_worker_runs_on_redis() {
    use leasesim_stores::redis::URL_VAR;
    use leasesim_stores::redis::holder_lock::RedisStore;
    let url = std::env::var(URL_VAR).unwrap_or_else(|_| panic!("{URL_VAR} names the server"));
    let mut store = RedisStore::connect(&url).unwrap_or_else(|e| panic!("{e}"));
    the_worker_claims_runs_and_releases_on(&mut store);
}
