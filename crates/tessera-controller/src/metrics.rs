//! The controller's Prometheus metrics (`GET /metrics`, text exposition format
//! 0.0.4): queue length by partition and reason, running jobs, allocated
//! cores, memory, GPUs and power, pass time, submissions and starts (totals and
//! per second over the last ten seconds).

use crate::state::State;
use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write;
use std::time::{Duration, Instant};
use tessera_core::{Cluster, JobId};

#[derive(Debug, Default)]
pub struct Metrics {
    pub submitted: u64,
    /// Jobs the power governor lowered a cap of (crate::governor).
    pub throttles: u64,
    pub started: u64,
    pub finished: u64,
    passes: u64,
    commit_total: Duration,
    commit_last: Duration,
    pass_total: Duration,
    pass_last: Duration,
    pass_max: Duration,
    /// (when, submitted, started) samples for the rates.
    window: VecDeque<(Instant, u64, u64)>,
    /// (Unix second, submitted, started) at the first batch of each second,
    /// for the dashboard's recent rates.
    history: VecDeque<(i64, u64, u64)>,
    /// (Unix second, allocated W, measured W) at the first power report of
    /// each second, for the dashboard.
    power_history: VecDeque<(i64, f64, Option<f64>)>,
}

/// Seconds of history the dashboard shows.
pub const HISTORY_S: i64 = 300;

const WINDOW: Duration = Duration::from_secs(10);

/// The power the scheduler has allocated now (W): a node a job holds draws
/// its CPU cap (the job's, under PARM; else the CPU's maximum) plus memory
/// and base power, an idle node that is up its idle power, a down node
/// nothing. 0 on a cluster without a power model.
pub fn allocated_power_w(state: &State, cluster: &Cluster) -> f64 {
    let mut cap: Vec<Option<f64>> = vec![None; cluster.nodes.len()];
    for m in state.ledger.jobs.values() {
        if let Some(a) = state.engine().allocation(JobId(m.id)) {
            for p in &a.parts {
                let t = &cluster.node_types[cluster.nodes[p.node as usize].node_type];
                cap[p.node as usize] = m.cap_w.or(t.power.as_ref().map(|w| w.cpu_max_w));
            }
        }
    }
    let mut w = 0.0;
    for (n, node) in cluster.nodes.iter().enumerate() {
        let Some(p) = &cluster.node_types[node.node_type].power else { continue };
        let status = state.engine().node_status(n as u32);
        w += match cap[n] {
            // a node whose power domain failed counts at its maximum
            _ if status.is_some_and(|s| s.power_fault) => p.max_w(),
            Some(c) => c + p.memory_w + p.base_w,
            None if status.is_some_and(|s| s.up) => p.idle_w,
            None => 0.0,
        };
    }
    w
}

/// Queued jobs by (partition, pending reason).
pub fn queue_by_reason<'c>(state: &mut State, cluster: &'c Cluster) -> BTreeMap<(&'c str, &'static str), u64> {
    let mut queue: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    let ids: Vec<u64> = state.engine().queue().map(|j| j.0).collect();
    for id in ids {
        let Some(p) = state.ledger.jobs.get(&id).map(|m| m.req.partition as usize) else { continue };
        if let Some(reason) = state.pending_name(id) {
            *queue.entry((cluster.partitions[p].name.as_str(), reason)).or_default() += 1;
        }
    }
    queue
}

impl Metrics {
    /// Record one batch: its journal commit, then its events and scheduling
    /// pass applied to the state.
    pub fn batch(&mut self, commit: Duration, took: Duration) {
        self.passes += 1;
        self.commit_total += commit;
        self.commit_last = commit;
        self.pass_total += took;
        self.pass_last = took;
        self.pass_max = self.pass_max.max(took);
        let now = Instant::now();
        if self.window.back().is_none_or(|(t, _, _)| now.duration_since(*t) >= Duration::from_millis(100)) {
            self.window.push_back((now, self.submitted, self.started));
        }
        while self.window.front().is_some_and(|(t, _, _)| now.duration_since(*t) > WINDOW) {
            self.window.pop_front();
        }
        let sec = tessera_proto::unix_now();
        if self.history.back().is_none_or(|h| h.0 < sec) {
            self.history.push_back((sec, self.submitted, self.started));
        }
        while self.history.front().is_some_and(|h| h.0 < sec - HISTORY_S) {
            self.history.pop_front();
        }
    }

    fn rates(&self) -> (f64, f64) {
        let now = Instant::now();
        match self.window.front() {
            Some(&(t, s, st)) if now.duration_since(t) > Duration::from_millis(500) => {
                let dt = now.duration_since(t).as_secs_f64();
                ((self.submitted - s) as f64 / dt, (self.started - st) as f64 / dt)
            }
            _ => (0.0, 0.0),
        }
    }

    /// Submissions and starts per second over the last [`HISTORY_S`] seconds:
    /// (Unix second, submissions/s, starts/s) between successive samples.
    /// Whether no power sample was recorded this second yet.
    pub fn power_due(&self) -> bool {
        self.power_history.back().is_none_or(|h| h.0 < tessera_proto::unix_now())
    }

    /// Record the power now (at most once a second: see [`Metrics::power_due`]).
    pub fn power_sample(&mut self, allocated_w: f64, measured_w: Option<f64>) {
        let sec = tessera_proto::unix_now();
        if self.power_due() {
            self.power_history.push_back((sec, allocated_w, measured_w));
        }
        while self.power_history.front().is_some_and(|h| h.0 + HISTORY_S < sec) {
            self.power_history.pop_front();
        }
    }

    /// Power over the last [`HISTORY_S`] seconds: (Unix seconds, allocated, measured).
    pub fn power_history(&self) -> Vec<(f64, f64, Option<f64>)> {
        self.power_history.iter().map(|&(t, a, m)| (t as f64, a, m)).collect()
    }

    pub fn recent_rates(&self) -> Vec<(f64, f64, f64)> {
        let h: Vec<&(i64, u64, u64)> = self.history.iter().collect();
        h.windows(2).map(|w| {
            let dt = (w[1].0 - w[0].0).max(1) as f64;
            (w[0].0 as f64, (w[1].1 - w[0].1) as f64 / dt, (w[1].2 - w[0].2) as f64 / dt)
        }).collect()
    }

    /// Prometheus text. `power`: (budget, allocated, measured) watts now.
    pub fn render(&self, state: &mut State, cluster: &Cluster, agents: usize, power: (Option<f64>, f64, Option<f64>)) -> String {
        let mut o = String::new();
        let queue = queue_by_reason(state, cluster);
        metric(&mut o, "tessera_queue_jobs", "gauge", "Queued jobs by partition and pending reason.");
        for ((p, r), n) in &queue {
            let _ = writeln!(o, "tessera_queue_jobs{{partition=\"{p}\",reason=\"{r}\"}} {n}");
        }
        let (mut running, mut cores, mut mem, mut gpus) = (0u64, 0u64, 0u64, 0u64);
        for m in state.ledger.jobs.values() {
            if let Some(a) = state.engine().allocation(JobId(m.id)) {
                running += 1;
                for p in &a.parts {
                    cores += p.cores as u64;
                    mem += p.mem;
                    gpus += p.gpus as u64;
                }
            }
        }
        let gauges: [(&str, &str, f64); 8] = [
            ("tessera_running_jobs", "Jobs holding resources (running, suspended or ending).", running as f64),
            ("tessera_allocated_cores", "Cores allocated to jobs.", cores as f64),
            ("tessera_allocated_memory_bytes", "Memory allocated to jobs.", mem as f64 * 1048576.0),
            ("tessera_allocated_gpus", "GPUs allocated to jobs.", gpus as f64),
            ("tessera_allocated_power_watts", "Power allocated by the cluster's power model: busy nodes at their CPU caps plus memory and base, idle nodes at their idle power (0 without a power model).", power.1),
            ("tessera_power_budget_watts", "The cluster's power budget (0 without one).", power.0.unwrap_or(0.0)),
            ("tessera_measured_power_watts", "Power the agents last reported for their nodes: RAPL where measured, the node model where emulated (0 when none reports).", power.2.unwrap_or(0.0)),
            ("tessera_agents", "Agents with a live session.", agents as f64),
        ];
        for (name, help, v) in gauges {
            metric(&mut o, name, "gauge", help);
            let _ = writeln!(o, "{name} {v}");
        }
        let (sub_rate, start_rate) = self.rates();
        let counters: [(&str, &str, f64); 5] = [
            ("tessera_power_throttles_total", "Cap cuts by the power governor (measured power over the budget) since the controller started.", self.throttles as f64),
            ("tessera_submissions_total", "Jobs accepted (durable) since the controller started.", self.submitted as f64),
            ("tessera_starts_total", "Job starts sent to agents since the controller started.", self.started as f64),
            ("tessera_finished_total", "Jobs recorded in accounting since the controller started.", self.finished as f64),
            ("tessera_passes_total", "Batches applied (each ends with a scheduling pass).", self.passes as f64),
        ];
        for (name, help, v) in counters {
            metric(&mut o, name, "counter", help);
            let _ = writeln!(o, "{name} {v}");
        }
        let more: [(&str, &str, f64); 7] = [
            ("tessera_submissions_per_second", "Submissions per second over the last ten seconds.", sub_rate),
            ("tessera_starts_per_second", "Starts per second over the last ten seconds.", start_rate),
            ("tessera_pass_seconds_last", "Duration of the last batch's events and scheduling pass (journal commit not included).", self.pass_last.as_secs_f64()),
            ("tessera_pass_seconds_max", "Longest events-and-pass since the controller started.", self.pass_max.as_secs_f64()),
            ("tessera_pass_seconds_sum", "Total time spent applying events and scheduling passes.", self.pass_total.as_secs_f64()),
            ("tessera_commit_seconds_last", "Duration of the last batch's journal commit (one transaction, fsync included).", self.commit_last.as_secs_f64()),
            ("tessera_commit_seconds_sum", "Total time spent committing the journal.", self.commit_total.as_secs_f64()),
        ];
        for (name, help, v) in more {
            metric(&mut o, name, "gauge", help);
            let _ = writeln!(o, "{name} {v}");
        }
        o
    }
}

fn metric(o: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}");
}
