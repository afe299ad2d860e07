//! The queue engine: FCFS, EASY and conservative backfilling, written once, over
//! the nodes of a cluster (whole nodes or cores, memory, GPUs, node sets, node
//! states), jobs running at the pace of their slowest node. A `--capacity N`
//! replay is this engine on one node of N cores.
//!
//! A job "fits" when the board can place it. EASY's shadow time is the earliest
//! expected end at which the head could be placed on what will be free, and its
//! reservation is that placement (the extra resources are, node by node, what is
//! free then minus what the head takes). Conservative backfilling gives every
//! pending job, in queue order, the earliest window free on the nodes it gets.
//! Estimates are scaled by the factor of the nodes considered: a job limited to E
//! reference seconds holds nodes of slowest factor f for ceil(E / f) seconds.
//!
//! Both backfilling passes first ask aggregate questions that are cheap and
//! necessary (cores free now, cores free over time in the profile, the queue
//! index's smallest need and estimate), and only then place on nodes: on one
//! node the aggregate answer is exact and the per-node step costs nothing.

mod board;
mod budget;
mod check;
mod conservative;
mod easy;
mod index;
mod preempt;
mod reconfigure;
mod resv;
mod timeline;

pub use board::{AllocPart, Allocation, Parts};
pub(crate) use board::{Blocked, Board, Demand, Free, Misses, NeverFits, Sets};

use crate::cluster::Cluster;
use crate::cluster::PreemptMode;
use crate::contract::Effect;
use crate::job::{scaled, JobIdx, JobSpec, JobState, KillReason, SuspendedBy};
use crate::nodeset::NodeSetSpec;
use crate::pending::PendingReason;
use crate::policy::PolicyKind;
use crate::profile::{footprint, Doomed, Profile};
use crate::running::{Running, RunningJob};
use crate::table::JobTable;
use crate::Time;
use serde::{Deserialize, Serialize};
use conservative::Plan;
use timeline::{Frugal, Timeline};
use index::{FreeIndex, Mirror};

/// Whether a node takes jobs, and why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeStatus {
    /// The node answers (false: down; its jobs were killed).
    pub up: bool,
    /// Drained: it finishes its jobs and takes no new ones.
    pub drain: bool,
    /// Why it is down or drained (empty otherwise).
    pub reason: String,
    /// Its power domain failed (`NodeChange::PowerFault`; drained too): its
    /// power counts as its maximum.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub power_fault: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodeEngine {
    policy: PolicyKind,
    board: Board,
    free: Free,
    /// Σ free cores over the nodes that take jobs (an upper bound of what the
    /// queue can use; a drained node's idle cores are not in it).
    free_cores: u64,
    status: Vec<NodeStatus>,
    /// Nodes that take new jobs (up, not drained and powered), and how many.
    usable: Vec<bool>,
    usable_nodes: usize,
    /// By job slot.
    demand: Vec<Demand>,
    /// By job slot: the job's own node-set request (it leaves with the job),
    /// and how many live jobs have one.
    own: Vec<Option<NodeSetSpec>>,
    own_sets: usize,
    /// Live jobs that ask a layout of their own ([`Demand::shaped`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    shaped: usize,
    alloc: Vec<Option<Allocation>>,
    /// By job slot: the allocation of a job suspended by preemption or the gang
    /// scheduler (`alloc` then holds its memory and GPUs and the cores it has
    /// taken back so far).
    home: Vec<Option<Allocation>>,
    /// Jobs suspended by preemption or the gang scheduler, in suspension order.
    parked: Vec<JobIdx>,
    /// Per node: cores of every allocation on it (gang partitions allocate up to
    /// `gang_over` times the node's cores).
    booked: Vec<u32>,
    /// Per node: jobs per core of its gang partition (0: not a gang node).
    gang_over: Vec<u32>,
    /// Some partition may preempt another (a tier above a suspend partition's).
    preemptive: bool,
    /// The lowest tier of a suspend partition: jobs above it may preempt.
    min_victim_tier: u32,
    /// Some partition is a gang partition.
    gang: bool,
    /// The gang time slice, and the instant of the next rotation.
    slice: Time,
    gang_next: Option<Time>,
    /// Slurm's bf_interval (the cluster file's `backfill_interval`): EASY and
    /// conservative backfill only in a pass at least this long after the
    /// last backfill, as Slurm's backfill thread does; the passes between
    /// start jobs from the head of the queue only, as Slurm's main scheduler
    /// does at each submission and completion. None: backfill in every pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    backfill_every: Option<Time>,
    /// With `backfill_every`: the instant of the last backfill.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_backfill: Option<Time>,
    running: Running,
    /// The cluster's power budget, which powers only some nodes at full power
    /// (absent from the saved state of a cluster without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    budget: Option<Box<budget::Budget>>,
    /// Jobs whose node set could never be satisfied, so it was ignored.
    dropped_nodesets: u64,
    max_factor: f64,
    /// Per partition: the fewest cores of any of its nodes (an exclusive job of
    /// k nodes needs at least k times that).
    min_node_cores: Vec<u32>,
    /// On one node without memory, GPUs or node sets, the aggregate profile is
    /// the machine: conservative backfilling needs no per-node check.
    exact_aggregate: bool,
    /// Cores are interchangeable: every partition spans every node and shares
    /// cores, no GPUs are tracked, nodes run at one pace, no node sets and no
    /// preemption. While every node is usable, no job has its own node set and
    /// no live job's memory can bind, EASY and conservative then count cores
    /// over the nodes that take jobs (exact, as in a pool).
    fungible: bool,
    /// The least memory per core of any node with memory tracked (MB): a job
    /// asking no more per processor finds memory for every free core on every
    /// node while no live job asks more, since each job then holds no more
    /// memory than that per core. Live jobs asking more (their memory can
    /// bind: cores are not interchangeable while they live).
    #[serde(default = "no_ratio")]
    mem_ratio: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    mem_binding: usize,
    /// Remember placement misses within a pass (off only in tests, to check
    /// they change nothing).
    #[serde(default = "yes")]
    pub(crate) shortcuts: bool,
    #[serde(skip)]
    cores_cache: Option<(u64, JobIdx, Time, u64)>,
    /// The nodes with a free core and the changes of the free view
    /// (`nodes/index.rs`), built again at the first pass after a read-back.
    #[serde(skip)]
    index: FreeIndex,
    /// Bumped by every change of what is free or running: EASY's shadow, its
    /// reservation and the extra resources (kept in `extra`) are reused while
    /// neither this nor the head changes (passes after arrivals alone).
    #[serde(skip)]
    version: u64,
    #[serde(skip)]
    shadow_cache: Option<easy::ShadowKept>,
    /// After a conservative pass that started nothing: `version`, the queue's
    /// edits and the position of the next arrival then.
    #[serde(skip)]
    quiet_cache: Option<(u64, u64, u32)>,
    /// Conservative's plan from its last pass, which the next pass walks and
    /// repairs rather than builds again (`nodes/conservative.rs`).
    #[serde(skip)]
    kept: Option<conservative::Kept>,
    /// The steps' buffer of a plan the last pass was done with, which the
    /// next plan fills.
    #[serde(skip)]
    spare_steps: Vec<conservative::Step>,
    /// EASY's views, each equal to the free view but on a few nodes: the free
    /// view at the shadow time (and the nodes it may have a free core on), the
    /// extra resources, and what is both free now and extra.
    #[serde(skip)]
    scratch: Mirror,
    #[serde(skip)]
    scratch_bits: Vec<u64>,
    #[serde(skip)]
    extra: Mirror,
    #[serde(skip)]
    view: Mirror,
    /// Bumped when the extra resources are worked out again, and the value
    /// `view` was built from (so a pass brings it up to date on the nodes
    /// that changed since instead of building it again).
    #[serde(skip)]
    extra_epoch: u64,
    #[serde(skip)]
    view_epoch: Option<u64>,
    /// Conservative's profile: while `kept` holds a plan, that plan's, whole
    /// and with its reservations (`Kept`).
    #[serde(skip)]
    profile: Profile,
    #[serde(skip)]
    doomed: Doomed,
    /// The frugal profile's segments, kept for reuse between passes.
    #[serde(skip)]
    frugal: Profile,
    /// The last pass's timeline, whose buffers the next one reuses.
    #[serde(skip)]
    timeline: Timeline,
    /// Advance reservations (`nodes/resv.rs`), the id of the next, and their
    /// windows node by node from the last pass on (built again when read
    /// back, with every demand's estimate and reservation).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    resvs: Vec<crate::resv::Reservation>,
    #[serde(default, skip_serializing_if = "is_zero32")]
    next_resv: u32,
    #[serde(skip)]
    blocks: crate::resv::Blocks,
    /// QOS preemption (Slurm's preempt/qos), by QOS id: the QOS its pending
    /// jobs may preempt, and whether its own jobs are requeued (else
    /// suspended) when preempted. Empty: no QOS preempts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    qos_preempt: Vec<(Vec<u16>, bool)>,
    /// Jobs killed to be requeued for a preemptor, until they end: the
    /// policy starts nothing meanwhile, so that what they give back goes to
    /// the preemptor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    requeueing: Vec<JobIdx>,
}

fn is_zero32(x: &u32) -> bool {
    *x == 0
}

fn yes() -> bool {
    true
}

fn no_ratio() -> u64 {
    // a state saved before: memory clusters were never fungible then
    u64::MAX
}

/// The estimate limit `lim` seconds allows on the fastest nodes (factor `fmax`):
/// the largest E with ceil(E / fmax) <= lim.
fn est_limit(lim: Time, fmax: f64) -> Time {
    if fmax == 1.0 || lim <= 0 {
        lim
    } else {
        (lim as f64 * fmax).floor().min(Time::MAX as f64 / 2.0) as Time
    }
}

impl NodeEngine {
    pub fn new(policy: PolicyKind, cluster: &Cluster) -> Self {
        let board = Board::new(cluster);
        let free = board.full();
        let free_cores = board.total_cores();
        let max_factor = board.nodes.iter().map(|n| n.factor).fold(0.0, f64::max);
        let min_node_cores = board
            .parts
            .iter()
            .map(|p| {
                p.nodes
                    .iter()
                    .map(|&n| board.nodes[n as usize].cores)
                    .min()
                    .unwrap_or(0)
            })
            .collect();
        let n = board.nodes.len();
        let mut gang_over = vec![0u32; n];
        for p in board
            .parts
            .iter()
            .filter(|p| p.preempt == PreemptMode::Gang)
        {
            for &m in &p.nodes {
                gang_over[m as usize] = p.over;
            }
        }
        let min_victim_tier = board
            .parts
            .iter()
            .filter(|p| p.preempt == PreemptMode::Suspend)
            .map(|p| p.tier)
            .min()
            .unwrap_or(u32::MAX);
        let preemptive = board.parts.iter().any(|p| p.tier > min_victim_tier);
        let gang = gang_over.iter().any(|&o| o > 0);
        let fungible = !preemptive
            && !gang
            && board.site_nodeset.is_none()
            && board
                .nodes
                .iter()
                .all(|m| m.gpus == 0 && m.factor == board.nodes[0].factor)
            && board
                .parts
                .iter()
                .all(|p| !p.exclusive && p.nodeset.is_none() && p.nodes.len() == n);
        let mem_ratio = board.nodes.iter().filter(|m| m.mem > 0).map(|m| m.mem / m.cores.max(1) as u64).min().unwrap_or(u64::MAX);
        let exact_aggregate = n == 1
            && board.nodes[0].mem == 0
            && board.nodes[0].gpus == 0
            && board.site_nodeset.is_none()
            && board.parts.iter().all(|p| p.nodeset.is_none());
        let mut e = NodeEngine {
            policy,
            board,
            free,
            free_cores,
            status: vec![
                NodeStatus {
                    up: true,
                    drain: false,
                    reason: String::new(),
                    power_fault: false,
                };
                n
            ],
            usable: vec![true; n],
            usable_nodes: n,
            demand: Vec::new(),
            own: Vec::new(),
            own_sets: 0,
            shaped: 0,
            alloc: Vec::new(),
            home: Vec::new(),
            parked: Vec::new(),
            booked: vec![0; n],
            gang_over,
            preemptive,
            min_victim_tier,
            gang,
            slice: cluster.time_slice_s.max(1),
            gang_next: None,
            backfill_every: cluster.backfill_interval_s,
            last_backfill: None,
            running: Running::default(),
            budget: budget::Budget::of(cluster).map(Box::new),
            dropped_nodesets: 0,
            max_factor,
            min_node_cores,
            exact_aggregate,
            fungible,
            mem_ratio,
            mem_binding: 0,
            shortcuts: true,
            cores_cache: None,
            index: FreeIndex::default(),
            version: 0,
            shadow_cache: None,
            quiet_cache: None,
            kept: None,
            spare_steps: Vec::new(),
            scratch: Mirror::default(),
            scratch_bits: Vec::new(),
            extra: Mirror::default(),
            view: Mirror::default(),
            extra_epoch: 0,
            view_epoch: None,
            profile: Profile::default(),
            doomed: Doomed::default(),
            frugal: Profile::default(),
            timeline: Timeline::default(),
            resvs: Vec::new(),
            next_resv: 0,
            blocks: Default::default(),
            qos_preempt: Vec::new(),
            requeueing: Vec::new(),
        };
        e.repower();
        e.index = FreeIndex::build(&e.board, &e.free, &e.usable, &e.index);
        e
    }

    pub fn policy(&self) -> PolicyKind {
        self.policy
    }
    pub fn capacity(&self) -> u64 {
        self.board.total_cores()
    }
    pub fn free(&self) -> u64 {
        self.free_cores
    }
    pub fn running(&self) -> usize {
        self.running.len()
    }
    pub fn dropped_nodesets(&self) -> u64 {
        self.dropped_nodesets
    }
    pub fn node_status(&self, n: usize) -> Option<&NodeStatus> {
        self.status.get(n)
    }
    pub fn allocation(&self, job: JobIdx) -> Option<&Allocation> {
        self.alloc.get(job.index()).and_then(|a| a.as_ref())
    }

    /// QOS preemption from the accounts' QOS table: some QOS preempts another.
    pub(crate) fn set_qos_preemption(&mut self, acc: &crate::share::Accounts) {
        self.qos_preempt.clear();
        if acc.qos.iter().all(|q| q.preempt.is_empty()) {
            return;
        }
        self.qos_preempt = acc
            .qos
            .iter()
            .map(|q| (q.preempt.iter().map(|p| p.0).collect(), q.preempt_mode == crate::share::QosPreemptMode::Requeue))
            .collect();
        self.preemptive = true;
        self.fungible = false;
    }

    /// Whether a job's memory could leave some free core of a node without
    /// memory enough for it ([`NodeEngine::mem_ratio`]).
    fn binds(&self, d: &Demand) -> bool {
        d.mem_per_proc > self.mem_ratio
    }

    /// Whether a pass could start a queued job now: some pending job needs no
    /// more cores than are free, or a tier may preempt, or gangs rotate.
    pub(crate) fn could_start(&self, t: &JobTable) -> bool {
        self.preemptive || self.gang || self.free_cores >= t.queue.min_need()
    }

    /// Running and ending jobs, by expected end.
    pub(crate) fn running_jobs(&self) -> impl Iterator<Item = JobIdx> + '_ {
        self.running.as_slice().iter().map(|r| r.job)
    }

    /// The running list, which logs the jobs that join or leave it once
    /// fair share charges usage ([`Running::log_changes`]).
    pub(crate) fn running_mut(&mut self) -> &mut Running {
        &mut self.running
    }

    /// The partition a job runs in.
    pub(crate) fn part_of(&self, job: JobIdx) -> usize {
        self.demand[job.index()].part as usize
    }

    /// What a job holds while it runs, node by node: cores, memory, GPUs and
    /// the node's scaling factor (a parked job: what it will hold again).
    pub(crate) fn holdings(&self, job: JobIdx) -> impl Iterator<Item = (u32, u64, u32, f64)> + '_ {
        let a = self.home.get(job.index()).and_then(|a| a.as_ref()).or_else(|| self.allocation(job));
        a.into_iter().flat_map(|a| a.parts.iter()).map(|p| (p.cores, p.mem, p.gpus, self.board.nodes[p.node as usize].factor))
    }

    /// What the queue index files a job under: the cores it needs at least.
    fn need(&self, d: &Demand) -> u64 {
        let p = &self.board.parts[d.part as usize];
        if p.preempt == PreemptMode::Gang {
            // gang jobs start in the gang step, never in the policy's pass
            return crate::queue::Queue::HELD;
        }
        if p.exclusive {
            d.nodes as u64 * self.min_node_cores[d.part as usize] as u64
        } else {
            d.procs as u64
        }
    }

    /// The demand of a job (its set list built, or found among those kept),
    /// or why it can never run here. Changes nothing.
    pub(crate) fn demand_of(
        &self,
        spec: &JobSpec,
        own: Option<&NodeSetSpec>,
        choice: &crate::NodeChoice,
        now: Time,
    ) -> Result<(Demand, Option<Sets>, bool), NeverFits> {
        let r = self.board.demand(spec, own, choice, now)?;
        self.powerable(&r.0)?;
        Ok(r)
    }

    /// Under a power budget, whether the nodes a job takes on an empty machine
    /// can all run at full power at once.
    fn powerable(&self, d: &Demand) -> Result<(), NeverFits> {
        let Some(b) = &self.budget else { return Ok(()) };
        match self.board.place(d, &self.board.empty, d.submit, &|_| true) {
            Ok(a) if b.powers(a.parts.iter().map(|p| p.node as usize)) => Ok(()),
            _ => Err(NeverFits::PowerBudget),
        }
    }

    /// The demand of a job and its need, its set list kept while the job lives
    /// (attach it, or let it go), or why it can never run here.
    pub(crate) fn admit(
        &mut self,
        spec: &JobSpec,
        own: Option<&NodeSetSpec>,
        choice: &crate::NodeChoice,
        now: Time,
    ) -> Result<(Demand, u64, bool), NeverFits> {
        let (mut d, sets, dropped) = self.board.demand(spec, own, choice, now)?;
        self.powerable(&d)?;
        d.sets = sets.map(|s| self.board.keep(s));
        let need = self.need(&d);
        Ok((d, need, dropped))
    }

    /// The key the queue files a job of demand `d` under ([`Misses::filed_key`]).
    pub(crate) fn filed_key(&self, d: &Demand) -> u64 {
        Misses::filed_key(&self.board, d)
    }

    /// A job was added to the table in slot `job`, with its demand (from
    /// [`NodeEngine::admit`]) and its own node-set request.
    pub(crate) fn attach(
        &mut self,
        job: JobIdx,
        d: Demand,
        own: Option<NodeSetSpec>,
        dropped: bool,
    ) {
        self.dropped_nodesets += dropped as u64;
        self.own_sets += own.is_some() as usize;
        self.shaped += d.shaped() as usize;
        self.mem_binding += self.binds(&d) as usize;
        let i = job.index();
        if i == self.demand.len() {
            self.demand.push(d);
            self.own.push(own);
            self.alloc.push(None);
            self.home.push(None);
        } else {
            self.demand[i] = d;
            self.own[i] = own;
            self.alloc[i] = None;
            self.home[i] = None;
        }
    }

    /// A job left the engine: its node sets go with it.
    pub(crate) fn detach(&mut self, job: JobIdx) {
        let i = job.index();
        if let Some(si) = self.demand[i].sets.take() {
            self.board.let_go(si);
        }
        if self.own[i].take().is_some() {
            self.own_sets -= 1;
        }
        if self.demand[i].shaped() {
            self.shaped -= 1;
        }
        if self.binds(&self.demand[i]) {
            self.mem_binding -= 1;
        }
    }

    /// A job gives back its resources (it ended, or is going back to the queue).
    pub(crate) fn release(&mut self, t: &JobTable, job: JobIdx) -> Option<Allocation> {
        self.version += 1;
        let e = t.get(job);
        if matches!(e.state, JobState::Running { .. } | JobState::Ending { .. }) {
            let r = self.running.remove(e.expected_end, job);
            if let Some(k) = &mut self.kept {
                k.released(r);
            }
            if let Some(a) = &self.alloc[job.index()] {
                // what it gives back adds at most `gain` to what a kept
                // shadow's head could take
                let gain = self.shadow_cache.as_ref().map(|k| self.gain(&self.demand[k.head.index()], a));
                if let (Some(k), Some(gain)) = (&mut self.shadow_cache, gain) {
                    if k.ended(job, r.expected_end, a, gain) && !self.extra.give(a) {
                        self.shadow_cache = None;
                    }
                }
            }
        } else {
            self.kept = None;
        }
        let a = self.alloc[job.index()].take()?;
        self.free.give(&a);
        self.touched(&a);
        self.free_cores += self.usable_cores(&a);
        let whole = self.home[job.index()].take().unwrap_or(a);
        for p in &whole.parts {
            self.booked[p.node as usize] -= p.cores;
        }
        if let Some(b) = &mut self.budget {
            b.due = true;
            b.ceiling.remove(&job.0);
        }
        self.parked.retain(|&p| p != job);
        self.requeueing.retain(|&p| p != job);
        Some(whole)
    }

    /// An operator suspended a running job: it keeps its resources, but no end
    /// is expected until it resumes.
    pub(crate) fn suspend(&mut self, t: &JobTable, job: JobIdx) {
        self.version += 1;
        self.running.remove(t.get(job).expected_end, job);
    }

    /// A suspended job runs again; it is expected to end when its limit runs out.
    pub(crate) fn resume(&mut self, t: &mut JobTable, job: JobIdx) {
        let end = t.get(job).deadline().unwrap_or(Time::MAX);
        self.resume_at(t, job, end);
    }

    /// A suspended job holds its resources in the running list again, expected
    /// to end at `end`.
    pub(crate) fn resume_at(&mut self, t: &mut JobTable, job: JobIdx, end: Time) {
        self.version += 1;
        // a parked job that is killed ends holding what it has taken back: it
        // gives up its claim on the rest of its allocation
        self.parked.retain(|&p| p != job);
        if let Some(home) = self.home[job.index()].take() {
            let held = self.alloc[job.index()]
                .as_ref()
                .expect("a parked job holds memory");
            for (h, a) in home.parts.iter().zip(&held.parts) {
                self.booked[h.node as usize] -= h.cores - a.cores;
            }
        }
        let e = t.get_mut(job);
        e.expected_end = end;
        // a suspended or ending job holds its allocation (sanity_check asserts it)
        let procs = self.alloc[job.index()]
            .as_ref()
            .map_or(0, |a| self.usable_cores(a));
        self.running.insert(RunningJob {
            expected_end: end,
            job,
            procs: procs.min(u32::MAX as u64) as u32,
        });
    }

    /// Cores of `a` on nodes that take jobs.
    pub(crate) fn usable_cores(&self, a: &Allocation) -> u64 {
        a.parts
            .iter()
            .filter(|p| self.usable[p.node as usize])
            .map(|p| p.cores as u64)
            .sum()
    }

    /// When a pending job with a DELAY node set may span sets.
    pub(crate) fn delay_until(&self, job: JobIdx) -> Option<Time> {
        let d = &self.demand[job.index()];
        let sets = &self.board.sets[d.sets? as usize];
        (sets.spec.plus == crate::nodeset::SetPlus::Delay)
            .then(|| d.submit.saturating_add(self.board.delay))
    }

    /// Jobs holding resources on node `n`, by slot.
    pub(crate) fn jobs_on(&self, n: u32) -> Vec<JobIdx> {
        self.alloc
            .iter()
            .enumerate()
            .filter(|(_, a)| {
                a.as_ref()
                    .is_some_and(|a| a.parts.iter().any(|p| p.node == n))
            })
            .map(|(i, _)| JobIdx(i as u32))
            .collect()
    }

    pub(crate) fn node_index(&self, n: u32) -> Option<usize> {
        ((n as usize) < self.status.len()).then_some(n as usize)
    }

    /// Change a node's status. When it starts or stops taking jobs, its free
    /// cores and those its running jobs give back when they end join or leave
    /// what the queue can use. Under a power budget the nodes powered are
    /// chosen again.
    pub(crate) fn set_status(&mut self, n: usize, f: impl FnOnce(&mut NodeStatus)) {
        self.version += 1;
        f(&mut self.status[n]);
        let s = &mut self.status[n];
        if s.up && !s.drain {
            s.reason.clear();
        }
        let takes = s.up && !s.drain;
        match self.budget.is_some() {
            true => self.repower(),
            false => self.set_usable(n, takes),
        }
    }

    /// Under a power budget: power the nodes that hold jobs, then those that
    /// take jobs while the budget lasts ([`budget::Budget::repower`]); only
    /// powered nodes take jobs.
    fn repower(&mut self) {
        let Some(mut b) = self.budget.take() else { return };
        let (status, booked) = (&self.status, &self.booked);
        // (a node whose power domain failed counts at its maximum, busy or not)
        b.repower(|i| booked[i] > 0 || status[i].power_fault, |i| status[i].up && !status[i].drain);
        for n in 0..self.status.len() {
            let s = &self.status[n];
            self.set_usable(n, s.up && !s.drain && b.on[n]);
        }
        self.budget = Some(b);
    }

    /// Node `n` starts or stops taking jobs.
    fn set_usable(&mut self, n: usize, usable: bool) {
        if usable == self.usable[n] {
            return;
        }
        self.version += 1;
        self.usable[n] = usable;
        self.index.set_usable(&self.board, n as u32, usable);
        self.usable_nodes = self.usable.iter().filter(|&&u| u).count();
        let idle = self.free.cores[n] as u64;
        if usable {
            self.free_cores += idle;
        } else {
            self.free_cores -= idle;
        }
        let mut rs = std::mem::take(&mut self.running);
        for r in rs.as_mut_slice() {
            if let Some(a) = self.alloc[r.job.index()]
                .as_ref()
                .filter(|a| a.parts.iter().any(|p| p.node as usize == n))
            {
                r.procs = self.usable_cores(a).min(u32::MAX as u64) as u32;
            }
        }
        self.running = rs;
    }

    /// The power budget, if some node is up and not drained but not powered.
    fn held_for_power(&self) -> Option<&budget::Budget> {
        self.budget.as_deref().filter(|b| {
            self.status
                .iter()
                .zip(&b.on)
                .any(|(s, &on)| s.up && !s.drain && !on)
        })
    }

    /// Under a power budget, what a job has used by `now`: its nodes at full
    /// power over its run, suspensions aside (the model's energy).
    pub(crate) fn usage(&self, t: &JobTable, job: JobIdx, now: Time) -> Option<crate::power::Usage> {
        let b = self.budget.as_ref()?;
        let a = self.allocation(job)?;
        let e = t.get(job);
        let mut ran = now - e.state.start()? - e.suspended_s;
        if let JobState::Suspended { since, .. } = e.state {
            ran -= now - since;
        }
        let s = ran.max(0) as f64;
        Some(crate::power::Usage { energy_j: a.parts.iter().map(|p| b.busy_w(p.node as usize)).sum::<f64>() * s, node_s: a.parts.len() as f64 * s })
    }

    /// The power budget (W), if the cluster has one.
    pub fn budget_w(&self) -> Option<f64> {
        self.budget.as_ref().map(|b| b.budget_w)
    }

    /// The lowest budget that keeps the running jobs' nodes at full power.
    pub(crate) fn least_power_w(&self) -> Option<f64> {
        let (booked, status) = (&self.booked, &self.status);
        self.budget.as_ref().map(|b| b.least_w(|i| booked[i] > 0 || status[i].power_fault))
    }

    /// A new budget (checked against [`NodeEngine::least_power_w`] first): the
    /// nodes powered are chosen again at once.
    pub(crate) fn set_budget(&mut self, watts: f64) {
        if let Some(b) = &mut self.budget {
            b.budget_w = watts;
            self.repower();
        }
    }

    /// Under a power budget, a job's node count and the CPU cap its nodes run
    /// at: full power (the lowest maximum of its nodes), or the power
    /// governor's ceiling.
    pub fn power_config(&self, job: JobIdx) -> Option<(u32, f64)> {
        let b = self.budget.as_ref()?;
        let a = self.allocation(job)?;
        let cap = a.parts.iter().map(|p| b.cpu_max_w[p.node as usize]).fold(f64::INFINITY, f64::min);
        let cap = b.ceiling.get(&job.0).map_or(cap, |&c| c.min(cap));
        (cap.is_finite() && cap > 0.0).then_some((a.parts.len() as u32, cap))
    }

    /// Under a power budget, the lowest cap a job's nodes may be held to: the
    /// highest of their lowest levels.
    pub(crate) fn cap_floor(&self, job: JobIdx) -> Option<f64> {
        let b = self.budget.as_ref()?;
        let a = self.allocation(job)?;
        Some(a.parts.iter().map(|p| b.cpu_min_w[p.node as usize]).fold(0.0, f64::max))
    }

    /// Under a power budget, hold a running job at `cap_w` at most (its floor
    /// at least) for the rest of its run, and say so (`Effect::Configure`).
    pub(crate) fn cap_ceiling(&mut self, t: &JobTable, job: JobIdx, cap_w: f64, out: &mut Vec<Effect>) -> Option<()> {
        let floor = self.cap_floor(job)?;
        let (_, before) = self.power_config(job)?;
        self.budget.as_mut()?.ceiling.insert(job.0, cap_w.max(floor));
        let (nodes, cap) = self.power_config(job)?;
        if cap < before {
            out.push(Effect::Configure { job: t.spec(job).id, nodes, cap_w: cap, end: t.get(job).expected_end });
        }
        Some(())
    }

    /// The next instant a pass is needed though nothing outside happens: the
    /// earliest limit of a running job.
    pub(crate) fn next_deadline(&self, t: &JobTable, now: Time) -> Option<Time> {
        let limit = self
            .running
            .as_slice()
            .iter()
            .find(|r| matches!(t.state(r.job), JobState::Running { .. }))
            .map(|r| r.expected_end);
        // a window's start or end can let a job start (a job in it, or one
        // it kept out); one that ends for good must leave
        // (only while jobs wait: a recurring window alone asks for nothing)
        let waiting = t.queue.head().is_some();
        let resv = waiting.then(|| self.blocks.next_after(now)).flatten();
        // the next backfill, while jobs wait
        let backfill = waiting.then_some(self.backfill_every.zip(self.last_backfill)).flatten().map(|(every, last)| last + every).filter(|&b| b > now);
        crate::earliest([limit, self.gang_next, resv, backfill])
    }

    pub fn pass(&mut self, now: Time, t: &mut JobTable, out: &mut Vec<Effect>) {
        if !self.index.built() {
            // a state read back: what is not saved is worked out again, the
            // index of free nodes and the keys queued jobs are filed under
            self.index = FreeIndex::build(&self.board, &self.free, &self.usable, &self.index);
            let queued: Vec<JobIdx> = t.queue.iter().map(|(_, j)| j).collect();
            for j in queued {
                t.queue.set_key(j, self.filed_key(&self.demand[j.index()]));
            }
        }
        if self.kill_expired(now, t, out) {
            // their resources come back when their completions are reported; the
            // next pass schedules with them
            return;
        }
        if self.budget.as_ref().is_some_and(|b| b.due) {
            self.repower();
        }
        if self.reserving() {
            // placement depends on time: nothing computed at another instant holds
            self.shadow_cache = None;
            self.cores_cache = None;
            self.quiet_cache = None;
        }
        if self.preemptive || self.gang {
            self.preempt_pass(now, t, out);
        }
        if !self.requeueing.is_empty() {
            return;
        }
        match self.policy {
            PolicyKind::Fcfs => {
                self.start_from_head(now, t, out);
            }
            // between two backfills (Slurm's bf_interval), the head of the
            // queue only, as Slurm's main scheduler
            PolicyKind::Easy | PolicyKind::Conservative if self.backfill_every.zip(self.last_backfill).is_some_and(|(every, last)| now < last + every) => {
                self.start_from_head(now, t, out);
            }
            // where a job is placed can depend on what started before it in the
            // same pass (node sets, nodes of different pace): the pass repeats
            // until it starts nothing, so that a pass is idempotent
            PolicyKind::Easy | PolicyKind::Conservative => loop {
                if self.backfill_every.is_some() {
                    self.last_backfill = Some(now);
                }
                let before = out.len();
                if self.policy == PolicyKind::Easy {
                    self.pass_easy(now, t, out);
                } else {
                    self.pass_conservative(now, t, out);
                }
                if !self.placement_varies()
                    || !out[before..]
                        .iter()
                        .any(|e| matches!(e, Effect::Start { .. }))
                {
                    break;
                }
            },
            // never built for PARM (Engine::with_cluster refuses it)
            PolicyKind::Parm => {}
        }
    }

    /// Whether any free cores of the nodes that take jobs will do for any job, as
    /// in a pool (so counting cores over them is exact): a fungible cluster and
    /// no job with its own node set.
    fn cores_interchangeable(&self) -> bool {
        self.fungible && self.own_sets == 0 && self.shaped == 0 && self.mem_binding == 0 && self.usable_nodes > 0 && !self.reserving()
    }

    /// Whether a job's placement (and so its pace and end) can depend on which
    /// other jobs hold nodes: node sets, or nodes of different scaling factors.
    fn placement_varies(&self) -> bool {
        self.board.site_nodeset.is_some()
            || self.own_sets > 0
            || self.shaped > 0
            || self
                .board
                .parts
                .iter()
                .any(|p| p.nodeset.is_some() || p.tiers.len() > 1)
    }

    /// Ask the driver to kill every running job whose limit has run out.
    fn kill_expired(&mut self, now: Time, t: &mut JobTable, out: &mut Vec<Effect>) -> bool {
        let mut any = false;
        for r in self.running.as_slice() {
            if r.expected_end > now {
                break;
            }
            let e = t.get_mut(r.job);
            if let JobState::Running { start } = e.state {
                e.state = JobState::Ending {
                    start,
                    at: now,
                    reason: KillReason::TimeLimit,
                };
                out.push(Effect::Kill {
                    job: e.spec.id,
                    reason: KillReason::TimeLimit,
                });
                any = true;
            }
        }
        any
    }

    fn start(
        &mut self,
        now: Time,
        t: &mut JobTable,
        job: JobIdx,
        a: Allocation,
        out: &mut Vec<Effect>,
    ) {
        self.version += 1;
        let est = t.spec(job).estimate;
        let limit = scaled(est, a.factor);
        t.begin(now, job, Some(limit));
        self.free.take(&a);
        self.touched(&a);
        // placed on nodes that take jobs
        let cores = cores_of(&a);
        self.free_cores -= cores;
        for p in &a.parts {
            self.booked[p.node as usize] += p.cores;
        }
        let expected_end = now.saturating_add(limit);
        let e = t.get_mut(job);
        e.expected_end = expected_end;
        self.running.insert(RunningJob {
            expected_end,
            job,
            procs: cores.min(u32::MAX as u64) as u32,
        });
        out.push(Effect::Start {
            job: e.spec.id,
            alloc: a.clone(),
            limit: Some(limit),
        });
        self.alloc[job.index()] = Some(a);
    }

    fn place_now(&self, d: &Demand, free: &Free, now: Time) -> Result<Allocation, Blocked> {
        let usable = &self.usable;
        // the engine's free view (or one within it): first fit visits the
        // nodes with a free core only
        if self.indexed(d) && (std::ptr::eq(free, &self.free) || std::ptr::eq(free, &self.view.v)) {
            return self.pick_indexed(d, free, self.index.bits());
        }
        if self.reserving() {
            return self.place_windowed(d, free, now, &|n| usable[n as usize]);
        }
        self.board.place(d, free, now, &|n| usable[n as usize])
    }

    /// Whether `d` may be placed by first fit over the index's nodes: no node
    /// sets, no layout of its own, no reservation windows, and its
    /// partition's nodes in ascending order.
    fn indexed(&self, d: &Demand) -> bool {
        self.shortcuts && d.sets.is_none() && !d.shaped() && !self.reserving() && self.index.ordered(d.part)
    }

    /// First fit of `d` on view `free` over the nodes of `bits` (which hold
    /// every node with a free core in that view).
    fn pick_indexed(&self, d: &Demand, free: &Free, bits: &[u64]) -> Result<Allocation, Blocked> {
        self.board
            .pick_in(d, free, index::ones_in(bits, self.index.eligible(d.part)), &|_| true)
            .ok_or(Blocked::Resources)
    }

    /// The free view changed on the nodes of `a`.
    fn touched(&mut self, a: &Allocation) {
        self.index.touch(&self.free, a.parts.iter().map(|p| p.node));
    }

    /// Start jobs from the head while the board can place them; returns the
    /// blocked head.
    fn start_from_head(
        &mut self,
        now: Time,
        t: &mut JobTable,
        out: &mut Vec<Effect>,
    ) -> Option<(u32, JobIdx)> {
        while let Some((pos, job)) = t.queue.head() {
            if t.over_limit(job) {
                continue;
            }
            if t.get(job).need > self.free_cores {
                return Some((pos, job));
            }
            match self.place_now(&self.demand[job.index()], &self.free, now) {
                Ok(a) => self.start(now, t, job, a, out),
                Err(_) => return Some((pos, job)),
            }
        }
        None
    }

    pub fn pending_reason(
        &self,
        now: Time,
        t: &JobTable,
        job: JobIdx,
    ) -> Option<PendingReason> {
        let e = t.get(job);
        match e.state {
            JobState::Pending => {}
            JobState::Held => return Some(PendingReason::Held),
            _ => return None,
        }
        let head = t.is_head(job);
        let d = &self.demand[job.index()];
        if self.board.parts[d.part as usize].preempt == PreemptMode::Gang {
            // gang jobs wait only for the partition's shared cores
            return Some(PendingReason::Resources {
                needed: e.spec.procs,
                free: self.free_cores.min(u32::MAX as u64) as u32,
            });
        }
        if let Some(r) = self.resv_reason(now, d) {
            return Some(r);
        }
        let blocked = match (self.place_now(d, &self.free, now), self.held_for_power()) {
            (Err(Blocked::NodeSet), _) => {
                let spec = &self.board.sets[d.sets.unwrap() as usize].spec;
                PendingReason::NodeSet {
                    policy: spec.policy,
                    attribute: spec.attribute,
                }
            }
            // nodes that would take it but for the budget: it waits for power
            (_, Some(b)) => {
                let nodes = match self.board.place(d, &self.board.empty, now, &|_| true) {
                    Ok(a) => a.parts.len() as u32,
                    Err(_) => 1,
                };
                PendingReason::PowerBudget {
                    needed_w: b.need_w(nodes).ceil() as u64,
                    free_w: b.free_w().floor() as u64,
                }
            }
            _ => PendingReason::Resources {
                needed: e.spec.procs,
                free: self.free_cores.min(u32::MAX as u64) as u32,
            },
        };
        Some(match self.policy {
            PolicyKind::Fcfs | PolicyKind::Easy if head => blocked,
            PolicyKind::Fcfs | PolicyKind::Easy | PolicyKind::Parm => PendingReason::Priority,
            PolicyKind::Conservative => {
                // the plan works in the engine's scratch space: on a copy
                let start = self
                    .clone()
                    .plan(now, t, Plan::Explain(job), &mut Vec::new())
                    .expect("a pending job gets a reservation");
                if start == now && head {
                    blocked
                } else {
                    PendingReason::ReservedFor { start }
                }
            }
        })
    }

}

pub(crate) fn cores_of(a: &Allocation) -> u64 {
    a.parts.iter().map(|p| p.cores as u64).sum()
}

fn is_zero(x: &usize) -> bool {
    *x == 0
}
