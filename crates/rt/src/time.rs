//! The virtual clock's timer queue.
//!
//! Terminology:
//! - *deadline*: the virtual instant (ms) a timer fires at.
//! - *seq*: a per-executor counter stamped on every registration; equal deadlines fire in
//!   `seq` order, so ties are broken the same way on every run.
//! - *slot*: where a registered timer keeps its waker. A `Sleep` remembers `(slot, seq)`;
//!   dropping it frees the slot at once, and the heap entry it leaves behind is recognised as
//!   stale (its seq no longer matches) and skipped. Stale entries are compacted away when they
//!   outnumber live ones, so dropped sleeps cannot pile up.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::task::Waker;

const FREE: u64 = u64::MAX;

#[derive(Debug)]
struct Slot {
    seq: u64,
    waker: Option<Waker>,
}

/// Registration handle kept by a sleeping future.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimerKey {
    slot: u32,
    seq: u64,
}

#[derive(Debug, Default)]
pub(crate) struct TimerQueue {
    heap: BinaryHeap<Reverse<(u64, u64, u32)>>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    next_seq: u64,
    live: usize,
}

impl TimerQueue {
    /// Registers `waker` to be woken at `deadline_ms`.
    pub(crate) fn register(&mut self, deadline_ms: u64, waker: Waker) -> TimerKey {
        let seq = self.next_seq;
        self.next_seq += 1;
        let slot = match self.free.pop() {
            Some(slot) => {
                let entry = &mut self.slots[slot as usize];
                // invariant: only free slots are on the free list.
                debug_assert_eq!(entry.seq, FREE);
                entry.seq = seq;
                entry.waker = Some(waker);
                slot
            }
            None => {
                self.slots.push(Slot {
                    seq,
                    waker: Some(waker),
                });
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 timers")
            }
        };
        self.heap.push(Reverse((deadline_ms, seq, slot)));
        self.live += 1;
        TimerKey { slot, seq }
    }

    /// Replaces the waker of a registered timer (the sleeping task was polled by a new waker).
    pub(crate) fn update_waker(&mut self, key: TimerKey, waker: &Waker) {
        let entry = &mut self.slots[key.slot as usize];
        if entry.seq == key.seq {
            match &mut entry.waker {
                Some(current) if current.will_wake(waker) => {}
                other => *other = Some(waker.clone()),
            }
        }
    }

    /// Removes a timer; a no-op when it already fired or was cancelled.
    pub(crate) fn cancel(&mut self, key: TimerKey) {
        let entry = &mut self.slots[key.slot as usize];
        if entry.seq != key.seq {
            return;
        }
        entry.seq = FREE;
        entry.waker = None;
        self.free.push(key.slot);
        self.live -= 1;
        if self.heap.len() > 64 && self.heap.len() > 2 * self.live {
            self.compact();
        }
    }

    /// Is this registration still waiting to fire?
    pub(crate) fn is_pending(&self, key: TimerKey) -> bool {
        self.slots[key.slot as usize].seq == key.seq
    }

    fn compact(&mut self) {
        let slots = &self.slots;
        self.heap
            .retain(|Reverse((_, seq, slot))| slots[*slot as usize].seq == *seq);
        // invariant: after compaction the heap holds exactly the live timers.
        debug_assert_eq!(self.heap.len(), self.live);
    }

    /// Number of timers waiting to fire.
    pub(crate) fn live(&self) -> usize {
        self.live
    }

    /// Number of heap entries, stale ones included (for leak tests).
    pub(crate) fn heap_len(&self) -> usize {
        self.heap.len()
    }

    /// The earliest live deadline, dropping stale entries on the way.
    pub(crate) fn next_deadline(&mut self) -> Option<u64> {
        while let Some(Reverse((deadline, seq, slot))) = self.heap.peek().copied() {
            if self.slots[slot as usize].seq == seq {
                return Some(deadline);
            }
            self.heap.pop();
        }
        None
    }

    /// Fires every live timer due at or before `now_ms`, in (deadline, seq) order, by pushing
    /// its waker onto `fired`.
    pub(crate) fn fire_due(&mut self, now_ms: u64, fired: &mut Vec<Waker>) {
        while let Some(Reverse((deadline, seq, slot))) = self.heap.peek().copied() {
            if deadline > now_ms {
                break;
            }
            self.heap.pop();
            let entry = &mut self.slots[slot as usize];
            if entry.seq != seq {
                continue;
            }
            entry.seq = FREE;
            fired.extend(entry.waker.take());
            self.free.push(slot);
            self.live -= 1;
        }
    }

    /// Drops every timer (executor teardown).
    pub(crate) fn clear(&mut self) {
        self.heap.clear();
        self.slots.clear();
        self.free.clear();
        self.live = 0;
    }
}
