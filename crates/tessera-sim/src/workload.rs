//! Turning SWF records into the job list the simulator replays.

use std::collections::BTreeMap;
use tessera_workload::jobs::{job_from_record, SkipReason, TraceJob};
use tessera_workload::swf::{SwfHeader, SwfRecord};

/// Jobs to simulate, in queue order (submit time, job id, then file order), with
/// the records that were skipped counted by reason.
#[derive(Clone, Debug)]
pub struct Workload {
    pub jobs: Vec<TraceJob>,
    /// For each job, the index of its record in the input.
    pub record_index: Vec<u32>,
    pub skipped: BTreeMap<SkipReason, u64>,
    /// Processors of the simulated machine.
    pub capacity: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkloadError {
    #[error("{trace}: the header has neither MaxProcs nor MaxNodes; give the machine size with --capacity N or a --cluster file")]
    NoMachineSize { trace: String },
    #[error("machine size {0} is not usable: expected 1..=4294967295 processors")]
    BadCapacity(u64),
}

/// The machine size a trace implies: `MaxProcs`, else `MaxNodes`.
pub fn default_capacity(header: &SwfHeader, trace: &str) -> Result<u32, WorkloadError> {
    let size = header.machine_size().ok_or_else(|| WorkloadError::NoMachineSize { trace: trace.to_string() })?;
    u32::try_from(size).ok().filter(|&c| c > 0).ok_or(WorkloadError::BadCapacity(size))
}

/// Apply the job semantics to every record for a machine of `capacity` processors.
pub fn prepare(records: &[SwfRecord], capacity: u32) -> Workload {
    let mut skipped = BTreeMap::new();
    let mut keyed: Vec<(TraceJob, u32)> = Vec::with_capacity(records.len());
    for (i, r) in records.iter().enumerate() {
        match job_from_record(r) {
            Ok(j) if j.procs > capacity => *skipped.entry(SkipReason::LargerThanMachine).or_insert(0) += 1,
            Ok(j) => keyed.push((j, i as u32)),
            Err(reason) => *skipped.entry(reason).or_insert(0) += 1,
        }
    }
    keyed.sort_by_key(|(j, i)| (j.submit, j.id, *i));
    let (jobs, record_index) = keyed.into_iter().unzip();
    Workload { jobs, record_index, skipped, capacity }
}
