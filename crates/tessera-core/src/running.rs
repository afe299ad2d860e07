//! Running jobs ordered by their expected end (start + estimate).
//!
//! EASY's shadow time and conservative's availability profile both walk running
//! jobs in that order; a sorted vector of small records is the fastest structure
//! for the sizes seen (thousands of running jobs): binary search to insert and
//! remove, a contiguous scan to accumulate.

use crate::job::JobIdx;
use crate::Time;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct RunningJob {
    pub expected_end: Time,
    pub job: JobIdx,
    pub procs: u32,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Running {
    by_end: Vec<RunningJob>,
}

impl Running {
    pub fn insert(&mut self, r: RunningJob) {
        let at = self.by_end.partition_point(|x| (x.expected_end, x.job) < (r.expected_end, r.job));
        self.by_end.insert(at, r);
    }

    pub fn remove(&mut self, expected_end: Time, job: JobIdx) -> RunningJob {
        let at = self.by_end.partition_point(|x| (x.expected_end, x.job) < (expected_end, job));
        debug_assert!(self.by_end.get(at).is_some_and(|x| x.job == job), "job {job:?} is not running");
        self.by_end.remove(at)
    }

    /// Running jobs, earliest expected end first.
    pub fn as_slice(&self) -> &[RunningJob] {
        &self.by_end
    }

    pub fn len(&self) -> usize {
        self.by_end.len()
    }

    /// The shadow time for a job that needs `need` more processors than are free
    /// now: the earliest expected end at which the processors released by jobs
    /// ending by then reach `need`. Returns (shadow, processors released by jobs
    /// expected to end at or before the shadow), or None if they never do.
    pub fn shadow(&self, need: u32) -> Option<(Time, u32)> {
        let mut released = 0u32;
        let mut iter = self.by_end.iter().peekable();
        while let Some(r) = iter.next() {
            released += r.procs;
            if released >= need {
                let shadow = r.expected_end;
                while let Some(next) = iter.next_if(|n| n.expected_end == shadow) {
                    released += next.procs;
                }
                return Some((shadow, released));
            }
        }
        None
    }
}
