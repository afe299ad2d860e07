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

    /// The earliest start at which `procs` are free for `dur` seconds, and the
    /// index of the segment it starts in.
    pub fn earliest_fit(&self, procs: u32, dur: Time) -> (Time, usize) {
        let p = procs as i64;
        let n = self.times.len();
        let mut i = 0;
        'outer: while i < n {
            if self.free[i] < p {
                i += 1;
                continue;
            }
            let start = self.times[i];
            let end = start + dur;
            let mut j = i + 1;
            while j < n && self.times[j] < end {
                if self.free[j] < p {
                    i = j + 1;
                    continue 'outer;
                }
                j += 1;
            }
            return (start, i);
        }
        unreachable!("the last segment of a profile has every processor free")
    }

    /// Take `procs` processors over `[times[i], times[i] + dur)`.
    pub fn reserve(&mut self, i: usize, dur: Time, procs: u32) {
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
        for f in &mut self.free[i..j] {
            *f -= procs as i64;
        }
    }

    /// Segments as (start, free), for tests and explanations.
    #[cfg(test)]
    pub fn segments(&self) -> Vec<(Time, i64)> {
        self.times.iter().copied().zip(self.free.iter().copied()).collect()
    }
}

#[cfg(test)]
mod tests {
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
        p.reserve(i, 10, 4);
        assert_eq!(t, 20);
        assert_eq!(p.segments(), vec![(0, 2), (20, 1), (30, 5), (50, 10)]);
        // a 2-processor job for 25 s no longer fits at 0 (window hits [20,30) with 1)
        assert_eq!(p.earliest_fit(2, 25), (30, 2));
        assert_eq!(p.earliest_fit(2, 20), (0, 0));
    }

    #[test]
    fn zero_length_jobs_hold_the_instant() {
        let mut p = Profile::default();
        p.rebuild(7, 0, &[rj(7, 4)]);
        assert_eq!(p.segments(), vec![(7, 0), (8, 4)]);
        assert_eq!(p.earliest_fit(1, footprint(0)), (8, 1));
    }
}
