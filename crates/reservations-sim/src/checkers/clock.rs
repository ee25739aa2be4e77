//! Which clock decides: `store-clock-decides`, and the cost of the wrong one,
//! `no-hot-reclaim`.
//!
//! Terminology:
//! - *clock carried*: the `now` a claim (`claim_expired`, `read_due`) or a transition
//!   (`expire_if_held`) carries. `None` leaves the store's clock to decide at the apply
//!   instant; `Some(t)` is an instant the worker read off its own clock, which the store then
//!   trusts. The seed gives the store's clock every decision of what is due ("compare
//!   server-side time where possible").
//! - *early hold*: a reservation the replica claimed whose transition the store applied while
//!   the reservation was still held and not yet due on the store's clock (judged against the
//!   ledger, not the store's answer). Only a claim that trusted a clock ahead of the store's
//!   hands a worker one.
//! - *pacing pause*: a pause the replica started of at least the idle pause's base
//!   (`idle_ms`); after one, claiming again costs no more than an idle poll does.
//! - *hot re-claim*: a claim sent after the replica met an early hold, with no pacing pause
//!   since and while that reservation is still not due: the worker asks again at once for work
//!   it may not touch yet, and a worker whose clock runs ahead loops on it until the deadline.

use leasesim_events::mask;
use leasesim_invariants::{At, Checker, PerReplica, Violation};

use super::track::{Stamp, store_ms};
use super::{CheckConfig, Facts, Invariant};
use crate::Reservations;
use crate::events::{Applied, ClockMs, EventKind, Request, StatusView};

type Found = Option<Violation<Reservations>>;

/// The operation and the instant a request passed as now, if it passed one.
fn clock_carried(request: &Request) -> Option<(&'static str, u64)> {
    match *request {
        Request::Claim { now: Some(at), .. } => Some(("claim", at)),
        Request::ReadDue { now: Some(at), .. } => Some(("read of due ids", at)),
        Request::Expire { now: Some(at), .. } => Some(("transition", at)),
        _ => None,
    }
}

/// How far `at_ms` is from the store's clock `store_ms`, in words.
fn offset(at_ms: u64, store_ms: u64) -> String {
    match at_ms.cmp(&store_ms) {
        std::cmp::Ordering::Greater => format!("{}ms ahead of", at_ms - store_ms),
        std::cmp::Ordering::Less => format!("{}ms behind", store_ms - at_ms),
        std::cmp::Ordering::Equal => "equal to".to_string(),
    }
}

/// `store-clock-decides`: no claim and no transition carries the worker's own clock as now.
#[derive(Debug, Default)]
pub struct StoreClockDecides {}

impl Checker<Reservations> for StoreClockDecides {
    fn invariant(&self) -> Invariant {
        Invariant::StoreClockDecides
    }

    fn wants(&self, kind: &EventKind) -> bool {
        kind.bit() & mask::CALL != 0
    }

    fn on_event(&mut self, event: &Stamp, facts: &Facts) -> Found {
        let EventKind::Call { request, .. } = event.event.kind else {
            return None;
        };
        let (what, at_ms) = clock_carried(&request)?;
        let replica = event.event.replica?;
        let sentence = format!(
            "{replica}'s {what} at {} carried its own clock {} as now ({} the store's {}): the \
             store's clock must decide what is due",
            At(event.at_ms),
            ClockMs(at_ms),
            offset(at_ms, store_ms(event)),
            ClockMs(store_ms(event))
        );
        let context = facts.desk(replica).recent.iter();
        Some(Violation::new(
            Invariant::StoreClockDecides,
            event,
            context,
            sentence,
        ))
    }
}

/// The early hold a replica met last, and the transition that showed it.
#[derive(Clone, Debug)]
struct EarlyHold {
    id: u32,
    /// Its deadline, on the store's clock.
    hold_until_ms: u64,
    applied: Stamp,
}

/// `no-hot-reclaim`: after an early hold, the next claim follows a pacing pause, or comes once
/// that reservation is due.
#[derive(Debug)]
pub struct NoHotReclaim {
    idle_ms: u64,
    /// Per replica, the early hold met since its last pacing pause.
    early: PerReplica<Option<EarlyHold>>,
}

impl NoHotReclaim {
    pub fn new(config: &CheckConfig) -> NoHotReclaim {
        NoHotReclaim {
            idle_ms: config.idle_ms,
            early: PerReplica::default(),
        }
    }

    /// The early hold a transition applied at `event` shows, if it shows one.
    fn early_hold(event: &Stamp, facts: &Facts, id: u32) -> Option<EarlyHold> {
        let hold = facts.ledger().get(id)?;
        let early = hold.status == StatusView::Held && hold.hold_until_ms > store_ms(event);
        early.then(|| EarlyHold {
            id,
            hold_until_ms: hold.hold_until_ms,
            applied: event.clone(),
        })
    }

    fn judge(&self, event: &Stamp, early: &EarlyHold) -> Found {
        let now_ms = store_ms(event);
        if early.hold_until_ms <= now_ms {
            return None;
        }
        let replica = event.event.replica?;
        let sentence = format!(
            "{replica} claimed again at {} with no pause of {}ms or more since its transition \
             found h{} held and not due until {} (store clock {} at {}): it re-claims work it \
             may not touch yet in a hot loop",
            At(event.at_ms),
            self.idle_ms,
            early.id,
            ClockMs(early.hold_until_ms),
            ClockMs(store_ms(&early.applied)),
            At(early.applied.at_ms)
        );
        let context = [Some(&early.applied)];
        Some(Violation::new(
            Invariant::NoHotReclaim,
            event,
            context,
            sentence,
        ))
    }
}

impl Checker<Reservations> for NoHotReclaim {
    fn invariant(&self) -> Invariant {
        Invariant::NoHotReclaim
    }

    fn wants(&self, kind: &EventKind) -> bool {
        let wanted = mask::CALL | mask::APPLIED | mask::TIMER_SET | mask::RESTARTED;
        kind.bit() & (wanted | crate::events::notes::KILLED) != 0
    }

    fn on_event(&mut self, event: &Stamp, facts: &Facts) -> Found {
        let replica = event.event.replica?;
        match event.event.kind {
            EventKind::Call { request, .. } if request.is_poll() => {
                let early = self.early.get(replica)?.as_ref()?;
                self.judge(event, early)
            }
            EventKind::Applied {
                applied: Applied::NotEligible { id, .. },
                ..
            } => {
                if let Some(early) = Self::early_hold(event, facts, id) {
                    *self.early.at(replica) = Some(early);
                }
                None
            }
            EventKind::TimerSet { duration_ms } if duration_ms >= self.idle_ms => {
                *self.early.at(replica) = None;
                None
            }
            EventKind::Restarted | EventKind::Note(crate::events::Note::Killed) => {
                *self.early.at(replica) = None;
                None
            }
            _ => None,
        }
    }
}
