//! Conformance of a reservation store (design 002): holds, claims and the guarded transition
//! against the simulated model ([`leasesim_stores::reservations::ReservationModel`]).
//!
//! Terminology:
//! - *operation*: what a case asks of the store ([`Op`]): the worker's claim, guarded
//!   expiry, release and dead letter, the primitives defective workers use (expire by id,
//!   read due holds, write a claim, release any claim), the agents' place and consume, and
//!   time advancing. Ids are picked (`id % (holds + 2)`, so an unknown id comes up too),
//!   tokens are picked ([`TokenPick`]).
//! - *at*: a request's own eligibility instant: `None` (the store's time) or an instant up
//!   to 10 ms either side of it (a worker's clock skewed from the store's).
//! - *time*: deterministic: every call takes `now_ms`, steps advance it; claims run out
//!   mid-case (claims of 1-30 ms, deadlines around the start).
//!
//! ```no_run
//! use leasesim_conformance::{Config, reservations};
//! # fn my_store() -> leasesim_stores::reservations::ReservationModel { leasesim_stores::reservations::ReservationModel }
//! // `my_store()`: your type implementing `ReservationStore` (it opens fresh stores).
//! let report = reservations::check(&mut my_store(), &Config::default()).unwrap_or_else(|m| panic!("{m}"));
//! println!("{report}");
//! ```

use std::cell::{Cell, RefCell};

use leasesim_reservations::events::{
    Applied, ClassView, LetterView, ReasonView, Request, StatusView,
};
use leasesim_stores::StoreError;
use leasesim_stores::reservations::{
    HoldState, ReservationConnection, ReservationModel, ReservationSetup, ReservationStore,
};
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestError};

use crate::{Config, Mismatch, Report};

/// The store's time when a case starts; steps only move it forward.
pub const START_MS: u64 = 1_000;

/// Which claim token a release shows, resolved when the step runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenPick {
    /// The token of the caller's newest claim (0 if none).
    Latest,
    /// The token the hold's claim carries now (0 if none).
    OnHold,
    /// A token nobody was given.
    Never,
}

/// One step of a case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Claim {
        caller: u8,
        limit: u32,
        at: Option<u8>,
        claim_for_ms: u64,
    },
    Expire {
        caller: u8,
        id: u8,
        at: Option<u8>,
    },
    Release {
        caller: u8,
        id: u8,
        token: TokenPick,
    },
    DeadLetter {
        caller: u8,
        id: u8,
    },
    ExpireById {
        caller: u8,
        id: u8,
    },
    ReadDue {
        caller: u8,
        limit: u32,
        at: Option<u8>,
    },
    WriteClaim {
        caller: u8,
        id: u8,
        claim_for_ms: u64,
    },
    ReleaseAny {
        caller: u8,
        id: u8,
    },
    /// An agent places a hold due `due` ms after now (minus 5).
    Place {
        due: u8,
        malformed: bool,
    },
    /// An agent consumes a hold.
    Consume {
        id: u8,
    },
    Advance {
        ms: u64,
    },
}

/// One drawn case: a fresh store and the operations applied to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    pub setup: ReservationSetup,
    pub ops: Vec<Op>,
}

fn op(callers: u8) -> impl Strategy<Value = Op> {
    let caller = 0..callers.max(1);
    let at = prop::option::weighted(0.3, 0..21u8);
    let token = prop_oneof![
        3 => Just(TokenPick::Latest),
        2 => Just(TokenPick::OnHold),
        1 => Just(TokenPick::Never)
    ];
    let id = any::<u8>();
    prop_oneof![
        4 => (caller.clone(), 0..4u32, at.clone(), 1..30u64).prop_map(
            |(caller, limit, at, claim_for_ms)| Op::Claim { caller, limit, at, claim_for_ms }
        ),
        4 => (caller.clone(), id, at.clone())
            .prop_map(|(caller, id, at)| Op::Expire { caller, id, at }),
        3 => (caller.clone(), id, token)
            .prop_map(|(caller, id, token)| Op::Release { caller, id, token }),
        1 => (caller.clone(), id).prop_map(|(caller, id)| Op::DeadLetter { caller, id }),
        1 => (caller.clone(), id).prop_map(|(caller, id)| Op::ExpireById { caller, id }),
        1 => (caller.clone(), 0..4u32, at)
            .prop_map(|(caller, limit, at)| Op::ReadDue { caller, limit, at }),
        1 => (caller.clone(), id, 1..30u64).prop_map(
            |(caller, id, claim_for_ms)| Op::WriteClaim { caller, id, claim_for_ms }
        ),
        1 => (caller, id).prop_map(|(caller, id)| Op::ReleaseAny { caller, id }),
        2 => (0..30u8, prop::bool::weighted(0.1))
            .prop_map(|(due, malformed)| Op::Place { due, malformed }),
        2 => id.prop_map(|id| Op::Consume { id }),
        4 => prop_oneof![0..5u64, 0..25u64].prop_map(|ms| Op::Advance { ms }),
    ]
}

/// The cases a driver draws: up to 8 holds due around the start (some malformed), and
/// sequences of up to `config.max_steps` operations by `config.callers` callers.
pub fn cases(config: &Config) -> impl Strategy<Value = Case> + use<> {
    let callers = u8::try_from(config.callers.clamp(1, 16)).expect("at most 16");
    let holds = prop::collection::vec((980..1_030u64, prop::bool::weighted(0.1)), 0..8);
    let ops = prop::collection::vec(op(callers), 1..=config.max_steps.max(1));
    (holds, ops).prop_map(|(holds, ops)| Case {
        setup: ReservationSetup { holds },
        ops,
    })
}

/// Runs `config.cases` drawn cases on `store` and on the model: `Ok` with what was checked,
/// or the first mismatch, shrunk.
pub fn check<S: ReservationStore>(store: &mut S, config: &Config) -> Result<Report, Mismatch> {
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
                setup: format!("holds (due, malformed) {:?}", minimal.setup.holds),
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

/// A resolved step, as both sides receive it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Call {
    Worker(Request),
    Place { hold_until_ms: u64, malformed: bool },
    Consume { id: u32 },
}

/// What one side answered.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    Applied(Applied),
    Placed(u32),
    Consumed(Result<u64, StatusView>),
}

fn call_on<C: ReservationConnection + ?Sized>(
    connection: &mut C,
    call: Call,
    now_ms: u64,
) -> Result<Outcome, StoreError> {
    Ok(match call {
        Call::Worker(request) => Outcome::Applied(connection.apply(request, now_ms)?),
        Call::Place {
            hold_until_ms,
            malformed,
        } => Outcome::Placed(connection.place(hold_until_ms, malformed)?),
        Call::Consume { id } => Outcome::Consumed(connection.consume(id)?),
    })
}

/// What the driver knows while a case runs.
#[derive(Debug)]
struct Book {
    /// Per caller, the token of its newest claim.
    latest: Vec<u64>,
    last_token: u64,
}

impl Book {
    fn fresh(&mut self, caller: usize) -> u64 {
        self.last_token += 1;
        self.latest[caller] = self.last_token;
        self.last_token
    }
}

/// A letter for hold `id`, as the worker records one.
fn letter(id: u32) -> LetterView {
    LetterView {
        id,
        reason: ReasonView::NotRetryable(ClassView::Invalid),
        attempts: 1,
        first_seen_ms: 0,
        last_error: ClassView::Invalid,
        replay_id: Some(id),
    }
}

/// The caller and the call of `op`, resolved against the model's holds now (`None`: time).
fn resolve(op: Op, book: &mut Book, holds: &[HoldState], now_ms: u64) -> Option<(usize, Call)> {
    match op {
        Op::Advance { .. } => None,
        Op::Place { due, malformed } => {
            let hold_until_ms = (now_ms + u64::from(due)).saturating_sub(5);
            Some((
                0,
                Call::Place {
                    hold_until_ms,
                    malformed,
                },
            ))
        }
        // An unknown id is not an agent's call: agents consume holds that exist.
        Op::Consume { id: n } => {
            let count = u32::try_from(holds.len()).expect("few holds");
            (count > 0).then(|| {
                (
                    0,
                    Call::Consume {
                        id: u32::from(n) % count + 1,
                    },
                )
            })
        }
        op => resolve_worker(op, book, holds, now_ms),
    }
}

/// A worker's operation: the caller and its request (tokens picked from the book).
fn resolve_worker(
    op: Op,
    book: &mut Book,
    holds: &[HoldState],
    now_ms: u64,
) -> Option<(usize, Call)> {
    let id = |n: u8| u32::from(n) % (u32::try_from(holds.len()).expect("few holds") + 2);
    let at = |at: Option<u8>| at.map(|offset| (now_ms + u64::from(offset)).saturating_sub(10));
    let worker = |caller: u8, request| Some((usize::from(caller), Call::Worker(request)));
    match op {
        Op::Claim {
            caller,
            limit,
            at: a,
            claim_for_ms,
        } => {
            let token = book.fresh(usize::from(caller));
            let now = at(a);
            let claim = Request::Claim {
                limit,
                now,
                token,
                claim_for_ms,
            };
            worker(caller, claim)
        }
        Op::Expire {
            caller,
            id: n,
            at: a,
        } => {
            let (id, now) = (id(n), at(a));
            worker(caller, Request::Expire { id, now })
        }
        Op::Release {
            caller,
            id: n,
            token,
        } => {
            let id = id(n);
            let token = release_token(token, book, holds, caller, id);
            worker(caller, Request::Release { id, token })
        }
        Op::DeadLetter { caller, id: n } => {
            let letter = letter(id(n));
            worker(caller, Request::DeadLetter { letter })
        }
        Op::ExpireById { caller, id: n } => worker(caller, Request::ExpireById { id: id(n) }),
        Op::ReadDue {
            caller,
            limit,
            at: a,
        } => worker(caller, Request::ReadDue { limit, now: at(a) }),
        Op::WriteClaim {
            caller,
            id: n,
            claim_for_ms,
        } => {
            let (id, token) = (id(n), book.fresh(usize::from(caller)));
            let write = Request::WriteClaim {
                id,
                token,
                claim_for_ms,
            };
            worker(caller, write)
        }
        Op::ReleaseAny { caller, id: n } => worker(caller, Request::ReleaseAny { id: id(n) }),
        Op::Advance { .. } | Op::Place { .. } | Op::Consume { .. } => None,
    }
}

/// The token a release by `caller` of hold `id` carries, as the step picked it.
fn release_token(pick: TokenPick, book: &Book, holds: &[HoldState], caller: u8, id: u32) -> u64 {
    match pick {
        TokenPick::Latest => book.latest[usize::from(caller)],
        TokenPick::OnHold => holds
            .iter()
            .find(|hold| hold.id == id)
            .and_then(|hold| hold.claim)
            .map_or(0, |(token, _)| token),
        TokenPick::Never => book.last_token + 1_000,
    }
}

/// A fresh store of `case`'s setup with one connection per caller, or why not.
fn open_store<S: ReservationStore + ?Sized>(
    store: &mut S,
    case: &Case,
    callers: usize,
) -> Result<Vec<S::Connection>, String> {
    match store.open(&case.setup, callers) {
        Ok(real) if real.len() == callers => Ok(real),
        Ok(real) => Err(format!(
            "the store opened {} connections, not {callers}",
            real.len()
        )),
        Err(error) => Err(format!("the store failed to open: {error}")),
    }
}

/// Runs one case on a fresh store and a fresh model: the number of steps applied, or the
/// first step where they differ.
pub fn run_case<S: ReservationStore + ?Sized>(
    store: &mut S,
    case: &Case,
    callers: usize,
) -> Result<u64, CaseFailure> {
    let mut lines = Vec::new();
    let fail = |lines: &mut Vec<String>, difference: String| CaseFailure {
        steps: std::mem::take(lines),
        difference,
    };
    let mut model = ReservationModel
        .open(&case.setup, callers)
        .expect("the model opens");
    let mut real = open_store(store, case, callers).map_err(|why| fail(&mut lines, why))?;
    let mut book = Book {
        latest: vec![0; callers],
        last_token: 0,
    };
    let mut now_ms = START_MS;
    for (index, op) in case.ops.iter().enumerate() {
        let holds = model[0].state().expect("the model answers");
        let step = index + 1;
        let Some((caller, call)) = resolve(*op, &mut book, &holds, now_ms) else {
            if let Op::Advance { ms } = *op {
                now_ms += ms;
                lines.push(format!("{step:>2}. t={now_ms} (time advances {ms}ms)"));
            }
            continue;
        };
        let caller = caller % callers;
        let head = format!("{step:>2}. t={now_ms} r{} {call:?}", caller + 1);
        let expected = call_on(&mut model[caller], call, now_ms).expect("the model answers");
        match call_on(&mut real[caller], call, now_ms) {
            Ok(got) if got == expected => lines.push(format!("{head} -> {expected:?}")),
            Ok(got) => {
                lines.push(format!("{head} -> model {expected:?} | store {got:?}"));
                let why =
                    format!("step {step}: the model answered {expected:?}, the store {got:?}");
                return Err(fail(&mut lines, why));
            }
            Err(error) => {
                lines.push(format!(
                    "{head} -> model {expected:?} | store failed: {error}"
                ));
                return Err(fail(
                    &mut lines,
                    format!("step {step}: the store failed: {error}"),
                ));
            }
        }
        let expected = model[0].state().expect("the model answers");
        match real[caller].state() {
            Ok(got) if got == expected => {}
            Ok(got) => {
                let why =
                    format!("after step {step} the model holds {expected:?}, the store {got:?}");
                return Err(fail(&mut lines, why));
            }
            Err(error) => return Err(fail(&mut lines, format!("after step {step}: {error}"))),
        }
    }
    Ok(case.ops.len() as u64)
}
