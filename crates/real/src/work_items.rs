//! The work-items system's store hook: its item store on SQLite or PostgreSQL in place of the
//! simulated one, in a real run on the shared world ([`crate::world`]).
//!
//! Terminology:
//! - *item store*: the run's items as its profile drew them (sizes, fencing), created fresh
//!   in the store at the run's start; each replica has a connection of its own.
//! - *provider*: the external provider stays simulated (it is not the store under test): its
//!   requests are applied to the world's model as in a simulated run.
//! - *model in step*: every call the store answers is applied to the world's simulated item
//!   store too, at the same service time, so the drivers' end-of-run tally reads the same
//!   counts and a store that answers differently from the model is reported
//!   ([`StoreTally::divergence`]).

use std::cell::RefCell;

use leasesim_events::ReplicaId;
use leasesim_sim::{Apply, FaultProfile, Scenario, StoreFailure, StoreHook, World};
use leasesim_stores::work_items::{ItemSetup, WorkItemConnection};
use leasesim_work_items::WorkItems;
use leasesim_work_items::events::{Answer, Applied, Request};
use leasesim_work_items::services::{answer_of, apply_at};

use crate::world::{Connections, Guard, RealHook, StoreTally, off_runtime, sql_only};
use crate::{RealError, StoreTarget};

/// A caller's connection to the store.
type Connection = Box<dyn WorkItemConnection + Send>;

/// The work-items store hook (see the module docs).
pub struct ItemStoreHook {
    connections: Connections<dyn WorkItemConnection + Send>,
    tally: RefCell<StoreTally>,
}

impl StoreHook<WorkItems> for ItemStoreHook {
    fn apply(
        &self,
        world: &World<WorkItems>,
        replica: ReplicaId,
        request: Request,
    ) -> Result<(Applied, Answer), StoreFailure> {
        if matches!(
            request,
            Request::ProviderApply { .. } | Request::Lookup { .. }
        ) {
            return Ok(WorkItems::apply(world, replica, request));
        }
        let now_ms = world.service_now_ms();
        let real = self.connections.call(replica.index(), |connection| {
            connection.apply(replica, request, now_ms)
        });
        let model = || {
            apply_at(&mut world.services().store, replica, request, now_ms)
                .expect("a store request applies to the model's store")
        };
        let applied = self.tally.borrow_mut().shadow(&request, real, model)?;
        Ok((applied, answer_of(&applied)))
    }
}

impl RealHook<WorkItems> for ItemStoreHook {
    /// A fresh item store at `target` holding the items `profile` drew, with one connection
    /// per replica.
    fn open(
        target: &StoreTarget,
        scenario: &Scenario<WorkItems>,
        profile: &FaultProfile<WorkItems>,
    ) -> Result<ItemStoreHook, RealError> {
        let replicas = usize::from(scenario.replicas);
        let setup = ItemSetup {
            sizes: profile.system.sizes.clone(),
            fencing: profile.system.fencing,
        };
        let (connections, guard) = match target {
            StoreTarget::Sqlite { path } => (sqlite(path, &setup, replicas)?, None),
            StoreTarget::Postgres { url, schema } => {
                off_runtime(|| postgres(url, schema, &setup, replicas))?
            }
            StoreTarget::Redis { .. } => return Err(sql_only("work-items")),
        };
        Ok(ItemStoreHook {
            connections: Connections::new(connections, guard),
            tally: RefCell::new(StoreTally::default()),
        })
    }

    fn tally(&self) -> StoreTally {
        self.tally.borrow().clone()
    }
}

/// A fresh store in the SQLite file `path` (any file there is replaced).
fn sqlite(
    path: &std::path::Path,
    setup: &ItemSetup,
    replicas: usize,
) -> Result<Vec<Connection>, RealError> {
    use leasesim_stores::sqlite::{self, work_items as sql};
    crate::remove_sqlite(path);
    sql::create(
        &mut sqlite::open_file(path).map_err(RealError::Store)?,
        setup,
    )
    .map_err(RealError::Store)?;
    (0..replicas)
        .map(|_| {
            let connection = sqlite::open_file(path).map_err(RealError::Store)?;
            let adapter = sql::SqliteWorkItems::new(connection, setup.fencing, Default::default());
            Ok(Box::new(adapter) as Connection)
        })
        .collect()
}

#[cfg(feature = "postgres")]
fn postgres(
    url: &str,
    schema: &str,
    setup: &ItemSetup,
    replicas: usize,
) -> Result<(Vec<Connection>, Guard), RealError> {
    use leasesim_stores::postgres::work_items::PgWorkItemStore;
    use leasesim_stores::work_items::WorkItemStore;
    let mut store = PgWorkItemStore::connect(url, schema).map_err(RealError::Store)?;
    let connections = store
        .open(setup, replicas)
        .map_err(RealError::Store)?
        .into_iter()
        .map(|connection| Box::new(connection) as Connection)
        .collect();
    Ok((connections, Some(Box::new(store))))
}

#[cfg(not(feature = "postgres"))]
fn postgres(
    _url: &str,
    _schema: &str,
    _setup: &ItemSetup,
    _replicas: usize,
) -> Result<(Vec<Connection>, Guard), RealError> {
    Err(crate::world::no_postgres_client())
}
