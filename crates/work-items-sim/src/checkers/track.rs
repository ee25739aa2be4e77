//! What the checkers' shared facts are made of (see `super::facts`): the items as the services
//! changed them, and each replica's passes and claims as its worker saw them.
//!
//! Terminology:
//! - *book*: the items as the `Applied` events changed them (claims, renewals, chunks,
//!   provider applications, end marks). A checker never asks the service: it replays the
//!   service's decisions from events, so it sees a stale write even with fencing off.
//! - *live* (book): the item's last claim, while the item is claimed and the claim's expiry
//!   (store time) is ahead of the event's instant.
//! - *ledger*: one replica's worker side: the open pass, the calls in flight, the claim it
//!   holds (from the claim's answer until another claim's answer, or the pass's end), and the
//!   stop of its current incarnation.
//! - *held claim*: what the worker learned about its claim: lost (a write answered
//!   lease-lost), its last transport failure, whether the provider refused, whether a provider
//!   apply is ambiguous, and how it ended (done, failed, released, abandoned).

use leasesim_events::NetFailure;

use crate::events::{
    Answer, Applied, EPOCH_MS, ErrorCode, Event, EventKind, ItemState, Key, LookupView, Mark, Note,
    Op, PassCounts, ProviderView, Request, Stamped,
};

/// One item in a checker's book.
#[derive(Debug)]
pub(crate) struct BookItem {
    pub state: ItemState,
    pub token: u64,
    pub expires_at_ms: u64,
    pub chunks: u32,
    pub applied: u64,
    /// How many times the provider carried out its effect.
    pub applications: u32,
    /// The `Applied` event of its last claim.
    pub claimed: Option<Stamped<Event>>,
    /// The `Applied` event of its last end mark.
    pub marked: Option<Stamped<Event>>,
    /// The provider's first application.
    pub first_effect: Option<Stamped<Event>>,
}

impl Default for BookItem {
    fn default() -> Self {
        BookItem::UNTOUCHED
    }
}

/// An item no apply has touched.
static UNTOUCHED: BookItem = BookItem::UNTOUCHED;

impl BookItem {
    /// An item no apply has touched: pending, never claimed.
    pub const UNTOUCHED: BookItem = BookItem {
        state: ItemState::Pending,
        token: 0,
        expires_at_ms: 0,
        chunks: 0,
        applied: 0,
        applications: 0,
        claimed: None,
        marked: None,
        first_effect: None,
    };

    /// The first chunk not applied yet.
    pub fn missing_chunk(&self) -> Option<u32> {
        (0..self.chunks).find(|&c| self.applied & (1u64 << c.min(63)) == 0)
    }
}

/// The store time of an event.
pub(crate) fn store_ms(event: &Stamped<Event>) -> u64 {
    EPOCH_MS + event.at_ms
}

/// The items as the services changed them.
#[derive(Debug, Default)]
pub(crate) struct ItemBook {
    items: Vec<BookItem>,
}

impl ItemBook {
    fn get(&mut self, item: u32) -> &mut BookItem {
        let index = item as usize;
        if index >= self.items.len() {
            self.items.resize_with(index + 1, BookItem::default);
        }
        &mut self.items[index]
    }

    /// `item` as the applies so far left it.
    pub fn item(&self, item: u32) -> &BookItem {
        self.items.get(item as usize).unwrap_or(&UNTOUCHED)
    }

    /// The live claim's token of `item` at `event`'s instant.
    pub fn live(&self, item: u32, event: &Stamped<Event>) -> Option<u64> {
        let now_ms = store_ms(event);
        let entry = self.item(item);
        (entry.state == ItemState::Claimed && now_ms < entry.expires_at_ms).then_some(entry.token)
    }

    /// Takes in an `Applied` event (judge it first: this records its effect).
    pub fn observe(&mut self, event: &Stamped<Event>) {
        let EventKind::Applied { applied, .. } = event.event.kind else {
            return;
        };
        match applied {
            Applied::Claimed {
                item,
                token,
                expires_at_ms,
                chunks,
                ..
            } => {
                let entry = self.get(item);
                entry.state = ItemState::Claimed;
                entry.token = token;
                entry.expires_at_ms = expires_at_ms;
                entry.chunks = chunks;
                entry.claimed = Some(event.clone());
            }
            Applied::Renewed {
                item,
                token,
                expires_at_ms,
            } => {
                let entry = self.get(item);
                if entry.token == token {
                    entry.expires_at_ms = expires_at_ms;
                }
            }
            Applied::ChunkApplied { item, chunk, .. } => {
                self.get(item).applied |= 1u64 << chunk.min(63);
            }
            Applied::ProviderApplied { item, .. } => {
                let entry = self.get(item);
                entry.applications += 1;
                entry.first_effect.get_or_insert_with(|| event.clone());
            }
            Applied::Marked {
                item,
                mark,
                repeat: false,
                ..
            } => {
                let entry = self.get(item);
                entry.state = match mark {
                    Mark::Done => ItemState::Done,
                    Mark::Released => ItemState::Released,
                    Mark::Failed => ItemState::Failed,
                };
                entry.marked = Some(event.clone());
            }
            _ => {}
        }
    }
}

/// How a claim ended for its worker, as the answers show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ending {
    Done,
    Failed,
    Released,
    Lost,
    /// A release or fail was tried and never answered ok.
    Abandoned,
    /// Nothing ended it.
    Open,
}

/// A claim a replica holds, and what its worker learned about it.
#[derive(Debug)]
pub(crate) struct Held {
    pub item: u32,
    pub token: u64,
    pub attempt: u32,
    /// The claim's answer.
    pub granted: Stamped<Event>,
    /// The lease-lost answer, if any.
    pub lost: Option<Stamped<Event>>,
    /// Transport failures of this claim's calls that no later call of the same operation
    /// got past, oldest first (at most one per operation): a step retried to success no
    /// longer counts, so the last one is the error of the step the worker is stuck on.
    pub failures: Vec<(ErrorCode, Stamped<Event>)>,
    /// The provider (or a lookup) answered refused.
    pub refused: Option<Stamped<Event>>,
    /// A provider apply that answered a timeout, not yet settled by a lookup.
    pub ambiguous: Option<(Key, Stamped<Event>)>,
    /// A chunk of this claim was applied (answered).
    pub progressed: bool,
    pub ending: Ending,
    /// A release or fail of this claim was sent.
    pub settle_sent: bool,
    /// Releases and fails of this claim that failed in transport.
    pub give_backs_failed: u32,
}

impl Held {
    fn new(granted: &Stamped<Event>, item: u32, token: u64, attempt: u32) -> Held {
        Held {
            item,
            token,
            attempt,
            granted: granted.clone(),
            lost: None,
            failures: Vec::new(),
            refused: None,
            ambiguous: None,
            progressed: false,
            ending: Ending::Open,
            settle_sent: false,
            give_backs_failed: 0,
        }
    }

    /// Has the claim ended for its worker (an end mark answered ok, or lease-lost)?
    pub fn settled(&self) -> bool {
        !matches!(self.ending, Ending::Open | Ending::Abandoned)
    }

    /// The last transport failure of a step not retried to success: the error a worker that
    /// gives the claim up now must give it up with.
    pub fn last_failure(&self) -> Option<&(ErrorCode, Stamped<Event>)> {
        self.failures.last()
    }

    fn answered(&mut self, request: &Request, answer: Answer, event: &Stamped<Event>) {
        let op = request.op();
        if !matches!(answer, Answer::Failed(_)) {
            self.failures.retain(|(code, _)| code.op() != Some(op));
        }
        match answer {
            Answer::LeaseLost => {
                self.lost.get_or_insert_with(|| event.clone());
                self.ending = Ending::Lost;
            }
            Answer::Ok => {
                self.ending = match op {
                    Op::Done => Ending::Done,
                    Op::Fail => Ending::Failed,
                    _ => Ending::Released,
                };
            }
            Answer::Applied { .. } => self.progressed = true,
            Answer::Provider(ProviderView::Refused) | Answer::Lookup(LookupView::Refused) => {
                self.refused = Some(event.clone());
                self.settle_lookup(request);
            }
            Answer::Lookup(_) => self.settle_lookup(request),
            Answer::Failed(failure) => self.failed(request, failure, event),
            _ => {}
        }
    }

    /// A lookup answered: it settles an ambiguous apply of the same key.
    fn settle_lookup(&mut self, request: &Request) {
        let same_key = matches!((request, &self.ambiguous),
            (Request::Lookup { key }, Some((ambiguous, _))) if key == ambiguous);
        if same_key {
            self.ambiguous = None;
        }
    }

    fn failed(&mut self, request: &Request, failure: NetFailure, event: &Stamped<Event>) {
        let op = request.op();
        if matches!(op, Op::Release | Op::Fail) {
            // Giving the claim back failed: it is abandoned unless a retry gets through. The
            // error the claim is given back with stays the one that made the worker give up.
            if self.ending == Ending::Open {
                self.ending = Ending::Abandoned;
            }
            self.give_backs_failed += 1;
            return;
        }
        let code = match failure {
            NetFailure::Rejected => ErrorCode::Rejected(op),
            NetFailure::Timeout => ErrorCode::Timeout(op),
        };
        self.failures.retain(|(known, _)| known.op() != Some(op));
        self.failures.push((code, event.clone()));
        // invariant: at most one unresolved failure per operation.
        debug_assert!(
            self.failures.iter().enumerate().all(|(i, (a, _))| {
                self.failures[i + 1..].iter().all(|(b, _)| a.op() != b.op())
            })
        );
        if let (Request::ProviderApply { key, .. }, NetFailure::Timeout) = (request, failure) {
            self.ambiguous = Some((*key, event.clone()));
        }
    }
}

/// One replica's worker side.
#[derive(Debug)]
pub(crate) struct Ledger {
    /// The open pass's `PassStarted`.
    pub pass: Option<Stamped<Event>>,
    /// Calls sent and not answered yet: id, request, the `Call` event.
    pub in_flight: Vec<(u64, Request, Stamped<Event>)>,
    pub held: Option<Held>,
    /// The stop of this incarnation.
    pub stop: Option<Stamped<Event>>,
    /// The endings of the open pass's claims so far (the held one not included).
    pub counts: PassCounts,
    /// Claims the open pass left without an ending.
    pub unended: u32,
    /// The last status answer of the open pass, and the last failed find or status answer.
    pub status: Option<Stamped<Event>>,
    pub unavailable: Option<Stamped<Event>>,
    /// Calls the open pass sent.
    pub pass_calls: u32,
    /// What the open pass's last answered find found (`None`: no find answered yet).
    pub found: Option<Option<u32>>,
}

impl Default for Ledger {
    fn default() -> Self {
        Ledger::EMPTY
    }
}

impl Ledger {
    /// A replica before its first event: no pass, nothing in flight, no claim, no stop.
    pub const EMPTY: Ledger = Ledger {
        pass: None,
        in_flight: Vec::new(),
        held: None,
        stop: None,
        counts: PassCounts {
            done: 0,
            failed: 0,
            released: 0,
            lost: 0,
            abandoned: 0,
        },
        unended: 0,
        status: None,
        unavailable: None,
        pass_calls: 0,
        found: None,
    };

    /// The request of `call`, if it is in flight.
    pub fn request_of(&self, call: u64) -> Option<Request> {
        let sent = self.in_flight.iter().find(|(id, _, _)| *id == call);
        sent.map(|(_, request, _)| *request)
    }

    fn close_held(&mut self) {
        let Some(held) = self.held.take() else {
            return;
        };
        let counts = &mut self.counts;
        match held.ending {
            Ending::Done => counts.done += 1,
            Ending::Failed => counts.failed += 1,
            Ending::Released => counts.released += 1,
            Ending::Lost => counts.lost += 1,
            Ending::Abandoned => counts.abandoned += 1,
            Ending::Open => self.unended += 1,
        }
    }

    /// Takes in one event of this replica.
    pub fn observe(&mut self, event: &Stamped<Event>) {
        match event.event.kind {
            EventKind::Call { call, request } => {
                self.in_flight.push((call, request, event.clone()));
                self.pass_calls += 1;
                if matches!(request, Request::Release { .. } | Request::Fail { .. })
                    && let Some(held) = &mut self.held
                {
                    held.settle_sent = true;
                }
            }
            EventKind::Answered { call, answer, .. } => self.answered(call, answer, event),
            EventKind::Note(Note::PassStarted { .. }) => {
                self.pass = Some(event.clone());
                self.counts = PassCounts::default();
                (self.unended, self.pass_calls) = (0, 0);
                (self.status, self.unavailable, self.found) = (None, None, None);
            }
            EventKind::Note(Note::PassEnded { .. }) => {
                self.close_held();
                self.pass = None;
            }
            EventKind::StopCalled => self.stop = Some(event.clone()),
            EventKind::Restarted => *self = Ledger::default(),
            _ => {}
        }
    }

    /// An answer to `call`: settles it and tells the held claim (an unknown call is ignored).
    fn answered(&mut self, call: u64, answer: Answer, event: &Stamped<Event>) {
        let Some(index) = self.in_flight.iter().position(|(id, _, _)| *id == call) else {
            return;
        };
        let (_, request, _) = self.in_flight.swap_remove(index);
        match answer {
            Answer::Claimed(lease) => {
                self.close_held();
                self.held = Some(Held::new(event, lease.item, lease.token, lease.attempt));
            }
            Answer::Status(_) => self.status = Some(event.clone()),
            Answer::Found(found) => self.found = Some(found),
            Answer::Failed(_) if matches!(request.op(), Op::Find | Op::Status) => {
                self.unavailable = Some(event.clone());
            }
            _ => {}
        }
        let for_held = request.item().is_some()
            && !matches!(request, Request::Claim { .. } | Request::PlainClaim { .. })
            && self
                .held
                .as_ref()
                .is_some_and(|h| Some(h.item) == request.item());
        if for_held && let Some(held) = &mut self.held {
            held.answered(&request, answer, event);
        }
    }
}
