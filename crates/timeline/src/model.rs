//! Folding the event stream into drawable pieces.
//!
//! Terminology:
//! - *index*: an event's position in the input slice. Every piece keeps the indices of the
//!   events it stands for, so its hover text can show their trace lines.
//! - *segment*: a stretch during which one replica's worker held one fencing token (see the
//!   crate doc). A renewal that rotates the token ends one segment and starts the next.
//! - *call span*: a call from its send (`Call`) to its answer (`Answered`); *failed* when it
//!   was rejected, its reply was lost, or it answered an error.
//! - *mark*: a point event (see [`MarkKind`]).
//! - *open*: started but not ended yet. Whatever is still open after the last event ends at
//!   the last event's time.

use std::collections::BTreeMap;

use leasesim_events::{Answer, Applied, Event, EventKind, OpKind, Phase};
use leasesim_rt::Stamped;

/// What a point mark stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum MarkKind {
    Delete,
    StaleDelete,
    RefusedDelete,
    Renewal,
    RenewLost,
    Release,
    FreedNothing,
    Takeover,
    Rejected,
    ReplyLost,
    StopCalled,
    StopResolved,
    Restarted,
    ClockJump,
    Revoked,
    Backlog,
}

/// One point event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mark {
    pub kind: MarkKind,
    pub at_ms: u64,
    /// Rows deleted (deletes) or remaining (backlog checks); 0 otherwise.
    pub rows: u64,
    pub event: usize,
}

/// A stretch of virtual time and the events that opened and closed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub start_ms: u64,
    pub end_ms: u64,
    pub events: Vec<usize>,
}

impl Span {
    fn open(at_ms: u64, index: usize) -> Span {
        Span {
            start_ms: at_ms,
            end_ms: at_ms,
            events: vec![index],
        }
    }

    /// Ends the span at `at_ms` (never before its start), by event `index` if any.
    fn close(&mut self, at_ms: u64, index: Option<usize>) {
        self.end_ms = at_ms.max(self.start_ms);
        self.events.extend(index);
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    pub token: u64,
    pub span: Span,
    /// Ended by a renewal answered `None`.
    pub lost: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CallSpan {
    pub op: OpKind,
    pub failed: bool,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PhaseBand {
    pub phase: Phase,
    pub span: Span,
}

/// Everything drawn on one replica's lane.
#[derive(Debug, Default)]
pub(crate) struct Lane {
    pub segments: Vec<Segment>,
    /// In answer order; the renderer sorts them.
    pub calls: Vec<CallSpan>,
    pub pauses: Vec<Span>,
    pub marks: Vec<Mark>,
    open_segment: Option<Segment>,
    open_calls: BTreeMap<u64, CallSpan>,
    /// The open pause and the instant it was scheduled to end.
    open_pause: Option<(Span, u64)>,
}

/// The whole run, ready to draw.
#[derive(Debug)]
pub(crate) struct Model {
    pub lanes: Vec<Lane>,
    pub world_marks: Vec<Mark>,
    pub phases: Vec<PhaseBand>,
    /// Time of the last event.
    pub end_ms: u64,
}

/// Folds `events` into lanes: `replicas` of them, more if an event names a later replica.
pub(crate) fn build(events: &[Stamped<Event>], replicas: u16) -> Model {
    let end_ms = events
        .iter()
        .map(|stamped| stamped.at_ms)
        .max()
        .unwrap_or(0);
    let named = events
        .iter()
        .filter_map(|stamped| stamped.event.replica)
        .map(|replica| replica.index() + 1)
        .max()
        .unwrap_or(0);
    let mut lanes: Vec<Lane> = (0..named.max(usize::from(replicas)))
        .map(|_| Lane::default())
        .collect();
    let mut world = World::default();
    for (index, stamped) in events.iter().enumerate() {
        let (at_ms, kind) = (stamped.at_ms, &stamped.event.kind);
        match stamped.event.replica {
            Some(replica) => lanes[replica.index()].apply(index, at_ms, kind),
            None => world.apply(index, at_ms, kind),
        }
    }
    for lane in &mut lanes {
        lane.close_all(end_ms);
    }
    world.close_all(end_ms);
    Model {
        lanes,
        world_marks: world.marks,
        phases: world.phases,
        end_ms,
    }
}

impl Lane {
    fn apply(&mut self, index: usize, at_ms: u64, kind: &EventKind) {
        let mark = |kind, rows| Mark {
            kind,
            at_ms,
            rows,
            event: index,
        };
        match *kind {
            EventKind::Call { call, request } => {
                let span = Span::open(at_ms, index);
                let op = request.op();
                self.open_calls.insert(
                    call,
                    CallSpan {
                        op,
                        failed: false,
                        span,
                    },
                );
            }
            EventKind::Rejected { call, .. } => {
                self.fail_call(call, index);
                self.marks.push(mark(MarkKind::Rejected, 0));
            }
            EventKind::ReplyLost { call } => {
                self.fail_call(call, index);
                self.marks.push(mark(MarkKind::ReplyLost, 0));
            }
            EventKind::Applied { applied, .. } => self.marks.extend(applied_mark(&applied, mark)),
            EventKind::Answered { call, op, answer } => {
                self.on_answered(index, at_ms, call, op, answer);
            }
            EventKind::TermEnded { .. } => self.end_segment(at_ms, Some(index), false),
            EventKind::Paused { until_ms } => {
                self.end_pause(at_ms, None);
                self.open_pause = Some((Span::open(at_ms, index), until_ms));
            }
            EventKind::Resumed => self.end_pause(at_ms, Some(index)),
            EventKind::StopCalled => self.marks.push(mark(MarkKind::StopCalled, 0)),
            EventKind::StopResolved => self.marks.push(mark(MarkKind::StopResolved, 0)),
            EventKind::Restarted => self.marks.push(mark(MarkKind::Restarted, 0)),
            EventKind::ClockJumped { .. } => self.marks.push(mark(MarkKind::ClockJump, 0)),
            EventKind::Revoked { .. } => self.marks.push(mark(MarkKind::Revoked, 0)),
            EventKind::Backlog { remaining, .. } => {
                self.marks.push(mark(MarkKind::Backlog, remaining));
            }
            EventKind::Phase(_)
            | EventKind::TermStarted { .. }
            | EventKind::ClockRead { .. }
            | EventKind::TimerSet { .. } => {}
        }
    }

    fn on_answered(&mut self, index: usize, at_ms: u64, call: u64, op: OpKind, answer: Answer) {
        if let Some(mut span) = self.open_calls.remove(&call) {
            span.span.close(at_ms, Some(index));
            span.failed |= matches!(answer, Answer::Failed(_));
            self.calls.push(span);
        }
        let mark = |kind| Mark {
            kind,
            at_ms,
            rows: 0,
            event: index,
        };
        match (op, answer) {
            (OpKind::Acquire, Answer::Lease(Some(lease))) => {
                self.start_segment(lease.token, at_ms, index);
            }
            (OpKind::Renew, Answer::Lease(Some(lease))) => {
                self.marks.push(mark(MarkKind::Renewal));
                // A renewal answered after the term ended starts nothing.
                if self
                    .open_segment
                    .as_ref()
                    .is_some_and(|open| open.token != lease.token)
                {
                    self.start_segment(lease.token, at_ms, index);
                }
            }
            (OpKind::Renew, Answer::Lease(None)) => {
                self.marks.push(mark(MarkKind::RenewLost));
                self.end_segment(at_ms, Some(index), true);
            }
            (OpKind::Release, _) => self.end_segment(at_ms, Some(index), false),
            _ => {}
        }
    }

    fn fail_call(&mut self, call: u64, index: usize) {
        if let Some(open) = self.open_calls.get_mut(&call) {
            open.failed = true;
            open.span.events.push(index);
        }
    }

    /// Starts a segment with `token`, ending the open one there first.
    fn start_segment(&mut self, token: u64, at_ms: u64, index: usize) {
        self.end_segment(at_ms, Some(index), false);
        // invariant: at most one segment is open per lane.
        debug_assert!(self.open_segment.is_none());
        let span = Span::open(at_ms, index);
        self.open_segment = Some(Segment {
            token,
            span,
            lost: false,
        });
    }

    fn end_segment(&mut self, at_ms: u64, index: Option<usize>, lost: bool) {
        if let Some(mut segment) = self.open_segment.take() {
            segment.span.close(at_ms, index);
            segment.lost = lost;
            self.segments.push(segment);
        }
    }

    fn end_pause(&mut self, at_ms: u64, index: Option<usize>) {
        if let Some((mut span, _)) = self.open_pause.take() {
            span.close(at_ms, index);
            self.pauses.push(span);
        }
    }

    fn close_all(&mut self, end_ms: u64) {
        self.end_segment(end_ms, None, false);
        if let Some((_, until_ms)) = &self.open_pause {
            let until_ms = *until_ms;
            self.end_pause(until_ms.min(end_ms), None);
        }
        for (_, mut call) in std::mem::take(&mut self.open_calls) {
            call.span.close(end_ms, None);
            self.calls.push(call);
        }
    }
}

/// The mark an `Applied` event makes, if any.
fn applied_mark(applied: &Applied, mark: impl Fn(MarkKind, u64) -> Mark) -> Option<Mark> {
    match *applied {
        Applied::Deleted {
            rows,
            token_current,
            ..
        } => {
            let kind = if token_current {
                MarkKind::Delete
            } else {
                MarkKind::StaleDelete
            };
            Some(mark(kind, u64::from(rows)))
        }
        Applied::DeleteRefused { .. } => Some(mark(MarkKind::RefusedDelete, 0)),
        Applied::Released => Some(mark(MarkKind::Release, 0)),
        Applied::FreedNothing => Some(mark(MarkKind::FreedNothing, 0)),
        Applied::Granted {
            replaced: Some(_), ..
        } => Some(mark(MarkKind::Takeover, 0)),
        Applied::Granted { replaced: None, .. }
        | Applied::Busy { .. }
        | Applied::Renewed { .. }
        | Applied::RenewRefused => None,
    }
}

/// The world row: phases and the world's own events.
#[derive(Debug, Default)]
struct World {
    phases: Vec<PhaseBand>,
    marks: Vec<Mark>,
    open_phase: Option<PhaseBand>,
}

impl World {
    fn apply(&mut self, index: usize, at_ms: u64, kind: &EventKind) {
        let mark = |kind, rows| Mark {
            kind,
            at_ms,
            rows,
            event: index,
        };
        match *kind {
            EventKind::Phase(phase) => {
                self.end_phase(at_ms, Some(index));
                if phase != Phase::End {
                    let span = Span::open(at_ms, index);
                    self.open_phase = Some(PhaseBand { phase, span });
                }
            }
            EventKind::Revoked { .. } => self.marks.push(mark(MarkKind::Revoked, 0)),
            EventKind::Backlog { remaining, .. } => {
                self.marks.push(mark(MarkKind::Backlog, remaining));
            }
            EventKind::ClockJumped { .. } => self.marks.push(mark(MarkKind::ClockJump, 0)),
            _ => {}
        }
    }

    fn end_phase(&mut self, at_ms: u64, index: Option<usize>) {
        if let Some(mut band) = self.open_phase.take() {
            band.span.close(at_ms, index);
            self.phases.push(band);
        }
    }

    fn close_all(&mut self, end_ms: u64) {
        self.end_phase(end_ms, None);
    }
}

#[cfg(test)]
mod tests {
    use leasesim_events::{LeaseView, ReplicaId, Request};

    use super::*;

    fn at(at_ms: u64, replica: Option<u16>, kind: EventKind) -> Stamped<Event> {
        let event = Event {
            replica: replica.map(ReplicaId),
            kind,
        };
        Stamped {
            seq: at_ms,
            at_ms,
            event,
        }
    }

    fn lease(token: u64) -> Answer {
        Answer::Lease(Some(LeaseView {
            token,
            expires_at_ms: 0,
        }))
    }

    fn answered(at_ms: u64, call: u64, op: OpKind, answer: Answer) -> Stamped<Event> {
        at(at_ms, Some(0), EventKind::Answered { call, op, answer })
    }

    #[test]
    fn a_rotating_renewal_splits_the_term_into_token_segments() {
        let events = [
            at(
                0,
                Some(0),
                EventKind::Call {
                    call: 1,
                    request: Request::Acquire,
                },
            ),
            answered(10, 1, OpKind::Acquire, lease(7)),
            answered(500, 2, OpKind::Renew, lease(8)),
            answered(900, 3, OpKind::Release, Answer::Released),
            at(
                905,
                Some(0),
                EventKind::TermEnded {
                    term: 1,
                    end: leasesim_events::EndKind::Drained,
                    rows: 0,
                },
            ),
        ];
        let model = build(&events, 2);
        assert_eq!(model.lanes.len(), 2);
        let spans: Vec<(u64, u64, u64)> = model.lanes[0]
            .segments
            .iter()
            .map(|s| (s.token, s.span.start_ms, s.span.end_ms))
            .collect();
        assert_eq!(spans, [(7, 10, 500), (8, 500, 900)]);
        assert_eq!(
            model.lanes[0].calls.len(),
            1,
            "only call 1 was sent in this slice"
        );
        assert_eq!(model.lanes[0].calls[0].span.events, [0, 1]);
    }

    #[test]
    fn open_pieces_end_at_the_last_event() {
        let events = [
            at(0, None, EventKind::Phase(Phase::Safety)),
            at(5, Some(1), EventKind::Paused { until_ms: 50_000 }),
            at(
                7,
                Some(0),
                EventKind::Call {
                    call: 1,
                    request: Request::Acquire,
                },
            ),
            at(
                9,
                None,
                EventKind::Backlog {
                    eligible_before_ms: 0,
                    remaining: 3,
                },
            ),
            at(20, None, EventKind::Phase(Phase::Liveness)),
        ];
        let model = build(&events, 1);
        assert_eq!(model.lanes.len(), 2, "an event of r2 adds its lane");
        assert_eq!(model.lanes[1].pauses[0].end_ms, 20);
        assert_eq!(model.lanes[0].calls[0].span.end_ms, 20);
        let phases: Vec<(Phase, u64, u64)> = model
            .phases
            .iter()
            .map(|b| (b.phase, b.span.start_ms, b.span.end_ms))
            .collect();
        assert_eq!(phases, [(Phase::Safety, 0, 20), (Phase::Liveness, 20, 20)]);
        assert_eq!(model.world_marks[0].rows, 3);
    }

    #[test]
    fn stale_and_refused_deletes_are_marked_apart() {
        let deleted = |token_current| Applied::Deleted {
            rows: 5,
            token_current,
            current_token: None,
            newest_created_ms: None,
            held_back: 0,
        };
        let events = [
            at(
                1,
                Some(0),
                EventKind::Applied {
                    call: 1,
                    applied: deleted(true),
                },
            ),
            at(
                2,
                Some(0),
                EventKind::Applied {
                    call: 2,
                    applied: deleted(false),
                },
            ),
            at(
                3,
                Some(0),
                EventKind::Applied {
                    call: 3,
                    applied: Applied::DeleteRefused {
                        current_token: None,
                    },
                },
            ),
        ];
        let kinds: Vec<MarkKind> = build(&events, 1).lanes[0]
            .marks
            .iter()
            .map(|m| m.kind)
            .collect();
        assert_eq!(
            kinds,
            [
                MarkKind::Delete,
                MarkKind::StaleDelete,
                MarkKind::RefusedDelete
            ]
        );
    }
}
