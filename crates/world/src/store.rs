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

/// What applying a delete did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeleteApplied {
    pub rows: u32,
    /// Creation time of the newest row deleted.
    pub newest_created_ms: Option<u64>,
}

#[derive(Clone, Debug)]
pub struct RecordStore {
    created_ms: Vec<u64>,
    head: usize,
    fencing: bool,
}

impl RecordStore {
    /// A store holding rows with these creation times (any order).
    pub fn new(mut created_ms: Vec<u64>, fencing: bool) -> RecordStore {
        created_ms.sort_unstable();
        RecordStore {
            created_ms,
            head: 0,
            fencing,
        }
    }

    /// `rows` rows with creation times spread evenly over `from_ms..=to_ms`.
    pub fn spread(rows: u64, from_ms: u64, to_ms: u64, fencing: bool) -> RecordStore {
        assert!(from_ms <= to_ms, "empty creation window");
        let span = to_ms - from_ms;
        let created = (0..rows)
            .map(|i| from_ms + if rows > 1 { span * i / (rows - 1) } else { 0 })
            .collect();
        RecordStore::new(created, fencing)
    }

    pub fn fencing(&self) -> bool {
        self.fencing
    }

    /// Would a delete with `token` pass the fencing check, given the live token?
    pub fn admits(&self, token: u64, live_token: Option<u64>) -> bool {
        !self.fencing || live_token == Some(token)
    }

    /// Deletes up to `limit` of the oldest rows created before `older_than_ms` that exist at
    /// `now_ms`. The caller has already applied the fencing check.
    pub fn delete_oldest(&mut self, older_than_ms: u64, limit: u32, now_ms: u64) -> DeleteApplied {
        let bound = older_than_ms.min(now_ms.saturating_add(1));
        let end = (self.head + limit as usize).min(self.created_ms.len());
        let taken = self.created_ms[self.head..end]
            .iter()
            .take_while(|&&c| c < bound)
            .count();
        let newest_created_ms = taken
            .checked_sub(1)
            .map(|last| self.created_ms[self.head + last]);
        self.head += taken;
        // invariant: the head never passes the end, and every deleted row was older than the bound.
        debug_assert!(self.head <= self.created_ms.len());
        debug_assert!(newest_created_ms.is_none_or(|newest| newest < bound));
        DeleteApplied {
            rows: taken as u32,
            newest_created_ms,
        }
    }

    /// Rows not yet deleted (including rows not created yet).
    pub fn remaining(&self) -> u64 {
        (self.created_ms.len() - self.head) as u64
    }

    /// Rows not deleted that were created before `before_ms`.
    pub fn remaining_before(&self, before_ms: u64) -> u64 {
        self.created_ms[self.head..].partition_point(|&c| c < before_ms) as u64
    }

    /// Creation times of the rows not deleted, oldest first.
    pub fn rows(&self) -> &[u64] {
        &self.created_ms[self.head..]
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
        assert_eq!(store.rows(), &[40, 50]);
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
    fn fencing_admits_only_the_live_token_unless_off() {
        let fenced = RecordStore::new(vec![], true);
        assert!(fenced.admits(4, Some(4)));
        assert!(!fenced.admits(3, Some(4)));
        assert!(!fenced.admits(3, None));
        assert!(RecordStore::new(vec![], false).admits(3, Some(4)));
    }
}
