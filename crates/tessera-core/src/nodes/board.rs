//! The node-level machine: what every node has (static), what is free (a view),
//! and how a job is placed on free nodes, node sets included.
//!
//! Placement is a pure function of a [`Free`] view, so the same code answers "can
//! it start now", "where would it start at the shadow time" and "does it fit in
//! this window of the profile".

use crate::cluster::Cluster;
use crate::job::JobSpec;
use crate::nodeset::{NodeSetSpec, SetAttribute, SetPlus, SetPolicy, SetPriority};
use crate::Time;
use serde::{Deserialize, Serialize};

/// What one node has; factor and speed come from its node type.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct NodeStatic {
    pub cores: u32,
    /// 0: memory is not tracked on this node.
    pub mem: u64,
    pub gpus: u32,
    pub factor: f64,
    pub speed: f64,
    pub features: Vec<String>,
    pub network: Option<String>,
    pub negative_affinity: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PartStatic {
    pub nodes: Vec<u32>,
    pub member: Vec<bool>,
    pub exclusive: bool,
    pub cpn: u32,
    pub nodeset: Option<NodeSetSpec>,
    /// Distinct scaling factors of the partition's nodes, fastest first (the
    /// timeline walks them slowest first).
    pub tiers: Vec<f64>,
    /// Priority tier and preemption mode; gang partitions share each core among
    /// up to `over` jobs.
    pub tier: u32,
    pub preempt: crate::cluster::PreemptMode,
    pub over: u32,
    /// Slurm's MaxTime: the longest time limit a job of the partition may ask.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_time: Option<Time>,
}

/// Free cores, memory and GPUs per node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Free {
    pub cores: Vec<u32>,
    pub mem: Vec<u64>,
    pub gpus: Vec<u32>,
}

impl Free {
    pub fn copy_from(&mut self, o: &Free) {
        self.cores.clear();
        self.cores.extend_from_slice(&o.cores);
        self.mem.clear();
        self.mem.extend_from_slice(&o.mem);
        self.gpus.clear();
        self.gpus.extend_from_slice(&o.gpus);
    }
    /// Keep on each node no more than `o` has.
    pub fn clamp_to(&mut self, o: &Free) {
        for n in 0..self.cores.len() {
            self.cores[n] = self.cores[n].min(o.cores[n]);
            self.mem[n] = self.mem[n].min(o.mem[n]);
            self.gpus[n] = self.gpus[n].min(o.gpus[n]);
        }
    }
    /// Node `n` of this view becomes the least of `a` and `b` there.
    pub fn clamp_node(&mut self, a: &Free, b: &Free, n: usize) {
        self.cores[n] = a.cores[n].min(b.cores[n]);
        self.mem[n] = a.mem[n].min(b.mem[n]);
        self.gpus[n] = a.gpus[n].min(b.gpus[n]);
    }
    pub fn take(&mut self, a: &Allocation) {
        for p in &a.parts {
            self.cores[p.node as usize] -= p.cores;
            self.mem[p.node as usize] -= p.mem;
            self.gpus[p.node as usize] -= p.gpus;
        }
    }
    pub fn give(&mut self, a: &Allocation) {
        for p in &a.parts {
            self.cores[p.node as usize] += p.cores;
            self.mem[p.node as usize] += p.mem;
            self.gpus[p.node as usize] += p.gpus;
        }
    }
}

/// Cores, memory and GPUs a job holds on one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocPart {
    pub node: u32,
    pub cores: u32,
    pub mem: u64,
    pub gpus: u32,
}

/// An allocation's parts, one per node: held inline for a job on one node
/// (every job of a pool), so a start allocates nothing for them. Saved and
/// read back as a list, as a vector is.
pub type Parts = smallvec::SmallVec<[AllocPart; 1]>;

/// Where a job runs, and the pace it runs at: the scaling factor of its slowest node.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Allocation {
    pub parts: Parts,
    pub factor: f64,
    /// Processors (tasks) placed.
    pub procs: u32,
}

/// Why a job can never run on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NeverFits {
    UnknownPartition,
    /// More processors, memory or GPUs than its partition could ever give.
    TooLarge,
    /// More nodes at full power than the power budget can feed at once (a
    /// queue policy on a power-budgeted cluster).
    PowerBudget,
    /// Its layout (node count, tasks per node, cores per task, whole nodes,
    /// nodes named or excluded) fits no set of its partition's nodes.
    Shape,
    /// A time limit above its partition's MaxTime.
    TimeLimit,
}

impl NeverFits {
    /// Why, in words ([`crate::Rejection::NeverFits`]).
    pub fn why(self) -> &'static str {
        match self {
            NeverFits::UnknownPartition => "no such partition",
            NeverFits::TooLarge => "it asks for more processors, memory or GPUs than its partition has",
            NeverFits::PowerBudget => "it needs more nodes at full power than the power budget can feed at once",
            NeverFits::Shape => "its partition's nodes can never hold it as it asks (-N, --ntasks-per-node, -c, --exclusive, -w, -x)",
            NeverFits::TimeLimit => "its time limit is above its partition's MaxTime (PartitionTimeLimit)",
        }
    }
}

/// Why a job cannot be placed on a view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Blocked {
    /// Not enough free resources anywhere it may run.
    Resources,
    /// Enough resources, but not within a node set as the job requires.
    NodeSet,
}

/// A job's demand on the board, fixed at submission.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(from = "DemandForm", into = "DemandForm")]
pub(crate) struct Demand {
    pub part: u32,
    pub procs: u32,
    /// Exclusive partitions: nodes needed and tasks per node.
    pub nodes: u32,
    pub mem_per_proc: u64,
    /// GPUs on every node used.
    pub gpus_per_node: u32,
    /// Index into [`Board::sets`]: the node sets the job must (or prefers to) use.
    pub sets: Option<u32>,
    pub submit: Time,
    /// Its layout, as Slurm asks it ([`crate::Shape`]): exact nodes (0: any),
    /// at most tasks per node (0: no cap), cores per task (0 or 1: one),
    /// whole nodes; and nodes it must use and may not (`-w`, `-x`: None for
    /// the many jobs that name none, so that a demand stays small).
    pub count: u32,
    pub per_node: u32,
    pub cpt: u32,
    pub whole: bool,
    pub pins: Option<Box<crate::NodeChoice>>,
    /// Its estimate (reference seconds) and the reservation it runs in: what
    /// placement around reservations' windows needs (`nodes/resv.rs`; copies
    /// of its spec's, not saved: filled again after the engine is read back).
    pub est: Time,
    pub resv: Option<u32>,
}

/// [`Demand`] as it is saved: the nodes it names as two lists of their own.
#[derive(Serialize, Deserialize)]
struct DemandForm {
    part: u32,
    procs: u32,
    /// Exclusive partitions: nodes needed and tasks per node.
    nodes: u32,
    mem_per_proc: u64,
    /// GPUs on every node used.
    gpus_per_node: u32,
    /// Index into [`Board::sets`]: the node sets the job must (or prefers to) use.
    sets: Option<u32>,
    submit: Time,
    /// Its layout, as Slurm asks it ([`crate::Shape`]): exact nodes (0: any),
    /// at most tasks per node (0: no cap), cores per task (0 or 1: one),
    /// whole nodes; and nodes it must use and may not (`-w`, `-x`).
    #[serde(default, skip_serializing_if = "is_zero")]
    count: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    per_node: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    cpt: u32,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    whole: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    include: Vec<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    exclude: Vec<u32>,
}

fn is_zero(x: &u32) -> bool {
    *x == 0
}

impl Demand {
    /// It asks a layout of its own: the engine's packing and its shortcuts
    /// (cores counted as a pool, misses remembered) do not apply to it.
    pub fn shaped(&self) -> bool {
        self.count > 0 || self.per_node > 0 || self.cpt > 1 || self.whole || self.pins.is_some()
    }

    /// The nodes it must use (`-w`).
    pub fn include(&self) -> &[u32] {
        self.pins.as_ref().map_or(&[], |c| &c.include)
    }

    /// The nodes it may not use (`-x`).
    pub fn exclude(&self) -> &[u32] {
        self.pins.as_ref().map_or(&[], |c| &c.exclude)
    }
}

impl From<DemandForm> for Demand {
    fn from(f: DemandForm) -> Self {
        let DemandForm { part, procs, nodes, mem_per_proc, gpus_per_node, sets, submit, count, per_node, cpt, whole, include, exclude } = f;
        let choice = crate::NodeChoice { include, exclude };
        let pins = (!choice.is_empty()).then(|| Box::new(choice));
        Demand { part, procs, nodes, mem_per_proc, gpus_per_node, sets, submit, count, per_node, cpt, whole, pins, est: 0, resv: None }
    }
}

impl From<Demand> for DemandForm {
    fn from(d: Demand) -> Self {
        let Demand { part, procs, nodes, mem_per_proc, gpus_per_node, sets, submit, count, per_node, cpt, whole, pins, .. } = d;
        let crate::NodeChoice { include, exclude } = pins.map(|b| *b).unwrap_or_default();
        DemandForm { part, procs, nodes, mem_per_proc, gpus_per_node, sets, submit, count, per_node, cpt, whole, include, exclude }
    }
}

/// Demands that could not be placed on what is free (for a duration, in
/// conservative's plan) while it has only shrunk since: a demand at least as
/// large in every respect (same partition and node sets; processors, nodes,
/// memory per processor, GPUs per node and estimate all at least as large)
/// cannot be placed either. Only the frontier is kept. A demand whose node sets
/// may be spanned (SPANEVENLY, DELAY) is not remembered: spreading over more
/// sets can let a larger job through.
#[derive(Debug, Clone)]
pub(crate) struct Misses {
    on: bool,
    frontier: Vec<[u64; 7]>,
}

impl Misses {
    /// `on: false` remembers nothing.
    pub fn new(on: bool) -> Self {
        Misses {
            on,
            frontier: Vec::new(),
        }
    }

    fn key(board: &Board, d: &Demand, est: Time) -> Option<[u64; 7]> {
        // a job in a reservation may go where others may not
        if d.shaped() || d.resv.is_some() {
            return None;
        }
        let sets = match d.sets {
            None => 0,
            Some(si) if board.sets[si as usize].spec.plus == SetPlus::None => si as u64 + 1,
            Some(_) => return None,
        };
        Some([
            d.part as u64,
            sets,
            d.procs as u64,
            d.nodes as u64,
            d.mem_per_proc,
            d.gpus_per_node as u64,
            est.max(0) as u64,
        ])
    }

    fn covers(m: &[u64; 7], k: &[u64; 7]) -> bool {
        m[0] == k[0] && m[1] == k[1] && (2..7).all(|i| m[i] <= k[i])
    }

    /// Whether `d` (for `est` seconds; 0 where time does not matter) is known
    /// not to fit.
    pub fn known(&self, board: &Board, d: &Demand, est: Time) -> bool {
        Self::key(board, d, est)
            .is_some_and(|k| self.frontier.iter().any(|m| Self::covers(m, &k)))
    }

    /// The key the queue files `d` under ([`crate::queue::Queue::set_key`]),
    /// so that a search of the queue skips the jobs [`Misses::covers_filed`]
    /// says are known not to fit: its memory per processor plus one where
    /// it is plain (first partition, no node sets, nodes or GPUs asked, not
    /// shaped, in no reservation), 0 otherwise (never covered).
    pub fn filed_key(board: &Board, d: &Demand) -> u64 {
        match Self::key(board, d, 0) {
            Some([0, 0, _, 0, mem, 0, _]) => mem.saturating_add(1),
            _ => 0,
        }
    }

    /// Whether every job filed at least `need` and `key` (with `est` 0) is
    /// known not to fit: a plain demand at most as large in both did not. A
    /// valid test on a subtree's minimums, as [`Misses::known`] is a
    /// necessary consequence of it for any job below.
    #[inline]
    pub fn covers_filed(&self, need: u64, key: u64) -> bool {
        // the plain demand of `need` processors and `key - 1` MiB each
        key > 0 && self.frontier.iter().any(|m| Self::covers(m, &[0, 0, need, 0, key - 1, 0, 0]))
    }

    /// `d` (for `est` seconds) did not fit.
    pub fn record(&mut self, board: &Board, d: &Demand, est: Time) {
        if let Some(k) = Self::key(board, d, est).filter(|_| self.on) {
            if !self.frontier.iter().any(|m| Self::covers(m, &k)) {
                self.frontier.retain(|m| !Self::covers(&k, m));
                self.frontier.push(k);
            }
        }
    }
}

/// The node sets of one (partition, request) pair, built once.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SetList {
    pub part: u32,
    pub spec: NodeSetSpec,
    /// Each set's nodes, in partition order; sets in priority order.
    pub sets: Vec<Vec<u32>>,
    pub negative: Vec<bool>,
    /// Live jobs whose demand names this list.
    pub users: u32,
}

/// A demand's node sets: a list the board keeps, or one built for it.
#[derive(Debug, Clone)]
pub(crate) enum Sets {
    Kept(u32),
    New(SetList),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Board {
    pub nodes: Vec<NodeStatic>,
    pub parts: Vec<PartStatic>,
    pub default_part: usize,
    pub site_nodeset: Option<NodeSetSpec>,
    pub delay: Time,
    /// Set lists of the live jobs' demands (and lists no job uses any more,
    /// `users` 0, kept for reuse).
    pub sets: Vec<SetList>,
    /// Everything every node has (an empty machine).
    pub(crate) empty: Free,
    /// Processors a shared partition gives on an empty machine to a job
    /// without a layout of its own, by (partition, memory per processor, GPUs
    /// per node): worked out once for each.
    #[serde(skip)]
    room: std::cell::RefCell<std::collections::BTreeMap<(u32, u64, u32), u64>>,
    /// Cores of every node, worked out once (conservative asks it every pass).
    #[serde(skip)]
    total: std::cell::OnceCell<u64>,
}

impl Board {
    pub fn new(c: &Cluster) -> Board {
        let nodes: Vec<NodeStatic> = c
            .nodes
            .iter()
            .map(|n| {
                let t = &c.node_types[n.node_type];
                NodeStatic {
                    cores: n.cores,
                    mem: n.memory_mb,
                    gpus: n.gpus,
                    factor: t.factor,
                    speed: t.speed,
                    features: t.features.clone(),
                    network: t.network.clone(),
                    negative_affinity: t.negative_affinity,
                }
            })
            .collect();
        let parts = c
            .partitions
            .iter()
            .map(|p| {
                let mut member = vec![false; nodes.len()];
                for &n in &p.nodes {
                    member[n] = true;
                }
                let mut tiers: Vec<f64> = p.nodes.iter().map(|&n| nodes[n].factor).collect();
                tiers.sort_by(|a, b| b.total_cmp(a));
                tiers.dedup();
                PartStatic {
                    nodes: p.nodes.iter().map(|&n| n as u32).collect(),
                    member,
                    exclusive: p.exclusive,
                    cpn: p.cores_per_node,
                    nodeset: p.nodeset.clone(),
                    tiers,
                    tier: p.priority_tier,
                    preempt: p.preempt,
                    over: p.oversubscribe,
                    max_time: p.max_time_s,
                }
            })
            .collect();
        let empty = Free {
            cores: nodes.iter().map(|n| n.cores).collect(),
            mem: nodes.iter().map(|n| n.mem).collect(),
            gpus: nodes.iter().map(|n| n.gpus).collect(),
        };
        Board {
            empty,
            room: Default::default(),
            total: Default::default(),
            nodes,
            parts,
            default_part: c.default_partition_index(),
            site_nodeset: c.nodeset.clone(),
            delay: c.nodeset_delay,
            sets: Vec::new(),
        }
    }

    /// Whether `d` (its node sets aside) can be placed on the empty machine.
    fn fits_alone(&self, d: &Demand) -> bool {
        if d.shaped() || self.parts[d.part as usize].exclusive {
            return self.place(d, &self.empty, d.submit, &|_| true).is_ok();
        }
        // first fit takes what each node can give until it has them all
        let key = (d.part, d.mem_per_proc, d.gpus_per_node);
        let room = *self.room.borrow_mut().entry(key).or_insert_with(|| self.parts[d.part as usize].nodes.iter().map(|&n| self.usable(d, &self.empty, n) as u64).sum());
        let fits = room >= d.procs as u64;
        debug_assert_eq!(fits, self.place(d, &self.empty, d.submit, &|_| true).is_ok());
        fits
    }

    pub fn full(&self) -> Free {
        self.empty.clone()
    }

    pub fn total_cores(&self) -> u64 {
        *self.total.get_or_init(|| self.nodes.iter().map(|n| n.cores as u64).sum())
    }

    /// The demand of a job, or why it can never run here (an unknown partition;
    /// too large for its partition; memory or GPUs no node has), with the node
    /// sets it must use: a list the board keeps already, or one to keep
    /// ([`Board::keep`]). `own` is the job's own node-set request (None: its
    /// partition's or the site's). A node set that no set can ever satisfy is
    /// dropped (the flag is set).
    pub fn demand(
        &self,
        spec: &JobSpec,
        own: Option<&NodeSetSpec>,
        choice: &crate::NodeChoice,
        submit: Time,
    ) -> Result<(Demand, Option<Sets>, bool), NeverFits> {
        let part = spec.partition.map_or(self.default_part, |p| p as usize);
        let Some(ps) = self.parts.get(part) else {
            return Err(NeverFits::UnknownPartition);
        };
        if ps.max_time.is_some_and(|m| spec.estimate > m) {
            return Err(NeverFits::TimeLimit);
        }
        let nodes = if ps.exclusive {
            spec.procs.div_ceil(ps.cpn)
        } else {
            0
        };
        let request = own.or(ps.nodeset.as_ref()).or(self.site_nodeset.as_ref());
        let d = Demand {
            part: part as u32,
            procs: spec.procs,
            nodes,
            mem_per_proc: spec.mem_per_proc_mb,
            gpus_per_node: spec.gpus_per_node,
            sets: None,
            submit,
            count: spec.shape.nodes,
            per_node: spec.shape.tasks_per_node,
            cpt: if spec.shape.cpus_per_task > 1 { spec.shape.cpus_per_task } else { 0 },
            whole: spec.shape.exclusive,
            pins: (!choice.is_empty()).then(|| Box::new(choice.clone())),
            est: spec.estimate,
            resv: spec.reservation,
        };
        let full = &self.empty;
        // the machine alone, without node sets
        if !self.fits_alone(&d) {
            let plain = Demand { count: 0, per_node: 0, cpt: 0, whole: false, pins: None, ..d.clone() };
            return Err(if d.shaped() && self.place(&plain, full, submit, &|_| true).is_ok() { NeverFits::Shape } else { NeverFits::TooLarge });
        }
        let Some(request) = request else {
            return Ok((d, None, false));
        };
        let sets = match self.kept(part as u32, request) {
            Some(i) => Sets::Kept(i),
            None => Sets::New(self.set_list(part as u32, request.clone())),
        };
        // with node sets, on an empty machine, after any NODESETDELAY
        let never = matches!(
            self.place_in(&d, Some(self.sets_of(&sets)), &self.empty, Time::MAX / 2, &|_| true),
            Err(Blocked::NodeSet)
        );
        Ok(if never { (d, None, true) } else { (d, Some(sets), false) })
    }

    /// The set list of `(part, spec)` the board keeps, if any.
    fn kept(&self, part: u32, spec: &NodeSetSpec) -> Option<u32> {
        self.sets
            .iter()
            .position(|s| s.part == part && s.spec == *spec)
            .map(|i| i as u32)
    }

    fn sets_of<'a>(&'a self, s: &'a Sets) -> &'a SetList {
        match s {
            Sets::Kept(i) => &self.sets[*i as usize],
            Sets::New(l) => l,
        }
    }

    /// Keep a demand's set list while a job uses it; returns its index. A list
    /// no job uses any more is kept for the next job that asks for the same sets
    /// (its slot goes to another list when one is needed).
    pub fn keep(&mut self, s: Sets) -> u32 {
        let i = match s {
            Sets::Kept(i) => i as usize,
            Sets::New(l) => match self.sets.iter().position(|s| s.users == 0) {
                Some(i) => {
                    self.sets[i] = l;
                    i
                }
                None => {
                    self.sets.push(l);
                    self.sets.len() - 1
                }
            },
        };
        self.sets[i].users += 1;
        i as u32
    }

    /// A job no longer uses set list `i`.
    pub fn let_go(&mut self, i: u32) {
        self.sets[i as usize].users -= 1;
    }

    fn set_list(&self, part: u32, spec: NodeSetSpec) -> SetList {
        let members = &self.parts[part as usize].nodes;
        let value = |n: u32| -> Vec<String> {
            let ns = &self.nodes[n as usize];
            match spec.attribute {
                SetAttribute::Feature => ns.features.clone(),
                SetAttribute::Network => ns.network.iter().cloned().collect(),
                SetAttribute::ProcSpeed => vec![fmt_num(ns.speed)],
                SetAttribute::Memory => vec![ns.mem.to_string()],
            }
        };
        let numeric = matches!(
            spec.attribute,
            SetAttribute::ProcSpeed | SetAttribute::Memory
        );
        let num = |n: u32| -> f64 {
            let ns = &self.nodes[n as usize];
            if spec.attribute == SetAttribute::ProcSpeed {
                ns.speed
            } else {
                ns.mem as f64
            }
        };
        let mut sets: Vec<Vec<u32>> = Vec::new();
        if numeric && spec.list.is_empty() {
            // one set per distinct value (ascending), or per tolerance window
            let mut values: Vec<f64> = members.iter().map(|&n| num(n)).collect();
            values.sort_by(f64::total_cmp);
            values.dedup();
            let tol = spec.tolerance.unwrap_or(0.0);
            for &lo in &values {
                let set: Vec<u32> = members
                    .iter()
                    .copied()
                    .filter(|&n| num(n) >= lo && (num(n) - lo) / lo <= tol + 1e-12)
                    .collect();
                if !sets.contains(&set) {
                    sets.push(set);
                }
            }
        } else if numeric {
            for v in &spec.list {
                let x: f64 = v.parse().unwrap_or(f64::NAN);
                let tol = spec.tolerance.unwrap_or(0.0);
                sets.push(
                    members
                        .iter()
                        .copied()
                        .filter(|&n| num(n) >= x && (num(n) - x) / x <= tol + 1e-12)
                        .collect(),
                );
            }
        } else {
            let listed: Vec<String> = if spec.list.is_empty() {
                let mut seen: Vec<String> = Vec::new();
                for &n in members {
                    for v in value(n) {
                        if !seen.contains(&v) {
                            seen.push(v);
                        }
                    }
                }
                seen
            } else {
                spec.list.clone()
            };
            for v in &listed {
                sets.push(
                    members
                        .iter()
                        .copied()
                        .filter(|&n| value(n).contains(v))
                        .collect(),
                );
            }
        }
        let negative = sets
            .iter()
            .map(|s| s.iter().any(|&n| self.nodes[n as usize].negative_affinity))
            .collect();
        SetList {
            part,
            spec,
            sets,
            negative,
            users: 0,
        }
    }

    /// Cores a node can give this job on view `free` (exclusive: all or nothing).
    #[inline]
    pub(crate) fn usable(&self, d: &Demand, free: &Free, n: u32) -> u32 {
        let (i, ps) = (n as usize, &self.parts[d.part as usize]);
        if !ps.exclusive {
            return self.shared_units(d, free, i);
        }
        // what the node has, from the compact arrays of the empty machine
        let (cores, mem, gpus) = (self.empty.cores[i], self.empty.mem[i], self.empty.gpus[i]);
        let (fc, fm) = (free.cores[i], free.mem[i]);
        let tasks = ps.cpn.min(d.procs);
        // a whole node: every core, all its memory (a suspended job may hold
        // memory on a node whose cores are free) and every GPU
        let mem_ok = fm == mem && (d.mem_per_proc == 0 || mem == 0 || mem >= tasks as u64 * d.mem_per_proc);
        if fc == cores && free.gpus[i] == gpus && d.gpus_per_node <= gpus && mem_ok {
            cores
        } else {
            0
        }
    }

    /// Cores node `i` of a shared partition can give this job on view `free`:
    /// its free cores, as far as its free memory and GPUs allow.
    #[inline(always)]
    fn shared_units(&self, d: &Demand, free: &Free, i: usize) -> u32 {
        let fc = free.cores[i];
        if d.gpus_per_node > 0 && d.gpus_per_node > free.gpus[i] {
            return 0;
        }
        if d.mem_per_proc == 0 || self.empty.mem[i] == 0 {
            return fc;
        }
        let fm = free.mem[i];
        if fc as u64 * d.mem_per_proc <= fm {
            // memory for every free core (no division: most nodes of a busy
            // machine have no core free, or memory to spare)
            fc
        } else {
            fc.min((fm / d.mem_per_proc).min(u32::MAX as u64) as u32)
        }
    }

    /// Place a job without node sets on `nodes`, a subsequence of its partition's
    /// nodes in partition order that holds every node with a free core (the
    /// nodes left out are known to have none).
    pub fn pick_in<E: Fn(u32) -> bool + ?Sized>(
        &self,
        d: &Demand,
        free: &Free,
        nodes: impl Iterator<Item = u32>,
        eligible: &E,
    ) -> Option<Allocation> {
        debug_assert!(d.sets.is_none());
        self.pick(d, free, nodes, eligible)
    }

    /// Place the job on `nodes` (in that order), taking what `free` allows.
    fn pick<E: Fn(u32) -> bool + ?Sized>(
        &self,
        d: &Demand,
        free: &Free,
        nodes: impl Iterator<Item = u32>,
        eligible: &E,
    ) -> Option<Allocation> {
        if d.shaped() {
            return self.pick_shaped(d, free, nodes, eligible);
        }
        let ps = &self.parts[d.part as usize];
        let mut left = if ps.exclusive { d.nodes } else { d.procs };
        // room for the parts on full nodes, so that a large job's list grows
        // once at most
        let mut a = Allocation {
            parts: Parts::with_capacity((if ps.exclusive { left } else { left.div_ceil(ps.cpn.max(1)) } as usize).min(ps.nodes.len())),
            factor: f64::INFINITY,
            procs: 0,
        };
        // one scaling factor for the whole partition spares the nodes' records
        let uniform = match ps.tiers.as_slice() {
            [f] => Some(*f),
            _ => None,
        };
        if !ps.exclusive {
            // a shared partition: each node gives what it can, up to what is left
            for n in nodes {
                if left == 0 {
                    break;
                }
                let i = n as usize;
                if free.cores[i] == 0 || !eligible(n) {
                    continue;
                }
                let c = self.shared_units(d, free, i).min(left);
                if c == 0 {
                    continue;
                }
                let mem = if self.empty.mem[i] == 0 { 0 } else { c as u64 * d.mem_per_proc };
                a.parts.push(AllocPart { node: n, cores: c, mem, gpus: d.gpus_per_node });
                if uniform.is_none() {
                    a.factor = a.factor.min(self.nodes[i].factor);
                }
                left -= c;
            }
            if let (Some(f), false) = (uniform, a.parts.is_empty()) {
                a.factor = f;
            }
            a.procs = d.procs - left;
            return (left == 0).then_some(a);
        }
        let mut tasks_left = d.procs;
        for n in nodes {
            if left == 0 {
                break;
            }
            // most nodes of a busy machine have no core free: skip them first
            if free.cores[n as usize] == 0 || !eligible(n) {
                continue;
            }
            let u = self.usable(d, free, n);
            if u == 0 {
                continue;
            }
            // an exclusive partition: whole nodes, and tasks up to its cores
            // per node on each
            let (e, i) = (&self.empty, n as usize);
            let tasks = ps.cpn.min(tasks_left);
            a.parts.push(AllocPart { node: n, cores: e.cores[i], mem: e.mem[i], gpus: e.gpus[i] });
            a.factor = a.factor.min(uniform.unwrap_or_else(|| self.nodes[i].factor));
            a.procs += tasks;
            tasks_left -= tasks;
            left -= 1;
        }
        (left == 0).then_some(a)
    }

    /// Place a job that asks a layout of its own (Slurm's semantics): its
    /// tasks (`procs / cpt`, each on one node) on the nodes it must use, then
    /// on `nodes` in order, never on those it may not; with an exact node
    /// count, as evenly as possible (the first `tasks % count` nodes one task
    /// more), else packed; at most `per_node` tasks on a node; whole nodes
    /// (an exclusive partition's, or `--exclusive`) all of the node.
    fn pick_shaped<E: Fn(u32) -> bool + ?Sized>(&self, d: &Demand, free: &Free, nodes: impl Iterator<Item = u32>, eligible: &E) -> Option<Allocation> {
        let ps = &self.parts[d.part as usize];
        let cpt = d.cpt.max(1);
        let tasks = d.procs / cpt;
        let whole = d.whole || ps.exclusive;
        let mut a = Allocation { parts: Parts::new(), factor: f64::INFINITY, procs: 0 };
        let mut left = tasks;
        let order = d.include().iter().copied().chain(nodes.filter(|n| !d.include().contains(n)));
        for n in order {
            let pos = a.parts.len() as u32;
            if left == 0 || (d.count > 0 && pos == d.count) {
                break;
            }
            let must = d.include().contains(&n);
            let ns = &self.nodes[n as usize];
            let ok = ps.member[n as usize] && eligible(n) && !d.exclude().contains(&n) && d.gpus_per_node <= free.gpus[n as usize];
            // tasks the node has room for
            let room = if !ok {
                0
            } else if whole {
                let all = free.cores[n as usize] == ns.cores && free.gpus[n as usize] == ns.gpus && free.mem[n as usize] == ns.mem;
                if all { (if ps.exclusive { ps.cpn } else { ns.cores }) / cpt } else { 0 }
            } else {
                let c = if d.mem_per_proc == 0 || ns.mem == 0 { free.cores[n as usize] } else { free.cores[n as usize].min((free.mem[n as usize] / d.mem_per_proc).min(u32::MAX as u64) as u32) };
                c / cpt
            };
            let room = if d.per_node > 0 { room.min(d.per_node) } else { room };
            let want = if d.count > 0 { tasks / d.count + u32::from(pos < tasks % d.count) } else { room.min(left) };
            if room == 0 || room < want || want == 0 {
                if must {
                    return None;
                }
                continue;
            }
            let cores = if whole { ns.cores } else { want * cpt };
            a.parts.push(AllocPart {
                node: n,
                cores,
                mem: if whole { ns.mem } else if ns.mem == 0 { 0 } else { (want * cpt) as u64 * d.mem_per_proc },
                gpus: if whole { ns.gpus } else { d.gpus_per_node },
            });
            a.factor = a.factor.min(ns.factor);
            a.procs += want * cpt;
            left -= want;
        }
        let used_all = d.include().iter().all(|n| a.parts.iter().any(|p| p.node == *n));
        (left == 0 && (d.count == 0 || a.parts.len() as u32 == d.count) && used_all).then(|| {
            a.parts.sort_by_key(|p| p.node);
            a
        })
    }

    /// Units (nodes or cores) of a set available to the job on `free`.
    fn units(&self, d: &Demand, free: &Free, set: &[u32], eligible: &dyn Fn(u32) -> bool) -> u64 {
        let exclusive = self.parts[d.part as usize].exclusive;
        set.iter()
            .filter(|&&n| eligible(n))
            .map(|&n| {
                let u = self.usable(d, free, n);
                if exclusive {
                    (u > 0) as u64
                } else {
                    u as u64
                }
            })
            .sum()
    }

    /// Place a job on view `free` at time `now` (node sets, priorities, NODESETPLUS
    /// and ISOPTIONAL included). `eligible` restricts the nodes considered.
    pub fn place(
        &self,
        d: &Demand,
        free: &Free,
        now: Time,
        eligible: &dyn Fn(u32) -> bool,
    ) -> Result<Allocation, Blocked> {
        let sets = d.sets.map(|si| &self.sets[si as usize]);
        self.place_in(d, sets, free, now, eligible)
    }

    /// [`Board::place`] with the demand's set list given.
    fn place_in(
        &self,
        d: &Demand,
        sets: Option<&SetList>,
        free: &Free,
        now: Time,
        eligible: &dyn Fn(u32) -> bool,
    ) -> Result<Allocation, Blocked> {
        let part_nodes = || self.parts[d.part as usize].nodes.iter().copied();
        let Some(sl) = sets else {
            return self
                .pick(d, free, part_nodes(), eligible)
                .ok_or(Blocked::Resources);
        };
        let spec = &sl.spec;
        let found = match spec.policy {
            SetPolicy::AnyOf => {
                let mut in_any = vec![false; self.nodes.len()];
                for s in &sl.sets {
                    for &n in s {
                        in_any[n as usize] = true;
                    }
                }
                self.pick(
                    d,
                    free,
                    part_nodes().filter(|&n| in_any[n as usize]),
                    eligible,
                )
            }
            SetPolicy::FirstOf => sl
                .sets
                .iter()
                .find_map(|s| self.pick(d, free, s.iter().copied(), eligible)),
            SetPolicy::OneOf => self.best_set(d, free, sl, eligible),
        };
        if let Some(a) = found {
            return Ok(a);
        }
        let may_span = match spec.plus {
            SetPlus::SpanEvenly => true,
            SetPlus::Delay => now - d.submit >= self.delay,
            SetPlus::None => false,
        } && !d.shaped();
        if may_span && spec.policy != SetPolicy::AnyOf {
            if let Some(a) = self.span_evenly(d, free, sl, eligible) {
                return Ok(a);
            }
        }
        match self.pick(d, free, part_nodes(), eligible) {
            Some(a) if spec.optional => Ok(a),
            Some(_) => Err(Blocked::NodeSet),
            None => Err(Blocked::Resources),
        }
    }

    fn best_set(
        &self,
        d: &Demand,
        free: &Free,
        sl: &SetList,
        eligible: &dyn Fn(u32) -> bool,
    ) -> Option<Allocation> {
        let mut best: Option<(f64, f64, Allocation)> = None; // (key, tie, alloc); smaller is better
        for (k, s) in sl.sets.iter().enumerate() {
            let Some(a) = self.pick(d, free, s.iter().copied(), eligible) else {
                continue;
            };
            let (key, tie) = match sl.spec.priority {
                SetPriority::FirstFit => return Some(a),
                SetPriority::Affinity if !sl.negative[k] => return Some(a),
                SetPriority::Affinity => (1.0, k as f64),
                SetPriority::BestFit => (self.units(d, free, s, eligible) as f64, k as f64),
                SetPriority::WorstFit => (-(self.units(d, free, s, eligible) as f64), k as f64),
                SetPriority::BestResource => (
                    -a.parts
                        .iter()
                        .map(|p| self.nodes[p.node as usize].speed)
                        .fold(f64::INFINITY, f64::min),
                    k as f64,
                ),
                SetPriority::MinLoss => (self.loss(&a), -a.factor),
            };
            if best.as_ref().is_none_or(|b| (key, tie) < (b.0, b.1)) {
                best = Some((key, tie, a));
            }
        }
        best.map(|b| b.2)
    }

    /// Capacity wasted per reference second of the job because it runs at the pace
    /// of its slowest node: Σ cores × (1/f_min − 1/f_node).
    pub fn loss(&self, a: &Allocation) -> f64 {
        a.parts
            .iter()
            .map(|p| p.cores as f64 * (1.0 / a.factor - 1.0 / self.nodes[p.node as usize].factor))
            .sum()
    }

    /// Spread the job evenly over as few sets as possible (k = 2, 3, …), taking the
    /// sets with the most free units first.
    fn span_evenly(
        &self,
        d: &Demand,
        free: &Free,
        sl: &SetList,
        eligible: &dyn Fn(u32) -> bool,
    ) -> Option<Allocation> {
        let ps = &self.parts[d.part as usize];
        let total = if ps.exclusive { d.nodes } else { d.procs };
        let mut order: Vec<(u64, usize)> = sl
            .sets
            .iter()
            .enumerate()
            .map(|(k, s)| (self.units(d, free, s, eligible), k))
            .collect();
        order.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut taken = vec![false; self.nodes.len()];
        for k in 2..=order.len().min(total as usize) {
            let base = total / k as u32;
            let rem = total % k as u32;
            taken.iter_mut().for_each(|t| *t = false);
            let mut a = Allocation {
                parts: Parts::new(),
                factor: f64::INFINITY,
                procs: 0,
            };
            let mut tasks_left = d.procs;
            let mut ok = true;
            for (j, &(_, si)) in order.iter().take(k).enumerate() {
                let share = base + u32::from((j as u32) < rem);
                let sub = if ps.exclusive {
                    Demand {
                        nodes: share,
                        procs: (share * ps.cpn).min(tasks_left),
                        ..d.clone()
                    }
                } else {
                    Demand {
                        procs: share,
                        ..d.clone()
                    }
                };
                let nodes = sl.sets[si].iter().copied().filter(|&n| !taken[n as usize]);
                let Some(part) = self.pick(&sub, free, nodes, eligible) else {
                    ok = false;
                    break;
                };
                for p in &part.parts {
                    taken[p.node as usize] = true;
                }
                a.factor = a.factor.min(part.factor);
                a.procs += part.procs;
                tasks_left -= part.procs;
                a.parts.extend(part.parts);
            }
            if ok {
                a.parts.sort_by_key(|p| p.node);
                return Some(a);
            }
        }
        None
    }
}

fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_demand_is_saved_with_the_nodes_it_names_as_before() {
        let plain = Demand { part: 1, procs: 4, mem_per_proc: 2048, submit: 7, est: 60, ..Demand::default() };
        let text = serde_json::to_string(&plain).unwrap();
        assert!(!text.contains("include") && !text.contains("exclude") && !text.contains("pins"), "{text}");
        let back: Demand = serde_json::from_str(&text).unwrap();
        assert!(back.pins.is_none() && !back.shaped());
        assert_eq!((back.part, back.procs, back.mem_per_proc, back.submit), (1, 4, 2048, 7));
        assert_eq!(back.est, 0, "the estimate is filled again after reading, not saved");

        let choice = crate::NodeChoice { include: vec![3, 5], exclude: vec![9] };
        let pinned = Demand { pins: Some(Box::new(choice)), ..plain };
        let text = serde_json::to_string(&pinned).unwrap();
        assert!(text.contains(r#""include":[3,5]"#) && text.contains(r#""exclude":[9]"#), "{text}");
        let back: Demand = serde_json::from_str(&text).unwrap();
        assert_eq!((back.include(), back.exclude()), (&[3, 5][..], &[9][..]));
        assert!(back.shaped());
        // a state written before names an empty list: no pins
        let back: Demand = serde_json::from_str(r#"{"part":0,"procs":1,"nodes":0,"mem_per_proc":0,"gpus_per_node":0,"sets":null,"submit":0,"include":[]}"#).unwrap();
        assert!(back.pins.is_none());
    }
}
