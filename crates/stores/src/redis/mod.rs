//! Redis adapters, through the `redis` crate (its blocking connection): the holder-lock
//! system's claim. Built only with the feature `redis`.
//!
//! Terminology:
//! - *server URL*: `redis://127.0.0.1:6379/`; tests read it from `LEASESIM_REDIS_URL`.
//! - *namespace*: every store lives under a key prefix of its own
//!   (`leasesim:<process>:<n>:`), so tests and runs on one server never see each other's
//!   keys; every key written has a lifetime, so nothing is left behind for long.
//! - *script*: a Lua script run with `EVAL`: Redis runs it as one step, with no other
//!   command between its read and its write. That is what makes compare-and-delete and
//!   compare-and-renew atomic here.

pub mod holder_lock;

use crate::StoreError;

/// The environment variable naming the server for tests and `leasesim real`.
pub const URL_VAR: &str = "LEASESIM_REDIS_URL";

impl From<::redis::RedisError> for StoreError {
    fn from(error: ::redis::RedisError) -> StoreError {
        if error.is_io_error() || error.is_connection_dropped() || error.is_timeout() {
            // The command may have reached the server before the connection failed.
            StoreError::Unknown(format!("Redis: {error}"))
        } else {
            // The server answered with an error: the command did nothing.
            StoreError::Refused(format!("Redis: {error}"))
        }
    }
}

/// A client for the server at `url` (nothing is sent until a connection is made).
pub fn client(url: &str) -> Result<::redis::Client, StoreError> {
    ::redis::Client::open(url)
        .map_err(|error| StoreError::Refused(format!("Redis URL {url:?}: {error}")))
}
