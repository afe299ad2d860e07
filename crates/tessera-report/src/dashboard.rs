//! The live dashboard a controller serves at `/`: what it holds now, gathered
//! by the controller's actor, drawn here. The page reloads itself.

use crate::chart::{Body, Chart, Series};
use crate::html::{Block, Page};
use crate::table::Table;

/// Node states as the dashboard colours them (also `tessera nodes`' names).
pub const NODE_STATES: &[&str] = &["idle", "mixed", "allocated", "draining", "drain", "down", "unknown"];

#[derive(Clone, Debug, Default)]
pub struct DashboardNode {
    pub name: String,
    pub node_type: String,
    pub state: String,
    pub cores: u32,
    pub alloc_cores: u32,
}

#[derive(Clone, Debug, Default)]
pub struct Dashboard {
    pub cluster: String,
    pub policy: String,
    /// Unix time of the snapshot.
    pub now: i64,
    pub agents: usize,
    pub running_jobs: u64,
    /// Queued jobs: (partition, pending reason, count).
    pub queue: Vec<(String, String, u64)>,
    pub nodes: Vec<DashboardNode>,
    /// Power allocated now by the cluster's power model (busy nodes at their
    /// jobs' CPU caps, or full power, idle nodes at their idle power), and its
    /// budget; None: no power model.
    pub power_w: Option<f64>,
    pub budget_w: Option<f64>,
    /// Power the agents last measured or modelled (None: none reports power).
    pub measured_w: Option<f64>,
    /// Power over time: (Unix seconds, allocated, measured).
    pub power_history: Vec<(f64, f64, Option<f64>)>,
    /// True overhead now, per node type: (canonical units idle, of which
    /// flagged: a queued job of the node's partition needs no more).
    pub overhead: Vec<(String, u64, u64)>,
    /// Recent activity: (Unix seconds, submissions per second, starts per second).
    pub rates: Vec<(f64, f64, f64)>,
}

impl Dashboard {
    pub fn page(&self, refresh_s: u32) -> Page {
        let mut p = Page::new(format!("Tessera: {}", self.cluster));
        p.refresh_s = Some(refresh_s);
        let queued: u64 = self.queue.iter().map(|q| q.2).sum();
        p.subtitle.push(format!(
            "policy {}; {} nodes, {} agents; {} jobs running, {} queued; at {} (refreshes every {refresh_s} s)",
            self.policy,
            self.nodes.len(),
            self.agents,
            self.running_jobs,
            queued,
            tessera_accounting::acct::datetime(self.now)
        ));
        // queue: partitions × reasons
        let mut parts: Vec<String> = self.queue.iter().map(|q| q.0.clone()).collect();
        parts.sort();
        parts.dedup();
        let mut reasons: Vec<String> = self.queue.iter().map(|q| q.1.clone()).collect();
        reasons.sort();
        reasons.dedup();
        let series = reasons.iter().map(|r| (r.clone(), parts.iter().map(|p| self.queue.iter().find(|q| &q.0 == p && &q.1 == r).map_or(0.0, |q| q.2 as f64)).collect())).collect();
        let queue = Chart::bars("Queue by partition and reason", "partition", "jobs queued", parts, series);
        // nodes: a cell each, grouped by node type
        let mut types: Vec<&str> = Vec::new();
        for n in &self.nodes {
            if !types.contains(&n.node_type.as_str()) {
                types.push(&n.node_type);
            }
        }
        let groups = types
            .iter()
            .map(|t| {
                let cells = self
                    .nodes
                    .iter()
                    .filter(|n| n.node_type == *t)
                    .map(|n| (NODE_STATES.iter().position(|s| *s == n.state).unwrap_or(NODE_STATES.len() - 1), if n.cores > 0 { n.alloc_cores as f64 / n.cores as f64 } else { 0.0 }))
                    .collect();
                (t.to_string(), cells)
            })
            .collect();
        let heat = Chart { title: "Nodes by node type and state".into(), x_label: "node (darker: more cores allocated)".into(), y_label: "node type".into(), body: Body::Heat { groups, classes: NODE_STATES.iter().map(|s| s.to_string()).collect() } };
        let mut blocks = vec![Block::Chart(queue), Block::Chart(heat)];
        match self.power_w {
            Some(w) => {
                blocks.push(Block::Chart(Chart::bars(
                    "Power allocated and measured against the budget",
                    "",
                    "power (kW)",
                    vec!["now".into()],
                    vec![
                        ("allocated".into(), vec![w / 1000.0]),
                        ("measured".into(), vec![self.measured_w.map_or(f64::NAN, |m| m / 1000.0)]),
                        ("budget".into(), vec![self.budget_w.map_or(f64::NAN, |b| b / 1000.0)]),
                    ],
                )));
                if !self.power_history.is_empty() {
                    let t0 = self.now as f64;
                    let mut series = vec![Series::step("allocated", self.power_history.iter().map(|h| (h.0 - t0, h.1 / 1000.0)).collect())];
                    let measured: Vec<(f64, f64)> = self.power_history.iter().filter_map(|h| Some((h.0 - t0, h.2? / 1000.0))).collect();
                    if !measured.is_empty() {
                        series.push(Series::step("measured", measured));
                    }
                    if let Some(b) = self.budget_w {
                        let (first, last) = (self.power_history[0].0 - t0, 0.0);
                        series.push(Series::step("budget", vec![(first, b / 1000.0), (last, b / 1000.0)]));
                    }
                    blocks.push(Block::Chart(Chart::lines("Power over time", "seconds before now", "power (kW)", series)));
                }
            }
            None => blocks.push(Block::Text("Power: the cluster file has no power model (base_power_w, memory_power_w, cpu_max_power_w, cpu_cap_levels_w).".into())),
        }
        let total: u64 = self.overhead.iter().map(|o| o.1).sum();
        let flagged: u64 = self.overhead.iter().map(|o| o.2).sum();
        blocks.push(Block::Chart(Chart::bars(
            &format!("True overhead now: {total} canonical units idle, {flagged} flagged"),
            "node type",
            "canonical units idle",
            self.overhead.iter().map(|o| o.0.clone()).collect(),
            vec![("idle units".into(), self.overhead.iter().map(|o| o.1 as f64).collect()), ("flagged (a queued job fits)".into(), self.overhead.iter().map(|o| o.2 as f64).collect())],
        )));
        let t0 = self.now as f64;
        blocks.push(Block::Chart(Chart::lines(
            "Submissions and starts per second",
            "seconds before now",
            "jobs per second",
            vec![Series::step("submissions", self.rates.iter().map(|r| (r.0 - t0, r.1)).collect()), Series::step("starts", self.rates.iter().map(|r| (r.0 - t0, r.2)).collect())],
        )));
        let mut t = Table::new(&["partition", "reason", "jobs"]);
        for q in &self.queue {
            t.row(vec![q.0.clone(), q.1.clone(), q.2.to_string()]);
        }
        blocks.push(Block::Table(t));
        p.section("Now", blocks);
        p
    }
}
