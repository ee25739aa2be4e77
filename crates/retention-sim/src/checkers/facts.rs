//! Facts every retention checker may read, kept once per run instead of once per checker.
//!
//! Terminology:
//! - *term flow*: what one replica sent and received in its latest term, in order
//!   ([`TermFlow`], with its term ledger): derived from the replica's events alone.
//! - *before view*: a replica's term flow as of the events before the one being judged.
//! - *after view*: the same, including the event being judged.
//!
//! Kept once per run, the views spare fifteen checkers a copy of every replica's flow (such
//! copies cost a quarter of a `steady` seed's instructions). Each checker reads the view it
//! judges on: a checker that judged an event and then observed it reads the before view, one
//! that observed first reads the after view. Both views see every event of every replica,
//! whatever kinds the checkers read.

use leasesim_invariants::PerReplica;

use super::track::{TermFlow, replica_of};
use crate::Retention;
use crate::events::{ReplicaId, Stamped};

/// The term flow of every replica, before and after the event being judged.
#[derive(Debug, Default)]
pub struct Facts {
    before: PerReplica<TermFlow>,
    after: PerReplica<TermFlow>,
}

/// A replica no event has named yet: nothing sent, received or started.
static EMPTY: TermFlow = TermFlow::EMPTY;

impl Facts {
    /// `replica`'s term flow as of the events before the one being judged.
    pub(crate) fn before(&self, replica: ReplicaId) -> &TermFlow {
        self.before.get(replica).unwrap_or(&EMPTY)
    }

    /// Do the two views of `replica` agree (as they must between events)? Compares the
    /// term, whether it is open and what it received and answered.
    fn agree(&self, replica: ReplicaId) -> bool {
        let (before, after) = (&self.before(replica).ledger, &self.after(replica).ledger);
        before.term() == after.term()
            && before.open == after.open
            && before.tokens.len() == after.tokens.len()
            && before.rows_answered == after.rows_answered
    }

    /// `replica`'s term flow including the event being judged.
    pub(crate) fn after(&self, replica: ReplicaId) -> &TermFlow {
        self.after.get(replica).unwrap_or(&EMPTY)
    }
}

impl leasesim_invariants::Facts<Retention> for Facts {
    fn enter(&mut self, event: &Stamped<crate::events::Event>) {
        let Some(replica) = replica_of(event) else {
            return;
        };
        // invariant: between events the two views agree; the after view moves on first.
        debug_assert!(self.agree(replica));
        self.after.at(replica).observe(event);
    }

    fn leave(&mut self, event: &Stamped<crate::events::Event>) {
        let Some(replica) = replica_of(event) else {
            return;
        };
        self.before.at(replica).observe(event);
        // invariant: the before view has caught up with the after view.
        debug_assert!(self.agree(replica));
    }
}

/// The shared facts against a naive reference over arbitrary event streams.
///
/// Terminology:
/// - *summary*: everything a term flow tells a checker, as plain values (events by seq).
/// - *reference*: [`tests::reference`], written from the term ledger's and term flow's field
///   descriptions: for one replica it looks back over the whole prefix for the latest term and
///   recomputes every field from scratch (no state carried between events).
/// - Streams keep call ids unique (a call's id is its seq), as the world does; answers name
///   a call drawn from the stream so far (often another replica's, or no call at all).
#[cfg(test)]
mod tests {
    use leasesim_invariants::Facts as _;
    use proptest::prelude::*;

    use super::*;
    use crate::events::{Answer, EndKind, Event, EventKind, Failure, LeaseView, Note, OpKind};
    use crate::events::{Request, Stamped};

    #[derive(Debug, PartialEq, Eq)]
    struct Summary {
        term: u32,
        open: bool,
        started: Option<u64>,
        ended: Option<u64>,
        acquire_answer: Option<u64>,
        acquired: bool,
        latest: Option<(u64, u64)>,
        tokens: Vec<u64>,
        lost: Option<u64>,
        lost_by_none: Option<u64>,
        released: Option<(u64, u64)>,
        release_answered: Option<u64>,
        rows_answered: u64,
        in_flight: Vec<(u64, OpKind, u64)>,
        first_call: Option<u64>,
        acquire_call: Option<u64>,
        release_call: Option<u64>,
        deleting: bool,
        short: Option<(u64, u32)>,
        delete_error: Option<u64>,
        stop: Option<u64>,
    }

    fn seq(event: Option<&Stamped<Event>>) -> Option<u64> {
        event.map(|event| event.seq)
    }

    fn summary(flow: &TermFlow) -> Summary {
        let ledger = &flow.ledger;
        let mut in_flight: Vec<(u64, OpKind, u64)> = ledger.in_flight().collect();
        in_flight.sort_unstable();
        Summary {
            term: ledger.term(),
            open: ledger.open,
            started: seq(ledger.started.as_ref()),
            ended: seq(ledger.ended.as_ref()),
            acquire_answer: seq(ledger.acquire_answer.as_ref()),
            acquired: ledger.acquired,
            latest: ledger.latest.as_ref().map(|(token, at)| (*token, at.seq)),
            tokens: ledger.tokens.clone(),
            lost: seq(ledger.lost.as_ref()),
            lost_by_none: seq(ledger.lost_by_none.as_ref()),
            released: ledger.released.as_ref().map(|(token, at)| (*token, at.seq)),
            release_answered: ledger.release_answered,
            rows_answered: ledger.rows_answered,
            in_flight,
            first_call: seq(flow.first_call.as_ref()),
            acquire_call: seq(flow.acquire_call.as_ref()),
            release_call: seq(flow.release_call.as_ref()),
            deleting: flow.deleting(),
            short: flow.short.as_ref().map(|(at, limit)| (at.seq, *limit)),
            delete_error: seq(flow.delete_error.as_ref()),
            stop: seq(flow.stop.as_ref()),
        }
    }

    /// The replica's flow recomputed from `events` (its own and others'), from scratch.
    fn reference(events: &[Stamped<Event>], replica: ReplicaId) -> Summary {
        let mine: Vec<&Stamped<Event>> = events
            .iter()
            .filter(|event| event.event.replica == Some(replica))
            .collect();
        let is_start =
            |e: &&Stamped<Event>| matches!(e.event.kind, EventKind::Note(Note::TermStarted { .. }));
        let is_end =
            |e: &&Stamped<Event>| matches!(e.event.kind, EventKind::Note(Note::TermEnded { .. }));
        let start = mine.iter().rposition(is_start);
        let restart = mine
            .iter()
            .rposition(|e| matches!(e.event.kind, EventKind::Restarted));
        let stop = mine[restart.map_or(0, |at| at + 1)..]
            .iter()
            .find(|e| matches!(e.event.kind, EventKind::StopCalled));
        let mut summary = summary(&TermFlow::EMPTY);
        summary.ended = mine.iter().rposition(is_end).map(|at| mine[at].seq);
        summary.stop = stop.map(|e| e.seq);
        let Some(start) = start else {
            return summary;
        };
        let term = &mine[start..];
        let closed_at = term.iter().position(is_end).unwrap_or(term.len());
        let calls: Vec<(u64, Request, &Stamped<Event>)> = term[..closed_at]
            .iter()
            .filter_map(|e| match e.event.kind {
                EventKind::Call { call, request } => Some((call, request, *e)),
                _ => None,
            })
            .collect();
        fill_term(&mut summary, term, closed_at, &calls);
        summary
    }

    /// The fields of the latest term: `term` from its start, `calls` those sent while open.
    fn fill_term(
        summary: &mut Summary,
        term: &[&Stamped<Event>],
        closed_at: usize,
        calls: &[(u64, Request, &Stamped<Event>)],
    ) {
        let EventKind::Note(Note::TermStarted { term: number }) = term[0].event.kind else {
            unreachable!("a term begins with its start");
        };
        summary.term = number;
        summary.open = closed_at == term.len();
        summary.started = Some(term[0].seq);
        summary.first_call = calls.first().map(|(_, _, e)| e.seq);
        let first = |wanted: OpKind| calls.iter().find(|(_, r, _)| r.op() == wanted);
        summary.acquire_call = first(OpKind::Acquire).map(|(_, _, e)| e.seq);
        summary.release_call = first(OpKind::Release).map(|(_, _, e)| e.seq);
        for (_, request, event) in calls {
            if let Request::Release { lease } = request
                && summary
                    .released
                    .is_none_or(|(token, _)| lease.token > token)
            {
                summary.released = Some((lease.token, event.seq));
            }
        }
        let answers: Vec<(u64, OpKind, Answer, u64)> = term
            .iter()
            .filter_map(|e| match e.event.kind {
                EventKind::Answered { call, op, answer } => Some((call, op, answer, e.seq)),
                _ => None,
            })
            .collect();
        let mut answered = Vec::new();
        for (call, request, event) in calls {
            // The first answer naming the call (ids are unique: one call per id).
            match answers.iter().find(|(id, ..)| id == call) {
                Some(&(_, _, answer, at)) => answered.push((*request, answer, at)),
                None => summary.in_flight.push((*call, request.op(), event.at_ms)),
            }
        }
        // Answers are taken in the order they arrived.
        answered.sort_by_key(|(.., at)| *at);
        for (request, answer, at) in answered {
            take_answer(summary, request, answer, at);
        }
        summary.in_flight.sort_unstable();
        let delete_answer = |call: u64| {
            answers
                .iter()
                .find(|(id, op, ..)| *id == call && *op == OpKind::Delete)
        };
        summary.deleting = calls.iter().any(|(call, request, _)| {
            request.op() == OpKind::Delete && delete_answer(*call).is_none()
        });
        // What ended deletion: the first answer of op `Delete` naming a delete call of the
        // term (whatever answered that call first), in the order the answers arrived.
        let mut enders: Vec<(u64, u32, Answer)> = calls
            .iter()
            .filter_map(|(call, request, _)| match request {
                Request::Delete { limit, .. } => {
                    delete_answer(*call).map(|&(_, _, answer, at)| (at, *limit, answer))
                }
                _ => None,
            })
            .collect();
        enders.sort_by_key(|(at, ..)| *at);
        for (at, limit, answer) in enders {
            match answer {
                Answer::Rows(rows) if rows < limit => {
                    summary.short.get_or_insert((at, limit));
                }
                Answer::Failed(_) => {
                    summary.delete_error.get_or_insert(at);
                }
                _ => {}
            }
        }
    }

    /// One answer to a call the term sent, by the call's request.
    fn take_answer(summary: &mut Summary, request: Request, answer: Answer, at: u64) {
        let mut receive = |token: u64| {
            summary.tokens.push(token);
            if summary.latest.is_none_or(|(latest, _)| token > latest) {
                summary.latest = Some((token, at));
            }
        };
        match (request, answer) {
            (Request::Acquire, Answer::Lease(Some(lease))) => {
                summary.acquired = true;
                receive(lease.token);
            }
            (Request::Renew { .. }, Answer::Lease(Some(lease))) => receive(lease.token),
            (Request::Renew { .. }, Answer::Lease(None)) => {
                summary.lost.get_or_insert(at);
                summary.lost_by_none.get_or_insert(at);
            }
            (Request::Renew { .. }, _) => {
                summary.lost.get_or_insert(at);
            }
            (Request::Release { lease }, _) => {
                let most = summary
                    .release_answered
                    .map_or(lease.token, |t| t.max(lease.token));
                summary.release_answered = Some(most);
            }
            (Request::Delete { .. }, Answer::Rows(rows)) => {
                summary.rows_answered += u64::from(rows)
            }
            _ => {}
        }
        if matches!(request, Request::Acquire) {
            summary.acquire_answer = Some(at);
        }
    }

    /// A step of a stream: replica, kind (calls get their id from their seq), answer target.
    fn kind() -> impl Strategy<Value = (u8, u64)> {
        (0u8..10, any::<u64>())
    }

    fn lease(token: u64) -> LeaseView {
        LeaseView {
            token,
            expires_at_ms: 5000,
        }
    }

    /// Builds event `seq` from a drawn (kind, value): calls carry `seq` as their id.
    fn event(seq: u64, replica: u16, (kind, value): (u8, u64)) -> Stamped<Event> {
        let token = value % 5 + 1;
        let small = u32::try_from(value % 4).unwrap_or(0);
        let answer = match value % 6 {
            0 => Answer::Lease(None),
            1 | 2 => Answer::Lease(Some(lease(token))),
            3 => Answer::Rows(small * 100),
            4 => Answer::Failed(Failure::Timeout),
            _ => Answer::Released,
        };
        let request = match value % 4 {
            0 => Request::Acquire,
            1 => Request::Renew {
                lease: lease(token),
            },
            2 => Request::Release {
                lease: lease(token),
            },
            _ => Request::Delete {
                older_than_ms: 0,
                limit: 200,
                token,
            },
        };
        let kind = match kind {
            0 => EventKind::Note(Note::TermStarted { term: small + 1 }),
            1 => EventKind::Note(Note::TermEnded {
                term: 1,
                end: EndKind::Drained,
                rows: 0,
            }),
            2 | 3 => EventKind::Call { call: seq, request },
            4..=6 => EventKind::Answered {
                call: value % seq.max(1),
                op: OpKind::ALL[usize::try_from(value / 7 % 4).unwrap_or(0)],
                answer,
            },
            7 => EventKind::StopCalled,
            8 => EventKind::Restarted,
            _ => EventKind::ClockRead {
                now_ms: value % 1000,
            },
        };
        Stamped {
            seq,
            at_ms: seq * 10,
            event: Event {
                replica: Some(ReplicaId(replica)),
                kind,
            },
        }
    }

    /// A delete call answered first as a renewal and then, again, as a delete that failed:
    /// the ledger counts the first answer (its rows), what ended deletion is the answer of op
    /// `Delete` (found by review: the reference once read the first answer for both).
    #[test]
    fn a_delete_answered_twice_under_two_ops_ends_deletion_by_the_delete_answer() {
        let steps = [(0, 0), (2, 3), (4, 9), (4, 22)];
        let events: Vec<Stamped<Event>> = steps
            .into_iter()
            .enumerate()
            .map(|(seq, drawn)| event(seq as u64, 0, drawn))
            .collect();
        let mut facts = Facts::default();
        events.iter().for_each(|e| {
            facts.enter(e);
            facts.leave(e);
        });
        let flow = summary(facts.after(ReplicaId(0)));
        assert_eq!((flow.rows_answered, flow.delete_error), (100, Some(3)));
        assert_eq!(flow, reference(&events, ReplicaId(0)));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn both_views_match_the_reference_before_and_after_every_event(
            steps in prop::collection::vec((0u16..3, kind()), 0..80)
        ) {
            let events: Vec<Stamped<Event>> = steps
                .into_iter()
                .enumerate()
                .map(|(seq, (replica, drawn))| event(seq as u64, replica, drawn))
                .collect();
            let mut facts = Facts::default();
            for (index, event) in events.iter().enumerate() {
                let replica = event.event.replica.expect("every step names a replica");
                facts.enter(event);
                prop_assert_eq!(summary(facts.before(replica)), reference(&events[..index], replica));
                prop_assert_eq!(summary(facts.after(replica)), reference(&events[..=index], replica));
                facts.leave(event);
                for other in (0..3).map(ReplicaId) {
                    let expected = reference(&events[..=index], other);
                    prop_assert_eq!(summary(facts.before(other)), expected);
                }
            }
        }
    }
}
