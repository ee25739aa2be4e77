//! Conformance of a work-items item store (design 001): claims with a store-wide fencing token
//! and fenced writes, against the simulated model
//! ([`leasesim_stores::work_items::WorkItemModel`]).
//!
//! Terminology:
//! - *operation*: what a case asks of the store ([`Op`]): a search for the next claimable
//!   item, a claim, a renewal, a chunk applied, done, release, fail, the run's status, the
//!   unsafe primitives defective workers use (a plain claim, an unguarded apply or done), or
//!   time advancing (by a drawn step, or to just before, at or just after a claim's expiry). Items are picked (`n % items`; a search's `after` is `n % (items + 2)`,
//!   so it runs past the last item too), chunks likewise (`n % chunks`).
//! - *token pick*: the token a fenced write shows ([`TokenPick`]): the caller's own claim of
//!   the item, the item's last claim (whoever holds it, live or expired), the item's first
//!   claim (stale once it was claimed again), or one never handed out; resolved when the step
//!   runs, so a shrunk sequence keeps its meaning when steps before it are removed.
//! - *callers*: `r1`, `r2`, ... each with a connection of its own to one store, interleaved
//!   one operation at a time (their simultaneity is `leasesim real`'s part).
//! - *time*: deterministic: every call takes `now_ms`; claims last 1-60 ms and steps advance
//!   0-25 ms, so claims expire mid-case, often exactly at an instant a step runs.
//! - *book*: what the driver knows while a case runs, read from the model's answers: the
//!   tokens each caller was granted per item, and every token handed out per item.
//!
//! After every step the driver compares the answers (the observed [`Applied`] values) and
//! the whole store (every item row and every applied chunk).
//!
//! ```no_run
//! use leasesim_conformance::{Config, work_items};
//! # fn my_store() -> leasesim_stores::work_items::WorkItemModel { leasesim_stores::work_items::WorkItemModel }
//! // `my_store()`: your type implementing `WorkItemStore` (it opens fresh stores).
//! let report = work_items::check(&mut my_store(), &Config::default()).unwrap_or_else(|m| panic!("{m}"));
//! println!("{report}");
//! ```

use std::cell::{Cell, RefCell};

use leasesim_stores::work_items::{
    Applied, ErrorCode, ItemSetup, ItemsState, ReplicaId, Request, WorkItemConnection,
    WorkItemModel, WorkItemStore,
};
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestError};

use crate::{Config, Mismatch, Report};

/// The store's time when a case starts; steps only move it forward.
pub const START_MS: u64 = 1_000;

/// Which token a fenced write shows, resolved when the step runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenPick {
    /// The caller's newest claim of the item (0 if it has none).
    Mine,
    /// The item's last claim, whoever was granted it (0 if never claimed).
    Last,
    /// The item's first claim (0 if never claimed): stale once the item was claimed again.
    First,
    /// A token nobody was given.
    Never,
}

/// The errors a release or fail records (a few of the worker's).
const ERRORS: [ErrorCode; 4] = [
    ErrorCode::Timeout(leasesim_stores::work_items::Op::Provider),
    ErrorCode::Rejected(leasesim_stores::work_items::Op::Apply),
    ErrorCode::ProviderRefused,
    ErrorCode::Stopped,
];

/// One step of a case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// A search for the next claimable item after the `after`-th (`n % (items + 2)`).
    Find { caller: u8, after: Option<u8> },
    /// The run's count of open, done and failed items.
    Status { caller: u8 },
    /// A claim of an item (`plain`: the unsafe plain write of the owner).
    Claim {
        caller: u8,
        item: u8,
        lease_ms: u64,
        plain: bool,
    },
    /// A write carrying a token.
    Write {
        caller: u8,
        item: u8,
        token: TokenPick,
        write: Write,
    },
    /// The store's time moves forward.
    Advance { ms: u64 },
    /// The store's time moves to 1 ms before, exactly at, or 1 ms after (`offset` 0, 1, 2)
    /// the expiry of the item's last claim, if that is not behind it: the instants where
    /// `<` and `<=` part.
    ToExpiry { item: u8, offset: u8 },
}

/// What a write carrying a token does; chunks are `n % chunks`, errors `ERRORS[n % 4]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Write {
    Renew {
        lease_ms: u64,
    },
    Apply {
        chunk: u8,
    },
    Done,
    Release {
        error: u8,
    },
    Fail {
        error: u8,
    },
    /// Unsafe: no token predicate.
    UnguardedApply {
        chunk: u8,
    },
    /// Unsafe: no token predicate.
    UnguardedDone,
}

/// One drawn case: a fresh store and the operations applied to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    pub setup: ItemSetup,
    pub ops: Vec<Op>,
}

fn token_pick() -> impl Strategy<Value = TokenPick> {
    prop_oneof![
        5 => Just(TokenPick::Mine),
        2 => Just(TokenPick::Last),
        2 => Just(TokenPick::First),
        1 => Just(TokenPick::Never),
    ]
}

fn write() -> impl Strategy<Value = Write> {
    let n = any::<u8>();
    prop_oneof![
        3 => (1..60u64).prop_map(|lease_ms| Write::Renew { lease_ms }),
        5 => n.prop_map(|chunk| Write::Apply { chunk }),
        2 => Just(Write::Done),
        2 => n.prop_map(|error| Write::Release { error }),
        2 => n.prop_map(|error| Write::Fail { error }),
        1 => n.prop_map(|chunk| Write::UnguardedApply { chunk }),
        1 => Just(Write::UnguardedDone),
    ]
}

fn op(callers: u8) -> impl Strategy<Value = Op> {
    let (caller, n) = (0..callers.max(1), any::<u8>());
    prop_oneof![
        2 => (caller.clone(), prop::option::weighted(0.8, n))
            .prop_map(|(caller, after)| Op::Find { caller, after }),
        1 => caller.clone().prop_map(|caller| Op::Status { caller }),
        6 => (caller.clone(), n, 1..60u64, prop::bool::weighted(1.0 / 6.0)).prop_map(
            |(caller, item, lease_ms, plain)| Op::Claim { caller, item, lease_ms, plain }
        ),
        16 => (caller, n, token_pick(), write()).prop_map(|(caller, item, token, write)| {
            Op::Write { caller, item, token, write }
        }),
        3 => prop_oneof![0..5u64, 0..25u64].prop_map(|ms| Op::Advance { ms }),
        2 => (n, 0..3u8).prop_map(|(item, offset)| Op::ToExpiry { item, offset }),
    ]
}

/// The cases a driver draws: 1-4 items of 1-3 chunks (a store without fencing one time in
/// ten), and sequences of up to `config.max_steps` operations by `config.callers` callers.
pub fn cases(config: &Config) -> impl Strategy<Value = Case> + use<> {
    let callers = u8::try_from(config.callers.clamp(1, 16)).expect("at most 16");
    let sizes = prop::collection::vec(1..=3u32, 1..=4);
    let fencing = prop::bool::weighted(0.9);
    let ops = prop::collection::vec(op(callers), 1..=config.max_steps.max(1));
    (sizes, fencing, ops).prop_map(|(sizes, fencing, ops)| Case {
        setup: ItemSetup { sizes, fencing },
        ops,
    })
}

/// The setup in words.
pub fn describe_setup(setup: &ItemSetup) -> String {
    format!(
        "{} items of {:?} chunks, fencing {}",
        setup.sizes.len(),
        setup.sizes,
        if setup.fencing { "on" } else { "off" }
    )
}

/// Runs `config.cases` drawn cases on `store` and on the model: `Ok` with what was checked,
/// or the first mismatch, shrunk.
pub fn check<S: WorkItemStore>(store: &mut S, config: &Config) -> Result<Report, Mismatch> {
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
                first_failure.set(first_failure.get().or(Some(ran.get() - 1)));
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

/// Why a case failed: its steps up to the mismatch, and what differed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseFailure {
    pub steps: Vec<String>,
    pub difference: String,
}

/// What the driver knows while a case runs, from the model's answers.
#[derive(Debug)]
struct Book {
    /// Per caller and item, the token of the caller's newest claim (0: none).
    mine: Vec<Vec<u64>>,
    /// Per item, the token of its first claim (0: none).
    first: Vec<u64>,
    last_token: u64,
}

impl Book {
    fn new(callers: usize, items: usize) -> Book {
        Book {
            mine: vec![vec![0; items]; callers],
            first: vec![0; items],
            last_token: 0,
        }
    }

    fn token(&self, caller: usize, item: u32, pick: TokenPick, model: &ItemsState) -> u64 {
        let index = item as usize;
        match pick {
            TokenPick::Mine => self.mine[caller][index],
            TokenPick::Last => model.items[index].token,
            TokenPick::First => self.first[index],
            TokenPick::Never => self.last_token + 1_000,
        }
    }

    fn learn(&mut self, caller: usize, applied: &Applied) {
        if let Applied::Claimed { item, token, .. } = *applied {
            let index = item as usize;
            self.mine[caller][index] = token;
            if self.first[index] == 0 {
                self.first[index] = token;
            }
            self.last_token = self.last_token.max(token);
        }
    }
}

/// The caller and the request of `op`, resolved against the model's store now (`None`:
/// time advances).
fn resolve(op: Op, book: &Book, model: &ItemsState, now_ms: u64) -> Option<(usize, Request)> {
    let count = u32::try_from(model.items.len()).expect("few items");
    let request = match op {
        Op::Advance { .. } | Op::ToExpiry { .. } => return None,
        Op::Find { caller, after } => {
            let after = after.map(|n| u32::from(n) % (count + 2));
            (caller, Request::Find { after })
        }
        Op::Status { caller } => (caller, Request::Status),
        Op::Claim {
            caller,
            item,
            lease_ms,
            plain,
        } => {
            let item = u32::from(item) % count;
            let request = match plain {
                false => Request::Claim {
                    item,
                    lease_ms,
                    now_ms,
                },
                true => Request::PlainClaim {
                    item,
                    lease_ms,
                    now_ms,
                },
            };
            (caller, request)
        }
        Op::Write {
            caller,
            item,
            token,
            write,
        } => {
            let item = u32::from(item) % count;
            let token = book.token(usize::from(caller), item, token, model);
            let chunks = model.items[item as usize].chunks;
            (caller, write_request(write, (item, token, chunks), now_ms))
        }
    };
    Some((usize::from(request.0), request.1))
}

/// The request of `write` on `item` (of `chunks` chunks) under `token`.
fn write_request(write: Write, (item, token, chunks): (u32, u64, u32), now_ms: u64) -> Request {
    let error = |n: u8| ERRORS[usize::from(n) % ERRORS.len()];
    match write {
        Write::Renew { lease_ms } => Request::Renew {
            item,
            token,
            lease_ms,
            now_ms,
        },
        Write::Apply { chunk } => Request::Apply {
            item,
            token,
            chunk: u32::from(chunk) % chunks,
            now_ms,
        },
        Write::UnguardedApply { chunk } => Request::UnguardedApply {
            item,
            token,
            chunk: u32::from(chunk) % chunks,
            now_ms,
        },
        Write::Done => Request::Done {
            item,
            token,
            now_ms,
        },
        Write::UnguardedDone => Request::UnguardedDone {
            item,
            token,
            now_ms,
        },
        Write::Release { error: n } => Request::Release {
            item,
            token,
            error: error(n),
            now_ms,
        },
        Write::Fail { error: n } => Request::Fail {
            item,
            token,
            error: error(n),
            now_ms,
        },
    }
}

/// The store's time after the time step `op` (`now_ms` for any other step).
fn advance(op: Op, model: &ItemsState, now_ms: u64) -> u64 {
    match op {
        Op::Advance { ms } => now_ms + ms,
        Op::ToExpiry { item, offset } => {
            let row = &model.items[usize::from(item) % model.items.len()];
            (row.expires_at_ms + u64::from(offset))
                .saturating_sub(1)
                .max(now_ms)
        }
        _ => now_ms,
    }
}

/// Runs one case on a fresh store and a fresh model: the number of steps applied, or the
/// first step where they differ.
pub fn run_case<S: WorkItemStore + ?Sized>(
    store: &mut S,
    case: &Case,
    callers: usize,
) -> Result<u64, CaseFailure> {
    let mut lines = Vec::new();
    let fail = |lines: &mut Vec<String>, difference: String| CaseFailure {
        steps: std::mem::take(lines),
        difference,
    };
    let mut model = WorkItemModel
        .open(&case.setup, callers)
        .expect("the model opens a drawn setup");
    let mut real = open_store(store, &case.setup, callers).map_err(|why| fail(&mut lines, why))?;
    let mut book = Book::new(callers, case.setup.sizes.len());
    let mut now_ms = START_MS;
    for (index, op) in case.ops.iter().enumerate() {
        let step = index + 1;
        let before = model[0].state().expect("the model answers");
        let Some((caller, request)) = resolve(*op, &book, &before, now_ms) else {
            let later_ms = advance(*op, &before, now_ms);
            let ms = later_ms - now_ms;
            now_ms = later_ms;
            lines.push(format!("{step:>2}. t={now_ms} (time advances {ms}ms)"));
            continue;
        };
        let caller = caller % callers;
        let owner = ReplicaId(u16::try_from(caller).expect("at most 16 callers"));
        let head = format!("{step:>2}. t={now_ms} {owner} {request:?}");
        let expected = model[caller]
            .apply(owner, request, now_ms)
            .expect("the model answers a store request");
        book.learn(caller, &expected);
        if let Err(why) = compare_answer(&mut real[caller], (owner, request), &expected, now_ms) {
            lines.push(format!("{head} -> {}", why.0));
            return Err(fail(&mut lines, format!("step {step}: {}", why.1)));
        }
        lines.push(format!("{head} -> {expected:?}"));
        let expected = model[0].state().expect("the model answers");
        match real[caller].state() {
            Ok(got) if got == expected => {}
            Ok(got) => {
                let why = state_difference(&expected, &got);
                return Err(fail(&mut lines, format!("after step {step} {why}")));
            }
            Err(error) => return Err(fail(&mut lines, format!("after step {step}: {error}"))),
        }
    }
    Ok(case.ops.len() as u64)
}

/// Opens the store under test with exactly `callers` connections.
fn open_store<S: WorkItemStore + ?Sized>(
    store: &mut S,
    setup: &ItemSetup,
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

/// Applies the request to the store under test: `Err((line, difference))` unless it answers
/// `expected`.
fn compare_answer<C: WorkItemConnection + ?Sized>(
    connection: &mut C,
    (owner, request): (ReplicaId, Request),
    expected: &Applied,
    now_ms: u64,
) -> Result<(), (String, String)> {
    match connection.apply(owner, request, now_ms) {
        Ok(got) if got == *expected => Ok(()),
        Ok(got) => Err((
            format!("model {expected:?} | store {got:?}"),
            format!("the model answered {expected:?}, the store {got:?}"),
        )),
        Err(error) => Err((
            format!("model {expected:?} | store failed: {error}"),
            format!("the store failed: {error}"),
        )),
    }
}

/// The first difference between two states, in words.
fn state_difference(model: &ItemsState, store: &ItemsState) -> String {
    let differing = model
        .items
        .iter()
        .zip(&store.items)
        .find(|(expected, got)| expected != got);
    match differing {
        Some((expected, got)) => format!("the model holds {expected:?}, the store {got:?}"),
        None if model.items.len() != store.items.len() => format!(
            "the model holds {} items, the store {}",
            model.items.len(),
            store.items.len()
        ),
        None => format!(
            "the model holds the applied chunks {:?}, the store {:?}",
            model.applied, store.applied
        ),
    }
}
