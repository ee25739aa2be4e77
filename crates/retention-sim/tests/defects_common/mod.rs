//! Shared by the defect tests: running a worker in the simulated world, and reading the
//! event stream for the traces each defect leaves.
//!
//! Terminology:
//! - *pattern*: a shape in the event stream that the correct worker never produces and one of
//!   the defects does (see [`Pattern`]). Patterns are read straight from the events, without
//!   the invariant checkers, so these tests stand on their own.
//! - *term*: a replica's span between `TermStarted` and `TermEnded`; a call *belongs* to the
//!   term open when it was sent, and an answer *reaches* the term only if that term is still
//!   open when it arrives.
//! - *received token*: a token answered to an acquire or a renewal of the term.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use leasesim_events::Stamped;
use leasesim_retention::events::{
    Answer, EndKind, Event, EventKind, Note, OpKind, ReplicaId, Request,
};
use leasesim_retention::{Scenario, WorkerFactory, load_scenario, parse_scenario};
use leasesim_rt::SimConfig;
use leasesim_sim::simulate;

/// A trace of a defect, read from the event stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Pattern {
    /// A renew call sent while another renew call of the same replica was unanswered.
    OverlappingRenewals,
    /// A release carrying a token lower than the highest one its term received.
    StaleRelease,
    /// Two deletes of one term with different cutoffs.
    MovingCutoff,
    /// A clock read in a term before its acquire answered.
    ClockReadBeforeAcquire,
    /// A term whose deletes answered more rows than the cap.
    OverCap,
    /// `StopResolved` while the replica's term was still open.
    StopResolvedInTerm,
    /// A renew call outside any term, or in a term that never received its token but an
    /// earlier term of the replica did.
    RenewalOfAnotherTerm,
    /// A delete call after a renewal of the same term answered `None` or an error.
    DeleteAfterLoss,
    /// A term that acquired, had no renewal answer `None` or fail, and ended with no release
    /// call.
    NoRelease,
    /// A term that acquired, had a renewal fail (and none answer `None`), and ended with no
    /// release call.
    NoReleaseAfterRenewError,
    /// A delete call carrying a token lower than the highest one its term received.
    DeleteWithOldToken,
    /// A release call in a term whose acquire did not answer a lease, or outside any term.
    ReleaseWithoutOwnership,
    /// A renew call carrying a token its term received, lower than the highest one.
    RenewWithOldToken,
    /// A term that ended reporting the cap reached with fewer rows than the cap.
    CapClaimedEarly,
}

/// A pattern and the event where it showed.
#[derive(Clone, Debug)]
pub struct Sighting {
    pub pattern: Pattern,
    pub event: Stamped<Event>,
}

/// One call of a replica that has not been answered yet.
#[derive(Clone, Copy, Debug)]
struct Pending {
    op: OpKind,
    /// The number of the term it was sent in (0: outside any term).
    term: u32,
}

/// What one replica did in its current (or last) term.
#[derive(Debug, Default)]
struct Replica {
    open: bool,
    term: u32,
    pending: BTreeMap<u64, Pending>,
    acquire_answered: bool,
    acquired: bool,
    received: Vec<u64>,
    /// Tokens received by the replica's earlier terms.
    earlier: BTreeSet<u64>,
    lost: bool,
    lost_by_none: bool,
    renew_failed: bool,
    released: bool,
    rows: u64,
    cutoff_ms: Option<u64>,
}

impl Replica {
    fn highest(&self) -> Option<u64> {
        self.received.iter().copied().max()
    }

    fn start(&mut self, term: u32) {
        let mut earlier = std::mem::take(&mut self.earlier);
        earlier.extend(self.received.iter().copied());
        *self = Replica {
            open: true,
            term,
            pending: std::mem::take(&mut self.pending),
            earlier,
            ..Replica::default()
        };
    }
}

/// Reads `events` and returns every sighting of every pattern, in stream order.
pub fn sightings(events: &[Stamped<Event>], cap_rows: u64) -> Vec<Sighting> {
    let mut replicas: BTreeMap<ReplicaId, Replica> = BTreeMap::new();
    let mut seen = Vec::new();
    for stamped in events {
        let Some(id) = stamped.event.replica else {
            continue;
        };
        let state = replicas.entry(id).or_default();
        for pattern in observe(state, &stamped.event.kind, cap_rows) {
            seen.push(Sighting {
                pattern,
                event: stamped.clone(),
            });
        }
    }
    seen
}

/// Updates one replica's state with one of its events; returns the patterns it shows.
fn observe(state: &mut Replica, kind: &EventKind, cap_rows: u64) -> Vec<Pattern> {
    let mut shown = Vec::new();
    match *kind {
        EventKind::Note(Note::TermStarted { term }) => state.start(term),
        EventKind::Note(Note::TermEnded { end, rows, .. }) => {
            if end == EndKind::CapReached && rows < cap_rows {
                shown.push(Pattern::CapClaimedEarly);
            }
            if state.acquired && !state.lost_by_none && !state.released {
                shown.push(match state.renew_failed {
                    true => Pattern::NoReleaseAfterRenewError,
                    false => Pattern::NoRelease,
                });
            }
            state.open = false;
        }
        EventKind::StopResolved if state.open => shown.push(Pattern::StopResolvedInTerm),
        EventKind::Restarted => state.pending.clear(),
        EventKind::ClockRead { .. } if state.open && !state.acquire_answered => {
            shown.push(Pattern::ClockReadBeforeAcquire);
        }
        EventKind::Call { call, request } => sent(state, call, request, &mut shown),
        EventKind::Answered { call, answer, .. } => {
            answered(state, call, answer, cap_rows, &mut shown);
        }
        _ => {}
    }
    shown
}

fn sent(state: &mut Replica, call: u64, request: Request, shown: &mut Vec<Pattern>) {
    let highest = state.highest();
    let below_highest = |token: u64| state.open && highest.is_some_and(|h| token < h);
    match request {
        Request::Renew { lease } => {
            let renewing = state.pending.values().any(|p| p.op == OpKind::Renew);
            if renewing {
                shown.push(Pattern::OverlappingRenewals);
            }
            let foreign =
                !state.received.contains(&lease.token) && state.earlier.contains(&lease.token);
            if !state.open || foreign {
                shown.push(Pattern::RenewalOfAnotherTerm);
            }
            if below_highest(lease.token) && state.received.contains(&lease.token) {
                shown.push(Pattern::RenewWithOldToken);
            }
        }
        Request::Release { lease } => {
            if below_highest(lease.token) {
                shown.push(Pattern::StaleRelease);
            }
            if !state.open || !state.acquired {
                shown.push(Pattern::ReleaseWithoutOwnership);
            }
            state.released = true;
        }
        Request::Delete {
            older_than_ms,
            token,
            ..
        } => {
            if below_highest(token) {
                shown.push(Pattern::DeleteWithOldToken);
            }
            if state.open && state.lost {
                shown.push(Pattern::DeleteAfterLoss);
            }
            match state.cutoff_ms {
                Some(first) if first != older_than_ms => shown.push(Pattern::MovingCutoff),
                _ => state.cutoff_ms = Some(older_than_ms),
            }
        }
        Request::Acquire => {}
    }
    let term = if state.open { state.term } else { 0 };
    state.pending.insert(
        call,
        Pending {
            op: request.op(),
            term,
        },
    );
}

fn answered(state: &mut Replica, call: u64, answer: Answer, cap: u64, shown: &mut Vec<Pattern>) {
    let Some(pending) = state.pending.remove(&call) else {
        return;
    };
    if !state.open || pending.term != state.term {
        return;
    }
    match (pending.op, answer) {
        (OpKind::Acquire, answer) => {
            state.acquire_answered = true;
            if let Answer::Lease(Some(lease)) = answer {
                state.acquired = true;
                state.received.push(lease.token);
            }
        }
        (OpKind::Renew, Answer::Lease(Some(lease))) => state.received.push(lease.token),
        (OpKind::Renew, Answer::Lease(None)) => {
            state.lost = true;
            state.lost_by_none = true;
        }
        (OpKind::Renew, _) => {
            state.lost = true;
            state.renew_failed = true;
        }
        (OpKind::Delete, Answer::Rows(rows)) => {
            state.rows += u64::from(rows);
            if state.rows > cap {
                shown.push(Pattern::OverCap);
            }
        }
        _ => {}
    }
}

/// Parses an inline scenario.
pub fn scenario(text: &str) -> Rc<Scenario> {
    Rc::new(parse_scenario("inline", "inline.toml", text).unwrap_or_else(|e| panic!("{e}")))
}

/// Loads a scenario shipped in `/scenarios`.
pub fn shipped(name: &str) -> Rc<Scenario> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/retention")
        .join(format!("{name}.toml"));
    Rc::new(load_scenario(&path).unwrap_or_else(|e| panic!("{e}")))
}

/// Runs `scenario` with `factory` from `seed`, keeping the events; the run must complete.
pub fn run(scenario: &Rc<Scenario>, factory: &Rc<WorkerFactory>, seed: u64) -> Vec<Stamped<Event>> {
    let run = simulate(scenario, factory, SimConfig::seeded(seed), true, None);
    assert!(
        run.outcome.is_completed(),
        "{} seed {seed}: {:?}",
        scenario.name,
        run.outcome
    );
    run.events
}

/// Every sighting `factory` shows on `scenario` over `seeds`, each with its seed.
pub fn sightings_over(
    scenario: &Rc<Scenario>,
    factory: &Rc<WorkerFactory>,
    seeds: &[u64],
) -> Vec<(u64, Sighting)> {
    let cap_rows = u64::from(scenario.settings.worker.cap_rows);
    let mut all = Vec::new();
    for &seed in seeds {
        let events = run(scenario, factory, seed);
        all.extend(sightings(&events, cap_rows).into_iter().map(|s| (seed, s)));
    }
    all
}

/// The distinct patterns among `sightings`.
pub fn names(sightings: &[(u64, Sighting)]) -> BTreeSet<Pattern> {
    sightings.iter().map(|(_, s)| s.pattern).collect()
}
