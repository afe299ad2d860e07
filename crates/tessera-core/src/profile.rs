//! The availability profile of conservative backfilling: free processors as a step
//! function of time, from now on.

use crate::running::RunningJob;
use crate::Time;

/// Free processors over time: segment `i` covers `[times[i], times[i+1])` (the last
/// one runs forever) with `free[i]` processors free.
#[derive(Debug, Clone, Default)]
pub(crate) struct Profile {
    times: Vec<Time>,
    free: Vec<i64>,
}

/// A job occupies its processors at least for the instant it starts: a job with a
/// zero estimate still holds them until its completion is handled.
#[inline]
pub(crate) fn footprint(estimate: Time) -> Time {
    estimate.max(1)
}

impl Profile {
    /// Rebuild from the running jobs (sorted by expected end): `free_now` free at
    /// `now`, and each job's processors back at its expected end.
    pub fn rebuild(&mut self, now: Time, free_now: u32, running: &[RunningJob]) {
        self.times.clear();
        self.free.clear();
        self.times.push(now);
        self.free.push(free_now as i64);
        let mut free = free_now as i64;
        for r in running {
            let end = r.expected_end.max(now + 1);
            free += r.procs as i64;
            if *self.times.last().unwrap() == end {
                *self.free.last_mut().unwrap() = free;
            } else {
                self.times.push(end);
                self.free.push(free);
            }
        }
    }

    /// Free processors at the profile's first instant (now).
    pub fn free_now(&self) -> i64 {
        self.free[0]
    }

    /// The start of the first segment with fewer than `threshold` free processors
    /// (`Time::MAX` if there is none).
    pub fn first_below(&self, threshold: i64) -> Time {
        self.free.iter().position(|&f| f < threshold).map_or(Time::MAX, |i| self.times[i])
    }

    /// The most processors free at any instant before `limit`.
    pub fn max_free_before(&self, limit: Time) -> i64 {
        self.times.iter().zip(&self.free).take_while(|(t, _)| **t < limit).map(|(_, f)| *f).max().unwrap_or(0)
    }

    /// The earliest start at which `procs` are free for `dur` seconds, with the
    /// whole window ending by `limit`, and the index of the segment it starts in.
    pub fn earliest_fit_before(&self, procs: u32, dur: Time, limit: Time) -> Option<(Time, usize)> {
        let p = procs as i64;
        let n = self.times.len();
        let mut i = 0;
        'outer: while i < n {
            let start = self.times[i];
            if start.saturating_add(dur) > limit {
                return None;
            }
            if self.free[i] < p {
                i += 1;
                continue;
            }
            let end = start + dur;
            let mut j = i + 1;
            while j < n && self.times[j] < end {
                if self.free[j] < p {
                    i = j + 1;
                    continue 'outer;
                }
                j += 1;
            }
            return Some((start, i));
        }
        None
    }

    /// The earliest start at which `procs` are free for `dur` seconds.
    pub fn earliest_fit(&self, procs: u32, dur: Time) -> (Time, usize) {
        self.earliest_fit_before(procs, dur, Time::MAX)
            .expect("the last segment of a profile has every processor free")
    }

    /// Take `procs` processors over `[times[i], times[i] + dur)`. Returns the start
    /// of the first segment this leaves with fewer than `threshold` free
    /// processors, if there is one.
    pub fn reserve(&mut self, i: usize, dur: Time, procs: u32, threshold: i64) -> Option<Time> {
        let end = self.times[i] + dur;
        let mut j = i;
        while j < self.times.len() && self.times[j] < end {
            j += 1;
        }
        // split the segment that contains `end`, unless `end` is a boundary
        if j == self.times.len() || self.times[j] != end {
            self.times.insert(j, end);
            self.free.insert(j, self.free[j - 1]);
        }
        let mut below = None;
        for k in i..j {
            self.free[k] -= procs as i64;
            if below.is_none() && self.free[k] < threshold {
                below = Some(self.times[k]);
            }
        }
        below
    }

    /// Forget everything from the first segment that starts after `t` on: a pass
    /// that never looks past `t` then keeps a short profile.
    pub fn truncate_after(&mut self, t: Time) {
        let keep = self.times.partition_point(|&x| x <= t);
        self.times.truncate(keep.max(1));
        self.free.truncate(keep.max(1));
    }

    /// Segments as (start, free), for tests and explanations.
    #[cfg(test)]
    pub fn segments(&self) -> Vec<(Time, i64)> {
        self.times.iter().copied().zip(self.free.iter().copied()).collect()
    }
}

/// Job shapes known not to fit anywhere before a limit during one pass: since a pass
/// only ever takes processors away, a job at least as wide and as long as a job
/// that did not fit will not fit either. Kept as a staircase of minimal failures:
/// processors strictly increasing, durations strictly decreasing.
#[derive(Debug, Clone, Default)]
pub(crate) struct Doomed {
    steps: Vec<(u32, Time)>,
}

impl Doomed {
    pub fn clear(&mut self) {
        self.steps.clear();
    }

    /// Whether a job of `procs` processors for `dur` seconds is known not to fit.
    /// Monotone: true for a shape implies true for every wider and longer one.
    #[inline]
    pub fn dominates(&self, procs: u32, dur: Time) -> bool {
        let k = self.steps.partition_point(|s| s.0 <= procs);
        k > 0 && dur >= self.steps[k - 1].1
    }

    /// Record that `procs` processors for `dur` seconds do not fit.
    pub fn insert(&mut self, procs: u32, dur: Time) {
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

    use super::*;
    use crate::job::JobIdx;

    fn rj(end: Time, procs: u32) -> RunningJob {
        RunningJob { expected_end: end, job: JobIdx(0), procs }
    }

    #[test]
    fn fit_and_reserve_split_segments() {
        let mut p = Profile::default();
        // 10 processors: 2 free now, 3 back at 20, 5 back at 50
        p.rebuild(0, 2, &[rj(20, 3), rj(50, 5)]);
        assert_eq!(p.segments(), vec![(0, 2), (20, 5), (50, 10)]);
        assert_eq!(p.earliest_fit(2, 100), (0, 0));
        assert_eq!(p.earliest_fit(4, 10), (20, 1));
        assert_eq!(p.earliest_fit(6, 1), (50, 2));
        let (t, i) = p.earliest_fit(4, 10);
        assert_eq!(p.reserve(i, 10, 4, 2), Some(20), "[20,30) is left with 1 < 2 free");
        assert_eq!(t, 20);
        assert_eq!(p.segments(), vec![(0, 2), (20, 1), (30, 5), (50, 10)]);
        // a 2-processor job for 25 s no longer fits at 0 (window hits [20,30) with 1)
        assert_eq!(p.earliest_fit(2, 25), (30, 2));
        assert_eq!(p.earliest_fit(2, 20), (0, 0));
        assert_eq!(p.first_below(2), 20);
        assert_eq!(p.max_free_before(30), 2);
        assert_eq!(p.max_free_before(31), 5);
    }

    #[test]
    fn fits_are_bounded_by_a_limit() {
        let mut p = Profile::default();
        p.rebuild(0, 1, &[rj(100, 9)]);
        assert_eq!(p.earliest_fit_before(1, 50, 60), Some((0, 0)));
        assert_eq!(p.earliest_fit_before(1, 50, 49), None);
        assert_eq!(p.earliest_fit_before(5, 10, 200), Some((100, 1)));
        assert_eq!(p.earliest_fit_before(5, 10, 109), None);
    }

    #[test]
    fn zero_length_jobs_hold_the_instant() {
        let mut p = Profile::default();
        p.rebuild(7, 0, &[rj(7, 4)]);
        assert_eq!(p.segments(), vec![(7, 0), (8, 4)]);
        assert_eq!(p.earliest_fit(1, footprint(0)), (8, 1));
    }
}
