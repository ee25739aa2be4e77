//! PostgreSQL adapters, through the `postgres` client (the blocking face of `tokio-postgres`):
//! one submodule per system. Built only with the feature `postgres`.
//!
//! Terminology:
//! - *server URL*: a connection string (`host=localhost user=postgres` or
//!   `postgresql://postgres@localhost/postgres`); tests read it from `LEASESIM_PG_URL`.
//! - *schema*: every store lives in a schema of its own (`search_path`), so tests and runs on
//!   one server never see each other's tables; a store made for a test drops its schema
//!   when it is dropped.
//! - *statement cache*: each connection prepares a statement once and reuses it.
//!
//! Every call runs in one `READ COMMITTED` transaction that first locks the lease row
//! (`FOR UPDATE` for lease calls, `FOR SHARE` for deletes), so the lease row read for the
//! observed answer and the conditional statement see the same lease, and no renewal or
//! release can slip between a delete's token check and its commit.

pub mod reservations;
pub mod retention;
pub mod work_items;

use postgres::{Client, NoTls, Statement};

use crate::StoreError;

/// The environment variable naming the server for tests and `leasesim real`.
pub const URL_VAR: &str = "LEASESIM_PG_URL";

impl From<postgres::Error> for StoreError {
    fn from(error: postgres::Error) -> StoreError {
        match error.as_db_error() {
            // The server answered with an error: the transaction is rolled back.
            Some(db) => StoreError::Refused(format!("PostgreSQL {}: {}", db.code().code(), db)),
            // The connection failed: the server may or may not have committed.
            None => StoreError::Unknown(format!("PostgreSQL: {error}")),
        }
    }
}

/// Connects to the server at `url`, with `schema` first on the search path (created if
/// missing).
pub fn connect(url: &str, schema: &str) -> Result<Client, StoreError> {
    check_schema_name(schema)?;
    let mut client = Client::connect(url, NoTls)?;
    client.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {schema}; SET search_path TO {schema};"
    ))?;
    Ok(client)
}

/// Schema names are spliced into statements: keep them to `[a-z0-9_]`.
fn check_schema_name(schema: &str) -> Result<(), StoreError> {
    let plain = !schema.is_empty()
        && schema
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    match plain {
        true => Ok(()),
        false => Err(StoreError::Refused(format!(
            "schema name `{schema}`: use lowercase letters, digits and `_` only"
        ))),
    }
}

/// Drops `schema` and everything in it.
pub fn drop_schema(client: &mut Client, schema: &str) -> Result<(), StoreError> {
    check_schema_name(schema)?;
    client.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))?;
    Ok(())
}

/// Prepared statements of one connection, by text (a handful: a list is enough).
#[derive(Default)]
struct Prepared {
    statements: Vec<(String, Statement)>,
}

impl Prepared {
    fn get(&mut self, client: &mut Client, text: &str) -> Result<Statement, StoreError> {
        if let Some((_, statement)) = self.statements.iter().find(|(t, _)| t == text) {
            return Ok(statement.clone());
        }
        let statement = client.prepare(text)?;
        self.statements.push((text.to_string(), statement.clone()));
        Ok(statement)
    }
}
