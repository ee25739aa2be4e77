//! When a claim is renewed, and by which clock: `renewal-due`.
//!
//! Terminology:
//! - *grant instant*: the worker's clock when it asked for the claim's last grant: the latest
//!   reading its claim requests for the item carried (a claim retried after a transport
//!   failure asks again; a clock that jumped back in between makes an earlier attempt's
//!   reading the latest), then that of each renewal the store granted. Every store request of
//!   the worker carries its clock reading, so the stream shows the clock that decided.
//! - *due*: `renew_every_ms` or more past the grant instant on the worker's clock. The store's
//!   clock decides when the lease ends (`expires_at_ms`); when to renew is the worker's own
//!   measure of time since it asked, never the store's expiry read on the worker's clock (the
//!   two clocks may be seconds apart).
//! - *late write*: an apply or done-mark of the claim carrying a due reading, with no renewal
//!   sent since the claim's previous call (the correct worker checks before every call and
//!   renews first; a slow renewal may answer after the interval passed again, which is not
//!   late).

use std::collections::BTreeMap;

use leasesim_events::mask;
use leasesim_invariants::{At, Checker, PerReplica, Violation};

use super::{CheckConfig, Facts, Invariant};
use crate::events::{Answer, ClockMs, Event, EventKind, Request, Stamped, WorkItems};

type Found = Option<Violation<WorkItems>>;

/// The claim a replica works under, as this checker follows it.
#[derive(Debug)]
struct Tracked {
    item: u32,
    token: u64,
    /// The worker's clock when the last grant was asked for.
    grant_ms: u64,
    /// The event that granted it (the claim's or the renewal's answer).
    granted: Stamped<Event>,
    /// A renewal was sent since the claim's previous call.
    renewing: bool,
}

/// One replica: its claim and renewal requests in flight, and the claim it works under.
#[derive(Debug, Default)]
struct Replica {
    asked: BTreeMap<u64, Request>,
    /// The item the latest claim requests asked for, and the latest reading they carried.
    claiming: Option<(u32, u64)>,
    claim: Option<Tracked>,
}

/// `renewal-due`: no write of a claim carries a due reading unless a renewal came first.
#[derive(Debug)]
pub struct RenewalDue {
    renew_every_ms: u64,
    replicas: PerReplica<Replica>,
}

impl RenewalDue {
    pub fn new(config: &CheckConfig) -> RenewalDue {
        RenewalDue {
            renew_every_ms: config.renew_every_ms,
            replicas: PerReplica::default(),
        }
    }

    fn sent(&mut self, event: &Stamped<Event>, call: u64, request: Request) -> Found {
        let replica = event.event.replica?;
        let (what, item, token, now_ms) = match request {
            Request::Claim { .. } | Request::PlainClaim { .. } | Request::Renew { .. } => {
                let state = self.replicas.at(replica);
                state.asked.insert(call, request);
                if let Request::Claim { item, now_ms, .. }
                | Request::PlainClaim { item, now_ms, .. } = request
                {
                    let latest_ms = match state.claiming {
                        Some((asked, ms)) if asked == item => ms.max(now_ms),
                        _ => now_ms,
                    };
                    state.claiming = Some((item, latest_ms));
                }
                if let (Request::Renew { item, token, .. }, Some(claim)) =
                    (request, &mut state.claim)
                    && (claim.item, claim.token) == (item, token)
                {
                    claim.renewing = true;
                }
                return None;
            }
            Request::Apply {
                item,
                token,
                now_ms,
                ..
            }
            | Request::UnguardedApply {
                item,
                token,
                now_ms,
                ..
            } => ("a chunk", item, token, now_ms),
            Request::Done {
                item,
                token,
                now_ms,
                ..
            }
            | Request::UnguardedDone {
                item,
                token,
                now_ms,
                ..
            } => ("the done-mark", item, token, now_ms),
            Request::ProviderApply { item, .. }
            | Request::Lookup {
                key: crate::events::Key { item, .. },
            } => {
                if let Some(claim) = self.replicas.at(replica).claim.as_mut()
                    && claim.item == item
                {
                    claim.renewing = false;
                }
                return None;
            }
            _ => return None,
        };
        let renew_every_ms = self.renew_every_ms;
        let claim = self.replicas.at(replica).claim.as_mut();
        let claim = claim.filter(|c| (c.item, c.token) == (item, token))?;
        let found = late_write(renew_every_ms, event, claim, what, now_ms);
        claim.renewing = false;
        found
    }

    fn answered(&mut self, event: &Stamped<Event>, call: u64, answer: Answer) {
        let Some(replica) = event.event.replica else {
            return;
        };
        let state = self.replicas.at(replica);
        let Some(request) = state.asked.remove(&call) else {
            return;
        };
        match (request, answer) {
            (
                Request::Claim { now_ms, .. } | Request::PlainClaim { now_ms, .. },
                Answer::Claimed(lease),
            ) => {
                let grant_ms = match state.claiming.take() {
                    Some((item, latest_ms)) if item == lease.item => latest_ms,
                    _ => now_ms,
                };
                state.claim = Some(Tracked {
                    item: lease.item,
                    token: lease.token,
                    grant_ms,
                    granted: event.clone(),
                    renewing: false,
                });
            }
            (
                Request::Renew {
                    item,
                    token,
                    now_ms,
                    ..
                },
                Answer::Renewed { .. },
            ) => {
                if let Some(claim) = state.claim.as_mut()
                    && (claim.item, claim.token) == (item, token)
                {
                    claim.grant_ms = now_ms;
                    claim.granted = event.clone();
                }
            }
            _ => {}
        }
    }
}

/// The violation of a write of `claim` sent at `event` with the worker's clock at `now_ms`,
/// if the write is late.
fn late_write(
    renew_every_ms: u64,
    event: &Stamped<Event>,
    claim: &Tracked,
    what: &str,
    now_ms: u64,
) -> Found {
    let since_ms = now_ms.saturating_sub(claim.grant_ms);
    if since_ms < renew_every_ms || claim.renewing {
        return None;
    }
    let replica = event.event.replica?;
    let sentence = format!(
        "{replica} sent {what} of item {} at {} with its clock at {}, {since_ms}ms after it \
         asked for the claim's last grant (at {}), without renewing: renewals are due every \
         {}ms on the worker's own clock",
        claim.item,
        At(event.at_ms),
        ClockMs(now_ms),
        ClockMs(claim.grant_ms),
        renew_every_ms
    );
    let context = [Some(&claim.granted)];
    Some(Violation::new(
        Invariant::RenewalDue,
        event,
        context,
        sentence,
    ))
}

impl Checker<WorkItems> for RenewalDue {
    fn invariant(&self) -> Invariant {
        Invariant::RenewalDue
    }

    fn wants(&self, kind: &EventKind) -> bool {
        kind.bit() & (mask::CALL | mask::ANSWERED | mask::RESTARTED) != 0
    }

    fn on_event(&mut self, event: &Stamped<Event>, _facts: &Facts) -> Found {
        match event.event.kind {
            EventKind::Call { call, request } => self.sent(event, call, request),
            EventKind::Answered { call, answer, .. } => {
                self.answered(event, call, answer);
                None
            }
            EventKind::Restarted => {
                *self.replicas.at(event.event.replica?) = Replica::default();
                None
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkers::testkit::{
        LEASE_MS, R1, R2, RENEW_EVERY_MS, Script, assert_broken, assert_holds,
    };
    use crate::events::{Applied, EPOCH_MS};
    use leasesim_events::NetFailure;

    /// A chunk of item 1 under token 7, sent with the worker's clock at `clock_ms`.
    fn chunk(clock_ms: u64) -> Request {
        Request::Apply {
            item: 1,
            token: 7,
            chunk: 0,
            now_ms: EPOCH_MS + clock_ms,
        }
    }

    /// r1 claims item 1 (token 7) at t=0, its clock reading +0ms.
    fn claimed() -> Script {
        let mut s = Script::new();
        s.claim(R1, 1, 7, 1);
        s
    }

    fn renewed(s: &mut Script, clock_ms: u64) {
        let request = Request::Renew {
            item: 1,
            token: 7,
            lease_ms: LEASE_MS,
            now_ms: EPOCH_MS + clock_ms,
        };
        let expires_at_ms = EPOCH_MS + clock_ms + LEASE_MS;
        let applied = Applied::Renewed {
            item: 1,
            token: 7,
            expires_at_ms,
        };
        s.round(R1, request, applied, Answer::Renewed { expires_at_ms });
    }

    #[test]
    fn a_write_past_the_interval_without_a_renewal_breaks_renewal_due() {
        let mut s = claimed();
        s.send(R1, chunk(RENEW_EVERY_MS - 1));
        s.at(1_500).send(R1, chunk(RENEW_EVERY_MS));
        let seq = s.last_seq();
        let words = [
            "r1 sent a chunk of item 1 at t=1500ms with its clock at +1000ms",
            "1000ms after it asked for the claim's last grant (at +0ms), without renewing",
        ];
        assert_broken(Invariant::RenewalDue, &s, seq, &words);
        // Another replica's writes, and a write of another claim, are not r1's.
        let mut other = claimed();
        other.send(R2, chunk(5_000));
        assert_holds(Invariant::RenewalDue, &other);
    }

    /// A claim made with a plain write (a defective worker's) is followed like any other.
    #[test]
    fn a_plainly_written_claim_is_renewed_on_time_too() {
        let mut s = Script::new();
        let request = Request::PlainClaim {
            item: 1,
            lease_ms: LEASE_MS,
            now_ms: EPOCH_MS,
        };
        let lease = crate::events::LeaseView {
            item: 1,
            token: 7,
            expires_at_ms: EPOCH_MS + LEASE_MS,
            attempt: 1,
            chunks: 1,
        };
        let applied = Applied::Claimed {
            item: 1,
            token: 7,
            expires_at_ms: EPOCH_MS + LEASE_MS,
            attempt: 1,
            chunks: 1,
            prior: crate::events::Prior::Fresh,
        };
        s.round(R1, request, applied, Answer::Claimed(lease));
        s.send(R1, chunk(RENEW_EVERY_MS));
        let seq = s.last_seq();
        assert_broken(Invariant::RenewalDue, &s, seq, &["without renewing"]);
    }

    /// A claim of item 1 asked for with the worker's clock at `clock_ms`, refused before it
    /// was applied.
    fn claim_refused(s: &mut Script, clock_ms: u64) {
        let request = Request::Claim {
            item: 1,
            lease_ms: LEASE_MS,
            now_ms: EPOCH_MS + clock_ms,
        };
        let call = s.send(R1, request);
        s.answer(R1, call, request.op(), Answer::Failed(NetFailure::Rejected));
    }

    #[test]
    fn a_claim_asked_again_after_the_clock_fell_back_counts_from_the_latest_reading() {
        // Asked at +2000ms and refused; the clock falls back; granted when asked at +0ms.
        let mut s = Script::new();
        claim_refused(&mut s, 2_000);
        s.claim(R1, 1, 7, 1);
        s.send(R1, chunk(2_000 + RENEW_EVERY_MS - 1));
        assert_holds(Invariant::RenewalDue, &s);
        s.send(R1, chunk(2_000 + RENEW_EVERY_MS));
        let seq = s.last_seq();
        let words = ["1000ms after it asked for the claim's last grant (at +2000ms)"];
        assert_broken(Invariant::RenewalDue, &s, seq, &words);
    }

    #[test]
    fn a_renewal_before_the_write_keeps_renewal_due_and_moves_the_grant() {
        let mut s = claimed();
        renewed(&mut s, RENEW_EVERY_MS);
        // A slow renewal: the next reading is due again, but a renewal came first.
        s.send(R1, chunk(2 * RENEW_EVERY_MS + 5));
        assert_holds(Invariant::RenewalDue, &s);
        // The grant moved to the renewal's reading: the next write is judged from there.
        s.send(R1, chunk(2 * RENEW_EVERY_MS + 10));
        let seq = s.last_seq();
        let words = ["1010ms after it asked for the claim's last grant (at +1000ms)"];
        assert_broken(Invariant::RenewalDue, &s, seq, &words);
    }
}
