//! Conformance of a retention store: the lease authority and the record store against the
//! simulated model ([`leasesim_stores::retention::Model`]).
//!
//! Terminology:
//! - *operation*: what a case asks of the store ([`Op`]): acquire, renew, release and delete
//!   by a caller, a revocation, or time advancing. Tokens are *picked*, not written
//!   ([`TokenPick`]): "the caller's latest", "its previous one", "the live lease's", "the
//!   next one, never handed out yet", "one handed out earlier", resolved when the step runs,
//!   so a shrunk sequence keeps its meaning when steps before it are removed.
//! - *callers*: `r1`, `r2`, ... each with a connection of its own to one store; the drawn
//!   sequence interleaves them (one operation at a time: the interleaving of concurrent
//!   callers, not their simultaneity, which `leasesim real` exercises).
//! - *book*: what the driver knows while a case runs: the tokens each caller received, and
//!   every token handed out, read from the model's answers.
//!
//! ```no_run
//! use leasesim_conformance::{Config, retention};
//! # fn my_store() -> leasesim_stores::retention::Model { leasesim_stores::retention::Model }
//! // `my_store()`: your type implementing `RetentionStore` (it opens fresh stores).
//! let report = retention::check(&mut my_store(), &Config::default()).unwrap_or_else(|m| panic!("{m}"));
//! println!("{report}");
//! ```

use std::cell::{Cell, RefCell};
use std::fmt;

use leasesim_retention::events::Applied;
use leasesim_stores::StoreError;
use leasesim_stores::retention::{
    Model, RetentionConnection, RetentionState, RetentionStore, Setup, StoreConfig,
};
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestError};

use crate::{Config, Mismatch, Report};

/// The store's time when a case starts; steps only move it forward.
pub const START_MS: u64 = 1_000;

/// Which token an operation shows, resolved when the step runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenPick {
    /// The newest token the caller received (0 if none).
    Latest,
    /// The one the caller received before its newest (its newest if it has one only).
    Previous,
    /// The live lease's token, whoever holds it (the last handed out if none is live).
    Current,
    /// The next token, not handed out yet.
    Next,
    /// A token handed out earlier, the `n`-th modulo how many there are.
    Issued(u8),
}

/// One step of a case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Acquire {
        caller: u8,
    },
    Renew {
        caller: u8,
        token: TokenPick,
    },
    Release {
        caller: u8,
        token: TokenPick,
    },
    Delete {
        caller: u8,
        token: TokenPick,
        older_than_ms: u64,
        limit: u32,
    },
    /// The authority drops the live lease (a fault).
    Revoke,
    /// The store's time moves forward.
    Advance {
        ms: u64,
    },
}

/// One drawn case: a fresh store and the operations applied to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    pub setup: Setup,
    pub ops: Vec<Op>,
}

fn token_pick() -> impl Strategy<Value = TokenPick> {
    prop_oneof![
        4 => Just(TokenPick::Latest),
        2 => Just(TokenPick::Previous),
        2 => Just(TokenPick::Current),
        1 => Just(TokenPick::Next),
        1 => any::<u8>().prop_map(TokenPick::Issued),
    ]
}

fn op(callers: u8) -> impl Strategy<Value = Op> {
    let caller = 0..callers.max(1);
    prop_oneof![
        3 => caller.clone().prop_map(|caller| Op::Acquire { caller }),
        3 => (caller.clone(), token_pick()).prop_map(|(caller, token)| Op::Renew { caller, token }),
        2 => (caller.clone(), token_pick()).prop_map(|(caller, token)| Op::Release { caller, token }),
        4 => (caller, token_pick(), 900..1_300u64, 0..7u32).prop_map(
            |(caller, token, older_than_ms, limit)| Op::Delete { caller, token, older_than_ms, limit }
        ),
        1 => Just(Op::Revoke),
        3 => prop_oneof![0..4u64, 0..30u64].prop_map(|ms| Op::Advance { ms }),
    ]
}

fn setup() -> impl Strategy<Value = Setup> {
    let config = (1..20u64, any::<bool>(), prop::bool::weighted(0.8)).prop_map(
        |(ttl_ms, exact_token, fencing)| StoreConfig {
            ttl_ms,
            exact_token,
            fencing,
        },
    );
    let rows = prop::collection::vec(900..1_200u64, 0..12);
    (config, rows).prop_map(|(config, rows_created_ms)| Setup {
        config,
        rows_created_ms,
    })
}

/// The cases a driver draws: setups with short-lived leases (1-19 ms) and rows around the
/// start, and sequences of up to `config.max_steps` operations by `config.callers` callers.
pub fn cases(config: &Config) -> impl Strategy<Value = Case> + use<> {
    let callers = u8::try_from(config.callers.clamp(1, 16)).expect("at most 16");
    let ops = prop::collection::vec(op(callers), 1..=config.max_steps.max(1));
    (setup(), ops).prop_map(|(setup, ops)| Case { setup, ops })
}

/// Runs `config.cases` drawn cases on `store` and on the model: `Ok` with what was checked,
/// or the first mismatch, shrunk.
pub fn check<S: RetentionStore>(store: &mut S, config: &Config) -> Result<Report, Mismatch> {
    let started = crate::Stopwatch::start();
    let store = RefCell::new(store);
    let (ran, steps, first_failure) = (Cell::new(0u64), Cell::new(0u64), Cell::new(None));
    let callers = config.callers.clamp(1, 16);
    let outcome = config.runner().run(&cases(config), |case| {
        ran.set(ran.get() + 1);
        match run_case(&mut **store.borrow_mut(), &case, callers) {
            Ok(done) => {
                steps.set(steps.get() + done);
                Ok(())
            }
            Err(failure) => {
                if first_failure.get().is_none() {
                    first_failure.set(Some(ran.get() - 1));
                }
                Err(TestCaseError::fail(failure.difference))
            }
        }
    });
    match outcome {
        Ok(()) => Ok(Report {
            cases: ran.get(),
            steps: steps.get(),
            elapsed: started.elapsed(),
        }),
        Err(TestError::Fail(_, minimal)) => {
            let failure = run_case(&mut **store.borrow_mut(), &minimal, callers)
                .err()
                .unwrap_or_else(|| CaseFailure {
                    steps: Vec::new(),
                    difference: "the shrunk case passed when run again: the store is not \
                                 deterministic for a given sequence"
                        .into(),
                });
            Err(Mismatch {
                setup: describe_setup(&minimal.setup),
                steps: failure.steps,
                difference: failure.difference,
                cases_before: first_failure.get().unwrap_or(0),
            })
        }
        Err(TestError::Abort(why)) => Err(Mismatch {
            setup: String::new(),
            steps: Vec::new(),
            difference: format!("the driver gave up: {why}"),
            cases_before: ran.get(),
        }),
    }
}

/// The setup, in words.
pub fn describe_setup(setup: &Setup) -> String {
    let config = &setup.config;
    let mut rows = setup.rows_created_ms.clone();
    rows.sort_unstable();
    format!(
        "ttl {}ms, renew by {}, fencing {}, start t={START_MS}, rows created at {rows:?}",
        config.ttl_ms,
        if config.exact_token {
            "exact token"
        } else {
            "owner"
        },
        if config.fencing { "on" } else { "off" },
    )
}

/// Why a case failed: its steps up to the mismatch, and what differed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseFailure {
    pub steps: Vec<String>,
    pub difference: String,
}

/// What the driver knows while a case runs.
#[derive(Debug, Default)]
struct Book {
    /// Per caller, the tokens it received, oldest first.
    received: Vec<Vec<u64>>,
    /// Every token handed out, oldest first.
    issued: Vec<u64>,
}

impl Book {
    fn resolve(&self, caller: usize, pick: TokenPick, model: &RetentionState) -> u64 {
        let mine = &self.received[caller % self.received.len()];
        match pick {
            TokenPick::Latest => mine.last().copied().unwrap_or(0),
            TokenPick::Previous => mine
                .iter()
                .rev()
                .nth(1)
                .or(mine.last())
                .copied()
                .unwrap_or(0),
            TokenPick::Current => model
                .live
                .as_ref()
                .map_or(model.last_token, |held| held.token),
            TokenPick::Next => model.last_token + 1,
            TokenPick::Issued(n) => match self.issued.len() {
                0 => 0,
                len => self.issued[usize::from(n) % len],
            },
        }
    }

    fn learn(&mut self, caller: usize, applied: &Applied) {
        if let Applied::Granted { lease, .. } | Applied::Renewed { lease } = applied {
            // invariant: tokens are handed out in increasing order.
            debug_assert!(self.issued.last().is_none_or(|last| *last < lease.token));
            self.received[caller].push(lease.token);
            self.issued.push(lease.token);
        }
    }
}

/// A resolved call, as both sides receive it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Call {
    Acquire,
    Renew {
        token: u64,
    },
    Release {
        token: u64,
    },
    Delete {
        older_than_ms: u64,
        limit: u32,
        token: u64,
    },
    Revoke,
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Call::Acquire => write!(f, "acquire"),
            Call::Renew { token } => write!(f, "renew token={token}"),
            Call::Release { token } => write!(f, "release token={token}"),
            Call::Delete {
                older_than_ms,
                limit,
                token,
            } => write!(
                f,
                "delete_batch older_than={older_than_ms} limit={limit} token={token}"
            ),
            Call::Revoke => write!(f, "revoke"),
        }
    }
}

/// What one side answered to a call.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    Applied(Applied),
    Revoked(Option<u64>),
}

fn call_on<C: RetentionConnection + ?Sized>(
    connection: &mut C,
    owner_id: &str,
    call: Call,
    now_ms: u64,
) -> Result<Outcome, StoreError> {
    Ok(match call {
        Call::Acquire => Outcome::Applied(connection.acquire(owner_id, now_ms)?),
        Call::Renew { token } => Outcome::Applied(connection.renew(owner_id, token, now_ms)?),
        Call::Release { token } => Outcome::Applied(connection.release(owner_id, token, now_ms)?),
        Call::Delete {
            older_than_ms,
            limit,
            token,
        } => Outcome::Applied(connection.delete_batch(older_than_ms, limit, token, now_ms)?),
        Call::Revoke => Outcome::Revoked(connection.revoke(now_ms)?),
    })
}

/// Runs one case on a fresh store and a fresh model: the number of steps applied, or the
/// first step where they differ.
pub fn run_case<S: RetentionStore + ?Sized>(
    store: &mut S,
    case: &Case,
    callers: usize,
) -> Result<u64, CaseFailure> {
    let mut lines = Vec::new();
    let fail = |lines: &mut Vec<String>, difference: String| CaseFailure {
        steps: std::mem::take(lines),
        difference,
    };
    let mut model = Model
        .open(&case.setup, callers)
        .expect("the model always opens");
    let mut real = open_store(store, &case.setup, callers).map_err(|why| fail(&mut lines, why))?;
    let mut book = Book {
        received: vec![Vec::new(); callers],
        issued: Vec::new(),
    };
    let mut now_ms = START_MS;
    for (index, op) in case.ops.iter().enumerate() {
        let before = model[0].state(now_ms).expect("the model always answers");
        let Some((caller, call)) = resolve(*op, &book, &before) else {
            let Op::Advance { ms } = *op else {
                unreachable!("only a time step resolves to no call")
            };
            now_ms += ms;
            lines.push(format!(
                "{:>2}. t={now_ms} (time advances {ms}ms)",
                index + 1
            ));
            compare_state(&mut model[0], &mut real[0], now_ms)
                .map_err(|why| fail(&mut lines, why))?;
            continue;
        };
        let caller = caller % callers;
        let step = Step {
            number: index + 1,
            // A revocation is the authority's own doing, not a caller's.
            owner_id: match call {
                Call::Revoke => "authority".into(),
                _ => format!("r{}", caller + 1),
            },
            call,
            now_ms,
        };
        let applied = step
            .compare(&mut model[caller], &mut real[caller], &mut lines)
            .map_err(|why| fail(&mut lines, why))?;
        if let Outcome::Applied(applied) = &applied {
            book.learn(caller, applied);
        }
        compare_state(&mut model[0], &mut real[caller], now_ms)
            .map_err(|why| fail(&mut lines, format!("after step {}: {why}", index + 1)))?;
    }
    Ok(case.ops.len() as u64)
}

/// A fresh store with `callers` connections, or why not.
fn open_store<S: RetentionStore + ?Sized>(
    store: &mut S,
    setup: &Setup,
    callers: usize,
) -> Result<Vec<S::Connection>, String> {
    match store.open(setup, callers) {
        Ok(real) if real.len() == callers => Ok(real),
        Ok(real) => Err(format!(
            "the store opened {} connections, not {callers}",
            real.len()
        )),
        Err(error) => Err(format!("the store failed to open: {error}")),
    }
}

/// One resolved step of a case.
struct Step {
    number: usize,
    owner_id: String,
    call: Call,
    now_ms: u64,
}

impl Step {
    /// Applies the step to both sides and appends its line: the model's answer, or why the
    /// store's differs.
    fn compare<M, R>(
        &self,
        model: &mut M,
        real: &mut R,
        lines: &mut Vec<String>,
    ) -> Result<Outcome, String>
    where
        M: RetentionConnection + ?Sized,
        R: RetentionConnection + ?Sized,
    {
        let Step {
            number,
            owner_id,
            call,
            now_ms,
        } = self;
        let expected = call_on(model, owner_id, *call, *now_ms).expect("the model always answers");
        let head = format!("{number:>2}. t={now_ms} {owner_id} {call}");
        let place = format!("step {number} ({owner_id} {call} at t={now_ms})");
        match call_on(real, owner_id, *call, *now_ms) {
            Ok(got) if got == expected => {
                lines.push(format!("{head} -> {expected:?}"));
                Ok(expected)
            }
            Ok(got) => {
                lines.push(format!("{head} -> model {expected:?} | store {got:?}"));
                Err(format!(
                    "{place}: the model answered {expected:?}, the store {got:?}"
                ))
            }
            Err(error) => {
                lines.push(format!(
                    "{head} -> model {expected:?} | store failed: {error}"
                ));
                Err(format!("{place}: the store failed: {error}"))
            }
        }
    }
}

/// The caller and the concrete call of `op`, its tokens picked from what the callers hold now
/// (`None`: a time step).
fn resolve(op: Op, book: &Book, model: &RetentionState) -> Option<(usize, Call)> {
    let pick = |caller: u8, token| book.resolve(usize::from(caller), token, model);
    let resolved = match op {
        Op::Advance { .. } => return None,
        Op::Acquire { caller } => (caller, Call::Acquire),
        Op::Renew { caller, token } => (
            caller,
            Call::Renew {
                token: pick(caller, token),
            },
        ),
        Op::Release { caller, token } => (
            caller,
            Call::Release {
                token: pick(caller, token),
            },
        ),
        Op::Delete {
            caller,
            token,
            older_than_ms,
            limit,
        } => {
            let token = pick(caller, token);
            let call = Call::Delete {
                older_than_ms,
                limit,
                token,
            };
            (caller, call)
        }
        Op::Revoke => (0, Call::Revoke),
    };
    Some((usize::from(resolved.0), resolved.1))
}

/// Compares what the model and the store hold at `now_ms`.
fn compare_state<M, R>(model: &mut M, real: &mut R, now_ms: u64) -> Result<(), String>
where
    M: RetentionConnection + ?Sized,
    R: RetentionConnection + ?Sized,
{
    let expected = model.state(now_ms).expect("the model always answers");
    match real.state(now_ms) {
        Ok(got) if got == expected => Ok(()),
        Ok(got) => Err(format!(
            "at t={now_ms} the model holds {expected:?}, the store {got:?}"
        )),
        Err(error) => Err(format!(
            "at t={now_ms} the store failed to read its state: {error}"
        )),
    }
}
