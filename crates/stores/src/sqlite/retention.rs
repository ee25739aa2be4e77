//! The retention system's lease authority and record store on SQLite.
//!
//! Terminology:
//! - *lease row*: one row per lease name in `retention_lease`. `owner` is set while a lease
//!   is held (live until `expires_at_ms`) and `NULL` once it is released or revoked; `token`
//!   is the last token handed out, so tokens never repeat, even across releases.
//! - *conditional statement*: the `UPDATE` or `DELETE` that does the work, with every check
//!   (owner, token, expiry) in its `WHERE` clause, so it is right on its own: copy these.
//! - *observation read*: the lease row read in the same transaction before the statement,
//!   only to tell the caller what the statement did (which token was current, who holds the
//!   lease); it never decides whether the statement applies.
//!
//! Times (`:now`, `expires_at_ms`, `created_ms`) are milliseconds on the caller's clock; a
//! lease is live while `:now < expires_at_ms`.

use rusqlite::{Connection, TransactionBehavior};

use super::{execute, query};
use crate::retention::observe::{self, LeaseRow};
use crate::retention::{
    LEASE_NAME, RetentionConnection, RetentionState, RetentionStore, Setup, StoreConfig,
};
use crate::{StoreError, from_sql, to_sql};
use leasesim_retention::events::Applied;

/// The tables and the index: one lease row per name, and the rows subject to retention
/// (the index serves the oldest-first scan of a delete).
pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS retention_lease (
    name          TEXT    PRIMARY KEY,
    owner         TEXT,                -- NULL: no lease held (never granted, released, revoked)
    token         INTEGER NOT NULL,    -- the last token handed out; the held lease's token
    expires_at_ms INTEGER NOT NULL,
    took_over     INTEGER NOT NULL     -- 1: the last grant replaced a lease that had expired
);
CREATE TABLE IF NOT EXISTS retention_rows (
    id         INTEGER PRIMARY KEY,
    created_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS retention_rows_by_age ON retention_rows (created_ms, id);
";

/// Acquire: grants the lease when none is live, with the next token. Matches no row while a
/// live lease is held.
pub const ACQUIRE: &str = "
UPDATE retention_lease
   SET owner = :owner, token = token + 1, expires_at_ms = :now + :ttl,
       took_over = (owner IS NOT NULL)
 WHERE name = :name AND (owner IS NULL OR expires_at_ms <= :now)
RETURNING token, expires_at_ms, took_over";

/// Renew (owner mode): the owner of the live lease gets the next token, whatever it shows.
pub const RENEW_BY_OWNER: &str = "
UPDATE retention_lease
   SET token = token + 1, expires_at_ms = :now + :ttl
 WHERE name = :name AND owner = :owner AND expires_at_ms > :now
RETURNING token, expires_at_ms";

/// Renew (exact-token mode): also demands the current token.
pub const RENEW_EXACT: &str = "
UPDATE retention_lease
   SET token = token + 1, expires_at_ms = :now + :ttl
 WHERE name = :name AND owner = :owner AND token = :token AND expires_at_ms > :now
RETURNING token, expires_at_ms";

/// Release: compare-and-set on owner and token; frees only the live lease it names.
pub const RELEASE: &str = "
UPDATE retention_lease
   SET owner = NULL
 WHERE name = :name AND owner = :owner AND token = :token AND expires_at_ms > :now";

/// Delete, fenced: the oldest eligible rows, only while `:token` is the live lease's token.
/// The token check is inside the statement; the rows it returns are what it deleted.
pub const DELETE_FENCED: &str = "
DELETE FROM retention_rows
 WHERE id IN (SELECT id FROM retention_rows
               WHERE created_ms < :older_than AND created_ms <= :now
               ORDER BY created_ms, id
               LIMIT :limit)
   AND EXISTS (SELECT 1 FROM retention_lease
                WHERE name = :name AND owner IS NOT NULL AND token = :token
                  AND expires_at_ms > :now)
RETURNING created_ms";

/// Delete without fencing (only to show why fencing is needed).
pub const DELETE_UNFENCED: &str = "
DELETE FROM retention_rows
 WHERE id IN (SELECT id FROM retention_rows
               WHERE created_ms < :older_than AND created_ms <= :now
               ORDER BY created_ms, id
               LIMIT :limit)
RETURNING created_ms";

/// Revoke (a fault): drops the live lease.
pub const REVOKE: &str = "
UPDATE retention_lease
   SET owner = NULL
 WHERE name = :name AND owner IS NOT NULL AND expires_at_ms > :now
RETURNING token";

/// The observation read: the lease row.
pub const READ_LEASE: &str =
    "SELECT owner, token, expires_at_ms FROM retention_lease WHERE name = :name";

/// The rows not deleted, oldest first.
const READ_ROWS: &str = "SELECT created_ms FROM retention_rows ORDER BY created_ms, id";

/// The statements an adapter runs: the reference ones by default; a user (or a test planting
/// a bug) may replace any of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statements {
    pub acquire: String,
    pub renew_by_owner: String,
    pub renew_exact: String,
    pub release: String,
    pub delete_fenced: String,
    pub delete_unfenced: String,
    pub revoke: String,
    pub read_lease: String,
}

impl Default for Statements {
    fn default() -> Statements {
        Statements {
            acquire: ACQUIRE.into(),
            renew_by_owner: RENEW_BY_OWNER.into(),
            renew_exact: RENEW_EXACT.into(),
            release: RELEASE.into(),
            delete_fenced: DELETE_FENCED.into(),
            delete_unfenced: DELETE_UNFENCED.into(),
            revoke: REVOKE.into(),
            read_lease: READ_LEASE.into(),
        }
    }
}

/// Creates the schema if needed and resets the store to `setup`: the lease row never granted
/// (token 0), exactly `setup`'s rows.
pub fn create(connection: &mut Connection, setup: &Setup) -> Result<(), StoreError> {
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    transaction.execute_batch(SCHEMA)?;
    transaction.execute("DELETE FROM retention_rows", [])?;
    transaction.execute("DELETE FROM retention_lease WHERE name = ?1", [LEASE_NAME])?;
    transaction.execute(
        "INSERT INTO retention_lease (name, owner, token, expires_at_ms, took_over) \
         VALUES (?1, NULL, 0, 0, 0)",
        [LEASE_NAME],
    )?;
    {
        let mut insert =
            transaction.prepare("INSERT INTO retention_rows (created_ms) VALUES (?1)")?;
        let mut created = setup.rows_created_ms.clone();
        created.sort_unstable();
        for created_ms in created {
            insert.execute([to_sql(created_ms)?])?;
        }
    }
    transaction.commit()?;
    Ok(())
}

/// One connection to a retention store on SQLite.
#[derive(Debug)]
pub struct SqliteRetention {
    connection: Connection,
    config: StoreConfig,
    sql: Statements,
}

impl SqliteRetention {
    /// The reference statements on `connection` (whose schema [`create`] made).
    pub fn new(connection: Connection, config: StoreConfig) -> SqliteRetention {
        SqliteRetention::with_statements(connection, config, Statements::default())
    }

    /// Other statements on `connection`.
    pub fn with_statements(
        connection: Connection,
        config: StoreConfig,
        sql: Statements,
    ) -> SqliteRetention {
        SqliteRetention {
            connection,
            config,
            sql,
        }
    }

    /// Runs `work` in one `BEGIN IMMEDIATE` transaction, with the lease row read first.
    fn in_transaction<T>(
        &mut self,
        work: impl FnOnce(&rusqlite::Transaction<'_>, &Statements, LeaseRow) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let transaction = self
            .connection
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let before = read_lease(&transaction, &self.sql)?;
        let out = work(&transaction, &self.sql, before)?;
        transaction.commit()?;
        Ok(out)
    }
}

fn read_lease(connection: &Connection, sql: &Statements) -> Result<LeaseRow, StoreError> {
    let mut statement = connection.prepare_cached(&sql.read_lease)?;
    let rows = query(&mut statement, &[(":name", &LEASE_NAME)], |row| {
        Ok((
            row.get::<_, Option<String>>(0)?,
            row.get::<_, i64>(1)?,
            row.get::<_, i64>(2)?,
        ))
    })?;
    let Some((owner, token, expires_at_ms)) = rows.into_iter().next() else {
        return Err(StoreError::Refused(format!(
            "no lease row named {LEASE_NAME}: create the store first"
        )));
    };
    Ok(LeaseRow {
        owner,
        token: from_sql(token)?,
        expires_at_ms: from_sql(expires_at_ms)?,
    })
}

/// Reads `(token, expires_at_ms)` pairs a statement returned.
fn read_pair(row: &rusqlite::Row<'_>) -> rusqlite::Result<(i64, i64)> {
    Ok((row.get(0)?, row.get(1)?))
}

fn pair_of(pairs: Vec<(i64, i64)>) -> Result<Option<(u64, u64)>, StoreError> {
    pairs
        .into_iter()
        .next()
        .map(|(token, expires)| Ok((from_sql(token)?, from_sql(expires)?)))
        .transpose()
}

impl RetentionConnection for SqliteRetention {
    fn acquire(&mut self, owner_id: &str, now_ms: u64) -> Result<Applied, StoreError> {
        let (now, ttl) = (to_sql(now_ms)?, to_sql(self.config.ttl_ms)?);
        self.in_transaction(|transaction, sql, before| {
            let mut statement = transaction.prepare_cached(&sql.acquire)?;
            let values: [(&str, &dyn rusqlite::ToSql); 4] = [
                (":name", &LEASE_NAME),
                (":owner", &owner_id),
                (":now", &now),
                (":ttl", &ttl),
            ];
            let granted = query(&mut statement, &values, |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, i64>(1)?,
                    row.get::<_, bool>(2)?,
                ))
            })?;
            let granted = granted
                .into_iter()
                .next()
                .map(|(token, expires, took_over)| {
                    Ok::<_, StoreError>((from_sql(token)?, from_sql(expires)?, took_over))
                })
                .transpose()?;
            Ok(observe::acquire(&before, granted, now_ms))
        })
    }

    fn renew(&mut self, owner_id: &str, token: u64, now_ms: u64) -> Result<Applied, StoreError> {
        let (now, ttl, shown) = (to_sql(now_ms)?, to_sql(self.config.ttl_ms)?, to_sql(token)?);
        let exact = self.config.exact_token;
        self.in_transaction(|transaction, sql, _| {
            let text = if exact {
                &sql.renew_exact
            } else {
                &sql.renew_by_owner
            };
            let mut statement = transaction.prepare_cached(text)?;
            let values: [(&str, &dyn rusqlite::ToSql); 5] = [
                (":name", &LEASE_NAME),
                (":owner", &owner_id),
                (":token", &shown),
                (":now", &now),
                (":ttl", &ttl),
            ];
            let renewed = pair_of(query(&mut statement, &values, read_pair)?)?;
            Ok(observe::renew(renewed))
        })
    }

    fn release(&mut self, owner_id: &str, token: u64, now_ms: u64) -> Result<Applied, StoreError> {
        let (now, shown) = (to_sql(now_ms)?, to_sql(token)?);
        self.in_transaction(|transaction, sql, _| {
            let mut statement = transaction.prepare_cached(&sql.release)?;
            let values: [(&str, &dyn rusqlite::ToSql); 4] = [
                (":name", &LEASE_NAME),
                (":owner", &owner_id),
                (":token", &shown),
                (":now", &now),
            ];
            Ok(observe::release(execute(&mut statement, &values)?))
        })
    }

    fn delete_batch(
        &mut self,
        older_than_ms: u64,
        limit: u32,
        token: u64,
        now_ms: u64,
    ) -> Result<Applied, StoreError> {
        let (now, shown, older_than) = (to_sql(now_ms)?, to_sql(token)?, to_sql(older_than_ms)?);
        let fencing = self.config.fencing;
        self.in_transaction(|transaction, sql, before| {
            let text = if fencing {
                &sql.delete_fenced
            } else {
                &sql.delete_unfenced
            };
            let mut statement = transaction.prepare_cached(text)?;
            let values: [(&str, &dyn rusqlite::ToSql); 5] = [
                (":name", &LEASE_NAME),
                (":token", &shown),
                (":now", &now),
                (":older_than", &older_than),
                (":limit", &limit),
            ];
            let deleted = query(&mut statement, &values, |row| row.get::<_, i64>(0))?;
            let deleted: Vec<u64> = deleted
                .into_iter()
                .map(from_sql)
                .collect::<Result<_, _>>()?;
            Ok(observe::delete(&before, token, fencing, &deleted, now_ms))
        })
    }

    fn revoke(&mut self, now_ms: u64) -> Result<Option<u64>, StoreError> {
        let now = to_sql(now_ms)?;
        self.in_transaction(|transaction, sql, _| {
            let mut statement = transaction.prepare_cached(&sql.revoke)?;
            let values: [(&str, &dyn rusqlite::ToSql); 2] =
                [(":name", &LEASE_NAME), (":now", &now)];
            let revoked = query(&mut statement, &values, |row| row.get::<_, i64>(0))?;
            revoked.into_iter().next().map(from_sql).transpose()
        })
    }

    fn state(&mut self, now_ms: u64) -> Result<RetentionState, StoreError> {
        self.in_transaction(|transaction, _, lease| {
            let rows = transaction
                .prepare_cached(READ_ROWS)?
                .query_map([], |row| row.get::<_, i64>(0))?
                .map(|created| from_sql(created?))
                .collect::<Result<Vec<u64>, StoreError>>()?;
            Ok(RetentionState {
                live: lease.live(now_ms),
                last_token: lease.token,
                rows_created_ms: rows,
            })
        })
    }
}

/// Opens fresh SQLite stores in memory, one per conformance case.
#[derive(Clone, Debug, Default)]
pub struct SqliteStore {
    /// The statements every connection runs.
    pub statements: Statements,
}

impl RetentionStore for SqliteStore {
    type Connection = SqliteRetention;

    fn open(&mut self, setup: &Setup, callers: usize) -> Result<Vec<SqliteRetention>, StoreError> {
        let mut connections = super::open_memory(callers)?;
        create(&mut connections[0], setup)?;
        Ok(connections
            .into_iter()
            .map(|connection| {
                SqliteRetention::with_statements(
                    connection,
                    setup.config.clone(),
                    self.statements.clone(),
                )
            })
            .collect())
    }
}
