//! Job steps (`tessera run`, Slurm's srun): where a step's tasks go among
//! its job's nodes, what each node's agent is told, and how the step ended,
//! from its nodes' reports.
//!
//! A step is journaled when it is admitted (`Event::StepStart`, with its
//! layout) and when a node's tasks have all ended (`Event::StepEnded`); the
//! job's steps leave with it into the accounting store (`JOBID.0`, ...).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tessera_accounting::store::{JobStateTag, StepRecord};
use tessera_proto::api::{CgroupUsage, JobStateCode, LaunchFailure, StepExit, StepInfo, StepRequest};

/// A step as the controller knows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepMeta {
    pub id: u32,
    pub req: Box<StepRequest>,
    /// Its nodes (cluster indices), and the tasks on each, in task order.
    pub nodes: Vec<u32>,
    pub tasks_per_node: Vec<u32>,
    pub start: i64,
    /// Each node's end, as its agent reported it (by position in `nodes`).
    pub ended: Vec<Option<NodeEnd>>,
    /// A signal its client forwarded (the step was interrupted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signalled: Option<i32>,
    /// How it ended when its job ended first (NODE_FAIL, CANCELLED).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut: Option<(JobStateCode, i64)>,
}

/// How a step's tasks on one node ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeEnd {
    pub end: i64,
    pub tasks: Vec<(u32, Option<i32>, Option<i32>)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<CgroupUsage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<LaunchFailure>,
}

impl NodeEnd {
    pub fn of(x: &StepExit) -> NodeEnd {
        NodeEnd { end: x.end, tasks: x.tasks.clone(), usage: x.usage, failure: x.failure }
    }
}

/// Where a step's tasks go: `ntasks` tasks of `cpt` cores each on the job's
/// nodes (`cores` each, in the job's order), on `nodes` of them (default:
/// one per task, at most all), at most `per_node` on each; tasks in blocks,
/// as even as the nodes' room allows. The error gives the numbers.
pub fn layout(cores: &[u32], ntasks: u32, nodes: Option<u32>, cpt: u32, per_node: Option<u32>) -> Result<Vec<u32>, String> {
    let total: u64 = cores.iter().map(|&c| c as u64).sum();
    let cpt = cpt.max(1);
    let want = ntasks as u64 * cpt as u64;
    let held = format!("the allocation holds {total} cores on {} node{}", cores.len(), if cores.len() == 1 { "" } else { "s" });
    if ntasks == 0 {
        return Err("-n 0: a step runs at least one task".into());
    }
    if want > total {
        return Err(format!("{ntasks} tasks × {cpt} cores = {want} cores: {held}"));
    }
    let m = nodes.unwrap_or_else(|| ntasks.min(cores.len() as u32)) as usize;
    if m == 0 || m > cores.len() {
        return Err(format!("-N {m}: {held}"));
    }
    if m > ntasks as usize {
        return Err(format!("-N {m} with {ntasks} tasks: each node runs one task at least"));
    }
    let room: Vec<u32> = cores[..m].iter().map(|&c| (c / cpt).min(per_node.unwrap_or(u32::MAX))).collect();
    if room.contains(&0) || room.iter().map(|&r| r as u64).sum::<u64>() < ntasks as u64 {
        let limit = per_node.map_or(String::new(), |p| format!(", at most {p} per node"));
        return Err(format!("{ntasks} tasks × {cpt} cores do not fit on the first {m} of the allocation's nodes ({} cores{limit}): {held}", cores[..m].iter().map(|c| c.to_string()).collect::<Vec<_>>().join(" + ")));
    }
    // even shares, then what a node has no room for to the next with room
    let (base, extra) = (ntasks / m as u32, ntasks % m as u32);
    let mut counts: Vec<u32> = (0..m as u32).map(|i| base + (i < extra) as u32).collect();
    let mut spill = 0;
    for (c, &r) in counts.iter_mut().zip(&room) {
        if *c > r {
            spill += *c - r;
            *c = r;
        }
    }
    for (c, &r) in counts.iter_mut().zip(&room) {
        let take = spill.min(r - *c);
        *c += take;
        spill -= take;
    }
    debug_assert_eq!(spill, 0);
    Ok(counts)
}

/// A hostlist's Slurm form of tasks per node: `2(x3),1`.
pub fn tasks_per_node_text(counts: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < counts.len() {
        let mut j = i;
        while j + 1 < counts.len() && counts[j + 1] == counts[i] {
            j += 1;
        }
        parts.push(if j > i { format!("{}(x{})", counts[i], j - i + 1) } else { counts[i].to_string() });
        i = j + 1;
    }
    parts.join(",")
}

/// The step's environment: the client's, with the step's variables (Slurm's
/// and their `TESSERA_` twins); each task's own are the agent's.
pub fn step_env(s: &StepMeta, job: u64, nodelist: &str) -> BTreeMap<String, String> {
    let mut env = s.req.env.clone();
    let ntasks: u32 = s.tasks_per_node.iter().sum();
    let vars = [
        ("JOB_ID", job.to_string()),
        ("STEP_ID", s.id.to_string()),
        ("STEPID", s.id.to_string()),
        ("STEP_NUM_TASKS", ntasks.to_string()),
        ("STEP_NUM_NODES", s.nodes.len().to_string()),
        ("STEP_NODELIST", nodelist.to_string()),
        ("STEP_TASKS_PER_NODE", tasks_per_node_text(&s.tasks_per_node)),
        ("NTASKS", ntasks.to_string()),
        ("NPROCS", ntasks.to_string()),
        ("NNODES", s.nodes.len().to_string()),
        ("NODELIST", nodelist.to_string()),
        ("TASKS_PER_NODE", tasks_per_node_text(&s.tasks_per_node)),
        ("CPUS_PER_TASK", s.req.cpus_per_task.max(1).to_string()),
    ];
    for prefix in ["SLURM_", "TESSERA_"] {
        for (k, v) in &vars {
            env.insert(format!("{prefix}{k}"), v.clone());
        }
    }
    env.insert("SLURM_JOBID".into(), job.to_string());
    env
}

impl StepMeta {
    /// Its end, once every node reported (or its job cut it short).
    pub fn end(&self) -> Option<i64> {
        if let Some((_, at)) = self.cut {
            return Some(at);
        }
        self.ended.iter().map(|e| e.as_ref().map(|e| e.end)).collect::<Option<Vec<i64>>>().map(|v| v.into_iter().max().unwrap_or(self.start))
    }

    /// How it ended: its job's cut, a launch that failed, an out-of-memory
    /// kill, a signal, a non-zero exit, or none of these.
    pub fn outcome(&self) -> (JobStateCode, Option<i32>, Option<i32>, String) {
        let ends: Vec<&NodeEnd> = self.ended.iter().flatten().collect();
        let code = ends.iter().flat_map(|e| e.tasks.iter().filter_map(|t| t.1)).max();
        let signal = ends.iter().flat_map(|e| e.tasks.iter().filter_map(|t| t.2)).next();
        if let Some((state, _)) = self.cut {
            return (state, code, signal, "its job ended first".into());
        }
        if self.end().is_none() {
            return (JobStateCode::Running, None, None, String::new());
        }
        if let Some(f) = ends.iter().find_map(|e| e.failure) {
            return (JobStateCode::Failed, code, signal, f.describe(&self.req.workdir, "", ""));
        }
        if ends.iter().any(|e| e.usage.is_some_and(|u| u.oom_kills > 0)) {
            return (JobStateCode::OutOfMemory, code, signal, String::new());
        }
        let state = match (signal, code) {
            (Some(_), _) if self.signalled.is_some() => JobStateCode::Cancelled,
            (Some(_), _) | (_, Some(1..)) => JobStateCode::Failed,
            (_, Some(i32::MIN..=-1)) => JobStateCode::Failed,
            _ => JobStateCode::Completed,
        };
        (state, code, signal, String::new())
    }

    pub fn info(&self, job: u64, nodelist: &str) -> StepInfo {
        let (state, exit_code, signal, reason) = self.outcome();
        StepInfo { job, step: self.id, name: self.req.name.clone(), state, nodelist: nodelist.to_string(), ntasks: self.req.ntasks, tasks_per_node: self.tasks_per_node.clone(), exit_code, signal, reason }
    }

    /// Its accounting record, its job having ended at `job_end` as `job_state`
    /// (a step still running then is cut short so).
    pub fn record(&self, nodelist: &str, job_end: i64, job_state: JobStateCode) -> StepRecord {
        let mut s = self.clone();
        if s.end().is_none() {
            s.cut = Some((if job_state == JobStateCode::NodeFail { JobStateCode::NodeFail } else { JobStateCode::Cancelled }, job_end));
        }
        let (state, code, signal, _) = s.outcome();
        let usages: Vec<CgroupUsage> = s.ended.iter().flatten().filter_map(|e| e.usage).collect();
        StepRecord {
            step: s.id.to_string(),
            name: s.req.name.clone(),
            node_list: nodelist.to_string(),
            ntasks: s.req.ntasks,
            start: s.start,
            end: s.end().unwrap_or(job_end).max(s.start),
            state: tag(state),
            exit_code: code.unwrap_or(0).max(0),
            signal: signal.unwrap_or(0).max(0),
            cpu_s: (!usages.is_empty()).then(|| usages.iter().map(|u| u.cpu_s).sum()),
            max_rss_kb: usages.iter().map(|u| u.max_rss_kb).max(),
        }
    }
}

/// The accounting store's tag of a state.
pub fn tag(s: JobStateCode) -> JobStateTag {
    match s {
        JobStateCode::Completed => JobStateTag::Completed,
        JobStateCode::Cancelled => JobStateTag::Cancelled,
        JobStateCode::Timeout => JobStateTag::Timeout,
        JobStateCode::NodeFail => JobStateTag::NodeFail,
        JobStateCode::OutOfMemory => JobStateTag::OutOfMemory,
        JobStateCode::Failed | JobStateCode::Pending | JobStateCode::Running | JobStateCode::Suspended | JobStateCode::Completing => JobStateTag::Failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_go_in_even_blocks_within_each_nodes_room() {
        assert_eq!(layout(&[8, 8], 4, Some(2), 1, None), Ok(vec![2, 2]));
        assert_eq!(layout(&[8, 8], 3, Some(2), 1, None), Ok(vec![2, 1]));
        // by default one node per task, at most all of them
        assert_eq!(layout(&[8, 8], 1, None, 1, None), Ok(vec![1]));
        assert_eq!(layout(&[8, 8], 16, None, 1, None), Ok(vec![8, 8]));
        // a small node's excess goes to the next with room
        assert_eq!(layout(&[2, 8], 6, None, 1, None), Ok(vec![2, 4]));
        assert_eq!(layout(&[4, 4], 4, Some(2), 2, None), Ok(vec![2, 2]));
        assert_eq!(layout(&[8, 8], 4, Some(2), 1, Some(3)), Ok(vec![2, 2]));
    }

    #[test]
    fn a_step_larger_than_its_allocation_is_refused_with_the_numbers() {
        let e = layout(&[8, 8], 17, None, 1, None).unwrap_err();
        assert!(e.contains("17 tasks × 1 cores = 17 cores") && e.contains("16 cores on 2 nodes"), "{e}");
        let e = layout(&[8, 8], 4, Some(3), 1, None).unwrap_err();
        assert!(e.contains("-N 3"), "{e}");
        let e = layout(&[8, 8], 1, Some(2), 1, None).unwrap_err();
        assert!(e.contains("one task at least"), "{e}");
        let e = layout(&[2, 8], 6, Some(1), 1, None).unwrap_err();
        assert!(e.contains("do not fit on the first 1"), "{e}");
    }

    #[test]
    fn tasks_per_node_in_slurms_form() {
        assert_eq!(tasks_per_node_text(&[2, 2, 2, 1]), "2(x3),1");
        assert_eq!(tasks_per_node_text(&[4]), "4");
    }
}
