//! Conformance of a claim store: the holder-lock system's volatile key-value store against
//! the simulated model ([`leasesim_stores::holder_lock::ClaimModel`]).
//!
//! Terminology:
//! - *operation*: what a case asks of the store ([`Op`]): a conditional create, a
//!   compare-and-renew, a compare-and-delete, a read, a delete by name, a blind write, the
//!   two-step release (read, then delete by name), or time advancing. Tokens are *picked*
//!   ([`TokenPick`]) and resolved when the step runs.
//! - *callers*: `r1`, `r2`, ... each with a connection of its own to one store.
//! - *book*: the tokens each caller wrote, and the next fresh token.
//! - *time*: on a store that takes `now_ms` ([`StoreClock::Given`]) cases draw short
//!   lifetimes (1-20 ms) and time steps, so claims run out mid-case, exactly where the case
//!   says. On a store with its own clock ([`StoreClock::Own`], Redis) time stands still:
//!   lifetimes are whole multiples of 10 s and nothing runs out during a case; the state's
//!   remaining lifetimes may fall short of the model's by the store's slack (less than 10 s,
//!   so a renewal that did not restart a lifetime still shows). Expiry itself is tested
//!   apart, by [`check_expiry`], with margins that cannot flake.
//!
//! ```no_run
//! use leasesim_conformance::{Config, holder_lock};
//! use leasesim_stores::StoreError;
//! use leasesim_stores::holder_lock::{
//!     Answer, ClaimConnection, ClaimSetup, ClaimState, ClaimStoreKind, Request, StoreClock,
//! };
//!
//! struct MyStore;
//! struct MyConnection;
//!
//! impl ClaimStoreKind for MyStore {
//!     type Connection = MyConnection;
//!     fn clock(&self) -> StoreClock {
//!         StoreClock::Own { slack_ms: 5_000 }
//!     }
//!     fn open(&mut self, _: &ClaimSetup, _: usize) -> Result<Vec<MyConnection>, StoreError> {
//!         todo!("a fresh, empty store and one connection per caller")
//!     }
//! }
//!
//! impl ClaimConnection for MyConnection {
//!     fn apply(&mut self, _: Request, _now_ms: u64) -> Result<Answer, StoreError> {
//!         todo!()
//!     }
//!     fn state(&mut self, _now_ms: u64) -> Result<ClaimState, StoreError> {
//!         todo!()
//!     }
//! }
//!
//! let report = holder_lock::check(&mut MyStore, &Config::default().with_env())
//!     .unwrap_or_else(|mismatch| panic!("{mismatch}"));
//! holder_lock::check_expiry(&mut MyStore).unwrap_or_else(|mismatch| panic!("{mismatch}"));
//! println!("{report}");
//! ```

use std::cell::{Cell, RefCell};
use std::fmt;

use leasesim_holder_lock::events::{Answer, Key, Request};
use leasesim_stores::StoreError;
use leasesim_stores::holder_lock::{
    ClaimConnection, ClaimModel, ClaimSetup, ClaimState, ClaimStoreKind, StoreClock,
    get_then_delete,
};
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestError};

use crate::{Config, Mismatch, Report};

/// The store's time when a case starts; steps only move it forward.
pub const START_MS: u64 = 1_000;

/// Which token an operation shows or writes, resolved when the step runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenPick {
    /// A token nobody wrote yet (what a correct attempt writes).
    Fresh,
    /// The newest token the caller wrote (a fresh one if none).
    Mine,
    /// The one the caller wrote before its newest (its newest if it wrote one only).
    MinePrevious,
    /// What the key holds now, by the model (a fresh one if nothing).
    Held,
    /// A token written earlier by anyone, the `n`-th modulo how many there are.
    Written(u8),
}

/// One step of a case. `life` picks a lifetime (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Create {
        caller: u8,
        key: Key,
        token: TokenPick,
        life: u8,
    },
    Renew {
        caller: u8,
        key: Key,
        token: TokenPick,
        life: u8,
    },
    DeleteIfHolder {
        caller: u8,
        key: Key,
        token: TokenPick,
    },
    Get {
        caller: u8,
        key: Key,
    },
    Delete {
        caller: u8,
        key: Key,
    },
    Set {
        caller: u8,
        key: Key,
        token: TokenPick,
        life: u8,
    },
    /// The two-step release: a read, then a delete by name if it held the token.
    GetThenDelete {
        caller: u8,
        key: Key,
        token: TokenPick,
    },
    /// The store's time moves forward (drawn only for a store that takes `now_ms`).
    Advance {
        ms: u64,
    },
}

/// One drawn case: a fresh store and the operations applied to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    pub setup: ClaimSetup,
    pub ops: Vec<Op>,
}

fn token_pick(written: TokenPick) -> impl Strategy<Value = TokenPick> {
    prop_oneof![
        3 => Just(written),
        3 => Just(TokenPick::Mine),
        1 => Just(TokenPick::MinePrevious),
        2 => Just(TokenPick::Held),
        1 => any::<u8>().prop_map(TokenPick::Written),
    ]
}

fn key() -> impl Strategy<Value = Key> + Clone {
    prop_oneof![4 => Just(Key::Claim), 1 => Just(Key::Holder)]
}

fn op(callers: u8, clock: StoreClock) -> impl Strategy<Value = Op> {
    let who = (0..callers.max(1), key());
    let advance = match clock {
        StoreClock::Given => 3,
        StoreClock::Own { .. } => 0,
    };
    prop_oneof![
        4 => (who.clone(), token_pick(TokenPick::Fresh), any::<u8>())
            .prop_map(|((caller, key), token, life)| Op::Create { caller, key, token, life }),
        3 => (who.clone(), token_pick(TokenPick::Mine), any::<u8>())
            .prop_map(|((caller, key), token, life)| Op::Renew { caller, key, token, life }),
        3 => (who.clone(), token_pick(TokenPick::Mine))
            .prop_map(|((caller, key), token)| Op::DeleteIfHolder { caller, key, token }),
        1 => who.clone().prop_map(|(caller, key)| Op::Get { caller, key }),
        1 => who.clone().prop_map(|(caller, key)| Op::Delete { caller, key }),
        1 => (who.clone(), token_pick(TokenPick::Fresh), any::<u8>())
            .prop_map(|((caller, key), token, life)| Op::Set { caller, key, token, life }),
        2 => (who, token_pick(TokenPick::Mine))
            .prop_map(|((caller, key), token)| Op::GetThenDelete { caller, key, token }),
        advance => prop_oneof![0..5u64, 0..25u64].prop_map(|ms| Op::Advance { ms }),
    ]
}

/// The cases a driver draws for a store on `clock`: setups with and without
/// compare-and-delete, and sequences of up to `config.max_steps` operations by
/// `config.callers` callers.
pub fn cases(config: &Config, clock: StoreClock) -> impl Strategy<Value = Case> + use<> {
    let callers = u8::try_from(config.callers.clamp(1, 16)).expect("at most 16");
    let ops = prop::collection::vec(op(callers, clock), 1..=config.max_steps.max(1));
    let setup =
        prop::bool::weighted(0.75).prop_map(|compare_and_delete| ClaimSetup { compare_and_delete });
    (setup, ops).prop_map(|(setup, ops)| Case { setup, ops })
}

/// The lifetime `life` picks on a store on `clock`.
pub fn lifetime_ms(life: u8, clock: StoreClock) -> u64 {
    match clock {
        StoreClock::Given => 1 + u64::from(life % 20),
        StoreClock::Own { .. } => 10_000 * (1 + u64::from(life % 30)),
    }
}

/// Runs `config.cases` drawn cases on `store` and on the model: `Ok` with what was checked,
/// or the first mismatch, shrunk.
pub fn check<S: ClaimStoreKind>(store: &mut S, config: &Config) -> Result<Report, Mismatch> {
    let started = crate::Stopwatch::start();
    let clock = store.clock();
    let store = RefCell::new(store);
    let (ran, steps, first_failure) = (Cell::new(0u64), Cell::new(0u64), Cell::new(None));
    let last_failure = RefCell::new(None);
    let callers = config.callers.clamp(1, 16);
    let outcome = config.runner().run(&cases(config, clock), |case| {
        ran.set(ran.get() + 1);
        match run_case(&mut **store.borrow_mut(), &case, callers) {
            Ok(done) => {
                steps.set(steps.get() + done);
                Ok(())
            }
            Err(failure) => {
                first_failure.set(first_failure.get().or(Some(ran.get() - 1)));
                let reason = TestCaseError::fail(failure.difference.clone());
                *last_failure.borrow_mut() = Some(failure);
                Err(reason)
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
                .unwrap_or_else(|| {
                    let last = last_failure.take().expect("a failing case was seen");
                    CaseFailure {
                        steps: last.steps,
                        difference: format!(
                            "{} (the shrunk case passed when run again: the store is not \
                             deterministic for a given sequence; these are the steps of the \
                             last failing run)",
                            last.difference
                        ),
                    }
                });
            Err(Mismatch {
                setup: describe_setup(&minimal.setup, clock),
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
pub fn describe_setup(setup: &ClaimSetup, clock: StoreClock) -> String {
    let time = match clock {
        StoreClock::Given => format!("time given from t={START_MS}"),
        StoreClock::Own { slack_ms } => {
            format!("the store's own clock (time stands still, slack {slack_ms}ms)")
        }
    };
    let release = if setup.compare_and_delete {
        "with compare-and-delete"
    } else {
        "without compare-and-delete"
    };
    format!("{release}, {time}")
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
    /// Per caller, the tokens it wrote (created or set), oldest first.
    mine: Vec<Vec<u64>>,
    /// Every token written, oldest first.
    written: Vec<u64>,
    /// The last fresh token handed out (tokens are 1, 2, ...).
    last_fresh: u64,
}

impl Book {
    fn fresh(&mut self) -> u64 {
        self.last_fresh += 1;
        self.last_fresh
    }

    fn resolve(&mut self, caller: usize, key: Key, pick: TokenPick, now: &ClaimState) -> u64 {
        let mine = &self.mine[caller];
        let found = match pick {
            TokenPick::Fresh => None,
            TokenPick::Mine => mine.last().copied(),
            TokenPick::MinePrevious => mine.iter().rev().nth(1).or(mine.last()).copied(),
            TokenPick::Held => now.keys[key.index()].map(|held| held.token),
            TokenPick::Written(n) => match self.written.len() {
                0 => None,
                len => Some(self.written[usize::from(n) % len]),
            },
        };
        found.unwrap_or_else(|| self.fresh())
    }

    fn learn(&mut self, caller: usize, request: Request, answer: Answer) {
        if let (Request::Create { token, .. }, Answer::Created)
        | (Request::Set { token, .. }, Answer::Written) = (request, answer)
        {
            self.mine[caller].push(token);
            self.written.push(token);
        }
    }
}

/// A resolved step: a request, or the two-step release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Call {
    One(Request),
    GetThenDelete { key: Key, token: u64 },
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Call::One(request) => match request {
                Request::Create {
                    key,
                    token,
                    lifetime_ms,
                } => {
                    write!(
                        f,
                        "create {} token={token} lifetime={lifetime_ms}ms",
                        key.name()
                    )
                }
                Request::Renew {
                    key,
                    token,
                    lifetime_ms,
                } => {
                    write!(
                        f,
                        "renew {} token={token} lifetime={lifetime_ms}ms",
                        key.name()
                    )
                }
                Request::DeleteIfHolder { key, token } => {
                    write!(f, "delete_if_holder {} token={token}", key.name())
                }
                Request::Get { key } => write!(f, "get {}", key.name()),
                Request::Delete { key } => write!(f, "delete {}", key.name()),
                Request::Set {
                    key,
                    token,
                    lifetime_ms,
                } => {
                    write!(
                        f,
                        "set {} token={token} lifetime={lifetime_ms}ms",
                        key.name()
                    )
                }
            },
            Call::GetThenDelete { key, token } => {
                write!(f, "get-then-delete {} token={token}", key.name())
            }
        }
    }
}

fn call_on<C: ClaimConnection + ?Sized>(
    connection: &mut C,
    call: Call,
    now_ms: u64,
) -> Result<Answer, StoreError> {
    match call {
        Call::One(request) => connection.apply(request, now_ms),
        Call::GetThenDelete { key, token } => get_then_delete(connection, key, token, now_ms),
    }
}

/// The caller and the call of `op`, its tokens and lifetime resolved now (`None`: a time
/// step).
fn resolve(op: Op, book: &mut Book, now: &ClaimState, clock: StoreClock) -> Option<(u8, Call)> {
    let life = |life: u8| lifetime_ms(life, clock);
    let mut pick = |caller: u8, key, token| book.resolve(usize::from(caller), key, token, now);
    let (caller, request) = match op {
        Op::Advance { .. } => return None,
        Op::GetThenDelete { caller, key, token } => {
            let token = pick(caller, key, token);
            return Some((caller, Call::GetThenDelete { key, token }));
        }
        Op::Create {
            caller,
            key,
            token,
            life: l,
        } => {
            let (token, lifetime_ms) = (pick(caller, key, token), life(l));
            (
                caller,
                Request::Create {
                    key,
                    token,
                    lifetime_ms,
                },
            )
        }
        Op::Renew {
            caller,
            key,
            token,
            life: l,
        } => {
            let (token, lifetime_ms) = (pick(caller, key, token), life(l));
            (
                caller,
                Request::Renew {
                    key,
                    token,
                    lifetime_ms,
                },
            )
        }
        Op::Set {
            caller,
            key,
            token,
            life: l,
        } => {
            let (token, lifetime_ms) = (pick(caller, key, token), life(l));
            (
                caller,
                Request::Set {
                    key,
                    token,
                    lifetime_ms,
                },
            )
        }
        Op::DeleteIfHolder { caller, key, token } => {
            let token = pick(caller, key, token);
            (caller, Request::DeleteIfHolder { key, token })
        }
        Op::Get { caller, key } => (caller, Request::Get { key }),
        Op::Delete { caller, key } => (caller, Request::Delete { key }),
    };
    Some((caller, Call::One(request)))
}

/// Runs one case on a fresh store and a fresh model: the number of steps applied, or the
/// first step where they differ.
pub fn run_case<S: ClaimStoreKind + ?Sized>(
    store: &mut S,
    case: &Case,
    callers: usize,
) -> Result<u64, CaseFailure> {
    let clock = store.clock();
    let mut lines = Vec::new();
    let fail = |lines: &mut Vec<String>, difference: String| CaseFailure {
        steps: std::mem::take(lines),
        difference,
    };
    let mut model = ClaimModel
        .open(&case.setup, callers)
        .expect("the model always opens");
    let mut real = match store.open(&case.setup, callers) {
        Ok(real) if real.len() == callers => real,
        Ok(real) => {
            let why = format!("the store opened {} connections, not {callers}", real.len());
            return Err(fail(&mut lines, why));
        }
        Err(error) => {
            return Err(fail(
                &mut lines,
                format!("the store failed to open: {error}"),
            ));
        }
    };
    let mut book = Book {
        mine: vec![Vec::new(); callers],
        ..Book::default()
    };
    let mut now_ms = START_MS;
    for (index, op) in case.ops.iter().enumerate() {
        let before = model[0].state(now_ms).expect("the model always answers");
        let caller = match resolve(*op, &mut book, &before, clock) {
            None => {
                let Op::Advance { ms } = *op else {
                    unreachable!("only a time step")
                };
                now_ms += ms;
                lines.push(format!(
                    "{:>2}. t={now_ms} (time advances {ms}ms)",
                    index + 1
                ));
                usize::from(0u8)
            }
            Some((caller, call)) => {
                let caller = usize::from(caller) % callers;
                let head = format!("{:>2}. t={now_ms} r{} {call}", index + 1, caller + 1);
                let expected =
                    call_on(&mut model[caller], call, now_ms).expect("the model always answers");
                let got = call_on(&mut real[caller], call, now_ms);
                if let Err(why) = compare_answer(&head, &expected, got, &mut lines) {
                    return Err(fail(&mut lines, format!("step {}: {why}", index + 1)));
                }
                if let Call::One(request) = call {
                    book.learn(caller, request, expected);
                }
                caller
            }
        };
        compare_state(&mut model[0], &mut real[caller], now_ms, clock)
            .map_err(|why| fail(&mut lines, format!("after step {}: {why}", index + 1)))?;
    }
    Ok(case.ops.len() as u64)
}

/// Appends the step's line; `Err` with what differed.
fn compare_answer(
    head: &str,
    expected: &Answer,
    got: Result<Answer, StoreError>,
    lines: &mut Vec<String>,
) -> Result<(), String> {
    match got {
        Ok(got) if got == *expected => {
            lines.push(format!("{head} -> {expected:?}"));
            Ok(())
        }
        Ok(got) => {
            lines.push(format!("{head} -> model {expected:?} | store {got:?}"));
            Err(format!(
                "the model answered {expected:?}, the store {got:?}"
            ))
        }
        Err(error) => {
            lines.push(format!(
                "{head} -> model {expected:?} | store failed: {error}"
            ));
            Err(format!("the store failed: {error}"))
        }
    }
}

/// Do two states agree on a store on `clock`? Tokens exactly; remaining lifetimes exactly,
/// or on a store with its own clock no more than the model's and short of it by at most the
/// slack.
pub fn states_agree(model: &ClaimState, store: &ClaimState, clock: StoreClock) -> bool {
    model.keys.iter().zip(&store.keys).all(|pair| match pair {
        (None, None) => true,
        (Some(expected), Some(got)) => {
            let slack_ms = match clock {
                StoreClock::Given => 0,
                StoreClock::Own { slack_ms } => slack_ms,
            };
            expected.token == got.token
                && got.remaining_ms <= expected.remaining_ms
                && got.remaining_ms + slack_ms >= expected.remaining_ms
        }
        _ => false,
    })
}

/// Compares what the model and the store hold at `now_ms`.
fn compare_state<M, R>(
    model: &mut M,
    real: &mut R,
    now_ms: u64,
    clock: StoreClock,
) -> Result<(), String>
where
    M: ClaimConnection + ?Sized,
    R: ClaimConnection + ?Sized,
{
    let expected = model.state(now_ms).expect("the model always answers");
    match real.state(now_ms) {
        Ok(got) if states_agree(&expected, &got, clock) => Ok(()),
        Ok(got) => Err(format!(
            "at t={now_ms} the model holds {expected:?}, the store {got:?}"
        )),
        Err(error) => Err(format!(
            "at t={now_ms} the store failed to read its state: {error}"
        )),
    }
}

/// Lifetimes running out, on any store: on a store that takes `now_ms` the driver moves the
/// given time; on a store with its own clock it sleeps real time, and asserts only what
/// margins make certain: a key with a 60 s lifetime is live throughout (the test takes about
/// 1.3 s), a key with a 200 ms lifetime is gone 1.3 s later, and a renewal for 120 s leaves
/// more than 60 s. `Err` names the check that failed.
pub fn check_expiry<S: ClaimStoreKind>(store: &mut S) -> Result<Report, Mismatch> {
    let started = crate::Stopwatch::start();
    let clock = store.clock();
    let mut steps = Vec::new();
    let outcome = expiry_steps(store, clock, &mut steps);
    let count = steps.len() as u64;
    outcome.map_err(|difference| Mismatch {
        setup: describe_setup(&ClaimSetup::default(), clock),
        steps,
        difference,
        cases_before: 0,
    })?;
    Ok(Report {
        cases: 1,
        steps: count,
        elapsed: started.elapsed(),
    })
}

/// The claim's short lifetime, the holder key's long one, how long the check waits.
const SHORT_MS: u64 = 200;
const LONG_MS: u64 = 60_000;
const WAIT_MS: u64 = 1_300;

fn expiry_steps<S: ClaimStoreKind>(
    store: &mut S,
    clock: StoreClock,
    lines: &mut Vec<String>,
) -> Result<(), String> {
    let mut callers = store
        .open(&ClaimSetup::default(), 2)
        .map_err(|error| format!("the store failed to open: {error}"))?;
    let mut now_ms = START_MS;
    let (claim, holder) = (Key::Claim, Key::Holder);
    let create = |key, token, lifetime_ms| Request::Create {
        key,
        token,
        lifetime_ms,
    };
    let mut at = Expect {
        callers: &mut callers,
        lines,
    };
    at.expect(0, create(claim, 1, SHORT_MS), now_ms, Answer::Created)?;
    at.expect(0, create(holder, 2, LONG_MS), now_ms, Answer::Created)?;
    at.expect(1, create(holder, 3, LONG_MS), now_ms, Answer::Exists)?;
    match clock {
        StoreClock::Given => now_ms += WAIT_MS,
        StoreClock::Own { .. } => std::thread::sleep(std::time::Duration::from_millis(WAIT_MS)),
    }
    at.lines.push(format!("(waited {WAIT_MS}ms)"));
    at.expect(1, Request::Get { key: claim }, now_ms, Answer::Absent)?;
    let renew = Request::Renew {
        key: claim,
        token: 1,
        lifetime_ms: LONG_MS,
    };
    at.expect(0, renew, now_ms, Answer::Absent)?;
    let cad = Request::DeleteIfHolder {
        key: claim,
        token: 1,
    };
    at.expect(0, cad, now_ms, Answer::Absent)?;
    at.expect(1, create(claim, 4, LONG_MS), now_ms, Answer::Created)?;
    at.expect(1, create(holder, 5, LONG_MS), now_ms, Answer::Exists)?;
    let aged = remaining_ms(&mut at.callers[0], holder, now_ms, at.lines)?;
    if aged > LONG_MS - WAIT_MS {
        return Err(format!(
            "the holder key has {aged}ms left after {WAIT_MS}ms: its lifetime did not run"
        ));
    }
    expect_renewal(&mut at.callers[1], now_ms, at.lines)
}

/// Applies requests and compares their answers with the expected ones.
struct Expect<'a, C> {
    callers: &'a mut [C],
    lines: &'a mut Vec<String>,
}

impl<C: ClaimConnection> Expect<'_, C> {
    fn expect(
        &mut self,
        caller: usize,
        request: Request,
        now_ms: u64,
        want: Answer,
    ) -> Result<(), String> {
        let head = format!("t={now_ms} r{} {}", caller + 1, Call::One(request));
        let got = self.callers[caller].apply(request, now_ms);
        compare_answer(&head, &want, got, self.lines)
    }
}

/// A renewal for twice the lifetime leaves more than the first lifetime.
fn expect_renewal<C: ClaimConnection>(
    caller: &mut C,
    now_ms: u64,
    lines: &mut Vec<String>,
) -> Result<(), String> {
    let renew = Request::Renew {
        key: Key::Holder,
        token: 2,
        lifetime_ms: 2 * LONG_MS,
    };
    let head = format!("t={now_ms} r2 {}", Call::One(renew));
    compare_answer(&head, &Answer::Renewed, caller.apply(renew, now_ms), lines)?;
    let renewed = remaining_ms(caller, Key::Holder, now_ms, lines)?;
    if renewed <= LONG_MS {
        return Err(format!(
            "after a renewal for {}ms the holder key has {renewed}ms left",
            2 * LONG_MS
        ));
    }
    Ok(())
}

/// What `key` has left; an error if it is absent.
fn remaining_ms<C: ClaimConnection>(
    caller: &mut C,
    key: Key,
    now_ms: u64,
    lines: &mut Vec<String>,
) -> Result<u64, String> {
    let state = caller
        .state(now_ms)
        .map_err(|error| format!("the store failed to read its state: {error}"))?;
    lines.push(format!("t={now_ms} state {state:?}"));
    state.keys[key.index()]
        .map(|held| held.remaining_ms)
        .ok_or_else(|| format!("{} is absent; it should be live", key.name()))
}
