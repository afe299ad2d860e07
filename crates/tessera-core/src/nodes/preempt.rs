//! Suspension by priority tier and gang time-slicing: Slurm's
//! `PreemptType=preempt/partition_prio` with `PreemptMode=SUSPEND` and `GANG`.
//!
//! * **Tiers.** Before the policy's pass, pending jobs of a tier above the lowest
//!   preemptable one are tried in queue order: a job that fits starts at once;
//!   one that does not may suspend running jobs of lower tiers whose partition
//!   has `preempt_mode = "suspend"` (already-suspended ones first, then the
//!   lowest tier, then the youngest) until it fits. A tier whose job cannot start
//!   even so stops there (its later jobs wait for the policy's pass).
//! * **Parked jobs.** A job suspended by preemption or by the gang scheduler
//!   gives back its cores but keeps its memory and GPUs; its allocation does not
//!   change. At every pass, parked jobs (highest tier, then longest suspended,
//!   first) take back the cores of their allocation that are free, and resume
//!   once they hold them all: cores a preemptor gives back return to its victims
//!   before any pending job of their tier sees them.
//! * **Gang.** A gang partition's nodes belong to it alone; each core may be
//!   allocated to up to `oversubscribe` jobs (a job never gets more cores on a node
//!   than the node has). Pending gang jobs start in queue order (first come, first
//!   served, whatever the policy) while their allocation fits that budget; a job
//!   runs if its cores are free, else it starts suspended. Every
//!   time slice, parked gang jobs (longest suspended first) resume in place of
//!   jobs of their partition that have run a whole slice.
//!
//! * **QOS.** With accounts whose QOS preempt others (Slurm's preempt/qos), a
//!   pending job of such a QOS may also take the cores of running jobs of the
//!   QOS it lists, whatever their partition: suspended as above, or killed and
//!   requeued where the preempted QOS's mode is `requeue` (the preemptor then
//!   starts once they have ended; jobs already ending count as room coming).
//!
//! Suspended time does not count against a job's limit.

use super::NodeEngine;
use crate::cluster::PreemptMode;
use crate::contract::Effect;
use crate::job::{scaled, JobIdx, JobState, KillReason, SuspendedBy};
use crate::nodes::{Allocation, Free};
use crate::running::RunningJob;
use crate::table::JobTable;
use crate::Time;

impl NodeEngine {
    /// What runs before the policy's pass on a cluster with tiers or gangs.
    pub(super) fn preempt_pass(&mut self, now: Time, t: &mut JobTable, out: &mut Vec<Effect>) {
        if self.preemptive {
            self.start_tiers(now, t, out);
        } else {
            self.resume_parked(now, t, out, 0);
        }
        if self.gang {
            if self.gang_next.is_some_and(|g| g <= now) {
                self.rotate(now, t, out);
            }
            self.start_gang(now, t, out);
            self.gang_next = self.next_slice_end(now, t);
        }
        if self.preemptive {
            self.reclaim();
        }
    }

    /// The QOS of a job, if QOS preemption is on.
    fn qos_of(&self, t: &JobTable, j: JobIdx) -> Option<u16> {
        if self.qos_preempt.is_empty() {
            return None;
        }
        t.spec(j).ticket.map(|x| x.qos.0)
    }

    /// Some QOS is preemptable by job `j`'s.
    fn qos_preemptor(&self, t: &JobTable, j: JobIdx) -> bool {
        self.qos_of(t, j).is_some_and(|q| self.qos_preempt.get(q as usize).is_some_and(|p| !p.0.is_empty()))
    }

    /// Whether job `j`'s QOS may preempt job `v`'s, and if so whether `v` is
    /// requeued (else suspended).
    fn qos_victim(&self, t: &JobTable, j: JobIdx, v: JobIdx) -> Option<bool> {
        let (qj, qv) = (self.qos_of(t, j)?, self.qos_of(t, v)?);
        let (list, _) = self.qos_preempt.get(qj as usize)?;
        list.contains(&qv).then(|| self.qos_preempt.get(qv as usize).is_some_and(|x| x.1))
    }

    fn tier_of(&self, j: JobIdx) -> u32 {
        self.board.parts[self.demand[j.index()].part as usize].tier
    }

    fn mode_of(&self, j: JobIdx) -> PreemptMode {
        self.board.parts[self.demand[j.index()].part as usize].preempt
    }

    /// Parked jobs in the order they get their cores back: highest tier, then
    /// suspended longest, then job id.
    fn parked_order(&self, t: &JobTable) -> Vec<JobIdx> {
        let mut v = self.parked.clone();
        v.sort_by_key(|&j| {
            let since = match t.state(j) {
                JobState::Suspended { since, .. } => since,
                _ => Time::MAX,
            };
            (std::cmp::Reverse(self.tier_of(j)), since, t.spec(j).id)
        });
        v
    }

    /// Cores job `j` (parked) still lacks on each part of its allocation.
    fn lacking(&self, j: JobIdx) -> impl Iterator<Item = (u32, u32)> + '_ {
        let home = self.home[j.index()]
            .as_ref()
            .expect("a parked job has its allocation");
        let held = self.alloc[j.index()]
            .as_ref()
            .expect("a parked job holds memory");
        home.parts
            .iter()
            .zip(&held.parts)
            .map(|(h, a)| (h.node, h.cores - a.cores))
    }

    /// Parked jobs of tier `min_tier` or above that can hold their whole
    /// allocation again resume.
    fn resume_parked(&mut self, now: Time, t: &mut JobTable, out: &mut Vec<Effect>, min_tier: u32) {
        if self.parked.is_empty() {
            return;
        }
        for j in self.parked_order(t) {
            if self.tier_of(j) >= min_tier
                && self
                    .lacking(j)
                    .all(|(n, c)| self.free.cores[n as usize] >= c)
            {
                self.unpark(now, t, j, out);
            }
        }
    }

    /// Parked jobs of a suspend partition take the free cores of their allocation,
    /// so that lower or equal tiers cannot take them first.
    fn reclaim(&mut self) {
        for k in 0..self.parked.len() {
            let j = self.parked[k];
            // (a gang job waits for its slice; a preempted one takes its cores)
            if self.mode_of(j) == PreemptMode::Gang {
                continue;
            }
            let home = self.home[j.index()].take().expect("parked");
            let held = self.alloc[j.index()].as_mut().expect("parked");
            for (h, a) in home.parts.iter().zip(held.parts.iter_mut()) {
                let n = h.node as usize;
                let take = (h.cores - a.cores).min(self.free.cores[n]);
                if take > 0 {
                    a.cores += take;
                    self.free.cores[n] -= take;
                    self.index.touch(&self.free, std::iter::once(n as u32));
                    if self.usable[n] {
                        self.free_cores -= take as u64;
                    }
                    self.version += 1;
                }
            }
            self.home[j.index()] = Some(home);
        }
    }

    /// Kill running job `j` to requeue it (QOS preemption by requeue): it
    /// holds its resources until its end is reported.
    fn requeue_kill(&mut self, now: Time, t: &mut JobTable, j: JobIdx, out: &mut Vec<Effect>) {
        let e = t.get_mut(j);
        if let JobState::Running { start } = e.state {
            e.ran += now - e.period;
            e.period = now;
            e.state = JobState::Ending { start, at: now, reason: KillReason::Requeue };
            out.push(Effect::Kill { job: e.spec.id, reason: KillReason::Requeue });
            self.requeueing.push(j);
        }
    }

    /// Suspend running job `j`: it gives back its cores and keeps its memory and
    /// GPUs.
    fn park(
        &mut self,
        now: Time,
        t: &mut JobTable,
        j: JobIdx,
        by: SuspendedBy,
        out: &mut Vec<Effect>,
    ) {
        self.running.remove(t.get(j).expected_end, j);
        t.suspend(now, j, by);
        let a = self.alloc[j.index()]
            .as_ref()
            .expect("a running job has its allocation");
        self.home[j.index()] = Some(a.clone());
        self.parked.push(j);
        self.strip(j);
        out.push(Effect::Suspend { job: t.spec(j).id });
    }

    /// A parked job gives back the cores it holds.
    fn strip(&mut self, j: JobIdx) {
        self.version += 1;
        let held = self.alloc[j.index()].as_mut().expect("parked");
        for p in &mut held.parts {
            self.free.cores[p.node as usize] += p.cores;
            self.index.touch(&self.free, std::iter::once(p.node));
            if self.usable[p.node as usize] {
                self.free_cores += p.cores as u64;
            }
            p.cores = 0;
        }
    }

    /// A parked job takes the cores it lacks (the caller checked they are free)
    /// and runs again.
    fn unpark(&mut self, now: Time, t: &mut JobTable, j: JobIdx, out: &mut Vec<Effect>) {
        self.version += 1;
        for (n, c) in self.lacking(j).collect::<Vec<_>>() {
            self.free.cores[n as usize] -= c;
            self.index.touch(&self.free, std::iter::once(n));
            if self.usable[n as usize] {
                self.free_cores -= c as u64;
            }
        }
        self.alloc[j.index()] = self.home[j.index()].take();
        self.parked.retain(|&p| p != j);
        t.resume(now, j);
        let end = t.get(j).deadline().unwrap_or(Time::MAX);
        t.get_mut(j).expected_end = end;
        let procs = self.alloc[j.index()]
            .as_ref()
            .map_or(0, |a| self.usable_cores(a));
        self.running.insert(RunningJob {
            expected_end: end,
            job: j,
            procs: procs.min(u32::MAX as u64) as u32,
        });
        out.push(Effect::Resume { job: t.spec(j).id });
    }

    /// Gang time slice: the set of running gang jobs is rebuilt greedily, as in
    /// Ousterhout's matrix: jobs that have not run a whole slice keep running;
    /// then parked jobs, suspended longest first, and last the jobs that have run
    /// a whole slice, each joins the set if its cores are not taken. Jobs left
    /// out are suspended; parked jobs let in resume.
    fn rotate(&mut self, now: Time, t: &mut JobTable, out: &mut Vec<Effect>) {
        if self.parked.is_empty() {
            return;
        }
        let gang = |me: &Self, j: JobIdx| me.mode_of(j) == PreemptMode::Gang;
        let running: Vec<JobIdx> = self
            .running
            .as_slice()
            .iter()
            .map(|r| r.job)
            .filter(|&j| gang(self, j) && matches!(t.state(j), JobState::Running { .. }))
            .collect();
        let (mut done, keep): (Vec<JobIdx>, Vec<JobIdx>) = running
            .into_iter()
            .partition(|&j| now - t.get(j).period >= self.slice);
        done.sort_by_key(|&j| (t.get(j).period, t.spec(j).id));
        let waiting: Vec<JobIdx> = self
            .parked_order(t)
            .into_iter()
            .filter(|&j| gang(self, j))
            .collect();
        // real cores of the gang nodes not taken by the set so far
        let mut room: Vec<u32> = (0..self.board.nodes.len())
            .map(|n| {
                if self.gang_over[n] > 0 {
                    self.board.nodes[n].cores
                } else {
                    0
                }
            })
            .collect();
        let whole = |me: &Self, j: JobIdx| {
            me.home[j.index()]
                .as_ref()
                .or(me.alloc[j.index()].as_ref())
                .expect("holds resources")
                .parts
                .iter()
                .map(|p| (p.node as usize, p.cores))
                .collect::<Vec<_>>()
        };
        let mut take = |parts: &[(usize, u32)], force: bool| {
            if force || parts.iter().all(|&(n, c)| room[n] >= c) {
                for &(n, c) in parts {
                    room[n] = room[n].saturating_sub(c);
                }
                true
            } else {
                false
            }
        };
        for &j in &keep {
            take(&whole(self, j), true);
        }
        let mut resume = Vec::new();
        for &j in &waiting {
            if take(&whole(self, j), false) {
                resume.push(j);
            }
        }
        let mut suspend = Vec::new();
        for &j in &done {
            if !take(&whole(self, j), false) {
                suspend.push(j);
            }
        }
        for j in suspend {
            self.park(now, t, j, SuspendedBy::Gang, out);
        }
        for j in resume {
            // the set leaves it room: every core it lacks is free now
            if self
                .lacking(j)
                .all(|(n, c)| self.free.cores[n as usize] >= c)
            {
                self.unpark(now, t, j, out);
            }
        }
    }

    /// While a gang job waits: the next instant a running gang job will have run
    /// a whole slice (and may give its place).
    fn next_slice_end(&self, now: Time, t: &JobTable) -> Option<Time> {
        if !self
            .parked
            .iter()
            .any(|&j| self.mode_of(j) == PreemptMode::Gang)
        {
            return None;
        }
        self.running
            .as_slice()
            .iter()
            .filter(|r| {
                self.mode_of(r.job) == PreemptMode::Gang
                    && matches!(t.state(r.job), JobState::Running { .. })
            })
            .map(|r| t.get(r.job).period.saturating_add(self.slice))
            .filter(|&e| e > now)
            .min()
    }

    /// Choose, in `pool` order, jobs whose cores together with the free ones give
    /// `needs` (node, cores) on every node; None if even all of them do not.
    fn choose(&self, needs: &[(u32, u32)], pool: &[JobIdx]) -> Option<Vec<JobIdx>> {
        let mut got: Vec<u64> = needs
            .iter()
            .map(|&(n, _)| self.free.cores[n as usize] as u64)
            .collect();
        let short = |got: &[u64]| needs.iter().zip(got).any(|(&(_, c), &g)| g < c as u64);
        let mut victims = Vec::new();
        for &v in pool {
            if !short(&got) {
                break;
            }
            let held = self.alloc[v.index()].as_ref().expect("holds resources");
            let on = |n: u32| {
                held.parts
                    .iter()
                    .filter(|h| h.node == n)
                    .map(|h| h.cores as u64)
                    .sum::<u64>()
            };
            if !needs
                .iter()
                .zip(&got)
                .any(|(&(n, c), &g)| g < c as u64 && on(n) > 0)
            {
                continue;
            }
            for (&(n, _), g) in needs.iter().zip(got.iter_mut()) {
                *g += on(n);
            }
            victims.push(v);
        }
        (!short(&got)).then_some(victims)
    }

    /// The cores gang jobs may still be allocated on each node: `oversubscribe`
    /// times the node's cores minus what is booked, at most the node's cores for
    /// one job. Memory and GPUs are what is free.
    fn gang_view(&self) -> Free {
        let mut v = Free::default();
        v.copy_from(&self.free);
        for (n, c) in v.cores.iter_mut().enumerate() {
            let node = self.board.nodes[n].cores;
            *c = (node * self.gang_over[n])
                .saturating_sub(self.booked[n])
                .min(node);
        }
        v
    }

    /// Pending gang jobs start in queue order while their allocation fits the
    /// shared budget (first come, first served); a job whose cores are busy starts
    /// suspended.
    fn start_gang(&mut self, now: Time, t: &mut JobTable, out: &mut Vec<Effect>) {
        let first = |me: &Self, t: &JobTable| {
            t.pending()
                .map(|(_, j)| j)
                .find(|&j| me.mode_of(j) == PreemptMode::Gang)
        };
        if first(self, t).is_none() {
            return;
        }
        let mut view = self.gang_view();
        let mut room: u64 = view.cores.iter().map(|&c| c as u64).sum();
        while let Some(j) = first(self, t) {
            if t.spec(j).procs as u64 > room {
                break;
            }
            // first come, first served on the shared budget: a job that does not
            // fit stops the others (no starvation of large jobs)
            let Ok(a) = self.place_now(&self.demand[j.index()], &view, now) else {
                break;
            };
            let runs = a
                .parts
                .iter()
                .all(|p| self.free.cores[p.node as usize] >= p.cores);
            for p in &a.parts {
                let n = p.node as usize;
                room -= view.cores[n] as u64;
                view.mem[n] -= p.mem;
                view.gpus[n] -= p.gpus;
                let node = self.board.nodes[n].cores;
                view.cores[n] = (node * self.gang_over[n])
                    .saturating_sub(self.booked[n] + p.cores)
                    .min(node);
                room += view.cores[n] as u64;
            }
            if runs {
                self.start(now, t, j, a, out);
            } else {
                self.start_parked(now, t, j, a, out);
            }
        }
    }

    /// A gang job starts on cores that are busy: it holds its memory and GPUs and
    /// waits for its turn.
    fn start_parked(
        &mut self,
        now: Time,
        t: &mut JobTable,
        j: JobIdx,
        a: Allocation,
        out: &mut Vec<Effect>,
    ) {
        self.version += 1;
        let limit = scaled(t.spec(j).estimate, a.factor);
        t.begin(now, j, Some(limit));
        t.suspend(now, j, SuspendedBy::Gang);
        let mut held = a.clone();
        for p in &mut held.parts {
            self.booked[p.node as usize] += p.cores;
            p.cores = 0;
        }
        self.free.take(&held);
        self.touched(&held);
        out.push(Effect::Start {
            job: t.spec(j).id,
            alloc: a.clone(),
            limit: Some(limit),
        });
        out.push(Effect::Suspend { job: t.spec(j).id });
        self.alloc[j.index()] = Some(held);
        self.home[j.index()] = Some(a);
        self.parked.push(j);
    }

    /// Pending jobs of the upper tiers start, preempting lower tiers if needed.
    /// Parked jobs of their tier or above resume before them; the others after.
    fn start_tiers(&mut self, now: Time, t: &mut JobTable, out: &mut Vec<Effect>) {
        let floor = self.min_victim_tier;
        let pending: Vec<JobIdx> = t
            .pending()
            .map(|(_, j)| j)
            .filter(|&j| (self.tier_of(j) > floor || self.qos_preemptor(t, j)) && self.mode_of(j) != PreemptMode::Gang)
            .collect();
        let top = pending.iter().map(|&j| self.tier_of(j)).max().unwrap_or(0);
        self.resume_parked(now, t, out, top);
        self.start_tier_jobs(now, t, out, pending);
        self.resume_parked(now, t, out, 0);
    }

    fn start_tier_jobs(
        &mut self,
        now: Time,
        t: &mut JobTable,
        out: &mut Vec<Effect>,
        pending: Vec<JobIdx>,
    ) {
        // a tier (and QOS) whose first job cannot start stops there
        let mut blocked: Vec<(u32, Option<u16>)> = Vec::new();
        for j in pending {
            let tier = self.tier_of(j);
            let key = (tier, self.qos_of(t, j));
            if blocked.contains(&key) || t.over_limit(j) {
                continue;
            }
            if let Ok(a) = self.place_now(&self.demand[j.index()], &self.free, now) {
                self.start(now, t, j, a, out);
                continue;
            }
            match self.preempt_for(now, t, j, tier, out) {
                Some(a) => self.start(now, t, j, a, out),
                None => blocked.push(key),
            }
        }
    }

    /// Suspend enough lower-tier jobs for pending job `j` to fit; its allocation,
    /// or None (nothing suspended) if even all of them would not do.
    fn preempt_for(
        &mut self,
        now: Time,
        t: &mut JobTable,
        j: JobIdx,
        tier: u32,
        out: &mut Vec<Effect>,
    ) -> Option<Allocation> {
        let preemptable = |v: JobIdx| {
            let p = &self.board.parts[self.demand[v.index()].part as usize];
            (p.preempt == PreemptMode::Suspend && p.tier < tier) || self.qos_victim(t, j, v).is_some()
        };
        let mut cands: Vec<JobIdx> = self
            .parked
            .iter()
            .copied()
            .filter(|&v| preemptable(v))
            .collect();
        let mut running: Vec<JobIdx> = self
            .running
            .as_slice()
            .iter()
            .map(|r| r.job)
            .filter(|&v| matches!(t.state(v), JobState::Running { .. }) && preemptable(v))
            .collect();
        if cands.is_empty() && running.is_empty() {
            return None;
        }
        // jobs being killed (requeued for an earlier preemptor, or at their
        // limit) give back their cores when they end: room that is coming
        if !self.qos_preempt.is_empty() {
            cands.extend(self.running.as_slice().iter().map(|r| r.job).filter(|&v| matches!(t.state(v), JobState::Ending { .. })));
        }
        // lowest tier first, then the youngest (the last submitted among equals)
        running.sort_by_key(|&v| {
            (
                self.tier_of(v),
                std::cmp::Reverse((t.state(v).start(), t.spec(v).id)),
            )
        });
        cands.extend(running);
        let mut view = Free::default();
        view.copy_from(&self.free);
        for &v in &cands {
            for p in &self.alloc[v.index()]
                .as_ref()
                .expect("holds resources")
                .parts
            {
                view.cores[p.node as usize] += p.cores;
            }
        }
        let a = self.place_now(&self.demand[j.index()], &view, now).ok()?;
        let needs: Vec<(u32, u32)> = a.parts.iter().map(|p| (p.node, p.cores)).collect();
        let victims = self.choose(&needs, &cands)?;
        for v in victims {
            if self.parked.contains(&v) {
                self.strip(v);
            } else if matches!(t.state(v), JobState::Ending { .. }) {
                // it ends soon
            } else if self.qos_victim(t, j, v) == Some(true) && !preemptable_by_tier(self, v, tier) {
                self.requeue_kill(now, t, v, out);
            } else {
                self.park(now, t, v, SuspendedBy::Preemption, out);
            }
        }
        a.parts
            .iter()
            .all(|p| self.free.cores[p.node as usize] >= p.cores)
            .then_some(a)
    }
}

/// Whether the partition rule alone lets a job of `tier` preempt `v` (by
/// suspension).
fn preemptable_by_tier(m: &NodeEngine, v: JobIdx, tier: u32) -> bool {
    let p = &m.board.parts[m.demand[v.index()].part as usize];
    p.preempt == PreemptMode::Suspend && p.tier < tier
}
