//! SQLite adapters, through `rusqlite` with the bundled library (no server, no system
//! package): one submodule per system.
//!
//! Terminology:
//! - *store file*: a database file shared by the replicas of a real run, each with a
//!   connection of its own; WAL journal, and a busy timeout so that a writer waits for the
//!   write lock instead of failing at once.
//! - *memory store*: a private in-memory database shared by the connections of one
//!   conformance case (`cache=shared`), gone when its last connection closes.
//! - *named binding*: statements use named parameters (`:token`); an adapter binds each name
//!   the statement contains and skips the others, so a user can rewrite a statement (or a
//!   test can plant a bug in one) without touching the code that runs it.
//!
//! Every call runs in a `BEGIN IMMEDIATE` transaction: it takes SQLite's write lock first, so
//! the lease row read for the observed answer and the conditional statement see the same
//! store, and calls of all connections are applied one at a time, in the order they took
//! the lock.

pub mod reservations;
pub mod retention;
pub mod work_items;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rusqlite::types::ToSql;
use rusqlite::{Connection, OpenFlags, Statement};

use crate::StoreError;

/// How long a connection waits for SQLite's write lock before its call is refused.
pub const BUSY_TIMEOUT_MS: u64 = 5_000;

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> StoreError {
        // A failed statement or commit rolls its transaction back: nothing was applied.
        StoreError::Refused(format!("SQLite: {error}"))
    }
}

/// Opens a connection to the store file at `path` (created if missing): WAL journal, the
/// busy timeout, foreign keys on.
pub fn open_file(path: &Path) -> Result<Connection, StoreError> {
    let connection = Connection::open(path)?;
    configure(&connection)?;
    connection.pragma_update(None, "journal_mode", "WAL")?;
    Ok(connection)
}

/// Process-wide counter naming memory stores: every `open` gets a database of its own, also
/// when tests open stores on several threads at once.
static MEMORY_STORES: AtomicU64 = AtomicU64::new(0);

/// A fresh private in-memory database, and `connections` connections to it.
pub fn open_memory(connections: usize) -> Result<Vec<Connection>, StoreError> {
    let number = MEMORY_STORES.fetch_add(1, Ordering::Relaxed);
    let uri = format!(
        "file:leasesim-{}-{number}?mode=memory&cache=shared",
        std::process::id()
    );
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    (0..connections.max(1))
        .map(|_| {
            let connection = Connection::open_with_flags(&uri, flags)?;
            configure(&connection)?;
            Ok(connection)
        })
        .collect()
}

fn configure(connection: &Connection) -> Result<(), StoreError> {
    connection.busy_timeout(Duration::from_millis(BUSY_TIMEOUT_MS))?;
    connection.pragma_update(None, "foreign_keys", "ON")?;
    Ok(())
}

/// Binds every `(name, value)` whose name the statement contains (`:name`); other names are
/// skipped, so a rewritten statement still runs.
fn bind(statement: &mut Statement<'_>, values: &[(&str, &dyn ToSql)]) -> Result<(), StoreError> {
    statement.clear_bindings();
    for (name, value) in values {
        if let Some(index) = statement.parameter_index(name)? {
            statement.raw_bind_parameter(index, value)?;
        }
    }
    Ok(())
}

/// Runs a statement that returns rows and reads each with `read`.
fn query<T>(
    statement: &mut Statement<'_>,
    values: &[(&str, &dyn ToSql)],
    mut read: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>, StoreError> {
    bind(statement, values)?;
    let mut rows = statement.raw_query();
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(read(row)?);
    }
    Ok(out)
}

/// Runs a statement that returns no rows; answers how many rows it changed.
fn execute(
    statement: &mut Statement<'_>,
    values: &[(&str, &dyn ToSql)],
) -> Result<usize, StoreError> {
    bind(statement, values)?;
    Ok(statement.raw_execute()?)
}
