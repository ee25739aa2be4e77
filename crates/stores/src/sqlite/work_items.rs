//! The work-items system's item store on SQLite (design 001).
//!
//! Terminology:
//! - *item row*: one row of `work_items`, numbered from 0. `token` is the last claim's token
//!   and `expires_at_ms` its expiry; both stay after the claim ends (an end mark changes only
//!   `state`, `marked_by` and `last_error`).
//! - *token counter*: the one row of `work_item_tokens`, the last token handed out store-wide.
//!   A claim takes `last_token + 1` and, once granted, moves the counter on ([`NEXT_TOKEN`])
//!   in the same transaction.
//! - *chunk row*: one row of `work_item_chunks` per applied chunk of an item's local effect,
//!   written by the fenced insert of the first claim that applied it.
//! - *conditional statement*: the `UPDATE` or `INSERT` that does the work with every check
//!   (state, token, expiry) in its `WHERE` clause, so it is right on its own: copy these.
//! - *observation read*: the item row read in the same transaction before the statement,
//!   only to tell the caller what the statement did (what the item was before a claim, which
//!   claim was live when a write was refused, whether a mark repeats its own); it never
//!   decides whether the statement applies.
//!
//! Times (`:now`, `expires_at_ms`) are milliseconds on the caller's clock; a claim is live
//! while `:now < expires_at_ms`. Every call runs in one `BEGIN IMMEDIATE` transaction.

use rusqlite::{Connection, ToSql, Transaction, TransactionBehavior};

use super::{execute, query};
use crate::work_items::observe::{self, Granted};
use crate::work_items::{
    Applied, ItemRow, ItemSetup, ItemsState, Mark, ReplicaId, Request, StatusView,
    WorkItemConnection, WorkItemStore, check_sizes, error_name, error_of, no_such_item,
    not_a_store_request, state_of,
};
use crate::{StoreError, from_sql, to_sql};

/// The tables and the index a search for claimable items walks.
pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS work_items (
    id            INTEGER PRIMARY KEY,         -- the item's number, from 0
    state         TEXT    NOT NULL DEFAULT 'pending'
                  CHECK (state IN ('pending', 'claimed', 'released', 'done', 'failed')),
    owner         TEXT,                        -- the last claimant
    token         INTEGER NOT NULL DEFAULT 0,  -- the last claim's token (0: never claimed)
    expires_at_ms INTEGER NOT NULL DEFAULT 0,  -- the last claim's expiry
    attempts      INTEGER NOT NULL DEFAULT 0,  -- claims granted
    last_error    TEXT,
    marked_by     INTEGER NOT NULL DEFAULT 0,  -- the claim that wrote the end mark
    chunks        INTEGER NOT NULL CHECK (chunks >= 1)
);
CREATE INDEX IF NOT EXISTS work_items_open ON work_items (id)
    WHERE state IN ('pending', 'released', 'claimed');
CREATE TABLE IF NOT EXISTS work_item_chunks (
    item  INTEGER NOT NULL REFERENCES work_items (id),
    chunk INTEGER NOT NULL,
    token INTEGER NOT NULL,                    -- the claim that applied it
    PRIMARY KEY (item, chunk)
);
CREATE TABLE IF NOT EXISTS work_item_tokens (
    one        INTEGER PRIMARY KEY CHECK (one = 1),
    last_token INTEGER NOT NULL                -- the last token handed out, store-wide
);
";

/// The first claimable item after `:after` (-1: from the first), wrapping round. A read:
/// the claim that follows may still lose the race.
pub const FIND: &str = "
SELECT id FROM work_items
 WHERE state IN ('pending', 'released') OR (state = 'claimed' AND expires_at_ms <= :now)
 ORDER BY id <= :after, id
 LIMIT 1";

/// The conditional claim: only a pending, released or expired item, with the next token.
/// Run [`NEXT_TOKEN`] in the same transaction when it returns a row.
pub const CLAIM: &str = "
UPDATE work_items
   SET state = 'claimed', owner = :owner, attempts = attempts + 1,
       token = (SELECT last_token + 1 FROM work_item_tokens),
       expires_at_ms = :now + :lease_ms
 WHERE id = :item
   AND (state IN ('pending', 'released') OR (state = 'claimed' AND expires_at_ms <= :now))
RETURNING token, expires_at_ms, attempts, chunks";

/// Moves the token counter on after a granted claim.
pub const NEXT_TOKEN: &str = "UPDATE work_item_tokens SET last_token = last_token + 1";

/// Renewal: extends the live claim `:token` only.
pub const RENEW: &str = "
UPDATE work_items SET expires_at_ms = :now + :lease_ms
 WHERE id = :item AND state = 'claimed' AND token = :token AND expires_at_ms > :now
RETURNING expires_at_ms";

/// A chunk of the local effect, fenced: recorded only while `:token` is the live claim, and
/// only once (a chunk already recorded changes nothing).
pub const APPLY: &str = "
INSERT INTO work_item_chunks (item, chunk, token)
SELECT :item, :chunk, :token
 WHERE EXISTS (SELECT 1 FROM work_items
                WHERE id = :item AND state = 'claimed' AND token = :token
                  AND expires_at_ms > :now)
ON CONFLICT (item, chunk) DO NOTHING";

/// Done, fenced: only the live claim `:token` ends the item.
pub const DONE: &str = "
UPDATE work_items SET state = 'done', marked_by = :token
 WHERE id = :item AND state = 'claimed' AND token = :token AND expires_at_ms > :now";

/// Release, fenced: the item can be claimed again at once; its last error is recorded.
pub const RELEASE: &str = "
UPDATE work_items SET state = 'released', marked_by = :token, last_error = :error
 WHERE id = :item AND state = 'claimed' AND token = :token AND expires_at_ms > :now";

/// Fail, fenced: the item ends failed with its last error.
pub const FAIL: &str = "
UPDATE work_items SET state = 'failed', marked_by = :token, last_error = :error
 WHERE id = :item AND state = 'claimed' AND token = :token AND expires_at_ms > :now";

/// The run's count of open, done and failed items.
pub const STATUS: &str = "
SELECT count(*) FILTER (WHERE state NOT IN ('done', 'failed')),
       count(*) FILTER (WHERE state = 'done'),
       count(*) FILTER (WHERE state = 'failed')
  FROM work_items";

/// Primitives only defective workers use, and a store without fencing: no condition.
pub const PLAIN_CLAIM: &str = "
UPDATE work_items
   SET state = 'claimed', owner = :owner, attempts = attempts + 1,
       token = (SELECT last_token + 1 FROM work_item_tokens),
       expires_at_ms = :now + :lease_ms
 WHERE id = :item
RETURNING token, expires_at_ms, attempts, chunks";
pub const APPLY_UNFENCED: &str = "
INSERT INTO work_item_chunks (item, chunk, token) VALUES (:item, :chunk, :token)
ON CONFLICT (item, chunk) DO NOTHING";
pub const DONE_UNFENCED: &str =
    "UPDATE work_items SET state = 'done', marked_by = :token WHERE id = :item";

/// The observation read, and the whole store.
pub const READ_ITEM: &str = "
SELECT id, state, owner, token, expires_at_ms, attempts, last_error, marked_by, chunks
  FROM work_items WHERE id = :item";
const READ_ALL: &str = "
SELECT id, state, owner, token, expires_at_ms, attempts, last_error, marked_by, chunks
  FROM work_items ORDER BY id";
const READ_CHUNKS: &str = "SELECT item, chunk FROM work_item_chunks ORDER BY item, chunk";

/// The statements an adapter runs: the reference ones by default; a user (or a test planting
/// a bug) may replace any of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statements {
    pub find: String,
    pub claim: String,
    pub next_token: String,
    pub renew: String,
    pub apply: String,
    pub done: String,
    pub release: String,
    pub fail: String,
    pub status: String,
}

impl Default for Statements {
    fn default() -> Statements {
        Statements {
            find: FIND.into(),
            claim: CLAIM.into(),
            next_token: NEXT_TOKEN.into(),
            renew: RENEW.into(),
            apply: APPLY.into(),
            done: DONE.into(),
            release: RELEASE.into(),
            fail: FAIL.into(),
            status: STATUS.into(),
        }
    }
}

/// Creates the schema if needed and resets the store to `setup`'s items (numbered from 0,
/// all pending, no token handed out).
pub fn create(connection: &mut Connection, setup: &ItemSetup) -> Result<(), StoreError> {
    check_sizes(&setup.sizes)?;
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    transaction.execute_batch(SCHEMA)?;
    transaction.execute_batch(
        "DELETE FROM work_item_chunks; DELETE FROM work_items; DELETE FROM work_item_tokens;
         INSERT INTO work_item_tokens (one, last_token) VALUES (1, 0);",
    )?;
    {
        let mut insert =
            transaction.prepare("INSERT INTO work_items (id, chunks) VALUES (?1, ?2)")?;
        for (item, &chunks) in setup.sizes.iter().enumerate() {
            insert.execute([to_sql(item as u64)?, i64::from(chunks)])?;
        }
    }
    transaction.commit()?;
    Ok(())
}

/// An item row as read: id, state, owner, token, expiry, attempts, error, marked by, chunks.
type RawItem = (
    i64,
    String,
    Option<String>,
    i64,
    i64,
    i64,
    Option<String>,
    i64,
    i64,
);

fn read_item(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawItem> {
    Ok((
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(3)?,
        row.get(4)?,
        row.get(5)?,
        row.get(6)?,
        row.get(7)?,
        row.get(8)?,
    ))
}

fn small(value: i64, what: &str) -> Result<u32, StoreError> {
    u32::try_from(value).map_err(|_| StoreError::Refused(format!("{what} {value} out of range")))
}

fn item_of(raw: RawItem) -> Result<ItemRow, StoreError> {
    let (id, state, owner, token, expires_at_ms, attempts, last_error, marked_by, chunks) = raw;
    Ok(ItemRow {
        item: small(id, "item")?,
        state: state_of(&state)?,
        owner,
        token: from_sql(token)?,
        expires_at_ms: from_sql(expires_at_ms)?,
        attempts: small(attempts, "attempts")?,
        last_error: last_error.as_deref().map(error_of).transpose()?,
        marked_by: from_sql(marked_by)?,
        chunks: small(chunks, "chunks")?,
    })
}

/// One connection to an item store on SQLite.
#[derive(Debug)]
pub struct SqliteWorkItems {
    connection: Connection,
    fencing: bool,
    sql: Statements,
}

type Values<'a> = [(&'a str, &'a dyn ToSql)];

impl SqliteWorkItems {
    /// `sql` on `connection` (whose schema [`create`] made); `fencing` as the store was set
    /// up.
    pub fn new(connection: Connection, fencing: bool, sql: Statements) -> SqliteWorkItems {
        SqliteWorkItems {
            connection,
            fencing,
            sql,
        }
    }

    /// Runs `work` on item `item` (as read first) in one `BEGIN IMMEDIATE` transaction;
    /// refused when there is no such item.
    fn on_item(
        &mut self,
        item: u32,
        work: impl FnOnce(&Transaction<'_>, &Statements, ItemRow) -> Result<Applied, StoreError>,
    ) -> Result<Applied, StoreError> {
        let transaction = self
            .connection
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let before = {
            let mut statement = transaction.prepare_cached(READ_ITEM)?;
            query(&mut statement, &[(":item", &item)], read_item)?
                .into_iter()
                .next()
        };
        let before = item_of(before.ok_or_else(|| no_such_item(item))?)?;
        let applied = work(&transaction, &self.sql, before)?;
        transaction.commit()?;
        Ok(applied)
    }

    /// A read outside a write: one statement, `read` on its rows.
    fn read<T>(
        &mut self,
        text: &str,
        values: &Values<'_>,
        read: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, StoreError> {
        let mut statement = self.connection.prepare_cached(text)?;
        query(&mut statement, values, read)
    }

    fn find(&mut self, after: Option<u32>, now_ms: u64) -> Result<Applied, StoreError> {
        let (now, after) = (to_sql(now_ms)?, after.map_or(-1, i64::from));
        let text = self.sql.find.clone();
        let values: [(&str, &dyn ToSql); 2] = [(":now", &now), (":after", &after)];
        let found = self.read(&text, &values, |row| row.get::<_, i64>(0))?;
        let item = found
            .into_iter()
            .next()
            .map(|id| small(id, "item"))
            .transpose()?;
        Ok(Applied::Found { item })
    }

    fn status(&mut self) -> Result<Applied, StoreError> {
        let text = self.sql.status.clone();
        let counts = self.read(&text, &[], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, i64>(2)?,
            ))
        })?;
        let (open, done, failed) = counts.into_iter().next().unwrap_or((0, 0, 0));
        Ok(Applied::Status(StatusView {
            open: small(open, "count")?,
            done: small(done, "count")?,
            failed: small(failed, "count")?,
        }))
    }

    fn claim(
        &mut self,
        owner: ReplicaId,
        (item, lease_ms): (u32, u64),
        conditional: bool,
        now_ms: u64,
    ) -> Result<Applied, StoreError> {
        let (now, lease_ms, owner) = (to_sql(now_ms)?, to_sql(lease_ms)?, owner.owner_id());
        self.on_item(item, |transaction, sql, before| {
            let text = if conditional { &sql.claim } else { PLAIN_CLAIM };
            let values: [(&str, &dyn ToSql); 4] = [
                (":item", &item),
                (":owner", &owner),
                (":now", &now),
                (":lease_ms", &lease_ms),
            ];
            let mut statement = transaction.prepare_cached(text)?;
            let granted = query(&mut statement, &values, |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, i64>(1)?,
                    row.get(2)?,
                    row.get(3)?,
                ))
            })?;
            let granted: Option<Granted> = match granted.into_iter().next() {
                Some((token, expires, attempts, chunks)) => {
                    change(transaction, &sql.next_token, &[])?;
                    let (attempts, chunks) =
                        (small(attempts, "attempts")?, small(chunks, "chunks")?);
                    Some((from_sql(token)?, from_sql(expires)?, attempts, chunks))
                }
                None => None,
            };
            Ok(observe::claim(&before, granted, now_ms))
        })
    }

    fn renew(
        &mut self,
        (item, token): (u32, u64),
        lease_ms: u64,
        now_ms: u64,
    ) -> Result<Applied, StoreError> {
        let (now, lease_ms, shown) = (to_sql(now_ms)?, to_sql(lease_ms)?, to_sql(token)?);
        self.on_item(item, |transaction, sql, before| {
            let values: [(&str, &dyn ToSql); 4] = [
                (":item", &item),
                (":token", &shown),
                (":now", &now),
                (":lease_ms", &lease_ms),
            ];
            let mut statement = transaction.prepare_cached(&sql.renew)?;
            let renewed = query(&mut statement, &values, |row| row.get::<_, i64>(0))?;
            let renewed = renewed.into_iter().next().map(from_sql).transpose()?;
            Ok(observe::renew(&before, token, renewed, now_ms))
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
        self.on_item(item, |transaction, sql, before| {
            let text = if fenced { &sql.apply } else { APPLY_UNFENCED };
            let values: [(&str, &dyn ToSql); 4] = [
                (":item", &item),
                (":chunk", &chunk),
                (":token", &shown),
                (":now", &now),
            ];
            let recorded = change(transaction, text, &values)? > 0;
            Ok(observe::apply(
                &before,
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
        let (now, shown) = (to_sql(now_ms)?, to_sql(token)?);
        let fenced = guarded && (self.fencing || mark != Mark::Done);
        self.on_item(item, |transaction, sql, before| {
            let text = match (mark, fenced) {
                (Mark::Done, true) => &sql.done,
                (Mark::Done, false) => DONE_UNFENCED,
                (Mark::Released, _) => &sql.release,
                (Mark::Failed, _) => &sql.fail,
            };
            let values: [(&str, &dyn ToSql); 4] = [
                (":item", &item),
                (":token", &shown),
                (":now", &now),
                (":error", &error),
            ];
            let changed = change(transaction, text, &values)?;
            Ok(observe::mark(
                &before,
                (token, mark),
                changed as u64,
                now_ms,
            ))
        })
    }
}

/// Runs `text` (a statement returning no rows) with `values`: the rows it changed.
fn change(
    transaction: &Transaction<'_>,
    text: &str,
    values: &Values<'_>,
) -> Result<usize, StoreError> {
    let mut statement = transaction.prepare_cached(text)?;
    execute(&mut statement, values)
}

impl WorkItemConnection for SqliteWorkItems {
    fn apply(
        &mut self,
        owner: ReplicaId,
        request: Request,
        now_ms: u64,
    ) -> Result<Applied, StoreError> {
        let error = |code| Some(error_name(code));
        match request {
            Request::Find { after } => self.find(after, now_ms),
            Request::Status => self.status(),
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
        let transaction = self.connection.transaction()?;
        let items = {
            let mut statement = transaction.prepare_cached(READ_ALL)?;
            query(&mut statement, &[], read_item)?
        };
        let chunks = {
            let mut statement = transaction.prepare_cached(READ_CHUNKS)?;
            query(&mut statement, &[], |row| {
                Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?))
            })?
        };
        transaction.commit()?;
        Ok(ItemsState {
            items: items.into_iter().map(item_of).collect::<Result<_, _>>()?,
            applied: chunks
                .into_iter()
                .map(|(item, chunk)| Ok((small(item, "item")?, small(chunk, "chunk")?)))
                .collect::<Result<_, StoreError>>()?,
        })
    }
}

/// Opens fresh SQLite item stores in memory, one per conformance case.
#[derive(Clone, Debug, Default)]
pub struct SqliteWorkItemStore {
    /// The statements every connection runs.
    pub statements: Statements,
}

impl WorkItemStore for SqliteWorkItemStore {
    type Connection = SqliteWorkItems;

    fn open(
        &mut self,
        setup: &ItemSetup,
        callers: usize,
    ) -> Result<Vec<SqliteWorkItems>, StoreError> {
        let mut connections = super::open_memory(callers)?;
        create(&mut connections[0], setup)?;
        Ok(connections
            .into_iter()
            .map(|connection| {
                SqliteWorkItems::new(connection, setup.fencing, self.statements.clone())
            })
            .collect())
    }
}
