//! PARM, the power-aware resource manager of Sarood et al. (SC 2014): at every
//! trigger (an arrival or a completion) choose, for every running and pending job,
//! a node count and a CPU power cap that maximize Σ w_j · s_{j,n,p} under the node
//! count and the power budget (see [`super::knapsack`]).
//!
//! Variants (the paper's Table II): `noMM` (every job on its fewest nodes, only the
//! caps chosen), `noSE` (moldable: the size is chosen at start, then only the cap
//! changes), `wSE` (malleable: running jobs also shrink and expand, at most once
//! per `fse` seconds, paying the paper's cost, Eqs. 20–21).
//!
//! Power: a job on n nodes at cap p draws n (p + memory + base); idle nodes draw
//! `idle_w` each (0 in the paper). The invariant "power drawn ≤ budget" is checked
//! after every step by [`ParmEngine::sanity_check`].

use super::knapsack::{Group, Item, Problem, Solver};
use super::pass::PowerJob;
use crate::contract::Effect;
use crate::job::{JobIdx, JobState};
use crate::nodes::{AllocPart, Allocation, NodeStatus};
use crate::pending::PendingReason;
use crate::policy::PolicyKind;
use crate::table::JobTable;
use crate::Time;

/// Which PARM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ParmVariant {
    NoMM,
    NoSE,
    WSE,
}

impl std::str::FromStr for ParmVariant {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "nomm" => Ok(ParmVariant::NoMM),
            "nose" => Ok(ParmVariant::NoSE),
            "wse" => Ok(ParmVariant::WSE),
            _ => Err(format!("unknown PARM variant `{s}`; known: noMM, noSE, wSE")),
        }
    }
}

impl std::fmt::Display for ParmVariant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ParmVariant::NoMM => "noMM",
            ParmVariant::NoSE => "noSE",
            ParmVariant::WSE => "wSE",
        })
    }
}

/// The overprovisioned machine.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PowerMachine {
    pub nodes: u32,
    pub budget_w: f64,
    /// Power of a busy node besides its CPU: memory + base (W).
    pub node_base_w: f64,
    pub idle_w: f64,
    /// CPU caps (W), ascending.
    pub cap_levels_w: Vec<f64>,
    /// The cluster's index of each of the machine's nodes (empty: node k is
    /// the cluster's node k), so that allocations and node changes name the
    /// cluster's nodes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_ids: Vec<u32>,
    /// Cores of one node (an allocation's cores per node; 0 when unknown).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub node_cores: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl PowerMachine {
    /// The cluster's index of machine node `k`.
    pub fn node_id(&self, k: u32) -> u32 {
        self.node_ids.get(k as usize).copied().unwrap_or(k)
    }

    /// The machine node that is the cluster's node `id`, if it is one.
    pub fn node_of(&self, id: u32) -> Option<u32> {
        if self.node_ids.is_empty() {
            (id < self.nodes).then_some(id)
        } else {
            self.node_ids.iter().position(|&n| n == id).map(|k| k as u32)
        }
    }
}

/// How one decision values its options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum DecisionRule {
    /// The paper's (Eqs. 1–8): one program maximizing Σ w_j s_{j,n,p}, speedups
    /// and remaining times measured at the job's slowest configuration (n_min,
    /// its lowest cap).
    #[default]
    Paper,
    /// Tessera's: speedups and remaining times measured at (n_min, full power),
    /// so a job's priority does not depend on the caps the machine offers, and
    /// starts first: the pending jobs that start are chosen first (maximizing
    /// their Σ w_j s_{j,n,p}, running jobs free to change as their variant allows
    /// but worth nothing), then every job's configuration is chosen with those
    /// starts fixed. Spare power then never speeds a running job while a pending
    /// job could have started with it.
    StartsFirst,
}

impl std::str::FromStr for DecisionRule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "paper" => Ok(DecisionRule::Paper),
            "starts-first" => Ok(DecisionRule::StartsFirst),
            _ => Err(format!("unknown PARM decision rule `{s}`; known: paper, starts-first")),
        }
    }
}

impl std::fmt::Display for DecisionRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DecisionRule::Paper => "paper",
            DecisionRule::StartsFirst => "starts-first",
        })
    }
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ParmConfig {
    pub variant: ParmVariant,
    /// Fairness exponent of the weight w_j = (t_rem + waited)^α.
    pub alpha: f64,
    /// Minimum seconds between two resizes of a job (wSE).
    pub fse: Time,
    /// Node counts offered per job (the paper: 8).
    pub node_levels: u32,
    pub solver: Solver,
    /// Per-link bandwidth for redistributing a resized job's data (MB/s).
    pub link_mb_s: f64,
    /// wSE: discount a resize's value by its cost over the job's remaining run
    /// (Tessera's extension; the paper's objective ignores the cost).
    pub amortize_resizes: bool,
    #[serde(default)]
    pub rule: DecisionRule,
    /// An expanding job waits for its new nodes to boot (Eq. 21; the paper's
    /// large-scale simulation). False for a runtime that keeps processes on every
    /// node the job may use (the paper's Charm++ testbed).
    #[serde(default = "yes")]
    pub expand_boots: bool,
    /// Seconds a shrunk job has to acknowledge its new configuration
    /// (`Input::Resized`) before it is killed; the nodes it gives up are
    /// held, and budgeted at its cap, until then. None: they are free at once
    /// (the simulator's jobs resize as they are told).
    #[serde(default)]
    pub resize_ack_s: Option<Time>,
    /// A live driver measures each decision's solve time and charges it to
    /// the jobs the decision started or reconfigured (`Input::DecisionTime`),
    /// as the simulator's `--charge-solve-time` does; the engine itself only
    /// applies the charges it is given.
    #[serde(default)]
    pub charge_solve_time: bool,
    /// PARM's own durations (f_se, a resize's redistribution and boot time)
    /// as a fraction of the paper's: an emulation whose jobs' times are
    /// shrunk shrinks these as much (`tessera twin` sets it from --shrink).
    #[serde(default = "one")]
    pub time_scale: f64,
}

fn one() -> f64 {
    1.0
}

fn yes() -> bool {
    true
}

impl ParmConfig {
    pub fn new(variant: ParmVariant) -> Self {
        ParmConfig { variant, alpha: 1.0, fse: 500, node_levels: 8, solver: Solver::Structured, link_mb_s: 425.0, amortize_resizes: false, rule: DecisionRule::Paper, expand_boots: true, resize_ack_s: None, charge_solve_time: false, time_scale: 1.0 }
    }

    /// Tessera's scheduler: wSE with the starts-first rule (the attribution,
    /// docs/power.md, finds the paper's rule losing to the same optimizer
    /// without power; `--parm-rule paper` reproduces the paper).
    pub fn tessera() -> Self {
        ParmConfig { rule: DecisionRule::StartsFirst, ..ParmConfig::new(ParmVariant::WSE) }
    }

    /// [`ParmConfig::tessera`] as its flags set it (`sim run` and a live
    /// controller alike): the variant, rule, α and f_se given. An error names
    /// the flag.
    pub fn from_flags(variant: Option<&str>, rule: Option<&str>, alpha: Option<f64>, fse: Option<Time>) -> Result<ParmConfig, String> {
        let mut c = ParmConfig::tessera();
        if let Some(v) = variant {
            c.variant = v.parse().map_err(|e| format!("--parm-variant: {e}"))?;
        }
        if let Some(r) = rule {
            c.rule = r.parse().map_err(|e| format!("--parm-rule: {e}"))?;
        }
        match alpha {
            Some(a) if !(a.is_finite() && a >= 0.0) => return Err(format!("--alpha {a}: expected a number >= 0")),
            Some(a) => c.alpha = a,
            None => {}
        }
        match fse {
            Some(f) if f < 0 => return Err(format!("--fse {f}: expected seconds >= 0")),
            Some(f) => c.fse = f,
            None => {}
        }
        Ok(c)
    }
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Run {
    n: u32,
    p: f64,
    /// The machine's nodes it holds (n of them): its first node first, then
    /// those it started on, then those it grew onto.
    nodes: Vec<u32>,
    /// Its allocation, naming the cluster's nodes.
    alloc: Allocation,
    /// Nodes a shrink gave up that it holds until it acknowledges, and the
    /// instant it is killed if it has not by then.
    #[serde(default)]
    releasing: Vec<u32>,
    /// What they draw meanwhile (W): each at the cap it had, busy.
    #[serde(default)]
    releasing_w: f64,
    #[serde(default)]
    release_by: Option<Time>,
    /// Fraction of the job's work done.
    done: f64,
    /// Time (s) up to which `done` and energy are accounted.
    at: f64,
    /// Resize overhead (s) still to serve before work resumes.
    overhead: f64,
    /// When the job last shrank or expanded (its start does not count: the
    /// paper's f_se runs from a resize).
    last_resize: Option<Time>,
    expected_end: Time,
}

/// What a job has used so far, running or done.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    /// Energy drawn by the job's nodes (J).
    pub energy_j: f64,
    /// Σ nodes held × seconds.
    pub node_s: f64,
}

/// Statistics of the decisions taken.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ParmStats {
    pub decisions: u64,
    pub resizes: u64,
    pub cap_changes: u64,
    /// Decisions where the solver stopped at a limit (a feasible answer was used).
    pub limited: u64,
    /// Largest relative gap to the solver's bound, when it had one.
    pub max_gap: f64,
    /// Decisions whose answer was not proven within 0.1% of the optimum (the
    /// structured solver's bound was looser, or the MILP stopped at a limit).
    pub unproven: u64,
}

/// The starts-first rule's two solves: which pending (unforced) groups run,
/// valued alone, the forced groups free to take any item but worth nothing;
/// then every group's item with those groups forced. The first answer is
/// feasible in the second problem and is its starting point, so no start it
/// chose is dropped.
fn starts_first(problem: &Problem, solver: Solver, incumbent: &[Option<u32>]) -> super::knapsack::Solution {
    let mut starts = problem.clone();
    for g in starts.groups.iter_mut().filter(|g| g.forced) {
        g.items.iter_mut().for_each(|i| i.value = 0.0);
    }
    let first = starts.solve(solver, Some(incumbent));
    let mut all = problem.clone();
    for (g, c) in all.groups.iter_mut().zip(&first.choice) {
        g.forced |= c.is_some();
    }
    all.solve(solver, Some(&first.choice))
}

/// One decision's knapsack and how its items map back to jobs.
struct Decision {
    jobs: Vec<JobIdx>,
    problem: Problem,
    /// Per job, (nodes, cap) of each item.
    shapes: Vec<Vec<(u32, f64)>>,
    /// Per job, the item of its current configuration (running jobs).
    incumbent: Vec<Option<u32>>,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ParmEngine {
    machine: PowerMachine,
    cfg: ParmConfig,
    /// By job slot.
    pj: Vec<PowerJob>,
    runs: Vec<Option<Run>>,
    /// Running jobs, ascending job id (slots are reused; ids order decisions).
    running: Vec<JobIdx>,
    usage: Vec<Usage>,
    stats: ParmStats,
    /// Jobs the last decision started or reconfigured (what a decision time delays).
    #[serde(default)]
    changed: Vec<JobIdx>,
    /// Per node of the machine: the job holding it.
    holder: Vec<Option<JobIdx>>,
    /// Per node: whether it answers and takes jobs, and why not.
    status: Vec<NodeStatus>,
    /// The budget was lowered below the power drawn: the next pass lowers caps.
    #[serde(default)]
    over_budget: bool,
    /// Every end a job was told (a start's, a reconfiguration's) still to
    /// come: PARM decides again at each, including those a later
    /// reconfiguration moved, so a live controller, which wakes for them,
    /// decides when the simulator does (its run loop passes at every end it
    /// was given).
    #[serde(default)]
    announced: std::collections::BTreeSet<Time>,
    /// By job slot: the highest cap the power governor holds a running job
    /// to (`Input::CapCeiling`), for the rest of its run.
    #[serde(default)]
    ceiling: Vec<Option<f64>>,
    /// With acknowledged resizes: the last decision (job, nodes, cap, in its
    /// order) while some of it waits for shrunk jobs to give their nodes and
    /// power back, and its resize cost. It is applied as decided once it
    /// fits (so the decisions are the simulator's, which applies it at once),
    /// unless anything but an acknowledgement reaches the engine first.
    #[serde(default)]
    deferred: Vec<(JobIdx, u32, f64)>,
    #[serde(default)]
    deferred_t_se: f64,
}

impl ParmEngine {
    pub fn new(machine: PowerMachine, cfg: ParmConfig) -> Self {
        let n = machine.nodes as usize;
        let status = vec![NodeStatus { up: true, drain: false, reason: String::new(), power_fault: false }; n];
        ParmEngine { machine, cfg, pj: Vec::new(), runs: Vec::new(), running: Vec::new(), usage: Vec::new(), stats: ParmStats::default(), changed: Vec::new(), holder: vec![None; n], status, over_budget: false, announced: Default::default(), ceiling: Vec::new(), deferred: Vec::new(), deferred_t_se: 0.0 }
    }

    /// Whether machine node `k` takes jobs.
    fn usable(&self, k: usize) -> bool {
        self.status[k].up && !self.status[k].drain
    }

    /// Nodes that take jobs and no job holds.
    fn free_usable(&self) -> u32 {
        (0..self.holder.len()).filter(|&k| self.holder[k].is_none() && self.usable(k)).count() as u32
    }

    /// Nodes that draw idle power: up, and held by no job.
    fn idle_nodes(&self) -> u32 {
        (0..self.holder.len()).filter(|&k| self.holder[k].is_none() && self.status[k].up).count() as u32
    }

    /// A node's state, by the cluster's index of it.
    pub fn node_status(&self, id: u32) -> Option<&NodeStatus> {
        self.status.get(self.machine.node_of(id)? as usize)
    }

    /// Change the state of the cluster's node `id`; the jobs holding it if it
    /// went down (to be killed). A node outside the machine changes nothing.
    pub(crate) fn set_status(&mut self, id: u32, f: impl FnOnce(&mut NodeStatus)) -> Vec<JobIdx> {
        let Some(k) = self.machine.node_of(id) else { return Vec::new() };
        let s = &mut self.status[k as usize];
        f(s);
        if s.up && !s.drain {
            s.reason.clear();
        }
        let kill = match (s.up, self.holder[k as usize]) {
            (false, Some(j)) => vec![j],
            _ => Vec::new(),
        };
        // a node whose power domain failed counts at its maximum: what runs
        // may now draw more than the budget, and the next pass lowers caps
        self.over_budget = self.power_w() > self.machine.budget_w * (1.0 + 1e-9) + 1e-6;
        kill
    }

    /// Where a running job runs, naming the cluster's nodes.
    pub fn allocation(&self, job: JobIdx) -> Option<&Allocation> {
        self.runs.get(job.index()).and_then(|r| r.as_ref()).map(|r| &r.alloc)
    }

    /// Give a run `n` nodes: the lowest free nodes that take jobs when it
    /// grows; when it shrinks, it gives back first the nodes that no longer
    /// take jobs, then its last ones, never its first.
    /// Returns the nodes given back.
    fn place(&mut self, job: JobIdx, nodes: &mut Vec<u32>, n: u32) -> Vec<u32> {
        let mut gone = Vec::new();
        let n = n as usize;
        if nodes.len() < n {
            let mut k = 0;
            while nodes.len() < n {
                assert!(k < self.holder.len(), "a decision gave job {job:?} more nodes than are free");
                if self.holder[k].is_none() && self.usable(k) {
                    self.holder[k] = Some(job);
                    nodes.push(k as u32);
                }
                k += 1;
            }
        }
        while nodes.len() > n.max(1) {
            let at = (1..nodes.len()).rev().find(|&i| !self.usable(nodes[i] as usize)).unwrap_or(nodes.len() - 1);
            gone.push(nodes.remove(at));
        }
        gone
    }

    fn alloc_of(&self, nodes: &[u32]) -> Allocation {
        let cores = self.machine.node_cores;
        Allocation {
            parts: nodes.iter().map(|&k| AllocPart { node: self.machine.node_id(k), cores, mem: 0, gpus: 0 }).collect(),
            factor: 1.0,
            procs: nodes.len() as u32,
        }
    }

    pub fn policy(&self) -> PolicyKind {
        PolicyKind::Parm
    }
    pub fn machine(&self) -> &PowerMachine {
        &self.machine
    }
    pub fn config(&self) -> &ParmConfig {
        &self.cfg
    }
    pub fn stats(&self) -> ParmStats {
        self.stats
    }
    pub fn capacity(&self) -> u64 {
        self.machine.nodes as u64
    }
    /// Nodes held by jobs (those a shrunk job has not yet acknowledged giving up included).
    pub fn used_nodes(&self) -> u32 {
        self.running.iter().map(|j| self.runs[j.index()].as_ref().map_or(0, |r| r.n + r.releasing.len() as u32)).sum()
    }

    /// The instant the first shrunk job that has not acknowledged is due to be killed.
    pub(crate) fn next_deadline(&self) -> Option<Time> {
        let ack = self.running.iter().filter_map(|j| self.runs[j.index()].as_ref()?.release_by).min();
        // an end a reconfiguration moved (a job's current end comes as its completion)
        let current: std::collections::BTreeSet<Time> = self.running.iter().filter_map(|j| Some(self.runs[j.index()].as_ref()?.expected_end)).collect();
        let moved = self.announced.iter().copied().find(|t| !current.contains(t));
        crate::earliest([ack, moved])
    }

    /// Running jobs whose acknowledgement is overdue at `now`.
    pub(crate) fn overdue(&self, now: Time) -> Vec<JobIdx> {
        self.running.iter().copied().filter(|j| self.runs[j.index()].as_ref().is_some_and(|r| r.release_by.is_some_and(|t| t <= now))).collect()
    }

    /// The least power the running jobs may draw now (W): each at its lowest
    /// cap and the smallest size it may take, with what jobs being killed and
    /// nodes given up draw and the idle nodes.
    pub(crate) fn least_power_w(&self, now: Time, t: &JobTable) -> f64 {
        let base = self.machine.node_base_w;
        let mut w = self.idle_nodes() as f64 * self.machine.idle_w;
        for &j in &self.running {
            let Some(r) = self.runs[j.index()].as_ref() else { continue };
            w += r.releasing_w;
            w += match t.state(j) {
                JobState::Running { .. } => {
                    let idle = self.machine.idle_w;
                    // nodes it would give back draw idle power, or (when
                    // shrinks are acknowledged) their cap until then
                    let ack = self.cfg.resize_ack_s.is_some();
                    self.options(j, now)
                        .iter()
                        .filter(|&&(n, _)| !ack || n >= r.n)
                        .map(|&(n, p)| n as f64 * (p + base) + (r.n.saturating_sub(n)) as f64 * idle)
                        .fold(f64::INFINITY, f64::min)
                        .min(r.n as f64 * (r.p + base))
                }
                _ => r.n as f64 * (r.p + base),
            };
        }
        w + self.fault_extra_w(true)
    }

    /// Change the budget; a pass must follow at once (until it, the power drawn
    /// may exceed a lowered budget).
    pub(crate) fn set_budget(&mut self, watts: f64) {
        self.machine.budget_w = watts;
        self.over_budget = self.power_w() > watts * (1.0 + 1e-9) + 1e-6;
    }

    /// Whether a running job holds nodes a shrink gave up, not yet acknowledged.
    pub(crate) fn releasing(&self, job: JobIdx) -> bool {
        self.runs.get(job.index()).and_then(|r| r.as_ref()).is_some_and(|r| r.release_by.is_some())
    }

    /// A job killed for not acknowledging keeps the nodes it gave up until
    /// its end, with no deadline.
    pub(crate) fn no_deadline(&mut self, job: JobIdx) {
        if let Some(r) = self.runs.get_mut(job.index()).and_then(|r| r.as_mut()) {
            r.release_by = None;
        }
    }

    /// A shrunk job acknowledged its new configuration: the nodes it gave up
    /// are free. False if it had none to give up.
    pub(crate) fn resized(&mut self, job: JobIdx) -> bool {
        let Some(r) = self.runs.get_mut(job.index()).and_then(|r| r.as_mut()) else { return false };
        if r.releasing.is_empty() {
            return false;
        }
        r.release_by = None;
        r.releasing_w = 0.0;
        for k in std::mem::take(&mut r.releasing) {
            self.holder[k as usize] = None;
        }
        true
    }
    /// Nodes free now that take jobs.
    pub fn free(&self) -> u64 {
        self.free_usable() as u64
    }
    pub fn running(&self) -> usize {
        self.running.len()
    }

    /// Power drawn now: busy nodes at their caps plus idle nodes.
    pub fn power_w(&self) -> f64 {
        let busy: f64 = self.running.iter().map(|j| {
            let r = self.runs[j.index()].as_ref().unwrap();
            r.n as f64 * (r.p + self.machine.node_base_w) + r.releasing_w
        }).sum();
        busy + self.idle_nodes() as f64 * self.machine.idle_w + self.fault_extra_w(false)
    }

    /// What nodes whose power domain failed may draw beyond what they are
    /// counted at (their job's cap, or `lowest`: the lowest cap a decision
    /// may give it; or idle): they count at their maximum.
    fn fault_extra_w(&self, lowest: bool) -> f64 {
        let m = &self.machine;
        let full = self.cpu_max_w() + m.node_base_w;
        let low = m.cap_levels_w.first().copied().unwrap_or(0.0);
        (0..self.status.len())
            .filter(|&k| self.status[k].power_fault)
            .map(|k| match self.holder[k].and_then(|j| self.runs[j.index()].as_ref()) {
                Some(r) => full - (if lowest { low } else { r.p } + m.node_base_w),
                None if self.status[k].up => full - m.idle_w,
                None => full,
            })
            .sum()
    }

    /// The CPU's maximum: the highest cap level.
    fn cpu_max_w(&self) -> f64 {
        self.machine.cap_levels_w.last().copied().unwrap_or(0.0)
    }

    /// (nodes, cap) of every running job, in job order.
    pub fn configs(&self) -> impl Iterator<Item = (u32, f64)> + '_ {
        self.running.iter().filter_map(|j| self.runs[j.index()].as_ref().map(|r| (r.n, r.p)))
    }

    /// Current (nodes, cap) of a running job.
    pub fn config_of(&self, job: JobIdx) -> Option<(u32, f64)> {
        self.runs.get(job.index()).and_then(|r| r.as_ref()).map(|r| (r.n, r.p))
    }

    /// When a running job will end under its current configuration (whole seconds,
    /// rounded up): resize overhead still due, then the rest of its work.
    pub fn expected_end(&self, job: JobIdx) -> Option<Time> {
        self.runs.get(job.index()).and_then(|r| r.as_ref()).map(|r| r.expected_end)
    }


    pub fn can_run(&self, pj: &PowerJob) -> bool {
        let lowest = self.caps(pj).first().copied();
        pj.n_min >= 1
            && pj.n_min <= pj.n_max
            && pj.n_min <= self.machine.nodes
            && lowest.is_some_and(|p| pj.n_min as f64 * (p + self.machine.node_base_w - self.machine.idle_w) <= self.machine.budget_w - self.machine.nodes as f64 * self.machine.idle_w + 1e-9)
    }

    /// A job with power profile `pj` was added to the table in slot `job`.
    pub(crate) fn attach(&mut self, job: JobIdx, pj: PowerJob) {
        let i = job.index();
        if i == self.pj.len() {
            self.pj.push(pj);
            self.runs.push(None);
            self.usage.push(Usage::default());
        } else {
            self.pj[i] = pj;
            self.runs[i] = None;
            self.usage[i] = Usage::default();
        }
        if self.ceiling.len() <= i {
            self.ceiling.resize(i + 1, None);
        }
        self.ceiling[i] = None;
    }

    /// The caps a job may run at: the machine's levels at or above the job's p_l
    /// (the PASS model is defined from p_l up), else the highest level.
    fn caps(&self, pj: &PowerJob) -> &[f64] {
        let levels = &self.machine.cap_levels_w; // ascending
        let first = levels.partition_point(|&p| p < pj.app.p_l - 1e-9);
        &levels[first.min(levels.len().saturating_sub(1))..]
    }

    /// A job's caps ([`ParmEngine::caps`]) up to the governor's ceiling, if it
    /// holds one (its floor at least).
    fn held_caps(&self, job: JobIdx) -> &[f64] {
        let caps = self.caps(&self.pj[job.index()]);
        match self.ceiling.get(job.index()).copied().flatten() {
            Some(c) => &caps[..caps.partition_point(|&p| p <= c + 1e-9).max(1)],
            None => caps,
        }
    }

    /// The lowest cap a job may run at: its profile's floor.
    pub(crate) fn cap_floor(&self, job: JobIdx) -> Option<f64> {
        self.caps(self.pj.get(job.index())?).first().copied()
    }

    /// Hold a running job at `cap_w` at most (its floor at least) for the
    /// rest of its run, re-capped now if it runs above. Some(()) when it
    /// applies (a running job of this engine).
    pub(crate) fn cap_ceiling(&mut self, now: Time, t: &mut JobTable, job: JobIdx, cap_w: f64, out: &mut Vec<Effect>) -> Option<()> {
        self.runs.get(job.index())?.as_ref()?;
        self.ceiling[job.index()] = Some(cap_w);
        let p = *self.held_caps(job).last()?;
        if self.runs[job.index()].as_ref().is_some_and(|r| r.p > p + 1e-9) {
            self.advance(job, now as f64);
            let r = self.runs[job.index()].as_mut()?;
            r.p = p;
            let n = r.n;
            self.stats.cap_changes += 1;
            let end = self.reschedule(job);
            t.get_mut(job).expected_end = end;
            out.push(Effect::Configure { job: t.spec(job).id, nodes: n, cap_w: p, end });
        }
        Some(())
    }

    fn advance(&mut self, job: JobIdx, now: f64) {
        let pj = self.pj[job.index()];
        let base = self.machine.node_base_w;
        let r = self.runs[job.index()].as_mut().unwrap();
        let dt = (now - r.at).max(0.0);
        let u = &mut self.usage[job.index()];
        u.energy_j += dt * r.n as f64 * (r.p + base);
        u.node_s += dt * r.n as f64;
        let served = r.overhead.min(dt);
        r.overhead -= served;
        r.done = (r.done + (dt - served) / pj.time(r.n, r.p)).min(1.0);
        r.at = now;
    }

    fn reschedule(&mut self, job: JobIdx) -> Time {
        let pj = self.pj[job.index()];
        let r = self.runs[job.index()].as_mut().unwrap();
        let left = r.overhead + (1.0 - r.done) * pj.time(r.n, r.p);
        r.expected_end = (r.at + left - 1e-9).ceil().max(r.at.ceil()).min(crate::contract::MAX_TIME as f64) as Time;
        let end = r.expected_end;
        self.announced.insert(end);
        end
    }

    /// A job ends (or goes back to the queue): its nodes and power come back.
    /// Returns an allocation of its node count and what it used.
    pub(crate) fn release(&mut self, now: Time, job: JobIdx) -> (Option<Allocation>, Option<Usage>) {
        if self.runs[job.index()].is_none() {
            return (None, None);
        }
        self.advance(job, now as f64);
        let r = self.runs[job.index()].take().expect("a running job");
        self.running.retain(|&j| j != job);
        for &k in r.nodes.iter().chain(&r.releasing) {
            self.holder[k as usize] = None;
        }
        (Some(r.alloc), Some(self.usage[job.index()]))
    }

    /// Cost (s) of resizing a job from `from` to `to` nodes: redistributing its data
    /// over a 3-D torus cuboid (Eq. 20) plus, when expanding, booting the new nodes
    /// (Eq. 21, Intrepid's boot times; unless `expand_boots` is off).
    pub fn resize_cost(&self, pj: &PowerJob, from: u32, to: u32) -> f64 {
        let (nf, nt) = (from as f64, to as f64);
        let m = pj.mem_mb;
        let b = self.cfg.link_mb_s;
        let t = if to > from {
            let tc = (m / nf - m / nt) * nf / (2.0 * b * nf.powf(2.0 / 3.0));
            let tb = if self.cfg.expand_boots { (nt - nf) * 0.01904 + 72.73 } else { 0.0 };
            tc + tb
        } else {
            // the data of the n_f - n_t released nodes spread over the n_t that stay
            (m / nf) * (nf - nt) / (2.0 * b * nt.powf(2.0 / 3.0))
        };
        t * self.cfg.time_scale
    }

    /// Options of one job: (nodes, cap) pairs, as the variant allows.
    fn options(&self, job: JobIdx, now: Time) -> Vec<(u32, f64)> {
        let pj = &self.pj[job.index()];
        let caps = self.held_caps(job);
        let sizes: Vec<u32> = match (self.cfg.variant, &self.runs[job.index()]) {
            (ParmVariant::NoMM, _) => vec![pj.n_min],
            (ParmVariant::NoSE, Some(r)) => vec![r.n],
            (ParmVariant::WSE, Some(r)) if !pj.malleable => vec![r.n],
            (ParmVariant::WSE, Some(r)) if r.last_resize.is_some_and(|t| ((now - t) as f64) < self.cfg.fse as f64 * self.cfg.time_scale) => vec![r.n],
            _ => pj.node_levels(self.cfg.node_levels),
        };
        let mut v = Vec::with_capacity(sizes.len() * caps.len());
        for &n in &sizes {
            for &p in caps {
                v.push((n, p));
            }
        }
        v
    }

    /// The knapsack PARM solves at `now` (running jobs advanced to `now` first),
    /// with the current configurations as the incumbent: what the decision
    /// benchmark times.
    pub(crate) fn decision_problem(&mut self, now: Time, t: &JobTable) -> (Problem, Vec<Option<u32>>) {
        self.advance_all(now);
        let d = self.build(now, t);
        (d.problem, d.incumbent)
    }

    fn advance_all(&mut self, now: Time) {
        for j in self.running.clone() {
            self.advance(j, now as f64);
        }
    }

    /// The decision's problem: running jobs first (ascending index, forced), then
    /// pending jobs in queue order, each with the options its variant allows.
    fn build(&self, now: Time, t: &JobTable) -> Decision {
        let running = self.running.iter().copied().filter(|&j| matches!(t.state(j), JobState::Running { .. }));
        let jobs: Vec<JobIdx> = running.chain(t.pending().map(|(_, j)| j)).collect();
        let mut groups = Vec::with_capacity(jobs.len());
        let mut shapes = Vec::with_capacity(jobs.len());
        let mut incumbent = Vec::with_capacity(jobs.len());
        let extra_w = self.machine.node_base_w - self.machine.idle_w;
        for &j in &jobs {
            let pj = self.pj[j.index()];
            let run = &self.runs[j.index()];
            let caps = self.caps(&pj);
            let p_ref = match self.cfg.rule {
                DecisionRule::Paper => caps[0],
                DecisionRule::StartsFirst => caps[caps.len() - 1],
            };
            let t_min = pj.time(pj.n_min, p_ref);
            let done = run.as_ref().map_or(0.0, |r| r.done);
            let submit = t.get(j).submit;
            let w = ((1.0 - done) * t_min + (now - submit) as f64).max(1.0).powf(self.cfg.alpha);
            let opts = self.options(j, now);
            let items: Vec<Item> = opts
                .iter()
                .map(|&(n, p)| {
                    let t = pj.time(n, p);
                    let mut value = w * t_min / t;
                    if let (Some(r), true) = (run, self.cfg.amortize_resizes) {
                        if r.n != n {
                            // the resize's cost spread over the rest of the run
                            let rest = (1.0 - r.done) * t;
                            value *= rest / (rest + 2.0 * self.resize_cost(&pj, r.n, n));
                        }
                    }
                    Item { value, nodes: n, power: n as f64 * (p + extra_w) }
                })
                .collect();
            incumbent.push(run.as_ref().map(|r| opts.iter().position(|&(n, p)| n == r.n && p == r.p).expect("the current configuration is an option") as u32));
            groups.push(Group { forced: run.is_some(), items });
            shapes.push(opts);
        }
        // what the decision shares: the nodes that take jobs and are free, and
        // those running jobs hold; the budget but what jobs being killed draw
        // and what idle nodes draw (a chosen node's idle draw is in its items)
        let (mut held, mut ending_w) = (0, 0.0);
        for &j in &self.running {
            let Some(r) = self.runs[j.index()].as_ref() else { continue };
            match t.state(j) {
                JobState::Running { .. } => held += r.n,
                _ => ending_w += r.n as f64 * (r.p + self.machine.node_base_w),
            }
            // nodes a shrink gave up, until the job acknowledges: at its cap
            ending_w += r.releasing_w;
        }
        let nodes = self.free_usable() + held;
        // nodes whose power domain failed count at their maximum; should that
        // leave the running jobs no way to fit, they get what they need at
        // least (their caps come down as far as they go)
        let short = match self.status.iter().any(|s| s.power_fault) {
            true => (self.least_power_w(now, t) - self.machine.budget_w).max(0.0),
            false => 0.0,
        };
        let power = self.machine.budget_w - ending_w - (self.idle_nodes() + held) as f64 * self.machine.idle_w - self.fault_extra_w(true) + short;
        let problem = Problem { groups, nodes, power };
        Decision { jobs, problem, shapes, incumbent }
    }

    pub(crate) fn pass(&mut self, now: Time, t: &mut JobTable, out: &mut Vec<Effect>) {
        self.announced = self.announced.split_off(&(now + 1));
        self.advance_all(now);
        self.changed.clear();
        if !self.deferred.is_empty() {
            // the last decision, as it was made, once what it waited for is back
            let changes = std::mem::take(&mut self.deferred);
            if self.apply_changes(now, t, &changes, self.deferred_t_se, out) {
                self.deferred = changes;
            }
            self.over_budget = self.power_w() > self.machine.budget_w * (1.0 + 1e-9) + 1e-6;
            return;
        }
        if t.queue.head().is_none() && self.cfg.variant == ParmVariant::NoMM && self.running.is_empty() {
            return;
        }
        let Decision { jobs, problem, shapes, incumbent } = self.build(now, t);
        let sol = match self.cfg.rule {
            DecisionRule::Paper => problem.solve(self.cfg.solver, Some(&incumbent)),
            DecisionRule::StartsFirst => starts_first(&problem, self.cfg.solver, &incumbent),
        };
        debug_assert!(problem.usage(&sol.choice).2, "the solver returned an infeasible choice");
        self.stats.decisions += 1;
        if sol.status == super::knapsack::Status::Feasible && sol.bound.is_none() {
            self.stats.limited += 1;
            self.stats.unproven += 1;
        }
        if let Some(b) = sol.bound {
            let gap = (b - sol.objective) / b.abs().max(1e-12);
            self.stats.max_gap = self.stats.max_gap.max(gap);
            if gap > 1e-3 {
                self.stats.unproven += 1;
            }
        }
        // resizes first: they all pay twice the largest resize cost of the decision
        let mut t_se_max: f64 = 0.0;
        for (k, &j) in jobs.iter().enumerate() {
            let (Some(r), Some(c)) = (&self.runs[j.index()], sol.choice[k]) else { continue };
            let (n, _) = shapes[k][c as usize];
            if n != r.n {
                t_se_max = t_se_max.max(self.resize_cost(&self.pj[j.index()], r.n, n));
            }
        }
        // jobs that shrink first, so that the nodes they give back are free
        // for those that grow or start; then the others in decision order
        let shrinks = |k: usize, runs: &[Option<Run>]| match (&runs[jobs[k].index()], sol.choice[k]) {
            (Some(r), Some(c)) => shapes[k][c as usize].0 < r.n,
            _ => false,
        };
        let mut order: Vec<usize> = (0..jobs.len()).filter(|&k| shrinks(k, &self.runs)).collect();
        order.extend((0..jobs.len()).filter(|&k| !shrinks(k, &self.runs)));
        let ack = self.cfg.resize_ack_s.is_some();
        if ack {
            // what frees power first
            order.sort_by(|&x, &y| {
                let d = |k: usize| sol.choice[k].map_or(0.0, |c| {
                    let (n, p) = shapes[k][c as usize];
                    self.power_delta(self.runs[jobs[k].index()].as_ref(), n, p)
                });
                d(x).total_cmp(&d(y))
            });
        }
        let changes: Vec<(JobIdx, u32, f64)> = order.into_iter().filter_map(|k| sol.choice[k].map(|c| (jobs[k], shapes[k][c as usize].0, shapes[k][c as usize].1))).collect();
        if self.apply_changes(now, t, &changes, t_se_max, out) {
            (self.deferred, self.deferred_t_se) = (changes, t_se_max);
        }
        // a lowered budget is met once what runs fits it
        self.over_budget = self.power_w() > self.machine.budget_w * (1.0 + 1e-9) + 1e-6;
    }

    /// The power a change to (n nodes, cap p) adds (W): a shrunk job's nodes
    /// given up draw at its old cap until it acknowledges; nodes taken were
    /// idle.
    fn power_delta(&self, run: Option<&Run>, n: u32, p: f64) -> f64 {
        let (base, idle) = (self.machine.node_base_w, self.machine.idle_w);
        match run {
            Some(r) if n < r.n => n as f64 * (p - r.p),
            Some(r) => n as f64 * (p + base) - r.n as f64 * (r.p + base) - (n - r.n) as f64 * idle,
            None => n as f64 * (p + base - idle),
        }
    }

    /// Apply a decision's changes (job, nodes, cap) in order; those applied
    /// already change nothing. With acknowledged resizes a change that needs
    /// nodes or power a shrunk job still holds waits (a shrink keeps its old
    /// cap if the new one does not fit): whether any waits.
    fn apply_changes(&mut self, now: Time, t: &mut JobTable, changes: &[(JobIdx, u32, f64)], t_se_max: f64, out: &mut Vec<Effect>) -> bool {
        let ack = self.cfg.resize_ack_s.is_some();
        let base = self.machine.node_base_w;
        let nowf = now as f64;
        let mut power = self.power_w();
        let mut free = self.free_usable();
        let mut waits = false;
        for &(j, n, decided) in changes {
            let mut p = decided;
            // nodes a shrink gave up are free only once its job acknowledges
            // (resize_ack_s): a start or growth that needs them, or power they
            // still draw, waits for a later decision (a shrink keeps its old
            // cap if the new one does not fit); dropping a change only leaves
            // power unused
            let have = self.runs[j.index()].as_ref().map_or(0, |r| r.n);
            if n > have && n - have > free {
                waits = true;
                continue;
            }
            if ack {
                let run = self.runs[j.index()].as_ref();
                let d = self.power_delta(run, n, p);
                if d > 0.0 && power + d > self.machine.budget_w + 1e-6 {
                    waits = true;
                    match run {
                        Some(r) if n < r.n => p = r.p,
                        _ => continue,
                    }
                }
                power += self.power_delta(run, n, p);
            }
            if !ack || n > have {
                free = (free + have).saturating_sub(n);
            }
            if self.runs[j.index()].as_ref().is_none_or(|r| r.n != n || r.p != p) {
                self.changed.push(j);
            }
            match self.runs[j.index()].as_mut() {
                Some(r) => {
                    if r.n == n && r.p == p {
                        continue;
                    }
                    if r.n != n {
                        r.overhead += 2.0 * t_se_max;
                        r.last_resize = Some(now);
                        self.stats.resizes += 1;
                    } else {
                        self.stats.cap_changes += 1;
                    }
                    let p_old = r.p;
                    r.n = n;
                    r.p = p;
                    let mut nodes = std::mem::take(&mut r.nodes);
                    let gone = self.place(j, &mut nodes, n);
                    let alloc = self.alloc_of(&nodes);
                    let r = self.runs[j.index()].as_mut().expect("a running job");
                    (r.nodes, r.alloc) = (nodes, alloc);
                    match self.cfg.resize_ack_s {
                        Some(s) if !gone.is_empty() => {
                            r.releasing_w += gone.len() as f64 * (p_old + base);
                            r.releasing.extend(gone);
                            r.release_by = r.release_by.or(Some(now.saturating_add(s)));
                        }
                        _ => gone.iter().for_each(|&k| self.holder[k as usize] = None),
                    }
                    let end = self.reschedule(j);
                    t.get_mut(j).expected_end = end;
                    out.push(Effect::Configure { job: t.spec(j).id, nodes: n, cap_w: p, end });
                }
                None => {
                    t.begin(now, j, None);
                    let mut nodes = Vec::with_capacity(n as usize);
                    self.place(j, &mut nodes, n);
                    let alloc = self.alloc_of(&nodes);
                    self.runs[j.index()] = Some(Run { n, p, nodes, alloc: alloc.clone(), releasing: Vec::new(), releasing_w: 0.0, release_by: None, done: 0.0, at: nowf, overhead: 0.0, last_resize: None, expected_end: now });
                    self.usage[j.index()] = Usage::default();
                    let end = self.reschedule(j);
                    t.get_mut(j).expected_end = end;
                    let id = t.spec(j).id;
                    let at = self.running.partition_point(|&x| t.spec(x).id < id);
                    self.running.insert(at, j);
                    out.push(Effect::Start { job: id, alloc, limit: None });
                    out.push(Effect::Configure { job: id, nodes: n, cap_w: p, end });
                }
            }
        }
        waits
    }

    /// Something other than an acknowledgement reached the engine: the
    /// decision that waited is dropped, and the next pass decides anew.
    pub(crate) fn forget_deferred(&mut self) {
        self.deferred.clear();
    }

    /// The last decision took `seconds` to compute: the jobs it started or
    /// reconfigured serve that much more overhead before their new configuration
    /// makes progress (their nodes are held and powered meanwhile).
    /// Whether the last pass started or reconfigured jobs (a decision time
    /// would be charged to them).
    pub fn decided(&self) -> bool {
        !self.changed.is_empty()
    }

    pub(crate) fn charge_decision(&mut self, seconds: f64, t: &mut JobTable, out: &mut Vec<Effect>) {
        if !(seconds > 0.0 && seconds.is_finite()) {
            return;
        }
        for j in std::mem::take(&mut self.changed) {
            let Some(r) = self.runs[j.index()].as_mut() else { continue };
            r.overhead += seconds;
            let (n, p) = (r.n, r.p);
            let end = self.reschedule(j);
            t.get_mut(j).expected_end = end;
            out.push(Effect::Configure { job: t.spec(j).id, nodes: n, cap_w: p, end });
        }
    }

    pub(crate) fn pending_reason(&self, t: &JobTable, job: JobIdx) -> Option<PendingReason> {
        match t.state(job) {
            JobState::Pending => {}
            JobState::Held => return Some(PendingReason::Held),
            _ => return None,
        }
        let pj = &self.pj[job.index()];
        let p_min = self.caps(pj)[0];
        let free_nodes = self.free_usable();
        let free_w = self.machine.budget_w - self.power_w();
        let need_w = pj.n_min as f64 * (p_min + self.machine.node_base_w - self.machine.idle_w);
        Some(if pj.n_min > free_nodes {
            PendingReason::Resources { needed: pj.n_min, free: free_nodes }
        } else if need_w > free_w + 1e-9 {
            PendingReason::PowerBudget { needed_w: need_w.ceil() as u64, free_w: free_w.max(0.0).floor() as u64 }
        } else {
            PendingReason::Priority
        })
    }

    /// Nodes and power within the machine (the power invariant), and the queue and
    /// the states agree.
    pub(crate) fn sanity_check(&self, t: &JobTable) {
        let used = self.used_nodes();
        assert!(used <= self.machine.nodes, "{used} nodes in use of {}", self.machine.nodes);
        let w = self.power_w();
        assert!(self.over_budget || w <= self.machine.budget_w * (1.0 + 1e-9) + 1e-6, "power drawn {w} W exceeds the budget {} W", self.machine.budget_w);
        for j in &self.running {
            assert!(matches!(t.state(*j), JobState::Running { .. } | JobState::Ending { .. }));
            let r = self.runs[j.index()].as_ref().expect("a running job has a run");
            assert_eq!(r.nodes.len() as u32, r.n, "a run holds as many nodes as its size");
            assert!(r.release_by.is_none() || !r.releasing.is_empty(), "a deadline for nodes given up");
            for &k in r.nodes.iter().chain(&r.releasing) {
                assert_eq!(self.holder[k as usize], Some(*j), "node {k} is held by the job that lists it");
            }
        }
        let held = self.holder.iter().filter(|h| h.is_some()).count() as u32;
        assert_eq!(held, used, "every held node belongs to a running job");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_first_starts_the_job_the_paper_rule_gives_power_to_a_running_one_instead() {
        // a running job (heavy weight) at a low or a high cap; a pending job that
        // fits only if the running one stays low
        let running = Group { forced: true, items: vec![Item { value: 10.0, nodes: 4, power: 4.0 * 86.0 }, Item { value: 14.0, nodes: 4, power: 4.0 * 116.0 }] };
        let pending = Group { forced: false, items: vec![Item { value: 3.0, nodes: 1, power: 86.0 }] };
        let p = Problem { groups: vec![running, pending], nodes: 8, power: 4.0 * 116.0 + 20.0 };
        let inc = [Some(1), None];
        let paper = p.solve(Solver::Structured, Some(&inc));
        assert_eq!(paper.choice, vec![Some(1), None], "Σ w·s prefers the running job's speed (14 > 10 + 3)");
        let sf = starts_first(&p, Solver::Structured, &inc);
        assert_eq!(sf.choice, vec![Some(0), Some(0)], "starts first: the pending job starts, the running one is capped");
        assert!(p.usage(&sf.choice).2);
    }

    #[test]
    fn starts_first_gives_spare_power_back_to_running_jobs() {
        // nothing pending fits: the running job keeps its high cap
        let running = Group { forced: true, items: vec![Item { value: 10.0, nodes: 4, power: 344.0 }, Item { value: 14.0, nodes: 4, power: 464.0 }] };
        let pending = Group { forced: false, items: vec![Item { value: 3.0, nodes: 5, power: 430.0 }] };
        let p = Problem { groups: vec![running, pending], nodes: 8, power: 500.0 };
        let sf = starts_first(&p, Solver::Structured, &[Some(1), None]);
        assert_eq!(sf.choice, vec![Some(1), None]);
    }
}
