//! The holder-lock system's store port: the volatile key-value store with lifetimes (seed
//! 004) as one connection sees it, and the simulated model behind the same port.
//!
//! Terminology:
//! - *connection*: one caller's handle on a store ([`ClaimConnection`]); callers share one
//!   store through connections of their own, each writing as its own replica.
//! - *answer*: every call answers what the worker receives ([`Answer`]): `Created` or
//!   `Exists`, `Renewed`, `NotHolder` or `Absent`, `Deleted`, `Value(token)`, `Written`,
//!   `Unsupported`. A store cannot say which replica wrote a key, so the port compares
//!   answers and what each key holds, not the simulation's observed values.
//! - *store clock*: who decides that a lifetime ended ([`StoreClock`]). A store that takes
//!   `now_ms` ([`StoreClock::Given`]) lets a test decide every expiry, as the model does. A
//!   store that runs lifetimes on its own clock ([`StoreClock::Own`], Redis) ignores `now_ms`:
//!   conformance then holds time still and tests expiry apart, with margins.
//! - *remaining lifetime*: what a key has left at an instant ([`KeyState::remaining_ms`]); a
//!   store on its own clock reports what its clock says, which is at most the model's and
//!   less by the time the case took so far.
//! - *two-step release*: a read of the key followed by a delete if it held the token
//!   ([`get_then_delete`]): what a worker does on a store without compare-and-delete, and
//!   what the design warns about: another claim can be written between the two steps, and the
//!   delete then removes it.

use std::cell::RefCell;
use std::rc::Rc;

use holder_lock_worker::{HolderToken, Removal, Renewal};
use holder_lock_worker::{Store as WorkerPort, StoreError as WorkerError};
use leasesim_events::ReplicaId;
/// The vocabulary of the port, re-exported so an adapter needs no other crate.
pub use leasesim_holder_lock::events::{Answer, Key, Request};
use leasesim_holder_lock::store::ClaimStore;

use crate::StoreError;

/// A fresh store: can it compare and delete in one step?
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClaimSetup {
    /// `delete_if_holder` is offered; without it the store answers `Unsupported` and only
    /// `get` and `delete` remain for a release.
    pub compare_and_delete: bool,
}

impl Default for ClaimSetup {
    fn default() -> ClaimSetup {
        ClaimSetup {
            compare_and_delete: true,
        }
    }
}

/// What one key holds at an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyState {
    pub token: u64,
    /// Milliseconds left of its lifetime (more than 0: the key is live).
    pub remaining_ms: u64,
}

/// What a claim store holds at an instant: each key of [`Key::ALL`], live or absent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClaimState {
    pub keys: [Option<KeyState>; 2],
}

/// Who decides that a lifetime ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreClock {
    /// The store compares lifetimes with the `now_ms` of each call (the model; a SQL store
    /// that takes the time as a parameter).
    Given,
    /// The store runs lifetimes on its own clock and ignores `now_ms` (Redis). Its remaining
    /// lifetimes may fall short of the model's by at most `slack_ms`: the wall time a case
    /// may take.
    Own { slack_ms: u64 },
}

/// One caller's connection to a claim store. Every call is one step on the store's side.
pub trait ClaimConnection {
    /// Applies `request` at store time `now_ms` (ignored by a store on its own clock): the
    /// answer the worker receives.
    fn apply(&mut self, request: Request, now_ms: u64) -> Result<Answer, StoreError>;
    /// What the store holds at `now_ms`.
    fn state(&mut self, now_ms: u64) -> Result<ClaimState, StoreError>;
}

impl<C: ClaimConnection + ?Sized> ClaimConnection for Box<C> {
    fn apply(&mut self, request: Request, now_ms: u64) -> Result<Answer, StoreError> {
        (**self).apply(request, now_ms)
    }
    fn state(&mut self, now_ms: u64) -> Result<ClaimState, StoreError> {
        (**self).state(now_ms)
    }
}

/// A kind of claim store that opens fresh stores: what a conformance driver is given.
pub trait ClaimStoreKind {
    type Connection: ClaimConnection;

    /// Who decides expiries in this kind of store.
    fn clock(&self) -> StoreClock;

    /// A fresh store set up as `setup` says (every key absent), and `callers` connections to
    /// it. Whatever an earlier `open` made is gone.
    fn open(
        &mut self,
        setup: &ClaimSetup,
        callers: usize,
    ) -> Result<Vec<Self::Connection>, StoreError>;
}

/// The two-step release the design warns about: read `key`, and delete it if it held `token`.
/// Between the read and the delete another claim may be written; the delete then removes
/// that one. `Deleted` when the delete removed something, `NotHolder` or `Absent` from the
/// read.
pub fn get_then_delete<C: ClaimConnection + ?Sized>(
    connection: &mut C,
    key: Key,
    token: u64,
    now_ms: u64,
) -> Result<Answer, StoreError> {
    match connection.apply(Request::Get { key }, now_ms)? {
        Answer::Value(held) if held == token => {
            // The gap: nothing ties this delete to the value just read.
            connection.apply(Request::Delete { key }, now_ms)
        }
        Answer::Value(_) => Ok(Answer::NotHolder),
        other => Ok(other),
    }
}

/// The simulated store behind the port: the very store the simulation applies requests to
/// ([`ClaimStore::apply`]), each connection writing as its own replica.
#[derive(Debug, Default)]
pub struct ClaimModel;

/// One caller's connection to a [`ClaimModel`] store (callers share the store).
#[derive(Clone, Debug)]
pub struct ModelConnection {
    store: Rc<RefCell<ClaimStore>>,
    replica: ReplicaId,
}

impl ClaimStoreKind for ClaimModel {
    type Connection = ModelConnection;

    fn clock(&self) -> StoreClock {
        StoreClock::Given
    }

    fn open(
        &mut self,
        setup: &ClaimSetup,
        callers: usize,
    ) -> Result<Vec<ModelConnection>, StoreError> {
        let store = Rc::new(RefCell::new(ClaimStore::new(setup.compare_and_delete)));
        let connections = (0..callers)
            .map(|index| ModelConnection {
                store: store.clone(),
                replica: ReplicaId(u16::try_from(index).expect("few callers")),
            })
            .collect();
        Ok(connections)
    }
}

impl ClaimConnection for ModelConnection {
    fn apply(&mut self, request: Request, now_ms: u64) -> Result<Answer, StoreError> {
        let (_, answer) = self.store.borrow_mut().apply(self.replica, request, now_ms);
        Ok(answer)
    }

    fn state(&mut self, now_ms: u64) -> Result<ClaimState, StoreError> {
        let store = self.store.borrow();
        let keys = Key::ALL.map(|key| {
            store.live(key, now_ms).map(|entry| KeyState {
                token: entry.held.token,
                remaining_ms: entry.expires_at_ms - now_ms,
            })
        });
        Ok(ClaimState { keys })
    }
}

/// The worker's store port ([`holder_lock_worker::Store`]) on any claim store: what a
/// production deployment of `holder-lock-worker` plugs in (with the Redis connection), and
/// what tests drive the real worker against (with the model). Each call runs on the wrapped
/// connection at once: on Redis that is one blocking round trip, so give each worker a
/// thread, or port these few lines to the `redis` crate's async connection.
pub struct WorkerStore<C: ClaimConnection> {
    connection: RefCell<C>,
    compare_and_delete: bool,
    /// The store's time for a store that takes it (the model); Redis ignores it.
    now_ms: Box<dyn Fn() -> u64>,
}

impl<C: ClaimConnection> WorkerStore<C> {
    /// The port on `connection`, for a store set up as `setup` says, whose time is `now_ms`.
    pub fn new(connection: C, setup: &ClaimSetup, now_ms: impl Fn() -> u64 + 'static) -> Self {
        WorkerStore {
            connection: RefCell::new(connection),
            compare_and_delete: setup.compare_and_delete,
            now_ms: Box::new(now_ms),
        }
    }

    /// Applies `request` to the key called `key`.
    fn call(&self, key: &str, request: impl FnOnce(Key) -> Request) -> Result<Answer, WorkerError> {
        let key = Key::from_name(key).ok_or_else(|| WorkerError::Unavailable {
            reason: format!("the store knows no key {key:?}"),
        })?;
        let now_ms = (self.now_ms)();
        match self.connection.borrow_mut().apply(request(key), now_ms) {
            Ok(answer) => Ok(answer),
            Err(StoreError::Refused(reason)) => Err(WorkerError::Unavailable { reason }),
            // The command may have applied: the worker hears what a lost reply means.
            Err(StoreError::Unknown(_)) => Err(WorkerError::Timeout),
        }
    }
}

/// An answer the port did not expect for its call.
fn unexpected(answer: Answer) -> WorkerError {
    WorkerError::Unavailable {
        reason: format!("unexpected answer {answer:?}"),
    }
}

impl<C: ClaimConnection> WorkerPort for WorkerStore<C> {
    async fn create_if_absent(
        &self,
        key: &str,
        token: HolderToken,
        lifetime_ms: u64,
    ) -> Result<bool, WorkerError> {
        let create = |key| Request::Create {
            key,
            token: token.0,
            lifetime_ms,
        };
        match self.call(key, create)? {
            Answer::Created => Ok(true),
            Answer::Exists => Ok(false),
            other => Err(unexpected(other)),
        }
    }

    async fn renew_if_holder(
        &self,
        key: &str,
        token: HolderToken,
        lifetime_ms: u64,
    ) -> Result<Renewal, WorkerError> {
        let renew = |key| Request::Renew {
            key,
            token: token.0,
            lifetime_ms,
        };
        match self.call(key, renew)? {
            Answer::Renewed => Ok(Renewal::Renewed),
            Answer::NotHolder => Ok(Renewal::NotHolder),
            Answer::Absent => Ok(Renewal::Absent),
            other => Err(unexpected(other)),
        }
    }

    async fn delete_if_holder(
        &self,
        key: &str,
        token: HolderToken,
    ) -> Result<Removal, WorkerError> {
        match self.call(key, |key| Request::DeleteIfHolder {
            key,
            token: token.0,
        })? {
            Answer::Deleted => Ok(Removal::Deleted),
            Answer::NotHolder => Ok(Removal::NotHolder),
            Answer::Absent => Ok(Removal::Absent),
            Answer::Unsupported => Err(WorkerError::Unsupported),
            other => Err(unexpected(other)),
        }
    }

    async fn get(&self, key: &str) -> Result<Option<HolderToken>, WorkerError> {
        match self.call(key, |key| Request::Get { key })? {
            Answer::Value(token) => Ok(Some(HolderToken(token))),
            Answer::Absent => Ok(None),
            other => Err(unexpected(other)),
        }
    }

    async fn delete(&self, key: &str) -> Result<bool, WorkerError> {
        match self.call(key, |key| Request::Delete { key })? {
            Answer::Deleted => Ok(true),
            Answer::Absent => Ok(false),
            other => Err(unexpected(other)),
        }
    }

    async fn set(
        &self,
        key: &str,
        token: HolderToken,
        lifetime_ms: u64,
    ) -> Result<(), WorkerError> {
        match self.call(key, |key| Request::Set {
            key,
            token: token.0,
            lifetime_ms,
        })? {
            Answer::Written => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    fn compare_and_delete(&self) -> bool {
        self.compare_and_delete
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(token: u64, lifetime_ms: u64) -> Request {
        Request::Create {
            key: Key::Claim,
            token,
            lifetime_ms,
        }
    }

    #[test]
    fn model_callers_share_one_store_and_lifetimes_run_on_the_given_time() {
        let mut callers = ClaimModel.open(&ClaimSetup::default(), 2).unwrap();
        assert_eq!(
            callers[0].apply(create(7, 100), 0).unwrap(),
            Answer::Created
        );
        assert_eq!(
            callers[1].apply(create(8, 100), 99).unwrap(),
            Answer::Exists
        );
        let state = callers[1].state(40).unwrap();
        let held = KeyState {
            token: 7,
            remaining_ms: 60,
        };
        assert_eq!(state.keys, [Some(held), None]);
        assert_eq!(
            callers[1].apply(create(8, 100), 100).unwrap(),
            Answer::Created
        );
    }

    #[test]
    fn the_two_step_release_deletes_a_claim_written_after_its_read_by_name() {
        let setup = ClaimSetup {
            compare_and_delete: false,
        };
        let mut callers = ClaimModel.open(&setup, 2).unwrap();
        callers[0].apply(create(7, 100), 0).unwrap();
        let cad = Request::DeleteIfHolder {
            key: Key::Claim,
            token: 7,
        };
        assert_eq!(callers[0].apply(cad, 1).unwrap(), Answer::Unsupported);
        assert_eq!(
            get_then_delete(&mut callers[0], Key::Claim, 8, 2).unwrap(),
            Answer::NotHolder
        );
        assert_eq!(
            get_then_delete(&mut callers[0], Key::Claim, 7, 3).unwrap(),
            Answer::Deleted
        );
        assert_eq!(callers[1].state(3).unwrap(), ClaimState::default());
    }
}
