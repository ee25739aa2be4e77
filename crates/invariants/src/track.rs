//! Building blocks checkers keep their state in; every checker owns its own instances.
//!
//! Terminology:
//! - *per replica*: a `Vec` indexed by `ReplicaId::index()`, grown when a new replica appears.
//! - *ring*: the last few events of some kind, overwritten oldest first; context for a report.
//! - *call book*: calls waiting for the service to act on them (`Applied` or `Rejected`),
//!   found again by call id. Service-side events may or may not name the replica, so a
//!   lookup matches the call id, and the replica too when the event has one.

use leasesim_events::{ReplicaId, Stamped};

/// The replica an event concerns, if any.
pub fn replica_of<V: leasesim_events::Vocabulary>(
    event: &Stamped<leasesim_events::Event<V>>,
) -> Option<ReplicaId> {
    event.event.replica
}

/// One value per replica, indexed by `ReplicaId::index()`.
#[derive(Debug)]
pub struct PerReplica<T> {
    items: Vec<T>,
}

impl<T> Default for PerReplica<T> {
    fn default() -> Self {
        PerReplica { items: Vec::new() }
    }
}

impl<T: Default> PerReplica<T> {
    /// The value of `replica`, created on first use.
    pub fn at(&mut self, replica: ReplicaId) -> &mut T {
        let index = replica.index();
        if index >= self.items.len() {
            self.items.resize_with(index + 1, T::default);
        }
        &mut self.items[index]
    }
}

impl<T> PerReplica<T> {
    /// The value of `replica`, if it was ever created.
    pub fn get(&self, replica: ReplicaId) -> Option<&T> {
        self.items.get(replica.index())
    }

    /// Every replica's value, in replica order.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.items.iter_mut()
    }

    /// Every replica seen so far with its value, in replica order.
    pub fn iter(&self) -> impl Iterator<Item = (ReplicaId, &T)> {
        self.items
            .iter()
            .enumerate()
            .map(|(index, item)| (replica_at(index), item))
    }
}

fn replica_at(index: usize) -> ReplicaId {
    ReplicaId(u16::try_from(index).unwrap_or(u16::MAX))
}

/// The last `N` events pushed, oldest first.
#[derive(Debug)]
pub struct Ring<E, const N: usize> {
    slots: [Option<Stamped<E>>; N],
    next: usize,
}

impl<E, const N: usize> Default for Ring<E, N> {
    fn default() -> Self {
        Ring {
            slots: std::array::from_fn(|_| None),
            next: 0,
        }
    }
}

impl<E: Clone, const N: usize> Ring<E, N> {
    pub fn push(&mut self, event: &Stamped<E>) {
        self.slots[self.next] = Some(event.clone());
        // A wrap by comparison, not `% N`: a ring is pushed at every event of some checkers.
        self.next = match self.next + 1 {
            next if next == N => 0,
            next => next,
        };
        // invariant: the next slot to overwrite is always within the ring.
        debug_assert!(self.next < N);
    }

    pub fn clear(&mut self) {
        self.slots.iter_mut().for_each(|slot| *slot = None);
        self.next = 0;
    }

    /// The kept events, oldest first, as context entries.
    pub fn iter(&self) -> impl Iterator<Item = Option<&Stamped<E>>> {
        (0..N).map(move |offset| self.slots[(self.next + offset) % N].as_ref())
    }

    /// The most recent event pushed.
    pub fn last(&self) -> Option<&Stamped<E>> {
        self.slots[(self.next + N - 1) % N].as_ref()
    }
}

/// Calls waiting for the service, with what a checker wants to know about each.
#[derive(Debug)]
pub struct CallBook<T> {
    entries: Vec<(u64, ReplicaId, T)>,
}

impl<T> Default for CallBook<T> {
    fn default() -> Self {
        CallBook {
            entries: Vec::new(),
        }
    }
}

impl<T> CallBook<T> {
    pub fn insert(&mut self, call: u64, replica: ReplicaId, data: T) {
        self.entries.push((call, replica, data));
    }

    /// Removes and returns the entry of `call` (of `replica`, when the event names one).
    pub fn take(&mut self, call: u64, replica: Option<ReplicaId>) -> Option<(ReplicaId, T)> {
        let index = self.entries.iter().position(|(booked, owner, _)| {
            *booked == call && replica.is_none_or(|named| named == *owner)
        })?;
        let (_, owner, data) = self.entries.swap_remove(index);
        Some((owner, data))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamped(seq: u64) -> Stamped<u64> {
        Stamped {
            seq,
            at_ms: seq,
            event: seq,
        }
    }

    /// After each push the ring lists the last `N` events pushed, oldest first (empty slots
    /// first while it is filling), and `last` is the newest.
    #[test]
    fn a_ring_keeps_the_last_n_events_oldest_first() {
        let mut ring: Ring<u64, 5> = Ring::default();
        for pushed in 0..13u64 {
            ring.push(&stamped(pushed));
            let listed: Vec<Option<u64>> = ring.iter().map(|e| e.map(|e| e.seq)).collect();
            let expected: Vec<Option<u64>> = (pushed as i64 - 4..=pushed as i64)
                .map(|seq| u64::try_from(seq).ok())
                .collect();
            assert_eq!(listed, expected, "after pushing {pushed}");
            assert_eq!(ring.last().map(|e| e.seq), Some(pushed));
        }
        ring.clear();
        assert!(ring.iter().all(|e| e.is_none()) && ring.last().is_none());
    }
}
