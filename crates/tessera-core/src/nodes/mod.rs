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
mod preempt;
mod reconfigure;
mod timeline;

pub use board::{AllocPart, Allocation};
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
use timeline::Timeline;

/// Whether a node takes jobs, and why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeStatus {
    /// The node answers (false: down; its jobs were killed).
    pub up: bool,
    /// Drained: it finishes its jobs and takes no new ones.
    pub drain: bool,
    /// Why it is down or drained (empty otherwise).
    pub reason: String,
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
    /// Nodes that take new jobs (up and not drained), and how many.
    usable: Vec<bool>,
    usable_nodes: usize,
    /// By job slot.
    demand: Vec<Demand>,
    /// By job slot: the job's own node-set request (it leaves with the job),
    /// and how many live jobs have one.
    own: Vec<Option<NodeSetSpec>>,
    own_sets: usize,
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
    running: Running,
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
    /// cores, no memory or GPUs are tracked, nodes run at one pace, no node sets
    /// and no preemption. While every node is usable and no job has its own node
    /// set, EASY and conservative then count cores over the nodes that take jobs
    /// (exact, as in a pool).
    fungible: bool,
    /// Remember placement misses within a pass (off only in tests, to check
    /// they change nothing).
    #[serde(default = "yes")]
    pub(crate) shortcuts: bool,
    #[serde(skip)]
    cores_cache: Option<(u64, JobIdx, Time, u64)>,
    /// Fungible clusters of one partition: no node before this position in the
    /// partition has a free core and takes jobs (first-fit placement starts
    /// there).
    #[serde(skip)]
    first_free: std::cell::Cell<u32>,
    /// Each node's position in the first partition.
    pos_in_part: Vec<u32>,
    /// Bumped by every change of what is free or running: EASY's shadow, its
    /// reservation and the extra resources (kept in `extra`) are reused while
    /// neither this nor the head changes (passes after arrivals alone).
    #[serde(skip)]
    version: u64,
    #[serde(skip)]
    shadow_cache: Option<(u64, JobIdx, Time)>,
    /// After a conservative pass that started nothing: `version`, the queue's
    /// edits and the position of the next arrival then.
    #[serde(skip)]
    quiet_cache: Option<(u64, u64, u32)>,
    #[serde(skip)]
    view: Free,
    #[serde(skip)]
    scratch: Free,
    #[serde(skip)]
    extra: Free,
    #[serde(skip)]
    profile: Profile,
    #[serde(skip)]
    doomed: Doomed,
}

fn yes() -> bool {
    true
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
                .all(|m| m.mem == 0 && m.gpus == 0 && m.factor == board.nodes[0].factor)
            && board
                .parts
                .iter()
                .all(|p| !p.exclusive && p.nodeset.is_none() && p.nodes.len() == n);
        let mut pos_in_part = vec![0u32; n];
        if let Some(p) = board.parts.first() {
            for (k, &m) in p.nodes.iter().enumerate() {
                pos_in_part[m as usize] = k as u32;
            }
        }
        let exact_aggregate = n == 1
            && board.nodes[0].mem == 0
            && board.nodes[0].gpus == 0
            && board.site_nodeset.is_none()
            && board.parts.iter().all(|p| p.nodeset.is_none());
        NodeEngine {
            policy,
            board,
            free,
            free_cores,
            status: vec![
                NodeStatus {
                    up: true,
                    drain: false,
                    reason: String::new()
                };
                n
            ],
            usable: vec![true; n],
            usable_nodes: n,
            demand: Vec::new(),
            own: Vec::new(),
            own_sets: 0,
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
            running: Running::default(),
            dropped_nodesets: 0,
            max_factor,
            min_node_cores,
            exact_aggregate,
            fungible,
            shortcuts: true,
            cores_cache: None,
            first_free: std::cell::Cell::new(0),
            pos_in_part,
            version: 0,
            shadow_cache: None,
            quiet_cache: None,
            view: Free::default(),
            scratch: Free::default(),
            extra: Free::default(),
            profile: Profile::default(),
            doomed: Doomed::default(),
        }
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
        now: Time,
    ) -> Result<(Demand, Option<Sets>, bool), NeverFits> {
        self.board.demand(spec, own, now)
    }

    /// The demand of a job and its need, its set list kept while the job lives
    /// (attach it, or let it go), or why it can never run here.
    pub(crate) fn admit(
        &mut self,
        spec: &JobSpec,
        own: Option<&NodeSetSpec>,
        now: Time,
    ) -> Result<(Demand, u64, bool), NeverFits> {
        let (mut d, sets, dropped) = self.board.demand(spec, own, now)?;
        d.sets = sets.map(|s| self.board.keep(s));
        let need = self.need(&d);
        Ok((d, need, dropped))
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
    }

    /// A job gives back its resources (it ended, or is going back to the queue).
    pub(crate) fn release(&mut self, t: &JobTable, job: JobIdx) -> Option<Allocation> {
        self.version += 1;
        let e = t.get(job);
        if matches!(e.state, JobState::Running { .. } | JobState::Ending { .. }) {
            self.running.remove(e.expected_end, job);
        }
        let a = self.alloc[job.index()].take()?;
        self.free.give(&a);
        for p in &a.parts {
            if p.cores > 0 {
                self.first_free
                    .set(self.first_free.get().min(self.pos_in_part[p.node as usize]));
            }
        }
        self.free_cores += self.usable_cores(&a);
        let whole = self.home[job.index()].take().unwrap_or(a);
        for p in &whole.parts {
            self.booked[p.node as usize] -= p.cores;
        }
        self.parked.retain(|&p| p != job);
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
    /// what the queue can use.
    pub(crate) fn set_status(&mut self, n: usize, f: impl FnOnce(&mut NodeStatus)) {
        self.version += 1;
        f(&mut self.status[n]);
        let s = &mut self.status[n];
        if s.up && !s.drain {
            s.reason.clear();
        }
        let usable = s.up && !s.drain;
        if usable == self.usable[n] {
            return;
        }
        self.usable[n] = usable;
        self.usable_nodes = self.usable.iter().filter(|&&u| u).count();
        let idle = self.free.cores[n] as u64;
        if usable {
            self.free_cores += idle;
            self.first_free
                .set(self.first_free.get().min(self.pos_in_part[n]));
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

    /// The next instant a pass is needed though nothing outside happens: the
    /// earliest limit of a running job.
    pub(crate) fn next_deadline(&self, t: &JobTable) -> Option<Time> {
        let limit = self
            .running
            .as_slice()
            .iter()
            .find(|r| matches!(t.state(r.job), JobState::Running { .. }))
            .map(|r| r.expected_end);
        match (limit, self.gang_next) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn pass(&mut self, now: Time, t: &mut JobTable, out: &mut Vec<Effect>) {
        if self.kill_expired(now, t, out) {
            // their resources come back when their completions are reported; the
            // next pass schedules with them
            return;
        }
        if self.preemptive || self.gang {
            self.preempt_pass(now, t, out);
        }
        match self.policy {
            PolicyKind::Fcfs => {
                self.start_from_head(now, t, out);
            }
            // where a job is placed can depend on what started before it in the
            // same pass (node sets, nodes of different pace): the pass repeats
            // until it starts nothing, so that a pass is idempotent
            PolicyKind::Easy | PolicyKind::Conservative => loop {
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
        self.fungible && self.own_sets == 0 && self.usable_nodes > 0
    }

    /// Whether a job's placement (and so its pace and end) can depend on which
    /// other jobs hold nodes: node sets, or nodes of different scaling factors.
    fn placement_varies(&self) -> bool {
        self.board.site_nodeset.is_some()
            || self.own_sets > 0
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
        if self.board.parts.len() == 1
            && self.cores_interchangeable()
            && std::ptr::eq(free, &self.free)
        {
            let nodes = &self.board.parts[0].nodes;
            let mut k = self.first_free.get() as usize;
            while k < nodes.len()
                && (free.cores[nodes[k] as usize] == 0 || !usable[nodes[k] as usize])
            {
                k += 1;
            }
            self.first_free.set(k as u32);
            return self
                .board
                .pick_in(d, free, nodes[k..].iter().copied(), &|n| usable[n as usize])
                .ok_or(Blocked::Resources);
        }
        self.board.place(d, free, now, &|n| usable[n as usize])
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

    /// The head's shadow time and reservation: release running jobs in order of
    /// expected end until the head can be placed on what is free by then. Leaves
    /// the free view at the shadow time in `scratch`.
    fn shadow(
        &self,
        now: Time,
        head: JobIdx,
        head_need: u64,
        scratch: &mut Free,
    ) -> (Time, Allocation) {
        let d = &self.demand[head.index()];
        let member = &self.board.parts[d.part as usize].member;
        let usable = &self.usable;
        let board = &self.board;
        // what the head could take on a node: its cores, as far as its memory
        // and GPUs allow there (without node sets, the board places the head as
        // soon as the sum reaches its need)
        let units = |free: &Free, n: u32| {
            if member[n as usize] && usable[n as usize] {
                board.usable(d, free, n) as u64
            } else {
                0
            }
        };
        scratch.copy_from(&self.free);
        let mut avail: u64 = board.parts[d.part as usize]
            .nodes
            .iter()
            .map(|&n| units(scratch, n))
            .sum();
        let rs = self.running.as_slice();
        let mut i = 0;
        let mut last = now;
        while i < rs.len() {
            let t = rs[i].expected_end.max(now);
            while i < rs.len() && rs[i].expected_end.max(now) == t {
                let a = self.alloc[rs[i].job.index()].as_ref().unwrap();
                for p in &a.parts {
                    let n = p.node as usize;
                    avail -= units(scratch, p.node);
                    scratch.cores[n] += p.cores;
                    scratch.mem[n] += p.mem;
                    scratch.gpus[n] += p.gpus;
                    avail += units(scratch, p.node);
                }
                i += 1;
            }
            last = t;
            if avail >= head_need {
                if let Ok(a) = board.place(d, scratch, t, &|n| usable[n as usize]) {
                    return (t, a);
                }
            }
        }
        // everything has ended; a DELAY node set may still have to wait to span
        let t = last.max(d.submit.saturating_add(self.board.delay));
        match self
            .board
            .place(d, scratch, t, &|n| usable[n as usize])
        {
            Ok(a) => (t, a),
            // no usable node can ever hold it (down or drained nodes): nothing
            // may start before it, as with a reservation at the end of time
            Err(_) => (Time::MAX, Allocation::default()),
        }
    }

    fn pass_easy(&mut self, now: Time, t: &mut JobTable, out: &mut Vec<Effect>) {
        let Some((head_pos, head)) = self.start_from_head(now, t, out) else {
            return;
        };
        let ft = self.free_cores;
        if ft == 0 || t.queue.find_first(head_pos + 1, |n, _| n <= ft).is_none() {
            return;
        }
        if self.cores_interchangeable() {
            return self.backfill_cores(now, t, out, head_pos, head);
        }
        let head_need = t.get(head).need;
        // nothing changed since the last pass (arrivals only): same shadow and
        // extra resources, unless a running job is overdue (its end is clamped)
        let overdue = self
            .running
            .as_slice()
            .first()
            .is_some_and(|r| r.expected_end < now);
        let shadow = match self.shadow_cache {
            Some((v, h, shadow)) if v == self.version && h == head && !overdue => shadow,
            _ => {
                let mut scratch = std::mem::take(&mut self.scratch);
                let (shadow, reserved) = self.shadow(now, head, head_need, &mut scratch);
                self.scratch = scratch;
                self.extra.copy_from(&self.scratch);
                self.extra.take(&reserved);
                self.shadow_cache = Some((self.version, head, shadow));
                shadow
            }
        };
        // the extra cores usable now: free now and not needed by the head then
        let mut extra_now: u64 = 0;
        for n in (0..self.free.cores.len()).filter(|&n| self.usable[n]) {
            extra_now += self.free.cores[n].min(self.extra.cores[n]) as u64;
        }
        let mut pos = head_pos + 1;
        let slack = shadow.saturating_sub(now);
        let est_lim = est_limit(slack, self.max_factor);
        // what is free and what is extra only shrink during the pass: a job at
        // least as large as one that could not be placed is not tried
        let (mut miss_free, mut miss_extra) =
            (Misses::new(self.shortcuts), Misses::new(self.shortcuts));
        let mut view_built = false;
        loop {
            let ft = self.free_cores;
            let xc = extra_now;
            let found = t
                .queue
                .find_first(pos, |n, e| n <= ft && (e <= est_lim || n <= xc));
            let Some(p) = found else { break };
            pos = p + 1;
            let job = t.queue.job_at(p);
            let est = t.spec(job).estimate;
            let d = &self.demand[job.index()];
            // a job that cannot end by the shadow even on the fastest nodes can
            // only have the extra resources; others try what is free first
            let on_free = if est <= est_lim {
                if miss_free.known(&self.board, d, 0) {
                    continue;
                }
                let Ok(a) = self.place_now(d, &self.free, now) else {
                    miss_free.record(&self.board, d, 0);
                    continue;
                };
                if now.saturating_add(scaled(est, a.factor)) <= shadow {
                    extra_now -= self.extra_now_taken(&a, false);
                    Some(a)
                } else {
                    None
                }
            } else {
                None
            };
            let b = match on_free {
                Some(a) => a,
                None => {
                    if t.get(job).need > xc || miss_extra.known(&self.board, d, 0) {
                        continue;
                    }
                    // place on the extra resources: free now and not needed by the head
                    if !view_built {
                        self.view.copy_from(&self.free);
                        self.view.clamp_to(&self.extra);
                        view_built = true;
                    }
                    let Ok(b) = self.place_now(d, &self.view, now) else {
                        miss_extra.record(&self.board, d, 0);
                        continue;
                    };
                    extra_now -= self.extra_now_taken(&b, true);
                    self.extra.take(&b);
                    b
                }
            };
            self.start(now, t, job, b, out);
            if view_built {
                let a = self.alloc[job.index()].as_ref().expect("it just started");
                for p in &a.parts {
                    self.view
                        .clamp_node(&self.free, &self.extra, p.node as usize);
                }
            }
            if self.free_cores == 0 {
                break;
            }
        }
    }

    /// EASY's backfilling when cores are interchangeable: the shadow is the first
    /// expected end at which enough cores are free for the head, the extra cores
    /// what it leaves; a job may start if it ends by the shadow or takes no more
    /// than the extra cores. The shadow and extra cores stay valid across the
    /// starts of the pass (a job ending by the shadow gives its cores back by
    /// then; one started on the extra cores uses them up), so they are kept
    /// until something else changes.
    fn backfill_cores(
        &mut self,
        now: Time,
        t: &mut JobTable,
        out: &mut Vec<Effect>,
        head_pos: u32,
        head: JobIdx,
    ) {
        let need = t.get(head).need;
        let overdue = self
            .running
            .as_slice()
            .first()
            .is_some_and(|r| r.expected_end < now);
        let (shadow, mut extra) = match self.cores_cache {
            Some((v, h, shadow, extra)) if v == self.version && h == head && !overdue => {
                (shadow, extra)
            }
            _ => {
                let mut avail = self.free_cores;
                let mut found = (Time::MAX, 0);
                let rs = self.running.as_slice();
                let mut i = 0;
                while i < rs.len() {
                    let at = rs[i].expected_end.max(now);
                    while i < rs.len() && rs[i].expected_end.max(now) == at {
                        avail += rs[i].procs as u64;
                        i += 1;
                    }
                    if avail >= need {
                        found = (at, avail - need);
                        break;
                    }
                }
                found
            }
        };
        let est_lim = est_limit(shadow.saturating_sub(now), self.max_factor);
        let mut pos = head_pos + 1;
        while self.free_cores > 0 {
            let ft = self.free_cores;
            let xc = extra.min(ft);
            let Some(p) = t
                .queue
                .find_first(pos, |n, e| n <= ft && (e <= est_lim || n <= xc))
            else {
                break;
            };
            pos = p + 1;
            let job = t.queue.job_at(p);
            let Ok(a) = self.place_now(&self.demand[job.index()], &self.free, now) else {
                continue;
            };
            let by_shadow = now.saturating_add(scaled(t.spec(job).estimate, a.factor)) <= shadow;
            let cores = cores_of(&a);
            if by_shadow || cores <= xc {
                if !by_shadow {
                    extra -= cores;
                }
                self.start(now, t, job, a, out);
            }
        }
        self.cores_cache = Some((self.version, head, shadow, extra));
    }

    /// How much Σ min(free, extra) cores drops when `a` is taken from what is
    /// free now (and from the extra resources too, with `from_extra`).
    fn extra_now_taken(&self, a: &Allocation, from_extra: bool) -> u64 {
        a.parts
            .iter()
            .map(|p| {
                let (f, x) = (
                    self.free.cores[p.node as usize],
                    self.extra.cores[p.node as usize],
                );
                let x_after = if from_extra { x - p.cores } else { x };
                (f.min(x) - (f - p.cores).min(x_after)) as u64
            })
            .sum()
    }

    /// Conservative backfilling: give every pending job, in queue order, the
    /// earliest window in which its resources are free for its whole estimate;
    /// those whose window starts now start.
    ///
    /// Only the jobs that start now matter (every reservation is recomputed at the
    /// next pass), and that allows two exact shortcuts (`docs/semantics.md`):
    ///
    /// * Let `full_at` be the first instant at which fewer cores are free than the
    ///   smallest need of a pending job. No window can contain it, so every
    ///   reservation that starts before it also ends by it, and reservations that
    ///   start after it never change anything before it. The pass therefore only
    ///   places jobs whose window fits before `full_at`, found through the queue
    ///   index without visiting the others; `full_at` only moves earlier.
    /// * It stops as soon as no later job can start now: none needs at most the
    ///   cores still free now with a window that ends by `full_at`.
    ///
    /// The profile counts cores of the whole machine: exact on one node, and a
    /// necessary condition on many, where the timeline then places node by node
    /// from the earliest instant the profile allows.
    fn pass_conservative(&mut self, now: Time, t: &mut JobTable, out: &mut Vec<Effect>) {
        if t.queue.head().is_none() || self.usable_nodes == 0 {
            return;
        }
        let p_min = t.queue.min_need().min(i64::MAX as u64) as i64;
        if (self.free_cores as i64) < p_min {
            return;
        }
        // Only arrivals since a pass that started nothing, no running job overdue
        // (so the profile from now on is the same) and placement that does not
        // depend on time or on other jobs: the jobs queued then still cannot
        // start (a window that fits now fitted then), so only an arrival that
        // fits in what is free now could (`docs/semantics.md`).
        let overdue = self
            .running
            .as_slice()
            .first()
            .is_some_and(|r| r.expected_end <= now);
        if let Some((v, edits, end)) = self.quiet_cache.filter(|_| self.shortcuts) {
            let free = self.free_cores;
            if v == self.version
                && edits == t.queue.edits()
                && !overdue
                && !self.placement_varies()
                && t.queue.find_first(end, |n, _| n <= free).is_none()
            {
                self.quiet_cache = Some((v, edits, t.queue.end()));
                return;
            }
        }
        let mut starts = Vec::new();
        self.plan(now, t, Plan::Pass, &mut starts);
        self.quiet_cache = starts
            .is_empty()
            .then(|| (self.version, t.queue.edits(), t.queue.end()));
        for (job, a) in starts {
            // where the profile is exact, the jobs that start now are placed one
            // after the other on what is free: the profile says they all fit
            let a = match a {
                Some(a) => a,
                None => match self.place_now(&self.demand[job.index()], &self.free, now) {
                    Ok(a) => a,
                    Err(_) => continue,
                },
            };
            self.start(now, t, job, a, out);
        }
    }

    /// Conservative's plan. `Plan::Pass` keeps the shortcuts and collects the jobs
    /// that start now; `Plan::Explain(job)` places every job in order, without
    /// them, and returns that job's start.
    fn plan(
        &mut self,
        now: Time,
        t: &JobTable,
        mode: Plan,
        starts: &mut Vec<(JobIdx, Option<Allocation>)>,
    ) -> Option<Time> {
        let bounded = matches!(mode, Plan::Pass);
        let running = self.running.as_slice();
        let mut profile = std::mem::take(&mut self.profile);
        let mut doomed = std::mem::take(&mut self.doomed);
        profile.rebuild(now, self.free_cores);
        doomed.clear();
        let usable = &self.usable;
        let is_usable = |n: u32| usable[n as usize];
        let mut tl = (!self.exact_aggregate && !self.cores_interchangeable()).then(|| {
            let mut tl = Timeline::new(&self.board, now, &is_usable, self.shortcuts);
            for r in running {
                if let Some(a) = &self.alloc[r.job.index()] {
                    tl.occupy(a, now, r.expected_end.max(now + 1));
                }
            }
            // suspended jobs hold what they hold with no end in sight
            for (i, a) in self.alloc.iter().enumerate() {
                if let Some(a) = a {
                    if matches!(t.state(JobIdx(i as u32)), JobState::Suspended { .. }) {
                        tl.occupy(a, now, Time::MAX);
                    }
                }
            }
            tl
        });
        let p_min = if bounded {
            t.queue.min_need().min(i64::MAX as u64) as i64
        } else {
            0
        };
        let fmax = self.max_factor;
        let mut full_at = Time::MAX;
        let mut most = self.capacity().min(i64::MAX as u64) as i64;
        let mut could_start: Option<u32> = None;
        let mut pos = t.queue.head().map_or(0, |h| h.0);
        let mut answer = None;
        let mut tl_miss = Misses::new(self.shortcuts);
        loop {
            let lim = full_at.saturating_sub(now);
            let p = if bounded {
                let dur_of = |e: Time| footprint(scaled(e, fmax));
                if could_start.is_none_or(|c| c < pos) {
                    let free_now = profile.free_now();
                    could_start = t
                        .queue
                        .find_first(pos, |n, e| (n as i64) <= free_now && dur_of(e) <= lim);
                    if could_start.is_none() {
                        break;
                    }
                }
                let d_ref = &doomed;
                let can_fit_early = |n: u64, e: Time| {
                    let dur = dur_of(e);
                    (n as i64) <= most && dur <= lim && !d_ref.dominates(n, dur)
                };
                let Some(p) = t.queue.find_first(pos, can_fit_early) else {
                    break;
                };
                p
            } else {
                let Some(p) = t.queue.find_first(pos, |_, _| true) else {
                    break;
                };
                p
            };
            pos = p + 1;
            let job = t.queue.job_at(p);
            let e = t.get(job);
            let (need, est) = (e.need.min(i64::MAX as u64), e.spec.estimate);
            let dur_min = footprint(scaled(est, fmax));
            let d = &self.demand[job.index()];
            let fit = if bounded {
                profile.earliest_fit_before(need, dur_min, full_at, running)
            } else {
                Some(profile.earliest_fit(need, dur_min, running))
            };
            let Some((t0, seg)) = fit else {
                // free cores only go down during a pass, so no job at least as
                // large and as long will fit either
                doomed.insert(need, dur_min);
                continue;
            };
            let placed = match tl.as_mut() {
                None => Some((t0, seg, dur_min, None)),
                // the timeline only fills during the pass and `full_at` only
                // moves earlier: a job at least as large and as long as one with
                // no window has none either
                Some(_) if bounded && tl_miss.known(&self.board, d, est) => None,
                Some(tl) => {
                    let found = if bounded {
                        tl.earliest_between(&self.board, d, est, t0, full_at)
                    } else {
                        Some(tl.earliest(&self.board, d, est))
                    };
                    if found.is_none() {
                        tl_miss.record(&self.board, d, est);
                    }
                    found.map(|(ts, a)| {
                        let dur = footprint(scaled(est, a.factor));
                        tl.occupy(&a, ts, ts + dur);
                        (ts, profile.segment_at(ts, running), dur, Some(a))
                    })
                }
            };
            let Some((ts, seg, dur, a)) = placed else {
                continue;
            };
            let cores = a.as_ref().map_or(need, cores_of);
            if let Some(below) = profile.reserve(seg, dur, cores, p_min, running) {
                if bounded && below < full_at {
                    full_at = below;
                    profile.truncate_after(full_at, running);
                    most = profile.max_free_before(full_at);
                }
            }
            if mode == Plan::Explain(job) {
                answer = Some(ts);
                break;
            }
            if ts == now && bounded {
                starts.push((job, a));
            }
            could_start = None;
        }
        self.profile = profile;
        self.doomed = doomed;
        answer
    }

    pub fn head_reservation(&self, now: Time, t: &JobTable) -> Option<(JobIdx, Time)> {
        let (_, head) = t.queue.head()?;
        if self
            .place_now(&self.demand[head.index()], &self.free, now)
            .is_ok()
        {
            return None;
        }
        let mut scratch = Free::default();
        Some((head, self.shadow(now, head, t.get(head).need, &mut scratch).0))
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
        let blocked = match self.place_now(d, &self.free, now) {
            Err(Blocked::NodeSet) => {
                let spec = &self.board.sets[d.sets.unwrap() as usize].spec;
                PendingReason::NodeSet {
                    policy: spec.policy,
                    attribute: spec.attribute,
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

    /// Resources are conserved node by node, the running list is ordered, and
    /// every job holding resources is running, suspended or ending.
    pub fn sanity_check(&self, t: &JobTable) {
        // set lists and own node-set requests belong to live jobs only
        let mut users = vec![0u32; self.board.sets.len()];
        let mut own = 0;
        for j in t.live() {
            if let Some(si) = self.demand[j.index()].sets {
                users[si as usize] += 1;
            }
            own += self.own[j.index()].is_some() as usize;
        }
        for (l, &u) in self.board.sets.iter().zip(&users) {
            assert_eq!(l.users, u, "set list {:?} counts {} users, live jobs {u}", l.spec, l.users);
        }
        assert_eq!(self.own_sets, own, "live jobs with their own node set");
        let mut used = self.board.full();
        let mut in_running = 0;
        for (i, a) in self.alloc.iter().enumerate() {
            let Some(a) = a else { continue };
            let st = t.state(JobIdx(i as u32));
            assert!(
                st.start().is_some(),
                "job in slot {i} holds resources while {}",
                st.name()
            );
            used.take(a);
            if !matches!(st, JobState::Suspended { .. }) {
                in_running += 1;
            }
        }
        assert_eq!(used, self.free, "node resources are not conserved");
        let usable_free: u64 = self
            .free
            .cores
            .iter()
            .zip(&self.usable)
            .filter(|(_, &u)| u)
            .map(|(&c, _)| c as u64)
            .sum();
        assert_eq!(
            self.free_cores, usable_free,
            "free cores of the nodes that take jobs"
        );
        let rs = self.running.as_slice();
        assert_eq!(
            rs.len(),
            in_running,
            "the running list and the allocations disagree"
        );
        assert!(rs
            .windows(2)
            .all(|w| (w[0].expected_end, w[0].job) < (w[1].expected_end, w[1].job)));
        for r in rs {
            let e = t.get(r.job);
            assert!(matches!(
                e.state,
                JobState::Running { .. } | JobState::Ending { .. }
            ));
            assert_eq!(e.expected_end, r.expected_end);
            let a = self.alloc[r.job.index()]
                .as_ref()
                .expect("a running job holds its allocation");
            assert_eq!(
                r.procs as u64,
                self.usable_cores(a).min(u32::MAX as u64),
                "cores a running job gives back to the queue"
            );
        }
        for (n, s) in self.status.iter().enumerate() {
            assert_eq!(self.usable[n], s.up && !s.drain);
        }
        let mut booked = vec![0u32; self.booked.len()];
        for (i, a) in self.alloc.iter().enumerate() {
            let Some(a) = a else { continue };
            let j = JobIdx(i as u32);
            let whole = match &self.home[i] {
                Some(h) => {
                    assert!(
                        matches!(
                            t.state(j),
                            JobState::Suspended {
                                by: SuspendedBy::Preemption | SuspendedBy::Gang,
                                ..
                            }
                        ),
                        "slot {i} is parked while {}",
                        t.state(j).name()
                    );
                    assert!(
                        self.parked.contains(&j),
                        "slot {i} is parked but not listed"
                    );
                    assert!(
                        h.parts.len() == a.parts.len()
                            && h.parts.iter().zip(&a.parts).all(|(h, a)| h.node == a.node
                                && h.cores >= a.cores
                                && h.mem == a.mem
                                && h.gpus == a.gpus)
                    );
                    h
                }
                None => a,
            };
            for p in &whole.parts {
                booked[p.node as usize] += p.cores;
            }
        }
        assert_eq!(
            booked, self.booked,
            "booked cores disagree with the allocations"
        );
        assert!(
            self.parked.iter().all(|j| self.home[j.index()].is_some()),
            "a listed parked job has no allocation"
        );
        for (n, &b) in booked.iter().enumerate() {
            if self.gang_over[n] > 0 {
                assert!(
                    b <= self.board.nodes[n].cores * self.gang_over[n],
                    "node {n} is allocated beyond its gang limit"
                );
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    Pass,
    Explain(JobIdx),
}

pub(crate) fn cores_of(a: &Allocation) -> u64 {
    a.parts.iter().map(|p| p.cores as u64).sum()
}
