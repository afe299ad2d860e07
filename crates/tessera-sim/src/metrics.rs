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
use crate::workload::Workload;
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
    /// Seconds to read and parse the trace.
    pub parse_wall_time_s: f64,
    /// Seconds the simulation itself took.
    pub sim_wall_time_s: f64,
    /// Seconds for the whole run (parse + simulation + metrics).
    pub wall_time_s: f64,
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
            let a = j.procs as f64 * run as f64;
            area += a;
            area_sd += a * sd;
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
            area_weighted_slowdown: if area > 0.0 { area_sd / area } else { 0.0 },
            utilization: if makespan > 0 { area / (w.capacity as f64 * makespan as f64) } else { 0.0 },
            first_submit,
            last_end,
            makespan,
            passes: o.passes,
            max_queue: o.max_queue,
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
