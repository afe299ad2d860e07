//! Power-aware replays: trace jobs become moldable, malleable PASS jobs on an
//! overprovisioned machine (Sarood et al., SC 2014, §VII-B).
//!
//! A trace records one size per job and no power behaviour, so every job gets, by a
//! seeded rule ([`PowerRule`], documented in `docs/power.md`):
//! * an application profile drawn uniformly from the paper's five (Table IV);
//! * its maximum size `n_max = ceil(procs / cores_per_node)` (the trace size) and
//!   its minimum `n_min = round(θ · n_max)`, θ ~ U[θ_lo, θ_hi] (paper: [0.2, 0.6]);
//! * Downey's average parallelism A = n_max · U[a_lo, a_hi] and variance σ ~ U[σ_lo, σ_hi];
//! * T1 such that the job takes its trace runtime on `n_max` nodes at full CPU
//!   power, the configuration the trace ran in.
//!
//! The draw for a job depends only on the seed and the job's id, so a job gets the
//! same profile in every subset, time scaling and policy.
//!
//! Two ways to run such a workload: the PARM engine (all nodes, caps chosen per
//! job), or a queue policy at one fixed cap on as many nodes as the budget powers
//! at that cap (the paper's SLURM baseline at full power, and naive
//! overprovisioning below it), with every runtime and limit stretched by the job's
//! slowdown at that cap.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tessera_core::power::{AppProfile, Downey, ParmConfig, PowerJob, PRESETS};
use tessera_core::PowerSetupInfo;
use tessera_workload::jobs::TraceJob;

/// The seeded rule that gives trace jobs their power and scaling behaviour.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PowerRule {
    pub seed: u64,
    /// n_min = round(θ · n_max), θ drawn from this range.
    pub theta: (f64, f64),
    /// A = n_max · x, x drawn from this range.
    pub parallelism: (f64, f64),
    /// Downey's σ drawn from this range.
    pub sigma: (f64, f64),
    /// Data per node (MB) a resize redistributes: m = n_max · this.
    pub mem_per_node_mb: f64,
    /// The package's base power c of p = a f³ + b f + c, which the paper leaves at
    /// "13–14 W" (default 13.5).
    pub package_base_w: f64,
}

impl Default for PowerRule {
    fn default() -> Self {
        PowerRule { seed: 1, theta: (0.2, 0.6), parallelism: (0.5, 2.0), sigma: (0.0, 1.0), mem_per_node_mb: 1024.0, package_base_w: tessera_core::power::pass::BASE_PACKAGE_POWER_W }
    }
}

impl PowerRule {
    /// The PASS job of trace job `j` on `n_max` nodes, on CPUs whose maximum power
    /// is `cpu_max_w`.
    pub fn job(&self, j: &TraceJob, n_max: u32, cpu_max_w: f64) -> PowerJob {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ (j.id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let app = AppProfile { c: self.package_base_w, ..PRESETS[rng.gen_range(0..PRESETS.len())] };
        let draw = |rng: &mut ChaCha8Rng, (lo, hi): (f64, f64)| if hi > lo { rng.gen_range(lo..hi) } else { lo };
        let theta = draw(&mut rng, self.theta);
        let a = (n_max as f64 * draw(&mut rng, self.parallelism)).max(1.0);
        let sigma = draw(&mut rng, self.sigma);
        let scaling = Downey { a, sigma };
        let n_min = ((theta * n_max as f64).round() as u32).clamp(1, n_max);
        // the trace ran on n_max nodes at full power; a job takes at least 1 s
        let runtime = j.effective_runtime().max(1) as f64;
        PowerJob::sized(app, scaling, runtime, n_min, n_max, cpu_max_w, n_max as f64 * self.mem_per_node_mb, true)
    }
}

/// How a power-aware workload is scheduled.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub enum PowerMode {
    /// PARM on every node of the machine.
    Parm(ParmConfig),
    /// A queue policy with every CPU at `cap_w`, on the nodes the budget powers at it.
    FixedCap { cap_w: f64 },
}

/// The nodes of an overprovisioned machine as its cluster file names them, for
/// the accounting records of a run: PARM sizes jobs in whole nodes and places
/// none on a named node, so a run is recorded as one pool of these nodes.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct PowerNodes {
    /// The machine's nodes as a hostlist (`nid[00001-05880]`); empty when the
    /// machine has no cluster file (the paper's testbed).
    pub hostlist: String,
    /// The names of their node types, in the cluster file's order.
    pub node_types: Vec<String>,
    /// The partition they form (the cluster's default partition).
    pub partition: String,
    /// Cores of one node (the fewest, should the nodes differ).
    pub cores_per_node: u32,
}

impl PowerNodes {
    /// The nodes [`tessera_core::Cluster::power_machine`] takes: the default partition's.
    pub fn of(cluster: &tessera_core::Cluster) -> PowerNodes {
        let part = cluster.default_partition();
        let names: Vec<&str> = part.nodes.iter().map(|&n| cluster.nodes[n].name.as_str()).collect();
        let node_types = (0..cluster.node_types.len()).filter(|&t| part.nodes.iter().any(|&n| cluster.nodes[n].node_type == t)).map(|t| cluster.node_types[t].name.clone()).collect();
        PowerNodes {
            hostlist: tessera_core::hostlist::compress(&names),
            node_types,
            partition: part.name.clone(),
            cores_per_node: part.nodes.iter().map(|&n| cluster.nodes[n].cores).min().unwrap_or(1).max(1),
        }
    }
}

/// An overprovisioned machine, its rule for trace jobs and how it is scheduled.
#[derive(Clone, Debug, PartialEq)]
pub struct PowerSetup {
    pub name: String,
    pub info: PowerSetupInfo,
    /// Its nodes as the cluster file names them (for records and reports).
    pub hardware: PowerNodes,
    pub rule: PowerRule,
    pub mode: PowerMode,
    /// PARM: add each decision's measured solve time to the jobs it starts or
    /// reconfigures, as the paper's completion times do (runs then depend on the
    /// machine's speed).
    pub charge_solve_time: bool,
}

impl PowerSetup {
    /// Power of a busy node at CPU cap `cap_w`.
    pub fn busy_w(&self, cap_w: f64) -> f64 {
        cap_w + self.info.machine.node_base_w
    }

    /// Nodes the budget powers with every CPU at `cap_w` (at most the machine's).
    pub fn powered_nodes(&self, cap_w: f64) -> u32 {
        let m = &self.info.machine;
        ((m.budget_w / self.busy_w(cap_w)).floor() as u64).min(m.nodes as u64) as u32
    }

    /// Nodes the scheduler uses: all of them for PARM, the powered ones at a fixed cap.
    pub fn nodes(&self) -> u32 {
        match &self.mode {
            PowerMode::Parm(_) => self.info.machine.nodes,
            PowerMode::FixedCap { cap_w } => self.powered_nodes(*cap_w),
        }
    }

    /// The largest job kept: what the budget runs at full power, so that every mode
    /// replays the same jobs.
    pub fn size_limit(&self) -> u32 {
        self.powered_nodes(self.info.cpu_max_w)
    }
}


/// `t · s` rounded up to whole seconds (never shorter than `t`).
pub fn stretch(t: i64, s: f64) -> i64 {
    (t as f64 * s - 1e-9).ceil().max(t as f64) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: i64, procs: u32, runtime: i64) -> TraceJob {
        TraceJob { id, submit: 0, procs, estimate: runtime * 2, runtime, mem_per_proc_mb: 0, queue: -1, preceding: -1, think: -1, user: -1, group: -1 }
    }

    #[test]
    fn rule_reproduces_the_trace_runtime_and_is_deterministic_per_job() {
        let rule = PowerRule::default();
        for id in 1..200 {
            let j = job(id, 64, 3600);
            let pj = rule.job(&j, 64, 60.0);
            assert!((pj.time(64, 60.0) - 3600.0).abs() < 1e-6, "t(n_max, full power) is the trace runtime");
            assert!(pj.n_min >= 13 && pj.n_min <= 38, "θ in [0.2, 0.6]: n_min {}", pj.n_min);
            assert!(pj.scaling.a >= 32.0 && pj.scaling.a <= 128.0);
            assert_eq!(rule.job(&j, 64, 60.0), pj, "same seed and id, same job");
        }
        let apps: std::collections::BTreeSet<_> = (1..200).map(|id| rule.job(&job(id, 8, 10), 8, 60.0).app.name).collect();
        assert_eq!(apps.len(), PRESETS.len(), "every profile is drawn");
        let other = PowerRule { seed: 2, ..PowerRule::default() };
        assert!((1..50).any(|id| other.job(&job(id, 64, 100), 64, 60.0) != rule.job(&job(id, 64, 100), 64, 60.0)));
    }

    #[test]
    fn stretch_rounds_up_and_never_shortens() {
        assert_eq!(stretch(100, 1.0), 100);
        assert_eq!(stretch(100, 1.234), 124);
        assert_eq!(stretch(0, 2.0), 0);
    }
}
