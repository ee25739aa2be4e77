//! The simulated reservation store: holds with deadlines, claims, the guarded transition, and
//! the primitives only defective workers use.
//!
//! Terminology:
//! - *row*: one reservation: its deadline, its status, its claim, whether its record is
//!   malformed, whether a dead letter parked it.
//! - *eligible at t*: held, not parked, deadline `<= t`. `t` is the store's clock unless the
//!   caller passed an instant (then the store trusts it).
//! - *live claim*: a claim whose expiry is after the store's now; claims expire by time alone
//!   (nothing is written when they do).
//! - *due index*: the held, unparked rows ordered by deadline then id: a claim walks it from
//!   the oldest and stops at the first row not yet eligible.
//!
//! Every operation is one atomic step at its apply instant; the store's clock is
//! `leasesim_sim::EPOCH_MS` + virtual time.

use std::collections::BTreeSet;

use crate::events::{Applied, IdList, MAX_BATCH, MetricsView, StatusView};

/// A claim on one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim {
    pub token: u64,
    pub until_ms: u64,
    /// When it was set.
    pub since_ms: u64,
}

/// One reservation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub hold_until_ms: u64,
    pub status: StatusView,
    pub claim: Option<Claim>,
    pub malformed: bool,
    pub parked: bool,
}

/// The store's state in one run, with the counters its metrics are made of.
#[derive(Clone, Debug, Default)]
pub struct Store {
    rows: Vec<Row>,
    due: BTreeSet<(u64, u32)>,
    claimed: u32,
    max_claim_age_ms: u64,
    duplicate_attempts: u32,
    state_conflicts: u32,
    parked: u32,
}

impl Store {
    pub fn new() -> Store {
        Store::default()
    }

    /// The row of `id`, if there is one.
    pub fn row(&self, id: u32) -> Option<&Row> {
        self.rows.get((id as usize).checked_sub(1)?)
    }

    fn row_mut(&mut self, id: u32) -> Option<&mut Row> {
        self.rows.get_mut((id as usize).checked_sub(1)?)
    }

    /// How many holds were ever placed.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Places a new hold; its id.
    pub fn place(&mut self, hold_until_ms: u64, malformed: bool) -> u32 {
        self.rows.push(Row {
            hold_until_ms,
            status: StatusView::Held,
            claim: None,
            malformed,
            parked: false,
        });
        let id = u32::try_from(self.rows.len()).expect("fewer than 2^32 holds");
        self.due.insert((hold_until_ms, id));
        // invariant: a new hold is held and indexed.
        debug_assert!(self.due.contains(&(hold_until_ms, id)));
        id
    }

    /// Moves `id` out of held (expired or consumed), keeping the index in step.
    fn settle(&mut self, id: u32, to: StatusView) {
        let row = self.row_mut(id).expect("a placed row");
        // invariant: only a held row moves, and it moves once.
        assert_eq!(row.status, StatusView::Held, "h{id} moved twice");
        row.status = to;
        let key = (row.hold_until_ms, id);
        let parked = row.parked;
        let was_indexed = self.due.remove(&key);
        debug_assert!(was_indexed || parked);
    }

    /// An agent consumes `id`: allowed while it is held (also past its deadline). Answers the
    /// deadline, or the status that refused it.
    pub fn consume(&mut self, id: u32) -> Result<u64, StatusView> {
        let row = self.row(id).expect("agents consume placed holds");
        if row.status != StatusView::Held {
            return Err(row.status);
        }
        let hold_until_ms = row.hold_until_ms;
        self.settle(id, StatusView::Consumed);
        Ok(hold_until_ms)
    }

    fn live_claim(row: &Row, now_ms: u64) -> Option<Claim> {
        row.claim.filter(|claim| claim.until_ms > now_ms)
    }

    /// The eligible, unclaimed ids at `eligible_at_ms`, oldest deadline first, at most `limit`.
    fn due_unclaimed(&self, limit: u32, eligible_at_ms: u64, now_ms: u64) -> Vec<u32> {
        let limit = (limit as usize).min(MAX_BATCH);
        self.due
            .iter()
            .take_while(|(hold_until_ms, _)| *hold_until_ms <= eligible_at_ms)
            .map(|(_, id)| *id)
            .filter(|id| {
                let row = self.row(*id).expect("indexed rows exist");
                Self::live_claim(row, now_ms).is_none()
            })
            .take(limit)
            .collect()
    }

    /// The atomic claim: eligible and unclaimed rows get the claim `token` until
    /// `now + claim_for_ms`, in one step.
    pub fn claim(
        &mut self,
        limit: u32,
        eligible_at_ms: u64,
        token: u64,
        claim_for_ms: u64,
        now_ms: u64,
    ) -> Applied {
        let ids = self.due_unclaimed(limit, eligible_at_ms, now_ms);
        let until_ms = now_ms.saturating_add(claim_for_ms);
        for &id in &ids {
            let row = self.row_mut(id).expect("a due row");
            // invariant: the claim checks status, deadline and claim while it sets the claim.
            assert!(row.status == StatusView::Held && row.hold_until_ms <= eligible_at_ms);
            assert!(
                Self::live_claim(row, now_ms).is_none(),
                "h{id} claimed twice"
            );
            row.claim = Some(Claim {
                token,
                until_ms,
                since_ms: now_ms,
            });
        }
        self.claimed += ids.len() as u32;
        Applied::Claimed {
            ids: IdList::of(&ids),
            token,
            until_ms,
        }
    }

    /// The guarded transition: held and due at `eligible_at_ms` becomes expired.
    pub fn expire(&mut self, id: u32, eligible_at_ms: u64) -> Applied {
        let Some(row) = self.row(id) else {
            return Applied::Unknown { id };
        };
        if row.malformed {
            return Applied::Invalid { id };
        }
        let (status, hold_until_ms) = (row.status, row.hold_until_ms);
        match status {
            StatusView::Held if hold_until_ms <= eligible_at_ms => {
                self.settle(id, StatusView::Expired);
                Applied::Expired { id, hold_until_ms }
            }
            StatusView::Expired => {
                self.duplicate_attempts += 1;
                self.state_conflicts += 1;
                Applied::AlreadyDone { id }
            }
            _ => {
                self.state_conflicts += 1;
                Applied::NotEligible {
                    id,
                    status,
                    hold_until_ms,
                }
            }
        }
    }

    /// Frees the claim of `id` if it carries `token`; whether it did.
    pub fn release(&mut self, id: u32, token: u64, now_ms: u64) -> Applied {
        let Some(row) = self.row_mut(id) else {
            return Applied::Unknown { id };
        };
        let freed = row.claim.is_some_and(|claim| claim.token == token);
        if freed {
            let claim = row.claim.take().expect("checked above");
            self.max_claim_age_ms = self.max_claim_age_ms.max(now_ms - claim.since_ms);
        }
        Applied::Released { id, token, freed }
    }

    /// Records a dead letter: the row is parked, and no claim takes it any more.
    pub fn park(&mut self, id: u32) -> Applied {
        let Some(row) = self.row_mut(id) else {
            return Applied::Unknown { id };
        };
        if !row.parked {
            row.parked = true;
            let key = (row.hold_until_ms, id);
            self.due.remove(&key);
            self.parked += 1;
        }
        Applied::Parked { id }
    }

    /// Primitive: the status becomes expired, whatever it was (an update by id alone).
    pub fn expire_by_id(&mut self, id: u32) -> Applied {
        let Some(row) = self.row_mut(id) else {
            return Applied::Unknown { id };
        };
        if row.malformed {
            return Applied::Invalid { id };
        }
        let was = row.status;
        row.status = StatusView::Expired;
        let key = (row.hold_until_ms, id);
        self.due.remove(&key);
        Applied::ExpiredById { id, was }
    }

    /// Primitive: the eligible, unclaimed ids (claims nothing).
    pub fn read_due(&self, limit: u32, eligible_at_ms: u64, now_ms: u64) -> Applied {
        let ids = self.due_unclaimed(limit, eligible_at_ms, now_ms);
        Applied::DueRead {
            ids: IdList::of(&ids),
        }
    }

    /// Primitive: a plain write of the claim of `id`, over whatever claim it has.
    pub fn write_claim(&mut self, id: u32, token: u64, claim_for_ms: u64, now_ms: u64) -> Applied {
        let Some(row) = self.row_mut(id) else {
            return Applied::Unknown { id };
        };
        let replaced = Self::live_claim(row, now_ms).map(|claim| claim.token);
        let until_ms = now_ms.saturating_add(claim_for_ms);
        row.claim = Some(Claim {
            token,
            until_ms,
            since_ms: now_ms,
        });
        self.claimed += 1;
        Applied::ClaimWritten {
            id,
            token,
            until_ms,
            replaced,
        }
    }

    /// Primitive: frees whatever claim `id` has.
    pub fn release_any(&mut self, id: u32, now_ms: u64) -> Applied {
        let Some(row) = self.row_mut(id) else {
            return Applied::Unknown { id };
        };
        let freed = row.claim.take();
        if let Some(claim) = freed {
            self.max_claim_age_ms = self.max_claim_age_ms.max(now_ms - claim.since_ms);
        }
        Applied::ReleasedAny {
            id,
            freed: freed.map(|claim| claim.token),
        }
    }

    /// The metrics design 002 asks a dashboard for, at `now_ms`.
    pub fn metrics(&self, now_ms: u64) -> MetricsView {
        let due = self.due.iter().take_while(|(until, _)| *until <= now_ms);
        let mut oldest = None;
        let mut due_held = 0;
        for &(hold_until_ms, id) in due {
            due_held += 1;
            let row = self.row(id).expect("indexed rows exist");
            if oldest.is_none() && Self::live_claim(row, now_ms).is_none() {
                oldest = Some(now_ms - hold_until_ms);
            }
        }
        MetricsView {
            claimed: self.claimed,
            max_claim_age_ms: self.max_claim_age_ms,
            duplicate_attempts: self.duplicate_attempts,
            state_conflicts: self.state_conflicts,
            dead_letters: self.parked,
            oldest_unclaimed_eligible_ms: oldest,
            due_held,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_takes_due_unclaimed_holds_oldest_first_and_no_others() {
        let mut store = Store::new();
        let late = store.place(500, false);
        let early = store.place(100, false);
        let future = store.place(9_000, false);
        let Applied::Claimed { ids, .. } = store.claim(8, 1_000, 7, 300, 1_000) else {
            panic!("a claim answers Claimed");
        };
        assert_eq!(ids.as_slice(), [early, late]);
        let again = store.claim(8, 1_000, 8, 300, 1_100);
        assert!(matches!(again, Applied::Claimed { ids, .. } if ids.is_empty()));
        // Once the claims expire, another claimer takes them.
        let later = store.claim(1, 2_000, 9, 300, 1_300);
        assert!(matches!(later, Applied::Claimed { ids, .. } if ids.as_slice() == [early]));
        assert!(store.row(future).unwrap().claim.is_none());
    }

    #[test]
    fn the_guarded_transition_expires_once_and_never_a_consumed_or_early_hold() {
        let mut store = Store::new();
        let id = store.place(100, false);
        let consumed = store.place(100, false);
        assert!(matches!(store.expire(id, 99), Applied::NotEligible { .. }));
        assert!(matches!(store.expire(id, 100), Applied::Expired { .. }));
        assert_eq!(store.expire(id, 100), Applied::AlreadyDone { id });
        assert_eq!(store.consume(consumed), Ok(100));
        assert!(matches!(
            store.expire(consumed, 500),
            Applied::NotEligible {
                status: StatusView::Consumed,
                ..
            }
        ));
        assert_eq!(store.consume(id), Err(StatusView::Expired));
        let metrics = store.metrics(500);
        assert_eq!(
            (metrics.duplicate_attempts, metrics.state_conflicts),
            (1, 3)
        );
    }

    #[test]
    fn a_release_frees_only_its_own_token_and_the_primitives_do_not_check() {
        let mut store = Store::new();
        let id = store.place(0, false);
        store.claim(1, 0, 5, 1_000, 0);
        assert_eq!(
            store.release(id, 4, 10),
            Applied::Released {
                id,
                token: 4,
                freed: false
            }
        );
        let written = store.write_claim(id, 6, 1_000, 20);
        assert!(matches!(
            written,
            Applied::ClaimWritten {
                replaced: Some(5),
                ..
            }
        ));
        assert_eq!(
            store.release_any(id, 30),
            Applied::ReleasedAny { id, freed: Some(6) }
        );
        store.consume(id).unwrap();
        assert_eq!(
            store.expire_by_id(id),
            Applied::ExpiredById {
                id,
                was: StatusView::Consumed
            }
        );
    }

    #[test]
    fn a_parked_or_malformed_hold_is_never_expired_by_the_guard() {
        let mut store = Store::new();
        let bad = store.place(0, true);
        let parked = store.place(0, false);
        assert_eq!(store.expire(bad, 10), Applied::Invalid { id: bad });
        store.park(parked);
        let claimed = store.claim(8, 10, 1, 100, 10);
        assert!(matches!(claimed, Applied::Claimed { ids, .. } if ids.as_slice() == [bad]));
        assert_eq!(store.metrics(10).dead_letters, 1);
    }
}
