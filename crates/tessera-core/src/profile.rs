//! The availability profile of conservative backfilling: free processors as a step
//! function of time, from now on.

use crate::running::RunningJob;
use crate::Time;

/// Entries per block when a profile is built; blocks split at [`BLOCK_CAP`].
/// Measured against 32/64 and 8/16: a reservation updates its end blocks
/// segment by segment and whole blocks between at once, and on RICC and Curie
/// with `--capacity` 16/32 took the least time (BENCHMARKS.md).
const BLOCK_FILL: usize = 16;
const BLOCK_CAP: usize = 32;

/// A run of consecutive segments with the minimum and maximum of their free
/// counts, and a pending amount added to all of them (a lazy range update).
#[derive(Debug, Clone, Default)]
struct Block {
    /// Each segment's start and free processors (not counting `lazy`), side
    /// by side: a scan reads both.
    seg: Vec<(Time, i64)>,
    lazy: i64,
    min: i64,
    max: i64,
}

impl Block {
    fn refresh(&mut self) {
        self.min = self.seg.iter().map(|s| s.1).min().unwrap_or(i64::MAX);
        self.max = self.seg.iter().map(|s| s.1).max().unwrap_or(i64::MIN);
    }
    #[inline]
    fn get(&self, i: usize) -> i64 {
        self.seg[i].1 + self.lazy
    }
    /// The start of the block's first segment. A block is never empty: one
    /// that a merge empties is dropped (`Profile::merge_at`), and cuts keep
    /// a segment (`truncate_after`, `advance`).
    #[inline]
    fn first(&self) -> Time {
        self.seg[0].0
    }
    /// The start of the block's last segment (a block is never empty).
    #[inline]
    fn last(&self) -> Time {
        self.seg[self.seg.len() - 1].0
    }
}

/// A segment: block index and index inside the block.
pub(crate) type Pos = (usize, usize);

/// Free processors over time as a step function: each segment covers
/// `[time, next segment's time)` (the last one runs forever).
///
/// Segments are kept in blocks of up to [`BLOCK_CAP`] with their minimum and
/// maximum, so a search skips whole blocks that cannot hold a window start
/// (`max < p`) or that cannot end one (`min >= p`), and a reservation updates
/// whole blocks lazily: O(S/B + B) per operation on S segments instead of O(S).
#[derive(Debug, Clone, Default)]
pub(crate) struct Profile {
    blocks: Vec<Block>,
    /// Emptied blocks kept for reuse, so that passes do not allocate.
    spare: Vec<Block>,
    now: Time,
    /// Next running job (by expected end) whose end is not yet a segment.
    cursor: usize,
    /// Free processors once every running job up to `cursor` has ended.
    base_free: i64,
    /// After [`Profile::earliest_fit_before`]: the fewest processors any start
    /// it passed over lacked (i64::MAX if it passed over none).
    pub shortfall: i64,
}

/// A job occupies its processors at least for the instant it starts: a job with a
/// zero estimate still holds them until its completion is handled.
#[inline]
pub(crate) fn footprint(estimate: Time) -> Time {
    estimate.max(1)
}

impl Profile {
    fn recycle(&mut self, mut b: Block) {
        b.seg.clear();
        b.lazy = 0;
        self.spare.push(b);
    }

    fn new_block(&mut self) -> Block {
        self.spare.pop().unwrap_or_else(|| Block {
            seg: Vec::with_capacity(BLOCK_CAP + 1),
            ..Block::default()
        })
    }

    fn push_back(&mut self, t: Time, f: i64) {
        if self.blocks.last().is_none_or(|b| b.seg.len() >= BLOCK_FILL) {
            let mut b = self.new_block();
            b.min = i64::MAX;
            b.max = i64::MIN;
            self.blocks.push(b);
        }
        let b = self.blocks.last_mut().unwrap();
        let v = f - b.lazy;
        b.seg.push((t, v));
        b.min = b.min.min(v);
        b.max = b.max.max(v);
    }

    /// Start a profile at `now` with `free_now` processors free. The running jobs'
    /// ends (the slice every later call passes, sorted by expected end) are added
    /// lazily, as far as calls look: a pass that stops early never pays for the
    /// thousands of running jobs ending later.
    pub fn rebuild(&mut self, now: Time, free_now: u64) {
        self.clear(now, free_now);
        self.push_back(now, self.base_free);
    }

    /// No segment, the profile at `now` with `free_now` free and no running
    /// job's end added (the start of [`Profile::rebuild`] and
    /// [`Profile::rebuild_whole`]).
    fn clear(&mut self, now: Time, free_now: u64) {
        while let Some(b) = self.blocks.pop() {
            self.recycle(b);
        }
        self.now = now;
        self.cursor = 0;
        self.base_free = free_now.min(i64::MAX as u64 / 2) as i64;
    }

    /// [`Profile::rebuild`] with every running job's end added at once, in one
    /// loop over the jobs rather than a growth step per end: the calls that
    /// follow then pass no running jobs, and the profile can be kept from one
    /// pass to the next (a kept plan's, built again).
    pub fn rebuild_whole(&mut self, now: Time, free_now: u64, running: &[RunningJob]) {
        self.clear(now, free_now);
        // ends at or before `now + 1` merge into the segment at `now + 1`; the
        // jobs come sorted by expected end, so each later end starts a segment
        // (free counts only rise along it: a block's least is its first, its
        // most its last)
        let floor = now + 1;
        let mut free = self.base_free;
        let mut k = 0;
        let mut blk = self.new_block();
        blk.seg.push((now, free));
        while let Some(r) = running.get(k) {
            let end = r.expected_end.max(floor);
            free += r.procs as i64;
            k += 1;
            while let Some(r) = running.get(k).filter(|r| r.expected_end.max(floor) == end) {
                free += r.procs as i64;
                k += 1;
            }
            if blk.seg.len() >= BLOCK_FILL {
                (blk.min, blk.max) = (blk.seg[0].1, blk.seg[blk.seg.len() - 1].1);
                let next = self.new_block();
                self.blocks.push(std::mem::replace(&mut blk, next));
            }
            blk.seg.push((end, free));
        }
        (blk.min, blk.max) = (blk.seg[0].1, blk.seg[blk.seg.len() - 1].1);
        self.blocks.push(blk);
        self.base_free = free;
        self.cursor = running.len();
    }

    /// Start a profile at `now` with `free_now` free, changing by each of `steps`
    /// (instants strictly increasing after now, and the change there) and by
    /// nothing else: the calls that follow pass no running jobs. Returns the
    /// first instant at which fewer than `threshold` are free, if there is one.
    pub fn from_steps(&mut self, now: Time, free_now: i64, steps: &[(Time, i64)], threshold: i64) -> Option<Time> {
        self.rebuild(now, free_now.max(0) as u64);
        let mut below = (free_now < threshold).then_some(now);
        let mut free = free_now;
        for &(t, d) in steps {
            free += d;
            self.push_back(t, free);
            if free < threshold && below.is_none() {
                below = Some(t);
            }
        }
        below
    }

    /// Add the next running-job end as a segment; false when there is none left.
    /// Past the last segment no reservation exists, so a new segment's free count
    /// is that of the running jobs alone.
    fn grow(&mut self, running: &[RunningJob]) -> bool {
        let Some(first) = running.get(self.cursor) else { return false };
        let end = first.expected_end.max(self.now + 1);
        while let Some(r) = running.get(self.cursor).filter(|r| r.expected_end.max(self.now + 1) == end) {
            self.base_free += r.procs as i64;
            self.cursor += 1;
        }
        // ends at or before `now + 1` merge into the segment at `now + 1`
        if self.last_boundary() == end {
            let b = self.blocks.last_mut().unwrap();
            let i = b.seg.len() - 1;
            b.seg[i].1 = self.base_free - b.lazy;
            b.min = b.min.min(b.seg[i].1);
            b.max = b.max.max(b.seg[i].1);
        } else {
            self.push_back(end, self.base_free);
        }
        true
    }

    /// Add segments until one starts at or after `t` (or none are left).
    fn grow_until(&mut self, t: Time, running: &[RunningJob]) {
        while self.last_boundary() < t && self.grow(running) {}
    }

    /// The start of the last segment built (a profile is built with one,
    /// [`Profile::rebuild`], and keeps at least one).
    fn last_boundary(&self) -> Time {
        self.blocks[self.blocks.len() - 1].last()
    }

    /// Stop adding running-job ends: nothing past the current segments matters.
    fn seal(&mut self, running: &[RunningJob]) {
        self.cursor = running.len();
    }

    fn time(&self, (b, i): Pos) -> Time {
        self.blocks[b].seg[i].0
    }

    /// Free processors at the profile's first instant (now).
    pub fn free_now(&self) -> i64 {
        self.blocks[0].get(0)
    }

    /// The most processors free at any instant before `limit`, among the segments
    /// built so far (every segment before `limit` once the profile is truncated).
    pub fn max_free_before(&self, limit: Time) -> i64 {
        let mut most = 0;
        for blk in &self.blocks {
            if blk.first() >= limit {
                break;
            }
            if blk.last() < limit {
                most = most.max(blk.max + blk.lazy);
            } else {
                let n = blk.seg.partition_point(|&(t, _)| t < limit);
                most = most.max((0..n).map(|i| blk.get(i)).max().unwrap_or(0));
            }
        }
        most
    }

    /// The earliest start at which `procs` are free for `dur` seconds, with the
    /// whole window ending by `limit`, and the segment it starts in.
    pub fn earliest_fit_before(
        &mut self,
        procs: u64,
        dur: Time,
        limit: Time,
        running: &[RunningJob],
    ) -> Option<(Time, Pos)> {
        let p = procs.min(i64::MAX as u64) as i64;
        // the latest start whose window ends by `limit`
        let last_start = match limit {
            Time::MAX => Time::MAX,
            _ => limit.saturating_sub(dur),
        };
        let (mut b, mut i) = (0usize, 0usize);
        // every start passed over lies in a segment with fewer than p free, in a
        // block whose (upper bound on the) maximum is below p, or before a
        // segment with fewer than p free inside its window: it lacks at least
        // p minus that many
        let mut short = i64::MAX;
        let found = 'search: loop {
            // the next segment at or after (b, i) with at least p free
            loop {
                if b == self.blocks.len() && !self.grow(running) {
                    break 'search None;
                }
                if b == self.blocks.len() {
                    // the new segment was merged into the last one: look at it again
                    b -= 1;
                    i = i.min(self.blocks[b].seg.len() - 1);
                }
                let blk = &mut self.blocks[b];
                let lazy = blk.lazy;
                if blk.max + lazy >= p {
                    let segs = &blk.seg[..];
                    // the segments that start by `last_start`
                    let n = match blk.last() <= last_start {
                        true => segs.len(),
                        false => segs.partition_point(|s| s.0 <= last_start),
                    };
                    let (q, from) = (p - lazy, i);
                    let mut most = i64::MIN;
                    for s in segs[i.min(n)..n].iter().take_while(|s| s.1 < q) {
                        most = most.max(s.1);
                        i += 1;
                    }
                    if most > i64::MIN {
                        short = short.min(q - most);
                    }
                    if i < n {
                        break;
                    }
                    if n < segs.len() {
                        break 'search None;
                    }
                    if from == 0 {
                        // every segment looked at: the maximum is exact again
                        blk.max = most;
                    }
                } else if blk.first() > last_start {
                    break 'search None;
                } else {
                    short = short.min(p - (blk.max + lazy));
                }
                b += 1;
                i = 0;
            }
            // the scan stops only at a segment that starts by `last_start`
            let start = self.blocks[b].seg[i].0;
            debug_assert!(start <= last_start);
            let end = start + dur;
            self.grow_until(end, running);
            // the window holds unless a segment starting before `end` has < p free
            let (mut cb, mut ci) = (b, i + 1);
            loop {
                if ci >= self.blocks[cb].seg.len() {
                    cb += 1;
                    ci = 0;
                    if cb == self.blocks.len() {
                        break 'search Some((start, (b, i)));
                    }
                }
                let blk = &self.blocks[cb];
                if blk.seg[ci].0 >= end {
                    break 'search Some((start, (b, i)));
                }
                if ci == 0 && blk.min + blk.lazy >= p {
                    ci = blk.seg.len(); // the whole block is wide enough
                    continue;
                }
                // the first segment past the window, or short of p inside it
                let q = p - blk.lazy;
                match blk.seg[ci..].iter().position(|s| s.0 >= end || s.1 < q) {
                    Some(k) if blk.seg[ci + k].0 >= end => break 'search Some((start, (b, i))),
                    Some(k) => {
                        // blocked: look for a start after the blocking segment
                        short = short.min(q - blk.seg[ci + k].1);
                        b = cb;
                        i = ci + k + 1;
                        continue 'search;
                    }
                    None => ci = blk.seg.len(),
                }
            }
        };
        self.shortfall = short;
        found
    }

    /// The earliest start at which `procs` are free for `dur` seconds.
    pub fn earliest_fit(&mut self, procs: u64, dur: Time, running: &[RunningJob]) -> (Time, Pos) {
        self.earliest_fit_before(procs, dur, Time::MAX, running)
            .expect("the last segment of a profile has every processor free")
    }

    /// The first segment starting at or after `t`, looking from block `from` on
    /// (reservations are short next to the profile, so a forward walk beats a
    /// binary search), or None if all start before it.
    fn locate(&self, t: Time, from: usize) -> Option<Pos> {
        let mut b = from;
        while b < self.blocks.len() && self.blocks[b].last() < t {
            b += 1;
        }
        if b == self.blocks.len() {
            return None;
        }
        let i = self.blocks[b].seg.partition_point(|&(x, _)| x < t);
        Some((b, i))
    }

    /// Insert a segment boundary at `t` (inside the segment that contains it), and
    /// return where the segment at `keep` is afterwards (a split may move it).
    fn split_at(&mut self, t: Time, keep: Pos, running: &[RunningJob]) -> Pos {
        self.grow_until(t, running);
        let (b, i) = match self.locate(t, keep.0) {
            Some(pos) if self.time(pos) == t => return keep,
            Some(pos) => pos,
            None => (self.blocks.len() - 1, self.blocks[self.blocks.len() - 1].seg.len()),
        };
        // the free count of the segment that contained `t`
        let prev = if i > 0 { self.blocks[b].get(i - 1) } else { self.blocks[b - 1].get(self.blocks[b - 1].seg.len() - 1) };
        let blk = &mut self.blocks[b];
        let v = prev - blk.lazy;
        blk.seg.insert(i, (t, v));
        blk.min = blk.min.min(v);
        blk.max = blk.max.max(v);
        let mut keep = keep;
        if keep.0 == b && keep.1 >= i {
            keep.1 += 1;
        }
        if blk.seg.len() > BLOCK_CAP {
            let mut right = self.new_block();
            let blk = &mut self.blocks[b];
            let half = blk.seg.len() / 2;
            right.seg.extend(blk.seg.drain(half..));
            right.lazy = blk.lazy;
            blk.refresh();
            right.refresh();
            self.blocks.insert(b + 1, right);
            if keep.0 == b && keep.1 >= half {
                keep = (b + 1, keep.1 - half);
            } else if keep.0 > b {
                keep.0 += 1;
            }
        }
        keep
    }

    /// Take `procs` processors over `[start, start + dur)`, where `start` is the time
    /// of segment `pos`. Returns the start of the first segment this leaves with
    /// fewer than `threshold` free processors, if there is one.
    ///
    /// Block maxima are left as upper bounds (free counts only go down during a
    /// pass); minima stay exact.
    pub fn reserve(&mut self, pos: Pos, dur: Time, procs: u64, threshold: i64, running: &[RunningJob]) -> Option<Time> {
        let end = self.time(pos).saturating_add(dur);
        let from = self.split_at(end, pos, running);
        self.shift(from, end, -(procs.min(i64::MAX as u64) as i64), threshold)
    }

    /// Add `delta` to every segment from `from` up to the one starting at
    /// `end` (a boundary), whole blocks lazily. A block only partly covered
    /// keeps its minimum exact when processors are taken (its maximum an upper
    /// bound) and both exact when they are given back. Returns the start of
    /// the first segment covered with fewer than `threshold` free, if any.
    fn shift(&mut self, (b0, i0): Pos, end: Time, delta: i64, threshold: i64) -> Option<Time> {
        let mut below: Option<Time> = None;
        let mut b = b0;
        while b < self.blocks.len() {
            let blk = &mut self.blocks[b];
            if blk.first() >= end {
                break;
            }
            let from = if b == b0 { i0 } else { 0 };
            let last = blk.last();
            if from == 0 && last < end {
                blk.lazy += delta;
                if below.is_none() && blk.min + blk.lazy < threshold {
                    below = blk.seg.iter().find(|s| s.1 + blk.lazy < threshold).map(|s| s.0);
                }
            } else {
                let mut to = from;
                if delta < 0 {
                    let mut min = blk.min;
                    for s in blk.seg[from..].iter_mut().take_while(|s| s.0 < end) {
                        s.1 += delta;
                        min = min.min(s.1);
                        to += 1;
                    }
                    blk.min = min;
                } else {
                    // both found again: the segments changed as they are
                    // changed, the others in one more pass
                    let (mut min, mut max) = (i64::MAX, i64::MIN);
                    for s in blk.seg[from..].iter_mut().take_while(|s| s.0 < end) {
                        s.1 += delta;
                        (min, max) = (min.min(s.1), max.max(s.1));
                        to += 1;
                    }
                    for s in blk.seg[..from].iter().chain(&blk.seg[to..]) {
                        (min, max) = (min.min(s.1), max.max(s.1));
                    }
                    (blk.min, blk.max) = (min, max);
                }
                if below.is_none() && blk.min + blk.lazy < threshold {
                    below = (from..to).find(|&i| blk.get(i) < threshold).map(|i| blk.seg[i].0);
                }
            }
            b += 1;
        }
        below
    }

    /// The segment that starts at `t` (split one off if `t` is inside a segment).
    pub fn segment_at(&mut self, t: Time, running: &[RunningJob]) -> Pos {
        self.segment_from(t, 0, running)
    }

    /// [`Profile::segment_at`], looking from block `from` on (at or before the
    /// block that holds `t`).
    fn segment_from(&mut self, t: Time, from: usize, running: &[RunningJob]) -> Pos {
        self.grow_until(t, running);
        if let Some(pos) = self.locate(t, from) {
            if self.time(pos) == t {
                return pos;
            }
        }
        self.split_at(t, (from, 0), running);
        self.locate(t, from).expect("a segment was split at t")
    }

    /// Forget every segment that starts after `t`: a pass that never looks past
    /// `t` then keeps a short profile.
    pub fn truncate_after(&mut self, t: Time, running: &[RunningJob]) {
        self.seal(running);
        let b = self.blocks.partition_point(|blk| blk.first() <= t).max(1);
        while self.blocks.len() > b {
            let blk = self.blocks.pop().unwrap();
            self.recycle(blk);
        }
        let blk = self.blocks.last_mut().unwrap();
        let keep = blk.seg.partition_point(|&(x, _)| x <= t).max(1);
        if keep < blk.seg.len() {
            blk.seg.truncate(keep);
            blk.refresh();
        }
    }

    /// Add every running job's end now, one by one (the tests' reference for
    /// [`Profile::rebuild_whole`]).
    #[cfg(test)]
    pub fn grow_all(&mut self, running: &[RunningJob]) {
        while self.grow(running) {}
    }

    /// Start the profile at `now` (at or after its start): what lay before goes.
    /// Block minima and maxima stay bounds (lower and upper), as a search needs.
    pub fn advance(&mut self, now: Time) {
        let k = self.blocks.partition_point(|b| b.first() <= now).max(1);
        if k > 1 {
            let gone: Vec<Block> = self.blocks.drain(..k - 1).collect();
            for b in gone {
                self.recycle(b);
            }
        }
        let blk = &mut self.blocks[0];
        let i = blk.seg.partition_point(|&(t, _)| t <= now).max(1) - 1;
        blk.seg.drain(..i);
        blk.seg[0].0 = now;
        self.now = now;
    }

    /// Give `procs` processors back over `[from, to)`, `from` at or after the
    /// profile's start, on a profile that needs no running jobs: a reservation
    /// undone, or a running job that ended before its expected end. A boundary
    /// this leaves with the free count of the segment before it goes, so that
    /// a kept profile does not gather boundaries that change nothing.
    pub fn give(&mut self, from: Time, to: Time, procs: i64) {
        if from >= to || procs == 0 {
            return;
        }
        // the block that holds `from`, by binary search: an undone reservation
        // can lie far from now
        let hint = self.blocks.partition_point(|blk| blk.first() <= from).max(1) - 1;
        let pos = self.segment_from(from, hint, &[]);
        let pos = self.split_at(to, pos, &[]);
        self.shift(pos, to, procs, i64::MIN);
        self.merge_at(to, pos.0);
        self.merge_at(from, pos.0);
    }

    /// Remove the boundary at `t` (looked for from block `from`) if the
    /// segment it starts has the free count of the one before it (never the
    /// profile's first).
    fn merge_at(&mut self, t: Time, from: usize) {
        let Some((b, i)) = self.locate(t, from.min(self.blocks.len().saturating_sub(1))) else { return };
        if self.time((b, i)) != t || (b == 0 && i == 0) {
            return;
        }
        let prev = if i > 0 { self.blocks[b].get(i - 1) } else { self.blocks[b - 1].get(self.blocks[b - 1].seg.len() - 1) };
        if self.blocks[b].get(i) != prev {
            return;
        }
        let blk = &mut self.blocks[b];
        blk.seg.remove(i);
        if blk.seg.is_empty() {
            let blk = self.blocks.remove(b);
            self.recycle(blk);
        }
    }

    /// The first instant with fewer than `threshold` processors free, and how
    /// many are free then, on a profile that needs no running jobs.
    pub fn first_below(&self, threshold: i64) -> Option<(Time, i64)> {
        for blk in &self.blocks {
            if blk.min + blk.lazy >= threshold {
                continue;
            }
            if let Some(i) = (0..blk.seg.len()).find(|&i| blk.get(i) < threshold) {
                return Some((blk.seg[i].0, blk.get(i)));
            }
        }
        None
    }

    /// Processors free at `t` (at or after the start), among the segments built.
    pub fn free_at(&self, t: Time) -> i64 {
        let b = self.blocks.partition_point(|blk| blk.first() <= t).max(1) - 1;
        let blk = &self.blocks[b];
        let i = blk.seg.partition_point(|&(x, _)| x <= t).max(1) - 1;
        blk.get(i)
    }

    /// Segments as (start, free), as built so far.
    pub fn values(&self) -> Vec<(Time, i64)> {
        self.blocks.iter().flat_map(|b| (0..b.seg.len()).map(move |i| (b.seg[i].0, b.get(i)))).collect()
    }

    /// Segments as (start, free), for tests: every running job's end added.
    #[cfg(test)]
    pub fn segments(&mut self, running: &[RunningJob]) -> Vec<(Time, i64)> {
        self.grow_all(running);
        self.values()
    }
}

/// Job shapes known not to fit anywhere before a limit during one pass: since a pass
/// only ever takes processors away, a job at least as wide and as long as a job
/// that did not fit will not fit either. Kept as a staircase of minimal failures:
/// processors strictly increasing, durations strictly decreasing.
#[derive(Debug, Clone, Default)]
pub(crate) struct Doomed {
    steps: Vec<(u64, Time)>,
}

impl Doomed {
    pub fn clear(&mut self) {
        self.steps.clear();
    }

    /// Whether a job of `procs` processors for `dur` seconds is known not to fit.
    /// Monotone: true for a shape implies true for every wider and longer one.
    #[inline]
    pub fn dominates(&self, procs: u64, dur: Time) -> bool {
        let k = self.steps.partition_point(|s| s.0 <= procs);
        k > 0 && dur >= self.steps[k - 1].1
    }

    /// Record that `procs` processors for `dur` seconds do not fit.
    pub fn insert(&mut self, procs: u64, dur: Time) {
        if self.dominates(procs, dur) {
            return;
        }
        self.steps.retain(|s| !(s.0 >= procs && s.1 >= dur));
        let at = self.steps.partition_point(|s| s.0 < procs);
        self.steps.insert(at, (procs, dur));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobIdx;

    fn rj(end: Time, procs: u32) -> RunningJob {
        RunningJob { expected_end: end, job: JobIdx(0), procs }
    }

    /// A xorshift generator from `seed`: `rnd(n)` is below `n`.
    fn xorshift(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |n| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        }
    }

    #[test]
    fn fit_and_reserve_split_segments() {
        let run = [rj(20, 3), rj(50, 5)];
        let mut p = Profile::default();
        // 10 processors: 2 free now, 3 back at 20, 5 back at 50
        p.rebuild(0, 2);
        assert_eq!(p.earliest_fit(2, 100, &run), (0, (0, 0)));
        assert_eq!(p.earliest_fit(4, 10, &run), (20, (0, 1)));
        assert_eq!(p.earliest_fit(6, 1, &run), (50, (0, 2)));
        assert_eq!(p.clone().segments(&run), vec![(0, 2), (20, 5), (50, 10)]);
        let (t, i) = p.earliest_fit(4, 10, &run);
        assert_eq!(p.reserve(i, 10, 4, 2, &run), Some(20), "[20,30) is left with 1 < 2 free");
        assert_eq!(t, 20);
        assert_eq!(p.clone().segments(&run), vec![(0, 2), (20, 1), (30, 5), (50, 10)]);
        // a 2-processor job for 25 s no longer fits at 0 (window hits [20,30) with 1)
        assert_eq!(p.earliest_fit(2, 25, &run).0, 30);
        assert_eq!(p.earliest_fit(2, 20, &run).0, 0);
        assert_eq!(p.max_free_before(30), 2);
        assert_eq!(p.max_free_before(31), 5);
    }

    #[test]
    fn fits_are_bounded_by_a_limit() {
        let run = [rj(100, 9)];
        let mut p = Profile::default();
        p.rebuild(0, 1);
        assert_eq!(p.earliest_fit_before(1, 50, 60, &run), Some((0, (0, 0))));
        assert_eq!(p.earliest_fit_before(1, 50, 49, &run), None);
        assert_eq!(p.earliest_fit_before(5, 10, 200, &run), Some((100, (0, 1))));
        assert_eq!(p.earliest_fit_before(5, 10, 109, &run), None);
    }

    /// A profile built whole at once is the one grown end by end: ends
    /// before now, shared ends, jobs of no processor, several blocks.
    #[test]
    fn a_profile_built_whole_is_the_one_grown() {
        let mut rnd = xorshift(0x51afd7ed558ccd);
        for round in 0..200 {
            let now = 1000 + rnd(50) as Time;
            let mut run: Vec<RunningJob> = (0..rnd(120)).map(|_| rj(now - 10 + rnd(400) as Time, rnd(5) as u32)).collect();
            run.sort();
            let free = rnd(30);
            let mut grown = Profile::default();
            grown.rebuild(now, free);
            grown.grow_all(&run);
            let mut whole = Profile::default();
            whole.rebuild_whole(now, free, &run);
            assert_eq!(whole.values(), grown.values(), "round {round}");
            assert_eq!((whole.base_free, whole.cursor), (grown.base_free, grown.cursor), "round {round}");
            for b in &whole.blocks {
                let vals = b.seg.iter().map(|s| s.1);
                assert_eq!((b.min, b.max), (vals.clone().min().unwrap(), vals.max().unwrap()), "round {round}: block bounds");
            }
            // the searches see the same profile (asking at most the machine)
            let capacity = free + run.iter().map(|r| r.procs as u64).sum::<u64>();
            for _ in 0..10 {
                let (p, d) = (1 + rnd(capacity.max(1)), 1 + rnd(300) as Time);
                if p > capacity {
                    continue;
                }
                assert_eq!(whole.earliest_fit(p, d, &run), grown.earliest_fit(p, d, &run), "round {round}: fit {p} x {d}");
            }
        }
    }

    #[test]
    fn zero_length_jobs_hold_the_instant() {
        let run = [rj(7, 4)];
        let mut p = Profile::default();
        p.rebuild(7, 0);
        assert_eq!(p.earliest_fit(1, footprint(0), &run).0, 8);
        assert_eq!(p.segments(&run), vec![(7, 0), (8, 4)]);
    }

    /// The blocked, lazily built profile against a flat vector, over random
    /// reservations on many running jobs (several blocks, splits, truncation).
    #[test]
    fn blocked_profile_matches_a_flat_one() {
        let mut rnd = xorshift(0x9e3779b97f4a7c15);
        for round in 0..20 {
            let now = 1000;
            let mut run: Vec<RunningJob> = (0..(20 + rnd(300)))
                .map(|_| rj(now + rnd(5000) as Time - 5, 1 + rnd(4) as u32))
                .collect();
            run.sort();
            let capacity: i64 = 50 + run.iter().map(|r| r.procs as i64).sum::<i64>();
            let free_now = (capacity - run.iter().map(|r| r.procs as i64).sum::<i64>()) as u64;
            // flat reference: free at each integer instant up to a horizon
            let horizon = (now + 100_000) as usize;
            let mut released = vec![0i64; horizon];
            for r in &run {
                released[r.expected_end.max(now + 1) as usize] += r.procs as i64;
            }
            let mut flat = vec![0i64; horizon];
            let mut free = free_now as i64;
            for t in now as usize..horizon {
                free += released[t];
                flat[t] = free;
            }
            let mut p = Profile::default();
            p.rebuild(now, free_now);
            let mut limit = Time::MAX;
            for _ in 0..60 {
                let procs = 1 + rnd(60);
                let dur = 1 + rnd(1500) as Time;
                // first run of `dur` instants with enough free processors
                let mut run_len = 0;
                let mut want = None;
                for t in now as usize..horizon {
                    run_len = if flat[t] >= procs as i64 { run_len + 1 } else { 0 };
                    if run_len == dur as usize {
                        want = Some((t + 1 - dur as usize) as Time);
                        break;
                    }
                }
                let want = want.filter(|&s| s.saturating_add(dur) <= limit);
                let got = p.earliest_fit_before(procs, dur, limit, &run);
                assert_eq!(got.map(|g| g.0), want, "round {round}: fit of {procs} x {dur}");
                if let Some((s, pos)) = got {
                    let below = p.reserve(pos, dur, procs, 3, &run);
                    for f in &mut flat[s as usize..(s + dur) as usize] {
                        *f -= procs as i64;
                    }
                    let want_below = (s as usize..(s + dur) as usize).find(|&t| flat[t] < 3).map(|t| t as Time);
                    assert_eq!(below, want_below, "round {round}: first instant below 3");
                    if round % 2 == 0 {
                        if let Some(b) = below.filter(|&b| b < limit) {
                            limit = b;
                            p.truncate_after(b, &run);
                        }
                    }
                }
            }
            for (t, f) in p.segments(&run) {
                if (t as usize) < horizon && t <= limit {
                    assert_eq!(flat[t as usize], f, "round {round}: segment at {t}");
                }
            }
        }
    }

    /// A profile kept from pass to pass against a flat vector: built whole
    /// over hundreds of running jobs (many blocks), then reservations taken,
    /// given back, processors given back by jobs that end early, and the start
    /// moved on, round after round.
    #[test]
    fn a_kept_profile_matches_a_flat_one() {
        let mut rnd = xorshift(0x2545f4914f6cdd1d);
        let horizon = 20_000usize;
        for round in 0..10 {
            let mut now: Time = 100;
            let mut run: Vec<RunningJob> = (0..(200 + rnd(300))).map(|_| rj(now + 1 + rnd(8000) as Time, 1 + rnd(4) as u32)).collect();
            run.sort();
            let free_now = 7 + rnd(20);
            let mut flat = vec![0i64; horizon];
            let mut free = free_now as i64;
            let mut released = vec![0i64; horizon];
            for r in &run {
                released[r.expected_end as usize] += r.procs as i64;
            }
            for t in now as usize..horizon {
                free += released[t];
                flat[t] = free;
            }
            let mut p = Profile::default();
            p.rebuild(now, free_now);
            p.grow_all(&run);
            let mut taken: Vec<(Time, Time, i64)> = Vec::new();
            for _ in 0..400 {
                match rnd(4) {
                    0 | 1 => {
                        let procs = 1 + rnd(40);
                        let dur = 1 + rnd(900) as Time;
                        if let Some((s0, pos)) = p.earliest_fit_before(procs, dur, Time::MAX, &[]) {
                            p.reserve(pos, dur, procs, 0, &[]);
                            for f in &mut flat[s0 as usize..(s0 + dur) as usize] {
                                *f -= procs as i64;
                            }
                            taken.push((s0, s0 + dur, procs as i64));
                        }
                    }
                    2 if !taken.is_empty() => {
                        let (a, b, procs) = taken.swap_remove(rnd(taken.len() as u64) as usize);
                        let a = a.max(now);
                        p.give(a, b, procs);
                        for t in a.max(now)..b {
                            flat[t as usize] += procs;
                        }
                    }
                    _ => {
                        // a running job ends early, and time moves on
                        now += rnd(40) as Time;
                        p.advance(now);
                        if let Some(r) = run.pop().filter(|r| r.expected_end > now) {
                            p.give(now, r.expected_end, r.procs as i64);
                            for t in now..r.expected_end {
                                flat[t as usize] += r.procs as i64;
                            }
                        }
                    }
                }
                let segs = p.values();
                assert_eq!(segs[0].0, now, "round {round}: the profile starts now");
                for w in segs.windows(2) {
                    assert!(w[0].0 < w[1].0, "round {round}: boundaries increase: {w:?}");
                }
                for (i, &(t, f)) in segs.iter().enumerate() {
                    let to = segs.get(i + 1).map_or(horizon as Time, |s| s.0);
                    assert!((t..to).all(|x| flat[x as usize] == f), "round {round}: segment at {t}");
                    assert_eq!(p.free_at(t), f);
                }
                let below = (now as usize..horizon).find(|&t| flat[t] < 5).map(|t| (t as Time, flat[t]));
                assert_eq!(p.first_below(5), below, "round {round}: first instant below 5");
            }
        }
    }

    #[test]
    fn doomed_shapes_form_a_staircase() {
        let mut d = Doomed::default();
        assert!(!d.dominates(1, 1));
        d.insert(4, 100);
        assert!(d.dominates(4, 100) && d.dominates(8, 200));
        assert!(!d.dominates(3, 1000) && !d.dominates(100, 99));
        d.insert(8, 50);
        d.insert(2, 500);
        assert_eq!(d.steps, vec![(2, 500), (4, 100), (8, 50)]);
        d.insert(2, 50); // dominates (4,100) and (8,50)
        assert_eq!(d.steps, vec![(2, 50)]);
        d.insert(3, 60); // already dominated
        assert_eq!(d.steps, vec![(2, 50)]);
    }
}
