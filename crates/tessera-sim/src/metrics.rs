//! The run summary: the standard metrics of parallel job scheduling.
//!
//! Definitions (per job: wait = start - submit, run = end - start, response =
//! end - submit = wait + run):
//! * slowdown = response / max(run, 1);
//! * bounded slowdown = max(1, response / max(run, 10)) (threshold 10 s);
//! * area-weighted slowdown = Σ procs·run·slowdown / Σ procs·run;
//! * utilization = Σ procs·run / (capacity · (last end - first submit));
//! * makespan = last end - first submit;
//! * median and p95 interpolate linearly between order statistics (the numpy default).

use crate::run::SimOutcome;
use crate::workload::{Machine, Workload};
use serde::Serialize;
use std::collections::BTreeMap;

pub const BOUNDED_SLOWDOWN_THRESHOLD: i64 = 10;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub trace: String,
    pub policy: String,
    pub capacity: u32,
    pub jobs_simulated: u64,
    pub jobs_skipped: BTreeMap<String, u64>,
    pub jobs_skipped_total: u64,
    /// Jobs whose trace runtime exceeded their estimate: they were killed at it.
    pub jobs_killed_at_limit: u64,
    pub mean_wait: f64,
    pub median_wait: f64,
    pub p95_wait: f64,
    pub max_wait: i64,
    pub mean_response: f64,
    pub mean_slowdown: f64,
    pub mean_bounded_slowdown: f64,
    pub area_weighted_slowdown: f64,
    pub utilization: f64,
    pub first_submit: i64,
    pub last_end: i64,
    pub makespan: i64,
    pub passes: u64,
    pub max_queue: usize,
    /// Node-level figures, for runs on a cluster file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterMetrics>,
    /// Seconds to read and parse the trace.
    pub parse_wall_time_s: f64,
    /// Seconds the simulation itself took.
    pub sim_wall_time_s: f64,
    /// Seconds for the whole run (parse + simulation + metrics).
    pub wall_time_s: f64,
}

/// What a run on the nodes of a cluster adds to the summary.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClusterMetrics {
    pub name: String,
    pub nodes: usize,
    /// The node type (or `abstract`) whose strength is scaling factor 1.
    pub reference: String,
    /// The node-set request applied to every job, if any.
    pub nodeset: Option<String>,
    /// Jobs whose node set no set could ever hold, which ran without it.
    pub nodeset_dropped: u64,
    /// Σ cores held × seconds held.
    pub raw_core_seconds: f64,
    /// Σ cores held × seconds held × the job's scaling factor (reference seconds).
    pub normalized_core_seconds: f64,
    /// Capacity of faster nodes idle because a job runs at its slowest node's pace:
    /// Σ over nodes held of cores × seconds × (1 − f_job / f_node).
    pub lost_core_seconds: f64,
    /// lost_core_seconds / raw_core_seconds.
    pub lost_fraction: f64,
    /// Jobs completed per day of makespan.
    pub jobs_per_day: f64,
    /// Reference core-seconds delivered per second of makespan.
    pub normalized_throughput: f64,
}

fn node_factor(w: &Workload, node: usize) -> f64 {
    match &w.machine {
        Machine::Cluster { cluster, .. } => cluster.type_of(node).factor,
        Machine::Pool(_) => 1.0,
    }
}

/// Linear interpolation between order statistics of sorted `x` (numpy's default).
pub fn percentile(sorted: &[i64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = q * (sorted.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    let frac = rank - lo as f64;
    sorted[lo] as f64 + frac * (sorted[hi] - sorted[lo]) as f64
}

impl Summary {
    pub fn compute(trace: &str, w: &Workload, o: &SimOutcome) -> Summary {
        let n = w.jobs.len();
        let mut waits: Vec<i64> = Vec::with_capacity(n);
        let (mut sum_wait, mut sum_resp, mut sum_sd, mut sum_bsd) = (0f64, 0f64, 0f64, 0f64);
        let (mut area, mut area_sd) = (0f64, 0f64);
        let mut killed = 0u64;
        let mut last_end = i64::MIN;
        let (mut raw_cs, mut norm_cs, mut lost_cs) = (0f64, 0f64, 0f64);
        for (i, j) in w.jobs.iter().enumerate() {
            let (s, e) = (o.start[i], o.end[i]);
            let wait = s - j.submit;
            let run = e - s;
            let resp = e - j.submit;
            waits.push(wait);
            sum_wait += wait as f64;
            sum_resp += resp as f64;
            let sd = resp as f64 / run.max(1) as f64;
            sum_sd += sd;
            sum_bsd += (resp as f64 / run.max(BOUNDED_SLOWDOWN_THRESHOLD) as f64).max(1.0);
            let held = match o.alloc.get(i).and_then(|a| a.as_ref()) {
                Some(al) => {
                    for p in &al.parts {
                        let f_node = node_factor(w, p.node as usize);
                        lost_cs += p.cores as f64 * run as f64 * (1.0 - al.factor / f_node);
                    }
                    al.parts.iter().map(|p| p.cores as f64).sum::<f64>()
                }
                None => j.procs as f64,
            };
            let a = held * run as f64;
            raw_cs += a;
            norm_cs += a * o.factor.get(i).copied().unwrap_or(1.0);
            area += a;
            area_sd += j.procs as f64 * run as f64 * sd;
            if j.runtime > j.estimate {
                killed += 1;
            }
            last_end = last_end.max(e);
        }
        waits.sort_unstable();
        let first_submit = w.jobs.first().map_or(0, |j| j.submit);
        let last_end = if n == 0 { first_submit } else { last_end };
        let makespan = last_end - first_submit;
        let mean = |s: f64| if n == 0 { 0.0 } else { s / n as f64 };
        let jobs_skipped: BTreeMap<String, u64> =
            w.skipped.iter().map(|(r, c)| (r.key().to_string(), *c)).collect();
        Summary {
            trace: trace.to_string(),
            policy: String::new(),
            capacity: w.capacity,
            jobs_simulated: n as u64,
            jobs_skipped_total: jobs_skipped.values().sum(),
            jobs_skipped,
            jobs_killed_at_limit: killed,
            mean_wait: mean(sum_wait),
            median_wait: percentile(&waits, 0.5),
            p95_wait: percentile(&waits, 0.95),
            max_wait: waits.last().copied().unwrap_or(0),
            mean_response: mean(sum_resp),
            mean_slowdown: mean(sum_sd),
            mean_bounded_slowdown: mean(sum_bsd),
            area_weighted_slowdown: {
                let work: f64 = w.jobs.iter().enumerate().map(|(i, j)| j.procs as f64 * (o.end[i] - o.start[i]) as f64).sum();
                if work > 0.0 { area_sd / work } else { 0.0 }
            },
            utilization: if makespan > 0 { area / (w.capacity as f64 * makespan as f64) } else { 0.0 },
            first_submit,
            last_end,
            makespan,
            passes: o.passes,
            max_queue: o.max_queue,
            cluster: match &w.machine {
                Machine::Pool(_) => None,
                Machine::Cluster { cluster, nodeset, .. } => Some(ClusterMetrics {
                    name: cluster.name.clone(),
                    nodes: cluster.nodes.len(),
                    reference: cluster.reference.name.clone(),
                    nodeset: nodeset.as_ref().map(|s| s.to_string()).or_else(|| cluster.nodeset.as_ref().map(|s| s.to_string())),
                    nodeset_dropped: o.dropped_nodesets,
                    raw_core_seconds: raw_cs,
                    normalized_core_seconds: norm_cs,
                    lost_core_seconds: lost_cs,
                    lost_fraction: if raw_cs > 0.0 { lost_cs / raw_cs } else { 0.0 },
                    jobs_per_day: if makespan > 0 { n as f64 * 86400.0 / makespan as f64 } else { 0.0 },
                    normalized_throughput: if makespan > 0 { norm_cs / makespan as f64 } else { 0.0 },
                }),
            },
            parse_wall_time_s: 0.0,
            sim_wall_time_s: 0.0,
            wall_time_s: 0.0,
        }
    }

    /// A human-readable table.
    pub fn table(&self) -> String {
        let mut rows: Vec<(&str, String)> = vec![
            ("trace", self.trace.clone()),
            ("policy", self.policy.clone()),
            ("capacity (processors)", self.capacity.to_string()),
            ("jobs simulated", self.jobs_simulated.to_string()),
        ];
        let skipped = if self.jobs_skipped.is_empty() {
            "0".to_string()
        } else {
            format!(
                "{} ({})",
                self.jobs_skipped_total,
                self.jobs_skipped.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join(", ")
            )
        };
        rows.extend([
            ("jobs skipped", skipped),
            ("jobs killed at their limit", self.jobs_killed_at_limit.to_string()),
            ("mean wait (s)", format!("{:.1}", self.mean_wait)),
            ("median wait (s)", format!("{:.1}", self.median_wait)),
            ("p95 wait (s)", format!("{:.1}", self.p95_wait)),
            ("mean response (s)", format!("{:.1}", self.mean_response)),
            ("mean slowdown", format!("{:.2}", self.mean_slowdown)),
            ("mean bounded slowdown (10 s)", format!("{:.2}", self.mean_bounded_slowdown)),
            ("area-weighted slowdown", format!("{:.2}", self.area_weighted_slowdown)),
            ("utilization", format!("{:.4}", self.utilization)),
            ("makespan (s)", self.makespan.to_string()),
            ("scheduling passes", self.passes.to_string()),
            ("longest queue", self.max_queue.to_string()),
        ]);
        if let Some(c) = &self.cluster {
            rows.extend([
                ("cluster", format!("{} ({} nodes, reference {})", c.name, c.nodes, c.reference)),
                ("node set", c.nodeset.clone().unwrap_or_else(|| "none".into())),
                ("node sets dropped", c.nodeset_dropped.to_string()),
                ("raw core-hours", format!("{:.1}", c.raw_core_seconds / 3600.0)),
                ("normalized core-hours", format!("{:.1}", c.normalized_core_seconds / 3600.0)),
                ("lost core-hours (slowest node)", format!("{:.1} ({:.2}%)", c.lost_core_seconds / 3600.0, 100.0 * c.lost_fraction)),
                ("jobs per day", format!("{:.1}", c.jobs_per_day)),
            ]);
        }
        rows.extend([
            ("wall time (s)", format!("{:.3} (parse {:.3}, simulate {:.3})", self.wall_time_s, self.parse_wall_time_s, self.sim_wall_time_s)),
        ]);
        let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
        rows.iter().map(|(k, v)| format!("{k:<width$}  {v}\n")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_like_numpy() {
        let x = [1, 2, 3, 4];
        assert_eq!(percentile(&x, 0.5), 2.5);
        assert!((percentile(&x, 0.95) - 3.85).abs() < 1e-12);
        assert_eq!(percentile(&[7], 0.95), 7.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }
}
