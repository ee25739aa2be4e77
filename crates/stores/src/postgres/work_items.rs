//! The work-items system's item store on PostgreSQL (design 001).
//!
//! Terminology as on SQLite (see `crate::sqlite::work_items`), but tokens come from a
//! sequence (`work_item_tokens`, owned by `work_items.token`): a claim's `nextval` is taken
//! only for the row it grants, so concurrent claims of different items never share a token
//! and never wait on one counter row, and a refused claim takes none.
//!
//! Every call runs in one `READ COMMITTED` transaction that first locks the item row (`FOR
//! UPDATE`) for the observation read, so the read and the conditional statement see the same
//! claim and no takeover commits between a write's token check and its commit. The fenced
//! insert of a chunk also takes `FOR SHARE` on the item row itself, so it is right on its own.
//! Times are the caller's (`$now`), as the port passes them; a deployment that trusts the
//! server's clock writes `(extract(epoch from clock_timestamp()) * 1000)::bigint` there.

use std::sync::{Arc, Mutex};

use postgres::types::ToSql;
use postgres::{Client, Row, Transaction};

use super::Prepared;
use crate::work_items::observe::{self, Granted};
use crate::work_items::{
    Applied, ItemRow, ItemSetup, ItemsState, Mark, ReplicaId, Request, StatusView,
    WorkItemConnection, WorkItemStore, check_sizes, error_name, error_of, no_such_item,
    not_a_store_request, state_of,
};
use crate::{StoreError, from_sql, to_sql};

/// The tables, the index a search for claimable items walks, and the token sequence.
pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS work_items (
    id            BIGINT PRIMARY KEY,         -- the item's number, from 0
    state         TEXT   NOT NULL DEFAULT 'pending'
                  CHECK (state IN ('pending', 'claimed', 'released', 'done', 'failed')),
    owner         TEXT,                       -- the last claimant
    token         BIGINT NOT NULL DEFAULT 0,  -- the last claim's token (0: never claimed)
    expires_at_ms BIGINT NOT NULL DEFAULT 0,  -- the last claim's expiry
    attempts      BIGINT NOT NULL DEFAULT 0,  -- claims granted
    last_error    TEXT,
    marked_by     BIGINT NOT NULL DEFAULT 0,  -- the claim that wrote the end mark
    chunks        BIGINT NOT NULL CHECK (chunks >= 1)
);
CREATE INDEX IF NOT EXISTS work_items_open ON work_items (id)
    WHERE state IN ('pending', 'released', 'claimed');
CREATE TABLE IF NOT EXISTS work_item_chunks (
    item  BIGINT NOT NULL REFERENCES work_items (id),
    chunk BIGINT NOT NULL,
    token BIGINT NOT NULL,                    -- the claim that applied it
    PRIMARY KEY (item, chunk)
);
CREATE SEQUENCE IF NOT EXISTS work_item_tokens OWNED BY work_items.token;
";

/// The first claimable item after `$2` (-1: from the first), wrapping round. `$1` now.
pub const FIND: &str = "
SELECT id FROM work_items
 WHERE state IN ('pending', 'released') OR (state = 'claimed' AND expires_at_ms <= $1)
 ORDER BY id <= $2, id
 LIMIT 1";

/// The conditional claim, with the next token. `$1` item, `$2` owner, `$3` now, `$4` lease
/// (ms).
pub const CLAIM: &str = "
UPDATE work_items
   SET state = 'claimed', owner = $2, attempts = attempts + 1,
       token = nextval('work_item_tokens'), expires_at_ms = $3::bigint + $4::bigint
 WHERE id = $1
   AND (state IN ('pending', 'released') OR (state = 'claimed' AND expires_at_ms <= $3))
RETURNING token, expires_at_ms, attempts, chunks";

/// Renewal of the live claim `$2` only. `$1` item, `$3` now, `$4` lease (ms).
pub const RENEW: &str = "
UPDATE work_items SET expires_at_ms = $3::bigint + $4::bigint
 WHERE id = $1 AND state = 'claimed' AND token = $2 AND expires_at_ms > $3
RETURNING expires_at_ms";

/// A chunk of the local effect, fenced, recorded once. `$1` item, `$2` chunk, `$3` token,
/// `$4` now.
pub const APPLY: &str = "
INSERT INTO work_item_chunks (item, chunk, token)
SELECT $1::bigint, $2::bigint, $3::bigint
 WHERE EXISTS (SELECT 1 FROM work_items
                WHERE id = $1 AND state = 'claimed' AND token = $3 AND expires_at_ms > $4
                  FOR SHARE)
ON CONFLICT (item, chunk) DO NOTHING";

/// Done, fenced. `$1` item, `$2` token, `$3` now.
pub const DONE: &str = "
UPDATE work_items SET state = 'done', marked_by = $2
 WHERE id = $1 AND state = 'claimed' AND token = $2 AND expires_at_ms > $3";

/// Release, fenced, with the last error. `$1` item, `$2` token, `$3` now, `$4` error.
pub const RELEASE: &str = "
UPDATE work_items SET state = 'released', marked_by = $2, last_error = $4
 WHERE id = $1 AND state = 'claimed' AND token = $2 AND expires_at_ms > $3";

/// Fail, fenced, with the last error. `$1` item, `$2` token, `$3` now, `$4` error.
pub const FAIL: &str = "
UPDATE work_items SET state = 'failed', marked_by = $2, last_error = $4
 WHERE id = $1 AND state = 'claimed' AND token = $2 AND expires_at_ms > $3";

/// The run's count of open, done and failed items.
pub const STATUS: &str = "
SELECT count(*) FILTER (WHERE state NOT IN ('done', 'failed')),
       count(*) FILTER (WHERE state = 'done'),
       count(*) FILTER (WHERE state = 'failed')
  FROM work_items";

/// Primitives only defective workers use, and a store without fencing: no condition.
pub const PLAIN_CLAIM: &str = "
UPDATE work_items
   SET state = 'claimed', owner = $2, attempts = attempts + 1,
       token = nextval('work_item_tokens'), expires_at_ms = $3::bigint + $4::bigint
 WHERE id = $1
RETURNING token, expires_at_ms, attempts, chunks";
pub const APPLY_UNFENCED: &str = "
INSERT INTO work_item_chunks (item, chunk, token) VALUES ($1, $2, $3)
ON CONFLICT (item, chunk) DO NOTHING";
pub const DONE_UNFENCED: &str =
    "UPDATE work_items SET state = 'done', marked_by = $2 WHERE id = $1";

/// The observation read (locks the row), and the whole store.
pub const READ_ITEM_FOR_UPDATE: &str = "
SELECT id, state, owner, token, expires_at_ms, attempts, last_error, marked_by, chunks
  FROM work_items WHERE id = $1 FOR UPDATE";
const READ_ALL: &str = "
SELECT id, state, owner, token, expires_at_ms, attempts, last_error, marked_by, chunks
  FROM work_items ORDER BY id";
const READ_CHUNKS: &str = "SELECT item, chunk FROM work_item_chunks ORDER BY item, chunk";

/// Resets the store (whose tables exist) to `setup`'s items; the token sequence starts over
/// (its next token is 1).
pub fn reset(client: &mut Client, setup: &ItemSetup) -> Result<(), StoreError> {
    check_sizes(&setup.sizes)?;
    let mut transaction = client.transaction()?;
    // DELETE, not TRUNCATE: on a handful of rows it costs a fraction of TRUNCATE's file work.
    transaction.batch_execute(
        "DELETE FROM work_item_chunks; DELETE FROM work_items;
         SELECT setval('work_item_tokens', 1, false);",
    )?;
    let insert = transaction.prepare("INSERT INTO work_items (id, chunks) VALUES ($1, $2)")?;
    for (item, &chunks) in setup.sizes.iter().enumerate() {
        transaction.execute(&insert, &[&to_sql(item as u64)?, &i64::from(chunks)])?;
    }
    transaction.commit()?;
    Ok(())
}

fn small(value: i64, what: &str) -> Result<u32, StoreError> {
    u32::try_from(value).map_err(|_| StoreError::Refused(format!("{what} {value} out of range")))
}

fn item_of(row: &Row) -> Result<ItemRow, StoreError> {
    let last_error: Option<String> = row.try_get(6)?;
    Ok(ItemRow {
        item: small(row.try_get(0)?, "item")?,
        state: state_of(row.try_get(1)?)?,
        owner: row.try_get(2)?,
        token: from_sql(row.try_get(3)?)?,
        expires_at_ms: from_sql(row.try_get(4)?)?,
        attempts: small(row.try_get(5)?, "attempts")?,
        last_error: last_error.as_deref().map(error_of).transpose()?,
        marked_by: from_sql(row.try_get(7)?)?,
        chunks: small(row.try_get(8)?, "chunks")?,
    })
}

/// A client and its prepared statements, shared by the connections made on it.
struct Shared {
    client: Client,
    prepared: Prepared,
}

/// One connection to an item store on PostgreSQL.
pub struct PgWorkItems {
    shared: Arc<Mutex<Shared>>,
    fencing: bool,
}

impl std::fmt::Debug for PgWorkItems {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgWorkItems")
            .field("fencing", &self.fencing)
            .finish_non_exhaustive()
    }
}

type Params<'a> = [&'a (dyn ToSql + Sync)];

impl PgWorkItems {
    /// Runs `text` on item `item` (locked and read first) in one transaction, and `observe`
    /// on the row before and the rows `text` returned (or, for a statement returning none,
    /// one row holding nothing: see `changed`); refused when there is no such item.
    fn on_item(
        &mut self,
        item: u32,
        (text, params): (&str, &Params<'_>),
        observe: impl FnOnce(&ItemRow, Written) -> Result<Applied, StoreError>,
    ) -> Result<Applied, StoreError> {
        let mut guard = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        let Shared { client, prepared } = &mut *guard;
        let read = prepared.get(client, READ_ITEM_FOR_UPDATE)?;
        let statement = prepared.get(client, text)?;
        let mut transaction = client.transaction()?;
        let before = transaction.query(&read, &[&i64::from(item)])?;
        let before = item_of(before.first().ok_or_else(|| no_such_item(item))?)?;
        let written = write(&mut transaction, &statement, params)?;
        let applied = observe(&before, written)?;
        transaction.commit()?;
        Ok(applied)
    }

    /// One read statement outside a write.
    fn read(&mut self, text: &str, params: &Params<'_>) -> Result<Vec<Row>, StoreError> {
        let mut guard = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        let Shared { client, prepared } = &mut *guard;
        let statement = prepared.get(client, text)?;
        Ok(client.query(&statement, params)?)
    }

    fn claim(
        &mut self,
        owner: ReplicaId,
        (item, lease_ms): (u32, u64),
        conditional: bool,
        now_ms: u64,
    ) -> Result<Applied, StoreError> {
        let (now, lease_ms, owner) = (to_sql(now_ms)?, to_sql(lease_ms)?, owner.owner_id());
        let text = if conditional { CLAIM } else { PLAIN_CLAIM };
        let params: [&(dyn ToSql + Sync); 4] = [&i64::from(item), &owner, &now, &lease_ms];
        self.on_item(item, (text, &params), |before, written| {
            let granted: Option<Granted> = match written.rows.first() {
                Some(row) => Some((
                    from_sql(row.try_get(0)?)?,
                    from_sql(row.try_get(1)?)?,
                    small(row.try_get(2)?, "attempts")?,
                    small(row.try_get(3)?, "chunks")?,
                )),
                None => None,
            };
            Ok(observe::claim(before, granted, now_ms))
        })
    }

    fn renew(
        &mut self,
        (item, token): (u32, u64),
        lease_ms: u64,
        now_ms: u64,
    ) -> Result<Applied, StoreError> {
        let (now, lease_ms, shown) = (to_sql(now_ms)?, to_sql(lease_ms)?, to_sql(token)?);
        let params: [&(dyn ToSql + Sync); 4] = [&i64::from(item), &shown, &now, &lease_ms];
        self.on_item(item, (RENEW, &params), |before, written| {
            let renewed = match written.rows.first() {
                Some(row) => Some(from_sql(row.try_get(0)?)?),
                None => None,
            };
            Ok(observe::renew(before, token, renewed, now_ms))
        })
    }

    fn apply_chunk(
        &mut self,
        (item, token, chunk): (u32, u64, u32),
        guarded: bool,
        now_ms: u64,
    ) -> Result<Applied, StoreError> {
        let (now, shown) = (to_sql(now_ms)?, to_sql(token)?);
        let fenced = guarded && self.fencing;
        let (id, chunk_number) = (i64::from(item), i64::from(chunk));
        let fenced_params: [&(dyn ToSql + Sync); 4] = [&id, &chunk_number, &shown, &now];
        let statement = match fenced {
            true => (APPLY, &fenced_params[..]),
            false => (APPLY_UNFENCED, &fenced_params[..3]),
        };
        self.on_item(item, statement, |before, written| {
            let recorded = written.changed > 0;
            Ok(observe::apply(
                before,
                (token, chunk),
                recorded,
                fenced,
                now_ms,
            ))
        })
    }

    fn mark(
        &mut self,
        (item, token): (u32, u64),
        (mark, error): (Mark, Option<String>),
        guarded: bool,
        now_ms: u64,
    ) -> Result<Applied, StoreError> {
        let (now, shown, id) = (to_sql(now_ms)?, to_sql(token)?, i64::from(item));
        let fenced = guarded && (self.fencing || mark != Mark::Done);
        let params: [&(dyn ToSql + Sync); 4] = [&id, &shown, &now, &error];
        let statement = match (mark, fenced) {
            (Mark::Done, true) => (DONE, &params[..3]),
            (Mark::Done, false) => (DONE_UNFENCED, &params[..2]),
            (Mark::Released, _) => (RELEASE, &params[..]),
            (Mark::Failed, _) => (FAIL, &params[..]),
        };
        self.on_item(item, statement, |before, written| {
            Ok(observe::mark(
                before,
                (token, mark),
                written.changed,
                now_ms,
            ))
        })
    }
}

/// What a statement wrote: the rows it returned, and how many it changed.
struct Written {
    rows: Vec<Row>,
    changed: u64,
}

/// Runs `statement`: a statement with `RETURNING` answers its rows (and their count), one
/// without answers the rows it changed.
fn write(
    transaction: &mut Transaction<'_>,
    statement: &postgres::Statement,
    params: &Params<'_>,
) -> Result<Written, StoreError> {
    if statement.columns().is_empty() {
        let changed = transaction.execute(statement, params)?;
        return Ok(Written {
            rows: Vec::new(),
            changed,
        });
    }
    let rows = transaction.query(statement, params)?;
    let changed = rows.len() as u64;
    Ok(Written { rows, changed })
}

impl WorkItemConnection for PgWorkItems {
    fn apply(
        &mut self,
        owner: ReplicaId,
        request: Request,
        now_ms: u64,
    ) -> Result<Applied, StoreError> {
        let error = |code| Some(error_name(code));
        match request {
            Request::Find { after } => {
                let (now, after) = (to_sql(now_ms)?, after.map_or(-1, i64::from));
                let rows = self.read(FIND, &[&now, &after])?;
                let item = match rows.first() {
                    Some(row) => Some(small(row.try_get(0)?, "item")?),
                    None => None,
                };
                Ok(Applied::Found { item })
            }
            Request::Status => {
                let rows = self.read(STATUS, &[])?;
                let row = rows
                    .first()
                    .ok_or_else(|| StoreError::Refused("no count returned".into()))?;
                Ok(Applied::Status(StatusView {
                    open: small(row.try_get(0)?, "count")?,
                    done: small(row.try_get(1)?, "count")?,
                    failed: small(row.try_get(2)?, "count")?,
                }))
            }
            Request::Claim { item, lease_ms, .. } => {
                self.claim(owner, (item, lease_ms), true, now_ms)
            }
            Request::PlainClaim { item, lease_ms, .. } => {
                self.claim(owner, (item, lease_ms), false, now_ms)
            }
            Request::Renew {
                item,
                token,
                lease_ms,
                ..
            } => self.renew((item, token), lease_ms, now_ms),
            Request::Apply {
                item, token, chunk, ..
            } => self.apply_chunk((item, token, chunk), true, now_ms),
            Request::UnguardedApply {
                item, token, chunk, ..
            } => self.apply_chunk((item, token, chunk), false, now_ms),
            Request::Done { item, token, .. } => {
                self.mark((item, token), (Mark::Done, None), true, now_ms)
            }
            Request::UnguardedDone { item, token, .. } => {
                self.mark((item, token), (Mark::Done, None), false, now_ms)
            }
            Request::Release {
                item,
                token,
                error: code,
                ..
            } => self.mark((item, token), (Mark::Released, error(code)), true, now_ms),
            Request::Fail {
                item,
                token,
                error: code,
                ..
            } => self.mark((item, token), (Mark::Failed, error(code)), true, now_ms),
            Request::ProviderApply { .. } | Request::Lookup { .. } => {
                Err(not_a_store_request(&request))
            }
        }
    }

    fn state(&mut self) -> Result<ItemsState, StoreError> {
        let mut guard = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        let Shared { client, prepared } = &mut *guard;
        let (read_all, read_chunks) = (
            prepared.get(client, READ_ALL)?,
            prepared.get(client, READ_CHUNKS)?,
        );
        let mut transaction = client.build_transaction().read_only(true).start()?;
        let items = transaction.query(&read_all, &[])?;
        let chunks = transaction.query(&read_chunks, &[])?;
        transaction.commit()?;
        let applied = chunks
            .iter()
            .map(|row| {
                Ok((
                    small(row.try_get(0)?, "item")?,
                    small(row.try_get(1)?, "chunk")?,
                ))
            })
            .collect::<Result<_, StoreError>>()?;
        Ok(ItemsState {
            items: items.iter().map(item_of).collect::<Result<_, _>>()?,
            applied,
        })
    }
}

/// Opens fresh PostgreSQL item stores in a schema of their own (dropped with this value),
/// one per conformance case, reusing its connections and their prepared statements from case
/// to case; they commit without waiting for the disk.
pub struct PgWorkItemStore {
    url: String,
    schema: String,
    shared: Vec<Arc<Mutex<Shared>>>,
}

impl PgWorkItemStore {
    /// A store kind on the server at `url`, in the fresh schema `schema` (dropped first if it
    /// exists, and again when this value is dropped).
    pub fn connect(url: &str, schema: &str) -> Result<PgWorkItemStore, StoreError> {
        let mut first = super::connect(url, schema)?;
        super::drop_schema(&mut first, schema)?;
        let mut first = super::connect(url, schema)?;
        first.batch_execute("SET synchronous_commit = off")?;
        first.batch_execute(SCHEMA)?;
        Ok(PgWorkItemStore {
            url: url.to_string(),
            schema: schema.to_string(),
            shared: vec![Arc::new(Mutex::new(Shared {
                client: first,
                prepared: Prepared::default(),
            }))],
        })
    }
}

impl Drop for PgWorkItemStore {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.first() {
            let mut shared = shared.lock().unwrap_or_else(|p| p.into_inner());
            let _ = super::drop_schema(&mut shared.client, &self.schema);
        }
    }
}

impl WorkItemStore for PgWorkItemStore {
    type Connection = PgWorkItems;

    fn open(&mut self, setup: &ItemSetup, callers: usize) -> Result<Vec<PgWorkItems>, StoreError> {
        while self.shared.len() < callers.max(1) {
            let mut client = super::connect(&self.url, &self.schema)?;
            client.batch_execute("SET synchronous_commit = off")?;
            self.shared.push(Arc::new(Mutex::new(Shared {
                client,
                prepared: Prepared::default(),
            })));
        }
        {
            let mut first = self.shared[0].lock().unwrap_or_else(|p| p.into_inner());
            reset(&mut first.client, setup)?;
        }
        Ok(self.shared[..callers.max(1)]
            .iter()
            .map(|shared| PgWorkItems {
                shared: shared.clone(),
                fencing: setup.fencing,
            })
            .collect())
    }
}
