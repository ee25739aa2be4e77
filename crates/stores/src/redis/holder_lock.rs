//! The holder-lock system's claim on Redis (design 004).
//!
//! Terminology:
//! - *claim*: a key written only if absent, with a lifetime: `SET key token NX PX lifetime`.
//!   Redis forgets it when the lifetime ends, on its own clock ([`StoreClock::Own`]).
//! - *holder token*: the value written with the claim, as a decimal string.
//! - *compare-and-delete*, *compare-and-renew*: Lua scripts ([`DELETE_IF_HOLDER`],
//!   [`RENEW_IF_HOLDER`]) that read the key and act only if it still holds the token, as one
//!   step: no other client's command runs between the read and the write.
//! - *two-step release*: a store set up without compare-and-delete answers `Unsupported` to
//!   `delete_if_holder`; what remains is `GET` then `DEL`
//!   ([`crate::holder_lock::get_then_delete`]), with a gap in which another claim can be
//!   written and then deleted by name. It is here to show that gap, not to be copied.
//!
//! Every script answers with a number: 1 done, 0 the key is absent, 2 the key holds another
//! token.
//! - *observed call*: [`RedisConnection::observe`] runs each request as one script that also
//!   answers what the key held when the request ran (its token), read in the same step; a
//!   real run records those facts, which plain `SET NX` does not give. They are the
//!   reference statements with a `GET` in front; the answers they give are the same.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ::redis::{Client, Connection};
use leasesim_holder_lock::events::{Answer, Key, Request};

use crate::StoreError;
use crate::holder_lock::{
    ClaimConnection, ClaimSetup, ClaimState, ClaimStoreKind, KeyState, StoreClock,
};

/// Compare-and-renew: `KEYS[1]` the claim, `ARGV[1]` the holder token, `ARGV[2]` the new
/// lifetime in ms. Starts the lifetime again only while the key holds the token.
pub const RENEW_IF_HOLDER: &str = "
local held = redis.call('GET', KEYS[1])
if not held then return 0 end
if held ~= ARGV[1] then return 2 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1";

/// Compare-and-delete: `KEYS[1]` the claim, `ARGV[1]` the holder token. Deletes the key only
/// while it holds the token.
pub const DELETE_IF_HOLDER: &str = "
local held = redis.call('GET', KEYS[1])
if not held then return 0 end
if held ~= ARGV[1] then return 2 end
redis.call('DEL', KEYS[1])
return 1";

/// What every key holds and has left, read in one step: per key, its value ('' if absent)
/// and `PTTL` (-2 if absent).
pub const STATE: &str = "
local out = {}
for i, key in ipairs(KEYS) do
  out[2 * i - 1] = redis.call('GET', key) or ''
  out[2 * i] = redis.call('PTTL', key)
end
return out";

/// Observed create: `SET NX PX` with the value it found. Answers `{1, ''}` when it wrote
/// the claim, `{0, held}` when the key held a live token.
pub const CREATE_OBSERVED: &str = "
local held = redis.call('GET', KEYS[1])
if held then return {0, held} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {1, ''}";

/// Observed compare-and-renew: `{1, token}` renewed, `{0, ''}` absent, `{2, held}` another
/// token.
pub const RENEW_OBSERVED: &str = "
local held = redis.call('GET', KEYS[1])
if not held then return {0, ''} end
if held ~= ARGV[1] then return {2, held} end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, held}";

/// Observed compare-and-delete: `{1, token}` deleted, `{0, ''}` absent, `{2, held}` another
/// token.
pub const DELETE_IF_HOLDER_OBSERVED: &str = "
local held = redis.call('GET', KEYS[1])
if not held then return {0, ''} end
if held ~= ARGV[1] then return {2, held} end
redis.call('DEL', KEYS[1])
return {1, held}";

/// Observed delete by name: `{1, removed}` or `{0, ''}`.
pub const DELETE_OBSERVED: &str = "
local held = redis.call('GET', KEYS[1])
if not held then return {0, ''} end
redis.call('DEL', KEYS[1])
return {1, held}";

/// Observed write: `{1, replaced}` (`''`: nothing live was replaced).
pub const SET_OBSERVED: &str = "
local held = redis.call('GET', KEYS[1]) or ''
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {1, held}";

/// Observed read: `{1, held}` or `{0, ''}`.
pub const GET_OBSERVED: &str = "
local held = redis.call('GET', KEYS[1])
if not held then return {0, ''} end
return {1, held}";

/// What an observed call did: the worker's answer, and the token the key held when the call
/// ran (before it changed anything), if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Observed {
    pub answer: Answer,
    pub held: Option<u64>,
}

/// The scripts an adapter runs: the reference ones by default; a test may plant a bug in
/// one and watch conformance catch it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scripts {
    pub renew_if_holder: String,
    pub delete_if_holder: String,
}

impl Default for Scripts {
    fn default() -> Scripts {
        Scripts {
            renew_if_holder: RENEW_IF_HOLDER.into(),
            delete_if_holder: DELETE_IF_HOLDER.into(),
        }
    }
}

/// Redis as a kind of claim store: every `open` makes a fresh namespace on the server.
#[derive(Debug)]
pub struct RedisStore {
    client: Client,
    pub scripts: Arc<Scripts>,
}

/// Process-wide count of the stores opened: names each one's namespace, also when tests
/// open stores on several threads at once (a count per `RedisStore` let two tests of one
/// process share a namespace and see each other's keys).
static OPENED: AtomicU64 = AtomicU64::new(0);

impl RedisStore {
    /// A store kind on the server at `url`, with the reference scripts.
    pub fn connect(url: &str) -> Result<RedisStore, StoreError> {
        let client = super::client(url)?;
        // Fail here, with the URL, rather than at the first case.
        client
            .get_connection()
            .map_err(|error| StoreError::Refused(format!("Redis at {url:?}: {error}")))?;
        Ok(RedisStore {
            client,
            scripts: Arc::default(),
        })
    }

    /// The same store kind running `scripts` instead of the reference ones.
    pub fn with_scripts(mut self, scripts: Scripts) -> RedisStore {
        self.scripts = Arc::new(scripts);
        self
    }

    /// A fresh namespace, unique on the server while this process runs.
    fn namespace(&self) -> String {
        let number = OPENED.fetch_add(1, Ordering::Relaxed);
        format!("leasesim:{}:{number}:", std::process::id())
    }
}

impl ClaimStoreKind for RedisStore {
    type Connection = RedisConnection;

    /// Redis decides expiry; a conformance case takes far less than 5 s of wall time.
    fn clock(&self) -> StoreClock {
        StoreClock::Own { slack_ms: 5_000 }
    }

    fn open(
        &mut self,
        setup: &ClaimSetup,
        callers: usize,
    ) -> Result<Vec<RedisConnection>, StoreError> {
        let prefix = self.namespace();
        self.open_in(&prefix, setup, callers)
    }
}

impl RedisStore {
    /// `callers` connections to the store in the namespace `prefix` (a real run names its
    /// own). Whatever the namespace held stays: a caller that wants a fresh store deletes
    /// [`Key::ALL`] first.
    pub fn open_in(
        &self,
        prefix: &str,
        setup: &ClaimSetup,
        callers: usize,
    ) -> Result<Vec<RedisConnection>, StoreError> {
        (0..callers)
            .map(|_| {
                Ok(RedisConnection {
                    connection: self.client.get_connection()?,
                    prefix: prefix.to_string(),
                    scripts: self.scripts.clone(),
                    compare_and_delete: setup.compare_and_delete,
                })
            })
            .collect()
    }
}

/// One caller's connection to a Redis claim store.
pub struct RedisConnection {
    connection: Connection,
    prefix: String,
    scripts: Arc<Scripts>,
    compare_and_delete: bool,
}

impl std::fmt::Debug for RedisConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisConnection")
            .field("prefix", &self.prefix)
            .field("compare_and_delete", &self.compare_and_delete)
            .finish_non_exhaustive()
    }
}

/// A script's answer as the worker receives it.
fn scripted(code: i64, done: Answer) -> Result<Answer, StoreError> {
    match code {
        1 => Ok(done),
        0 => Ok(Answer::Absent),
        2 => Ok(Answer::NotHolder),
        other => Err(StoreError::Refused(format!(
            "the script answered {other}, not 0, 1 or 2"
        ))),
    }
}

/// A stored value as a holder token.
fn token_of(value: &str) -> Result<u64, StoreError> {
    value
        .parse()
        .map_err(|_| StoreError::Refused(format!("the key holds {value:?}, not a token")))
}

impl RedisConnection {
    /// The server's name of `key` in this store's namespace.
    pub fn key_name(&self, key: Key) -> String {
        format!("{}{}", self.prefix, key.name())
    }

    fn eval(
        &mut self,
        script: &str,
        key: Key,
        token: u64,
        extra: Option<u64>,
    ) -> Result<i64, StoreError> {
        let mut command = ::redis::cmd("EVAL");
        command
            .arg(script)
            .arg(1)
            .arg(self.key_name(key))
            .arg(token.to_string());
        if let Some(extra) = extra {
            command.arg(extra);
        }
        Ok(command.query(&mut self.connection)?)
    }

    fn set(
        &mut self,
        key: Key,
        token: u64,
        lifetime_ms: u64,
        only_if_absent: bool,
    ) -> Result<bool, StoreError> {
        let mut command = ::redis::cmd("SET");
        command.arg(self.key_name(key)).arg(token.to_string());
        if only_if_absent {
            command.arg("NX");
        }
        command.arg("PX").arg(lifetime_ms);
        // `OK` when written; nil when `NX` found the key present.
        let reply: Option<String> = command.query(&mut self.connection)?;
        Ok(reply.is_some())
    }
}

impl RedisConnection {
    /// Runs `request` as one observed script (see the module docs): the answer the worker
    /// receives and what the key held when it ran. A store set up without compare-and-delete
    /// answers `Unsupported` to `delete_if_holder` without sending anything.
    pub fn observe(&mut self, request: Request) -> Result<Observed, StoreError> {
        let (script, done, token, lifetime_ms) = match request {
            Request::Create {
                token, lifetime_ms, ..
            } => (
                CREATE_OBSERVED,
                Answer::Created,
                Some(token),
                Some(lifetime_ms),
            ),
            Request::Renew {
                token, lifetime_ms, ..
            } => (
                RENEW_OBSERVED,
                Answer::Renewed,
                Some(token),
                Some(lifetime_ms),
            ),
            Request::DeleteIfHolder { .. } if !self.compare_and_delete => {
                let answer = Answer::Unsupported;
                return Ok(Observed { answer, held: None });
            }
            Request::DeleteIfHolder { token, .. } => (
                DELETE_IF_HOLDER_OBSERVED,
                Answer::Deleted,
                Some(token),
                None,
            ),
            Request::Get { .. } => (GET_OBSERVED, Answer::Absent, None, None),
            Request::Delete { .. } => (DELETE_OBSERVED, Answer::Deleted, None, None),
            Request::Set {
                token, lifetime_ms, ..
            } => (
                SET_OBSERVED,
                Answer::Written,
                Some(token),
                Some(lifetime_ms),
            ),
        };
        let mut command = ::redis::cmd("EVAL");
        command.arg(script).arg(1).arg(self.key_name(request.key()));
        if let Some(token) = token {
            command.arg(token.to_string());
        }
        if let Some(lifetime_ms) = lifetime_ms {
            command.arg(lifetime_ms);
        }
        let (code, value): (i64, String) = command.query(&mut self.connection)?;
        let held = match value.is_empty() {
            true => None,
            false => Some(token_of(&value)?),
        };
        let answer = match (request, code, held) {
            (Request::Get { .. }, 1, Some(token)) => Answer::Value(token),
            (Request::Create { .. }, 0, _) => Answer::Exists,
            (Request::Set { .. }, 1, _) => Answer::Written,
            _ => scripted(code, done)?,
        };
        Ok(Observed { answer, held })
    }
}

impl ClaimConnection for RedisConnection {
    /// `now_ms` is ignored: Redis runs lifetimes on its own clock.
    fn apply(&mut self, request: Request, _now_ms: u64) -> Result<Answer, StoreError> {
        match request {
            Request::Create {
                key,
                token,
                lifetime_ms,
            } => {
                let created = self.set(key, token, lifetime_ms, true)?;
                Ok(if created {
                    Answer::Created
                } else {
                    Answer::Exists
                })
            }
            Request::Renew {
                key,
                token,
                lifetime_ms,
            } => {
                let script = self.scripts.renew_if_holder.clone();
                let code = self.eval(&script, key, token, Some(lifetime_ms))?;
                scripted(code, Answer::Renewed)
            }
            Request::DeleteIfHolder { key, token } => {
                if !self.compare_and_delete {
                    return Ok(Answer::Unsupported);
                }
                let script = self.scripts.delete_if_holder.clone();
                let code = self.eval(&script, key, token, None)?;
                scripted(code, Answer::Deleted)
            }
            Request::Get { key } => {
                let value: Option<String> = ::redis::cmd("GET")
                    .arg(self.key_name(key))
                    .query(&mut self.connection)?;
                Ok(match value {
                    Some(value) => Answer::Value(token_of(&value)?),
                    None => Answer::Absent,
                })
            }
            Request::Delete { key } => {
                let removed: i64 = ::redis::cmd("DEL")
                    .arg(self.key_name(key))
                    .query(&mut self.connection)?;
                Ok(if removed > 0 {
                    Answer::Deleted
                } else {
                    Answer::Absent
                })
            }
            Request::Set {
                key,
                token,
                lifetime_ms,
            } => {
                self.set(key, token, lifetime_ms, false)?;
                Ok(Answer::Written)
            }
        }
    }

    fn state(&mut self, _now_ms: u64) -> Result<ClaimState, StoreError> {
        let mut command = ::redis::cmd("EVAL");
        command.arg(STATE).arg(Key::ALL.len());
        for key in Key::ALL {
            command.arg(self.key_name(key));
        }
        let (claim, claim_ms, holder, holder_ms): (String, i64, String, i64) =
            command.query(&mut self.connection)?;
        let read = |value: &str, pttl_ms: i64| -> Result<Option<KeyState>, StoreError> {
            if value.is_empty() {
                return Ok(None);
            }
            // A key without a lifetime (`PTTL` -1) would live for ever: no claim does.
            let remaining_ms = u64::try_from(pttl_ms).map_err(|_| {
                StoreError::Refused(format!("the key holds {value:?} without a lifetime"))
            })?;
            Ok(Some(KeyState {
                token: token_of(value)?,
                remaining_ms,
            }))
        };
        Ok(ClaimState {
            keys: [read(&claim, claim_ms)?, read(&holder, holder_ms)?],
        })
    }
}
