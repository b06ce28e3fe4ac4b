//! The event queue of the packet network: a calendar queue popping in the
//! engine's [`TimeQueue`] order.

use std::collections::BinaryHeap;

use crate::engine::fabric::Ps;
#[cfg(doc)]
use crate::engine::fabric::TimeQueue;

/// The event queue: a calendar queue (R. Brown, "Calendar queues: a fast
/// O(1) priority queue implementation for the simulation event set
/// problem", CACM 31(10), 1988) popping in exactly [`TimeQueue`]'s order: by
/// time, first in first out among equal times. A ring of `slots` buckets of
/// `2^shift` ps each covers the near future from the current bucket; later
/// items wait in a binary heap (ordered by time and push sequence number) and
/// move into the ring as it turns. Items of a bucket are appended in push
/// order, so a stable sort by time when the bucket becomes current gives the
/// FIFO order among equal times without storing a sequence number (far items
/// move in before anything later can be pushed into their bucket). The current
/// bucket is kept sorted (an item pushed into it is inserted after every item
/// at or before its time). Items may not be pushed before the last *popped*
/// time; `next` may turn the ring to the next bucket, and an item pushed after
/// that for an earlier bucket goes to the front of the current one (it is
/// earlier than everything there), so the event loop may still inject between
/// the last event and the next.
///
/// Why not [`TimeQueue`]: its ordered map costs a tree walk per push and
/// pop, and a packet hop is three events; events cluster within a few
/// serialisation times of now, which a calendar queue serves in O(1).
#[derive(Debug)]
pub(super) struct EventQueue<T> {
    shift: u32,
    mask: u64,
    slots: Vec<Vec<Entry<T>>>,
    /// Bit `i`: slot `i` holds items (the current slot's bit included).
    occupied: Vec<u64>,
    /// Absolute bucket (`time >> shift`) of the current slot.
    cur: u64,
    /// Next item of the current slot.
    head: usize,
    far: BinaryHeap<Far<T>>,
    len: usize,
    /// Push sequence of far items (their ties).
    seq: u64,
    /// The last popped time.
    last: Ps,
}

/// An item in a ring slot. Its push order is its place in the slot: items
/// are appended in push order (far items move in before any later push can
/// reach their slot), so a stable sort by time gives `(time, sequence)`
/// order without storing the sequence number.
#[derive(Clone, Copy, Debug)]
struct Entry<T> {
    t: Ps,
    item: T,
}

/// A far-future entry, ordered for a min-heap by `(t, seq)`.
#[derive(Clone, Copy, Debug)]
struct Far<T> {
    seq: u64,
    e: Entry<T>,
}

impl<T> PartialEq for Far<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.e.t, self.seq) == (other.e.t, other.seq)
    }
}
impl<T> Eq for Far<T> {}
impl<T> PartialOrd for Far<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Far<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (other.e.t, other.seq).cmp(&(self.e.t, self.seq))
    }
}

impl<T: Copy> EventQueue<T> {
    /// Buckets of `2^shift` ps, `2^log_slots` of them.
    pub(super) fn new(shift: u32, log_slots: u32) -> Self {
        let n = 1usize << log_slots;
        EventQueue {
            shift,
            mask: n as u64 - 1,
            slots: (0..n).map(|_| Vec::new()).collect(),
            occupied: vec![0; n.div_ceil(64)],
            cur: 0,
            head: 0,
            far: BinaryHeap::new(),
            len: 0,
            seq: 0,
            last: 0,
        }
    }

    /// Bucket width and count for events up to `horizon` ps ahead, the
    /// shortest interesting delay being `grain` ps.
    pub(super) fn for_delays(grain: Ps, horizon: Ps) -> Self {
        let shift = (grain.max(1) / 16).max(1).ilog2();
        let want = (2 * horizon.max(1)) >> shift;
        let log_slots = (want.max(64).next_power_of_two().ilog2()).min(16);
        Self::new(shift, log_slots)
    }

    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn set_bit(&mut self, i: usize) {
        self.occupied[i >> 6] |= 1 << (i & 63);
    }

    #[inline(always)]
    pub(super) fn push(&mut self, t: Ps, item: T) {
        let e = Entry { t, item };
        self.len += 1;
        let abs = t >> self.shift;
        // cur < abs ≤ cur + mask, in one comparison
        if abs.wrapping_sub(self.cur + 1) < self.mask {
            let i = (abs & self.mask) as usize;
            self.slots[i].push(e);
            self.set_bit(i);
        } else {
            self.push_rare(abs, e);
        }
    }

    /// `push` into the current bucket or beyond the ring.
    #[inline(never)]
    fn push_rare(&mut self, abs: u64, e: Entry<T>) {
        let t = e.t;
        if abs <= self.cur {
            // The current bucket (or an earlier one: `next` may have turned
            // past it, and every item left there is later than `t`).
            assert!(t >= self.last, "event at {t} ps before the last popped");
            let i = (self.cur & self.mask) as usize;
            let slot = &mut self.slots[i];
            let tail = &slot[self.head..];
            if tail.last().is_none_or(|x| x.t <= t) {
                slot.push(e);
            } else {
                let pos = self.head + tail.partition_point(|x| x.t <= t);
                slot.insert(pos, e);
            }
            self.set_bit(i);
        } else {
            self.far.push(Far { seq: self.seq, e });
            self.seq += 1;
        }
    }

    /// The first occupied slot after the current one (ring order), as an
    /// absolute bucket.
    fn next_occupied(&self) -> Option<u64> {
        let n = self.slots.len();
        let cur_i = (self.cur & self.mask) as usize;
        // first set bit in [from, to)
        let find = |from: usize, to: usize| -> Option<usize> {
            let mut w = from / 64;
            while w * 64 < to {
                let mut bits = self.occupied[w];
                if w == from / 64 {
                    bits &= !0u64 << (from % 64);
                }
                if bits != 0 {
                    let i = w * 64 + bits.trailing_zeros() as usize;
                    return (i < to).then_some(i);
                }
                w += 1;
            }
            None
        };
        let i = find(cur_i + 1, n).or_else(|| find(0, cur_i))?;
        Some(self.cur + ((i + n - cur_i) % n) as u64)
    }

    /// The earliest time. It may turn the ring to the bucket of that time
    /// (an item pushed later for an earlier bucket goes to the front of the
    /// current one), so the event loop may still inject between the last
    /// event and the next.
    #[inline]
    pub(super) fn next(&mut self) -> Option<Ps> {
        let i = (self.cur & self.mask) as usize;
        if let Some(e) = self.slots[i].get(self.head) {
            return Some(e.t);
        }
        self.next_slow()
    }

    #[cold]
    #[inline(never)]
    fn next_slow(&mut self) -> Option<Ps> {
        if self.len == 0 {
            return None;
        }
        self.turn();
        Some(self.slots[(self.cur & self.mask) as usize][self.head].t)
    }

    /// Move far items that now fall within the ring into their slots.
    fn pull_far(&mut self) {
        while let Some(f) = self.far.peek() {
            let abs = f.e.t >> self.shift;
            if abs > self.cur + self.mask {
                break;
            }
            let e = self.far.pop().expect("peeked").e;
            let i = (abs & self.mask) as usize;
            self.slots[i].push(e);
            self.set_bit(i);
        }
    }

    /// Retire the spent current slot and make the next occupied one current.
    fn turn(&mut self) {
        let i = (self.cur & self.mask) as usize;
        self.slots[i].clear();
        self.occupied[i >> 6] &= !(1 << (i & 63));
        self.head = 0;
        self.cur = match self.next_occupied() {
            Some(b) => b,
            None => self.far.peek().expect("len > 0").e.t >> self.shift,
        };
        self.pull_far();
        let i = (self.cur & self.mask) as usize;
        let slot = &mut self.slots[i];
        if !slot.is_sorted_by_key(|e| e.t) {
            slot.sort_by_key(|e| e.t); // stable: push order among equal times
        }
    }

    /// The earliest item (the engine pops through `pop_at`).
    #[cfg(test)]
    pub(super) fn pop(&mut self) -> Option<(Ps, T)> {
        self.next()?;
        let e = self.slots[(self.cur & self.mask) as usize][self.head];
        self.head += 1;
        self.len -= 1;
        self.last = e.t;
        Some((e.t, e.item))
    }

    /// Pop the next item if it is at `t`.
    #[inline]
    pub(super) fn pop_at(&mut self, t: Ps) -> Option<T> {
        let i = (self.cur & self.mask) as usize;
        let e = match self.slots[i].get(self.head) {
            Some(e) => *e,
            None => {
                if self.next_slow() != Some(t) {
                    return None;
                }
                self.slots[(self.cur & self.mask) as usize][self.head]
            }
        };
        if e.t != t {
            return None;
        }
        self.head += 1;
        self.len -= 1;
        self.last = e.t;
        Some(e.item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::graph::mix64;

    #[test]
    fn the_event_queue_pops_in_time_queue_order() {
        // Random pushes at or after the last popped time (near, equal and
        // far beyond the ring), `next` between them: the calendar queue and
        // the engine's TimeQueue agree item by item, ties first in first out.
        use crate::engine::fabric::TimeQueue;
        for (shift, log_slots, spread) in [(0u32, 6u32, 50u64), (3, 6, 5000), (10, 8, 1 << 20)] {
            let mut a: EventQueue<u32> = EventQueue::new(shift, log_slots);
            let mut b: TimeQueue<u32> = TimeQueue::default();
            let mut rng = 1u64;
            let mut clock = 0;
            for i in 0..200_000u32 {
                rng = mix64(rng);
                match rng % 5 {
                    0 | 1 => {
                        let t = clock + (rng >> 8) % 4 * ((rng >> 20) % spread);
                        a.push(t, i);
                        b.push(t, i);
                    }
                    2 => assert_eq!(a.next(), b.next(), "step {i}"),
                    _ => {
                        assert_eq!(a.next(), b.next(), "step {i}");
                        let x = a.pop();
                        assert_eq!(x, b.pop(), "step {i}");
                        if let Some((t, _)) = x {
                            clock = t;
                        }
                    }
                }
            }
            while let Some(x) = b.pop() {
                assert_eq!(a.pop(), Some(x));
            }
            assert!(a.is_empty());
        }
    }
}
