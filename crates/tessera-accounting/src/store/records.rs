//! What a driver hands the store: runs, nodes, jobs with their allocations, and the
//! usage derived from them.

use tessera_core::{CanonicalUnit, Cluster};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunKind {
    Simulation,
    Live,
    /// Another scheduler's history (`tessera import sacct`).
    Imported,
}

impl RunKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RunKind::Simulation => "simulation",
            RunKind::Live => "live",
            RunKind::Imported => "imported",
        }
    }
}

#[derive(Clone, Debug)]
pub struct RunInfo {
    pub kind: RunKind,
    /// The trace (simulation) or controller (live) the run came from.
    pub label: String,
    /// Site name (APEL `Site`).
    pub site: String,
    pub cluster: String,
    pub policy: String,
    /// Seconds to add to the run's times to get Unix time (SWF UnixStartTime).
    pub epoch_offset: i64,
    /// Unix time at which the run was recorded.
    pub recorded_at: i64,
}

#[derive(Clone, Debug)]
pub struct NodeRecord {
    pub name: String,
    pub node_type: String,
    pub partition: String,
    pub cores: u32,
    pub memory_mb: u64,
    pub gpus: u32,
    pub hs06_per_core: Option<f64>,
    pub factor: f64,
    pub unit: CanonicalUnit,
    /// When the node's capacity takes effect (run time).
    pub valid_from: i64,
}

impl NodeRecord {
    /// The nodes of a cluster, each with its first partition's canonical unit.
    pub fn from_cluster(c: &Cluster) -> Vec<NodeRecord> {
    c.nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let t = &c.node_types[n.node_type];
            let p = c.partitions.iter().find(|p| p.nodes.contains(&i)).unwrap_or(c.default_partition());
            NodeRecord {
                name: n.name.clone(),
                node_type: t.name.clone(),
                partition: p.name.clone(),
                cores: n.cores,
                memory_mb: n.memory_mb,
                gpus: n.gpus,
                hs06_per_core: t.benchmark_per_core,
                factor: t.factor,
                unit: p.canonical_unit,
                valid_from: 0,
            }
        })
        .collect()
}
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobStateTag {
    Completed,
    Failed,
    Cancelled,
    /// Killed at its time limit.
    Timeout,
    /// A node it ran on failed.
    NodeFail,
    /// A process of it was killed for exceeding its memory.
    OutOfMemory,
}

impl JobStateTag {
    pub fn as_str(self) -> &'static str {
        match self {
            JobStateTag::Completed => "COMPLETED",
            JobStateTag::Failed => "FAILED",
            JobStateTag::Cancelled => "CANCELLED",
            JobStateTag::Timeout => "TIMEOUT",
            JobStateTag::NodeFail => "NODE_FAIL",
            JobStateTag::OutOfMemory => "OUT_OF_MEMORY",
        }
    }
}

/// What a job held on one node (index into the run's nodes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocationRecord {
    pub node: u32,
    pub cores: u32,
    pub memory_mb: u64,
    pub gpus: u32,
}

#[derive(Clone, Debug)]
pub struct JobRecord {
    pub job_id: i64,
    pub name: String,
    pub user: String,
    pub group: String,
    pub account: String,
    pub partition: String,
    pub submit: i64,
    pub start: i64,
    pub end: i64,
    /// Seconds it spent suspended between start and end: not charged (its
    /// cores were another job's meanwhile).
    pub suspended_s: i64,
    pub state: JobStateTag,
    /// The exit code of a job that exited (0 for one ended by a signal).
    pub exit_code: i32,
    /// The signal that ended it, or 0 (Slurm's ExitCode `CODE:SIGNAL`).
    pub signal: i32,
    /// Why it ended, when the scheduler knows more than the state (a launch
    /// that failed); empty otherwise.
    pub reason: String,
    /// (array job, task index) of an array task.
    pub array: Option<(i64, u32)>,
    pub req_procs: u32,
    /// Total memory requested, MiB (0: not stated).
    pub req_mem_mb: u64,
    /// Time limit, reference seconds.
    pub time_limit: i64,
    /// The pace of the job: the scaling factor of its slowest node.
    pub factor: f64,
    /// CPU seconds used, when known (else wall × cores is recorded).
    pub cpu_s: Option<f64>,
    pub energy_j: Option<f64>,
    pub allocations: Vec<AllocationRecord>,
    /// Intervals [from, to) in which the job, suspended by preemption or the
    /// gang scheduler, had given its cores back (memory and GPUs kept).
    pub released: Vec<(i64, i64)>,
    /// The peak memory its cgroups counted on any of its nodes, KiB (a
    /// confined live job).
    pub max_rss_kb: Option<u64>,
    /// Its steps: the batch script and each `tessera run`.
    pub steps: Vec<StepRecord>,
}

/// One step of a live job, as sacct lists it under the job.
#[derive(Clone, Debug, PartialEq)]
pub struct StepRecord {
    /// `batch`, or the step's number.
    pub step: String,
    pub name: String,
    /// Its nodes (a hostlist).
    pub node_list: String,
    pub ntasks: u32,
    pub start: i64,
    pub end: i64,
    pub state: JobStateTag,
    pub exit_code: i32,
    pub signal: i32,
    /// CPU seconds its cgroups counted (every node's).
    pub cpu_s: Option<f64>,
    /// Its peak memory on any one node (its cgroup's), KiB.
    pub max_rss_kb: Option<u64>,
}

/// Usage derived from a job record and the nodes it ran on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Usage {
    pub alloc_cores: u32,
    pub wall_raw_s: i64,
    /// Raw × factor: reference seconds.
    pub wall_norm_s: f64,
    pub cpu_raw_s: f64,
    pub cpu_norm_s: f64,
    pub core_hours: f64,
    pub norm_core_hours: f64,
    /// Σ over nodes of cores × HS06 per core × hours, when the nodes have benchmarks.
    pub hs06_hours: Option<f64>,
    /// HS06 per core of the cores the job held (the mean over its nodes).
    pub hs06_per_core: Option<f64>,
}

impl JobRecord {
    /// A job that completed with exit 0 holding `allocations` over [start,
    /// end), having asked for what it held for that long, named `job{id}` (user
    /// `u`, group `g`, account `a`, partition `batch`); override what matters
    /// with struct update syntax.
    pub fn completed(job_id: i64, submit: i64, start: i64, end: i64, allocations: Vec<AllocationRecord>) -> JobRecord {
        JobRecord {
            job_id,
            name: format!("job{job_id}"),
            user: "u".into(),
            group: "g".into(),
            account: "a".into(),
            partition: "batch".into(),
            submit,
            start,
            end,
            suspended_s: 0,
            state: JobStateTag::Completed,
            exit_code: 0,
            signal: 0,
            reason: String::new(),
            array: None,
            req_procs: allocations.iter().map(|a| a.cores).sum(),
            req_mem_mb: allocations.iter().map(|a| a.memory_mb).sum(),
            time_limit: end - start,
            factor: 1.0,
            cpu_s: None,
            energy_j: None,
            allocations,
            released: Vec::new(),
            max_rss_kb: None,
            steps: Vec::new(),
        }
    }

    pub fn usage(&self, nodes: &[NodeRecord]) -> Usage {
        let alloc_cores: u32 = self.allocations.iter().map(|a| a.cores).sum();
        // the charged wall time: suspended time is not use
        let wall = (self.end - self.start - self.suspended_s).max(0);
        let hours = wall as f64 / 3600.0;
        let cpu = self.cpu_s.unwrap_or(wall as f64 * alloc_cores as f64);
        let bench: Option<f64> = self
            .allocations
            .iter()
            .map(|a| nodes[a.node as usize].hs06_per_core.map(|b| b * a.cores as f64))
            .sum::<Option<f64>>();
        Usage {
            alloc_cores,
            wall_raw_s: wall,
            wall_norm_s: wall as f64 * self.factor,
            cpu_raw_s: cpu,
            cpu_norm_s: cpu * self.factor,
            core_hours: alloc_cores as f64 * hours,
            norm_core_hours: alloc_cores as f64 * hours * self.factor,
            hs06_hours: bench.map(|b| b * hours),
            hs06_per_core: bench.filter(|_| alloc_cores > 0).map(|b| b / alloc_cores as f64),
        }
    }
}

/// A power-budgeted run's power from `time` on (one row per change).
#[derive(Debug, Clone, PartialEq)]
pub struct PowerRow {
    pub time: i64,
    pub power_w: f64,
    pub budget_w: f64,
    pub busy_nodes: u32,
    /// CPU caps of the busy nodes: node-weighted mean, lowest, highest (None:
    /// no node busy).
    pub cap_mean_w: Option<f64>,
    pub cap_min_w: Option<f64>,
    pub cap_max_w: Option<f64>,
}
