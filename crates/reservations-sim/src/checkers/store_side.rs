//! The store side: `consumed-never-expired`, `expired-only-when-due`, `single-transition`,
//! `exclusive-claim`, `release-own-claim`.
//!
//! Terminology:
//! - *transition applied*: `Applied::Expired` (the guarded one) or `Applied::ExpiredById` (the
//!   primitive); each checker judges it against the run's ledger (the shared facts' before
//!   view), built from the agents' notes and the applies, never from the store's verdicts.
//! - *the claim a release was sent for*: the claim (by its call) under which the releasing
//!   replica had been answered the reservation when it sent the release.

use leasesim_events::mask;
use leasesim_invariants::{At, CallBook, Checker, Violation};

use super::Facts;
use super::Invariant;
use super::track::{Ledger, Stamp, store_ms};
use crate::Reservations;
use crate::events::{Applied, ClockMs, EventKind, Note, Request, StatusView, notes};

type Found = Option<Violation<Reservations>>;

fn store_events(kind: &EventKind) -> bool {
    kind.bit() & (mask::APPLIED | notes::AGENTS) != 0
}

/// The reservation a transition applied to, and the operation that did it.
fn transition(kind: &EventKind) -> Option<(u32, &'static str)> {
    match kind {
        EventKind::Applied {
            applied: Applied::Expired { id, .. },
            ..
        } => Some((*id, "expire_if_held")),
        EventKind::Applied {
            applied: Applied::ExpiredById { id, .. },
            ..
        } => Some((*id, "expire_by_id")),
        _ => None,
    }
}

fn who(event: &Stamp) -> String {
    event
        .event
        .replica
        .map_or_else(|| "a worker".to_string(), |replica| replica.to_string())
}

/// `consumed-never-expired`: no transition is applied to a consumed reservation.
#[derive(Debug, Default)]
pub struct ConsumedNeverExpired {}

impl Checker<Reservations> for ConsumedNeverExpired {
    fn invariant(&self) -> Invariant {
        Invariant::ConsumedNeverExpired
    }

    fn wants(&self, kind: &EventKind) -> bool {
        store_events(kind)
    }

    fn on_event(&mut self, event: &Stamp, facts: &Facts) -> Found {
        transition(&event.event.kind).and_then(|(id, op)| {
            let hold = facts.ledger().get(id)?;
            let consumed = hold.changed.as_ref()?;
            (hold.status == StatusView::Consumed).then(|| {
                let sentence = format!(
                    "{}'s {op} expired h{id} at {}, but an agent had consumed it at {}",
                    who(event),
                    At(event.at_ms),
                    At(consumed.at_ms)
                );
                let context = [Some(&hold.placed), Some(consumed)];
                Violation::new(Invariant::ConsumedNeverExpired, event, context, sentence)
            })
        })
    }
}

/// `expired-only-when-due`: a transition applies only to a held reservation past its deadline
/// on the store's clock.
#[derive(Debug, Default)]
pub struct ExpiredOnlyWhenDue {
    /// The `now` each transition in flight passed (`None`: the store's clock).
    nows: CallBook<Option<u64>>,
}

impl ExpiredOnlyWhenDue {
    fn judge(&self, ledger: &Ledger, event: &Stamp, id: u32, op: &str, now: Option<u64>) -> Found {
        let hold = ledger.get(id)?;
        let at_ms = store_ms(event);
        let why = match hold.status {
            StatusView::Held if hold.hold_until_ms <= at_ms => return None,
            // Already expired: nothing becomes expired (a second change is `single-transition`'s).
            StatusView::Expired => return None,
            StatusView::Held => format!(
                "its deadline {} was {}ms later",
                ClockMs(hold.hold_until_ms),
                hold.hold_until_ms - at_ms
            ),
            status => format!("it was already {}", status.name()),
        };
        let passed = match now {
            Some(now_ms) => format!(
                " ({} passed its own clock {} as now)",
                who(event),
                ClockMs(now_ms)
            ),
            None => String::new(),
        };
        let sentence = format!(
            "{}'s {op} expired h{id} at {} (store clock {}), but {why}{passed}",
            who(event),
            At(event.at_ms),
            ClockMs(at_ms)
        );
        let context = [Some(&hold.placed), hold.changed.as_ref()];
        Some(Violation::new(
            Invariant::ExpiredOnlyWhenDue,
            event,
            context,
            sentence,
        ))
    }
}

impl Checker<Reservations> for ExpiredOnlyWhenDue {
    fn invariant(&self) -> Invariant {
        Invariant::ExpiredOnlyWhenDue
    }

    /// Calls, and what became of them at the store's end (a refused or lost transition is
    /// forgotten, never applied).
    fn wants(&self, kind: &EventKind) -> bool {
        store_events(kind) || kind.bit() & (mask::CALL | mask::SERVICE_SIDE) != 0
    }

    fn on_event(&mut self, event: &Stamp, facts: &Facts) -> Found {
        match event.event.kind {
            EventKind::Call {
                call,
                request: Request::Expire { now, .. },
            } => {
                self.nows.insert(call, event.event.replica?, now);
                None
            }
            EventKind::Rejected { call, .. } | EventKind::RequestLost { call, .. } => {
                self.nows.take(call, event.event.replica);
                None
            }
            EventKind::Applied { call, .. } => {
                let now = self
                    .nows
                    .take(call, event.event.replica)
                    .and_then(|(_, now)| now);
                transition(&event.event.kind)
                    .and_then(|(id, op)| self.judge(facts.ledger(), event, id, op, now))
            }
            _ => None,
        }
    }
}

/// `single-transition`: a reservation leaves held once, and never moves again.
#[derive(Debug, Default)]
pub struct SingleTransition {}

impl SingleTransition {
    fn judge(&self, ledger: &Ledger, event: &Stamp, id: u32, to: StatusView, by: &str) -> Found {
        let hold = ledger.get(id)?;
        if hold.status == StatusView::Held || hold.status == to {
            return None;
        }
        let since = hold.changed.as_ref()?;
        let sentence = format!(
            "h{id} became {} at {} ({by}), but it had already become {} at {}",
            to.name(),
            At(event.at_ms),
            hold.status.name(),
            At(since.at_ms)
        );
        let context = [Some(&hold.placed), Some(since)];
        Some(Violation::new(
            Invariant::SingleTransition,
            event,
            context,
            sentence,
        ))
    }
}

impl Checker<Reservations> for SingleTransition {
    fn invariant(&self) -> Invariant {
        Invariant::SingleTransition
    }

    fn wants(&self, kind: &EventKind) -> bool {
        store_events(kind)
    }

    fn on_event(&mut self, event: &Stamp, facts: &Facts) -> Found {
        match event.event.kind {
            EventKind::Note(Note::Consumed { id, .. }) => self.judge(
                facts.ledger(),
                event,
                id,
                StatusView::Consumed,
                "an agent consumed it",
            ),
            kind => transition(&kind).and_then(|(id, op)| {
                let by = format!("{}'s {op}", who(event));
                self.judge(facts.ledger(), event, id, StatusView::Expired, &by)
            }),
        }
    }
}

/// `exclusive-claim`: no claim is set while another claim on the reservation is live.
#[derive(Debug, Default)]
pub struct ExclusiveClaim {}

impl ExclusiveClaim {
    fn judge(&self, ledger: &Ledger, event: &Stamp, id: u32, token: u64) -> Found {
        let hold = ledger.get(id)?;
        let live = hold.live_claim(store_ms(event))?;
        if live.token == token {
            return None;
        }
        let sentence = format!(
            "{}'s claim of h{id} with token {token} was applied at {}, while {}'s claim with \
             token {} (set at {}, until {}) was live",
            who(event),
            At(event.at_ms),
            live.replica,
            live.token,
            At(live.event.at_ms),
            ClockMs(live.until_ms)
        );
        let context = [Some(&hold.placed), Some(&live.event)];
        Some(Violation::new(
            Invariant::ExclusiveClaim,
            event,
            context,
            sentence,
        ))
    }
}

impl Checker<Reservations> for ExclusiveClaim {
    fn invariant(&self) -> Invariant {
        Invariant::ExclusiveClaim
    }

    fn wants(&self, kind: &EventKind) -> bool {
        store_events(kind)
    }

    fn on_event(&mut self, event: &Stamp, facts: &Facts) -> Found {
        match event.event.kind {
            EventKind::Applied {
                applied: Applied::Claimed { ids, token, .. },
                ..
            } => ids
                .as_slice()
                .iter()
                .find_map(|&id| self.judge(facts.ledger(), event, id, token)),
            EventKind::Applied {
                applied: Applied::ClaimWritten { id, token, .. },
                ..
            } => self.judge(facts.ledger(), event, id, token),
            _ => None,
        }
    }
}

/// The claim a release was sent for: the claiming call, or none.
#[derive(Debug)]
struct SentFor {
    claim_call: Option<u64>,
    call: Stamp,
}

/// `release-own-claim`: a release frees only the claim it was sent for.
#[derive(Debug, Default)]
pub struct ReleaseOwnClaim {
    releases: CallBook<SentFor>,
}

impl ReleaseOwnClaim {
    fn judge(&mut self, ledger: &Ledger, event: &Stamp, call: u64, id: u32) -> Found {
        let (replica, sent) = self.releases.take(call, event.event.replica)?;
        let hold = ledger.get(id)?;
        let freed = hold.claim.as_ref()?;
        if sent.claim_call == Some(freed.call) {
            return None;
        }
        let owner = match freed.replica == replica {
            true => "its own later claim".to_string(),
            false => format!("{}'s claim", freed.replica),
        };
        let sent_for = match sent.claim_call {
            Some(claim) => format!("sent for its claim by call #{claim}"),
            None => "sent with no claim of its own on it".to_string(),
        };
        let sentence = format!(
            "{replica}'s release of h{id} ({sent_for}, at {}) freed {owner} with token {} \
             (call #{}, set at {}) at {}",
            At(sent.call.at_ms),
            freed.token,
            freed.call,
            At(freed.event.at_ms),
            At(event.at_ms)
        );
        let context = [Some(&freed.event), Some(&sent.call)];
        Some(Violation::new(
            Invariant::ReleaseOwnClaim,
            event,
            context,
            sentence,
        ))
    }
}

impl Checker<Reservations> for ReleaseOwnClaim {
    fn invariant(&self) -> Invariant {
        Invariant::ReleaseOwnClaim
    }

    fn wants(&self, kind: &EventKind) -> bool {
        store_events(kind) || kind.bit() & (super::WORKER_EVENTS | mask::SERVICE_SIDE) != 0
    }

    fn on_event(&mut self, event: &Stamp, facts: &Facts) -> Found {
        match event.event.kind {
            EventKind::Call { call, request } => {
                if let (Request::Release { id, .. } | Request::ReleaseAny { id }, Some(replica)) =
                    (request, event.event.replica)
                {
                    let claim_call = facts.desk(replica).claimed(id).map(|c| c.claim_call);
                    let sent = SentFor {
                        claim_call,
                        call: event.clone(),
                    };
                    self.releases.insert(call, replica, sent);
                }
                None
            }
            EventKind::Applied {
                call,
                applied:
                    Applied::Released {
                        id, freed: true, ..
                    }
                    | Applied::ReleasedAny {
                        id, freed: Some(_), ..
                    },
            } => self.judge(facts.ledger(), event, call, id),
            EventKind::Applied { call, .. }
            | EventKind::Rejected { call, .. }
            | EventKind::RequestLost { call, .. } => {
                self.releases.take(call, event.event.replica);
                None
            }
            _ => None,
        }
    }
}
