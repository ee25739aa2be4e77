//! Merging marks that would overlap at the chosen scale.
//!
//! Terminology:
//! - *item*: one mark or span already placed on the x axis, in tenths of a pixel.
//! - *gap*: the distance from the end of one item to the start of the next.
//! - *cluster*: consecutive items of one kind whose gaps are below the merge gap. It covers
//!   its first item's start to its furthest end, sums the rows and keeps every event index
//!   (the hover text lists the first few).

/// One drawn mark standing for one or more events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cluster {
    pub start_tenths: u64,
    pub end_tenths: u64,
    pub rows: u64,
    /// How many items were merged into this one.
    pub count: usize,
    /// Indices of the events it stands for, in input order.
    pub events: Vec<usize>,
}

impl Cluster {
    pub(crate) fn new(start_tenths: u64, end_tenths: u64, rows: u64, events: Vec<usize>) -> Self {
        let end_tenths = end_tenths.max(start_tenths);
        Cluster {
            start_tenths,
            end_tenths,
            rows,
            count: 1,
            events,
        }
    }

    pub(crate) fn width_tenths(&self) -> u64 {
        self.end_tenths - self.start_tenths
    }

    fn absorb(&mut self, other: Cluster) {
        // invariant: items arrive in start order, so a cluster only grows to the right.
        debug_assert!(other.start_tenths >= self.start_tenths);
        self.end_tenths = self.end_tenths.max(other.end_tenths);
        self.rows += other.rows;
        self.count += other.count;
        self.events.extend(other.events);
    }
}

/// Merges items (sorted by start) whose gap to the cluster before is below `gap_tenths`.
pub(crate) fn merge_close(
    items: impl IntoIterator<Item = Cluster>,
    gap_tenths: u64,
) -> Vec<Cluster> {
    let mut merged: Vec<Cluster> = Vec::new();
    for item in items {
        match merged.last_mut() {
            Some(last) if item.start_tenths < last.end_tenths + gap_tenths => last.absorb(item),
            _ => merged.push(item),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::{Cluster, merge_close};

    fn point(x_tenths: u64, rows: u64, event: usize) -> Cluster {
        Cluster::new(x_tenths, x_tenths, rows, vec![event])
    }

    #[test]
    fn close_points_merge_and_sum_rows() {
        let merged = merge_close([point(0, 200, 0), point(30, 200, 1), point(59, 100, 2)], 40);
        assert_eq!(
            merged,
            vec![Cluster {
                start_tenths: 0,
                end_tenths: 59,
                rows: 500,
                count: 3,
                events: vec![0, 1, 2],
            }]
        );
    }

    #[test]
    fn a_gap_of_exactly_the_merge_gap_separates() {
        let merged = merge_close([point(0, 1, 0), point(40, 2, 1)], 40);
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[1].rows, 2);
    }

    #[test]
    fn chains_merge_transitively_but_far_items_stay_apart() {
        let items = [
            point(0, 1, 0),
            point(35, 1, 1),
            point(70, 1, 2),
            point(200, 1, 3),
        ];
        let merged = merge_close(items, 40);
        assert_eq!(merged.len(), 2);
        assert_eq!((merged[0].count, merged[0].end_tenths), (3, 70));
        assert_eq!((merged[1].count, merged[1].start_tenths), (1, 200));
    }

    #[test]
    fn spans_merge_from_their_end_and_keep_the_furthest_end() {
        let items = [
            Cluster::new(0, 100, 0, vec![0]),
            Cluster::new(20, 50, 0, vec![1]),
            Cluster::new(120, 130, 0, vec![2]),
            Cluster::new(200, 210, 0, vec![3]),
        ];
        let merged = merge_close(items, 25);
        assert_eq!(merged.len(), 2);
        assert_eq!((merged[0].start_tenths, merged[0].end_tenths), (0, 130));
        assert_eq!(merged[0].width_tenths(), 130);
    }

    #[test]
    fn a_zero_gap_merges_only_overlaps() {
        let items = [
            Cluster::new(0, 10, 0, vec![0]),
            Cluster::new(10, 20, 0, vec![1]),
        ];
        assert_eq!(merge_close(items.clone(), 0).len(), 2);
        assert_eq!(merge_close(items, 1).len(), 1);
    }

    #[test]
    fn nothing_in_nothing_out() {
        assert!(merge_close(Vec::new(), 40).is_empty());
    }
}
