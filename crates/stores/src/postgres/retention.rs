//! The retention system's lease authority and record store on PostgreSQL.
//!
//! Terminology (as on SQLite, see `crate::sqlite::retention`):
//! - *lease row*: one row per lease name; `owner` set while a lease is held, `NULL` once
//!   released or revoked; `token` the last token handed out.
//! - *conditional statement*: the `UPDATE` or `DELETE` with every check in its `WHERE`
//!   clause; right on its own, also outside the adapter's transaction: copy these.
//! - *fence*: the delete's common table expression that finds the live lease with the
//!   delete's token and locks it `FOR SHARE`: a renewal, release or takeover waits until the
//!   delete commits, and a delete that waited for one re-checks the lease as it is then.
//! - *observation read*: the lease row locked and read first in the same transaction, only to
//!   tell the caller what the statement did.
//!
//! Deletes pick their rows `FOR UPDATE SKIP LOCKED`: rows another delete has locked are
//! skipped, so two deletes at once can each answer short, as the simulation's short-answer
//! fault does. One fenced holder deletes at a time, so a correct run never sees it.
//! The pick is a `MATERIALIZED` common table expression, run once: as a plain `IN`
//! subquery the planner may rescan it once per outer row (a nested-loop semi-join, chosen
//! when the statistics say the table is tiny), and each rescan skips the rows the statement
//! has already deleted and locks the next ones, so `LIMIT 1` deleted every row.

use std::sync::{Arc, Mutex, MutexGuard};

use postgres::Client;
use postgres::types::ToSql;

use super::Prepared;
use crate::retention::observe::{self, LeaseRow};
use crate::retention::{
    LEASE_NAME, RetentionConnection, RetentionState, RetentionStore, Setup, StoreConfig,
};
use crate::{StoreError, from_sql, to_sql};
use leasesim_retention::events::Applied;

/// The tables and the index (created in the store's schema).
pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS retention_lease (
    name          TEXT    PRIMARY KEY,
    owner         TEXT,               -- NULL: no lease held (never granted, released, revoked)
    token         BIGINT  NOT NULL,   -- the last token handed out; the held lease's token
    expires_at_ms BIGINT  NOT NULL,
    took_over     BOOLEAN NOT NULL    -- the last grant replaced a lease that had expired
);
CREATE TABLE IF NOT EXISTS retention_rows (
    id         BIGSERIAL PRIMARY KEY,
    created_ms BIGINT    NOT NULL
);
CREATE INDEX IF NOT EXISTS retention_rows_by_age ON retention_rows (created_ms, id);
";

/// Acquire. `$1` name, `$2` owner, `$3` now, `$4` ttl.
pub const ACQUIRE: &str = "
UPDATE retention_lease
   SET owner = $2, token = token + 1, expires_at_ms = $3::bigint + $4::bigint,
       took_over = (owner IS NOT NULL)
 WHERE name = $1 AND (owner IS NULL OR expires_at_ms <= $3::bigint)
RETURNING token, expires_at_ms, took_over";

/// Renew (owner mode). `$1` name, `$2` owner, `$3` now, `$4` ttl.
pub const RENEW_BY_OWNER: &str = "
UPDATE retention_lease
   SET token = token + 1, expires_at_ms = $3::bigint + $4::bigint
 WHERE name = $1 AND owner = $2 AND expires_at_ms > $3::bigint
RETURNING token, expires_at_ms";

/// Renew (exact-token mode). `$1` name, `$2` owner, `$3` now, `$4` ttl, `$5` token.
pub const RENEW_EXACT: &str = "
UPDATE retention_lease
   SET token = token + 1, expires_at_ms = $3::bigint + $4::bigint
 WHERE name = $1 AND owner = $2 AND expires_at_ms > $3::bigint AND token = $5
RETURNING token, expires_at_ms";

/// Release (compare-and-set). `$1` name, `$2` owner, `$3` now, `$4` token. It returns the
/// token it freed: no row means it freed nothing.
pub const RELEASE: &str = "
UPDATE retention_lease
   SET owner = NULL
 WHERE name = $1 AND owner = $2 AND expires_at_ms > $3::bigint AND token = $4
RETURNING token";

/// Delete, fenced. `$1` name, `$2` now, `$3` token, `$4` older than, `$5` limit.
pub const DELETE_FENCED: &str = "
WITH fence AS (
    SELECT 1 FROM retention_lease
     WHERE name = $1 AND owner IS NOT NULL AND token = $3 AND expires_at_ms > $2::bigint
       FOR SHARE),
picked AS MATERIALIZED (
    SELECT id FROM retention_rows
     WHERE created_ms < $4::bigint AND created_ms <= $2::bigint
     ORDER BY created_ms, id
     LIMIT $5
       FOR UPDATE SKIP LOCKED)
DELETE FROM retention_rows
 WHERE id IN (SELECT id FROM picked)
   AND EXISTS (SELECT 1 FROM fence)
RETURNING created_ms";

/// Delete without fencing (only to show why fencing is needed). `$1` name, `$2` now, `$3`
/// token (unused), `$4` older than, `$5` limit.
pub const DELETE_UNFENCED: &str = "
WITH picked AS MATERIALIZED (
    SELECT id FROM retention_rows
     WHERE created_ms < $4::bigint AND created_ms <= $2::bigint
     ORDER BY created_ms, id
     LIMIT $5
       FOR UPDATE SKIP LOCKED)
DELETE FROM retention_rows
 WHERE id IN (SELECT id FROM picked)
   AND $1::text IS NOT NULL AND $3::bigint IS NOT NULL
RETURNING created_ms";

/// Revoke (a fault). `$1` name, `$2` now.
pub const REVOKE: &str = "
UPDATE retention_lease
   SET owner = NULL
 WHERE name = $1 AND owner IS NOT NULL AND expires_at_ms > $2::bigint
RETURNING token";

/// The observation read of a lease call: the lease row, locked.
pub const READ_LEASE_FOR_UPDATE: &str =
    "SELECT owner, token, expires_at_ms FROM retention_lease WHERE name = $1 FOR UPDATE";

/// The observation read of a delete: the lease row, locked against changes.
pub const READ_LEASE_FOR_SHARE: &str =
    "SELECT owner, token, expires_at_ms FROM retention_lease WHERE name = $1 FOR SHARE";

const READ_ROWS: &str = "SELECT created_ms FROM retention_rows ORDER BY created_ms, id";

/// Creates the tables if needed and resets the store to `setup`.
pub fn create(client: &mut Client, setup: &Setup) -> Result<(), StoreError> {
    client.batch_execute(SCHEMA)?;
    reset(client, setup)
}

/// Resets the store (whose tables exist) to `setup`: the lease never granted, exactly
/// `setup`'s rows.
pub fn reset(client: &mut Client, setup: &Setup) -> Result<(), StoreError> {
    let mut created = setup
        .rows_created_ms
        .iter()
        .map(|&ms| to_sql(ms))
        .collect::<Result<Vec<i64>, _>>()?;
    created.sort_unstable();
    let mut transaction = client.transaction()?;
    transaction.execute("DELETE FROM retention_rows", &[])?;
    transaction.execute(
        "DELETE FROM retention_lease WHERE name = $1",
        &[&LEASE_NAME],
    )?;
    transaction.execute(
        "INSERT INTO retention_lease (name, owner, token, expires_at_ms, took_over) \
         VALUES ($1, NULL, 0, 0, false)",
        &[&LEASE_NAME],
    )?;
    transaction.execute(
        "INSERT INTO retention_rows (created_ms) SELECT unnest($1::bigint[])",
        &[&created],
    )?;
    transaction.commit()?;
    Ok(())
}

/// One connection to a retention store on PostgreSQL.
pub struct PgRetention {
    client: Arc<Mutex<Client>>,
    prepared: Prepared,
    config: StoreConfig,
}

impl std::fmt::Debug for PgRetention {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgRetention")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Which lock the observation read takes.
#[derive(Clone, Copy)]
enum Lock {
    Update,
    Share,
}

impl PgRetention {
    /// The reference statements on `client` (whose schema [`create`] made).
    pub fn new(client: Client, config: StoreConfig) -> PgRetention {
        PgRetention::shared(Arc::new(Mutex::new(client)), config)
    }

    fn shared(client: Arc<Mutex<Client>>, config: StoreConfig) -> PgRetention {
        PgRetention {
            client,
            prepared: Prepared::default(),
            config,
        }
    }

    fn client(&self) -> MutexGuard<'_, Client> {
        self.client
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs `text` with `params` in one transaction that first locks and reads the lease row;
    /// `observe` turns the lease row and the rows the statement returned into the answer.
    fn call<T>(
        &mut self,
        lock: Lock,
        text: &str,
        params: &[&(dyn ToSql + Sync)],
        observe: impl FnOnce(LeaseRow, Vec<postgres::Row>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let client_arc = self.client.clone();
        let mut client = client_arc.lock().unwrap_or_else(|p| p.into_inner());
        let read = match lock {
            Lock::Update => READ_LEASE_FOR_UPDATE,
            Lock::Share => READ_LEASE_FOR_SHARE,
        };
        let read = self.prepared.get(&mut client, read)?;
        let statement = self.prepared.get(&mut client, text)?;
        let mut transaction = client.transaction()?;
        let before = lease_row(transaction.query(&read, &[&LEASE_NAME])?)?;
        let rows = transaction.query(&statement, params)?;
        let out = observe(before, rows)?;
        transaction.commit()?;
        Ok(out)
    }
}

fn lease_row(rows: Vec<postgres::Row>) -> Result<LeaseRow, StoreError> {
    let Some(row) = rows.into_iter().next() else {
        return Err(StoreError::Refused(format!(
            "no lease row named {LEASE_NAME}: create the store first"
        )));
    };
    Ok(LeaseRow {
        owner: row.try_get(0)?,
        token: from_sql(row.try_get(1)?)?,
        expires_at_ms: from_sql(row.try_get(2)?)?,
    })
}

/// The `(token, expires_at_ms)` a statement returned, if any.
fn pair(rows: &[postgres::Row]) -> Result<Option<(u64, u64)>, StoreError> {
    rows.first()
        .map(|row| Ok((from_sql(row.try_get(0)?)?, from_sql(row.try_get(1)?)?)))
        .transpose()
}

impl RetentionConnection for PgRetention {
    fn acquire(&mut self, owner_id: &str, now_ms: u64) -> Result<Applied, StoreError> {
        let (now, ttl) = (to_sql(now_ms)?, to_sql(self.config.ttl_ms)?);
        let params: [&(dyn ToSql + Sync); 4] = [&LEASE_NAME, &owner_id, &now, &ttl];
        self.call(Lock::Update, ACQUIRE, &params, |before, rows| {
            let granted = rows
                .first()
                .map(|row| {
                    let (token, expires) = (from_sql(row.try_get(0)?)?, from_sql(row.try_get(1)?)?);
                    Ok::<_, StoreError>((token, expires, row.try_get::<_, bool>(2)?))
                })
                .transpose()?;
            Ok(observe::acquire(&before, granted, now_ms))
        })
    }

    fn renew(&mut self, owner_id: &str, token: u64, now_ms: u64) -> Result<Applied, StoreError> {
        let (now, ttl, shown) = (to_sql(now_ms)?, to_sql(self.config.ttl_ms)?, to_sql(token)?);
        let observe = |_, rows: Vec<postgres::Row>| Ok(observe::renew(pair(&rows)?));
        if self.config.exact_token {
            let params: [&(dyn ToSql + Sync); 5] = [&LEASE_NAME, &owner_id, &now, &ttl, &shown];
            self.call(Lock::Update, RENEW_EXACT, &params, observe)
        } else {
            let params: [&(dyn ToSql + Sync); 4] = [&LEASE_NAME, &owner_id, &now, &ttl];
            self.call(Lock::Update, RENEW_BY_OWNER, &params, observe)
        }
    }

    fn release(&mut self, owner_id: &str, token: u64, now_ms: u64) -> Result<Applied, StoreError> {
        let (now, shown) = (to_sql(now_ms)?, to_sql(token)?);
        let params: [&(dyn ToSql + Sync); 4] = [&LEASE_NAME, &owner_id, &now, &shown];
        self.call(Lock::Update, RELEASE, &params, |_, rows| {
            Ok(observe::release(rows.len()))
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
        let limit_rows = i64::from(limit);
        let fencing = self.config.fencing;
        let params: [&(dyn ToSql + Sync); 5] =
            [&LEASE_NAME, &now, &shown, &older_than, &limit_rows];
        let text = if fencing {
            DELETE_FENCED
        } else {
            DELETE_UNFENCED
        };
        self.call(Lock::Share, text, &params, |before, rows| {
            let deleted = rows
                .iter()
                .map(|row| from_sql(row.try_get(0)?))
                .collect::<Result<Vec<u64>, StoreError>>()?;
            Ok(observe::delete(&before, token, fencing, &deleted, now_ms))
        })
    }

    fn revoke(&mut self, now_ms: u64) -> Result<Option<u64>, StoreError> {
        let now = to_sql(now_ms)?;
        let params: [&(dyn ToSql + Sync); 2] = [&LEASE_NAME, &now];
        self.call(Lock::Update, REVOKE, &params, |_, rows| {
            rows.first()
                .map(|row| from_sql(row.try_get(0)?))
                .transpose()
        })
    }

    fn state(&mut self, now_ms: u64) -> Result<RetentionState, StoreError> {
        let mut client = self.client();
        let mut transaction = client.transaction()?;
        let lease = lease_row(transaction.query(READ_LEASE_FOR_SHARE, &[&LEASE_NAME])?)?;
        let rows = transaction
            .query(READ_ROWS, &[])?
            .iter()
            .map(|row| from_sql(row.try_get(0)?))
            .collect::<Result<Vec<u64>, StoreError>>()?;
        transaction.commit()?;
        Ok(RetentionState {
            live: lease.live(now_ms),
            last_token: lease.token,
            rows_created_ms: rows,
        })
    }
}

/// Opens fresh PostgreSQL stores in a schema of their own (dropped with this value), one per
/// conformance case, reusing its connections from case to case. Its connections commit
/// without waiting for the disk (`synchronous_commit = off`): what a case sees is the same,
/// and a case costs no fsync per call.
pub struct PgStore {
    url: String,
    schema: String,
    clients: Vec<Arc<Mutex<Client>>>,
}

impl PgStore {
    /// A store kind on the server at `url`, in the fresh schema `schema` (dropped first if it
    /// exists, and again when this value is dropped).
    pub fn connect(url: &str, schema: &str) -> Result<PgStore, StoreError> {
        let mut first = super::connect(url, schema)?;
        super::drop_schema(&mut first, schema)?;
        let mut first = fast_connection(url, schema)?;
        first.batch_execute(SCHEMA)?;
        Ok(PgStore {
            url: url.to_string(),
            schema: schema.to_string(),
            clients: vec![Arc::new(Mutex::new(first))],
        })
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        if let Some(client) = self.clients.first() {
            let mut client = client.lock().unwrap_or_else(|p| p.into_inner());
            let _ = super::drop_schema(&mut client, &self.schema);
        }
    }
}

impl RetentionStore for PgStore {
    type Connection = PgRetention;

    fn open(&mut self, setup: &Setup, callers: usize) -> Result<Vec<PgRetention>, StoreError> {
        while self.clients.len() < callers.max(1) {
            let client = fast_connection(&self.url, &self.schema)?;
            self.clients.push(Arc::new(Mutex::new(client)));
        }
        {
            let mut first = self.clients[0].lock().unwrap_or_else(|p| p.into_inner());
            reset(&mut first, setup)?;
        }
        Ok(self.clients[..callers.max(1)]
            .iter()
            .map(|client| PgRetention::shared(client.clone(), setup.config.clone()))
            .collect())
    }
}

/// A connection of a test store: in `schema`, committing without waiting for the disk.
fn fast_connection(url: &str, schema: &str) -> Result<Client, StoreError> {
    let mut client = super::connect(url, schema)?;
    client.batch_execute("SET synchronous_commit = off")?;
    Ok(client)
}
