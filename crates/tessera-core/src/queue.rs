//! The pending queue in queue order, indexed for backfilling.
//!
//! Jobs enter at the tail (drivers submit in (submit time, job id) order) and leave
//! from anywhere. Each queue position is a leaf of a min segment tree over
//! (processors, estimate), so "the first job after position p that fits in f free
//! processors and ..." costs O(log n) per job visited instead of a scan of the whole
//! queue: deep queues (hundreds of thousands of jobs) stay cheap.

use crate::job::JobIdx;
use crate::Time;

const EMPTY_PROCS: u32 = u32::MAX;
const EMPTY_EST: Time = Time::MAX;

#[derive(Debug, Clone)]
pub(crate) struct Queue {
    /// Number of leaves (a power of two).
    size: usize,
    /// Min processors per tree node (1-based heap layout; leaves at `size..2*size`).
    procs: Vec<u32>,
    /// Min estimate per tree node.
    est: Vec<Time>,
    /// Job at each physical position.
    jobs: Vec<JobIdx>,
    /// Logical position of physical leaf 0. Positions handed out are logical and
    /// never change; compaction only moves `base`.
    base: u32,
    /// First physical position that may be occupied (everything before is empty).
    head: usize,
    /// Next free physical position at the tail.
    tail: usize,
    len: usize,
}

impl Queue {
    pub fn new() -> Self {
        let size = 64;
        Queue {
            size,
            procs: vec![EMPTY_PROCS; 2 * size],
            est: vec![EMPTY_EST; 2 * size],
            jobs: Vec::with_capacity(size),
            base: 0,
            head: 0,
            tail: 0,
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn phys(&self, pos: u32) -> usize {
        (pos - self.base) as usize
    }

    /// Append a job at the tail; returns its (logical) position.
    pub fn push(&mut self, job: JobIdx, procs: u32, est: Time) -> u32 {
        debug_assert!(procs != EMPTY_PROCS);
        if self.tail == self.size {
            self.make_room();
        }
        let p = self.tail;
        self.tail += 1;
        self.jobs.push(job);
        self.len += 1;
        self.set(p, procs, est);
        self.base + p as u32
    }

    /// Remove the job at `pos`.
    pub fn remove(&mut self, pos: u32) {
        let p = self.phys(pos);
        debug_assert!(self.procs[self.size + p] != EMPTY_PROCS, "removing an empty position");
        self.len -= 1;
        self.set(p, EMPTY_PROCS, EMPTY_EST);
        if p == self.head {
            while self.head < self.tail && self.procs[self.size + self.head] == EMPTY_PROCS {
                self.head += 1;
            }
        }
    }

    /// Position and job at the head of the queue.
    pub fn head(&self) -> Option<(u32, JobIdx)> {
        (self.len > 0).then(|| (self.base + self.head as u32, self.jobs[self.head]))
    }

    pub fn job_at(&self, pos: u32) -> JobIdx {
        self.jobs[self.phys(pos)]
    }

    /// Occupied positions in queue order, starting at the head.
    pub fn iter(&self) -> impl Iterator<Item = (u32, JobIdx)> + '_ {
        (self.head..self.tail)
            .filter(move |&p| self.procs[self.size + p] != EMPTY_PROCS)
            .map(move |p| (self.base + p as u32, self.jobs[p]))
    }

    /// First occupied position >= `from` whose (procs, estimate) satisfies `leaf`.
    ///
    /// `node` is called with the minimum processors and minimum estimate of a whole
    /// subtree and must return true whenever some leaf below could satisfy `leaf`
    /// (a necessary condition); subtrees for which it is false are skipped.
    pub fn find_first(
        &self,
        from: u32,
        node: impl Fn(u32, Time) -> bool,
        leaf: impl Fn(u32, Time) -> bool,
    ) -> Option<u32> {
        let from = (from.max(self.base) - self.base) as usize;
        if from >= self.tail {
            return None;
        }
        self.find_rec(1, 0, self.size, from, &node, &leaf).map(|p| self.base + p as u32)
    }

    fn find_rec(
        &self,
        n: usize,
        lo: usize,
        hi: usize,
        from: usize,
        node: &impl Fn(u32, Time) -> bool,
        leaf: &impl Fn(u32, Time) -> bool,
    ) -> Option<usize> {
        if hi <= from || lo >= self.tail || !node(self.procs[n], self.est[n]) {
            return None;
        }
        if hi - lo == 1 {
            let (p, e) = (self.procs[n], self.est[n]);
            return (p != EMPTY_PROCS && leaf(p, e)).then_some(lo);
        }
        let mid = (lo + hi) / 2;
        self.find_rec(2 * n, lo, mid, from, node, leaf)
            .or_else(|| self.find_rec(2 * n + 1, mid, hi, from, node, leaf))
    }

    fn set(&mut self, p: usize, procs: u32, est: Time) {
        let mut n = self.size + p;
        self.procs[n] = procs;
        self.est[n] = est;
        while n > 1 {
            n /= 2;
            let (l, r) = (2 * n, 2 * n + 1);
            let mp = self.procs[l].min(self.procs[r]);
            let me = self.est[l].min(self.est[r]);
            if self.procs[n] == mp && self.est[n] == me {
                break;
            }
            self.procs[n] = mp;
            self.est[n] = me;
        }
    }

    /// The tail reached the last leaf: drop the empty prefix, and double the tree
    /// if that does not free at least half of it.
    fn make_room(&mut self) {
        let shift = self.head;
        let live = self.tail - shift;
        let size = if live * 2 <= self.size { self.size } else { self.size * 2 };
        let old_size = self.size;
        let old_procs = std::mem::take(&mut self.procs);
        let old_est = std::mem::take(&mut self.est);
        self.size = size;
        self.procs = vec![EMPTY_PROCS; 2 * size];
        self.est = vec![EMPTY_EST; 2 * size];
        self.procs[size..size + live].copy_from_slice(&old_procs[old_size + shift..old_size + self.tail]);
        self.est[size..size + live].copy_from_slice(&old_est[old_size + shift..old_size + self.tail]);
        for n in (1..size).rev() {
            self.procs[n] = self.procs[2 * n].min(self.procs[2 * n + 1]);
            self.est[n] = self.est[2 * n].min(self.est[2 * n + 1]);
        }
        self.jobs.drain(..shift);
        self.base += shift as u32;
        self.head = 0;
        self.tail = live;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_survive_growth_and_compaction() {
        let mut q = Queue::new();
        let mut live = Vec::new();
        for i in 0..1000u32 {
            let pos = q.push(JobIdx(i), 1 + i % 7, i as Time);
            live.push((pos, i));
            // remove every job but the multiples of 10 soon after it arrives
            if i >= 3 && (i - 3) % 10 != 0 {
                let (p, j) = live.remove(live.len() - 4);
                assert_eq!(q.job_at(p), JobIdx(j));
                q.remove(p);
            }
        }
        let order: Vec<u32> = q.iter().map(|(_, j)| j.0).collect();
        let expect: Vec<u32> = live.iter().map(|&(_, j)| j).collect();
        assert_eq!(order, expect);
        assert_eq!(q.len(), live.len());
        assert_eq!(q.head().map(|h| h.1), expect.first().map(|&j| JobIdx(j)));
    }

    #[test]
    fn find_first_respects_from_and_predicate() {
        let mut q = Queue::new();
        let sizes = [5, 3, 8, 1, 4, 1];
        let pos: Vec<u32> = sizes.iter().enumerate().map(|(i, &s)| q.push(JobIdx(i as u32), s, 10 * i as Time)).collect();
        let fits = |f: u32| move |p: u32, _e: Time| p <= f;
        assert_eq!(q.find_first(pos[0], fits(3), fits(3)), Some(pos[1]));
        assert_eq!(q.find_first(pos[2], fits(3), fits(3)), Some(pos[3]));
        q.remove(pos[3]);
        assert_eq!(q.find_first(pos[2], fits(3), fits(3)), Some(pos[5]));
        // estimate predicate
        assert_eq!(q.find_first(pos[0], |_, e| e >= 40, |_, e| e >= 40), None, "node min prunes");
        assert_eq!(q.find_first(pos[0], |_, _| true, |_, e| e >= 40), Some(pos[4]));
    }
}
