//! The item store: one record per item, claims with store-wide fencing tokens, fenced writes.
//!
//! Terminology:
//! - *record*: an item's state, owner, last claim token, lease expiry, attempts, last error,
//!   size (chunks) and the chunks of its local effect applied so far.
//! - *live claim*: the record is `Claimed` and its expiry is still ahead (store time).
//! - *claimable*: `Pending`, `Released`, or `Claimed` with the claim expired; never `Done`
//!   or `Failed`.
//! - *fenced write*: applied only if its token is the live claim's (a *guarded* write);
//!   refused otherwise, with the live token (if any) for the trace. With `fencing` off the
//!   store skips that check for applies and done-marks; the unsafe primitives always skip it.
//! - *end mark*: done, released or failed, written by one claim (`marked_by`). The same claim
//!   writing the same mark again is a *repeat*, answered as a success (so a retry after a lost
//!   reply succeeds).
//!
//! Every answer is decided at the instant the request is applied, in store time.

use leasesim_events::ReplicaId;

use crate::events::{ErrorCode, ItemState, ItemView, Mark, OpenItem, Prior, StatusView};

/// One item's record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub state: ItemState,
    pub owner: Option<ReplicaId>,
    /// The last claim's token (0: never claimed).
    pub token: u64,
    pub expires_at_ms: u64,
    pub attempts: u32,
    pub last_error: Option<ErrorCode>,
    /// The claim that wrote the current end mark (0: none).
    pub marked_by: u64,
    pub chunks: u32,
    /// Bit `c` set: chunk `c` of the local effect has been applied.
    pub applied: u64,
}

impl Record {
    fn new(chunks: u32) -> Record {
        Record {
            state: ItemState::Pending,
            owner: None,
            token: 0,
            expires_at_ms: 0,
            attempts: 0,
            last_error: None,
            marked_by: 0,
            chunks,
            applied: 0,
        }
    }

    /// Is every chunk of the local effect applied?
    pub fn effect_applied(&self) -> bool {
        let all = if self.chunks >= 64 {
            u64::MAX
        } else {
            (1u64 << self.chunks) - 1
        };
        self.applied & all == all
    }
}

/// A claim the store granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    pub token: u64,
    pub expires_at_ms: u64,
    pub attempt: u32,
    pub chunks: u32,
    pub prior: Prior,
}

/// Why a claim was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    Busy { token: u64 },
    Closed { state: ItemState },
}

/// The store of one run.
#[derive(Clone, Debug)]
pub struct ItemStore {
    records: Vec<Record>,
    last_token: u64,
    fencing: bool,
}

impl ItemStore {
    /// The run's items as the dispatcher creates them: one per size, all pending.
    pub fn new(sizes: &[u32], fencing: bool) -> ItemStore {
        let store = ItemStore {
            records: sizes.iter().map(|&chunks| Record::new(chunks)).collect(),
            last_token: 0,
            fencing,
        };
        // invariant: every item starts pending with at least one chunk.
        debug_assert!(store.records.iter().all(|r| r.chunks >= 1));
        store
    }

    pub fn record(&self, item: u32) -> &Record {
        &self.records[item as usize]
    }

    pub fn len(&self) -> u32 {
        u32::try_from(self.records.len()).expect("at most MAX_ITEMS items")
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    pub fn fencing(&self) -> bool {
        self.fencing
    }

    /// The live claim's token of `item` at `now_ms`, if any.
    pub fn live(&self, item: u32, now_ms: u64) -> Option<u64> {
        let record = self.record(item);
        (record.state == ItemState::Claimed && now_ms < record.expires_at_ms)
            .then_some(record.token)
    }

    fn claimable(&self, item: u32, now_ms: u64) -> bool {
        match self.record(item).state {
            ItemState::Pending | ItemState::Released => true,
            ItemState::Claimed => self.live(item, now_ms).is_none(),
            ItemState::Done | ItemState::Failed => false,
        }
    }

    /// The first claimable item after `after`, wrapping round (past the last item, the scan
    /// starts again from the first).
    pub fn find(&self, after: Option<u32>, now_ms: u64) -> Option<u32> {
        let count = self.len();
        let start = match after {
            Some(after) if after.saturating_add(1) < count => after + 1,
            _ => 0,
        };
        (0..count)
            .map(|offset| (start + offset) % count)
            .find(|&item| self.claimable(item, now_ms))
    }

    /// A conditional claim: granted only if the item is claimable.
    pub fn claim(
        &mut self,
        item: u32,
        owner: ReplicaId,
        now_ms: u64,
        lease_ms: u64,
    ) -> Result<Grant, Refusal> {
        let record = self.record(item);
        if !self.claimable(item, now_ms) {
            return Err(match record.state {
                ItemState::Done | ItemState::Failed => Refusal::Closed {
                    state: record.state,
                },
                _ => Refusal::Busy {
                    token: record.token,
                },
            });
        }
        Ok(self.grant(item, owner, now_ms, lease_ms))
    }

    /// Unsafe: writes `owner` as the item's claimant whatever its state.
    pub fn plain_claim(
        &mut self,
        item: u32,
        owner: ReplicaId,
        now_ms: u64,
        lease_ms: u64,
    ) -> Grant {
        self.grant(item, owner, now_ms, lease_ms)
    }

    fn grant(&mut self, item: u32, owner: ReplicaId, now_ms: u64, lease_ms: u64) -> Grant {
        let live = self.live(item, now_ms);
        let token = self.last_token + 1;
        self.last_token = token;
        let record = &mut self.records[item as usize];
        let prior = match (record.state, live) {
            (ItemState::Pending, _) => Prior::Fresh,
            (ItemState::Released, _) => Prior::Released {
                token: record.marked_by,
            },
            (ItemState::Claimed, None) => Prior::Expired {
                token: record.token,
            },
            (ItemState::Claimed, Some(held)) => Prior::Held { token: held },
            (state @ (ItemState::Done | ItemState::Failed), _) => Prior::Closed {
                token: record.marked_by,
                state,
            },
        };
        record.state = ItemState::Claimed;
        record.owner = Some(owner);
        record.token = token;
        record.expires_at_ms = now_ms.saturating_add(lease_ms);
        record.attempts += 1;
        let grant = Grant {
            token,
            expires_at_ms: record.expires_at_ms,
            attempt: record.attempts,
            chunks: record.chunks,
            prior,
        };
        // invariant: the new claim is live, with a token above every earlier one.
        debug_assert_eq!(self.live(item, now_ms), Some(token));
        grant
    }

    /// Extends the live claim `token`; the new expiry, or the live token that refused it.
    pub fn renew(
        &mut self,
        item: u32,
        token: u64,
        now_ms: u64,
        lease_ms: u64,
    ) -> Result<u64, Option<u64>> {
        let live = self.live(item, now_ms);
        if live != Some(token) {
            return Err(live);
        }
        let record = &mut self.records[item as usize];
        record.expires_at_ms = now_ms.saturating_add(lease_ms);
        // invariant: a renewal never shortens a live claim.
        debug_assert!(record.expires_at_ms > now_ms);
        Ok(record.expires_at_ms)
    }

    /// Applies chunk `chunk` under `token` (`guarded`: only for the live claim, unless
    /// fencing is off). `Ok(fresh)`, or the live token that refused it.
    pub fn apply(
        &mut self,
        item: u32,
        token: u64,
        chunk: u32,
        now_ms: u64,
        guarded: bool,
    ) -> Result<bool, Option<u64>> {
        let live = self.live(item, now_ms);
        if guarded && self.fencing && live != Some(token) {
            return Err(live);
        }
        let record = &mut self.records[item as usize];
        let bit = 1u64 << chunk.min(63);
        let fresh = record.applied & bit == 0;
        record.applied |= bit;
        // invariant: an applied chunk stays applied.
        debug_assert!(record.applied & bit != 0);
        Ok(fresh)
    }

    /// Writes end mark `mark` under `token` (`guarded`: only for the live claim, unless
    /// fencing is off for a done-mark). `Ok(repeat)`, or the live token that refused it.
    pub fn mark(
        &mut self,
        item: u32,
        token: u64,
        mark: Mark,
        error: Option<ErrorCode>,
        (now_ms, guarded): (u64, bool),
    ) -> Result<bool, Option<u64>> {
        let live = self.live(item, now_ms);
        let state = match mark {
            Mark::Done => ItemState::Done,
            Mark::Released => ItemState::Released,
            Mark::Failed => ItemState::Failed,
        };
        let record = self.record(item);
        if record.state == state && record.marked_by == token {
            return Ok(true);
        }
        let checked = guarded && (self.fencing || mark != Mark::Done);
        if checked && live != Some(token) {
            return Err(live);
        }
        let record = &mut self.records[item as usize];
        record.state = state;
        record.marked_by = token;
        if error.is_some() {
            record.last_error = error;
        }
        // invariant: after an end mark the item has no live claim.
        debug_assert!(self.live(item, now_ms).is_none());
        Ok(false)
    }

    /// One record as it is (for the tally).
    pub fn read(&self, item: u32) -> ItemView {
        let record = self.record(item);
        ItemView {
            state: record.state,
            token: record.token,
            expires_at_ms: record.expires_at_ms,
        }
    }

    /// Open, done and failed items.
    pub fn status(&self) -> StatusView {
        let count = |state| {
            let n = self.records.iter().filter(|r| r.state == state).count();
            u32::try_from(n).expect("at most MAX_ITEMS items")
        };
        let (done, failed) = (count(ItemState::Done), count(ItemState::Failed));
        let status = StatusView {
            open: self.len() - done - failed,
            done,
            failed,
        };
        // invariant: every item is counted once.
        debug_assert_eq!(status.open + status.done + status.failed, self.len());
        status
    }

    /// The first item not done or failed.
    pub fn first_open(&self) -> Option<OpenItem> {
        let item = (0..self.len()).find(|&item| {
            !matches!(self.record(item).state, ItemState::Done | ItemState::Failed)
        })?;
        Some(OpenItem {
            item,
            view: self.read(item),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const R1: ReplicaId = ReplicaId(0);
    const R2: ReplicaId = ReplicaId(1);

    #[test]
    fn a_claim_takes_the_next_token_and_only_claimable_items() {
        let mut store = ItemStore::new(&[1, 2], true);
        let first = store.claim(0, R1, 100, 1_000).unwrap();
        assert_eq!(
            (first.token, first.attempt, first.prior),
            (1, 1, Prior::Fresh)
        );
        assert_eq!(
            store.claim(0, R2, 500, 1_000),
            Err(Refusal::Busy { token: 1 })
        );
        let second = store.claim(0, R2, 1_100, 1_000).unwrap();
        assert_eq!(second.prior, Prior::Expired { token: 1 });
        assert_eq!((second.token, second.attempt), (2, 2));
        assert_eq!(store.mark(0, 2, Mark::Done, None, (1_200, true)), Ok(false));
        assert_eq!(
            store.claim(0, R1, 5_000, 1_000),
            Err(Refusal::Closed {
                state: ItemState::Done
            })
        );
        assert_eq!(store.find(None, 5_000), Some(1));
        assert_eq!(store.find(Some(1), 5_000), Some(1), "the scan wraps round");
        let store = ItemStore::new(&[1, 1, 1, 1], true);
        assert_eq!(
            store.find(Some(4), 0),
            Some(0),
            "after the last item the scan starts from the first"
        );
    }

    #[test]
    fn fenced_writes_need_the_live_token_and_repeats_succeed() {
        let mut store = ItemStore::new(&[2], true);
        store.claim(0, R1, 0, 1_000).unwrap();
        assert_eq!(store.apply(0, 1, 0, 10, true), Ok(true));
        assert_eq!(store.apply(0, 1, 0, 20, true), Ok(false));
        assert_eq!(store.apply(0, 7, 1, 20, true), Err(Some(1)));
        assert_eq!(store.apply(0, 1, 1, 1_000, true), Err(None), "expired");
        assert!(!store.record(0).effect_applied());
        assert_eq!(store.renew(0, 1, 999, 1_000), Ok(1_999));
        assert_eq!(store.apply(0, 1, 1, 1_000, true), Ok(true));
        assert!(store.record(0).effect_applied());
        assert_eq!(store.mark(0, 1, Mark::Done, None, (1_100, true)), Ok(false));
        assert_eq!(store.mark(0, 1, Mark::Done, None, (1_200, true)), Ok(true));
        assert_eq!(
            store.status(),
            StatusView {
                open: 0,
                done: 1,
                failed: 0
            }
        );
    }

    #[test]
    fn unsafe_writes_skip_every_condition() {
        let mut store = ItemStore::new(&[1], true);
        store.claim(0, R1, 0, 1_000).unwrap();
        let stolen = store.plain_claim(0, R2, 10, 1_000);
        assert_eq!(stolen.prior, Prior::Held { token: 1 });
        assert_eq!(
            store.apply(0, 1, 0, 20, false),
            Ok(true),
            "a stale token applies"
        );
        assert_eq!(store.mark(0, 1, Mark::Done, None, (30, false)), Ok(false));
        let reopened = store.plain_claim(0, R1, 40, 1_000);
        assert!(matches!(reopened.prior, Prior::Closed { token: 1, .. }));
    }
}
