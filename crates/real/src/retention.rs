//! The retention system's store hook: its lease authority and record store on SQLite or
//! PostgreSQL in place of the simulated ones, in a real run on the shared world
//! ([`crate::world`]).
//!
//! Terminology:
//! - *store*: the lease table and the rows, created fresh at the run's start with exactly the
//!   rows the simulated record store starts with; each replica has a connection of its own.
//! - *model in step*: every call the store answers is applied to the world's simulated
//!   services too, at the same service time, so the drivers' backlog check reads the same
//!   rows and a store that answers differently from the model is reported
//!   ([`StoreTally::divergence`]).
//! - *short answer*: the simulation's `short_delete` fault, drawn as in a simulated run; the
//!   real delete is then asked for the rows the short answer leaves deleted.
//! - *revocation*: the authority's fault, mirrored on the store's lease table
//!   ([`Revoked`]).

use std::cell::RefCell;

use leasesim_events::ReplicaId;
use leasesim_retention::Retention;
use leasesim_retention::events::{Answer, Applied, Request};
use leasesim_retention::services::{Revoked, Services, held_back};
use leasesim_sim::{Apply, FaultProfile, Scenario, StoreFailure, StoreHook, World};
use leasesim_stores::retention::{RetentionConnection, Setup, StoreConfig, answer_of};

use crate::world::{Connections, Guard, RealHook, StoreTally, off_runtime, sql_only};
use crate::{RealError, StoreTarget};

/// A caller's connection to the store.
type Connection = Box<dyn RetentionConnection + Send>;

/// The retention store hook (see the module docs).
pub struct LeaseStoreHook {
    connections: Connections<dyn RetentionConnection + Send>,
    tally: RefCell<StoreTally>,
}

impl StoreHook<Retention> for LeaseStoreHook {
    fn apply(
        &self,
        world: &World<Retention>,
        replica: ReplicaId,
        request: Request,
    ) -> Result<(Applied, Answer), StoreFailure> {
        let now_ms = world.service_now_ms();
        let owner = world.replica(replica).owner_id().to_string();
        let (eligible, held) = short_answer(world, request, now_ms);
        let real = self.connections.call(replica.index(), |connection| {
            leasesim_stores::retention::apply(
                connection,
                &owner,
                shortened(request, eligible, held),
                now_ms,
            )
            .map(|(applied, _)| with_held_back(applied, held))
        });
        let model = || {
            let mut services = world.services();
            services.apply_at(&owner, request, now_ms, |_| held).0
        };
        let applied = self.tally.borrow_mut().shadow(&request, real, model)?;
        Ok((applied, answer_of(&applied)))
    }

    fn services_changed(&self, world: &World<Retention>, change: &dyn std::any::Any) {
        let Some(revoked) = change.downcast_ref::<Revoked>() else {
            return;
        };
        let real = self
            .connections
            .call(0, |connection| connection.revoke(revoked.now_ms));
        let _ = world;
        let mut tally = self.tally.borrow_mut();
        // A revocation the store did not make leaves the model's lease table ahead of it.
        if tally.shadow(revoked, real, || revoked.token).is_err() && tally.divergence.is_none() {
            tally.divergence = Some(format!("{revoked:?}: the store did not revoke the lease"));
        }
    }
}

/// An admitted delete's eligible rows and the rows its short answer holds back, drawn as a
/// simulated run draws them (`(0, 0)` for any other request).
fn short_answer(world: &World<Retention>, request: Request, now_ms: u64) -> (u32, u32) {
    let Request::Delete {
        older_than_ms,
        limit,
        token,
    } = request
    else {
        return (0, 0);
    };
    let eligible = {
        let services = world.services();
        let current = services.authority.current_token(now_ms);
        if !services.store.admits(token, current) {
            return (0, 0);
        }
        services.store.eligible(older_than_ms, limit, now_ms)
    };
    (eligible, held_back(world, eligible))
}

/// `request` asking for exactly the rows a short answer leaves deleted: the `eligible` rows
/// (at most the limit) but the `held` ones.
fn shortened(request: Request, eligible: u32, held: u32) -> Request {
    match request {
        Request::Delete {
            older_than_ms,
            limit,
            token,
        } if held > 0 => {
            // invariant: a short answer holds back some of the eligible rows, which are no
            // more than the limit.
            assert!(held <= eligible && eligible <= limit);
            Request::Delete {
                older_than_ms,
                limit: eligible - held,
                token,
            }
        }
        other => other,
    }
}

/// The store's answer to a shortened delete, saying how many rows the short answer held back.
fn with_held_back(applied: Applied, held: u32) -> Applied {
    match applied {
        Applied::Deleted {
            rows,
            token_current,
            current_token,
            newest_created_ms,
            held_back: _,
        } => Applied::Deleted {
            rows,
            token_current,
            current_token,
            newest_created_ms,
            held_back: held,
        },
        other => other,
    }
}

impl RealHook<Retention> for LeaseStoreHook {
    /// Renewals judged at the exact instant the interval passed, and stops at the instant of
    /// the event they waited for.
    const EXACT_INSTANT: &'static [&'static str] = &["renewal-due", "stop-prompt"];

    /// A fresh store at `target` holding the rows the simulated record store starts with.
    fn open(
        target: &StoreTarget,
        scenario: &Scenario<Retention>,
        profile: &FaultProfile<Retention>,
    ) -> Result<LeaseStoreHook, RealError> {
        let services: Services = Retention::services(scenario, profile);
        let settings = &scenario.settings;
        let setup = Setup {
            config: StoreConfig {
                ttl_ms: settings.lease.ttl_ms.get(),
                exact_token: settings.lease.exact_token,
                fencing: settings.store.fencing,
            },
            rows_created_ms: services.store.rows(),
        };
        let replicas = usize::from(scenario.replicas);
        let (connections, guard) = off_runtime(|| connect(target, &setup, replicas))?;
        Ok(LeaseStoreHook {
            connections: Connections::new(connections, guard),
            tally: RefCell::new(StoreTally::default()),
        })
    }

    fn tally(&self) -> StoreTally {
        self.tally.borrow().clone()
    }
}

/// A fresh store at `target` set up as `setup` says, and a connection per replica.
fn connect(
    target: &StoreTarget,
    setup: &Setup,
    replicas: usize,
) -> Result<(Vec<Connection>, Guard), RealError> {
    match target {
        StoreTarget::Sqlite { path } => {
            use leasesim_stores::sqlite::{self, retention as sql};
            crate::remove_sqlite(path);
            sql::create(
                &mut sqlite::open_file(path).map_err(RealError::Store)?,
                setup,
            )
            .map_err(RealError::Store)?;
            let connections = (0..replicas)
                .map(|_| {
                    let connection = sqlite::open_file(path).map_err(RealError::Store)?;
                    let adapter = sql::SqliteRetention::new(connection, setup.config.clone());
                    Ok(Box::new(adapter) as Connection)
                })
                .collect::<Result<_, RealError>>()?;
            Ok((connections, None))
        }
        #[cfg(feature = "postgres")]
        StoreTarget::Postgres { url, schema } => {
            use leasesim_stores::retention::RetentionStore;
            let mut store = leasesim_stores::postgres::retention::PgStore::connect(url, schema)
                .map_err(RealError::Store)?;
            let connections = store
                .open(setup, replicas)
                .map_err(RealError::Store)?
                .into_iter()
                .map(|connection| Box::new(connection) as Connection)
                .collect();
            Ok((connections, Some(Box::new(store))))
        }
        #[cfg(not(feature = "postgres"))]
        StoreTarget::Postgres { .. } => Err(crate::world::no_postgres_client()),
        StoreTarget::Redis { .. } => Err(sql_only("retention")),
    }
}
