//! leasesim-real: real runs, the simulated world on tokio in real time with a real store.
//!
//! A simulation proves invariants against models; a real run checks the same invariants on a
//! system's production worker core with its requests applied to a real database. It is the
//! simulated world itself: the scenario's fault plan, phases, stopper, pauser, clocks and
//! flights, on tokio in real time ([`world`]), with the system's *store hook* applying each
//! request to the real store where the simulated services were, and the simulation's checkers
//! judging the event stream.
//!
//! Terminology:
//! - *store hook*: one per system ([`retention`], [`work_items`], [`reservations`],
//!   [`holder_lock`]; the last needs the feature `redis` to open its store): it opens a fresh
//!   store holding what the simulated services start with, applies each request on the
//!   replica's own connection, makes the world's own changes to its services on the store too,
//!   and keeps the simulated model in step, reporting the first answer the store gives
//!   differently ([`world::StoreTally`]).
//! - *store target*: where the store is ([`StoreTarget`]): a SQLite file, a PostgreSQL schema
//!   of the run's own, a Redis key namespace of the run's own.
//! - *apply instant*: a store call blocks the run's one thread; the store judges it at the
//!   instant it started, and what it applied is recorded at that instant.
//!
//! Judging and the registry live in the library (`leasesim::real_world`, feature `real`);
//! `leasesim real` runs them.

pub mod holder_lock;
pub mod reservations;
pub mod retention;
pub mod work_items;
pub mod world;

use std::path::PathBuf;

use leasesim_stores::StoreError;

/// Where the store is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreTarget {
    /// A SQLite file (replaced by a fresh store).
    Sqlite { path: PathBuf },
    /// A PostgreSQL server, in a schema of the run's own (dropped first if it exists).
    Postgres { url: String, schema: String },
    /// A Redis server, in a key namespace of the run's own (`prefix`; its keys are deleted
    /// first). The client needs the feature `redis`.
    Redis { url: String, prefix: String },
}

impl StoreTarget {
    /// `sqlite`, `postgres` or `redis`.
    pub fn kind(&self) -> &'static str {
        match self {
            StoreTarget::Sqlite { .. } => "sqlite",
            StoreTarget::Postgres { .. } => "postgres",
            StoreTarget::Redis { .. } => "redis",
        }
    }
}

/// Why a real run could not run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RealError {
    /// The configuration cannot run (why).
    BadConfig(String),
    /// The store could not be set up.
    Store(StoreError),
}

impl std::fmt::Display for RealError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RealError::BadConfig(why) => write!(f, "{why}"),
            RealError::Store(error) => write!(f, "cannot set up the store: {error}"),
        }
    }
}

impl std::error::Error for RealError {}

/// Removes a SQLite store's files (the database, its write-ahead log and shared memory), so a
/// run starts from a fresh store; files that are not there are fine.
pub fn remove_sqlite(path: &std::path::Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut file = path.as_os_str().to_owned();
        file.push(suffix);
        let _ = std::fs::remove_file(file);
    }
}
