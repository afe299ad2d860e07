//! How an SWF record becomes a job to simulate. These rules are Tessera's documented
//! job semantics (`docs/semantics.md`); the simulator follows them exactly.

use crate::swf::SwfRecord;

/// A job as the simulator replays it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceJob {
    /// SWF field 1.
    pub id: i64,
    /// SWF field 2, seconds.
    pub submit: i64,
    /// Field 8 (requested processors) if > 0, else field 5 (allocated processors).
    pub procs: u32,
    /// Field 9 (requested time) if > 0, else the runtime.
    pub estimate: i64,
    /// Field 4: how long the job ran in the trace (>= 0).
    pub runtime: i64,
    /// Field 10 (requested memory, KB per processor) in MiB, rounded up; 0 if unknown.
    pub mem_per_proc_mb: u64,
    /// Field 15: the queue number (-1 if unknown); a cluster file may map queues
    /// to partitions.
    pub queue: i64,
    /// Field 17: the job (its field 1) that must end before this one may
    /// start; -1 if none.
    pub preceding: i64,
    /// Field 18: seconds after the preceding job's end before this one may
    /// start (-1 if unknown: none).
    pub think: i64,
    /// Fields 12 and 13: the user and group (-1 if unknown), clamped into
    /// `i32` (every trace's ids fit).
    pub user: i32,
    pub group: i32,
}

fn clamp_id(v: i64) -> i32 {
    v.clamp(i32::MIN as i64, i32::MAX as i64) as i32
}

impl TraceJob {
    /// How long the job runs when replayed: it is killed at its limit.
    pub fn effective_runtime(&self) -> i64 {
        self.runtime.min(self.estimate)
    }
}

/// Why a record is not simulated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// Neither field 8 nor field 5 is > 0.
    NoProcessorCount,
    /// Field 4 is < 0 (unknown).
    NegativeRuntime,
    /// It asks for more processors than the simulated machine (or its partition) has.
    LargerThanMachine,
    /// It asks for more memory per processor than any node can give.
    MemoryExceedsNodes,
    /// A limit of its association or QOS it could never meet (an accounts
    /// file's MaxWall, MaxTRESPerJob, or a Grp or per-user limit below its
    /// size): the live system refuses such a submission.
    OverLimit,
    /// A time limit above its partition's MaxTime (Slurm's PartitionTimeLimit):
    /// the live system refuses such a submission.
    OverPartitionTimeLimit,
}

impl SkipReason {
    pub const ALL: [SkipReason; 6] = [
        SkipReason::NoProcessorCount,
        SkipReason::NegativeRuntime,
        SkipReason::LargerThanMachine,
        SkipReason::MemoryExceedsNodes,
        SkipReason::OverLimit,
        SkipReason::OverPartitionTimeLimit,
    ];

    pub fn key(self) -> &'static str {
        match self {
            SkipReason::NoProcessorCount => "no_processor_count",
            SkipReason::NegativeRuntime => "negative_runtime",
            SkipReason::LargerThanMachine => "larger_than_machine",
            SkipReason::MemoryExceedsNodes => "memory_exceeds_nodes",
            SkipReason::OverLimit => "over_limit",
            SkipReason::OverPartitionTimeLimit => "over_partition_time_limit",
        }
    }
}

/// Apply the job semantics to one record. A record with neither a processor count
/// nor a runtime is counted under the first rule it breaks (processors first).
pub fn job_from_record(r: &SwfRecord) -> Result<TraceJob, SkipReason> {
    let procs = if r.requested_procs > 0 { r.requested_procs } else { r.allocated_procs };
    if procs <= 0 {
        return Err(SkipReason::NoProcessorCount);
    }
    if r.run_time < 0 {
        return Err(SkipReason::NegativeRuntime);
    }
    let procs = u32::try_from(procs).map_err(|_| SkipReason::LargerThanMachine)?;
    let estimate = if r.requested_time > 0 { r.requested_time } else { r.run_time };
    let mem_per_proc_mb = if r.requested_memory > 0 { (r.requested_memory as u64).div_ceil(1024) } else { 0 };
    Ok(TraceJob { id: r.job_number, submit: r.submit_time, procs, estimate, runtime: r.run_time, mem_per_proc_mb, queue: r.queue, preceding: r.preceding_job, think: r.think_time, user: clamp_id(r.user_id), group: clamp_id(r.group_id) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(alloc: i64, req: i64, run: i64, req_time: i64) -> SwfRecord {
        SwfRecord {
            allocated_procs: alloc,
            requested_procs: req,
            run_time: run,
            requested_time: req_time,
            submit_time: 5,
            ..SwfRecord::unknown(9)
        }
    }

    #[test]
    fn semantics() {
        let j = job_from_record(&rec(4, 8, 100, 50)).unwrap();
        assert_eq!((j.procs, j.estimate, j.runtime, j.effective_runtime()), (8, 50, 100, 50));
        let j = job_from_record(&rec(4, -1, 100, -1)).unwrap();
        assert_eq!((j.procs, j.estimate, j.effective_runtime()), (4, 100, 100));
        let j = job_from_record(&rec(4, 0, 0, 0)).unwrap();
        assert_eq!((j.procs, j.estimate, j.effective_runtime()), (4, 0, 0));
        assert_eq!(job_from_record(&rec(-1, 0, 100, 10)), Err(SkipReason::NoProcessorCount));
        assert_eq!(job_from_record(&rec(-1, -1, -1, 10)), Err(SkipReason::NoProcessorCount));
        assert_eq!(job_from_record(&rec(2, -1, -1, 10)), Err(SkipReason::NegativeRuntime));
    }
}
