//! Facts every work-items checker may read, kept once per run instead of once per checker.
//!
//! Terminology:
//! - *ledgers*: each replica's worker side ([`Ledger`]): open pass, calls in flight, held
//!   claim, stop.
//! - *book*: the items as the services' applies changed them ([`ItemBook`]).
//! - *before view*: as of the events before the one being judged. Every checker that reads a
//!   ledger or the book judged an event before taking it in, so the before view is the only
//!   one kept: both are moved on when every checker has read the event.
//!
//! Seven checkers read every replica's ledger and five the book; each would otherwise keep its
//! own, fed only the kinds it reads. A ledger moves on calls, answers, pass notes, stops and
//! restarts only, the book on applies only, all within what those checkers read; the test
//! below holds the shared views against private copies fed as each checker would feed its
//! own, and against a reference that works the book and the ledgers out again from the whole
//! history.

use leasesim_invariants::PerReplica;

use super::track::{BookItem, ItemBook, Ledger};
use crate::WorkItems;
use crate::events::{Event, ReplicaId, Stamped};

/// Every replica's ledger and the item book, as of the events before the one being judged.
#[derive(Debug, Default)]
pub struct Facts {
    ledgers: PerReplica<Ledger>,
    book: ItemBook,
}

/// A replica no event has named yet: no pass, nothing in flight, no claim, no stop.
static EMPTY_LEDGER: Ledger = Ledger::EMPTY;

impl Facts {
    /// `replica`'s worker side before the event being judged.
    pub(crate) fn ledger(&self, replica: ReplicaId) -> &Ledger {
        self.ledgers.get(replica).unwrap_or(&EMPTY_LEDGER)
    }

    /// `item` in the book before the event being judged.
    pub(crate) fn item(&self, item: u32) -> &BookItem {
        self.book.item(item)
    }

    /// The live claim's token of `item` at `event`'s instant, before the event.
    pub(crate) fn live(&self, item: u32, event: &Stamped<Event>) -> Option<u64> {
        self.book.live(item, event)
    }
}

impl leasesim_invariants::Facts<WorkItems> for Facts {
    fn leave(&mut self, event: &Stamped<Event>) {
        if let Some(replica) = event.event.replica {
            let ledger = self.ledgers.at(replica);
            let in_flight = ledger.in_flight.len();
            ledger.observe(event);
            // invariant: an event sends at most one call.
            debug_assert!(ledger.in_flight.len() <= in_flight + 1);
        }
        self.book.observe(event);
    }
}

/// The shared views against private copies fed as each checker would feed its own, and
/// against a reference written apart from `track`.
///
/// Terminology:
/// - *feed*: the kinds one checker read before the facts were shared; its private ledgers
///   took in those events of each replica, its private book those events.
/// - *stream*: every kind of event (world and replica, notes, clock and task events), with a
///   few values each so that calls, answers, items and tokens recur; call ids are drawn from
///   a small range, so answers name sent calls, unsent ones and calls answered twice.
/// - Views are compared whole, by their debug text.
/// - *reference*: each item and each replica's plain ledger parts (calls in flight, open pass,
///   stop, the pass's calls, the held claim) worked out from the history before the event by
///   looking back over it, not step by step as `track` does: the private copies run `track`'s
///   own code, so only the reference can catch a wrong step there.
#[cfg(test)]
mod tests {
    use leasesim_events::{NetFailure, mask};
    use leasesim_invariants::Facts as _;
    use proptest::prelude::*;

    use super::*;
    use crate::events::ItemState;
    use crate::events::{Answer, Applied, EPOCH_MS, EndKind, ErrorCode, EventKind, LeaseView};
    use crate::events::{Mark, Note, Op, PassCounts, Phase, Prior, Request, StatusView, notes};

    /// The ledger checkers' feed (worker side and pass notes), then the book checkers' two.
    const LEDGER_FEED: u32 = mask::WORKER_SIDE | notes::PASS;
    const BOOK_FEEDS: [u32; 2] = [mask::CALL | mask::SERVICE_SIDE, mask::APPLIED];

    fn request(pick: u8, item: u32, token: u64) -> Request {
        let now_ms = EPOCH_MS;
        let error = ErrorCode::Timeout(Op::Apply);
        match pick % 8 {
            0 => Request::Claim {
                item,
                lease_ms: 100,
                now_ms,
            },
            1 => Request::Apply {
                item,
                token,
                chunk: 0,
                now_ms,
            },
            2 => Request::Done {
                item,
                token,
                now_ms,
            },
            3 => Request::Release {
                item,
                token,
                error,
                now_ms,
            },
            4 => Request::Fail {
                item,
                token,
                error,
                now_ms,
            },
            5 => Request::Status,
            6 => Request::Find { after: None },
            _ => Request::Renew {
                item,
                token,
                lease_ms: 100,
                now_ms,
            },
        }
    }

    fn answer(pick: u8, item: u32, token: u64) -> (Op, Answer) {
        let lease = LeaseView {
            item,
            token,
            expires_at_ms: EPOCH_MS + 500,
            attempt: 1,
            chunks: 2,
        };
        let status = StatusView::default();
        match pick % 7 {
            0 => (Op::Claim, Answer::Claimed(lease)),
            1 => (Op::Done, Answer::Ok),
            2 => (Op::Release, Answer::Ok),
            3 => (Op::Apply, Answer::LeaseLost),
            4 => (Op::Apply, Answer::Applied { fresh: true }),
            5 => (Op::Status, Answer::Status(status)),
            _ => (Op::Find, Answer::Failed(NetFailure::Timeout)),
        }
    }

    fn applied(pick: u8, item: u32, token: u64, at_ms: u64) -> Applied {
        let expires_at_ms = EPOCH_MS + at_ms + 300;
        match pick % 5 {
            0 => Applied::Claimed {
                item,
                token,
                expires_at_ms,
                attempt: 1,
                chunks: 2,
                prior: Prior::Fresh,
            },
            1 => Applied::Renewed {
                item,
                token,
                expires_at_ms,
            },
            2 => Applied::ChunkApplied {
                item,
                token,
                chunk: u32::from(pick % 3),
                fresh: true,
                live: Some(token),
            },
            3 => Applied::Marked {
                item,
                token,
                mark: [Mark::Done, Mark::Released, Mark::Failed][usize::from(pick % 3)],
                repeat: pick.is_multiple_of(2),
                live: Some(token),
            },
            _ => Applied::ProviderApplied {
                item,
                key: crate::events::Key { item, salt: 0 },
            },
        }
    }

    fn other(pick: u8, at_ms: u64) -> EventKind {
        let status = StatusView::default();
        let ended = Note::PassEnded {
            pass: 1,
            end: EndKind::Complete,
            counts: PassCounts::default(),
            status: None,
        };
        let tally = Note::Tally {
            status,
            first_open: None,
        };
        [
            EventKind::Note(Note::PassStarted { pass: 1 }),
            EventKind::Note(ended),
            EventKind::Note(tally),
            EventKind::StopCalled,
            EventKind::StopResolved,
            EventKind::Restarted,
            EventKind::Phase(Phase::Liveness),
            EventKind::Paused { until_ms: at_ms },
            EventKind::Resumed,
            EventKind::ClockRead { now_ms: at_ms },
            EventKind::TimerSet { duration_ms: 5 },
            EventKind::ClockJumped { by_ms: -3 },
            EventKind::TaskStarted { task: 1, name: "t" },
            EventKind::TaskEnded {
                task: 1,
                aborted: false,
            },
        ][usize::from(pick) % 14]
    }

    /// One event: (family, pick, call, item, token, replica or none, time step).
    type Raw = (u8, u8, u64, u32, u64, Option<u16>, u64);

    fn stream(raw: &[Raw]) -> Vec<Stamped<Event>> {
        let mut at_ms = 0;
        let event = |(seq, &(family, pick, call, item, token, replica, step)): (usize, &Raw)| {
            at_ms += step;
            let kind = match family % 6 {
                0 => EventKind::Call {
                    call,
                    request: request(pick, item, token),
                },
                1 => {
                    let (op, answer) = answer(pick, item, token);
                    EventKind::Answered { call, op, answer }
                }
                2 => EventKind::Applied {
                    call,
                    applied: applied(pick, item, token, at_ms),
                },
                3 => [
                    EventKind::Rejected { call, op: Op::Done },
                    EventKind::ReplyLost { call },
                    EventKind::RequestLost {
                        call,
                        op: Op::Apply,
                    },
                ][usize::from(pick % 3)],
                _ => other(pick, at_ms),
            };
            let event = Event {
                replica: replica.map(ReplicaId),
                kind,
            };
            Stamped {
                seq: seq as u64,
                at_ms,
                event,
            }
        };
        raw.iter().enumerate().map(event).collect()
    }

    fn text<T: std::fmt::Debug>(value: &T) -> String {
        format!("{value:?}")
    }

    /// The reference: the book and the ledgers' plain parts worked out again from the whole
    /// history before an event, by looking back over it (no code shared with `track`).
    mod reference {
        use std::collections::BTreeMap;

        use super::*;

        /// The `Applied` effects on `item`, oldest first.
        fn applies(history: &[Stamped<Event>], item: u32) -> Vec<(u64, Applied)> {
            let of_item = |applied: &Applied| match *applied {
                Applied::Claimed { item: i, .. }
                | Applied::Renewed { item: i, .. }
                | Applied::ChunkApplied { item: i, .. }
                | Applied::Marked { item: i, .. }
                | Applied::ProviderApplied { item: i, .. } => i == item,
                _ => false,
            };
            let applied = |event: &Stamped<Event>| match event.event.kind {
                EventKind::Applied { applied, .. } if of_item(&applied) => {
                    Some((event.seq, applied))
                }
                _ => None,
            };
            history.iter().filter_map(applied).collect()
        }

        /// What the book must say of one item: state, token, expiry, chunks, the first chunk
        /// missing, applications, and the seqs of its last claim, last mark, first effect.
        pub type ItemView = (ItemState, u64, u64, u32, Option<u32>, u32, [Option<u64>; 3]);

        pub fn item(history: &[Stamped<Event>], item: u32) -> ItemView {
            let applies = applies(history, item);
            let last_claim = applies
                .iter()
                .rposition(|(_, a)| matches!(a, Applied::Claimed { .. }));
            let (token, claim_expiry_ms, chunks, claimed) = match last_claim.map(|i| applies[i]) {
                Some((
                    seq,
                    Applied::Claimed {
                        token,
                        expires_at_ms,
                        chunks,
                        ..
                    },
                )) => (token, expires_at_ms, chunks, Some(seq)),
                _ => (0, 0, 0, None),
            };
            let since_claim = &applies[last_claim.unwrap_or(0)..];
            let renewed_ms = since_claim.iter().rev().find_map(|(_, a)| match *a {
                Applied::Renewed {
                    token: t,
                    expires_at_ms,
                    ..
                } if t == token => Some(expires_at_ms),
                _ => None,
            });
            let last_mark = applies.iter().rev().find_map(|&(seq, a)| match a {
                Applied::Marked {
                    mark,
                    repeat: false,
                    ..
                } => Some((seq, mark)),
                _ => None,
            });
            let state = match (claimed, last_mark) {
                (Some(claim), Some((mark_seq, _))) if claim > mark_seq => ItemState::Claimed,
                (_, Some((_, Mark::Done))) => ItemState::Done,
                (_, Some((_, Mark::Released))) => ItemState::Released,
                (_, Some((_, Mark::Failed))) => ItemState::Failed,
                (Some(_), None) => ItemState::Claimed,
                (None, None) => ItemState::Pending,
            };
            let chunk_done = |c: u32| {
                applies
                    .iter()
                    .any(|(_, a)| matches!(*a, Applied::ChunkApplied { chunk, .. } if chunk == c))
            };
            let effects: Vec<u64> = applies
                .iter()
                .filter(|(_, a)| matches!(a, Applied::ProviderApplied { .. }))
                .map(|(seq, _)| *seq)
                .collect();
            let marked = last_mark.map(|(seq, _)| seq);
            (
                state,
                token,
                renewed_ms.unwrap_or(claim_expiry_ms),
                chunks,
                (0..chunks).find(|&c| !chunk_done(c)),
                effects.len() as u32,
                [claimed, marked, effects.first().copied()],
            )
        }

        /// The live claim's token of `item` at `at_ms` (run time): claimed and not expired.
        pub fn live(history: &[Stamped<Event>], item: u32, at_ms: u64) -> Option<u64> {
            let (state, token, expires_at_ms, ..) = self::item(history, item);
            (state == ItemState::Claimed && EPOCH_MS + at_ms < expires_at_ms).then_some(token)
        }

        /// What a ledger must say: the calls in flight (ids, sorted), the open pass's and the
        /// stop's seqs, the calls of the open pass, the held claim's item, token and answer.
        pub type LedgerView = (
            Vec<u64>,
            Option<u64>,
            Option<u64>,
            u32,
            Option<(u32, u64, u64)>,
        );

        pub fn ledger(history: &[Stamped<Event>], replica: ReplicaId) -> LedgerView {
            let mine: Vec<&Stamped<Event>> = history
                .iter()
                .filter(|e| e.event.replica == Some(replica))
                .collect();
            let incarnation = match mine
                .iter()
                .rposition(|e| matches!(e.event.kind, EventKind::Restarted))
            {
                Some(restart) => &mine[restart + 1..],
                None => &mine[..],
            };
            // Calls sent minus calls answered, per id; an answer to a call not in flight
            // counts for nothing, and only answers to calls in flight grant a claim.
            let mut open: BTreeMap<u64, u32> = BTreeMap::new();
            let mut granted = Vec::new();
            for event in incarnation {
                match event.event.kind {
                    EventKind::Call { call, .. } => *open.entry(call).or_default() += 1,
                    EventKind::Answered { call, answer, .. } => {
                        if let Some(count) = open.get_mut(&call).filter(|c| **c > 0) {
                            *count -= 1;
                            if let Answer::Claimed(lease) = answer {
                                granted.push((event.seq, lease.item, lease.token));
                            }
                        }
                    }
                    _ => {}
                }
            }
            let in_flight = open
                .iter()
                .flat_map(|(&call, &count)| std::iter::repeat_n(call, count as usize))
                .collect();
            let is_note = |e: &&&Stamped<Event>, started: bool| match e.event.kind {
                EventKind::Note(Note::PassStarted { .. }) => started,
                EventKind::Note(Note::PassEnded { .. }) => !started,
                _ => false,
            };
            let started = incarnation
                .iter()
                .rfind(|e| is_note(e, true))
                .map(|e| e.seq);
            let ended = incarnation
                .iter()
                .rfind(|e| is_note(e, false))
                .map(|e| e.seq);
            let pass = started.filter(|&s| ended.is_none_or(|end| end < s));
            let stop = incarnation
                .iter()
                .rfind(|e| matches!(e.event.kind, EventKind::StopCalled))
                .map(|e| e.seq);
            let calls_from = started.unwrap_or(0);
            let pass_calls = incarnation
                .iter()
                .filter(|e| matches!(e.event.kind, EventKind::Call { .. }))
                .filter(|e| started.is_none() || e.seq > calls_from)
                .count() as u32;
            let held = granted
                .last()
                .filter(|(seq, ..)| ended.is_none_or(|end| end < *seq))
                .map(|&(seq, item, token)| (item, token, seq));
            (in_flight, pass, stop, pass_calls, held)
        }
    }

    /// The book's view of an item, in the reference's terms.
    fn item_view(item: &BookItem) -> reference::ItemView {
        let seq = |event: &Option<Stamped<Event>>| event.as_ref().map(|e| e.seq);
        let seqs = [
            seq(&item.claimed),
            seq(&item.marked),
            seq(&item.first_effect),
        ];
        (
            item.state,
            item.token,
            item.expires_at_ms,
            item.chunks,
            item.missing_chunk(),
            item.applications,
            seqs,
        )
    }

    /// A ledger's view, in the reference's terms.
    fn ledger_view(ledger: &Ledger) -> reference::LedgerView {
        let mut in_flight: Vec<u64> = ledger.in_flight.iter().map(|(id, ..)| *id).collect();
        in_flight.sort_unstable();
        let held = ledger
            .held
            .as_ref()
            .map(|h| (h.item, h.token, h.granted.seq));
        let (pass, stop) = (
            ledger.pass.as_ref().map(|e| e.seq),
            ledger.stop.as_ref().map(|e| e.seq),
        );
        (in_flight, pass, stop, ledger.pass_calls, held)
    }

    /// Before each event, every replica's ledger and the book equal the private copies.
    fn check(events: &[Stamped<Event>]) -> Result<(), TestCaseError> {
        let mut facts = Facts::default();
        let mut ledgers: PerReplica<Ledger> = PerReplica::default();
        let mut books: [ItemBook; 2] = Default::default();
        for (index, event) in events.iter().enumerate() {
            facts.enter(event);
            let history = &events[..index];
            for replica in (0..3).map(ReplicaId) {
                prop_assert_eq!(
                    ledger_view(facts.ledger(replica)),
                    reference::ledger(history, replica)
                );
            }
            for item in 0..4 {
                prop_assert_eq!(item_view(facts.item(item)), reference::item(history, item));
                prop_assert_eq!(
                    facts.live(item, event),
                    reference::live(history, item, event.at_ms)
                );
            }
            for replica in (0..3).map(ReplicaId) {
                let private = ledgers.get(replica).unwrap_or(&EMPTY_LEDGER);
                prop_assert_eq!(text(facts.ledger(replica)), text(private), "{}", event.seq);
            }
            for book in &books {
                for item in 0..4 {
                    prop_assert_eq!(text(facts.item(item)), text(book.item(item)));
                    prop_assert_eq!(facts.live(item, event), book.live(item, event));
                }
            }
            let bit = event.event.kind.bit();
            if let Some(replica) = event.event.replica.filter(|_| bit & LEDGER_FEED != 0) {
                ledgers.at(replica).observe(event);
            }
            for (book, feed) in books.iter_mut().zip(BOOK_FEEDS) {
                if bit & feed != 0 {
                    book.observe(event);
                }
            }
            facts.leave(event);
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        #[test]
        fn shared_views_equal_every_checkers_private_copy(
            raw in proptest::collection::vec(
                (0u8..6, any::<u8>(), 1u64..6, 0u32..4, 1u64..4,
                 proptest::option::weighted(0.9, 0u16..3), 0u64..60),
                0..80,
            )
        ) {
            check(&stream(&raw))?;
        }
    }
}
