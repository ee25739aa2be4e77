//! The reservations system's store hook: its reservation store on SQLite or PostgreSQL in
//! place of the simulated one, in a real run on the shared world ([`crate::world`]).
//!
//! Terminology:
//! - *reservation store*: the holds the simulated store starts with for the run's scenario
//!   and profile (none: the agents place them), created fresh in the store at the run's
//!   start; each replica has a connection of its own, and the agents one more.
//! - *store timeout*: the scenario's `store_timeout` fault is drawn at every request as in a
//!   simulated run; a struck request reaches neither the store nor the model.
//! - *agents' changes*: the agents place and consume holds outside any request
//!   ([`StoreChange`]); the world tells the hook right after the model made the change, and
//!   the hook makes it on the agents' connection and compares the store's outcome (the id it
//!   gave, the deadline or status a consume found) with the model's.
//! - *model in step*: every request the store answers is applied to the world's simulated
//!   store too, at the same service time, so the drivers' metrics read the same counts and a
//!   store that answers differently from the model is reported ([`StoreTally::divergence`]).
//!   An agents' change the store fails is a divergence too: the model made it, and the world
//!   cannot take it back.

use std::cell::RefCell;

use leasesim_events::ReplicaId;
use leasesim_reservations::Reservations;
use leasesim_reservations::agents::StoreChange;
use leasesim_reservations::events::{Answer, Applied, Failure, Request, StatusView};
use leasesim_reservations::services::{answer_of, apply_at, store_timed_out};
use leasesim_sim::{Apply, FaultProfile, Scenario, StoreFailure, StoreHook, World};
use leasesim_stores::StoreError;
use leasesim_stores::reservations::{ReservationConnection, ReservationSetup};

use crate::world::{Connections, Guard, RealHook, StoreTally, off_runtime, sql_only};
use crate::{RealError, StoreTarget};

/// A caller's connection to the store.
type Connection = Box<dyn ReservationConnection + Send>;

/// The reservations store hook (see the module docs).
pub struct ReservationStoreHook {
    /// One per replica, then the agents'.
    connections: Connections<dyn ReservationConnection + Send>,
    tally: RefCell<StoreTally>,
}

impl StoreHook<Reservations> for ReservationStoreHook {
    fn apply(
        &self,
        world: &World<Reservations>,
        replica: ReplicaId,
        request: Request,
    ) -> Result<(Applied, Answer), StoreFailure> {
        if store_timed_out(world) {
            return Ok((Applied::StoreTimeout, Answer::Failed(Failure::StoreTimeout)));
        }
        let now_ms = world.service_now_ms();
        let real = self.connections.call(replica.index(), |connection| {
            connection.apply(request, now_ms)
        });
        let model = || apply_at(&mut world.services().store, request, now_ms);
        let applied = self.tally.borrow_mut().shadow(&request, real, model)?;
        Ok((applied, answer_of(&applied)))
    }

    /// Makes the agents' `change` (a [`StoreChange`]) on the store.
    fn services_changed(&self, world: &World<Reservations>, change: &dyn std::any::Any) {
        let _ = world;
        let change = change
            .downcast_ref::<StoreChange>()
            .expect("the reservations world changes its store by StoreChange alone");
        match *change {
            StoreChange::Placed {
                id,
                hold_until_ms,
                malformed,
            } => {
                let real = self
                    .connections
                    .call_last(|agents| agents.place(hold_until_ms, malformed));
                self.mirrored(change, real, id);
            }
            StoreChange::Consumed { id, outcome } => {
                let real = self.connections.call_last(|agents| agents.consume(id));
                self.mirrored(change, real, outcome);
            }
        }
    }
}

impl ReservationStoreHook {
    /// Tallies an agents' change the store made with outcome `real`, the model with `model`.
    fn mirrored<A: PartialEq + std::fmt::Debug>(
        &self,
        change: &StoreChange,
        real: Result<A, StoreError>,
        model: A,
    ) {
        let mut tally = self.tally.borrow_mut();
        if tally.shadow(change, real, || model).is_err() && tally.divergence.is_none() {
            let why = tally.last_error.clone().unwrap_or_default();
            tally.divergence = Some(format!(
                "{change:?}: the model made it, the store failed it ({why})"
            ));
        }
    }
}

impl RealHook<Reservations> for ReservationStoreHook {
    /// None: the store-side invariants judge the store's own history, and the pauses and
    /// backoffs the lengths the worker asked for, not the instants it woke at.
    const EXACT_INSTANT: &'static [&'static str] = &[];

    /// A fresh reservation store at `target` holding what the simulated store starts with for
    /// `profile`, with one connection per replica and one for the agents.
    fn open(
        target: &StoreTarget,
        scenario: &Scenario<Reservations>,
        profile: &FaultProfile<Reservations>,
    ) -> Result<ReservationStoreHook, RealError> {
        let setup = setup_of(scenario, profile);
        let callers = usize::from(scenario.replicas) + 1;
        let (connections, guard) = match target {
            StoreTarget::Sqlite { path } => (sqlite(path, &setup, callers)?, None),
            StoreTarget::Postgres { url, schema } => {
                off_runtime(|| postgres(url, schema, &setup, callers))?
            }
            StoreTarget::Redis { .. } => return Err(sql_only("reservations")),
        };
        Ok(ReservationStoreHook {
            connections: Connections::new(connections, guard),
            tally: RefCell::new(StoreTally::default()),
        })
    }

    fn tally(&self) -> StoreTally {
        self.tally.borrow().clone()
    }
}

/// The holds the simulated services start with for `scenario` and `profile`, in id order.
fn setup_of(
    scenario: &Scenario<Reservations>,
    profile: &FaultProfile<Reservations>,
) -> ReservationSetup {
    let store = Reservations::services(scenario, profile).store;
    let holds = (1..=u32::try_from(store.len()).expect("fewer than 2^32 holds"))
        .map(|id| {
            let row = store.row(id).expect("ids 1..=len exist");
            // invariant: a setup says deadlines and malformed records only, so the model's
            // starting holds are held, unclaimed and unparked.
            assert!(row.status == StatusView::Held && row.claim.is_none() && !row.parked);
            (row.hold_until_ms, row.malformed)
        })
        .collect();
    ReservationSetup { holds }
}

/// A fresh store in the SQLite file `path` (any file there is replaced).
fn sqlite(
    path: &std::path::Path,
    setup: &ReservationSetup,
    callers: usize,
) -> Result<Vec<Connection>, RealError> {
    use leasesim_stores::sqlite::{self, reservations as sql};
    crate::remove_sqlite(path);
    sql::create(
        &mut sqlite::open_file(path).map_err(RealError::Store)?,
        setup,
    )
    .map_err(RealError::Store)?;
    (0..callers)
        .map(|_| {
            let connection = sqlite::open_file(path).map_err(RealError::Store)?;
            let adapter = sql::SqliteReservations::new(connection, Default::default());
            Ok(Box::new(adapter) as Connection)
        })
        .collect()
}

#[cfg(feature = "postgres")]
fn postgres(
    url: &str,
    schema: &str,
    setup: &ReservationSetup,
    callers: usize,
) -> Result<(Vec<Connection>, Guard), RealError> {
    use leasesim_stores::postgres::reservations::PgReservationStore;
    use leasesim_stores::reservations::ReservationStore;
    let mut store = PgReservationStore::connect(url, schema).map_err(RealError::Store)?;
    let connections = store
        .open(setup, callers)
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
    _setup: &ReservationSetup,
    _callers: usize,
) -> Result<(Vec<Connection>, Guard), RealError> {
    Err(crate::world::no_postgres_client())
}
