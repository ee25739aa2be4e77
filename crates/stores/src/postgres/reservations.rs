//! The reservations system's store on PostgreSQL (design 002).
//!
//! Terminology as on SQLite (see `crate::sqlite::reservations`). Every call runs in one
//! `READ COMMITTED` transaction; a call on one hold first locks its row (`FOR UPDATE`) for
//! the observation read. The claim picks its rows `FOR UPDATE SKIP LOCKED`: two claims at
//! once never take the same hold and never wait for each other, and either may answer short.
//! The pick is a `MATERIALIZED` common table expression, run once (see
//! `crate::postgres::retention`: a rescanned `IN` subquery would claim past its limit).
//! Times are the caller's (`$now`), as the port passes them; a deployment that trusts the
//! server's clock writes `(extract(epoch from clock_timestamp()) * 1000)::bigint` there.

use std::sync::{Arc, Mutex};

use postgres::types::ToSql;
use postgres::{Client, Row, Transaction};

use super::Prepared;
use crate::reservations::{
    HoldState, ReservationConnection, ReservationSetup, ReservationStore, observe, status_of,
};
use crate::{StoreError, from_sql, to_sql};
use leasesim_reservations::events::{Applied, IdList, MAX_BATCH, Request, StatusView};

/// The table and the index a claim walks.
pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS reservations (
    id          BIGSERIAL PRIMARY KEY,
    hold_until  BIGINT  NOT NULL,
    status      TEXT    NOT NULL DEFAULT 'held'
                CHECK (status IN ('held', 'expired', 'consumed')),
    claim_token BIGINT,            -- NULL: no claim set
    claim_until BIGINT,            -- the claim runs out here (kept after it does)
    claim_since BIGINT,
    malformed   BOOLEAN NOT NULL DEFAULT false,
    parked      BOOLEAN NOT NULL DEFAULT false  -- a dead letter parked it; claims skip it
);
CREATE INDEX IF NOT EXISTS reservations_due ON reservations (hold_until, id)
    WHERE status = 'held' AND NOT parked;
";

/// The atomic claim. `$1` token, `$2` now, `$3` claim for (ms), `$4` eligible at, `$5` limit.
pub const CLAIM: &str = "
WITH picked AS MATERIALIZED (
    SELECT id FROM reservations
     WHERE status = 'held' AND NOT parked AND hold_until <= $4::bigint
       AND (claim_until IS NULL OR claim_until <= $2::bigint)
     ORDER BY hold_until, id
     LIMIT $5
       FOR UPDATE SKIP LOCKED)
UPDATE reservations
   SET claim_token = $1, claim_until = $2::bigint + $3::bigint, claim_since = $2
 WHERE id IN (SELECT id FROM picked)
RETURNING id, hold_until";

/// The guarded transition (design 002). `$1` id, `$2` eligible at.
pub const EXPIRE: &str = "
UPDATE reservations SET status = 'expired'
 WHERE id = $1 AND status = 'held' AND hold_until <= $2 AND NOT malformed";

/// Release, only while the claim carries the token. `$1` id, `$2` token.
pub const RELEASE: &str = "
UPDATE reservations SET claim_token = NULL, claim_until = NULL, claim_since = NULL
 WHERE id = $1 AND claim_token = $2";

/// A dead letter parks the hold. `$1` id.
pub const PARK: &str = "UPDATE reservations SET parked = true WHERE id = $1";

/// Agents. `$1` deadline, `$2` malformed; `$1` id.
pub const PLACE: &str =
    "INSERT INTO reservations (hold_until, malformed) VALUES ($1, $2) RETURNING id";
pub const CONSUME: &str = "
UPDATE reservations SET status = 'consumed' WHERE id = $1 AND status = 'held'
RETURNING hold_until";

/// Primitives only defective workers use.
pub const EXPIRE_BY_ID: &str =
    "UPDATE reservations SET status = 'expired' WHERE id = $1 AND NOT malformed";
pub const READ_DUE: &str = "
SELECT id, hold_until FROM reservations
 WHERE status = 'held' AND NOT parked AND hold_until <= $2::bigint
   AND (claim_until IS NULL OR claim_until <= $1::bigint)
 ORDER BY hold_until, id
 LIMIT $3";
pub const WRITE_CLAIM: &str = "
UPDATE reservations
   SET claim_token = $2, claim_until = $3::bigint + $4::bigint, claim_since = $3
 WHERE id = $1";
pub const RELEASE_ANY: &str = "
UPDATE reservations SET claim_token = NULL, claim_until = NULL, claim_since = NULL
 WHERE id = $1";

/// The observation read (locks the row), and the whole table.
pub const READ_HOLD_FOR_UPDATE: &str = "
SELECT id, hold_until, status, claim_token, claim_until, malformed, parked
  FROM reservations WHERE id = $1 FOR UPDATE";
const READ_ALL: &str = "
SELECT id, hold_until, status, claim_token, claim_until, malformed, parked
  FROM reservations ORDER BY id";

/// Resets the store (whose table exists) to `setup`'s holds, ids from 1.
pub fn reset(client: &mut Client, setup: &ReservationSetup) -> Result<(), StoreError> {
    let mut transaction = client.transaction()?;
    transaction.execute("TRUNCATE reservations RESTART IDENTITY", &[])?;
    for &(hold_until_ms, malformed) in &setup.holds {
        transaction.execute(PLACE, &[&to_sql(hold_until_ms)?, &malformed])?;
    }
    transaction.commit()?;
    Ok(())
}

fn hold_of(row: &Row) -> Result<HoldState, StoreError> {
    let id: i64 = row.try_get(0)?;
    let token: Option<i64> = row.try_get(3)?;
    let until: Option<i64> = row.try_get(4)?;
    let claim = match (token, until) {
        (Some(token), Some(until)) => Some((from_sql(token)?, from_sql(until)?)),
        _ => None,
    };
    Ok(HoldState {
        id: id_of(id)?,
        hold_until_ms: from_sql(row.try_get(1)?)?,
        status: status_of(row.try_get(2)?)?,
        claim,
        malformed: row.try_get(5)?,
        parked: row.try_get(6)?,
    })
}

fn id_of(id: i64) -> Result<u32, StoreError> {
    u32::try_from(id).map_err(|_| StoreError::Refused(format!("hold id {id} out of range")))
}

/// One connection to a reservation store on PostgreSQL.
pub struct PgReservations {
    client: Arc<Mutex<Client>>,
    prepared: Prepared,
}

impl std::fmt::Debug for PgReservations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgReservations").finish_non_exhaustive()
    }
}

type Work<'a> = dyn FnOnce(&mut Transaction<'_>, HoldState) -> Result<Applied, StoreError> + 'a;

impl PgReservations {
    /// Runs `work` on hold `id` (locked and read first) in one transaction: `Unknown`
    /// without running it when there is no such hold.
    fn on_hold(&mut self, id: u32, work: Box<Work<'_>>) -> Result<Applied, StoreError> {
        let client_arc = self.client.clone();
        let mut client = client_arc.lock().unwrap_or_else(|p| p.into_inner());
        let read = self.prepared.get(&mut client, READ_HOLD_FOR_UPDATE)?;
        let mut transaction = client.transaction()?;
        let before = transaction.query(&read, &[&i64::from(id)])?;
        let applied = match before.first() {
            None => Applied::Unknown { id },
            Some(row) => work(&mut transaction, hold_of(row)?)?,
        };
        transaction.commit()?;
        Ok(applied)
    }

    /// Runs `text` (a statement returning `id, hold_until`) with `params`: the ids in the
    /// claim's order (deadline, then id).
    fn due(&mut self, text: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<u32>, StoreError> {
        let client_arc = self.client.clone();
        let mut client = client_arc.lock().unwrap_or_else(|p| p.into_inner());
        let statement = self.prepared.get(&mut client, text)?;
        let rows = client.query(&statement, params)?;
        let mut due = rows
            .iter()
            .map(|row| Ok((row.try_get::<_, i64>(1)?, row.try_get::<_, i64>(0)?)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        due.sort_unstable();
        due.into_iter().map(|(_, id)| id_of(id)).collect()
    }
}

fn limit_of(limit: u32) -> i64 {
    i64::from(limit.min(u32::try_from(MAX_BATCH).expect("a small batch")))
}

fn changed(
    transaction: &mut Transaction<'_>,
    text: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<u64, StoreError> {
    Ok(transaction.execute(text, params)?)
}

/// Work on one hold inside its transaction.
type HoldWork = (u32, Box<Work<'static>>);

/// The hold a per-hold request works on, and its work inside the hold's transaction. A scan
/// (claim, read of due holds) works on no one hold: refused here, `apply` runs those.
fn hold_work(request: Request, now_ms: u64) -> Result<HoldWork, StoreError> {
    match request {
        Request::Expire { id, now: at } => expire_work(id, to_sql(at.unwrap_or(now_ms))?),
        Request::Release { id, token } => release_work(id, token),
        Request::DeadLetter { letter } => {
            let id = letter.id;
            let work = move |transaction: &mut Transaction<'_>, _| {
                changed(transaction, PARK, &[&i64::from(id)])?;
                Ok(Applied::Parked { id })
            };
            Ok((id, Box::new(work)))
        }
        Request::ExpireById { id } => {
            let work = move |transaction: &mut Transaction<'_>, before: HoldState| {
                if before.malformed {
                    return Ok(Applied::Invalid { id });
                }
                changed(transaction, EXPIRE_BY_ID, &[&i64::from(id)])?;
                let was = before.status;
                Ok(Applied::ExpiredById { id, was })
            };
            Ok((id, Box::new(work)))
        }
        Request::WriteClaim {
            id,
            token,
            claim_for_ms,
        } => write_claim_work(id, token, claim_for_ms, now_ms),
        Request::ReleaseAny { id } => {
            let work = move |transaction: &mut Transaction<'_>, before: HoldState| {
                changed(transaction, RELEASE_ANY, &[&i64::from(id)])?;
                let freed = before.claim.map(|(token, _)| token);
                Ok(Applied::ReleasedAny { id, freed })
            };
            Ok((id, Box::new(work)))
        }
        Request::Claim { .. } | Request::ReadDue { .. } => {
            Err(StoreError::Refused("a scan works on no one hold".into()))
        }
    }
}

/// The guarded transition of hold `id`, due by `eligible_at`.
fn expire_work(id: u32, eligible_at: i64) -> Result<HoldWork, StoreError> {
    let work = move |transaction: &mut Transaction<'_>, before: HoldState| {
        if before.malformed {
            return Ok(Applied::Invalid { id });
        }
        let count = changed(transaction, EXPIRE, &[&i64::from(id), &eligible_at])?;
        Ok(observe::expire(&before, count))
    };
    Ok((id, Box::new(work)))
}

/// The release of hold `id`'s claim, only while it carries `token`.
fn release_work(id: u32, token: u64) -> Result<HoldWork, StoreError> {
    let shown = to_sql(token)?;
    let work = move |transaction: &mut Transaction<'_>, _| {
        let count = changed(transaction, RELEASE, &[&i64::from(id), &shown])?;
        let freed = count > 0;
        Ok(Applied::Released { id, token, freed })
    };
    Ok((id, Box::new(work)))
}

/// The unguarded claim write on hold `id` (the read-then-write primitive).
fn write_claim_work(
    id: u32,
    token: u64,
    claim_for_ms: u64,
    now_ms: u64,
) -> Result<HoldWork, StoreError> {
    let (shown, claim_for, now) = (to_sql(token)?, to_sql(claim_for_ms)?, to_sql(now_ms)?);
    let work = move |transaction: &mut Transaction<'_>, before: HoldState| {
        let replaced = observe::replaced(&before, now_ms);
        let params: [&(dyn ToSql + Sync); 4] = [&i64::from(id), &shown, &now, &claim_for];
        changed(transaction, WRITE_CLAIM, &params)?;
        let until_ms = now_ms.saturating_add(claim_for_ms);
        Ok(Applied::ClaimWritten {
            id,
            token,
            until_ms,
            replaced,
        })
    };
    Ok((id, Box::new(work)))
}

impl ReservationConnection for PgReservations {
    fn apply(&mut self, request: Request, now_ms: u64) -> Result<Applied, StoreError> {
        let now = to_sql(now_ms)?;
        let eligible = |at: Option<u64>| to_sql(at.unwrap_or(now_ms));
        match request {
            Request::Claim {
                limit,
                now: at,
                token,
                claim_for_ms,
            } => {
                let (shown, claim_for) = (to_sql(token)?, to_sql(claim_for_ms)?);
                let (eligible_at, limit) = (eligible(at)?, limit_of(limit));
                let ids = self.due(CLAIM, &[&shown, &now, &claim_for, &eligible_at, &limit])?;
                let until_ms = now_ms.saturating_add(claim_for_ms);
                let ids = IdList::of(&ids);
                Ok(Applied::Claimed {
                    ids,
                    token,
                    until_ms,
                })
            }
            Request::ReadDue { limit, now: at } => {
                let (eligible_at, limit) = (eligible(at)?, limit_of(limit));
                let ids = self.due(READ_DUE, &[&now, &eligible_at, &limit])?;
                Ok(Applied::DueRead {
                    ids: IdList::of(&ids),
                })
            }
            request => {
                let (id, work) = hold_work(request, now_ms)?;
                self.on_hold(id, work)
            }
        }
    }

    fn place(&mut self, hold_until_ms: u64, malformed: bool) -> Result<u32, StoreError> {
        let mut client = self.client.lock().unwrap_or_else(|p| p.into_inner());
        let rows = client.query(PLACE, &[&to_sql(hold_until_ms)?, &malformed])?;
        let row = rows
            .first()
            .ok_or_else(|| StoreError::Refused("no id returned".into()))?;
        id_of(row.try_get(0)?)
    }

    fn consume(&mut self, id: u32) -> Result<Result<u64, StatusView>, StoreError> {
        let mut client = self.client.lock().unwrap_or_else(|p| p.into_inner());
        let mut transaction = client.transaction()?;
        let consumed = transaction.query(CONSUME, &[&i64::from(id)])?;
        let outcome = match consumed.first() {
            Some(row) => Ok(from_sql(row.try_get(0)?)?),
            None => {
                let found = transaction.query(READ_HOLD_FOR_UPDATE, &[&i64::from(id)])?;
                let row = found
                    .first()
                    .ok_or_else(|| StoreError::Refused(format!("no hold h{id}")))?;
                Err(hold_of(row)?.status)
            }
        };
        transaction.commit()?;
        Ok(outcome)
    }

    fn state(&mut self) -> Result<Vec<HoldState>, StoreError> {
        let mut client = self.client.lock().unwrap_or_else(|p| p.into_inner());
        let rows = client.query(READ_ALL, &[])?;
        rows.iter().map(hold_of).collect()
    }
}

/// Opens fresh PostgreSQL reservation stores in a schema of their own (dropped with this
/// value), one per conformance case, reusing its connections from case to case; they commit
/// without waiting for the disk.
pub struct PgReservationStore {
    url: String,
    schema: String,
    clients: Vec<Arc<Mutex<Client>>>,
}

impl PgReservationStore {
    /// A store kind on the server at `url`, in the fresh schema `schema` (dropped first if it
    /// exists, and again when this value is dropped).
    pub fn connect(url: &str, schema: &str) -> Result<PgReservationStore, StoreError> {
        let mut first = super::connect(url, schema)?;
        super::drop_schema(&mut first, schema)?;
        let mut first = super::connect(url, schema)?;
        first.batch_execute("SET synchronous_commit = off")?;
        first.batch_execute(SCHEMA)?;
        Ok(PgReservationStore {
            url: url.to_string(),
            schema: schema.to_string(),
            clients: vec![Arc::new(Mutex::new(first))],
        })
    }
}

impl Drop for PgReservationStore {
    fn drop(&mut self) {
        if let Some(client) = self.clients.first() {
            let mut client = client.lock().unwrap_or_else(|p| p.into_inner());
            let _ = super::drop_schema(&mut client, &self.schema);
        }
    }
}

impl ReservationStore for PgReservationStore {
    type Connection = PgReservations;

    fn open(
        &mut self,
        setup: &ReservationSetup,
        callers: usize,
    ) -> Result<Vec<PgReservations>, StoreError> {
        while self.clients.len() < callers.max(1) {
            let mut client = super::connect(&self.url, &self.schema)?;
            client.batch_execute("SET synchronous_commit = off")?;
            self.clients.push(Arc::new(Mutex::new(client)));
        }
        {
            let mut first = self.clients[0].lock().unwrap_or_else(|p| p.into_inner());
            reset(&mut first, setup)?;
        }
        Ok(self.clients[..callers.max(1)]
            .iter()
            .map(|client| PgReservations {
                client: client.clone(),
                prepared: Prepared::default(),
            })
            .collect())
    }
}
