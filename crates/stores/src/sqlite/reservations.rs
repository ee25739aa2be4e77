//! The reservations system's store on SQLite (design 002).
//!
//! Terminology:
//! - *hold row*: one row of `reservations`. `claim_token` is `NULL` while no claim is set
//!   (never claimed, or released); a claim that ran out stays until a release frees it, and a
//!   claim skips it once `claim_until <= :now`.
//! - *conditional statement*: the `UPDATE` that does the work with every check in its
//!   `WHERE` clause; the guarded transition is the design's statement, word for word.
//! - *observation read*: the hold row read in the same transaction before the statement,
//!   only to tell the caller what the statement did (`AlreadyDone` or `NotEligible`, which
//!   claim a write replaced); it never decides whether the statement applies.
//!
//! Times (`:now`, `:eligible_at`, `hold_until`, `claim_until`) are milliseconds on the
//! caller's clock. Every call runs in one `BEGIN IMMEDIATE` transaction.

use rusqlite::{Connection, ToSql, Transaction, TransactionBehavior};

use super::{execute, query};
use crate::reservations::observe;
use crate::reservations::{
    HoldState, ReservationConnection, ReservationSetup, ReservationStore, status_of,
};
use crate::{StoreError, from_sql, to_sql};
use leasesim_reservations::events::{Applied, IdList, MAX_BATCH, Request, StatusView};

/// The table and the index a claim walks (held, unparked holds by deadline).
pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS reservations (
    id          INTEGER PRIMARY KEY,
    hold_until  INTEGER NOT NULL,
    status      TEXT    NOT NULL DEFAULT 'held'
                CHECK (status IN ('held', 'expired', 'consumed')),
    claim_token INTEGER,            -- NULL: no claim set
    claim_until INTEGER,            -- the claim runs out here (kept after it does)
    claim_since INTEGER,
    malformed   INTEGER NOT NULL DEFAULT 0,
    parked      INTEGER NOT NULL DEFAULT 0  -- 1: a dead letter parked it; claims skip it
);
CREATE INDEX IF NOT EXISTS reservations_due ON reservations (hold_until, id)
    WHERE status = 'held' AND parked = 0;
";

/// The atomic claim: the oldest due, unclaimed holds get the claim, in one statement.
pub const CLAIM: &str = "
UPDATE reservations
   SET claim_token = :token, claim_until = :now + :claim_for, claim_since = :now
 WHERE id IN (SELECT id FROM reservations
               WHERE status = 'held' AND parked = 0 AND hold_until <= :eligible_at
                 AND (claim_until IS NULL OR claim_until <= :now)
               ORDER BY hold_until, id
               LIMIT :limit)
RETURNING id, hold_until";

/// The guarded transition (design 002): held and due becomes expired; a malformed record is
/// never changed.
pub const EXPIRE: &str = "
UPDATE reservations SET status = 'expired'
 WHERE id = :id AND status = 'held' AND hold_until <= :eligible_at AND malformed = 0";

/// Release: frees the claim only while it carries the token.
pub const RELEASE: &str = "
UPDATE reservations SET claim_token = NULL, claim_until = NULL, claim_since = NULL
 WHERE id = :id AND claim_token = :token";

/// A dead letter parks the hold: claims skip it from now on.
pub const PARK: &str = "UPDATE reservations SET parked = 1 WHERE id = :id";

/// Agents: a new hold, and consuming a held one.
pub const PLACE: &str = "INSERT INTO reservations (hold_until, malformed) VALUES (:hold_until, :malformed) RETURNING id";
pub const CONSUME: &str = "
UPDATE reservations SET status = 'consumed' WHERE id = :id AND status = 'held'
RETURNING hold_until";

/// Primitives only defective workers use (the anti-patterns the design warns about).
pub const EXPIRE_BY_ID: &str =
    "UPDATE reservations SET status = 'expired' WHERE id = :id AND malformed = 0";
pub const READ_DUE: &str = "
SELECT id, hold_until FROM reservations
 WHERE status = 'held' AND parked = 0 AND hold_until <= :eligible_at
   AND (claim_until IS NULL OR claim_until <= :now)
 ORDER BY hold_until, id
 LIMIT :limit";
pub const WRITE_CLAIM: &str = "
UPDATE reservations
   SET claim_token = :token, claim_until = :now + :claim_for, claim_since = :now
 WHERE id = :id";
pub const RELEASE_ANY: &str = "
UPDATE reservations SET claim_token = NULL, claim_until = NULL, claim_since = NULL
 WHERE id = :id";

/// The observation read, and the whole table.
pub const READ_HOLD: &str = "
SELECT id, hold_until, status, claim_token, claim_until, malformed, parked
  FROM reservations WHERE id = :id";
const READ_ALL: &str = "
SELECT id, hold_until, status, claim_token, claim_until, malformed, parked
  FROM reservations ORDER BY id";

/// The statements an adapter runs: the reference ones by default; a test may plant a bug.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statements {
    pub claim: String,
    pub expire: String,
    pub release: String,
    pub park: String,
    pub consume: String,
}

impl Default for Statements {
    fn default() -> Statements {
        Statements {
            claim: CLAIM.into(),
            expire: EXPIRE.into(),
            release: RELEASE.into(),
            park: PARK.into(),
            consume: CONSUME.into(),
        }
    }
}

/// Creates the schema if needed and resets the store to `setup`'s holds (ids 1, 2, ...).
pub fn create(connection: &mut Connection, setup: &ReservationSetup) -> Result<(), StoreError> {
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    transaction.execute_batch(SCHEMA)?;
    transaction.execute("DELETE FROM reservations", [])?;
    for &(hold_until_ms, malformed) in &setup.holds {
        place_in(&transaction, hold_until_ms, malformed)?;
    }
    transaction.commit()?;
    Ok(())
}

fn place_in(
    transaction: &Transaction<'_>,
    hold_until_ms: u64,
    malformed: bool,
) -> Result<u32, StoreError> {
    let hold_until = to_sql(hold_until_ms)?;
    let mut statement = transaction.prepare_cached(PLACE)?;
    let values: [(&str, &dyn ToSql); 2] =
        [(":hold_until", &hold_until), (":malformed", &malformed)];
    let ids = query(&mut statement, &values, |row| row.get::<_, i64>(0))?;
    let id = ids
        .into_iter()
        .next()
        .ok_or_else(|| StoreError::Refused("no id returned".into()))?;
    u32::try_from(id).map_err(|_| StoreError::Refused(format!("hold id {id} out of range")))
}

/// A hold row as read: id, hold_until, status, claim_token, claim_until, malformed, parked.
type RawHold = (i64, i64, String, Option<i64>, Option<i64>, bool, bool);

fn read_hold(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawHold> {
    Ok((
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(3)?,
        row.get(4)?,
        row.get(5)?,
        row.get(6)?,
    ))
}

fn hold_of(raw: RawHold) -> Result<HoldState, StoreError> {
    let (id, hold_until, status, token, until, malformed, parked) = raw;
    let claim = match (token, until) {
        (Some(token), Some(until)) => Some((from_sql(token)?, from_sql(until)?)),
        _ => None,
    };
    Ok(HoldState {
        id: u32::try_from(id)
            .map_err(|_| StoreError::Refused(format!("hold id {id} out of range")))?,
        hold_until_ms: from_sql(hold_until)?,
        status: status_of(&status)?,
        claim,
        malformed,
        parked,
    })
}

/// One connection to a reservation store on SQLite.
#[derive(Debug)]
pub struct SqliteReservations {
    connection: Connection,
    sql: Statements,
}

impl SqliteReservations {
    /// The dead letter and the primitives a defective worker uses (transition by id alone,
    /// unguarded claim write, release whatever the claim): each on one hold. The guarded
    /// requests are `apply`'s; refused here.
    fn apply_primitive(&mut self, request: Request, now_ms: u64) -> Result<Applied, StoreError> {
        let now = to_sql(now_ms)?;
        match request {
            Request::DeadLetter { letter } => {
                let id = letter.id;
                self.on_hold(id, |transaction, sql, _| {
                    change(transaction, &sql.park, id, &[])?;
                    Ok(Applied::Parked { id })
                })
            }
            Request::ExpireById { id } => self.on_hold(id, |transaction, _, before| {
                if before.malformed {
                    return Ok(Applied::Invalid { id });
                }
                change(transaction, EXPIRE_BY_ID, id, &[])?;
                Ok(Applied::ExpiredById {
                    id,
                    was: before.status,
                })
            }),
            Request::WriteClaim {
                id,
                token,
                claim_for_ms,
            } => {
                let (shown, claim_for) = (to_sql(token)?, to_sql(claim_for_ms)?);
                self.on_hold(id, |transaction, _, before| {
                    let replaced = observe::replaced(&before, now_ms);
                    let values: [(&str, &dyn ToSql); 3] = [
                        (":token", &shown),
                        (":now", &now),
                        (":claim_for", &claim_for),
                    ];
                    change(transaction, WRITE_CLAIM, id, &values)?;
                    let until_ms = now_ms.saturating_add(claim_for_ms);
                    Ok(Applied::ClaimWritten {
                        id,
                        token,
                        until_ms,
                        replaced,
                    })
                })
            }
            Request::ReleaseAny { id } => self.on_hold(id, |transaction, _, before| {
                change(transaction, RELEASE_ANY, id, &[])?;
                Ok(Applied::ReleasedAny {
                    id,
                    freed: before.claim.map(|(token, _)| token),
                })
            }),
            Request::Claim { .. }
            | Request::ReadDue { .. }
            | Request::Expire { .. }
            | Request::Release { .. } => Err(StoreError::Refused(
                "a guarded request is applied by `apply`".into(),
            )),
        }
    }

    /// `sql` on `connection` (whose schema [`create`] made).
    pub fn new(connection: Connection, sql: Statements) -> SqliteReservations {
        SqliteReservations { connection, sql }
    }

    /// Runs `work` on the hold `id` (as read first) in one `BEGIN IMMEDIATE` transaction:
    /// `Unknown` without running it when there is no such hold.
    fn on_hold(
        &mut self,
        id: u32,
        work: impl FnOnce(&Transaction<'_>, &Statements, HoldState) -> Result<Applied, StoreError>,
    ) -> Result<Applied, StoreError> {
        let transaction = self
            .connection
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let before = {
            let mut statement = transaction.prepare_cached(READ_HOLD)?;
            query(&mut statement, &[(":id", &id)], read_hold)?
                .into_iter()
                .next()
        };
        let applied = match before {
            None => Applied::Unknown { id },
            Some(raw) => work(&transaction, &self.sql, hold_of(raw)?)?,
        };
        transaction.commit()?;
        Ok(applied)
    }

    /// Runs a due-holds statement (`claim` when `token` is given, else the read).
    fn due(
        &mut self,
        limit: u32,
        eligible_at_ms: u64,
        claim: Option<(u64, u64)>,
        now_ms: u64,
    ) -> Result<Vec<u32>, StoreError> {
        let (now, eligible_at) = (to_sql(now_ms)?, to_sql(eligible_at_ms)?);
        let limit = limit.min(u32::try_from(MAX_BATCH).expect("a small batch"));
        let (token, claim_for) = claim.map_or((0, 0), |pair| pair);
        let (token, claim_for) = (to_sql(token)?, to_sql(claim_for)?);
        let transaction = self
            .connection
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let text = if claim.is_some() {
            self.sql.claim.as_str()
        } else {
            READ_DUE
        };
        let mut ids = {
            let mut statement = transaction.prepare_cached(text)?;
            let values: [(&str, &dyn ToSql); 5] = [
                (":token", &token),
                (":now", &now),
                (":claim_for", &claim_for),
                (":eligible_at", &eligible_at),
                (":limit", &limit),
            ];
            query(&mut statement, &values, |row| {
                Ok((row.get::<_, i64>(1)?, row.get::<_, i64>(0)?))
            })?
        };
        transaction.commit()?;
        // RETURNING gives no order: answer in the claim's order (deadline, then id).
        ids.sort_unstable();
        ids.into_iter()
            .map(|(_, id)| u32::try_from(id).map_err(|_| StoreError::Refused(format!("id {id}"))))
            .collect()
    }
}

/// Runs `text` on hold `id` with `values` (and `:id`): the rows it changed.
fn change(
    transaction: &Transaction<'_>,
    text: &str,
    id: u32,
    values: &[(&str, &dyn ToSql)],
) -> Result<usize, StoreError> {
    let mut statement = transaction.prepare_cached(text)?;
    let mut all: Vec<(&str, &dyn ToSql)> = vec![(":id", &id)];
    all.extend_from_slice(values);
    execute(&mut statement, &all)
}

impl ReservationConnection for SqliteReservations {
    fn apply(&mut self, request: Request, now_ms: u64) -> Result<Applied, StoreError> {
        let eligible = |at: Option<u64>| at.unwrap_or(now_ms);
        match request {
            Request::Claim {
                limit,
                now: at,
                token,
                claim_for_ms,
            } => {
                let ids = self.due(limit, eligible(at), Some((token, claim_for_ms)), now_ms)?;
                let until_ms = now_ms.saturating_add(claim_for_ms);
                Ok(Applied::Claimed {
                    ids: IdList::of(&ids),
                    token,
                    until_ms,
                })
            }
            Request::ReadDue { limit, now: at } => {
                let ids = self.due(limit, eligible(at), None, now_ms)?;
                Ok(Applied::DueRead {
                    ids: IdList::of(&ids),
                })
            }
            Request::Expire { id, now: at } => {
                let eligible_at = to_sql(eligible(at))?;
                self.on_hold(id, |transaction, sql, before| {
                    if before.malformed {
                        return Ok(Applied::Invalid { id });
                    }
                    let changed = change(
                        transaction,
                        &sql.expire,
                        id,
                        &[(":eligible_at", &eligible_at)],
                    )?;
                    Ok(observe::expire(&before, changed as u64))
                })
            }
            Request::Release { id, token } => {
                let shown = to_sql(token)?;
                self.on_hold(id, |transaction, sql, _| {
                    let changed = change(transaction, &sql.release, id, &[(":token", &shown)])?;
                    Ok(Applied::Released {
                        id,
                        token,
                        freed: changed > 0,
                    })
                })
            }
            request => self.apply_primitive(request, now_ms),
        }
    }

    fn place(&mut self, hold_until_ms: u64, malformed: bool) -> Result<u32, StoreError> {
        let transaction = self
            .connection
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let id = place_in(&transaction, hold_until_ms, malformed)?;
        transaction.commit()?;
        Ok(id)
    }

    fn consume(&mut self, id: u32) -> Result<Result<u64, StatusView>, StoreError> {
        let transaction = self
            .connection
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let consumed = {
            let mut statement = transaction.prepare_cached(&self.sql.consume)?;
            query(&mut statement, &[(":id", &id)], |row| row.get::<_, i64>(0))?
                .into_iter()
                .next()
        };
        let outcome = match consumed {
            Some(hold_until) => Ok(from_sql(hold_until)?),
            None => {
                let mut statement = transaction.prepare_cached(READ_HOLD)?;
                let found = query(&mut statement, &[(":id", &id)], read_hold)?
                    .into_iter()
                    .next();
                let hold = found.ok_or_else(|| StoreError::Refused(format!("no hold h{id}")))?;
                Err(hold_of(hold)?.status)
            }
        };
        transaction.commit()?;
        Ok(outcome)
    }

    fn state(&mut self) -> Result<Vec<HoldState>, StoreError> {
        let mut statement = self.connection.prepare_cached(READ_ALL)?;
        let rows = query(&mut statement, &[], read_hold)?;
        rows.into_iter().map(hold_of).collect()
    }
}

/// Opens fresh SQLite reservation stores in memory, one per conformance case.
#[derive(Clone, Debug, Default)]
pub struct SqliteReservationStore {
    pub statements: Statements,
}

impl ReservationStore for SqliteReservationStore {
    type Connection = SqliteReservations;

    fn open(
        &mut self,
        setup: &ReservationSetup,
        callers: usize,
    ) -> Result<Vec<SqliteReservations>, StoreError> {
        let mut connections = super::open_memory(callers)?;
        create(&mut connections[0], setup)?;
        let sql = &self.statements;
        Ok(connections
            .into_iter()
            .map(|connection| SqliteReservations::new(connection, sql.clone()))
            .collect())
    }
}
