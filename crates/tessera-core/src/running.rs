//! Running jobs ordered by their expected end (start + estimate).
//!
//! EASY's shadow time and conservative's availability profile both walk running
//! jobs in that order; a sorted vector of small records is the fastest structure
//! for the sizes seen (thousands of running jobs): binary search to insert and
//! remove, a contiguous scan to accumulate.

use crate::job::JobIdx;
use crate::Time;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct RunningJob {
    pub expected_end: Time,
    pub job: JobIdx,
    /// Cores it holds on nodes that take jobs: those it gives back to the queue
    /// when it ends (a job of more than 2^32 - 1 cores is counted as that many
    /// here; its allocation holds the truth).
    pub procs: u32,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Running {
    by_end: Vec<RunningJob>,
    /// With `logging` (fair share charges usage): the jobs that joined or
    /// left the list since the sharing state last took them
    /// ([`Running::take_log`]); the others ran throughout.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    logging: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    log: Vec<JobIdx>,
}

impl Running {
    pub fn insert(&mut self, r: RunningJob) {
        let at = self
            .by_end
            .partition_point(|x| (x.expected_end, x.job) < (r.expected_end, r.job));
        self.by_end.insert(at, r);
        if self.logging {
            self.log.push(r.job);
        }
    }

    /// Log the jobs that join or leave from now on.
    pub fn log_changes(&mut self) {
        self.logging = true;
    }

    /// The jobs that joined or left since the last call (in that order,
    /// repeats kept); `into` is cleared and left empty for the next.
    pub fn take_log(&mut self, into: &mut Vec<JobIdx>) {
        into.clear();
        std::mem::swap(into, &mut self.log);
    }

    /// The log of `old`, whose jobs this list holds again (the machine was
    /// reconfigured: they ran on throughout).
    pub fn carry_log(&mut self, old: &Running) {
        self.logging = old.logging;
        self.log.clone_from(&old.log);
    }

    pub fn remove(&mut self, expected_end: Time, job: JobIdx) -> RunningJob {
        let at = self
            .by_end
            .partition_point(|x| (x.expected_end, x.job) < (expected_end, job));
        debug_assert!(
            self.by_end.get(at).is_some_and(|x| x.job == job),
            "job {job:?} is not running"
        );
        if self.logging {
            self.log.push(job);
        }
        self.by_end.remove(at)
    }

    /// Running jobs, earliest expected end first, with the cores each gives back
    /// to change.
    pub fn as_mut_slice(&mut self) -> &mut [RunningJob] {
        &mut self.by_end
    }

    /// Running jobs, earliest expected end first.
    pub fn as_slice(&self) -> &[RunningJob] {
        &self.by_end
    }

    pub fn len(&self) -> usize {
        self.by_end.len()
    }
}
