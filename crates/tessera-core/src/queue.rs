//! The pending queue in queue order, indexed for backfilling.
//!
//! Jobs enter at the tail (drivers submit in (submit time, job id) order) and leave
//! from anywhere. Each queue position is a leaf of a min segment tree over
//! (processors, estimate), so "the first job after position p that fits in f free
//! processors and ..." costs O(log n) per job visited instead of a scan of the whole
//! queue: deep queues (hundreds of thousands of jobs) stay cheap. A third key,
//! which the engine files a job under ([`Queue::set_key`]; 0 for none), lets a
//! pass skip whole runs of jobs it already knows cannot be placed
//! ([`Queue::find_first_keyed`]).

use crate::job::JobIdx;
use crate::Time;
use serde::{Deserialize, Serialize};

const EMPTY_NEED: u64 = u64::MAX;
const EMPTY_EST: Time = Time::MAX;

/// Per tree node: the smallest need, the shortest estimate and the smallest
/// key below it. The key is not saved: a queue read back files every job
/// under 0 until the engine files it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Mins {
    need: u64,
    est: Time,
    #[serde(skip)]
    key: u64,
}

const EMPTY: Mins = Mins { need: EMPTY_NEED, est: EMPTY_EST, key: u64::MAX };

/// What an empty position of a spread queue holds.
const NO_JOB: JobIdx = JobIdx(u32::MAX);

/// The most jobs an insertion moves up one before it spreads the jobs
/// around out instead ([`Queue::spread_around`]).
const SHIFT_MAX: usize = if cfg!(test) { 3 } else { 32 };

/// Below this many positions, [`Queue::runs`] looks at every pair of
/// neighbours in a row rather than only where the queue changed.
const SHORT: usize = if cfg!(test) { 16 } else { 256 };

impl Mins {
    #[inline]
    fn min(self, o: Mins) -> Mins {
        Mins { need: self.need.min(o.need), est: self.est.min(o.est), key: self.key.min(o.key) }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(from = "QueueState")]
pub(crate) struct Queue {
    /// Number of leaves (a power of two).
    size: usize,
    /// 1-based heap layout; leaves at `size..2*size`.
    tree: Vec<Mins>,
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
    /// Bumped by every change other than an arrival at the tail (hold, release,
    /// removal), so that a pass can tell "only arrivals since".
    #[serde(skip)]
    edits: u64,
    /// Where the queue may break into runs ([`Queue::runs`]); not kept in a
    /// saved state (read back, every position is marked).
    #[serde(skip)]
    marks: Marks,
    /// By job: its position while queued ([`NOT_QUEUED`] otherwise), kept
    /// here as jobs move so that moves touch nothing else; worked out again
    /// when read back.
    #[serde(skip)]
    at: Vec<u32>,
    /// By job: the key it is filed under ([`Queue::set_key`]; 0 if never set).
    #[serde(skip)]
    keys: Vec<u64>,
}

/// What a queue's saved state holds (the rest is worked out from it).
#[derive(Deserialize)]
struct QueueState {
    size: usize,
    tree: Vec<Mins>,
    jobs: Vec<JobIdx>,
    base: u32,
    head: usize,
    tail: usize,
    len: usize,
}

impl From<QueueState> for Queue {
    fn from(s: QueueState) -> Queue {
        let mut q = Queue { size: s.size, tree: s.tree, jobs: s.jobs, base: s.base, head: s.head, tail: s.tail, len: s.len, edits: 0, marks: Marks::default(), at: Vec::new(), keys: Vec::new() };
        // keys are not saved: empty leaves are empty again, the others filed
        // under 0 until the node engine's first pass files them again
        for m in &mut q.tree[q.size..] {
            if m.need == EMPTY_NEED {
                *m = EMPTY;
            }
        }
        for n in (1..q.size).rev() {
            q.tree[n] = q.tree[2 * n].min(q.tree[2 * n + 1]);
        }
        let queued: Vec<(u32, JobIdx)> = q.iter().collect();
        for (pos, j) in queued {
            q.place(j, pos);
        }
        q
    }
}

/// [`Queue::pos_of`] a job not in the queue.
pub(crate) const NOT_QUEUED: u32 = u32::MAX;

/// One bit per physical position, and one per word of them (set when the
/// word has a bit set), so the next marked position is found in few steps.
/// Empty until first needed: a queue read back marks every position then.
#[derive(Debug, Clone, Default)]
struct Marks {
    words: Vec<u64>,
    any: Vec<u64>,
}

impl Marks {
    fn sized(size: usize) -> Marks {
        let mut m = Marks::default();
        m.reset(size);
        m
    }

    /// No position marked, `size` positions (the room kept).
    fn reset(&mut self, size: usize) {
        let words = size.div_ceil(64);
        self.words.clear();
        self.words.resize(words, 0);
        self.any.clear();
        self.any.resize(words.div_ceil(64), 0);
    }

    fn set(&mut self, p: usize) {
        if let Some(w) = self.words.get_mut(p / 64) {
            *w |= 1 << (p % 64);
            self.any[p / 4096] |= 1 << (p / 64 % 64);
        }
    }

    fn clear(&mut self, p: usize) {
        if let Some(w) = self.words.get_mut(p / 64) {
            *w &= !(1 << (p % 64));
            if *w == 0 {
                self.any[p / 4096] &= !(1 << (p / 64 % 64));
            }
        }
    }

    fn get(&self, p: usize) -> bool {
        self.words.get(p / 64).is_some_and(|w| w >> (p % 64) & 1 == 1)
    }

    /// The first marked position at or after `from`.
    fn next(&self, from: usize) -> Option<usize> {
        let w = from / 64;
        let bits = *self.words.get(w)? & (!0u64 << (from % 64));
        if bits != 0 {
            return Some(w * 64 + bits.trailing_zeros() as usize);
        }
        let from = w + 1;
        let mut a = from / 64;
        let mut any = *self.any.get(a)? & (!0u64 << (from % 64));
        loop {
            if any != 0 {
                let w = a * 64 + any.trailing_zeros() as usize;
                return Some(w * 64 + self.words[w].trailing_zeros() as usize);
            }
            a += 1;
            any = *self.any.get(a)?;
        }
    }
}

impl Queue {
    /// The need a held job is filed under: larger than any machine, so no search
    /// finds it, while it keeps its place in the queue.
    pub const HELD: u64 = u64::MAX - 1;

    pub fn new() -> Self {
        let size = 64;
        Queue { size, tree: vec![EMPTY; 2 * size], jobs: Vec::with_capacity(size), base: 0, head: 0, tail: 0, len: 0, edits: 0, marks: Marks::sized(size), at: Vec::new(), keys: Vec::new() }
    }

    /// The key `job` is filed under.
    #[inline]
    pub(crate) fn key_of(&self, job: JobIdx) -> u64 {
        self.keys.get(job.index()).copied().unwrap_or(0)
    }

    /// File `job` under `key` from now on (where it is queued, at once):
    /// what [`Queue::find_first_keyed`] tests beside its need and estimate.
    /// Not an edit: it changes no job's place or need.
    pub fn set_key(&mut self, job: JobIdx, key: u64) {
        let i = job.index();
        if self.keys.len() <= i {
            if key == 0 {
                return;
            }
            self.keys.resize(i + 1, 0);
        }
        self.keys[i] = key;
        let pos = self.pos_of(job);
        if pos != NOT_QUEUED {
            let p = self.phys(pos);
            let m = self.tree[self.size + p];
            self.put(p, Mins { key, ..m });
        }
    }

    /// A queued job's position ([`NOT_QUEUED`] if it is not queued).
    #[inline]
    pub fn pos_of(&self, job: JobIdx) -> u32 {
        self.at.get(job.index()).copied().unwrap_or(NOT_QUEUED)
    }

    #[inline]
    fn place(&mut self, job: JobIdx, pos: u32) {
        let i = job.index();
        if self.at.len() <= i {
            self.at.resize(i + 1, NOT_QUEUED);
        }
        self.at[i] = pos;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn phys(&self, pos: u32) -> usize {
        (pos - self.base) as usize
    }

    /// Append a job at the tail; returns its (logical) position. `need` is what
    /// it needs of the machine (cores), or [`Queue::HELD`].
    pub fn push(&mut self, job: JobIdx, need: u64, est: Time) -> u32 {
        debug_assert!(need != EMPTY_NEED);
        if self.tail == self.size {
            self.make_room();
        }
        let p = self.tail;
        self.tail += 1;
        self.jobs.push(job);
        self.len += 1;
        self.lower(p, Mins { need, est, key: self.key_of(job) });
        self.marks.set(p);
        self.place(job, self.base + p as u32);
        self.base + p as u32
    }

    /// Change what the job at `pos` is filed under (hold and release).
    pub fn set(&mut self, pos: u32, need: u64, est: Time) {
        let p = self.phys(pos);
        debug_assert!(self.tree[self.size + p] != EMPTY, "updating an empty position");
        self.edits += 1;
        let key = self.tree[self.size + p].key;
        self.put(p, Mins { need, est, key });
    }

    /// Remove the job at `pos`.
    pub fn remove(&mut self, pos: u32) {
        let p = self.phys(pos);
        debug_assert!(self.tree[self.size + p] != EMPTY, "removing an empty position");
        self.edits += 1;
        self.len -= 1;
        self.put(p, EMPTY);
        let j = self.jobs[p];
        self.place(j, NOT_QUEUED);
        if p == self.head {
            while self.head < self.tail && self.tree[self.size + self.head] == EMPTY {
                self.head += 1;
            }
        }
    }

    /// Put the queued jobs in a new order: `order` lists every occupied
    /// position once, in the order wanted. Each job keeps what it is filed
    /// under. Counts as an edit.
    /// With `spread`, a free position is left after each job, so that jobs
    /// inserted in order later ([`Queue::insert_sorted`]) find room.
    pub fn permute(&mut self, order: &[u32], spread: bool) {
        debug_assert_eq!(order.len(), self.len);
        let items: Vec<(JobIdx, Mins)> = order.iter().map(|&pos| { let p = self.phys(pos); (self.jobs[p], self.tree[self.size + p]) }).collect();
        let step = if spread { 2 } else { 1 };
        let tail = (items.len() * step).saturating_sub(step - 1);
        let mut size = 64;
        while size < tail * 2 {
            size *= 2;
        }
        let base = self.base + self.tail as u32;
        self.size = size;
        self.tree.clear();
        self.tree.resize(2 * size, EMPTY);
        self.jobs.clear();
        self.jobs.resize(tail, NO_JOB);
        self.marks.reset(size);
        for (i, &(j, m)) in items.iter().enumerate() {
            self.tree[size + i * step] = m;
            self.jobs[i * step] = j;
            self.marks.set(i * step);
            self.place(j, base + (i * step) as u32);
        }
        for n in (1..size).rev() {
            self.tree[n] = self.tree[2 * n].min(self.tree[2 * n + 1]);
        }
        // new positions follow every old one, so none handed out is reused
        self.base = base;
        self.head = 0;
        self.tail = tail;
        self.edits += 1;
    }

    /// The first occupied physical position at or after `from`.
    fn first_occupied(&self, from: usize) -> Option<usize> {
        self.first_leaf(from, |m| m.need != EMPTY_NEED)
    }

    /// The first physical position at or after `from` whose leaf satisfies
    /// `ok`, a test that holds for a subtree's minimums whenever it holds for
    /// a leaf below (subtrees that fail it are skipped whole; the walk goes
    /// right from `from`, so a nearby answer costs O(log distance)).
    fn first_leaf(&self, from: usize, ok: impl Fn(Mins) -> bool) -> Option<usize> {
        if from >= self.tail {
            return None;
        }
        let mut i = self.size + from;
        loop {
            if ok(self.tree[i]) {
                if i >= self.size {
                    return Some(i - self.size);
                }
                i *= 2;
                continue;
            }
            // next subtree to the right: climb while a right child (past the
            // root: none), then step over
            i >>= i.trailing_ones();
            if i == 0 {
                return None;
            }
            i += 1;
        }
    }

    /// Insert a job in order: after every queued job `before` holds for (it
    /// must hold for a prefix of the queue) and before the others. It takes a
    /// free position between its neighbours, or the jobs after it move up one
    /// to the next free position. Returns its
    /// position. Counts as an edit (unless it lands at the tail).
    #[cfg(test)]
    pub fn insert_sorted(&mut self, job: JobIdx, need: u64, est: Time, before: impl FnMut(JobIdx) -> bool) -> u32 {
        self.insert_near(job, need, est, None, before)
    }

    /// [`Queue::insert_sorted`], its place looked for first around queued
    /// job `hint` (if queued), in steps that double, so that a place near it
    /// costs the logarithm of the distance rather than of the queue (the
    /// place is the same wherever the hint).
    pub fn insert_near(&mut self, job: JobIdx, need: u64, est: Time, hint: Option<JobIdx>, mut before: impl FnMut(JobIdx) -> bool) -> u32 {
        // the first occupied position whose job does not come before the new
        // one: at or after `lo`, and at `hi` if not after it
        let (mut lo, mut hi) = match hint.map(|h| self.pos_of(h)).filter(|&p| p != NOT_QUEUED) {
            Some(p) => self.bracket(self.phys(p), &mut before),
            None => (self.head, self.tail),
        };
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.first_occupied(mid).filter(|&q| q < hi) {
                None => hi = mid,
                Some(q) if before(self.jobs[q]) => lo = q + 1,
                Some(q) => hi = q,
            }
        }
        let next = match self.first_occupied(lo) {
            None => return self.push(job, need, est),
            Some(q) => q,
        };
        self.edits += 1;
        // free positions just before `next` (back to the previous job)
        let prev = self.last_occupied_before(next).map_or(self.head, |q| (q + 1).max(self.head));
        let p = if prev < next {
            prev + (next - prev) / 2
        } else {
            // move the jobs from `next` up to the next free position, if near;
            // otherwise spread the jobs around out first
            let mut e = next;
            while e < self.tail && self.tree[self.size + e] != EMPTY {
                e += 1;
                if e - next > SHIFT_MAX {
                    self.spread_around(next);
                    return self.insert_near(job, need, est, hint, before);
                }
            }
            if e == self.tail {
                if self.tail == self.size {
                    self.make_room();
                    return self.insert_near(job, need, est, hint, before);
                }
                self.tail += 1;
                self.jobs.push(NO_JOB);
            } else if self.marks.get(e) {
                // the mark a removal left at `e` is for the job after it
                if let Some(f) = self.first_occupied(e + 1) {
                    self.marks.set(f);
                }
            }
            for q in (next..e).rev() {
                let (j, m) = (self.jobs[q], self.tree[self.size + q]);
                self.jobs[q + 1] = j;
                self.put(q + 1, m);
                if self.marks.get(q) {
                    self.marks.set(q + 1);
                } else {
                    self.marks.clear(q + 1);
                }
                self.place(j, self.base + q as u32 + 1);
            }
            // the job that was at `next` follows the new one
            self.marks.set(next + 1);
            next
        };
        // the new job, and the one after it, have new neighbours
        self.marks.set(p);
        if p < next {
            self.marks.set(next);
        }
        self.jobs[p] = job;
        self.len += 1;
        self.put(p, Mins { need, est, key: self.key_of(job) });
        self.head = self.head.min(p);
        self.place(job, self.base + p as u32);
        self.base + p as u32
    }

    /// Around occupied physical position `p`: `(lo, hi)` such that every job
    /// before `lo` comes before the new one, and `hi` is the tail or holds a
    /// job that does not (found in steps that double away from `p`).
    fn bracket(&self, p: usize, before: &mut impl FnMut(JobIdx) -> bool) -> (usize, usize) {
        let mut step = 1;
        if before(self.jobs[p]) {
            let mut lo = p + 1;
            loop {
                match self.first_occupied(lo + step - 1).filter(|&q| q < self.tail) {
                    None => return (lo, self.tail),
                    Some(q) if before(self.jobs[q]) => lo = q + 1,
                    Some(q) => return (lo, q),
                }
                step *= 2;
            }
        }
        let mut hi = p;
        loop {
            match self.last_occupied_before((hi + 1).saturating_sub(step)).filter(|&q| q >= self.head) {
                None => return (self.head, hi),
                Some(q) if before(self.jobs[q]) => return (q + 1, hi),
                Some(q) => hi = q,
            }
            step *= 2;
        }
    }

    /// Lay the jobs around physical position `at` out again, evenly, over the
    /// smallest aligned stretch of positions around it that is not too full
    /// (the whole queue's room if none is, grown first if need be), so that
    /// free positions follow the jobs: insertions in one place then move few
    /// jobs each (a packed-memory array). A stretch of 64 positions may be
    /// three quarters full, the whole room half full, and the stretches in
    /// between in proportion to their size's logarithm (so a queue laid out
    /// half full spreads locally). Order, what each job is filed under, and
    /// the runs' marks are kept.
    fn spread_around(&mut self, at: usize) {
        let occupied = |q: &Queue, lo: usize, hi: usize| (lo..hi.min(q.tail)).filter(|&p| q.tree[q.size + p] != EMPTY).count();
        let levels = (self.size / 64).max(1).ilog2().max(1) as usize;
        // the aligned stretch of `w` positions around `at`
        let stretch = |q: &Queue, w: usize| (at / w * w, (at / w * w + w).min(q.size));
        let (mut w, mut level) = (64, 0);
        let (mut lo, mut hi) = stretch(self, w);
        let mut n = occupied(self, lo, hi);
        let (lo, hi, n) = loop {
            // at most w × (3/4 − level / levels / 4) jobs
            if 4 * n * levels <= (hi - lo) * (3 * levels - level) {
                break (lo, hi, n);
            }
            if w >= self.size {
                // too full: grown (and its empty prefix dropped)
                let shift = self.head;
                self.make_room();
                return self.spread_around(at - shift);
            }
            // twice as wide: only the half added is counted
            w *= 2;
            level += 1;
            let (lo2, hi2) = stretch(self, w);
            n += if lo2 < lo { occupied(self, lo2, lo) } else { occupied(self, hi, hi2) };
            (lo, hi) = (lo2, hi2);
        };
        // the jobs in order, each marked if it or a free position just
        // before it was (a removal's mark is for the job after it)
        let mut items: Vec<(JobIdx, Mins, bool)> = Vec::with_capacity(n);
        let mut pending = false;
        for p in lo..hi.min(self.tail) {
            pending |= self.marks.get(p);
            self.marks.clear(p);
            let m = self.tree[self.size + p];
            if m != EMPTY {
                items.push((self.jobs[p], m, pending));
                pending = false;
            }
        }
        if pending {
            if let Some(f) = self.first_occupied(hi) {
                self.marks.set(f);
            }
        }
        let end = lo + ((n.max(1) - 1) * (hi - lo)) / n.max(1) + 1;
        if self.jobs.len() < end {
            self.jobs.resize(end, NO_JOB);
            self.tail = end;
        }
        for p in lo..hi.min(self.tail) {
            self.tree[self.size + p] = EMPTY;
            self.jobs[p] = NO_JOB;
        }
        for (i, &(j, m, mark)) in items.iter().enumerate() {
            let p = lo + i * (hi - lo) / n;
            self.tree[self.size + p] = m;
            self.jobs[p] = j;
            if mark {
                self.marks.set(p);
            }
            self.place(j, self.base + p as u32);
        }
        // the minimums above the stretch, level by level
        let (mut a, mut b) = ((self.size + lo) / 2, (self.size + hi - 1) / 2);
        while a >= 1 {
            for n in a..=b {
                self.tree[n] = self.tree[2 * n].min(self.tree[2 * n + 1]);
            }
            (a, b) = (a / 2, b / 2);
        }
        self.head = self.head.min(lo);
        self.edits += 1;
    }

    /// The last occupied physical position before `to`.
    fn last_occupied_before(&self, to: usize) -> Option<usize> {
        self.last_leaf_before(to, |m| m.need != EMPTY_NEED)
    }

    /// The last physical position before `to` whose leaf satisfies `ok` (as
    /// [`Queue::first_leaf`], walking left).
    fn last_leaf_before(&self, to: usize, ok: impl Fn(Mins) -> bool) -> Option<usize> {
        if to == 0 {
            return None;
        }
        let mut i = self.size + to - 1;
        loop {
            if ok(self.tree[i]) {
                if i >= self.size {
                    return Some(i - self.size);
                }
                i = 2 * i + 1;
                continue;
            }
            // next subtree to the left: climb while a left child, then step over
            while i & 1 == 0 {
                i >>= 1;
            }
            if i == 1 {
                return None;
            }
            i -= 1;
        }
    }

    /// A queue read back has no marks: every position is marked.
    fn ensure_marks(&mut self) {
        if self.marks.words.len() != self.size.div_ceil(64) {
            self.marks = Marks::sized(self.size);
            for p in self.head..self.tail {
                self.marks.set(p);
            }
        }
    }

    /// The queue as runs: the longest stretches of jobs each of which
    /// `stays` after the one before it, into `runs` as (first, last)
    /// positions in queue order. `stays` must be transitive, and hold or not
    /// of two jobs whatever else changes (changing what it says of queued
    /// jobs needs [`Queue::mark_all`]). Only where the queue changed since
    /// the last call is it asked again: a position stays marked while its
    /// job starts a run, and arrivals and insertions mark the jobs they give
    /// new neighbours. A removal needs no mark: inside a run, the jobs on
    /// either side stay in one (transitivity); a removed job that started a
    /// run leaves its mark, now for the job after it.
    pub fn runs(&mut self, stays: impl Fn(JobIdx, JobIdx) -> bool, runs: &mut Vec<(u32, u32)>) {
        self.ensure_marks();
        runs.clear();
        let Some(first) = self.first_occupied(self.head) else { return };
        if self.tail - first <= SHORT {
            // a short queue: every pair of neighbours looked at, in a row
            let (mut start, mut prev) = (first, first);
            for q in first + 1..self.tail {
                if self.tree[self.size + q] == EMPTY {
                    self.marks.clear(q);
                } else if stays(self.jobs[prev], self.jobs[q]) {
                    self.marks.clear(q);
                    prev = q;
                } else {
                    self.marks.set(q);
                    runs.push((self.base + start as u32, self.base + prev as u32));
                    (start, prev) = (q, q);
                }
            }
            runs.push((self.base + start as u32, self.base + prev as u32));
            return;
        }
        let mut start = first;
        let mut from = first + 1;
        while let Some(m) = self.marks.next(from).filter(|&m| m < self.tail) {
            let Some(q) = self.first_occupied(m) else {
                self.marks.clear(m);
                from = m + 1;
                continue;
            };
            if m < q {
                self.marks.clear(m);
            }
            // `first` at least: q comes after it
            let prev = self.last_occupied_before(q).expect("a job before");
            if stays(self.jobs[prev], self.jobs[q]) {
                self.marks.clear(q);
            } else {
                self.marks.set(q);
                runs.push((self.base + start as u32, self.base + prev as u32));
                start = q;
            }
            from = q + 1;
        }
        // `first` at least
        let last = self.last_occupied_before(self.tail).expect("a job");
        runs.push((self.base + start as u32, self.base + last as u32));
    }

    /// Every queued job may start a run ([`Queue::runs`]).
    pub fn mark_all(&mut self) {
        self.marks = Marks::default();
        self.ensure_marks();
    }

    /// The first queued (occupied) position after `pos`.
    pub fn next_after(&self, pos: u32) -> Option<u32> {
        self.first_occupied(self.phys(pos) + 1).map(|p| self.base + p as u32)
    }

    /// The last queued (occupied) position before `pos`.
    pub fn prev_before(&self, pos: u32) -> Option<u32> {
        self.last_occupied_before(self.phys(pos)).map(|p| self.base + p as u32)
    }

    /// Changes other than arrivals so far.
    pub fn edits(&self) -> u64 {
        self.edits
    }

    /// The position the next arrival will get.
    pub fn end(&self) -> u32 {
        self.base + self.tail as u32
    }

    /// The smallest need of any pending job (at least [`Queue::HELD`] when none).
    pub fn min_need(&self) -> u64 {
        self.tree[1].need
    }

    /// Position and job at the head of the queue: the first pending (not held) job.
    pub fn head(&self) -> Option<(u32, JobIdx)> {
        if self.len == 0 {
            return None;
        }
        let first = self.base + self.head as u32;
        let p = self.find_first(first, |_, _| true)?;
        Some((p, self.job_at(p)))
    }

    pub fn job_at(&self, pos: u32) -> JobIdx {
        self.jobs[self.phys(pos)]
    }

    /// What the job at occupied position `pos` is filed under: its need (or
    /// [`Queue::HELD`]) and estimate, read from the queue instead of the job
    /// table (a pass looking through many jobs reads no job's entry).
    #[inline]
    pub fn filed_at(&self, pos: u32) -> (u64, Time) {
        let m = self.tree[self.size + self.phys(pos)];
        (m.need, m.est)
    }

    /// The job at position `pos` and what it is filed under, if the position
    /// is occupied.
    #[inline]
    pub fn entry_at(&self, pos: u32) -> Option<(JobIdx, u64, Time)> {
        let (p, m) = self.leaf(pos)?;
        (m != EMPTY).then(|| (self.jobs[p], m.need, m.est))
    }

    /// The physical index and leaf of position `pos`, if it lies in the
    /// queue's span (occupied or not).
    #[inline]
    fn leaf(&self, pos: u32) -> Option<(usize, Mins)> {
        let p = pos.checked_sub(self.base).map(|p| p as usize).filter(|&p| p < self.tail)?;
        Some((p, self.tree[self.size + p]))
    }

    /// Occupied positions in queue order, starting at the head.
    pub fn iter(&self) -> impl Iterator<Item = (u32, JobIdx)> + '_ {
        (self.head..self.tail)
            .filter(move |&p| self.tree[self.size + p] != EMPTY)
            .map(move |p| (self.base + p as u32, self.jobs[p]))
    }

    /// First pending (occupied, not held) position >= `from` whose (need,
    /// estimate) satisfies `ok`.
    ///
    /// `ok` must be monotone: if it holds for some job, it holds for any pair of
    /// values no larger than that job's. It is then also a valid test on the
    /// minimum processors and minimum estimate of a subtree, and subtrees that fail
    /// it are skipped whole. The walk goes right from `from`, so a nearby answer
    /// costs O(log distance).
    pub fn find_first(&self, from: u32, ok: impl Fn(u64, Time) -> bool) -> Option<u32> {
        self.find_first_keyed(from, |n, e, _| ok(n, e))
    }

    /// [`Queue::find_first`] with the key too: `ok` takes (need, estimate,
    /// key) and must be monotone in all three.
    pub fn find_first_keyed(&self, from: u32, ok: impl Fn(u64, Time, u64) -> bool) -> Option<u32> {
        let from = (from.max(self.base) - self.base) as usize;
        self.first_leaf(from, |m| m.need < Self::HELD && ok(m.need, m.est, m.key)).map(|p| self.base + p as u32)
    }

    /// Whether [`Queue::find_first`] from `pos` would answer `pos` itself: an
    /// occupied position whose pending job passes `ok` (no tree walk).
    #[inline]
    pub fn passes_at(&self, pos: u32, ok: impl Fn(u64, Time) -> bool) -> bool {
        self.leaf(pos).is_some_and(|(_, m)| m.need < Self::HELD && ok(m.need, m.est))
    }

    fn put(&mut self, p: usize, v: Mins) {
        let mut n = self.size + p;
        self.tree[n] = v;
        while n > 1 {
            n /= 2;
            let m = self.tree[2 * n].min(self.tree[2 * n + 1]);
            if self.tree[n] == m {
                break;
            }
            self.tree[n] = m;
        }
    }

    /// [`Queue::put`] into an empty leaf (or any `v` no larger in any field
    /// than what the leaf held): each ancestor's minimum only takes `v` in,
    /// without reading its other child.
    fn lower(&mut self, p: usize, v: Mins) {
        let mut n = self.size + p;
        debug_assert!(self.tree[n].min(v) == v, "lowering a leaf raises it");
        self.tree[n] = v;
        while n > 1 {
            n /= 2;
            let m = self.tree[n].min(v);
            if self.tree[n] == m {
                break;
            }
            self.tree[n] = m;
        }
    }

    /// The tail reached the last leaf: drop the empty prefix, into a tree of
    /// at least twice the positions left (so that half of it is room), and
    /// no more than that: a queue that emptied again walks a shallow tree
    /// (every arrival and start updates a path from leaf to root).
    fn make_room(&mut self) {
        self.ensure_marks();
        let shift = self.head;
        let live = self.tail - shift;
        let size = (live * 2).next_power_of_two().max(64);
        let old_size = self.size;
        let old = std::mem::take(&mut self.tree);
        self.size = size;
        self.tree = vec![EMPTY; 2 * size];
        self.tree[size..size + live].copy_from_slice(&old[old_size + shift..old_size + self.tail]);
        for n in (1..size).rev() {
            self.tree[n] = self.tree[2 * n].min(self.tree[2 * n + 1]);
        }
        let mut marks = Marks::sized(size);
        let mut m = self.marks.next(shift);
        while let Some(p) = m.filter(|&p| p < self.tail) {
            marks.set(p - shift);
            m = self.marks.next(p + 1);
        }
        self.marks = marks;
        self.jobs.drain(..shift);
        self.base += shift as u32;
        self.head = 0;
        self.tail = live;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Each queued job is where the queue says it is, and no other job is
    /// said to be queued.
    fn positions_agree(q: &Queue) -> Result<(), String> {
        for (p, j) in q.iter() {
            if q.pos_of(j) != p {
                return Err(format!("job {} at {p}, said to be at {}", j.0, q.pos_of(j)));
            }
        }
        let said = q.at.iter().filter(|&&p| p != NOT_QUEUED).count();
        if said != q.len() {
            return Err(format!("{said} jobs said to be queued, {} are", q.len()));
        }
        Ok(())
    }

    #[test]
    fn positions_survive_growth_and_compaction() {
        let mut q = Queue::new();
        let mut live = Vec::new();
        for i in 0..1000u32 {
            let pos = q.push(JobIdx(i), 1 + i as u64 % 7, i as Time);
            live.push((pos, i));
            assert_eq!(q.find_first(0, |_, _| true).map(|p| q.job_at(p)), q.head().map(|h| h.1));
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
        positions_agree(&q).unwrap();
        // read back, it knows where each job is
        let back: Queue = serde_json::from_str(&serde_json::to_string(&q).unwrap()).unwrap();
        assert_eq!(back.iter().collect::<Vec<_>>(), q.iter().collect::<Vec<_>>());
        positions_agree(&back).unwrap();
        assert_eq!(q.len(), live.len());
        assert_eq!(q.head().map(|h| h.1), expect.first().map(|&j| JobIdx(j)));
    }

    #[test]
    fn a_permutation_keeps_what_jobs_are_filed_under() {
        let mut q = Queue::new();
        let pos: Vec<u32> = (0..100u32).map(|i| q.push(JobIdx(i), 1 + i as u64 % 5, i as Time)).collect();
        for p in pos.iter().step_by(3) {
            q.remove(*p);
        }
        q.set(pos[1], Queue::HELD, 1);
        let mut order: Vec<u32> = q.iter().map(|(p, _)| p).collect();
        order.reverse();
        q.permute(&order, false);
        let jobs: Vec<u32> = q.iter().map(|(_, j)| j.0).collect();
        let want: Vec<u32> = order.iter().map(|&p| p - pos[0]).collect();
        assert_eq!(jobs, want);
        assert!(q.iter().all(|(p, _)| p > pos[99]), "positions are never reused");
        positions_agree(&q).unwrap();
        // the last (held) job is skipped; the head is the highest unheld
        assert_eq!(q.head().map(|h| h.1), Some(JobIdx(98)));
        let small = q.find_first(0, |n, _| n <= 1).map(|p| q.job_at(p).0);
        assert_eq!(small, Some(95), "job 95 files one core and comes first in the new order");
        q.push(JobIdx(500), 1, 0);
        assert_eq!(q.iter().last().map(|(_, j)| j.0), Some(500));
    }

    #[test]
    fn jobs_inserted_in_order_keep_the_order_with_room_or_without() {
        for spread in [false, true] {
            let mut q = Queue::new();
            let mut key: Vec<u64> = Vec::new();
            let mut needs: Vec<u64> = Vec::new();
            let mut queued: std::collections::BTreeSet<u32> = Default::default();
            // keys 0, 10, 20, ... then everything in between, in a scrambled order
            for i in 0..50u32 {
                key.push(10 * i as u64);
                needs.push(1 + i as u64 % 3);
                q.push(JobIdx(i), 1 + i as u64 % 3, 0);
                queued.insert(i);
            }
            let order: Vec<u32> = q.iter().map(|(p, _)| p).collect();
            q.permute(&order, spread);
            for k in 0..400u32 {
                let i = key.len() as u32;
                let kv = (k as u64 * 37) % 500;
                key.push(kv);
                needs.push(1 + kv % 4);
                let keys = key.clone();
                let p = q.insert_sorted(JobIdx(i), 1 + kv % 4, kv as Time, |j| keys[j.index()] <= kv);
                assert_eq!(q.pos_of(JobIdx(i)), p);
                queued.insert(i);
                if k % 7 == 0 {
                    // jobs leave from anywhere
                    let j = *queued.iter().nth(k as usize % queued.len()).unwrap();
                    q.remove(q.pos_of(JobIdx(j)));
                    queued.remove(&j);
                }
            }
            let got: Vec<u64> = q.iter().map(|(_, j)| key[j.index()]).collect();
            let mut want = got.clone();
            want.sort_unstable();
            assert_eq!(got, want, "spread {spread}");
            assert_eq!(q.iter().map(|(_, j)| j.0).collect::<std::collections::BTreeSet<u32>>(), queued);
            positions_agree(&q).unwrap();
            let small = q.find_first(0, |n, _| n <= 1).map(|p| key[q.job_at(p).index()]);
            assert_eq!(small, q.iter().map(|(_, j)| j).find(|j| needs[j.index()] <= 1).map(|j| key[j.index()]));
        }
    }

    proptest::proptest! {
        /// An insertion looked for around any hint (a queued job near its
        /// place or far from it, one that left, none) puts the job where a
        /// search of the whole queue does, in a queue with gaps and without.
        #[test]
        fn a_hint_changes_no_place(
            ops in proptest::collection::vec((0u64..300, 0u32..500, proptest::bool::ANY), 1..300),
            spread in proptest::bool::ANY,
        ) {
            let mut q = Queue::new();
            let mut key: Vec<(u64, u32)> = Vec::new();
            let mut queued: Vec<u32> = Vec::new();
            for (n, &(kv, hint, leave)) in ops.iter().enumerate() {
                let i = key.len() as u32;
                key.push((kv, i));
                let k = key[i as usize];
                let keys = key.clone();
                let mut plain = q.clone();
                let hint = (hint < i).then_some(JobIdx(hint));
                q.insert_near(JobIdx(i), 1 + kv % 4, 0, hint, |j| keys[j.index()] < k);
                plain.insert_near(JobIdx(i), 1 + kv % 4, 0, None, |j| keys[j.index()] < k);
                let order = |q: &Queue| q.iter().map(|(_, j)| j.0).collect::<Vec<u32>>();
                proptest::prop_assert_eq!(order(&q), order(&plain));
                queued.push(i);
                if leave && !queued.is_empty() {
                    let j = queued.swap_remove((kv as usize * 7 + n) % queued.len());
                    q.remove(q.pos_of(JobIdx(j)));
                }
                if n == ops.len() / 2 {
                    let order: Vec<u32> = q.iter().map(|(p, _)| p).collect();
                    q.permute(&order, spread);
                }
            }
            let got: Vec<(u64, u32)> = q.iter().map(|(_, j)| key[j.index()]).collect();
            let mut want = got.clone();
            want.sort_unstable();
            proptest::prop_assert_eq!(got, want);
            positions_agree(&q).map_err(proptest::test_runner::TestCaseError::fail)?;
        }
    }

    proptest::proptest! {
        /// The runs found after any arrivals, removals, insertions in order,
        /// permutations and growth are the longest runs a look at every pair
        /// of neighbours finds (the relation: same class, in arrival order).
        #[test]
        fn runs_are_those_of_every_pair_after_any_changes(
            ops in proptest::collection::vec((0u8..7, 0u32..3, 0usize..1000), 1..400),
        ) {
            let mut q = Queue::new();
            let mut class: Vec<u32> = Vec::new();
            let mut runs = Vec::new();
            let stays = |c: &[u32], a: JobIdx, b: JobIdx| c[a.index()] == c[b.index()] && a.0 < b.0;
            let need = |j: JobIdx| 1 + j.0 as u64 % 5;
            for (op, c, k) in ops {
                let n = q.len();
                match op {
                    0 | 1 => {
                        class.push(c);
                        let j = JobIdx(class.len() as u32 - 1);
                        q.push(j, need(j), 0);
                    }
                    2 if n > 0 => {
                        let (p, _) = q.iter().nth(k % n).unwrap();
                        q.remove(p);
                    }
                    3 | 4 => {
                        // anywhere, or again and again near the front
                        class.push(c);
                        let j = JobIdx(class.len() as u32 - 1);
                        let at = if op == 3 { k % (n + 1) } else { (k % 3).min(n) };
                        let rank: BTreeMap<JobIdx, usize> = q.iter().enumerate().map(|(i, (_, j))| (j, i)).collect();
                        q.insert_sorted(j, need(j), 0, |o| rank[&o] < at);
                    }
                    5 if n > 0 => {
                        let mut order: Vec<u32> = q.iter().map(|(p, _)| p).collect();
                        order.rotate_left(k % n);
                        q.permute(&order, c > 0);
                    }
                    _ => {
                        q.runs(|a, b| stays(&class, a, b), &mut runs);
                        let all: Vec<(u32, JobIdx)> = q.iter().collect();
                        let mut want = Vec::new();
                        for (i, &(p, j)) in all.iter().enumerate() {
                            if i == 0 || !stays(&class, all[i - 1].1, j) {
                                want.push((p, p));
                            }
                            want.last_mut().unwrap().1 = p;
                        }
                        proptest::prop_assert_eq!(&runs, &want);
                        // every job where the queue says it is, and found by its need
                        proptest::prop_assert_eq!(positions_agree(&q), Ok(()));
                        let small = q.find_first(0, |n, _| n <= 2).map(|p| q.job_at(p));
                        proptest::prop_assert_eq!(small, all.iter().map(|&(_, j)| j).find(|&j| need(j) <= 2));
                        proptest::prop_assert_eq!(q.head().map(|h| h.1), all.first().map(|&(_, j)| j));
                    }
                }
            }
        }
    }

    #[test]
    fn find_first_respects_from_and_predicate() {
        let mut q = Queue::new();
        let sizes = [5, 3, 8, 1, 4, 1];
        let pos: Vec<u32> = sizes.iter().enumerate().map(|(i, &s)| q.push(JobIdx(i as u32), s, 10 * i as Time)).collect();
        let fits = |f: u64| move |p: u64, _e: Time| p <= f;
        assert_eq!(q.find_first(pos[0], fits(3)), Some(pos[1]));
        assert_eq!(q.find_first(pos[2], fits(3)), Some(pos[3]));
        q.remove(pos[3]);
        assert_eq!(q.find_first(pos[2], fits(3)), Some(pos[5]));
        assert_eq!(q.find_first(pos[5] + 1, fits(3)), None);
        // two-dimensional: a node may pass on mins of different jobs
        assert_eq!(q.find_first(pos[0], |p, e| p <= 3 && e <= 10), Some(pos[1]));
        assert_eq!(q.find_first(pos[2], |p, e| p <= 4 && e <= 40), Some(pos[4]));
        assert_eq!(q.find_first(pos[2], |p, e| p <= 1 && e <= 40), None);
        // a held job keeps its place but no search finds it
        q.set(pos[1], Queue::HELD, 10);
        assert_eq!(q.find_first(pos[0], fits(3)), Some(pos[5]));
        assert_eq!(q.head(), Some((pos[0], JobIdx(0))));
        q.remove(pos[0]);
        assert_eq!(q.head(), Some((pos[2], JobIdx(2))), "the held job is skipped");
        q.set(pos[1], 3, 10);
        assert_eq!(q.head(), Some((pos[1], JobIdx(1))), "released, it is first again");
    }

    /// The key a job is filed under follows it through holds, moves and
    /// compaction, is the slot's own (set before the job is queued or while
    /// it is), and is 0 (never skipped) for every job of a queue read back.
    #[test]
    fn find_first_keyed_skips_by_the_key_where_it_follows_the_job() {
        let mut q = Queue::new();
        // job i needs 1 + i % 3, filed under key 10 * (i % 4)
        let key = |i: u32| 10 * (i % 4) as u64;
        let mut pos = Vec::new();
        for i in 0..200u32 {
            q.set_key(JobIdx(i), key(i));
            pos.push(q.push(JobIdx(i), 1 + i as u64 % 3, i as Time));
        }
        let low = |k: u64| move |_: u64, _: Time, key: u64| key < k;
        assert_eq!(q.find_first_keyed(pos[0], low(10)).map(|p| q.job_at(p)), Some(JobIdx(0)));
        assert_eq!(q.find_first_keyed(pos[1], low(10)).map(|p| q.job_at(p)), Some(JobIdx(4)));
        assert_eq!(q.find_first_keyed(pos[1], low(20)).map(|p| q.job_at(p)), Some(JobIdx(1)));
        // a key set while queued takes effect at once; a hold keeps it
        q.set_key(JobIdx(1), 0);
        q.set_key(JobIdx(4), 30);
        q.set(pos[2], Queue::HELD, 2);
        q.set(pos[2], 3, 2);
        assert_eq!(q.find_first_keyed(pos[2], low(30)).map(|p| q.job_at(p)), Some(JobIdx(2)));
        assert_eq!(q.find_first_keyed(pos[2], low(10)).map(|p| q.job_at(p)), Some(JobIdx(8)));
        // need and key at once, on the minimums of different jobs: jobs 3
        // and 6 need 1 but are filed higher
        let pick = |p: u64, _: Time, k: u64| p <= 1 && k <= 10;
        assert_eq!(q.find_first_keyed(pos[2], pick).map(|p| q.job_at(p)), Some(JobIdx(9)));
        // moved, the jobs keep their keys
        let mut order: Vec<u32> = q.iter().map(|(p, _)| p).collect();
        order.reverse();
        q.permute(&order, true);
        assert_eq!(q.find_first_keyed(0, low(10)).map(|p| q.job_at(p)), Some(JobIdx(196)), "the new order starts from job 199");
        // a slot given back files its next job under that job's key
        q.remove(q.pos_of(JobIdx(196)));
        q.set_key(JobIdx(196), 30);
        q.push(JobIdx(196), 1, 0);
        assert_eq!(q.find_first_keyed(0, low(10)).map(|p| q.job_at(p)), Some(JobIdx(192)));
        positions_agree(&q).unwrap();
        // read back, no job is skipped by its key until filed again
        let back: Queue = serde_json::from_str(&serde_json::to_string(&q).unwrap()).unwrap();
        assert_eq!(back.find_first_keyed(0, low(1)).map(|p| back.job_at(p)), back.head().map(|h| h.1));
        assert_eq!(back.find_first_keyed(0, |n, _, k| n <= 1 && k <= 0), back.find_first(0, |n, _| n <= 1));
        let every: Vec<u32> = std::iter::successors(back.find_first_keyed(0, low(1)), |&p| back.find_first_keyed(p + 1, low(1))).collect();
        assert_eq!(every, back.iter().map(|(p, _)| p).collect::<Vec<_>>());
        positions_agree(&back).unwrap();
    }
}
