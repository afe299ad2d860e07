//! The node engine: jobs placed on nodes of a cluster (whole nodes or cores,
//! memory, node sets), running at the pace of their slowest node.
//!
//! The policies are those of the pool engine, stated per node: a job "fits" when
//! the board can place it; EASY's shadow time is the earliest expected end at
//! which the head could be placed on what will be free, and its reservation is
//! that placement (the extra resources are, node by node, what is free then minus
//! what the head takes); conservative backfilling places every job at the earliest
//! time its window is free on the nodes it gets. Estimates are scaled by the
//! factor of the nodes considered: a job limited to E reference seconds holds
//! nodes of slowest factor f for ceil(E / f) seconds, so backfilling knows fast
//! nodes finish sooner. On a single node these are exactly the pool semantics.

mod board;
mod timeline;

pub use board::{AllocPart, Allocation};
pub(crate) use board::{Blocked, Board, Demand, Free};

use crate::cluster::Cluster;
use crate::engine::Effect;
use crate::job::{scaled, JobIdx, JobSpec, JobState, NodeSetId};
use crate::nodeset::NodeSetSpec;
use crate::pending::PendingReason;
use crate::policy::{PolicyKind, NOT_PARM};
use crate::profile::footprint;
use crate::running::{Running, RunningJob};
use crate::table::JobTable;
use crate::Time;
use timeline::Timeline;

#[derive(Debug, Clone)]
pub struct NodeEngine {
    policy: PolicyKind,
    board: Board,
    free: Free,
    free_cores: u64,
    t: JobTable,
    demand: Vec<Demand>,
    alloc: Vec<Option<Allocation>>,
    running: Running,
    /// Jobs whose node set could never be satisfied, so it was ignored.
    dropped_nodesets: u64,
    scratch: Free,
    extra: Free,
    view: Free,
    max_factor: f64,
}

impl NodeEngine {
    pub fn new(policy: PolicyKind, cluster: &Cluster) -> Self {
        assert!(policy != PolicyKind::Parm, "{NOT_PARM}");
        let board = Board::new(cluster);
        let free = board.full();
        let free_cores = board.total_cores();
        let max_factor = board.nodes.iter().map(|n| n.factor).fold(0.0, f64::max);
        NodeEngine {
            policy,
            board,
            free,
            free_cores,
            t: JobTable::new(),
            demand: Vec::new(),
            alloc: Vec::new(),
            running: Running::default(),
            dropped_nodesets: 0,
            scratch: Free::default(),
            extra: Free::default(),
            view: Free::default(),
            max_factor,
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
    pub(crate) fn table(&self) -> &JobTable {
        &self.t
    }
    pub fn running(&self) -> usize {
        self.running.len()
    }
    pub fn dropped_nodesets(&self) -> u64 {
        self.dropped_nodesets
    }
    pub fn allocation(&self, job: JobIdx) -> Option<&Allocation> {
        self.alloc.get(job.index()).and_then(|a| a.as_ref())
    }

    pub fn register_nodeset(&mut self, spec: NodeSetSpec) -> NodeSetId {
        if let Some(i) = self.board.requests.iter().position(|s| *s == spec) {
            return NodeSetId(i as u32);
        }
        self.board.requests.push(spec);
        NodeSetId(self.board.requests.len() as u32 - 1)
    }

    /// Whether the job can ever run on this cluster (its partition, with its memory).
    pub fn can_run(&mut self, spec: &JobSpec) -> bool {
        self.board.demand(spec, 0).is_ok()
    }

    pub fn submit(&mut self, now: Time, spec: JobSpec) {
        let (d, dropped) = self.board.demand(&spec, now).unwrap_or_else(|_| panic!("job {:?} can never run on this cluster", spec.id));
        self.dropped_nodesets += dropped as u64;
        self.t.submit(now, spec);
        self.demand.push(d);
        self.alloc.push(None);
    }

    fn expected_end(&self, job: JobIdx, start: Time) -> Time {
        let f = self.alloc[job.index()].as_ref().map_or(1.0, |a| a.factor);
        start + scaled(self.t.spec(job).estimate, f)
    }

    pub fn complete(&mut self, now: Time, job: JobIdx) {
        let start = self.t.finish(now, job);
        let end = self.expected_end(job, start);
        self.running.remove(end, job);
        let a = self.alloc[job.index()].as_ref().expect("a running job has an allocation");
        self.free.give(a);
        self.free_cores += a.parts.iter().map(|p| p.cores as u64).sum::<u64>();
    }

    fn start(&mut self, now: Time, pos: u32, job: JobIdx, a: Allocation, out: &mut Vec<Effect>) {
        let spec = self.t.begin(now, pos, job);
        self.free.take(&a);
        let cores: u64 = a.parts.iter().map(|p| p.cores as u64).sum();
        self.free_cores -= cores;
        let expected_end = now + scaled(spec.estimate, a.factor);
        self.running.insert(RunningJob { expected_end, job, procs: cores as u32 });
        self.alloc[job.index()] = Some(a);
        out.push(Effect::Start { job, procs: spec.procs });
    }

    pub fn pass(&mut self, now: Time, out: &mut Vec<Effect>) {
        match self.policy {
            PolicyKind::Fcfs => {
                self.start_from_head(now, out);
            }
            PolicyKind::Easy => self.pass_easy(now, out),
            PolicyKind::Conservative => self.pass_conservative(now, out),
            PolicyKind::Parm => unreachable!("{NOT_PARM}"),
        }
    }

    /// Start jobs from the head while the board can place them; returns the
    /// blocked head and why.
    fn start_from_head(&mut self, now: Time, out: &mut Vec<Effect>) -> Option<(u32, JobIdx, Blocked)> {
        while let Some((pos, job)) = self.t.queue.head() {
            match self.board.place(&self.demand[job.index()], &self.free, now, &|_| true) {
                Ok(a) => self.start(now, pos, job, a, out),
                Err(b) => return Some((pos, job, b)),
            }
        }
        None
    }

    /// The head's shadow time and reservation: release running jobs in order of
    /// expected end until the head can be placed on what is free by then. Leaves
    /// the free view at the shadow time in `self.scratch`.
    fn shadow(&mut self, head: JobIdx) -> (Time, Allocation) {
        let d = &self.demand[head.index()];
        let member = &self.board.parts[d.part as usize].member;
        self.scratch.copy_from(&self.free);
        let mut avail: u64 = self.board.parts[d.part as usize].nodes.iter().map(|&n| self.scratch.cores[n as usize] as u64).sum();
        let rs = self.running.as_slice();
        let mut i = 0;
        let mut last = Time::MIN;
        while i < rs.len() {
            let t = rs[i].expected_end;
            while i < rs.len() && rs[i].expected_end == t {
                let a = self.alloc[rs[i].job.index()].as_ref().unwrap();
                self.scratch.give(a);
                avail += a.parts.iter().filter(|p| member[p.node as usize]).map(|p| p.cores as u64).sum::<u64>();
                i += 1;
            }
            last = t;
            if avail >= d.procs as u64 {
                if let Ok(a) = self.board.place(d, &self.scratch, t, &|_| true) {
                    return (t, a);
                }
            }
        }
        // everything has ended; a DELAY node set may still have to wait to span
        let t = last.max(d.submit + self.board.delay);
        let a = self.board.place(d, &self.scratch, t, &|_| true).expect("a job that can run fits an empty machine");
        (t, a)
    }

    fn pass_easy(&mut self, now: Time, out: &mut Vec<Effect>) {
        let Some((head_pos, head, _)) = self.start_from_head(now, out) else { return };
        let ft = self.free_cores;
        if ft == 0 || self.t.queue.find_first(head_pos + 1, |p, _| p as u64 <= ft).is_none() {
            return;
        }
        let (shadow, reserved) = self.shadow(head);
        self.extra.copy_from(&self.scratch);
        self.extra.take(&reserved);
        let mut extra_cores: u64 = self.extra.cores.iter().map(|&c| c as u64).sum();
        let mut pos = head_pos + 1;
        loop {
            let ft = self.free_cores;
            let slack = shadow - now;
            let est_lim = (slack as f64 * self.max_factor).floor().min(Time::MAX as f64 / 2.0) as Time;
            let xc = extra_cores;
            let found = self.t.queue.find_first(pos, |p, e| p as u64 <= ft && (e <= est_lim || p as u64 <= xc));
            let Some(p) = found else { break };
            pos = p + 1;
            let job = self.t.queue.job_at(p);
            let d = &self.demand[job.index()];
            let est = self.t.spec(job).estimate;
            if let Ok(a) = self.board.place(d, &self.free, now, &|_| true) {
                if now + scaled(est, a.factor) <= shadow {
                    self.start(now, p, job, a, out);
                    if self.free_cores == 0 {
                        break;
                    }
                    continue;
                }
            } else {
                continue;
            }
            // the extra resources: free now and not needed by the head at its shadow
            self.view.cores.clear();
            self.view.mem.clear();
            for n in 0..self.free.cores.len() {
                self.view.cores.push(self.free.cores[n].min(self.extra.cores[n]));
                self.view.mem.push(self.free.mem[n].min(self.extra.mem[n]));
            }
            if let Ok(b) = self.board.place(d, &self.view, now, &|_| true) {
                self.extra.take(&b);
                extra_cores -= b.parts.iter().map(|q| q.cores as u64).sum::<u64>();
                self.start(now, p, job, b, out);
                if self.free_cores == 0 {
                    break;
                }
            }
        }
    }

    /// Conservative backfilling on nodes. With `explain = Some(job)` nothing starts:
    /// the plan stops at that job and returns its reservation.
    fn plan_conservative(&self, now: Time, explain: Option<JobIdx>, starts: &mut Vec<(u32, JobIdx, Allocation)>) -> Option<Time> {
        let mut tl = Timeline::new(&self.board, &self.free, now);
        for r in self.running.as_slice() {
            tl.occupy(self.alloc[r.job.index()].as_ref().unwrap(), now, r.expected_end.max(now + 1));
        }
        let mut free_now = self.free_cores;
        for (pos, job) in self.t.queue.iter() {
            if explain.is_none() {
                let fnow = free_now;
                if fnow == 0 || self.t.queue.find_first(pos, |p, _| p as u64 <= fnow).is_none() {
                    break;
                }
            }
            let d = &self.demand[job.index()];
            let est = self.t.spec(job).estimate;
            let (t, a) = tl.earliest(&self.board, d, est);
            let dur = footprint(scaled(est, a.factor));
            tl.occupy(&a, t, t + dur);
            if explain == Some(job) {
                return Some(t);
            }
            if t == now {
                free_now -= a.parts.iter().map(|p| p.cores as u64).sum::<u64>();
                starts.push((pos, job, a));
            }
        }
        None
    }

    fn pass_conservative(&mut self, now: Time, out: &mut Vec<Effect>) {
        let ft = self.free_cores;
        if self.t.queue.len() == 0 || (self.t.queue.min_procs() as u64) > ft {
            return;
        }
        let mut starts = Vec::new();
        self.plan_conservative(now, None, &mut starts);
        for (pos, job, a) in starts {
            self.start(now, pos, job, a, out);
        }
    }

    pub fn head_reservation(&mut self, now: Time) -> Option<(JobIdx, Time)> {
        let (_, head) = self.t.queue.head()?;
        if self.board.place(&self.demand[head.index()], &self.free, now, &|_| true).is_ok() {
            return None;
        }
        Some((head, self.shadow(head).0))
    }

    pub fn pending_reason(&self, now: Time, job: JobIdx) -> Option<PendingReason> {
        let e = &self.t.jobs[job.index()];
        if !matches!(e.state, JobState::Pending { .. }) {
            return None;
        }
        let head = self.t.is_head(job);
        let d = &self.demand[job.index()];
        let blocked = || match self.board.place(d, &self.free, now, &|_| true) {
            Err(Blocked::NodeSet) => {
                let spec = &self.board.sets[d.sets.unwrap() as usize].spec;
                PendingReason::NodeSet { policy: spec.policy, attribute: spec.attribute }
            }
            _ => PendingReason::Resources { needed: e.spec.procs, free: self.free_cores.min(u32::MAX as u64) as u32 },
        };
        Some(match self.policy {
            PolicyKind::Fcfs | PolicyKind::Easy if head => blocked(),
            PolicyKind::Fcfs | PolicyKind::Easy => PendingReason::Priority,
            PolicyKind::Parm => unreachable!("{NOT_PARM}"),
            PolicyKind::Conservative => {
                let start = self.plan_conservative(now, Some(job), &mut Vec::new()).expect("a queued job gets a reservation");
                if start == now && head {
                    blocked()
                } else {
                    PendingReason::ReservedFor { start }
                }
            }
        })
    }

    /// Resources are conserved node by node, the running list is ordered, and the
    /// queue agrees with the job states.
    pub fn sanity_check(&self) {
        let mut used = self.board.full();
        for r in self.running.as_slice() {
            assert!(matches!(self.t.jobs[r.job.index()].state, JobState::Running { .. }));
            used.take(self.alloc[r.job.index()].as_ref().unwrap());
        }
        assert_eq!(used, self.free, "node resources are not conserved");
        assert_eq!(self.free_cores, self.free.cores.iter().map(|&c| c as u64).sum::<u64>());
        let rs = self.running.as_slice();
        assert!(rs.windows(2).all(|w| (w[0].expected_end, w[0].job) < (w[1].expected_end, w[1].job)));
        self.t.sanity_check();
    }
}
