//! The retention system's store port: the lease authority and the record store as one
//! connection sees them, and the simulated model behind the same port.
//!
//! Terminology:
//! - *connection*: one caller's handle on a store ([`RetentionConnection`]); several callers
//!   (replicas) share one store through connections of their own.
//! - *observed answer*: every call answers the [`Applied`] value the simulation records at
//!   its apply instant: `Granted` with the token and the expired lease it replaced, `Busy`
//!   with the live holder's token, `Deleted` with the rows removed and the token that was
//!   current, `DeleteRefused`, ... The answer the worker receives follows from it
//!   ([`answer_of`]).
//! - *now*: every call takes the store's time `now_ms` (on the scale of
//!   [`leasesim_events::EPOCH_MS`]); the store compares expiries with it, so a test decides
//!   every expiry. A lease is live while `now_ms < expires_at_ms`.
//! - *setup*: a fresh store: its configuration ([`StoreConfig`]) and its rows.
//! - *state*: what a store holds at an instant ([`RetentionState`]), compared at the end of a
//!   conformance case.

use std::cell::RefCell;
use std::rc::Rc;

use leasesim_retention::authority::LeaseAuthority;
use leasesim_retention::events::{Answer, Applied, Failure, LeaseView, Request};
use leasesim_retention::services::Services;
use leasesim_retention::store::RecordStore;

use crate::StoreError;

/// The lease's name in the stores' lease table: one row per lease name.
pub const LEASE_NAME: &str = "retention";

/// What a retention store's statements check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreConfig {
    /// A lease granted or renewed at `now_ms` expires at `now_ms + ttl_ms`.
    pub ttl_ms: u64,
    /// Renew demands the exact current token; otherwise the owner of the live lease renews
    /// whatever token it shows.
    pub exact_token: bool,
    /// Deletes carry the token predicate (repository-side fencing); off only to show why it
    /// is needed.
    pub fencing: bool,
}

impl Default for StoreConfig {
    fn default() -> StoreConfig {
        StoreConfig {
            ttl_ms: 30_000,
            exact_token: false,
            fencing: true,
        }
    }
}

/// A fresh store: its configuration, and the creation times of its rows (any order).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Setup {
    pub config: StoreConfig,
    pub rows_created_ms: Vec<u64>,
}

/// A lease as a store holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldLease {
    pub owner_id: String,
    pub token: u64,
    pub expires_at_ms: u64,
}

/// What a retention store holds at an instant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetentionState {
    /// The live lease, if any.
    pub live: Option<HeldLease>,
    /// The highest token ever handed out (0: none yet); no token is handed out twice.
    pub last_token: u64,
    /// Creation times of the rows not deleted, oldest first.
    pub rows_created_ms: Vec<u64>,
}

/// One caller's connection to a retention store. Every call is atomic: it runs in one
/// transaction, and its answer is what that transaction did.
pub trait RetentionConnection {
    /// Grants the lease to `owner_id` when no lease is live: a token above every token handed
    /// out before, expiring `ttl_ms` after `now_ms`. `Granted` (with the token of the expired
    /// lease it took over, if any) or `Busy` (with the live holder's token).
    fn acquire(&mut self, owner_id: &str, now_ms: u64) -> Result<Applied, StoreError>;
    /// Rotates the token of `owner_id`'s live lease (in exact-token mode only when `token` is
    /// the current one): `Renewed` with the new lease, or `RenewRefused`.
    fn renew(&mut self, owner_id: &str, token: u64, now_ms: u64) -> Result<Applied, StoreError>;
    /// Compare-and-set: frees the live lease only if it is `owner_id`'s with `token`:
    /// `Released`, or `FreedNothing`.
    fn release(&mut self, owner_id: &str, token: u64, now_ms: u64) -> Result<Applied, StoreError>;
    /// Deletes up to `limit` of the oldest rows created before `older_than_ms` (and not after
    /// `now_ms`) if `token` is the live lease's (or fencing is off): `Deleted` with the rows
    /// removed and the token that was current, or `DeleteRefused`.
    fn delete_batch(
        &mut self,
        older_than_ms: u64,
        limit: u32,
        token: u64,
        now_ms: u64,
    ) -> Result<Applied, StoreError>;
    /// The authority drops the live lease (a fault the world injects); its token, if any.
    fn revoke(&mut self, now_ms: u64) -> Result<Option<u64>, StoreError>;
    /// What the store holds at `now_ms`.
    fn state(&mut self, now_ms: u64) -> Result<RetentionState, StoreError>;
}

impl<C: RetentionConnection + ?Sized> RetentionConnection for Box<C> {
    fn acquire(&mut self, owner_id: &str, now_ms: u64) -> Result<Applied, StoreError> {
        (**self).acquire(owner_id, now_ms)
    }
    fn renew(&mut self, owner_id: &str, token: u64, now_ms: u64) -> Result<Applied, StoreError> {
        (**self).renew(owner_id, token, now_ms)
    }
    fn release(&mut self, owner_id: &str, token: u64, now_ms: u64) -> Result<Applied, StoreError> {
        (**self).release(owner_id, token, now_ms)
    }
    fn delete_batch(
        &mut self,
        older_than_ms: u64,
        limit: u32,
        token: u64,
        now_ms: u64,
    ) -> Result<Applied, StoreError> {
        (**self).delete_batch(older_than_ms, limit, token, now_ms)
    }
    fn revoke(&mut self, now_ms: u64) -> Result<Option<u64>, StoreError> {
        (**self).revoke(now_ms)
    }
    fn state(&mut self, now_ms: u64) -> Result<RetentionState, StoreError> {
        (**self).state(now_ms)
    }
}

/// A kind of retention store that opens fresh stores: what a conformance driver is given.
pub trait RetentionStore {
    type Connection: RetentionConnection;

    /// A fresh store set up as `setup` says (no lease ever granted, exactly these rows), and
    /// `callers` connections to it. Whatever an earlier `open` made is gone.
    fn open(&mut self, setup: &Setup, callers: usize) -> Result<Vec<Self::Connection>, StoreError>;
}

/// `owner_id`'s `request`, applied on `connection` at `now_ms`: the observed answer and the
/// answer the worker receives.
pub fn apply<C: RetentionConnection + ?Sized>(
    connection: &mut C,
    owner_id: &str,
    request: Request,
    now_ms: u64,
) -> Result<(Applied, Answer), StoreError> {
    let applied = match request {
        Request::Acquire => connection.acquire(owner_id, now_ms)?,
        Request::Renew { lease } => connection.renew(owner_id, lease.token, now_ms)?,
        Request::Release { lease } => connection.release(owner_id, lease.token, now_ms)?,
        Request::Delete {
            older_than_ms,
            limit,
            token,
        } => connection.delete_batch(older_than_ms, limit, token, now_ms)?,
    };
    Ok((applied, answer_of(&applied)))
}

/// The answer a worker receives for a call the store applied this way.
pub fn answer_of(applied: &Applied) -> Answer {
    match *applied {
        Applied::Granted { lease, .. } | Applied::Renewed { lease } => Answer::Lease(Some(lease)),
        Applied::Busy { .. } | Applied::RenewRefused => Answer::Lease(None),
        Applied::Released | Applied::FreedNothing => Answer::Released,
        Applied::Deleted { rows, .. } => Answer::Rows(rows),
        Applied::DeleteRefused { .. } => Answer::Failed(Failure::StaleToken),
    }
}

/// A lease as it travels in answers.
pub fn lease_view(token: u64, expires_at_ms: u64) -> LeaseView {
    LeaseView {
        token,
        expires_at_ms,
    }
}

/// The simulated services behind the store port: the lease authority and the record store
/// the simulation applies requests to, through the very function it uses
/// ([`Services::apply_at`]), with every delete answered in full.
#[derive(Debug, Default)]
pub struct Model;

/// One caller's connection to a [`Model`] store (callers share the services).
#[derive(Clone, Debug)]
pub struct ModelConnection {
    services: Rc<RefCell<Services>>,
}

impl ModelConnection {
    /// A fresh model store set up as `setup` says.
    pub fn new(setup: &Setup) -> ModelConnection {
        let config = &setup.config;
        let services = Services {
            authority: LeaseAuthority::new(config.ttl_ms, config.exact_token),
            store: RecordStore::new(setup.rows_created_ms.clone(), config.fencing),
        };
        ModelConnection {
            services: Rc::new(RefCell::new(services)),
        }
    }

    fn apply(&self, owner_id: &str, request: Request, now_ms: u64) -> Applied {
        let mut services = self.services.borrow_mut();
        let (applied, answer) = services.apply_at(owner_id, request, now_ms, |_| 0);
        // invariant: the model's answer is the one its observed answer implies.
        debug_assert_eq!(answer, answer_of(&applied));
        applied
    }
}

impl RetentionStore for Model {
    type Connection = ModelConnection;

    fn open(&mut self, setup: &Setup, callers: usize) -> Result<Vec<ModelConnection>, StoreError> {
        let first = ModelConnection::new(setup);
        Ok(vec![first; callers])
    }
}

/// A lease shown in a renew or release (only its token matters to the store).
fn shown(token: u64) -> LeaseView {
    lease_view(token, 0)
}

impl RetentionConnection for ModelConnection {
    fn acquire(&mut self, owner_id: &str, now_ms: u64) -> Result<Applied, StoreError> {
        Ok(self.apply(owner_id, Request::Acquire, now_ms))
    }

    fn renew(&mut self, owner_id: &str, token: u64, now_ms: u64) -> Result<Applied, StoreError> {
        let request = Request::Renew {
            lease: shown(token),
        };
        Ok(self.apply(owner_id, request, now_ms))
    }

    fn release(&mut self, owner_id: &str, token: u64, now_ms: u64) -> Result<Applied, StoreError> {
        let request = Request::Release {
            lease: shown(token),
        };
        Ok(self.apply(owner_id, request, now_ms))
    }

    fn delete_batch(
        &mut self,
        older_than_ms: u64,
        limit: u32,
        token: u64,
        now_ms: u64,
    ) -> Result<Applied, StoreError> {
        let request = Request::Delete {
            older_than_ms,
            limit,
            token,
        };
        Ok(self.apply("", request, now_ms))
    }

    fn revoke(&mut self, now_ms: u64) -> Result<Option<u64>, StoreError> {
        Ok(self.services.borrow_mut().authority.revoke(now_ms))
    }

    fn state(&mut self, now_ms: u64) -> Result<RetentionState, StoreError> {
        let services = self.services.borrow();
        let live = services.authority.live(now_ms).map(|held| HeldLease {
            owner_id: held.owner_id.clone(),
            token: held.token,
            expires_at_ms: held.expires_at_ms,
        });
        Ok(RetentionState {
            live,
            last_token: services.authority.last_token(),
            rows_created_ms: services.store.rows(),
        })
    }
}

/// How a SQL adapter turns what its statements did into the observed answer. Each takes the
/// lease row as the transaction read it under its lock (before the statement), and what the
/// conditional statement returned.
pub(crate) mod observe {
    use super::{Applied, HeldLease, lease_view};

    /// The lease row as a transaction read it: `owner` is `None` once released or revoked.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub(crate) struct LeaseRow {
        pub(crate) owner: Option<String>,
        pub(crate) token: u64,
        pub(crate) expires_at_ms: u64,
    }

    impl LeaseRow {
        /// The live lease at `now_ms`, if any.
        pub(crate) fn live(&self, now_ms: u64) -> Option<HeldLease> {
            let owner = self
                .owner
                .as_ref()
                .filter(|_| now_ms < self.expires_at_ms)?;
            Some(HeldLease {
                owner_id: owner.clone(),
                token: self.token,
                expires_at_ms: self.expires_at_ms,
            })
        }

        pub(crate) fn live_token(&self, now_ms: u64) -> Option<u64> {
            self.live(now_ms).map(|held| held.token)
        }
    }

    /// An acquire: the granted `(token, expires_at_ms, took_over)`, if the statement matched.
    pub(crate) fn acquire(
        before: &LeaseRow,
        granted: Option<(u64, u64, bool)>,
        now_ms: u64,
    ) -> Applied {
        match granted {
            Some((token, expires_at_ms, took_over)) => Applied::Granted {
                lease: lease_view(token, expires_at_ms),
                // The lease taken over was the one before it: tokens are handed out in turn.
                replaced: took_over.then(|| token - 1),
            },
            None => Applied::Busy {
                holder_token: before.live_token(now_ms).unwrap_or(before.token),
            },
        }
    }

    /// A renew: the rotated `(token, expires_at_ms)`, if the statement matched.
    pub(crate) fn renew(renewed: Option<(u64, u64)>) -> Applied {
        match renewed {
            Some((token, expires_at_ms)) => Applied::Renewed {
                lease: lease_view(token, expires_at_ms),
            },
            None => Applied::RenewRefused,
        }
    }

    /// A release: how many lease rows the compare-and-set changed.
    pub(crate) fn release(changed_rows: usize) -> Applied {
        match changed_rows {
            0 => Applied::FreedNothing,
            _ => Applied::Released,
        }
    }

    /// A delete with `token`: the creation times of the rows the statement removed. A store
    /// that removed rows for a token that was not current says so (`token_current: false`):
    /// the observed answer reports what the store did, not what it should have done.
    pub(crate) fn delete(
        before: &LeaseRow,
        token: u64,
        fencing: bool,
        deleted_created_ms: &[u64],
        now_ms: u64,
    ) -> Applied {
        let current_token = before.live_token(now_ms);
        let token_current = current_token == Some(token);
        if !token_current && fencing && deleted_created_ms.is_empty() {
            return Applied::DeleteRefused { current_token };
        }
        // invariant: a delete reported as applied either carried the live token, ran without
        // fencing, or removed rows it should not have (which the answer then shows).
        debug_assert!(token_current || !fencing || !deleted_created_ms.is_empty());
        Applied::Deleted {
            rows: u32::try_from(deleted_created_ms.len()).expect("at most a limit of rows, a u32"),
            token_current,
            current_token,
            newest_created_ms: deleted_created_ms.iter().copied().max(),
            held_back: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_callers_share_one_store_and_answers_follow_the_applied_value() {
        let setup = Setup {
            config: StoreConfig {
                ttl_ms: 100,
                ..StoreConfig::default()
            },
            rows_created_ms: vec![30, 10, 20],
        };
        let mut callers = Model.open(&setup, 2).unwrap();
        let granted = callers[0].acquire("r1", 0).unwrap();
        assert_eq!(
            granted,
            Applied::Granted {
                lease: lease_view(1, 100),
                replaced: None
            }
        );
        assert_eq!(
            callers[1].acquire("r2", 50).unwrap(),
            Applied::Busy { holder_token: 1 }
        );
        let (deleted, answer) = apply(
            &mut callers[1],
            "r2",
            Request::Delete {
                older_than_ms: 25,
                limit: 5,
                token: 1,
            },
            60,
        )
        .unwrap();
        assert_eq!(answer, Answer::Rows(2));
        assert!(matches!(deleted, Applied::Deleted { rows: 2, .. }));
        let state = callers[0].state(60).unwrap();
        assert_eq!(state.rows_created_ms, vec![30]);
        assert_eq!(state.last_token, 1);
        assert_eq!(callers[0].revoke(60).unwrap(), Some(1));
        assert_eq!(callers[1].state(60).unwrap().live, None);
    }
}
