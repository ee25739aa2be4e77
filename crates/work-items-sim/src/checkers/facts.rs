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
//! Seven checkers used to keep every replica's ledger and five the book, each fed only the kinds
//! it reads. A ledger moves on calls, answers, pass notes, stops and restarts only, the book on
//! applies only, all within what those checkers read; the test below holds the shared views
//! against private copies fed as each checker fed its own.

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

/// The shared views against private copies fed as each checker would feed its own.
///
/// Terminology:
/// - *feed*: the kinds one checker read before the facts were shared; its private ledgers
///   took in those events of each replica, its private book those events.
/// - *stream*: every kind of event (world and replica, notes, clock and task events), with a
///   few values each so that calls, answers, items and tokens recur; call ids are drawn from
///   a small range, so answers name sent calls, unsent ones and calls answered twice.
/// - Views are compared whole, by their debug text.
#[cfg(test)]
mod tests {
    use leasesim_events::{NetFailure, mask};
    use leasesim_invariants::Facts as _;
    use proptest::prelude::*;

    use super::*;
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
                chunk: u32::from(pick % 2),
                fresh: true,
                live: Some(token),
            },
            3 => Applied::Marked {
                item,
                token,
                mark: [Mark::Done, Mark::Released, Mark::Failed][usize::from(pick % 3)],
                repeat: false,
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

    /// Before each event, every replica's ledger and the book equal the private copies.
    fn check(events: &[Stamped<Event>]) -> Result<(), TestCaseError> {
        let mut facts = Facts::default();
        let mut ledgers: PerReplica<Ledger> = PerReplica::default();
        let mut books: [ItemBook; 2] = Default::default();
        for event in events {
            facts.enter(event);
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
