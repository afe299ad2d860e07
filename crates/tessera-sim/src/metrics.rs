//! The run summary: the standard metrics of parallel job scheduling.
//!
//! Definitions (per job: wait = start - submit, suspended = seconds suspended
//! after its start (preemption, gang time slices), run = end - start - suspended,
//! response = end - submit = wait + suspended + run):
//! * slowdown = response / max(run, 1);
//! * bounded slowdown = max(1, response / max(run, 10)) (threshold 10 s);
//! * area-weighted slowdown = Σ procs·run·slowdown / Σ procs·run;
//! * utilization = Σ procs·run / (capacity · (last end - first submit)); on a
//!   power-aware machine, the nodes busy over time, as sampled, over the same
//!   (PARM resizes running jobs: [`sampled_utilization`]);
//! * makespan = last end - first submit;
//! * median and p95 interpolate linearly between order statistics (the numpy default).

use crate::power::{PowerMode, PowerSetup};
use crate::run::{PowerOutcome, SimOutcome};
use tessera_core::power::ParmStats;
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
    /// Jobs suspended at least once, and the mean seconds suspended over all jobs.
    pub jobs_suspended: u64,
    pub mean_suspended: f64,
    /// Mean seconds running (suspended time excluded).
    pub mean_run: f64,
    pub mean_slowdown: f64,
    pub mean_bounded_slowdown: f64,
    pub area_weighted_slowdown: f64,
    pub utilization: f64,
    pub first_submit: i64,
    pub last_end: i64,
    pub makespan: i64,
    pub passes: u64,
    pub max_queue: usize,
    /// Power-aware runs: the budget (W), the highest power drawn at any instant
    /// (W) and the energy drawn from the first submission to the last end (J).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power_budget_w: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_power_w: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy_j: Option<f64>,
    /// Power-aware runs: the machine, the mode and PARM's decisions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power: Option<PowerMetrics>,
    /// Node-level figures, for runs on a cluster file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterMetrics>,
    /// The queue's order: `fifo`, or `multifactor` and where the accounts
    /// come from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<String>,
    /// Runs with accounts: waits, slowdowns and shares per account and user.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fairness: Option<Vec<crate::share::ShareRow>>,
    /// Seconds to read and parse the trace.
    pub parse_wall_time_s: f64,
    /// Seconds the simulation itself took (not counting its waits for the
    /// reader, when the two overlapped).
    pub sim_wall_time_s: f64,
    /// The trace was read and simulated at once, in two threads.
    pub overlapped: bool,
    /// Seconds for the whole run (parse + simulation + metrics).
    pub wall_time_s: f64,
}

/// What a power-aware run adds to the summary.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PowerMetrics {
    pub machine: String,
    /// Nodes of the machine, and those the scheduler used (fixed cap: the ones
    /// the budget powers at that cap).
    pub machine_nodes: u32,
    pub scheduled_nodes: u32,
    /// `parm` or `fixed_cap`.
    pub mode: String,
    /// PARM variant and solver, or the fixed CPU cap (W).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub solver: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// PARM's decision rule (`paper` or `starts-first`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cap_w: Option<f64>,
    pub mean_power_w: f64,
    /// max_power_w / budget.
    pub peak_fraction_of_budget: f64,
    pub energy_kwh: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decisions: Option<ParmStats>,
    /// Seconds spent in PARM's decisions (all, and the longest one).
    pub decision_wall_s: f64,
    pub max_decision_wall_s: f64,
}

impl PowerMetrics {
    fn new(setup: &PowerSetup, p: &PowerOutcome, _jobs: usize) -> Self {
        let span = match (p.timeline.first(), p.timeline.last()) {
            (Some(a), Some(b)) if b.t > a.t => (b.t - a.t) as f64,
            _ => 0.0,
        };
        let mean = if span > 0.0 {
            p.timeline.windows(2).map(|w| w[0].power_w * (w[1].t - w[0].t) as f64).sum::<f64>() / span
        } else {
            0.0
        };
        let (mode, variant, solver, alpha, rule, cap_w) = match &setup.mode {
            PowerMode::Parm(c) => ("parm", Some(c.variant.to_string()), Some(c.solver.to_string()), Some(c.alpha), Some(c.rule.to_string()), None),
            PowerMode::FixedCap { cap_w } => ("fixed_cap", None, None, None, None, Some(*cap_w)),
        };
        PowerMetrics {
            machine: setup.name.clone(),
            machine_nodes: setup.info.machine.nodes,
            scheduled_nodes: setup.nodes(),
            mode: mode.into(),
            variant,
            solver,
            alpha,
            rule,
            cap_w,
            mean_power_w: mean,
            peak_fraction_of_budget: p.max_power_w / p.budget_w,
            energy_kwh: p.energy_j / 3.6e6,
            decisions: p.parm,
            decision_wall_s: p.decision_wall_s,
            max_decision_wall_s: p.max_decision_wall_s,
        }
    }
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
        Machine::Pool(_) | Machine::Power(_) => 1.0,
    }
}

/// One job's times, as any driver saw them: submitted, started, ended, and the
/// seconds it spent suspended after its start. Seconds; fractions allowed (a
/// live log has them, the simulator's integers convert exactly).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JobTimes {
    pub submit: f64,
    pub start: f64,
    pub end: f64,
    pub suspended: f64,
    /// Processors the job asked for (the weight of its slowdown).
    pub procs: f64,
    /// Processor-seconds it held while running (utilization's numerator): its
    /// processors × run, unless the machine gave it otherwise (whole nodes,
    /// resizes).
    pub held: f64,
}

impl JobTimes {
    pub fn wait(&self) -> f64 {
        self.start - self.submit
    }
    pub fn run(&self) -> f64 {
        self.end - self.start - self.suspended
    }
    pub fn response(&self) -> f64 {
        self.end - self.submit
    }
    /// Response over run, the run bounded below by 10 s, and at least 1.
    pub fn bounded_slowdown(&self) -> f64 {
        (self.response() / self.run().max(BOUNDED_SLOWDOWN_THRESHOLD as f64)).max(1.0)
    }
}

/// The classical metrics of a set of jobs (definitions at the top of this
/// module). The one implementation behind the simulator's summary and
/// `tessera metrics` on a live run's sleep-job log or accounting store.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Classic {
    pub jobs: u64,
    pub mean_wait: f64,
    pub median_wait: f64,
    pub p95_wait: f64,
    pub max_wait: f64,
    pub mean_response: f64,
    pub jobs_suspended: u64,
    pub mean_suspended: f64,
    pub mean_run: f64,
    pub mean_slowdown: f64,
    pub mean_bounded_slowdown: f64,
    pub area_weighted_slowdown: f64,
    /// None when the machine's size is not known.
    pub utilization: Option<f64>,
    pub first_submit: f64,
    pub last_end: f64,
    pub makespan: f64,
}

impl Classic {
    /// `capacity`: processors of the machine, for utilization (None: not
    /// reported). The makespan runs from the earliest submission to the last end.
    pub fn compute(jobs: &[JobTimes], capacity: Option<f64>) -> Classic {
        let n = jobs.len();
        let mut waits: Vec<f64> = Vec::with_capacity(n);
        let (mut sum_wait, mut sum_resp, mut sum_sd, mut sum_bsd) = (0f64, 0f64, 0f64, 0f64);
        let (mut area, mut area_sd, mut work) = (0f64, 0f64, 0f64);
        let (mut sum_susp, mut sum_run, mut suspended) = (0f64, 0f64, 0u64);
        let (mut first, mut last) = (f64::INFINITY, f64::NEG_INFINITY);
        for j in jobs {
            let (wait, run, resp) = (j.wait(), j.run(), j.response());
            sum_susp += j.suspended;
            sum_run += run;
            suspended += u64::from(j.suspended > 0.0);
            waits.push(wait);
            sum_wait += wait;
            sum_resp += resp;
            let sd = resp / run.max(1.0);
            sum_sd += sd;
            sum_bsd += j.bounded_slowdown();
            area += j.held;
            area_sd += j.procs * run * sd;
            work += j.procs * run;
            first = first.min(j.submit);
            last = last.max(j.end);
        }
        waits.sort_unstable_by(f64::total_cmp);
        let (first, last) = if n == 0 { (0.0, 0.0) } else { (first, last) };
        let makespan = last - first;
        let mean = |s: f64| if n == 0 { 0.0 } else { s / n as f64 };
        Classic {
            jobs: n as u64,
            mean_wait: mean(sum_wait),
            median_wait: percentile(&waits, 0.5),
            p95_wait: percentile(&waits, 0.95),
            max_wait: waits.last().copied().unwrap_or(0.0),
            mean_response: mean(sum_resp),
            jobs_suspended: suspended,
            mean_suspended: mean(sum_susp),
            mean_run: mean(sum_run),
            mean_slowdown: mean(sum_sd),
            mean_bounded_slowdown: mean(sum_bsd),
            area_weighted_slowdown: if work > 0.0 { area_sd / work } else { 0.0 },
            utilization: capacity.map(|c| if makespan > 0.0 && c > 0.0 { area / (c * makespan) } else { 0.0 }),
            first_submit: first,
            last_end: last,
            makespan,
        }
    }

    /// The metrics by name, in a fixed order (for tables and comparisons).
    pub fn named(&self) -> Vec<(&'static str, f64)> {
        let mut v = vec![
            ("mean wait (s)", self.mean_wait),
            ("median wait (s)", self.median_wait),
            ("p95 wait (s)", self.p95_wait),
            ("mean response (s)", self.mean_response),
            ("mean slowdown", self.mean_slowdown),
            ("mean bounded slowdown (10 s)", self.mean_bounded_slowdown),
            ("area-weighted slowdown", self.area_weighted_slowdown),
        ];
        if let Some(u) = self.utilization {
            v.push(("utilization", u));
        }
        v.push(("makespan (s)", self.makespan));
        v
    }
}

/// How fast jobs were started: for a live run (or an emulated Slurm's, from the
/// same sleep-job log), the throughput the scale run measures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Throughput {
    pub starts: u64,
    /// Starts per second from the first start to the last.
    pub mean_starts_per_s: f64,
    /// Most starts in any window of [`Throughput::WINDOW_S`] seconds, per second.
    pub peak_starts_per_s: f64,
}

impl Throughput {
    pub const WINDOW_S: f64 = 10.0;

    pub fn compute(jobs: &[JobTimes]) -> Throughput {
        let mut t: Vec<f64> = jobs.iter().map(|j| j.start).collect();
        t.sort_by(f64::total_cmp);
        let span = match (t.first(), t.last()) {
            (Some(a), Some(b)) => b - a,
            _ => 0.0,
        };
        // sliding window [t[lo], t[lo] + WINDOW_S): the most starts in one
        let (mut peak, mut hi) = (0usize, 0usize);
        for lo in 0..t.len() {
            while hi < t.len() && t[hi] < t[lo] + Self::WINDOW_S {
                hi += 1;
            }
            peak = peak.max(hi - lo);
        }
        Throughput {
            starts: t.len() as u64,
            mean_starts_per_s: if span > 0.0 { (t.len() - 1) as f64 / span } else { 0.0 },
            peak_starts_per_s: peak as f64 / Self::WINDOW_S,
        }
    }
}

/// Utilization of a machine whose busy units were sampled: ∫ busy dt over
/// [`first`, `last`] / (`capacity` · (`last` − `first`)), each sample `(t, busy)`
/// holding from `t` until the next (nothing busy before the first). A
/// power-aware run's utilization: PARM resizes running jobs, so what a job held
/// is not its starting size times its run, and the nodes busy over time are what
/// the machine gave. `sim run`'s summary and the run report both compute it here,
/// from the same samples (the run loop's meter; the store's `power_samples`).
pub fn sampled_utilization(samples: impl IntoIterator<Item = (f64, f64)>, first: f64, last: f64, capacity: f64) -> f64 {
    if !(last > first && capacity > 0.0) {
        return 0.0;
    }
    let (mut area, mut from, mut level) = (0f64, first, 0f64);
    for (t, busy) in samples {
        let t = t.clamp(first, last);
        area += level * (t - from);
        (from, level) = (t, busy);
    }
    area += level * (last - from);
    area / (capacity * (last - first))
}

/// Linear interpolation between order statistics of sorted `x` (numpy's default).
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = q * (sorted.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    let frac = rank - lo as f64;
    sorted[lo] + frac * (sorted[hi] - sorted[lo])
}

/// Every job's times in a simulated run, in workload order: what it held is
/// the cores of its allocation (its processors on a pool) times its run, or the
/// node-seconds a power-aware run gave it (PARM resizes running jobs).
pub fn job_times(w: &Workload, o: &SimOutcome) -> Vec<JobTimes> {
    w.jobs
        .iter()
        .enumerate()
        .map(|(i, j)| {
            let (s, e, susp) = (o.start[i], o.end[i], o.suspended_of(i));
            let run = (e - s - susp) as f64;
            let cores = o.alloc.get(i).map_or(j.procs as f64, |parts| parts.map(|p| p.cores as f64).sum());
            let held = o.power.as_ref().map_or(cores * run, |p| p.job_node_s[i]);
            JobTimes { submit: j.submit as f64, start: s as f64, end: e as f64, suspended: susp as f64, procs: j.procs as f64, held }
        })
        .collect()
}

impl Summary {
    pub fn compute(trace: &str, w: &Workload, o: &SimOutcome) -> Summary {
        let n = w.jobs.len();
        let times = job_times(w, o);
        let mut killed = 0u64;
        let (mut raw_cs, mut norm_cs, mut lost_cs) = (0f64, 0f64, 0f64);
        for (i, (j, t)) in w.jobs.iter().zip(&times).enumerate() {
            let f = o.factor_of(i);
            if let Some(parts) = o.alloc.get(i) {
                for p in parts {
                    let f_node = node_factor(w, p.node as usize);
                    lost_cs += p.cores as f64 * t.run() * (1.0 - f / f_node);
                }
            }
            raw_cs += t.held;
            norm_cs += t.held * f;
            if j.runtime > j.estimate {
                killed += 1;
            }
        }
        let c = Classic::compute(&times, Some(w.capacity as f64));
        // the trace's first submission (jobs are in submit order), also with no job
        let first_submit = w.jobs.first().map_or(0, |j| j.submit);
        let last_end = if n == 0 { first_submit } else { c.last_end as i64 };
        let makespan = last_end - first_submit;
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
            mean_wait: c.mean_wait,
            median_wait: c.median_wait,
            p95_wait: c.p95_wait,
            max_wait: c.max_wait as i64,
            mean_response: c.mean_response,
            jobs_suspended: c.jobs_suspended,
            mean_suspended: c.mean_suspended,
            mean_run: c.mean_run,
            mean_slowdown: c.mean_slowdown,
            mean_bounded_slowdown: c.mean_bounded_slowdown,
            area_weighted_slowdown: c.area_weighted_slowdown,
            utilization: match &o.power {
                Some(p) => sampled_utilization(p.timeline.iter().map(|s| (s.t as f64, s.busy_nodes as f64)), c.first_submit, c.last_end, w.capacity as f64),
                None => c.utilization.unwrap_or(0.0),
            },
            first_submit,
            last_end,
            makespan,
            passes: o.passes,
            max_queue: o.max_queue,
            power_budget_w: o.power.as_ref().map(|p| p.budget_w),
            max_power_w: o.power.as_ref().map(|p| p.max_power_w),
            energy_j: o.power.as_ref().map(|p| p.energy_j),
            power: match (&w.machine, &o.power) {
                (Machine::Power(setup), Some(p)) => Some(PowerMetrics::new(setup, p, n)),
                _ => None,
            },
            cluster: match &w.machine {
                Machine::Pool(_) | Machine::Power(_) => None,
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
            priority: w.sharing.as_ref().map(|s| format!("{} (accounts: {})", s.priority.kind, s.source)),
            fairness: crate::share::fairness(w, o),
            parse_wall_time_s: 0.0,
            sim_wall_time_s: 0.0,
            overlapped: false,
            wall_time_s: 0.0,
        }
    }

    /// A human-readable table.
    pub fn table(&self) -> String {
        let mut rows: Vec<(&str, String)> = vec![
            ("trace", self.trace.clone()),
            ("policy", self.policy.clone()),
            // a power-aware machine allocates whole nodes: its capacity is nodes
            (if self.power.is_some() { "capacity (nodes)" } else { "capacity (processors)" }, self.capacity.to_string()),
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
        if self.jobs_suspended > 0 {
            rows.extend([
                ("jobs suspended", self.jobs_suspended.to_string()),
                ("mean suspended (s)", format!("{:.1}", self.mean_suspended)),
                ("mean running (s)", format!("{:.1}", self.mean_run)),
            ]);
        }
        if let (Some(p), Some(b), Some(m), Some(e)) = (&self.power, self.power_budget_w, self.max_power_w, self.energy_j) {
            let how = match (&p.variant, &p.solver, p.cap_w) {
                (Some(v), Some(s), _) => format!("PARM {v}, {s} solver, alpha {}, rule {}", p.alpha.unwrap_or(1.0), p.rule.as_deref().unwrap_or("paper")),
                (_, _, Some(c)) => format!("every CPU at {c} W"),
                _ => p.mode.clone(),
            };
            rows.extend([
                ("power machine", format!("{} ({} nodes, {} scheduled; {how})", p.machine, p.machine_nodes, p.scheduled_nodes)),
                ("power budget (W)", format!("{b:.0}")),
                ("max power drawn (W)", format!("{m:.0} ({:.2}% of budget)", 100.0 * p.peak_fraction_of_budget)),
                ("mean power drawn (W)", format!("{:.0}", p.mean_power_w)),
                ("energy (kWh)", format!("{:.1}", e / 3.6e6)),
            ]);
            if let Some(d) = &p.decisions {
                rows.extend([
                    ("PARM decisions", format!("{} ({} resizes, {} cap changes, {} at a solver limit, {} not proven within 0.1%)", d.decisions, d.resizes, d.cap_changes, d.limited, d.unproven)),
                    ("decision time (s)", format!("{:.3} total, {:.4} longest", p.decision_wall_s, p.max_decision_wall_s)),
                ]);
            }
        }
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
        if let Some(p) = &self.priority {
            rows.push(("priority", p.clone()));
        }
        rows.extend([
            ("wall time (s)", format!("{:.3} (parse {:.3}, simulate {:.3}{})", self.wall_time_s, self.parse_wall_time_s, self.sim_wall_time_s, if self.overlapped { ", overlapped" } else { "" })),
        ]);
        let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
        let mut text: String = rows.iter().map(|(k, v)| format!("{k:<width$}  {v}\n")).collect();
        if let Some(f) = &self.fairness {
            text.push_str(&crate::share::fairness_table(f, 12));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throughput_counts_the_busiest_window() {
        let at = |start: f64| JobTimes { submit: 0.0, start, end: start + 1.0, suspended: 0.0, procs: 1.0, held: 1.0 };
        // 30 starts in [100, 103), then one a minute later
        let mut jobs: Vec<JobTimes> = (0..30).map(|i| at(100.0 + i as f64 / 10.0)).collect();
        jobs.push(at(160.0));
        let t = Throughput::compute(&jobs);
        assert_eq!(t.starts, 31);
        assert!((t.peak_starts_per_s - 3.0).abs() < 1e-12);
        assert!((t.mean_starts_per_s - 30.0 / 60.0).abs() < 1e-12);
        let none = Throughput::compute(&[]);
        assert_eq!((none.starts, none.mean_starts_per_s, none.peak_starts_per_s), (0, 0.0, 0.0));
    }

    #[test]
    fn percentiles_interpolate_like_numpy() {
        let x = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&x, 0.5), 2.5);
        assert!((percentile(&x, 0.95) - 3.85).abs() < 1e-12);
        assert_eq!(percentile(&[7.0], 0.95), 7.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }
}
