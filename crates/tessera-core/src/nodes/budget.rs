//! A power budget under a queue policy (FCFS, EASY, conservative). A power-
//! unaware policy runs every busy node at full CPU power, so the budget powers
//! only so many nodes, and only those take jobs: the simulator's fixed-cap mode
//! (docs/power.md), on the cluster's own nodes. A node with no power model
//! counts no power and is always powered.
//!
//! Which nodes are powered is recomputed at each pass after a node's state, an
//! allocation or the budget changed: first every node that holds a job (what it
//! runs keeps its power; a node down with a job still counts busy until the job
//! has left), then the nodes that take jobs, in the cluster's order, while the
//! budget lasts. Every other node counts its idle power. So
//! Σ busy + Σ idle ≤ budget holds at every instant the budget allows it: the
//! budget can be lowered only to what the nodes holding jobs draw.

use crate::cluster::Cluster;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Budget {
    pub budget_w: f64,
    /// Per node: what it draws idle, and what it adds busy at full CPU power.
    idle_w: Vec<f64>,
    extra_w: Vec<f64>,
    /// Per node: its CPU's maximum power and lowest cap level (0 without a
    /// power model).
    pub cpu_max_w: Vec<f64>,
    #[serde(default)]
    pub cpu_min_w: Vec<f64>,
    /// By job slot: the highest cap the power governor holds a running job
    /// to (`Input::CapCeiling`), for the rest of its run.
    #[serde(default)]
    pub ceiling: std::collections::BTreeMap<u32, f64>,
    /// Per node: powered, so it may take jobs.
    pub on: Vec<bool>,
    /// What the powered nodes draw busy and the others idle (W).
    pub committed_w: f64,
    /// A node's state, an allocation or the budget changed since the last
    /// recomputation.
    pub due: bool,
}

impl Budget {
    /// The budget of a cluster with one (None without).
    pub fn of(cluster: &Cluster) -> Option<Budget> {
        let budget_w = cluster.power_budget_w?;
        let n = cluster.nodes.len();
        let (mut idle_w, mut extra_w, mut cpu_max_w, mut cpu_min_w) = (vec![0.0; n], vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        for (i, node) in cluster.nodes.iter().enumerate() {
            if let Some(p) = &cluster.node_types[node.node_type].power {
                idle_w[i] = p.idle_w;
                extra_w[i] = (p.max_w() - p.idle_w).max(0.0);
                cpu_max_w[i] = p.cpu_max_w;
                cpu_min_w[i] = p.cap_levels_w.first().copied().unwrap_or(p.cpu_max_w);
            }
        }
        Some(Budget { budget_w, idle_w, extra_w, cpu_max_w, cpu_min_w, ceiling: Default::default(), on: vec![false; n], committed_w: 0.0, due: true })
    }

    /// Power the nodes that hold jobs (`held`), then those that take jobs
    /// (`takes`) in order while the budget lasts.
    pub fn repower(&mut self, held: impl Fn(usize) -> bool, takes: impl Fn(usize) -> bool) {
        let n = self.on.len();
        let mut w: f64 = self.idle_w.iter().sum();
        for i in 0..n {
            self.on[i] = held(i);
            if self.on[i] {
                w += self.extra_w[i];
            }
        }
        for i in 0..n {
            if !self.on[i] && takes(i) && w + self.extra_w[i] <= self.budget_w + 1e-9 {
                self.on[i] = true;
                w += self.extra_w[i];
            }
        }
        self.committed_w = w;
        self.due = false;
    }

    /// What the nodes holding jobs draw busy and the others idle: the lowest
    /// budget that keeps them running.
    pub fn least_w(&self, held: impl Fn(usize) -> bool) -> f64 {
        self.idle_w.iter().sum::<f64>() + (0..self.on.len()).filter(|&i| held(i)).map(|i| self.extra_w[i]).sum::<f64>()
    }

    /// What a job of `nodes` nodes adds at least (the cheapest nodes that are
    /// not powered), for its pending reason.
    pub fn need_w(&self, nodes: u32) -> f64 {
        let mut extra: Vec<f64> = (0..self.on.len()).filter(|&i| !self.on[i]).map(|i| self.extra_w[i]).collect();
        extra.sort_unstable_by(f64::total_cmp);
        extra.iter().take(nodes as usize).sum()
    }

    /// What node `i` draws busy at full power.
    pub fn busy_w(&self, i: usize) -> f64 {
        self.idle_w[i] + self.extra_w[i]
    }

    /// Watts of the budget not committed.
    pub fn free_w(&self) -> f64 {
        (self.budget_w - self.committed_w).max(0.0)
    }

    /// Whether the budget powers all of `nodes` busy at once, every other node
    /// idle: whether a job placed on them may ever run.
    pub fn powers(&self, nodes: impl Iterator<Item = usize>) -> bool {
        let w: f64 = self.idle_w.iter().sum::<f64>() + nodes.map(|i| self.extra_w[i]).sum::<f64>();
        w <= self.budget_w + 1e-9
    }
}
