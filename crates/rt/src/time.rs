//! The virtual clock's timer queue.
//!
//! Terminology:
//! - *deadline*: the virtual instant (ms) a timer fires at.
//! - *seq*: a per-executor counter stamped on every registration; equal deadlines fire in
//!   `seq` order, so ties are broken the same way on every run.
//! - *slot*: where a registered timer keeps its waker. A `Sleep` remembers `(slot, seq)`;
//!   dropping it frees the slot at once, and the entry it leaves behind is recognised as
//!   stale (its seq no longer matches) and skipped. Stale entries, on the heap or on the
//!   wheel, are compacted away when they outnumber live ones, so dropped sleeps cannot pile
//!   up.
//! - *near* timers (deadline within [`WHEEL_MS`] of the queue's now) wait on the *wheel*: one
//!   bucket per ms of that window (`deadline % WHEEL_MS`), each in registration (seq) order,
//!   with a bitmap of the buckets in use. A network latency of a few ms costs a push, where
//!   the heap cost a sift to the root (the nearest deadline is usually the newest).
//! - *far* timers wait on a binary heap ordered by `(deadline, seq)`.
//!
//! Both feed one order: the timers due at an instant fire in `(deadline, seq)` order, exactly
//! as a single heap would fire them (property-tested against one).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::task::Waker;

const FREE: u64 = u64::MAX;

/// The width of the wheel: deadlines within this many ms of now are near.
pub(crate) const WHEEL_MS: u64 = 64;

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

#[derive(Debug)]
pub(crate) struct TimerQueue {
    /// Far timers: `(deadline, seq, slot)`, earliest first.
    heap: BinaryHeap<Reverse<(u64, u64, u32)>>,
    /// Near timers: `(seq, slot)` per bucket `deadline % WHEEL_MS`, in seq order.
    wheel: [Vec<(u64, u32)>; WHEEL_MS as usize],
    /// Bit `b` set: bucket `b` may hold a timer (live or stale).
    occupied: u64,
    /// Entries on the wheel, stale ones included.
    wheel_len: usize,
    /// The latest instant fired: every wheel timer's deadline lies in `now_ms..now_ms +
    /// WHEEL_MS`.
    now_ms: u64,
    slots: Vec<Slot>,
    free: Vec<u32>,
    next_seq: u64,
    live: usize,
    /// Scratch for one `fire_due`: the due timers of both wheel and heap, to be ordered.
    due: Vec<(u64, u64, u32)>,
}

impl Default for TimerQueue {
    fn default() -> Self {
        TimerQueue {
            heap: BinaryHeap::new(),
            wheel: std::array::from_fn(|_| Vec::new()),
            occupied: 0,
            wheel_len: 0,
            now_ms: 0,
            slots: Vec::new(),
            free: Vec::new(),
            next_seq: 0,
            live: 0,
            due: Vec::new(),
        }
    }
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
        if (self.now_ms..self.now_ms.saturating_add(WHEEL_MS)).contains(&deadline_ms) {
            let bucket = (deadline_ms % WHEEL_MS) as usize;
            self.wheel[bucket].push((seq, slot));
            self.occupied |= 1 << bucket;
            self.wheel_len += 1;
        } else {
            self.heap.push(Reverse((deadline_ms, seq, slot)));
        }
        self.live += 1;
        // invariant: a fresh registration is pending under its key.
        debug_assert!(self.slots[slot as usize].seq == seq);
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
        if self.wheel_len > 64 && self.wheel_len > 2 * self.live {
            self.compact_wheel();
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
        // invariant: after compaction the heap holds live timers only.
        debug_assert!(self.heap.len() <= self.live);
    }

    /// Drops the wheel's stale entries (order within each bucket is kept).
    fn compact_wheel(&mut self) {
        let slots = &self.slots;
        let mut kept = 0;
        for bucket in &mut self.wheel {
            bucket.retain(|&(seq, slot)| slots[slot as usize].seq == seq);
            kept += bucket.len();
        }
        self.wheel_len = kept;
        // invariant: after compaction the wheel holds live timers only.
        debug_assert!(self.wheel_len <= self.live);
    }

    /// Number of timers waiting to fire.
    pub(crate) fn live(&self) -> usize {
        self.live
    }

    /// Number of entries on the heap and the wheel, stale ones included (for leak tests).
    pub(crate) fn entry_len(&self) -> usize {
        // invariant: the wheel's count is its entries'.
        debug_assert_eq!(
            self.wheel_len,
            self.wheel.iter().map(Vec::len).sum::<usize>()
        );
        self.heap.len() + self.wheel_len
    }

    fn is_live(&self, seq: u64, slot: u32) -> bool {
        self.slots[slot as usize].seq == seq
    }

    /// The deadline bucket `bucket` holds timers for: the one instant of the window with
    /// that remainder.
    fn bucket_deadline_ms(&self, bucket: u64) -> u64 {
        let offset = (bucket + WHEEL_MS - self.now_ms % WHEEL_MS) % WHEEL_MS;
        self.now_ms + offset
    }

    /// The earliest live wheel deadline, emptying buckets that hold stale timers only.
    fn wheel_next(&mut self) -> Option<u64> {
        while self.occupied != 0 {
            let shift = (self.now_ms % WHEEL_MS) as u32;
            let offset = u64::from(self.occupied.rotate_right(shift).trailing_zeros());
            let deadline_ms = self.now_ms + offset;
            let bucket = (deadline_ms % WHEEL_MS) as usize;
            // invariant: the nearest occupied bucket is the one found (so the loop ends).
            assert!(
                self.occupied & (1 << bucket) != 0,
                "wheel bucket lookup went wrong"
            );
            if self.wheel[bucket]
                .iter()
                .any(|&(seq, slot)| self.is_live(seq, slot))
            {
                return Some(deadline_ms);
            }
            self.wheel_len -= self.wheel[bucket].len();
            self.wheel[bucket].clear();
            self.occupied &= !(1 << bucket);
        }
        None
    }

    /// The earliest live heap deadline, dropping stale entries on the way.
    fn heap_next(&mut self) -> Option<u64> {
        while let Some(Reverse((deadline, seq, slot))) = self.heap.peek().copied() {
            if self.is_live(seq, slot) {
                return Some(deadline);
            }
            self.heap.pop();
        }
        None
    }

    /// The earliest live deadline, dropping stale entries on the way.
    pub(crate) fn next_deadline(&mut self) -> Option<u64> {
        let next = match (self.wheel_next(), self.heap_next()) {
            (Some(near), Some(far)) => Some(near.min(far)),
            (near, far) => near.or(far),
        };
        // invariant: a live timer always has a next deadline, never one in the past.
        debug_assert!(next.is_some() || self.live == 0);
        debug_assert!(next.is_none_or(|deadline| deadline >= self.now_ms));
        next
    }

    /// Fires every live timer due at or before `now_ms`, in (deadline, seq) order, by pushing
    /// its waker onto `fired`.
    pub(crate) fn fire_due(&mut self, now_ms: u64, fired: &mut Vec<Waker>) {
        let mut due = std::mem::take(&mut self.due);
        let mut buckets = self.occupied;
        while buckets != 0 {
            let bucket = u64::from(buckets.trailing_zeros());
            buckets &= buckets - 1;
            let deadline_ms = self.bucket_deadline_ms(bucket);
            if deadline_ms > now_ms {
                continue;
            }
            let entries = &mut self.wheel[bucket as usize];
            self.wheel_len -= entries.len();
            due.extend(
                entries
                    .drain(..)
                    .map(|(seq, slot)| (deadline_ms, seq, slot)),
            );
            self.occupied &= !(1 << bucket);
        }
        while let Some(Reverse(entry)) = self.heap.peek().copied() {
            if entry.0 > now_ms {
                break;
            }
            self.heap.pop();
            due.push(entry);
        }
        due.sort_unstable();
        for &(_, seq, slot) in &due {
            let entry = &mut self.slots[slot as usize];
            if entry.seq != seq {
                continue;
            }
            entry.seq = FREE;
            fired.extend(entry.waker.take());
            self.free.push(slot);
            self.live -= 1;
        }
        due.clear();
        self.due = due;
        self.now_ms = self.now_ms.max(now_ms);
        // invariant: nothing due is left behind, on the wheel or on the heap.
        debug_assert!(
            self.heap
                .peek()
                .is_none_or(|Reverse(entry)| entry.0 > now_ms)
        );
        debug_assert!(self.occupied & (1 << (self.now_ms % WHEEL_MS)) == 0);
    }

    /// Drops every timer (executor teardown).
    pub(crate) fn clear(&mut self) {
        self.heap.clear();
        self.wheel.iter_mut().for_each(Vec::clear);
        self.occupied = 0;
        self.wheel_len = 0;
        self.slots.clear();
        self.free.clear();
        self.live = 0;
    }
}

/// The queue against a naive reference: every timer in a list, the due ones fired in
/// `(deadline, seq)` order. Operations as the executor does them: register at or after now,
/// cancel any key (fired, cancelled or pending), fire the next deadline, or fire everything
/// up to a later instant.
#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::task::Wake;

    use proptest::prelude::*;

    use super::*;

    struct Tagged {
        tag: u64,
        log: Arc<Mutex<Vec<u64>>>,
    }

    impl Wake for Tagged {
        fn wake(self: Arc<Self>) {
            self.log.lock().unwrap().push(self.tag);
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Register(u64),
        Cancel(usize),
        FireNext,
        FireUpTo(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u64..3 * WHEEL_MS).prop_map(Op::Register),
            1 => (0u64..2_000).prop_map(Op::Register),
            2 => any::<usize>().prop_map(Op::Cancel),
            3 => Just(Op::FireNext),
            1 => (0u64..3 * WHEEL_MS).prop_map(Op::FireUpTo),
        ]
    }

    /// The reference: `(deadline, tag, pending)` per registration, tags in order.
    #[derive(Default)]
    struct Naive {
        timers: Vec<(u64, u64, bool)>,
    }

    impl Naive {
        fn fire_up_to(&mut self, now_ms: u64) -> Vec<u64> {
            let mut due: Vec<(u64, u64)> = self
                .timers
                .iter()
                .filter(|t| t.2 && t.0 <= now_ms)
                .map(|t| (t.0, t.1))
                .collect();
            due.sort_unstable();
            for t in &mut self.timers {
                if t.0 <= now_ms {
                    t.2 = false;
                }
            }
            due.into_iter().map(|(_, tag)| tag).collect()
        }

        fn next(&self) -> Option<u64> {
            self.timers.iter().filter(|t| t.2).map(|t| t.0).min()
        }
    }

    fn run(ops: &[Op]) {
        let log = Arc::new(Mutex::new(Vec::new()));
        let (mut queue, mut naive) = (TimerQueue::default(), Naive::default());
        let (mut keys, mut now_ms) = (Vec::new(), 0u64);
        let fire = |queue: &mut TimerQueue, naive: &mut Naive, at_ms: u64| {
            let mut fired = Vec::new();
            queue.fire_due(at_ms, &mut fired);
            fired.into_iter().for_each(Waker::wake);
            let woken = std::mem::take(&mut *log.lock().unwrap());
            assert_eq!(woken, naive.fire_up_to(at_ms), "fired at {at_ms}");
        };
        for op in ops {
            match *op {
                Op::Register(after_ms) => {
                    let tag = keys.len() as u64;
                    let waker = Waker::from(Arc::new(Tagged {
                        tag,
                        log: log.clone(),
                    }));
                    keys.push(queue.register(now_ms + after_ms, waker));
                    naive.timers.push((now_ms + after_ms, tag, true));
                }
                Op::Cancel(pick) if !keys.is_empty() => {
                    let index = pick % keys.len();
                    queue.cancel(keys[index]);
                    naive.timers[index].2 = false;
                }
                Op::Cancel(_) => {}
                Op::FireNext => {
                    let next = queue.next_deadline();
                    assert_eq!(next, naive.next());
                    if let Some(deadline_ms) = next {
                        now_ms = deadline_ms;
                        fire(&mut queue, &mut naive, now_ms);
                    }
                }
                Op::FireUpTo(after_ms) => {
                    now_ms += after_ms;
                    fire(&mut queue, &mut naive, now_ms);
                }
            }
            assert_eq!(queue.live(), naive.timers.iter().filter(|t| t.2).count());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        #[test]
        fn timers_fire_in_deadline_then_registration_order(ops in prop::collection::vec(op(), 0..200)) {
            run(&ops);
        }
    }

    #[test]
    fn deadlines_at_the_end_of_time_fire_in_order() {
        // The wheel's window is cut at u64::MAX: the last instants go to the heap.
        let far = u64::MAX - WHEEL_MS;
        run(&[
            Op::Register(far),
            Op::FireNext,
            Op::Register(WHEEL_MS),
            Op::Register(WHEEL_MS - 1),
            Op::Register(3),
            Op::FireNext,
            Op::FireNext,
            Op::FireNext,
        ]);
    }

    #[test]
    fn equal_deadlines_on_wheel_and_heap_fire_in_registration_order() {
        // Registered far (heap) at 0, then near (wheel) once time moved: same deadline.
        let ops = [
            Op::Register(100),
            Op::FireUpTo(60),
            Op::Register(40),
            Op::Register(40),
            Op::FireNext,
        ];
        run(&ops);
    }
}
