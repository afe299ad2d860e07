//! An imported sacct history, on a cluster: a workload the simulator replays
//! (SWF) and records for the accounting store (normalized usage, overhead,
//! bills and APEL come from them as from any run).
//!
//! sacct does not say how a job's processors, memory and GPUs were spread
//! over its nodes; they are taken as spread evenly (the first nodes one more
//! where they do not divide), which is how Slurm lays out a job that does not
//! ask otherwise.

use crate::conf::{ImportError, Place};
use crate::sacct::{Ended, History, Job, Limit};
use std::collections::BTreeMap;
use tessera_accounting::store::{AllocationRecord, JobRecord, JobStateTag, StepRecord};
use tessera_core::cluster::Cluster;
use tessera_workload::SwfRecord;

/// Names numbered from 1 in order of first appearance (SWF's user, group
/// and queue numbers).
#[derive(Default)]
struct Numbers(BTreeMap<String, i64>, Vec<String>);

impl Numbers {
    fn of(&mut self, name: &str) -> i64 {
        if let Some(&n) = self.0.get(name) {
            return n;
        }
        self.1.push(name.to_string());
        let n = self.1.len() as i64;
        self.0.insert(name.to_string(), n);
        n
    }
}

/// The history as SWF: the header lines (comments naming the users, accounts
/// and partitions behind the numbers; field 13, the group, is the Slurm
/// account: the simulator charges a group's account) and one record per job, times from the
/// first submission. A job's queue is its partition's `swf_queue` in the
/// cluster file (`tessera import slurm-conf` numbers partitions so), else
/// its position there.
pub fn swf(h: &History, c: &Cluster, source: &str) -> (Vec<String>, Vec<SwfRecord>) {
    let epoch = h.jobs.iter().map(|j| j.submit).min().unwrap_or(0);
    let (mut users, mut accounts) = (Numbers::default(), Numbers::default());
    let queue_of: BTreeMap<&str, i64> = c.partitions.iter().enumerate().map(|(i, p)| (p.name.as_str(), p.swf_queue.unwrap_or(i as i64 + 1))).collect();
    let mut out = Vec::with_capacity(h.jobs.len());
    for j in &h.jobs {
        let limit = limit_s(j, c);
        let run = j.start.map(|s| j.end - s - j.suspended_s);
        let procs = if j.alloc_cpus > 0 { j.alloc_cpus } else { j.req_cpus };
        out.push(SwfRecord {
            job_number: j.id,
            submit_time: j.submit - epoch,
            wait_time: j.start.map_or(-1, |s| s - j.submit),
            run_time: run.map_or(-1, |r| r.max(0)),
            allocated_procs: if j.start.is_some() { j.alloc_cpus as i64 } else { -1 },
            avg_cpu_time: match (j.cpu_s, j.alloc_cpus) {
                (Some(cpu), n) if n > 0 => cpu / n as f64,
                _ => -1.0,
            },
            used_memory: -1.0,
            requested_procs: procs as i64,
            requested_time: limit.unwrap_or(-1),
            // KB per processor
            requested_memory: if j.req_mem_mb > 0 && procs > 0 { i64::try_from(j.req_mem_mb.saturating_mul(1024) / procs as u64).unwrap_or(i64::MAX) } else { -1 },
            status: match j.ended {
                Ended::Completed => 1,
                Ended::Cancelled | Ended::Preempted | Ended::Deadline => 5,
                _ => 0,
            },
            user_id: users.of(&j.user),
            // the account a job charges, in the field the simulator charges by
            group_id: accounts.of(&j.account),
            executable: -1,
            queue: queue_of.get(j.partition.as_str()).copied().unwrap_or(-1),
            partition: -1,
            preceding_job: -1,
            think_time: -1,
        });
    }
    let mut header = vec![
        format!("Computer: {}", if c.name.is_empty() { "a Slurm cluster" } else { &c.name }),
        format!("Conversion: tessera import sacct from {source}"),
        format!("UnixStartTime: {epoch}"),
        format!("MaxJobs: {}", h.jobs.len()),
        format!("MaxRecords: {}", h.jobs.len()),
        format!("MaxNodes: {}", c.nodes.len()),
        format!("MaxProcs: {}", c.total_cores()),
        format!("MaxQueues: {}", c.partitions.len()),
    ];
    for (i, p) in c.partitions.iter().enumerate() {
        header.push(format!("Note: queue {} = {}", p.swf_queue.unwrap_or(i as i64 + 1), p.name));
    }
    for (i, u) in users.1.iter().enumerate() {
        header.push(format!("Note: user {} = {u}", i + 1));
    }
    for (i, a) in accounts.1.iter().enumerate() {
        header.push(format!("Note: account {} = {a}", i + 1));
    }
    (header, out)
}

/// A job's limit in seconds (None: unlimited).
fn limit_s(j: &Job, c: &Cluster) -> Option<i64> {
    match j.limit {
        Limit::Seconds(s) => Some(s),
        Limit::Unlimited => None,
        Limit::Partition => c.partitions.iter().find(|p| p.name == j.partition).and_then(|p| p.max_time_s),
    }
}

fn tag(e: Ended) -> JobStateTag {
    match e {
        Ended::Completed => JobStateTag::Completed,
        Ended::Failed | Ended::BootFail | Ended::Deadline => JobStateTag::Failed,
        Ended::Cancelled | Ended::Preempted => JobStateTag::Cancelled,
        Ended::Timeout => JobStateTag::Timeout,
        Ended::NodeFail => JobStateTag::NodeFail,
        Ended::OutOfMemory => JobStateTag::OutOfMemory,
    }
}

fn step_tag(state: &str) -> JobStateTag {
    crate::sacct::ended(state).map_or(JobStateTag::Cancelled, tag)
}

/// `total` spread over `n` parts, the first ones one more where it does not divide.
fn spread(total: u64, n: usize, i: usize) -> u64 {
    let n = n as u64;
    total / n + u64::from((i as u64) < total % n)
}

/// The history as accounting records on `c`'s nodes, times from the first
/// submission (returned too: the run's epoch). A job on a node the cluster
/// does not have is an error naming its line.
pub fn records(h: &History, c: &Cluster, file: &str) -> Result<(i64, Vec<JobRecord>), ImportError> {
    let epoch = h.jobs.iter().map(|j| j.submit).min().unwrap_or(0);
    let index: BTreeMap<&str, u32> = c.nodes.iter().enumerate().map(|(i, n)| (n.name.as_str(), i as u32)).collect();
    let mut out = Vec::with_capacity(h.jobs.len());
    for j in &h.jobs {
        let at = Place { file: file.to_string(), line: j.line };
        let mut allocations = Vec::with_capacity(j.nodes.len());
        let mut factor = f64::INFINITY;
        for (i, name) in j.nodes.iter().enumerate() {
            let Some(&node) = index.get(name.as_str()) else {
                return Err(ImportError::new(&at, "NodeList", format!("node {} is not in the cluster file: import the site's slurm.conf with `tessera import slurm-conf` and give it with --cluster", crate::conf::q(name))));
            };
            let n = &c.nodes[node as usize];
            factor = factor.min(c.node_types[n.node_type].factor);
            allocations.push(AllocationRecord {
                node,
                cores: spread(j.alloc_cpus as u64, j.nodes.len(), i) as u32,
                memory_mb: spread(j.alloc_mem_mb, j.nodes.len(), i),
                gpus: spread(j.alloc_gpus as u64, j.nodes.len(), i) as u32,
            });
        }
        let start = j.start.unwrap_or(j.end);
        let rel = |t: Option<i64>| t.map_or(start - epoch, |t| t - epoch);
        out.push(JobRecord {
            job_id: j.id,
            name: j.name.clone(),
            user: j.user.clone(),
            group: j.group.clone(),
            account: j.account.clone(),
            partition: j.partition.clone(),
            submit: j.submit - epoch,
            start: start - epoch,
            end: j.end - epoch,
            suspended_s: j.suspended_s,
            state: tag(j.ended),
            exit_code: j.exit_code,
            signal: j.signal,
            reason: if j.requeues > 0 { format!("requeued {} times", j.requeues) } else { String::new() },
            array: j.array,
            req_procs: j.req_cpus,
            req_mem_mb: j.req_mem_mb,
            time_limit: limit_s(j, c).unwrap_or(0),
            factor: if factor.is_finite() { factor } else { 1.0 },
            cpu_s: j.cpu_s,
            energy_j: None,
            allocations,
            released: Vec::new(),
            max_rss_kb: None,
            steps: j
                .steps
                .iter()
                .map(|s| StepRecord {
                    step: s.step.clone(),
                    name: s.name.clone(),
                    node_list: s.node_list.clone(),
                    ntasks: s.ntasks,
                    start: rel(s.start),
                    end: rel(s.end.or(s.start)),
                    state: step_tag(&s.state),
                    exit_code: s.exit_code,
                    signal: s.signal,
                    cpu_s: s.cpu_s,
                    max_rss_kb: None,
                })
                .collect(),
        });
    }
    Ok((epoch, out))
}
