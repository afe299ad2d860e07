//! The cluster model: nodes grouped by node type (a hardware generation) and into
//! partitions, with the benchmark and scaling factor of every node type, node
//! features for node sets, and site and partition defaults.
//!
//! Parsed from TOML by [`Cluster::from_toml`] (see `config.rs` and
//! `docs/cluster-file.md`). Parsing is pure: text in, model out.

pub(crate) mod config;

use crate::nodeset::NodeSetSpec;
use crate::Time;

/// A validated cluster.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Cluster {
    pub name: String,
    pub node_types: Vec<NodeType>,
    pub nodes: Vec<Node>,
    pub partitions: Vec<Partition>,
    /// What a scaling factor of 1 means.
    pub reference: Reference,
    /// Site default node set (Moab NODESETPOLICY, NODESETATTRIBUTE, …).
    pub nodeset: Option<NodeSetSpec>,
    /// NODESETDELAY: how long a job with NODESETPLUS DELAY waits for a single set.
    pub nodeset_delay: Time,
    /// The machine room's power budget (W), for power-aware scheduling.
    pub power_budget_w: Option<f64>,
    /// Gang scheduling's time slice (Slurm's SchedulerTimeSlice), seconds.
    pub time_slice_s: Time,
    /// Slurm's bf_interval: EASY and conservative backfill at most once in
    /// this many seconds, the head of the queue alone starting between
    /// (`backfill_interval`; None: backfill in every pass).
    pub backfill_interval_s: Option<Time>,
    /// The accounts file the cluster file names (`accounts = "..."`), as
    /// written (relative to the cluster file); the driver reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accounts_file: Option<String>,
}

/// What happens to a partition's running jobs when a job of a higher priority
/// tier needs their cores, or (gang) when jobs of the partition share cores
/// (Slurm's PreemptMode, with preempt/partition_prio).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum PreemptMode {
    /// Never preempted.
    #[default]
    Off,
    /// Suspended (SIGTSTP, SIGSTOP) by a job of a higher tier; resumed when its
    /// cores are free again. It keeps its memory and GPUs meanwhile.
    Suspend,
    /// Jobs of the partition share cores, up to `oversubscribe` jobs per core,
    /// and take turns: every time slice the jobs suspended longest resume in place
    /// of jobs that ran a whole slice. Higher tiers suspend them too.
    Gang,
}

/// What [`Cluster::power_machine`] finds.
#[derive(Debug, Clone, PartialEq)]
pub struct PowerSetupInfo {
    pub machine: crate::power::PowerMachine,
    /// The CPU's maximum power (W): what a power-unaware scheduler runs at.
    pub cpu_max_w: f64,
    /// Trace processors per node: a job of `procs` processors needs
    /// `ceil(procs / cores_per_node)` nodes.
    pub cores_per_node: u32,
}

/// How a node type draws power (PARM's model: base + memory + CPU package).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NodePower {
    /// Everything but CPU and memory (W).
    pub base_w: f64,
    /// Memory, capped at a fixed value (W).
    pub memory_w: f64,
    /// CPU package power caps the node supports (W), ascending.
    pub cap_levels_w: Vec<f64>,
    /// The CPU's maximum (uncapped) power (W).
    pub cpu_max_w: f64,
    /// Power an idle node draws (W); the paper counts none.
    pub idle_w: f64,
}

impl NodePower {
    /// A busy node's power under CPU cap `p`: p + memory + base.
    pub fn busy_w(&self, cap: f64) -> f64 {
        cap + self.memory_w + self.base_w
    }

    /// A busy node at full CPU power.
    pub fn max_w(&self) -> f64 {
        self.busy_w(self.cpu_max_w)
    }
}

/// The benchmark unit a node type was measured in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum BenchmarkKind {
    /// HEP-SPEC06.
    Hs06,
    /// HEPscore23, normalised to HEP-SPEC06 on the reference machine, so used as
    /// HS06-equivalent here.
    HepScore23,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NodeType {
    pub name: String,
    /// Physical CPUs (sockets) per node.
    pub sockets: u32,
    pub cores_per_socket: u32,
    pub memory_mb: u64,
    pub gpus: u32,
    pub features: Vec<String>,
    pub network: Option<String>,
    /// Processor speed (Moab PROCSPEED, e.g. MHz); defaults to the scaling factor.
    pub speed: f64,
    /// Benchmark per logical CPU (core), in HS06 (HEPscore23 counted 1:1), if known.
    pub benchmark_per_core: Option<f64>,
    pub benchmark_kind: Option<BenchmarkKind>,
    /// Per-core benchmark / the reference's. 1 when the cluster has no benchmarks.
    pub factor: f64,
    /// The node type holds negative affinity (node sets with PRIORITYTYPE AFFINITY
    /// avoid it; a stand-in for negative-affinity reservations).
    pub negative_affinity: bool,
    /// How the node draws power, when the cluster is power-aware.
    pub power: Option<NodePower>,
}

impl NodeType {
    /// Logical CPUs per node (cores; Tessera counts one logical CPU per core).
    pub fn cores(&self) -> u32 {
        self.sockets * self.cores_per_socket
    }

    /// Benchmark of a whole node, in HS06.
    pub fn benchmark_per_node(&self) -> Option<f64> {
        self.benchmark_per_core.map(|b| b * self.cores() as f64)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Node {
    pub name: String,
    /// Index into [`Cluster::node_types`].
    pub node_type: usize,
    pub cores: u32,
    pub memory_mb: u64,
    pub gpus: u32,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Partition {
    pub name: String,
    /// Indices into [`Cluster::nodes`], in hostlist order.
    pub nodes: Vec<usize>,
    pub default: bool,
    /// Whole nodes per job (exclusive) or cores on shared nodes.
    pub exclusive: bool,
    /// Exclusive partitions: SWF processors per node when mapping a job to nodes.
    pub cores_per_node: u32,
    /// Default node set of the partition (Moab class DEFAULT.NODESET).
    pub nodeset: Option<NodeSetSpec>,
    /// The canonical unit of accounting for the partition's nodes (Andrijauskas,
    /// Sfiligoi, Würthwein: "1 core + 2 GB" for CPU nodes, "1 GPU" for GPU nodes).
    pub canonical_unit: CanonicalUnit,
    /// Slurm's PriorityTier: pending jobs of a higher tier go first, and may
    /// preempt running jobs of lower tiers whose partition allows it.
    pub priority_tier: u32,
    /// Slurm's PriorityJobFactor: the partition factor of multifactor
    /// priority is this over the largest of any partition.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub priority_job_factor: u32,
    pub preempt: PreemptMode,
    /// Gang partitions: how many jobs may share a core (Slurm OverSubscribe=FORCE:N).
    pub oversubscribe: u32,
    /// Jobs of a trace whose queue number (SWF field 15) is this go to this
    /// partition.
    pub swf_queue: Option<i64>,
    /// GPUs a job of a shared partition holds on each of its nodes when it does
    /// not say: every job of a trace (SWF has no GPU field), and a live job
    /// submitted without `--gpus`/`--gpus-per-node`. (A job of an exclusive
    /// partition holds every GPU of its nodes.)
    pub default_gpus_per_node: u32,
    /// Memory (MiB) a job of a shared partition asks per processor when it
    /// does not say (Slurm's DefMemPerCPU): a live job submitted without
    /// `--mem` or `--mem-per-cpu`, a trace job without a requested memory
    /// (SWF field 10 is -1). 0: such a job asks none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub def_mem_per_cpu_mb: u64,
    /// Slurm's MaxTime: the longest time limit a job may have here (None:
    /// unlimited); a job asking more can never run and is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_time_s: Option<Time>,
    /// Slurm's DefaultTime: the time limit of a live job that gives none
    /// (None: MaxTime, else the controller's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_time_s: Option<Time>,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

fn one() -> u32 {
    1
}

fn is_one(x: &u32) -> bool {
    *x == 1
}

/// Slurm's default SchedulerTimeSlice.
pub const DEFAULT_TIME_SLICE_S: Time = 30;
/// Slurm's default for OverSubscribe=FORCE.
pub const DEFAULT_OVERSUBSCRIBE: u32 = 4;

/// Most nodes a cluster may have: 1,048,576, some six times the node count of
/// the largest machines built. It bounds the time and memory of reading a
/// cluster file (about 0.8 s for a million nodes) and of importing one.
pub const MAX_NODES: usize = 1 << 20;

/// Most nodes a cluster's partitions may name in all, for each node it may
/// have (a node counts once for each partition that holds it).
pub const MEMBERS_PER_NODE: usize = 8;

impl Partition {
    /// A partition with default scheduling options (tier 1, no preemption).
    pub fn plain() -> Partition {
        Partition {
            name: String::new(),
            nodes: Vec::new(),
            default: false,
            exclusive: false,
            cores_per_node: 1,
            nodeset: None,
            canonical_unit: CanonicalUnit::CPU,
            priority_tier: 1,
            priority_job_factor: 1,
            preempt: PreemptMode::Off,
            oversubscribe: 1,
            swf_queue: None,
            default_gpus_per_node: 0,
            def_mem_per_cpu_mb: 0,
            max_time_s: None,
            default_time_s: None,
        }
    }
}

/// Thresholds of a canonical unit; 0 means the resource is not part of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CanonicalUnit {
    pub cores: u32,
    pub memory_mb: u64,
    pub gpus: u32,
}

impl CanonicalUnit {
    /// "1 core + 2 GB".
    pub const CPU: CanonicalUnit = CanonicalUnit { cores: 1, memory_mb: 2048, gpus: 0 };
    /// "1 GPU".
    pub const GPU: CanonicalUnit = CanonicalUnit { cores: 0, memory_mb: 0, gpus: 1 };

    /// The largest k such that k times every threshold fits in the free resources
    /// (0 as soon as one thresholded resource is fully used). A threshold on a
    /// resource the node does not track (capacity 0) is ignored.
    pub fn units(&self, free: (u64, u64, u64), capacity: (u64, u64, u64)) -> u64 {
        let mut k = u64::MAX;
        for (thr, f, cap) in [(self.cores as u64, free.0, capacity.0), (self.memory_mb, free.1, capacity.1), (self.gpus as u64, free.2, capacity.2)] {
            if thr > 0 && cap > 0 {
                k = k.min(f / thr);
            }
        }
        if k == u64::MAX { 0 } else { k }
    }

    /// Units free on a node of `capacity` while `used` is held (never below zero:
    /// a record that holds more than the node has leaves nothing free).
    pub fn idle_units(&self, capacity: (u64, u64, u64), used: (u64, u64, u64)) -> u64 {
        self.units((capacity.0.saturating_sub(used.0), capacity.1.saturating_sub(used.1), capacity.2.saturating_sub(used.2)), capacity)
    }

    /// Canonical units a request needs: the largest of request / threshold,
    /// rounded up, over the thresholded resources.
    pub fn need(&self, cores: u64, memory_mb: u64, gpus: u64) -> u64 {
        let mut k = 0;
        for (thr, r) in [(self.cores as u64, cores), (self.memory_mb, memory_mb), (self.gpus as u64, gpus)] {
            if thr > 0 {
                k = k.max(r.div_ceil(thr));
            }
        }
        k
    }
}

impl std::fmt::Display for CanonicalUnit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if self.cores > 0 {
            parts.push(format!("{} core{}", self.cores, if self.cores == 1 { "" } else { "s" }));
        }
        if self.memory_mb > 0 {
            parts.push(if self.memory_mb % 1024 == 0 { format!("{} GB", self.memory_mb / 1024) } else { format!("{} MB", self.memory_mb) });
        }
        if self.gpus > 0 {
            parts.push(format!("{} GPU{}", self.gpus, if self.gpus == 1 { "" } else { "s" }));
        }
        f.write_str(&parts.join(" + "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paper's Figure 2 cases, thresholds 1 core + 2 GB.
    #[test]
    fn true_overhead_of_the_papers_examples() {
        let cap = (10, 16 * 1024, 0);
        let u = CanonicalUnit::CPU;
        assert_eq!(u.units((3, 1024, 0), cap), 0);
        assert_eq!(u.units((3, 4 * 1024, 0), cap), 2);
        assert_eq!(u.units((3, 7 * 1024, 0), cap), 3);
        assert_eq!(u.units((0, 7 * 1024, 0), cap), 0, "all cores allocated");
        assert_eq!(u.units((5, 0, 0), cap), 0, "all memory allocated");
        assert_eq!(u.units((3, 0, 0), (10, 0, 0)), 3, "memory not tracked on the node");
        assert_eq!(CanonicalUnit::GPU.units((8, 64, 2), (8, 64, 4)), 2);
        assert_eq!(u.need(2, 4096, 0), 2);
        assert_eq!(u.need(1, 5000, 0), 3);
        assert_eq!(u.to_string(), "1 core + 2 GB");
    }
}

/// What a scaling factor of 1 means: a named node type, or an abstract strength.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Reference {
    /// The node type name, or `abstract`, or `none` (no benchmarks: every factor is 1).
    pub name: String,
    /// HS06 per core of the reference (0 when the cluster has no benchmarks).
    pub hs06_per_core: f64,
}

pub use config::ClusterError;

impl Cluster {
    /// The default partition as one overprovisioned machine under the power budget
    /// (PARM's model): its node count, the power model its nodes share, and the
    /// trace processors per node (jobs are sized in whole nodes).
    pub fn power_machine(&self) -> Result<PowerSetupInfo, String> {
        let budget_w = self.power_budget_w.ok_or_else(|| format!("cluster `{}` has no power_budget_w; power-aware scheduling needs one", self.name))?;
        let part = &self.partitions[self.default_partition_index()];
        let first = &self.nodes[part.nodes[0]];
        let t0 = &self.node_types[first.node_type];
        let power = t0.power.clone().ok_or_else(|| format!("cluster `{}`: node type `{}` has no power model; power-aware scheduling needs one on every node type", self.name, t0.name))?;
        for &n in &part.nodes {
            let t = &self.node_types[self.nodes[n].node_type];
            if t.power.as_ref() != Some(&power) || (!part.exclusive && self.nodes[n].cores != first.cores) {
                return Err(format!(
                    "partition `{}`: power-aware scheduling models identical nodes, but node types `{}` and `{}` differ in power model or cores",
                    part.name, self.node_types[first.node_type].name, t.name
                ));
            }
        }
        let cores_per_node = if part.exclusive { part.cores_per_node } else { first.cores };
        Ok(PowerSetupInfo {
            machine: crate::power::PowerMachine {
                nodes: part.nodes.len() as u32,
                budget_w,
                node_base_w: power.base_w + power.memory_w,
                idle_w: power.idle_w,
                cap_levels_w: power.cap_levels_w.clone(),
                node_ids: part.nodes.iter().map(|&n| n as u32).collect(),
                node_cores: first.cores,
            },
            cpu_max_w: power.cpu_max_w,
            cores_per_node: cores_per_node.max(1),
        })
    }

    /// Whether `budget_w` can feed this cluster: its nodes draw their idle power
    /// whatever runs, so a budget below that is broken at every instant (the
    /// simulator's power meter and PARM's invariant would fail), and one that
    /// leaves too little of it to run a single node at its lowest CPU cap runs
    /// no job at all. The error says which, with the watts; the cluster file's
    /// reader asks it of `power_budget_w`, the simulator of `--budget-w`.
    /// Node types without a power model count no power.
    pub fn check_power_budget(&self, budget_w: f64) -> Result<(), String> {
        let mut count = vec![0u64; self.node_types.len()];
        for n in &self.nodes {
            count[n.node_type] += 1;
        }
        // watts idle, nodes by idle power (ascending), and the node type that
        // adds least to run one node at its lowest cap
        let mut idle_w = 0.0;
        let mut by_idle: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
        let mut cheapest: Option<(f64, &NodeType, f64)> = None;
        for (t, &k) in self.node_types.iter().zip(&count) {
            let Some(p) = &t.power else { continue };
            if k == 0 {
                continue;
            }
            idle_w += k as f64 * p.idle_w;
            if p.idle_w > 0.0 {
                *by_idle.entry(p.idle_w.to_bits()).or_default() += k;
            }
            let lowest = p.cap_levels_w.first().copied().unwrap_or(p.cpu_max_w);
            let extra = p.busy_w(lowest) - p.idle_w;
            if cheapest.is_none_or(|(e, _, _)| extra < e) {
                cheapest = Some((extra, t, lowest));
            }
        }
        let extra_w = cheapest.map_or(0.0, |c| c.0.max(0.0));
        let needed_w = idle_w + extra_w;
        let one_node = cheapest.map(|(_, t, cap)| format!("node type `{}` at its lowest CPU cap, {cap} W", t.name)).unwrap_or_default();
        if idle_w > budget_w {
            let mut groups: Vec<String> = by_idle.iter().take(3).enumerate().map(|(i, (w, k))| format!("{k}{} at {} W", if i == 0 { " nodes" } else { "" }, f64::from_bits(*w))).collect();
            if by_idle.len() > 3 {
                groups.push("…".into());
            }
            let why = if extra_w > 0.0 { format!(" (the idle power, and {extra_w} W more to run one node: {one_node})") } else { String::new() };
            return Err(format!("the idle power of all nodes, {idle_w} W ({}), exceeds the budget, {budget_w} W: expected at least {needed_w} W{why}", groups.join(", ")));
        }
        // (the engine's own test of a job's fit allows the same 1e-9 W)
        if budget_w + 1e-9 < needed_w {
            return Err(format!(
                "{budget_w} W cannot run one node: the idle power of all nodes is {idle_w} W and a busy node adds at least {extra_w} W ({one_node}): expected at least {needed_w} W"
            ));
        }
        Ok(())
    }

    /// A single pool of `procs` processors: one node, one partition. This is the
    /// machine when no cluster file is given.
    pub fn pool(procs: u32) -> Cluster {
        Cluster {
            name: format!("pool-{procs}"),
            node_types: vec![NodeType {
                name: "pool".into(),
                sockets: 1,
                cores_per_socket: procs,
                memory_mb: 0,
                gpus: 0,
                features: vec![],
                network: None,
                speed: 1.0,
                benchmark_per_core: None,
                benchmark_kind: None,
                factor: 1.0,
                negative_affinity: false,
                power: None,
            }],
            nodes: vec![Node { name: "pool".into(), node_type: 0, cores: procs, memory_mb: 0, gpus: 0 }],
            partitions: vec![Partition {
                name: "pool".into(),
                nodes: vec![0],
                default: true,
                exclusive: false,
                cores_per_node: procs,
                nodeset: None,
                canonical_unit: CanonicalUnit::CPU,
                ..Partition::plain()
            }],
            reference: Reference { name: "none".into(), hs06_per_core: 0.0 },
            nodeset: None,
            nodeset_delay: 0,
            power_budget_w: None,
            time_slice_s: DEFAULT_TIME_SLICE_S,
            backfill_interval_s: None,
            accounts_file: None,
        }
    }

    /// Total processors (cores) of the machine.
    pub fn total_cores(&self) -> u64 {
        self.nodes.iter().map(|n| n.cores as u64).sum()
    }

    pub fn default_partition_index(&self) -> usize {
        self.partitions.iter().position(|p| p.default).unwrap_or(0)
    }

    pub fn default_partition(&self) -> &Partition {
        &self.partitions[self.default_partition_index()]
    }

    pub fn partition_index(&self, name: &str) -> Option<usize> {
        self.partitions.iter().position(|p| p.name == name)
    }

    /// The node type of node `n`.
    pub fn type_of(&self, n: usize) -> &NodeType {
        &self.node_types[self.nodes[n].node_type]
    }

    /// Whether every node runs at the same pace (all factors equal).
    pub fn is_homogeneous(&self) -> bool {
        self.node_types.windows(2).all(|w| w[0].factor == w[1].factor)
    }
}

/// A cluster replacing another under a running engine ([`crate::Input::Reconfigure`],
/// as `scontrol reconfigure` rereads slurm.conf): nodes and partitions are
/// matched by name, so a node keeps its jobs when it keeps its name, whatever
/// its place in the file.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Reconfiguration {
    pub cluster: Cluster,
    /// By node of the old cluster: its index in the new one (None: removed).
    pub nodes: Vec<Option<u32>>,
    /// By partition of the old cluster: its index in the new one.
    pub partitions: Vec<Option<u32>>,
    /// The old cluster's node and partition names (to name what is removed).
    pub old_nodes: Vec<String>,
    pub old_partitions: Vec<String>,
}

impl Reconfiguration {
    /// `new` replacing `old`, nodes and partitions matched by name.
    pub fn between(old: &Cluster, new: Cluster) -> Reconfiguration {
        let node_at: std::collections::BTreeMap<&str, u32> = new.nodes.iter().enumerate().map(|(i, n)| (n.name.as_str(), i as u32)).collect();
        let nodes = old.nodes.iter().map(|n| node_at.get(n.name.as_str()).copied()).collect();
        let partitions = old.partitions.iter().map(|p| new.partition_index(&p.name).map(|i| i as u32)).collect();
        Reconfiguration {
            nodes,
            partitions,
            old_nodes: old.nodes.iter().map(|n| n.name.clone()).collect(),
            old_partitions: old.partitions.iter().map(|p| p.name.clone()).collect(),
            cluster: new,
        }
    }

    /// The nodes `cluster` adds, removes and changes (cores, memory, GPUs,
    /// node type, factor, features or partitions), by name, each in the order
    /// of the cluster that has them.
    pub fn differences(old: &Cluster, new: &Cluster) -> (Vec<String>, Vec<String>, Vec<String>) {
        let shapes = |c: &Cluster| -> Vec<String> {
            let mut parts = vec![Vec::new(); c.nodes.len()];
            for p in &c.partitions {
                for &i in &p.nodes {
                    parts[i].push(p.name.as_str());
                }
            }
            c.nodes
                .iter()
                .zip(parts)
                .map(|(n, parts)| {
                    let t = &c.node_types[n.node_type];
                    format!("{} {} {} {} {} {:?} {:?}", n.cores, n.memory_mb, n.gpus, t.name, t.factor, t.features, parts)
                })
                .collect()
        };
        let (was, is) = (shapes(old), shapes(new));
        let r = Reconfiguration::between(old, new.clone());
        let removed = r.nodes.iter().zip(&old.nodes).filter(|(m, _)| m.is_none()).map(|(_, n)| n.name.clone()).collect();
        let mut added = Vec::new();
        let mut changed = Vec::new();
        for (i, o) in r.old_index().into_iter().enumerate() {
            match o {
                None => added.push(new.nodes[i].name.clone()),
                Some(o) if was[o as usize] != is[i] => changed.push(new.nodes[i].name.clone()),
                Some(_) => {}
            }
        }
        (added, removed, changed)
    }

    /// By node of the new cluster: its index in the old one (None: added).
    pub fn old_index(&self) -> Vec<Option<u32>> {
        let mut v = vec![None; self.cluster.nodes.len()];
        for (o, n) in self.nodes.iter().enumerate() {
            if let Some(n) = n {
                v[*n as usize] = Some(o as u32);
            }
        }
        v
    }
}
