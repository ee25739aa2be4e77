//! Progress once faults heal: `items-settle`.
//!
//! Terminology:
//! - *tally*: the world's count of open, done and failed items as the liveness phase ends
//!   (`Note::Tally`, with the first item still open); every item must be done or failed by
//!   then. A scenario may waive this (`settle = false`): the world then notes no tally.
//! - *unresolved stop*: a `StopCalled` without its `StopResolved` at `Phase(End)` or at the
//!   end of the run.

use leasesim_events::mask;
use leasesim_invariants::{At, Checker, PerReplica, Ring};

use super::facts::Facts;
use super::{Invariant, Violation, notes_tally};
use crate::events::{ClockMs, Event, EventKind, ItemState, Note, Phase, Stamped, WorkItems};

/// What `items-settle` keeps per replica.
#[derive(Debug, Default)]
struct Stops {
    /// The replica's last events, for context.
    recent: Ring<Event, 4>,
    /// The oldest `StopCalled` not matched by a `StopResolved`.
    stop: Option<Stamped<Event>>,
}

/// `items-settle`: every item settles by the end of the liveness phase; every stop returns.
#[derive(Debug, Default)]
pub struct ItemsSettle {
    healed: Option<Stamped<Event>>,
    replicas: PerReplica<Stops>,
}

impl ItemsSettle {
    pub fn new() -> ItemsSettle {
        ItemsSettle::default()
    }

    fn tally(&self, event: &Stamped<Event>) -> Option<Violation> {
        let EventKind::Note(Note::Tally { status, first_open }) = event.event.kind else {
            return None;
        };
        let open = first_open.filter(|_| status.open > 0)?;
        let view = open.view;
        let what = match view.state {
            ItemState::Claimed => format!(
                "claimed under token {} (expires {})",
                view.token,
                ClockMs(view.expires_at_ms)
            ),
            ItemState::Released => format!("released by token {}", view.token),
            _ => "never claimed".into(),
        };
        let sentence = format!(
            "{} item(s) were still open at {}, the end of the liveness phase: item {} was \
             {what}",
            status.open,
            At(event.at_ms),
            open.item
        );
        Some(Violation::new(
            Invariant::ItemsSettle,
            event,
            [self.healed.as_ref()],
            sentence,
        ))
    }

    /// The first replica whose stop never returned: the violation at `event` (or at its last
    /// event, at the end of the run).
    fn unresolved(&self, event: Option<&Stamped<Event>>, now_ms: u64) -> Option<Violation> {
        let (replica, stops) = self.replicas.iter().find(|(_, s)| s.stop.is_some())?;
        let stop = stops.stop.as_ref()?;
        let sentence = format!(
            "{replica}'s stop() called at {} had not returned by {}, the end of the run",
            At(stop.at_ms),
            At(now_ms)
        );
        let event = event.or(stops.recent.last()).unwrap_or(stop);
        let context = [Some(stop)].into_iter().chain(stops.recent.iter());
        Some(Violation::new(Invariant::ItemsSettle, event, context, sentence).dated(now_ms))
    }
}

impl Checker<WorkItems> for ItemsSettle {
    fn invariant(&self) -> Invariant {
        Invariant::ItemsSettle
    }

    fn wants(&self, kind: &EventKind) -> bool {
        let stops = mask::STOP_CALLED | mask::STOP_RESOLVED | mask::RESTARTED | mask::CALL;
        kind.bit() & (mask::PHASE | stops | notes_tally()) != 0
    }

    fn on_event(&mut self, event: &Stamped<Event>, _facts: &Facts) -> Option<Violation> {
        match (event.event.kind, event.event.replica) {
            (EventKind::Phase(Phase::Liveness), _) => self.healed = Some(event.clone()),
            (EventKind::Phase(Phase::End), _) => return self.unresolved(Some(event), event.at_ms),
            (EventKind::Note(Note::Tally { .. }), _) => return self.tally(event),
            (kind, Some(replica)) => {
                let stops = self.replicas.at(replica);
                match kind {
                    EventKind::StopCalled => {
                        stops.stop.get_or_insert_with(|| event.clone());
                    }
                    EventKind::StopResolved | EventKind::Restarted => stops.stop = None,
                    _ => {}
                }
                stops.recent.push(event);
            }
            _ => {}
        }
        None
    }

    fn finish(&mut self, end_ms: u64, _facts: &Facts) -> Option<Violation> {
        self.unresolved(None, end_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkers::testkit::{R1, R2, Script, assert_broken, assert_holds};
    use crate::events::{ItemView, OpenItem, StatusView};

    #[test]
    fn items_settle_holds_for_a_correct_run() {
        assert_holds(Invariant::ItemsSettle, &Script::correct_run());
    }

    #[test]
    fn items_settle_breaks_on_an_open_item_at_the_tally() {
        let mut script = Script::new();
        script.at(10_000).world(EventKind::Phase(Phase::Liveness));
        let status = StatusView {
            open: 2,
            done: 5,
            failed: 1,
        };
        let first_open = Some(OpenItem {
            item: 4,
            view: ItemView {
                state: ItemState::Claimed,
                token: 9,
                expires_at_ms: crate::events::EPOCH_MS + 19_000,
            },
        });
        let seq = script
            .at(20_000)
            .world(EventKind::Note(Note::Tally { status, first_open }));
        let words = [
            "2 item(s) were still open at t=20000ms, the end of the liveness phase: item 4 was \
             claimed under token 9 (expires +19000ms)",
        ];
        assert_broken(Invariant::ItemsSettle, &script, seq, &words);
    }

    #[test]
    fn items_settle_breaks_on_a_stop_that_never_returns() {
        let mut script = Script::new();
        script.at(100).on(R1, EventKind::StopCalled);
        script.on(R1, EventKind::StopResolved);
        script.at(200).on(R2, EventKind::StopCalled);
        let seq = script.at(900).world(EventKind::Phase(Phase::End));
        let words = ["r2's stop() called at t=200ms had not returned by t=900ms"];
        assert_broken(Invariant::ItemsSettle, &script, seq, &words);
    }
}
