//! leasesim-stores: the systems' store ports on real databases.
//!
//! Every invariant leasesim proves holds against simulated services (the retention system's
//! lease authority and record store, ...). This crate holds the same services on databases a
//! user runs, written as the statements a user can copy: the schema and indexes, conditional
//! statements that carry the token check inside them, and affected-row counts read back.
//! `leasesim-conformance` compares each adapter with the simulated model, operation by
//! operation, and `leasesim-real` runs the production workers against them.
//!
//! Terminology:
//! - *store port*: one system's services as one connection sees them, with the time passed
//!   in (`now_ms`) so that a test decides every expiry ([`retention::RetentionConnection`]).
//! - *observed answer*: what a call did, as the simulation records it at its apply instant
//!   (the system's `Applied` value: granted which token, deleted how many rows against which
//!   current token), read inside the same transaction as the statement that did it.
//! - *model*: the simulated services themselves behind the same port ([`retention::Model`]).
//! - *adapter*: the port on one store kind, one module per store kind and one submodule per
//!   system: [`sqlite::retention`] always, `postgres::retention` with the feature
//!   `postgres`. A later system adds `sqlite::<system>` and `postgres::<system>` beside them
//!   (and the holder-lock system a `redis` module of its own).
//!
//! | module | what |
//! |---|---|
//! | [`retention`] | the retention store port, its setup and state, and the model behind it |
//! | [`sqlite`] | SQLite through `rusqlite` (bundled library, no server) |
//! | `postgres` | PostgreSQL through the `postgres` client (feature `postgres`) |
//! | [`reservations`] | the reservations store port (design 002), its setup and state, and the model behind it |
//! | [`holder_lock`] | the holder-lock claim store port, its setup and state, and the model behind it |
//! | `redis` | Redis through the `redis` crate: the holder-lock claim (feature `redis`) |
//! | [`work_items`] | the work-items item store port (design 001), its setup and state, and the model behind it |
//!
//! ## Adding a system's adapters
//!
//! A system that lands later adds, beside the retention ones: its port module here (the
//! port trait with `now_ms` passed in, its setup and state, and its model behind the port,
//! applied through the system's own apply function as [`retention::Model`] does), then
//! `sqlite::<system>` and `postgres::<system>` with their schema and statements as public
//! constants, a conformance module in `leasesim-conformance` and a real-run module in
//! `leasesim-real`. A store that runs lifetimes on its own clock (the holder-lock claim on
//! Redis, [`holder_lock`]'s `StoreClock::Own`) cannot take `now_ms`: its conformance compares
//! everything but expiry with time standing still (lifetimes far longer than a case), and
//! tests expiry apart, asserting only what margins make certain (alive well before the
//! lifetime ends, gone well after it).

use std::error::Error;
use std::fmt;

pub mod holder_lock;
pub mod reservations;
pub mod retention;
#[cfg(feature = "sqlite")]
pub mod sqlite;
pub mod work_items;

#[cfg(feature = "postgres")]
pub mod postgres;

#[cfg(feature = "redis")]
pub mod redis;

/// Why a store did not answer a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// The store refused the call and rolled it back: nothing was applied (a lock that was
    /// not granted in time, a constraint, a malformed statement).
    Refused(String),
    /// The call's outcome is unknown: the connection failed after the statement was sent,
    /// so it may or may not have been applied.
    Unknown(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Refused(why) => write!(f, "the store refused the call: {why}"),
            StoreError::Unknown(why) => write!(f, "the call's outcome is unknown: {why}"),
        }
    }
}

impl Error for StoreError {}

/// A time or count of the ports (`u64`) as a database integer (`i64`).
pub(crate) fn to_sql(value: u64) -> Result<i64, StoreError> {
    i64::try_from(value)
        .map_err(|_| StoreError::Refused(format!("{value} does not fit a 64-bit SQL integer")))
}

/// A database integer back as a time, count or token of the ports.
pub(crate) fn from_sql(value: i64) -> Result<u64, StoreError> {
    u64::try_from(value)
        .map_err(|_| StoreError::Refused(format!("the store holds a negative value {value}")))
}
