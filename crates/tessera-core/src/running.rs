//! Running jobs ordered by their expected end (start + estimate).
//!
//! EASY's shadow time and conservative's availability profile both walk running
//! jobs in that order; a sorted vector of small records is the fastest structure
//! for the sizes seen (thousands of running jobs): binary search to insert and
//! remove, a contiguous scan to accumulate.
//!
//! The vector is open at both ends ([`EndOrder`]): an insertion or removal moves
//! the shorter side, so the job that ends first (the usual one to go) leaves
//! without moving the thousands behind it.

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

/// A sorted vector whose live part is `buf[head..]`: the slots before `head`
/// are spare room at the front. Saved as the plain vector of its live part.
#[derive(Debug, Clone, Default)]
struct EndOrder {
    buf: Vec<RunningJob>,
    head: usize,
}

impl EndOrder {
    fn live(&self) -> &[RunningJob] {
        &self.buf[self.head..]
    }

    fn live_mut(&mut self) -> &mut [RunningJob] {
        &mut self.buf[self.head..]
    }

    /// Where a job ending at `expected_end` goes (or is) in the live part.
    fn position(&self, expected_end: Time, job: JobIdx) -> usize {
        self.live().partition_point(|x| (x.expected_end, x.job) < (expected_end, job))
    }

    /// Put `r` at position `at` of the live part, moving the shorter side.
    fn insert(&mut self, at: usize, r: RunningJob) {
        let h = self.head;
        if h > 0 && at < (self.buf.len() - h) / 2 {
            self.buf.copy_within(h..h + at, h - 1);
            self.head = h - 1;
            self.buf[h - 1 + at] = r;
        } else {
            self.buf.insert(h + at, r);
        }
    }

    /// Take position `at` of the live part out, moving the shorter side.
    fn remove(&mut self, at: usize) -> RunningJob {
        let h = self.head;
        let r = self.buf[h + at];
        if at < (self.buf.len() - h) / 2 {
            self.buf.copy_within(h..h + at, h + 1);
            self.head = h + 1;
        } else {
            self.buf.remove(h + at);
        }
        // the room at the front stays within the live part's size (or 64)
        if self.head > 64 && self.head > self.buf.len() - self.head {
            self.buf.drain(..self.head);
            self.head = 0;
        }
        r
    }
}

impl Serialize for EndOrder {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.live().serialize(s)
    }
}

impl<'de> Deserialize<'de> for EndOrder {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(EndOrder { buf: Vec::deserialize(d)?, head: 0 })
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Running {
    by_end: EndOrder,
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
        let at = self.by_end.position(r.expected_end, r.job);
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
        let at = self.by_end.position(expected_end, job);
        debug_assert!(
            self.by_end.live().get(at).is_some_and(|x| x.job == job),
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
        self.by_end.live_mut()
    }

    /// Running jobs, earliest expected end first.
    pub fn as_slice(&self) -> &[RunningJob] {
        self.by_end.live()
    }

    pub fn len(&self) -> usize {
        self.by_end.live().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The list open at both ends against a plain sorted vector: insertions
    /// and removals anywhere (front, back, middle), the room at the front
    /// reused and given back, and the saved form the plain vector's.
    #[test]
    fn end_order_matches_a_sorted_vector() -> Result<(), serde_json::Error> {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut list = Running::default();
        let mut want: Vec<RunningJob> = Vec::new();
        for i in 0..20_000u32 {
            // phases that grow, hold and shrink the list, removing mostly at the front
            let grow = match (i / 2_000) % 3 {
                0 => 3,
                1 => 2,
                _ => 1,
            };
            if want.is_empty() || rnd(4) < grow {
                let r = RunningJob { expected_end: rnd(500) as Time, job: JobIdx(i), procs: 1 + rnd(8) as u32 };
                list.insert(r);
                let at = want.partition_point(|x| x < &r);
                want.insert(at, r);
            } else {
                let at = match rnd(3) {
                    0 => 0,
                    1 => want.len() - 1,
                    _ => rnd(want.len() as u64) as usize,
                };
                let r = want.remove(at);
                assert_eq!(list.remove(r.expected_end, r.job), r, "step {i}");
            }
            assert_eq!(list.as_slice(), &want[..], "step {i}");
            assert!(list.by_end.head <= 64 || list.by_end.head <= list.len(), "step {i}: front room {}", list.by_end.head);
        }
        let saved = serde_json::to_string(&list)?;
        let plain = serde_json::to_string(&want)?;
        assert!(saved.contains(&plain), "saved as the plain vector: {saved}");
        let back: Running = serde_json::from_str(&saved)?;
        assert_eq!(back.as_slice(), &want[..]);
        Ok(())
    }
}
