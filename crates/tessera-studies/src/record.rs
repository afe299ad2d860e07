//! Writing a simulation to the accounting store: nodes, and every job with what it
//! held on each node.

use anyhow::{Context, Result};
use std::path::Path;
use tessera_accounting::store::{AllocationRecord, JobRecord, JobStateTag, NodeRecord, PowerRow, RunInfo, RunKind, Store};
use tessera_core::CanonicalUnit;
use tessera_sim::{Machine, PowerSetup, SimOutcome, Workload};
use tessera_workload::jobs::TraceJob;
use tessera_workload::swf::SwfRecord;

/// The nodes of the simulated machine: a cluster's nodes (each with its first
/// partition's canonical unit), one node holding a pool's processors, or a power
/// machine's pool ([`power_pool`]).
pub fn node_records(w: &Workload) -> Vec<NodeRecord> {
    match &w.machine {
        Machine::Pool(c) => vec![one_node("pool", "pool", *c)],
        Machine::Cluster { cluster, .. } => NodeRecord::from_cluster(cluster),
        Machine::Power(s) => vec![power_pool(s)],
    }
}

/// Cores of one node of a power machine (1 for a machine without a cluster file).
fn cores_per_node(s: &PowerSetup) -> u32 {
    s.hardware.cores_per_node.max(1)
}

/// A power machine as one record: PARM sizes jobs in whole nodes, resizes them
/// while they run and names no node, so its nodes are one pool. The record is
/// named by their hostlist (`nid[00001-05880]`; the powered part of it at a
/// fixed cap), has their node type (types joined by `+` should the pool mix
/// interchangeable types) and partition, and counts cores: the scheduled nodes
/// times the cores of a node. Its canonical unit is one node, so its true
/// overhead counts idle nodes, and the report counts its nodes as cores / unit.
pub fn power_pool(s: &PowerSetup) -> NodeRecord {
    let h = &s.hardware;
    let cpn = cores_per_node(s);
    let name = match (h.hostlist.is_empty(), s.nodes() < s.info.machine.nodes) {
        (true, _) => s.name.clone(),
        (false, false) => h.hostlist.clone(),
        (false, true) => format!("{} powered of {}", s.nodes(), h.hostlist),
    };
    NodeRecord {
        name,
        node_type: if h.node_types.is_empty() { "node".into() } else { h.node_types.join("+") },
        partition: power_partition(s),
        cores: s.nodes().saturating_mul(cpn),
        memory_mb: 0,
        gpus: 0,
        hs06_per_core: None,
        factor: 1.0,
        unit: CanonicalUnit { cores: cpn, memory_mb: 0, gpus: 0 },
        valid_from: 0,
    }
}

fn power_partition(s: &PowerSetup) -> String {
    if s.hardware.partition.is_empty() {
        s.name.clone()
    } else {
        s.hardware.partition.clone()
    }
}

/// A machine recorded as one node of `cores` plain cores (its own partition).
fn one_node(name: &str, node_type: &str, cores: u32) -> NodeRecord {
    NodeRecord {
        name: name.into(),
        node_type: node_type.into(),
        partition: name.into(),
        cores,
        memory_mb: 0,
        gpus: 0,
        hs06_per_core: None,
        factor: 1.0,
        unit: CanonicalUnit::CPU,
        valid_from: 0,
    }
}

/// SWF has users and groups but no accounts: the group stands for the account.
fn who(id: i64, prefix: &str) -> String {
    if id >= 0 {
        format!("{prefix}{id}")
    } else {
        "unknown".into()
    }
}

pub fn job_records<'a>(w: &'a Workload, o: &'a SimOutcome, records: &'a [SwfRecord]) -> impl Iterator<Item = JobRecord> + 'a {
    let partition_of = |j: &TraceJob| match &w.machine {
        Machine::Pool(_) => "pool".to_string(),
        Machine::Power(s) => power_partition(s),
        Machine::Cluster { cluster, .. } => cluster.partitions[w.machine.partition_of(j).map_or(cluster.default_partition_index(), |p| p as usize)].name.clone(),
    };
    // a power machine's jobs ask for whole nodes (their processors are nodes)
    let cpn = match &w.machine {
        Machine::Power(s) => cores_per_node(s),
        Machine::Pool(_) | Machine::Cluster { .. } => 1,
    };
    w.jobs.iter().enumerate().map(move |(i, j)| {
        let r = &records[w.record_index[i] as usize];
        let factor = o.factor_of(i);
        // a job killed at its limit ends by SIGTERM (Slurm's ExitCode 0:15)
        let (state, exit_code, signal) = if j.runtime > j.estimate {
            (JobStateTag::Timeout, 0, 15)
        } else {
            match r.status {
                0 => (JobStateTag::Failed, 1, 0),
                5 => (JobStateTag::Cancelled, 0, 0),
                _ => (JobStateTag::Completed, 0, 0),
            }
        };
        let allocations = match o.alloc.get(i) {
            Some(parts) => parts.map(|p| AllocationRecord { node: p.node, cores: p.cores, memory_mb: p.mem, gpus: p.gpus }).collect(),
            // a power machine's jobs hold whole nodes of its pool: their records
            // keep the size they started at (PARM resizes them later)
            None => {
                let held = o.power.as_ref().map_or(j.procs, |p| p.start_nodes[i].saturating_mul(cpn));
                vec![AllocationRecord { node: 0, cores: held, memory_mb: 0, gpus: 0 }]
            }
        };
        // SWF field 6 is CPU seconds per processor, measured at reference pace
        let cpu_s = (r.avg_cpu_time >= 0.0).then(|| r.avg_cpu_time * j.procs as f64 / factor);
        JobRecord {
            job_id: j.id,
            name: format!("job{}", j.id),
            user: who(r.user_id, "user"),
            group: who(r.group_id, "group"),
            account: who(r.group_id, "group"),
            partition: partition_of(j),
            submit: j.submit,
            start: o.start[i],
            end: o.end[i],
            suspended_s: o.suspended_of(i),
            state,
            exit_code,
            signal,
            reason: String::new(),
            array: None,
            req_procs: j.procs.saturating_mul(cpn),
            req_mem_mb: j.mem_per_proc_mb * j.procs as u64,
            time_limit: j.estimate,
            factor,
            cpu_s,
            energy_j: o.power.as_ref().map(|p| p.job_energy_j[i]),
            allocations,
            released: o.released.get(&(i as u32)).cloned().unwrap_or_default(),
            max_rss_kb: None,
            steps: Vec::new(),
        }
    })
}

/// Record a simulation in the store at `path`; returns the run id.
pub fn record(path: &Path, site: &str, label: &str, policy: &str, epoch_offset: i64, w: &Workload, o: &SimOutcome, records: &[SwfRecord]) -> Result<i64> {
    let mut store = Store::open(path)?;
    record_into(&mut store, site, label, policy, epoch_offset, w, o, records).with_context(|| format!("recording the run in {}", path.display()))
}

/// Record a simulation (with its power over time, if it ran under a budget) in
/// `store`; returns the run id.
#[allow(clippy::too_many_arguments)]
pub fn record_into(store: &mut Store, site: &str, label: &str, policy: &str, epoch_offset: i64, w: &Workload, o: &SimOutcome, records: &[SwfRecord]) -> Result<i64> {
    let cluster = match &w.machine {
        Machine::Pool(c) => format!("pool-{c}"),
        Machine::Cluster { cluster, .. } => cluster.name.clone(),
        Machine::Power(s) => s.name.clone(),
    };
    let run = RunInfo {
        kind: RunKind::Simulation,
        label: label.to_string(),
        site: site.to_string(),
        cluster,
        policy: policy.to_string(),
        epoch_offset,
        recorded_at: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64),
    };
    let nodes = node_records(w);
    let power: Vec<PowerRow> = o
        .power
        .iter()
        .flat_map(|p| {
            p.timeline.iter().map(|s| PowerRow {
                time: s.t,
                power_w: s.power_w,
                budget_w: p.budget_w,
                busy_nodes: s.busy_nodes,
                cap_mean_w: s.caps_w.map(|c| c.0),
                cap_min_w: s.caps_w.map(|c| c.1),
                cap_max_w: s.caps_w.map(|c| c.2),
            })
        })
        .collect();
    Ok(store.record_run_with_power(&run, &nodes, &power, job_records(w, o, records))?)
}
