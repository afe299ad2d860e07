//! Turning SWF records into the job list the simulator replays, for a machine.

use std::collections::BTreeMap;
use std::sync::Arc;
use crate::power::{stretch, PowerMode, PowerSetup};
use tessera_core::power::PowerJob;
use tessera_core::{scaled, Cluster, Engine, JobId, JobSpec, NodeSetSpec, PolicyKind, Time, MAX_TIME};
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
    /// Accounts, fair share and multifactor priority (None: submission order).
    pub sharing: Option<Arc<crate::share::SimSharing>>,
    /// Advance reservations made at the trace's start (`--reservations`).
    pub reservations: Vec<tessera_core::ReservationSpec>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkloadError {
    #[error("{trace}: the header has neither MaxProcs nor MaxNodes; give the machine size with --capacity N or a --cluster file")]
    NoMachineSize { trace: String },
    #[error("machine size {0} is not usable: expected 1..=4294967295 processors")]
    BadCapacity(u64),
    #[error("{trace}: the replay could run past 2^42 = {MAX_TIME} s, the end of the engine's clock: the last job is submitted at {last_submit} s, and the jobs could take up to {work} s more (run one after another on the slowest nodes, with the longest limit); expected submit times and run times that add up to at most 2^42 s")]
    BeyondTimeRange { trace: String, last_submit: i64, work: i128 },
}

impl Workload {
    /// Check that replaying the workload keeps the simulated clock within the
    /// engine's range (2^42 s), which the engine would otherwise reject part way.
    ///
    /// The bound is the last submission plus every job's run on the slowest nodes
    /// (its trace runtime, cut at its limit), as if no two jobs ran at once, plus
    /// the longest limit (the engine wakes when a limit expires) and any node-set
    /// delay: a scheduler never leaves the machine idle while a job waits, except
    /// for such a delay. For PARM a job's run is its time on its fewest nodes at
    /// the lowest cap (the cost of resizing is not counted).
    pub fn check_time_range(&self, trace: &str) -> Result<(), WorkloadError> {
        let mut range = TimeRange::new(&self.machine);
        for (i, j) in self.jobs.iter().enumerate() {
            range.add(j, self.power_jobs.get(i));
        }
        range.check(trace)
    }
}

/// The bound of [`Workload::check_time_range`], summed job by job: the jobs of a
/// workload read so far bound the clock of their replay.
#[derive(Clone, Debug)]
pub struct TimeRange {
    slowest: f64,
    delay: Time,
    parm_cap: Option<f64>,
    last_submit: Option<Time>,
    work: i128,
    limit: i128,
}

impl TimeRange {
    pub fn new(machine: &Machine) -> TimeRange {
        let (slowest, delay) = match machine {
            Machine::Pool(_) | Machine::Power(_) => (1.0, 0),
            Machine::Cluster { cluster, .. } => (cluster.node_types.iter().map(|t| t.factor).fold(f64::INFINITY, f64::min), cluster.nodeset_delay),
        };
        let parm_cap = match machine {
            Machine::Power(s) if matches!(s.mode, PowerMode::Parm(_)) => s.info.machine.cap_levels_w.first().copied(),
            _ => None,
        };
        TimeRange { slowest, delay, parm_cap, last_submit: None, work: 0, limit: 0 }
    }

    /// Count job `j` (with its PASS model on a PARM machine).
    pub fn add(&mut self, j: &TraceJob, power: Option<&PowerJob>) {
        self.last_submit = Some(self.last_submit.map_or(j.submit, |s| s.max(j.submit)));
        let run = match (self.parm_cap, power) {
            (Some(cap), Some(pj)) => pj.time(pj.n_min, cap).ceil().min(i64::MAX as f64) as i64,
            _ => scaled(j.effective_runtime(), self.slowest),
        };
        self.work += run as i128 + self.delay as i128;
        self.limit = self.limit.max(scaled(j.estimate, self.slowest) as i128);
    }

    /// An error if the jobs counted could take the clock past 2^42 s.
    pub fn check(&self, trace: &str) -> Result<(), WorkloadError> {
        let Some(last_submit) = self.last_submit else { return Ok(()) };
        let work = self.work + if self.parm_cap.is_some() { 0 } else { self.limit };
        if last_submit as i128 + work > MAX_TIME as i128 {
            return Err(WorkloadError::BeyondTimeRange { trace: trace.to_string(), last_submit, work });
        }
        Ok(())
    }
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

    /// What a trace job asks of this machine: its partition; since SWF has
    /// no GPU field, its partition's `default_gpus_per_node`; and its
    /// requested memory, or the partition's `def_mem_per_cpu` if it gives
    /// none.
    pub fn spec(&self, j: &TraceJob) -> JobSpec {
        let partition = self.partition_of(j);
        let spec = spec_of(j);
        let (gpus_per_node, mem_per_proc_mb) = match self {
            Machine::Cluster { cluster, .. } => {
                let p = &cluster.partitions[partition.map_or(cluster.default_partition_index(), |p| p as usize)];
                (p.default_gpus_per_node, if spec.mem_per_proc_mb == 0 { p.def_mem_per_cpu_mb } else { spec.mem_per_proc_mb })
            }
            Machine::Pool(_) | Machine::Power(_) => (0, spec.mem_per_proc_mb),
        };
        JobSpec { partition, gpus_per_node, mem_per_proc_mb, ..spec }
    }
}

/// Apply the job semantics to every record for a pool of `capacity` processors.
pub fn prepare(records: &[SwfRecord], capacity: u32) -> Workload {
    prepare_on(records, Machine::Pool(capacity))
}

/// Apply the job semantics to every record for `machine`.
pub fn prepare_on(records: &[SwfRecord], machine: Machine) -> Workload {
    prepare_stream(records.iter().cloned(), machine)
}

/// [`prepare_on`] from records as they are read, none of them kept on a pool
/// or a cluster (a power machine's preparation reads them all first). The
/// record index of a job is its record's position in the stream.
pub fn prepare_stream(records: impl Iterator<Item = SwfRecord>, machine: Machine) -> Workload {
    let mut prep = match Preparer::new(&machine) {
        Ok(prep) => prep,
        Err(setup) => return prepare_power(&records.collect::<Vec<_>>(), setup),
    };
    let mut keyed: Vec<(TraceJob, u32)> = Vec::with_capacity(records.size_hint().0);
    keyed.extend(records.enumerate().filter_map(|(i, r)| prep.take(&r).map(|j| (j, i as u32))));
    let (jobs, record_index) = in_queue_order(keyed);
    prep.workload(jobs, record_index, machine)
}

/// Jobs with their records' indices, sorted by [`queue_key`], as a
/// [`Workload`] keeps them: the jobs, and each one's record index.
pub fn in_queue_order(mut keyed: Vec<(TraceJob, u32)>) -> (Vec<TraceJob>, Vec<u32>) {
    keyed.sort_by_key(|(j, i)| queue_key(j, *i));
    let record_index = keyed.iter().map(|k| k.1).collect();
    // the jobs take the keyed list's place (collected in place), not a copy beside it
    let mut jobs: Vec<TraceJob> = keyed.into_iter().map(|k| k.0).collect();
    jobs.shrink_to_fit();
    (jobs, record_index)
}

/// A job's place in the queue order of a [`Workload`]: submit time, job id,
/// then its record's place in the file.
pub fn queue_key(j: &TraceJob, record: u32) -> (i64, i64, u32) {
    (j.submit, j.id, record)
}

/// The job semantics of a pool or a cluster (not a power machine), one record
/// at a time: the job a record becomes, or the reason it is skipped, counted.
pub struct Preparer {
    capacity: u32,
    /// An engine of the cluster, asked whether a job could ever run there.
    probe: Option<Engine>,
    /// Processors a job may ask for in each partition.
    partition_cores: Vec<u64>,
    /// Each partition's longest time limit.
    max_time: Vec<Option<Time>>,
    default_part: usize,
    machine: Machine,
    skipped: BTreeMap<SkipReason, u64>,
}

impl Preparer {
    /// The preparation for `machine`; a power machine's setup back, whose
    /// jobs are drawn from all the records ([`prepare_power`]).
    pub fn new(machine: &Machine) -> Result<Preparer, Arc<PowerSetup>> {
        let (capacity, probe, partition_cores, max_time, default_part) = match machine {
            Machine::Pool(c) => (*c, None, vec![*c as u64], vec![None], 0),
            Machine::Power(setup) => return Err(setup.clone()),
            Machine::Cluster { cluster, .. } => {
                // processors a job may ask for in each partition: whole nodes x cores
                // per node, or all cores
                let cores = cluster
                    .partitions
                    .iter()
                    .map(|p| if p.exclusive { p.nodes.len() as u64 * p.cores_per_node as u64 } else { p.nodes.iter().map(|&n| cluster.nodes[n].cores as u64).sum() })
                    .collect();
                let max_time = cluster.partitions.iter().map(|p| p.max_time_s).collect();
                (cluster.total_cores().min(u32::MAX as u64) as u32, Engine::with_cluster(PolicyKind::Fcfs, cluster).ok(), cores, max_time, cluster.default_partition_index())
            }
        };
        Ok(Preparer { capacity, probe, partition_cores, max_time, default_part, machine: machine.clone(), skipped: BTreeMap::new() })
    }

    /// The job record `r` becomes, or None (its skip reason counted).
    pub fn take(&mut self, r: &SwfRecord) -> Option<TraceJob> {
        let reason = match job_from_record(r) {
            Err(reason) => reason,
            Ok(j) => {
                let m = &self.machine;
                let part = m.partition_of(&j).map_or(self.default_part, |p| p as usize);
                if j.procs as u64 > self.partition_cores[part] {
                    SkipReason::LargerThanMachine
                } else if self.max_time.get(part).copied().flatten().is_some_and(|t| m.spec(&j).estimate > t) {
                    SkipReason::OverPartitionTimeLimit
                } else if self.probe.as_ref().is_none_or(|e| e.can_run(&m.spec(&j), None).is_ok()) {
                    return Some(j);
                } else {
                    SkipReason::MemoryExceedsNodes
                }
            }
        };
        *self.skipped.entry(reason).or_insert(0) += 1;
        None
    }

    /// The workload of the jobs taken (in queue order, with their records' indices).
    pub fn workload(self, jobs: Vec<TraceJob>, record_index: Vec<u32>, machine: Machine) -> Workload {
        Workload { jobs, record_index, skipped: self.skipped, capacity: self.capacity, machine, power_jobs: Vec::new(), sharing: None, reservations: Vec::new() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: i64, submit: i64, run: i64, limit: i64) -> SwfRecord {
        SwfRecord { submit_time: submit, run_time: run, requested_time: limit, allocated_procs: 1, ..SwfRecord::unknown(id) }
    }

    #[test]
    fn a_replay_that_could_pass_two_to_the_42_is_an_error() {
        // work 100 + 100, longest limit 200: the clock can reach the last submit + 400
        let at = |last: i64| prepare(&[rec(1, 0, 100, 200), rec(2, last, 100, 200)], 8).check_time_range("t.swf");
        assert_eq!(at(MAX_TIME - 400), Ok(()));
        let e = at(MAX_TIME - 399).unwrap_err();
        assert_eq!(e, WorkloadError::BeyondTimeRange { trace: "t.swf".into(), last_submit: MAX_TIME - 399, work: 400 });
        assert!(e.to_string().starts_with("t.swf: the replay could run past 2^42 = 4398046511104 s"), "{e}");
        // a job killed at its limit long before the clock's end still wakes the engine there
        assert!(prepare(&[rec(1, 100, 10, MAX_TIME)], 8).check_time_range("t.swf").is_err());
        // on a cluster, on its slowest nodes (factor 0.5: twice as long)
        let half = MAX_TIME / 4 + 1;
        let recs = [rec(1, 0, half, half)];
        assert_eq!(prepare(&recs, 8).check_time_range("t.swf"), Ok(()));
        let toml = "[[nodetype]]\nname = \"fast\"\ncount = 1\ncores = 8\nhs06_per_core = 10\n\n[[nodetype]]\nname = \"slow\"\ncount = 1\ncores = 8\nhs06_per_core = 5\n";
        let cluster = Arc::new(Cluster::from_toml(toml, "c.toml").unwrap());
        let w = prepare_on(&recs, Machine::Cluster { cluster, partition: None, nodeset: None });
        assert!(matches!(w.check_time_range("t.swf"), Err(WorkloadError::BeyondTimeRange { work, .. }) if work == 4 * half as i128));
    }
}

/// Apply the job semantics and the power rule to every record: jobs are sized in
/// nodes, and at a fixed cap their runtimes and limits are stretched by their
/// slowdown at that cap.
pub fn prepare_power(records: &[SwfRecord], setup: Arc<PowerSetup>) -> Workload {
    let mut skipped = BTreeMap::new();
    let cpn = setup.info.cores_per_node as u64;
    let limit = setup.size_limit();
    let cpu_max = setup.info.cpu_max_w;
    let mut keyed: Vec<(TraceJob, PowerJob, u32)> = Vec::with_capacity(records.len());
    for (i, r) in records.iter().enumerate() {
        let j = match job_from_record(r) {
            Ok(j) => j,
            Err(reason) => {
                *skipped.entry(reason).or_insert(0) += 1;
                continue;
            }
        };
        let n_max = (j.procs as u64).div_ceil(cpn);
        if n_max > limit as u64 {
            *skipped.entry(SkipReason::LargerThanMachine).or_insert(0) += 1;
            continue;
        }
        let pj = setup.rule.job(&j, n_max as u32, cpu_max);
        let mut job = TraceJob { procs: n_max as u32, ..j };
        if let PowerMode::FixedCap { cap_w } = setup.mode {
            let s = pj.app.slowdown(cap_w) / pj.app.slowdown(cpu_max);
            job.runtime = stretch(job.runtime, s);
            job.estimate = stretch(job.estimate, s);
        }
        keyed.push((job, pj, i as u32));
    }
    keyed.sort_by_key(|(j, _, i)| (j.submit, j.id, *i));
    let capacity = setup.nodes();
    let mut jobs = Vec::with_capacity(keyed.len());
    let mut power_jobs = Vec::with_capacity(keyed.len());
    let mut record_index = Vec::with_capacity(keyed.len());
    for (j, pj, i) in keyed {
        jobs.push(j);
        power_jobs.push(pj);
        record_index.push(i);
    }
    Workload { jobs, record_index, skipped, capacity, machine: Machine::Power(setup), power_jobs, sharing: None, reservations: Vec::new() }
}
