//! Turning SWF records into the job list the simulator replays, for a machine.

use std::collections::BTreeMap;
use std::sync::Arc;
use crate::power::PowerSetup;
use tessera_core::power::PowerJob;
use tessera_core::{Cluster, Engine, JobId, JobSpec, NodeSetSpec, PolicyKind};
use tessera_workload::jobs::{job_from_record, SkipReason, TraceJob};
use tessera_workload::swf::{SwfHeader, SwfRecord};

/// The machine a workload is replayed on.
#[derive(Clone, Debug)]
pub enum Machine {
    /// One pool of identical processors.
    Pool(u32),
    /// The nodes of a cluster; jobs go to `partition` (None: the partition whose
    /// `swf_queue` is the job's queue number, else the default), with an
    /// optional node-set request applied to every job.
    Cluster { cluster: Arc<Cluster>, partition: Option<u16>, nodeset: Option<NodeSetSpec> },
    /// An overprovisioned machine under a power budget; jobs are sized in nodes
    /// (see [`crate::power`]).
    Power(Arc<PowerSetup>),
}

/// Jobs to simulate, in queue order (submit time, job id, then file order), with
/// the records that were skipped counted by reason.
#[derive(Clone, Debug)]
pub struct Workload {
    pub jobs: Vec<TraceJob>,
    /// For each job, the index of its record in the input.
    pub record_index: Vec<u32>,
    pub skipped: BTreeMap<SkipReason, u64>,
    /// Processors (cores) of the simulated machine.
    pub capacity: u32,
    pub machine: Machine,
    /// Power-aware machines: each job's PASS model, by index (empty otherwise).
    pub power_jobs: Vec<PowerJob>,
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

/// The engine's view of a trace job (partition and node set are the driver's).
pub fn spec_of(j: &TraceJob) -> JobSpec {
    JobSpec { mem_per_proc_mb: j.mem_per_proc_mb, ..JobSpec::new(JobId(j.id as u64), j.procs, j.estimate) }
}

impl Machine {
    /// The partition a trace job goes to: the one asked for, else the one whose
    /// `swf_queue` is the job's queue number, else the default (None).
    pub fn partition_of(&self, j: &TraceJob) -> Option<u16> {
        match self {
            Machine::Cluster { partition: Some(p), .. } => Some(*p),
            Machine::Cluster { cluster, partition: None, .. } => cluster.partitions.iter().position(|p| p.swf_queue == Some(j.queue)).map(|p| p as u16),
            Machine::Pool(_) | Machine::Power(_) => None,
        }
    }
}

/// Apply the job semantics to every record for a pool of `capacity` processors.
pub fn prepare(records: &[SwfRecord], capacity: u32) -> Workload {
    prepare_on(records, Machine::Pool(capacity))
}

/// Apply the job semantics to every record for `machine`.
pub fn prepare_on(records: &[SwfRecord], machine: Machine) -> Workload {
    let mut skipped = BTreeMap::new();
    let mut keyed: Vec<(TraceJob, u32)> = Vec::with_capacity(records.len());
    let (capacity, mut probe, partition_cores) = match &machine {
        Machine::Pool(c) => (*c, None, vec![*c as u64]),
        Machine::Power(setup) => return crate::power::prepare_power(records, setup.clone()),
        Machine::Cluster { cluster, .. } => {
            // processors a job may ask for in each partition: whole nodes x cores
            // per node, or all cores
            let cores = cluster
                .partitions
                .iter()
                .map(|p| if p.exclusive { p.nodes.len() as u64 * p.cores_per_node as u64 } else { p.nodes.iter().map(|&n| cluster.nodes[n].cores as u64).sum() })
                .collect();
            (cluster.total_cores().min(u32::MAX as u64) as u32, Engine::with_cluster(PolicyKind::Fcfs, cluster).ok(), cores)
        }
    };
    let default_part = match &machine {
        Machine::Cluster { cluster, .. } => cluster.default_partition_index(),
        _ => 0,
    };
    for (i, r) in records.iter().enumerate() {
        let reason = match job_from_record(r) {
            Err(reason) => Some(reason),
            Ok(j) => {
                let partition = machine.partition_of(&j);
                if j.procs as u64 > partition_cores[partition.map_or(default_part, |p| p as usize)] {
                    Some(SkipReason::LargerThanMachine)
                } else if probe.as_mut().is_none_or(|e| e.can_run(&JobSpec { partition, ..spec_of(&j) }).is_ok()) {
                    keyed.push((j, i as u32));
                    None
                } else {
                    Some(SkipReason::MemoryExceedsNodes)
                }
            }
        };
        if let Some(reason) = reason {
            *skipped.entry(reason).or_insert(0) += 1;
        }
    }
    keyed.sort_by_key(|(j, i)| (j.submit, j.id, *i));
    let (jobs, record_index) = keyed.into_iter().unzip();
    Workload { jobs, record_index, skipped, capacity, machine, power_jobs: Vec::new() }
}
