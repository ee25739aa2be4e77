//! Building blocks the retention checkers keep their state in: each replica's term flow is
//! kept once per run in the shared facts (`super::Facts`), the rest by each checker itself.
//!
//! Terminology:
//! - *per replica*, *ring*, *call book*: the shared building blocks of `leasesim_invariants`.
//! - *term ledger*: what one replica sent and received in its latest term: the calls waiting
//!   for an answer, the leases received, the renewal that lost leadership, the releases.
//!   Only answers to calls sent in the same term count.
//! - *term flow*: the calls of one term in order, for the checkers of the term's shape.

pub(crate) use leasesim_invariants::{CallBook, PerReplica, replica_of};

use crate::events::{Answer, Event, EventKind, Note, OpKind, Request, Stamped};

/// The last `N` events pushed, oldest first.
pub(crate) type Ring<const N: usize> = leasesim_invariants::Ring<Event, N>;

/// The term number carried by a `TermStarted` or `TermEnded` event (0 for anything else).
pub(crate) fn term_number(event: &Stamped<Event>) -> u32 {
    match event.event.kind {
        EventKind::Note(Note::TermStarted { term } | Note::TermEnded { term, .. }) => term,
        _ => 0,
    }
}

/// A call of the latest term that has not been answered yet.
#[derive(Clone, Copy, Debug)]
struct Waiting {
    call: u64,
    op: OpKind,
    /// The lease token a release carries (0 for other operations).
    release_token: u64,
    /// When it was sent (virtual ms).
    sent_ms: u64,
}

/// What one replica sent and received in its latest term (kept after the term ends, until
/// the next one starts).
#[derive(Debug, Default)]
pub(crate) struct TermLedger {
    /// A term is open: `TermStarted` seen and its `TermEnded` not yet.
    pub(crate) open: bool,
    /// The latest `TermStarted`.
    pub(crate) started: Option<Stamped<Event>>,
    /// The latest `TermEnded`.
    pub(crate) ended: Option<Stamped<Event>>,
    waiting: Vec<Waiting>,
    /// The answer to the term's acquire, whatever it was.
    pub(crate) acquire_answer: Option<Stamped<Event>>,
    /// The term's acquire answered a lease.
    pub(crate) acquired: bool,
    /// The highest token received in the term, and the answer that carried it.
    pub(crate) latest: Option<(u64, Stamped<Event>)>,
    /// Every token received in the term.
    pub(crate) tokens: Vec<u64>,
    /// The first renewal answer of the term that was `None` or an error.
    pub(crate) lost: Option<Stamped<Event>>,
    /// The first renewal answer of the term that was `None`.
    pub(crate) lost_by_none: Option<Stamped<Event>>,
    /// The highest token a release of the term carried, and that release's call.
    pub(crate) released: Option<(u64, Stamped<Event>)>,
    /// The highest token of a release of the term that was answered.
    pub(crate) release_answered: Option<u64>,
    /// Rows the term's deletes answered, summed.
    pub(crate) rows_answered: u64,
}

impl TermLedger {
    /// A replica's ledger before its first term.
    pub(crate) const EMPTY: TermLedger = TermLedger {
        open: false,
        started: None,
        ended: None,
        waiting: Vec::new(),
        acquire_answer: None,
        acquired: false,
        latest: None,
        tokens: Vec::new(),
        lost: None,
        lost_by_none: None,
        released: None,
        release_answered: None,
        rows_answered: 0,
    };

    /// Reads one event of this ledger's replica.
    pub(crate) fn observe(&mut self, event: &Stamped<Event>) {
        match event.event.kind {
            EventKind::Note(Note::TermStarted { .. }) => self.start(event),
            EventKind::Note(Note::TermEnded { .. }) => {
                // invariant: a TermEnded closes the open term; the ledger stays readable.
                self.open = false;
                self.ended = Some(event.clone());
            }
            EventKind::Call { call, request } if self.open => self.sent(event, call, request),
            EventKind::Answered { call, answer, .. } => self.answered(event, call, answer),
            _ => {}
        }
    }

    /// The number of the latest term (0 before any).
    pub(crate) fn term(&self) -> u32 {
        self.started.as_ref().map_or(0, term_number)
    }

    /// The highest token received in the latest term.
    pub(crate) fn latest_token(&self) -> Option<u64> {
        self.latest.as_ref().map(|(token, _)| *token)
    }

    /// The answer that carried the latest token.
    pub(crate) fn latest_answer(&self) -> Option<&Stamped<Event>> {
        self.latest.as_ref().map(|(_, answer)| answer)
    }

    /// The release call with the highest token, if the term sent one.
    pub(crate) fn release_call(&self) -> Option<&Stamped<Event>> {
        self.released.as_ref().map(|(_, call)| call)
    }

    /// The calls of the latest term still waiting for their answer: id, operation, sent at.
    pub(crate) fn in_flight(&self) -> impl Iterator<Item = (u64, OpKind, u64)> + '_ {
        self.waiting.iter().map(|w| (w.call, w.op, w.sent_ms))
    }

    fn start(&mut self, event: &Stamped<Event>) {
        self.open = true;
        self.started = Some(event.clone());
        self.waiting.clear();
        self.acquire_answer = None;
        self.acquired = false;
        self.latest = None;
        self.tokens.clear();
        self.lost = None;
        self.lost_by_none = None;
        self.released = None;
        self.release_answered = None;
        self.rows_answered = 0;
        // invariant: a new term starts with nothing sent, received or lost.
        debug_assert!(self.waiting.is_empty() && self.tokens.is_empty() && !self.acquired);
    }

    fn sent(&mut self, event: &Stamped<Event>, call: u64, request: Request) {
        let release_token = match request {
            Request::Release { lease } => lease.token,
            _ => 0,
        };
        self.waiting.push(Waiting {
            call,
            op: request.op(),
            release_token,
            sent_ms: event.at_ms,
        });
        if let Request::Release { lease } = request
            && self
                .released
                .as_ref()
                .is_none_or(|(token, _)| lease.token > *token)
        {
            self.released = Some((lease.token, event.clone()));
        }
    }

    fn answered(&mut self, event: &Stamped<Event>, call: u64, answer: Answer) {
        let Some(index) = self.waiting.iter().position(|waiting| waiting.call == call) else {
            return;
        };
        let waiting = self.waiting.swap_remove(index);
        match (waiting.op, answer) {
            (OpKind::Acquire, _) => {
                self.acquire_answer = Some(event.clone());
                if let Answer::Lease(Some(lease)) = answer {
                    self.acquired = true;
                    self.receive(lease.token, event);
                }
            }
            (OpKind::Renew, Answer::Lease(Some(lease))) => self.receive(lease.token, event),
            (OpKind::Renew, Answer::Lease(None)) => {
                self.lost.get_or_insert_with(|| event.clone());
                self.lost_by_none.get_or_insert_with(|| event.clone());
            }
            (OpKind::Renew, _) => {
                self.lost.get_or_insert_with(|| event.clone());
            }
            (OpKind::Release, _) => {
                let token = waiting.release_token;
                self.release_answered = Some(self.release_answered.map_or(token, |t| t.max(token)));
            }
            (OpKind::Delete, Answer::Rows(rows)) => self.rows_answered += u64::from(rows),
            (OpKind::Delete, _) => {}
        }
    }

    fn receive(&mut self, token: u64, answer: &Stamped<Event>) {
        self.tokens.push(token);
        if self.latest_token().is_none_or(|latest| token > latest) {
            self.latest = Some((token, answer.clone()));
        }
        debug_assert!(self.latest_token() >= Some(token));
    }
}

/// One replica's latest term as a sequence of steps (see *term flow*), for the checkers of
/// how a term begins and ends. Kept after the term ends, until the next one starts.
#[derive(Debug, Default)]
pub(crate) struct TermFlow {
    pub(crate) ledger: TermLedger,
    /// The term's first call.
    pub(crate) first_call: Option<Stamped<Event>>,
    /// The term's first acquire call.
    pub(crate) acquire_call: Option<Stamped<Event>>,
    /// The term's first release call.
    pub(crate) release_call: Option<Stamped<Event>>,
    /// Delete calls of the term not answered yet, with their limit.
    limits: Vec<(u64, u32)>,
    /// The first delete answer of the term with fewer rows than asked, and that limit.
    pub(crate) short: Option<(Stamped<Event>, u32)>,
    /// The first delete answer of the term that was an error.
    pub(crate) delete_error: Option<Stamped<Event>>,
    /// The incarnation's first `StopCalled` (cleared by `Restarted`).
    pub(crate) stop: Option<Stamped<Event>>,
}

impl TermFlow {
    /// A replica's flow before its first term.
    pub(crate) const EMPTY: TermFlow = TermFlow {
        ledger: TermLedger::EMPTY,
        first_call: None,
        acquire_call: None,
        release_call: None,
        limits: Vec::new(),
        short: None,
        delete_error: None,
        stop: None,
    };

    /// Reads one event of this flow's replica.
    pub(crate) fn observe(&mut self, event: &Stamped<Event>) {
        self.ledger.observe(event);
        match event.event.kind {
            EventKind::Note(Note::TermStarted { .. }) => {
                self.first_call = None;
                self.acquire_call = None;
                self.release_call = None;
                self.limits.clear();
                self.short = None;
                self.delete_error = None;
                // invariant: the flow of a new term is empty, whatever the last one left.
                debug_assert!(self.ledger.open && self.first_call.is_none());
            }
            EventKind::StopCalled => {
                self.stop.get_or_insert_with(|| event.clone());
            }
            // invariant: a fresh incarnation starts unstopped.
            EventKind::Restarted => self.stop = None,
            EventKind::Call { call, request } if self.ledger.open => {
                self.first_call.get_or_insert_with(|| event.clone());
                match request {
                    Request::Acquire => {
                        self.acquire_call.get_or_insert_with(|| event.clone());
                    }
                    Request::Release { .. } => {
                        self.release_call.get_or_insert_with(|| event.clone());
                    }
                    Request::Delete { limit, .. } => self.limits.push((call, limit)),
                    Request::Renew { .. } => {}
                }
            }
            EventKind::Answered {
                call,
                op: OpKind::Delete,
                answer,
            } => self.delete_answered(event, call, answer),
            _ => {}
        }
    }

    fn delete_answered(&mut self, event: &Stamped<Event>, call: u64, answer: Answer) {
        let Some(index) = self.limits.iter().position(|(sent, _)| *sent == call) else {
            return;
        };
        let (_, limit) = self.limits.swap_remove(index);
        match answer {
            Answer::Rows(rows) if rows < limit => {
                self.short.get_or_insert_with(|| (event.clone(), limit));
            }
            Answer::Failed(_) => {
                self.delete_error.get_or_insert_with(|| event.clone());
            }
            _ => {}
        }
    }

    /// A delete of the term is waiting for its answer.
    pub(crate) fn deleting(&self) -> bool {
        !self.limits.is_empty()
    }
}
