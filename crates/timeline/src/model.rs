//! Folding a run's draw instructions into drawable pieces.
//!
//! Terminology:
//! - *moment*: one event of the run, by its position (*index*) in the input: its sequence
//!   number, virtual time and lane (none for the world). Every piece keeps the indices of the
//!   events it stands for, so its hover text can show their trace lines.
//! - *stroke*: one drawing instruction ([`Draw`]) of one event; an event may make several
//!   (an answer closes its call and starts a segment), or none. The system under test decides
//!   what its events draw; this module knows no system.
//! - *segment*: a stretch during which one replica's worker held one fencing token (see the
//!   crate doc). A renewal that rotates the token ends one segment and starts the next.
//! - *call span*: a call from its send (`Call`) to its answer (`Answered`); *failed* when it
//!   was rejected, its reply was lost, or it answered an error.
//! - *mark*: a point event (see [`MarkKind`]).
//! - *open*: started but not ended yet. Whatever is still open after the last event ends at
//!   the last event's time.

use std::collections::BTreeMap;

use leasesim_events::Phase;

/// What a point mark stands for: the drawing vocabulary of marks. A system maps its events
/// onto these (an applied effect, a stale one, a refused one, a renewal, a handover...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MarkKind {
    Delete,
    StaleDelete,
    RefusedDelete,
    Renewal,
    RenewLost,
    Release,
    FreedNothing,
    Takeover,
    Rejected,
    RequestLost,
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
    pub op: CallStyle,
    pub failed: bool,
    pub span: Span,
}

/// How the calls of one operation are drawn: their row on the lane, the CSS class of a call
/// that did not fail, and the operation's name in hover text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallStyle {
    pub row: u64,
    pub class: &'static str,
    pub name: &'static str,
}

/// One event of the run: where and when it happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moment {
    pub seq: u64,
    pub at_ms: u64,
    /// The replica's lane (0-based), or `None` for the world row.
    pub lane: Option<u16>,
}

/// A drawing instruction an event gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Draw {
    /// A phase begins (world row).
    Phase(Phase),
    /// A call leaves.
    CallSent { call: u64, style: CallStyle },
    /// The call was refused or its reply lost.
    CallFailed { call: u64 },
    /// The call's answer arrived (`failed`: it was an error).
    CallAnswered { call: u64, failed: bool },
    /// A point mark.
    Mark { kind: MarkKind, rows: u64 },
    /// The worker holds this token from now on (ends the open segment first).
    HoldStart { token: u64 },
    /// A renewal answered this token: a new segment if the open one has another token.
    HoldRenewed { token: u64 },
    /// The worker holds nothing any more (`lost`: it learned so from a refusal).
    HoldEnd { lost: bool },
    /// The process is paused until `until_ms`.
    PauseStart { until_ms: u64 },
    /// The process runs again.
    PauseEnd,
}

/// One event's drawing instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stroke {
    /// The event's index among the moments.
    pub event: usize,
    pub draw: Draw,
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

/// Folds `strokes` into lanes: `replicas` of them, more if a moment names a later lane.
pub(crate) fn build(moments: &[Moment], strokes: &[Stroke], replicas: u16) -> Model {
    let end_ms = moments.iter().map(|m| m.at_ms).max().unwrap_or(0);
    let named = moments
        .iter()
        .filter_map(|m| m.lane)
        .map(|lane| usize::from(lane) + 1)
        .max()
        .unwrap_or(0);
    let mut lanes: Vec<Lane> = (0..named.max(usize::from(replicas)))
        .map(|_| Lane::default())
        .collect();
    let mut world = World::default();
    for stroke in strokes {
        let moment = moments[stroke.event];
        match moment.lane {
            Some(lane) => lanes[usize::from(lane)].apply(stroke.event, moment.at_ms, stroke.draw),
            None => world.apply(stroke.event, moment.at_ms, stroke.draw),
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
    fn apply(&mut self, index: usize, at_ms: u64, draw: Draw) {
        match draw {
            Draw::CallSent { call, style } => {
                let span = Span::open(at_ms, index);
                let open = CallSpan {
                    op: style,
                    failed: false,
                    span,
                };
                self.open_calls.insert(call, open);
            }
            Draw::CallFailed { call } => self.fail_call(call, index),
            Draw::CallAnswered { call, failed } => {
                if let Some(mut span) = self.open_calls.remove(&call) {
                    span.span.close(at_ms, Some(index));
                    span.failed |= failed;
                    self.calls.push(span);
                }
            }
            Draw::Mark { kind, rows } => self.marks.push(Mark {
                kind,
                at_ms,
                rows,
                event: index,
            }),
            Draw::HoldStart { token } => self.start_segment(token, at_ms, index),
            Draw::HoldRenewed { token } => {
                // A renewal answered after the term ended starts nothing.
                if self
                    .open_segment
                    .as_ref()
                    .is_some_and(|open| open.token != token)
                {
                    self.start_segment(token, at_ms, index);
                }
            }
            Draw::HoldEnd { lost } => self.end_segment(at_ms, Some(index), lost),
            Draw::PauseStart { until_ms } => {
                self.end_pause(at_ms, None);
                self.open_pause = Some((Span::open(at_ms, index), until_ms));
            }
            Draw::PauseEnd => self.end_pause(at_ms, Some(index)),
            Draw::Phase(_) => {}
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

/// The world row: phases and the world's own events.
#[derive(Debug, Default)]
struct World {
    phases: Vec<PhaseBand>,
    marks: Vec<Mark>,
    open_phase: Option<PhaseBand>,
}

impl World {
    fn apply(&mut self, index: usize, at_ms: u64, draw: Draw) {
        match draw {
            Draw::Phase(phase) => {
                self.end_phase(at_ms, Some(index));
                if phase != Phase::End {
                    let span = Span::open(at_ms, index);
                    self.open_phase = Some(PhaseBand { phase, span });
                }
            }
            Draw::Mark { kind, rows } => self.marks.push(Mark {
                kind,
                at_ms,
                rows,
                event: index,
            }),
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
    use super::*;

    const CALL: CallStyle = CallStyle {
        row: 0,
        class: "ca",
        name: "acquire",
    };

    fn moment(at_ms: u64, lane: Option<u16>) -> Moment {
        Moment {
            seq: at_ms,
            at_ms,
            lane,
        }
    }

    #[test]
    fn a_renewal_with_a_new_token_splits_the_hold_into_token_segments() {
        let moments = [0, 10, 500, 900, 905].map(|at| moment(at, Some(0)));
        let stroke = |event, draw| Stroke { event, draw };
        let strokes = [
            stroke(
                0,
                Draw::CallSent {
                    call: 1,
                    style: CALL,
                },
            ),
            stroke(
                1,
                Draw::CallAnswered {
                    call: 1,
                    failed: false,
                },
            ),
            stroke(1, Draw::HoldStart { token: 7 }),
            stroke(2, Draw::HoldRenewed { token: 8 }),
            stroke(3, Draw::HoldEnd { lost: false }),
            stroke(4, Draw::HoldEnd { lost: false }),
        ];
        let model = build(&moments, &strokes, 2);
        assert_eq!(model.lanes.len(), 2);
        let spans: Vec<(u64, u64, u64)> = model.lanes[0]
            .segments
            .iter()
            .map(|s| (s.token, s.span.start_ms, s.span.end_ms))
            .collect();
        assert_eq!(spans, [(7, 10, 500), (8, 500, 900)]);
        assert_eq!(model.lanes[0].calls.len(), 1);
        assert_eq!(model.lanes[0].calls[0].span.events, [0, 1]);
    }

    #[test]
    fn open_pieces_end_at_the_last_event() {
        let moments = [
            moment(0, None),
            moment(5, Some(1)),
            moment(7, Some(0)),
            moment(9, None),
            moment(20, None),
        ];
        let stroke = |event, draw| Stroke { event, draw };
        let strokes = [
            stroke(0, Draw::Phase(Phase::Safety)),
            stroke(1, Draw::PauseStart { until_ms: 50_000 }),
            stroke(
                2,
                Draw::CallSent {
                    call: 1,
                    style: CALL,
                },
            ),
            stroke(
                3,
                Draw::Mark {
                    kind: MarkKind::Backlog,
                    rows: 3,
                },
            ),
            stroke(4, Draw::Phase(Phase::Liveness)),
        ];
        let model = build(&moments, &strokes, 1);
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
}
