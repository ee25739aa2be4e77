//! The record store: rows with creation times, deleted oldest first, fenced by token.
//!
//! Terminology:
//! - *row*: only its creation time matters. Rows are kept as one ascending vector of creation
//!   times; a row "exists" once the store's clock has reached its creation time, so a
//!   scenario can describe rows arriving during the run without an insert process.
//! - *head*: rows before it are deleted. Deletion is always oldest-first, so the deleted rows
//!   are exactly a prefix and a batch costs O(batch), whatever the backlog.
//! - *fencing*: the store checks a delete's token against the lease authority at the instant
//!   the delete is applied. A scenario can switch it off to show why it is needed.
//! - *full answer*: a delete removes every eligible row up to its limit. A *short answer*
//!   (a fault the world injects) removes fewer while more eligible rows remain, as
//!   `DELETE ... LIMIT n` with `SKIP LOCKED` does when other transactions hold row locks.

/// What applying a delete did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeleteApplied {
    pub rows: u32,
    /// Creation time of the newest row deleted.
    pub newest_created_ms: Option<u64>,
}

/// Creation times, oldest first: evenly spread (computed, nothing stored), or listed.
#[derive(Clone, Debug)]
enum Rows {
    /// `count` rows spread evenly over `from_ms..=from_ms + span_ms`.
    Spread {
        count: u64,
        from_ms: u64,
        span_ms: u64,
    },
    /// Any rows, sorted ascending.
    Listed(Vec<u64>),
}

impl Rows {
    fn len(&self) -> usize {
        match self {
            Rows::Spread { count, .. } => *count as usize,
            Rows::Listed(rows) => rows.len(),
        }
    }

    /// Creation time of the `index`-th oldest row.
    fn created_ms(&self, index: usize) -> u64 {
        match self {
            Rows::Spread {
                count,
                from_ms,
                span_ms,
            } => {
                let steps = count.saturating_sub(1).max(1);
                // u128: span * index overflows u64 for long spans of many rows.
                from_ms + (u128::from(*span_ms) * index as u128 / u128::from(steps)) as u64
            }
            Rows::Listed(rows) => rows[index],
        }
    }

    /// The first index at or after `start` whose row was created at or after `bound_ms`.
    fn first_at_or_after(&self, start: usize, bound_ms: u64) -> usize {
        // invariant: the search starts within the rows (the head never passes the end).
        debug_assert!(start <= self.len());
        let found = match *self {
            Rows::Spread {
                count,
                from_ms,
                span_ms,
            } => Rows::first_spread(count, from_ms, span_ms, bound_ms),
            Rows::Listed(_) => self.search(start, bound_ms),
        };
        let first = found.min(self.len()).max(start);
        // invariant: every row before the answer is older than the bound, and (rows being
        // sorted) the one at it is not.
        debug_assert!(first == start || self.created_ms(first - 1) < bound_ms);
        debug_assert!(first >= self.len() || self.created_ms(first) >= bound_ms);
        first
    }

    /// The first index of a spread whose row was created at or after `bound_ms`, worked out
    /// from `created_ms`'s formula: row `i` is created at `from + floor(span * i / steps)`,
    /// at or after the bound exactly when `span * i >= (bound - from) * steps`.
    fn first_spread(count: u64, from_ms: u64, span_ms: u64, bound_ms: u64) -> usize {
        let Some(late_ms) = bound_ms.checked_sub(from_ms).filter(|&late_ms| late_ms > 0) else {
            return 0;
        };
        if span_ms == 0 {
            // Every row is created at `from_ms`, before the bound.
            return usize::MAX;
        }
        let steps = u128::from(count.saturating_sub(1).max(1));
        let first = (u128::from(late_ms) * steps).div_ceil(u128::from(span_ms));
        usize::try_from(first).unwrap_or(usize::MAX)
    }

    /// Binary search from `start` for the first row created at or after `bound_ms`.
    fn search(&self, start: usize, bound_ms: u64) -> usize {
        let (mut lo, mut hi) = (start, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.created_ms(mid) < bound_ms {
                lo = mid + 1
            } else {
                hi = mid
            }
        }
        // invariant: the search stays within `start..=len`.
        debug_assert!(lo >= start && lo <= self.len());
        lo
    }
}

#[derive(Clone, Debug)]
pub struct RecordStore {
    rows: Rows,
    head: usize,
    fencing: bool,
}

impl RecordStore {
    /// A store holding rows with these creation times (any order).
    pub fn new(mut created_ms: Vec<u64>, fencing: bool) -> RecordStore {
        created_ms.sort_unstable();
        // invariant: rows are kept oldest first, which deleting a prefix relies on.
        debug_assert!(created_ms.is_sorted());
        RecordStore {
            rows: Rows::Listed(created_ms),
            head: 0,
            fencing,
        }
    }

    /// `rows` rows with creation times spread evenly over `from_ms..=to_ms`. Nothing is
    /// stored per row, so a 100,000-row backlog costs what a 1,000-row one does.
    pub fn spread(rows: u64, from_ms: u64, to_ms: u64, fencing: bool) -> RecordStore {
        assert!(from_ms <= to_ms, "empty creation window");
        let rows = Rows::Spread {
            count: rows,
            from_ms,
            span_ms: to_ms - from_ms,
        };
        RecordStore {
            rows,
            head: 0,
            fencing,
        }
    }

    pub fn fencing(&self) -> bool {
        self.fencing
    }

    /// Would a delete with `token` pass the fencing check, given the live token?
    pub fn admits(&self, token: u64, live_token: Option<u64>) -> bool {
        !self.fencing || live_token == Some(token)
    }

    /// How many rows a full answer to `delete_oldest(older_than_ms, limit, now_ms)` removes:
    /// the eligible rows, at most `limit`. Changes nothing.
    pub fn eligible(&self, older_than_ms: u64, limit: u32, now_ms: u64) -> u32 {
        let bound = older_than_ms.min(now_ms.saturating_add(1));
        let end = (self.head + limit as usize).min(self.rows.len());
        let eligible = self.rows.first_at_or_after(self.head, bound).min(end) - self.head;
        // invariant: a full answer never exceeds the limit.
        debug_assert!(eligible <= limit as usize);
        eligible as u32
    }

    /// Deletes up to `limit` of the oldest rows created before `older_than_ms` that exist at
    /// `now_ms`. The caller has already applied the fencing check.
    pub fn delete_oldest(&mut self, older_than_ms: u64, limit: u32, now_ms: u64) -> DeleteApplied {
        let bound = older_than_ms.min(now_ms.saturating_add(1));
        let head_before = self.head;
        let taken = self.eligible(older_than_ms, limit, now_ms) as usize;
        let newest_created_ms = taken
            .checked_sub(1)
            .map(|last| self.rows.created_ms(self.head + last));
        self.head += taken;
        // invariant: a delete removes at most its limit, the head never passes the end, and
        // every deleted row was older than the bound.
        assert!(self.head - head_before <= limit as usize);
        debug_assert!(self.head <= self.rows.len());
        debug_assert!(newest_created_ms.is_none_or(|newest| newest < bound));
        DeleteApplied {
            rows: taken as u32,
            newest_created_ms,
        }
    }

    /// Rows not yet deleted (including rows not created yet).
    pub fn remaining(&self) -> u64 {
        (self.rows.len() - self.head) as u64
    }

    /// Rows not deleted that were created before `before_ms`.
    pub fn remaining_before(&self, before_ms: u64) -> u64 {
        let before = (self.rows.first_at_or_after(self.head, before_ms) - self.head) as u64;
        // invariant: the eligible backlog is part of what remains.
        debug_assert!(before <= self.remaining());
        before
    }

    /// Creation times of the rows not yet deleted, oldest first.
    pub fn rows(&self) -> Vec<u64> {
        (self.head..self.rows.len())
            .map(|i| self.rows.created_ms(i))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deletes_oldest_first_up_to_the_limit_and_cutoff() {
        let mut store = RecordStore::new(vec![50, 10, 30, 20, 40], true);
        let applied = store.delete_oldest(35, 2, 1_000);
        assert_eq!(
            applied,
            DeleteApplied {
                rows: 2,
                newest_created_ms: Some(20)
            }
        );
        let applied = store.delete_oldest(35, 10, 1_000);
        assert_eq!(
            applied,
            DeleteApplied {
                rows: 1,
                newest_created_ms: Some(30)
            }
        );
        assert_eq!(store.delete_oldest(35, 10, 1_000).rows, 0);
        assert_eq!(store.rows(), vec![40, 50]);
    }

    #[test]
    fn rows_created_later_than_now_do_not_exist_yet() {
        let mut store = RecordStore::spread(11, 0, 100, true);
        assert_eq!(
            store.delete_oldest(1_000, 100, 45).rows,
            5,
            "rows at 0,10,..,40"
        );
        assert_eq!(store.remaining_before(75), 3);
    }

    #[test]
    fn spread_rows_are_computed_like_a_listed_store() {
        let mut spread = RecordStore::spread(7, 100, 160, true);
        let mut listed = RecordStore::new(vec![100, 110, 120, 130, 140, 150, 160], true);
        assert_eq!(spread.rows(), listed.rows());
        for (cutoff, limit) in [(125, 2), (125, 5), (161, 1), (1_000, 10)] {
            assert_eq!(
                spread.delete_oldest(cutoff, limit, 500),
                listed.delete_oldest(cutoff, limit, 500)
            );
            assert_eq!(spread.remaining_before(150), listed.remaining_before(150));
        }
        assert_eq!(RecordStore::spread(1, 5, 5, true).rows(), vec![5]);
        assert_eq!(RecordStore::spread(0, 5, 9, true).remaining(), 0);
    }

    #[test]
    fn eligible_counts_what_a_full_answer_takes_and_changes_nothing() {
        let mut store = RecordStore::spread(11, 0, 100, true);
        assert_eq!(
            store.eligible(1_000, 100, 45),
            5,
            "rows at 0,10,..,40 exist"
        );
        assert_eq!(
            store.eligible(25, 100, 1_000),
            3,
            "rows at 0,10,20 are older"
        );
        assert_eq!(store.eligible(1_000, 4, 1_000), 4, "at most the limit");
        assert_eq!(store.remaining(), 11);
        store.delete_oldest(1_000, 2, 1_000);
        assert_eq!(
            store.eligible(35, 100, 1_000),
            2,
            "rows at 20,30 are left of them"
        );
        assert_eq!(RecordStore::spread(0, 5, 9, true).eligible(100, 10, 100), 0);
    }

    proptest::proptest! {
        /// The spread's first row at or after a bound, worked out from the formula, is the
        /// one a binary search over the computed rows finds (large spans and counts
        /// included, where the formula's products need 128 bits).
        #[test]
        fn a_spreads_first_row_after_a_bound_is_the_searched_one(
            count in proptest::prop_oneof![0u64..40, 0u64..=u64::from(u32::MAX)],
            from_ms in proptest::prop_oneof![0u64..100, 0u64..=u64::MAX / 2],
            span_ms in proptest::prop_oneof![0u64..100, 0u64..=u64::MAX / 2],
            bound_ms in proptest::prop_oneof![0u64..300, proptest::num::u64::ANY],
            start in 0usize..50,
        ) {
            let rows = Rows::Spread { count, from_ms, span_ms };
            let start = start.min(rows.len());
            let searched = rows.search(start, bound_ms);
            proptest::prop_assert_eq!(rows.first_at_or_after(start, bound_ms), searched);
        }
    }

    #[test]
    fn fencing_admits_only_the_live_token_unless_off() {
        let fenced = RecordStore::new(vec![], true);
        assert!(fenced.admits(4, Some(4)));
        assert!(!fenced.admits(3, Some(4)));
        assert!(!fenced.admits(3, None));
        assert!(RecordStore::new(vec![], false).admits(3, Some(4)));
    }
}
