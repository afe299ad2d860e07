//! Association and QOS limits (Slurm's, with its reason names).
//!
//! * At submission: MaxSubmitJobs (of the association, inherited from the
//!   nearest account that sets it), GrpSubmitJobs (of every account above)
//!   and the QOS's MaxSubmitJobsPerUser refuse a job that would exceed them;
//!   so does a limit the job could never meet (a time limit above MaxWall, more
//!   processors or memory than MaxTRESPerJob, or than a Grp or per-user limit
//!   allows in all). Slurm pends those unless the QOS says DenyOnLimit;
//!   Tessera refuses them with the reason, since they would wait forever.
//! * At start: GrpTRES and GrpJobs of every account above, MaxJobs of the
//!   association, and the QOS's GrpTRES, GrpJobs, MaxJobsPerUser and
//!   MaxTRESPerUser hold a job that would exceed them, with the reason; it is
//!   let go when a job it was held for ends. Running and suspended jobs count
//!   (a suspended job keeps its memory). Held jobs take no reservation: the
//!   next job in order is the head.

use super::accounts::{Accounts, Ticket, Tres};
use crate::job::JobIdx;
use crate::Time;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Why a limit holds or refuses a job: Slurm's reason names (`squeue %r`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum LimitReason {
    AssocGrpCpuLimit,
    AssocGrpMemLimit,
    AssocGrpJobsLimit,
    AssocMaxJobsLimit,
    AssocGrpSubmitJobsLimit,
    AssocMaxSubmitJobLimit,
    AssocMaxWallDurationPerJobLimit,
    AssocMaxCpuPerJobLimit,
    AssocMaxMemPerJob,
    QOSGrpCpuLimit,
    QOSGrpMemLimit,
    QOSGrpJobsLimit,
    QOSMaxJobsPerUserLimit,
    QOSMaxCpuPerUserLimit,
    QOSMaxMemoryPerUser,
    QOSMaxSubmitJobPerUserLimit,
    QOSMaxWallDurationPerJobLimit,
}

impl LimitReason {
    pub fn name(self) -> &'static str {
        use LimitReason::*;
        match self {
            AssocGrpCpuLimit => "AssocGrpCpuLimit",
            AssocGrpMemLimit => "AssocGrpMemLimit",
            AssocGrpJobsLimit => "AssocGrpJobsLimit",
            AssocMaxJobsLimit => "AssocMaxJobsLimit",
            AssocGrpSubmitJobsLimit => "AssocGrpSubmitJobsLimit",
            AssocMaxSubmitJobLimit => "AssocMaxSubmitJobLimit",
            AssocMaxWallDurationPerJobLimit => "AssocMaxWallDurationPerJobLimit",
            AssocMaxCpuPerJobLimit => "AssocMaxCpuPerJobLimit",
            AssocMaxMemPerJob => "AssocMaxMemPerJob",
            QOSGrpCpuLimit => "QOSGrpCpuLimit",
            QOSGrpMemLimit => "QOSGrpMemLimit",
            QOSGrpJobsLimit => "QOSGrpJobsLimit",
            QOSMaxJobsPerUserLimit => "QOSMaxJobsPerUserLimit",
            QOSMaxCpuPerUserLimit => "QOSMaxCpuPerUserLimit",
            QOSMaxMemoryPerUser => "QOSMaxMemoryPerUser",
            QOSMaxSubmitJobPerUserLimit => "QOSMaxSubmitJobPerUserLimit",
            QOSMaxWallDurationPerJobLimit => "QOSMaxWallDurationPerJobLimit",
        }
    }
}

impl std::fmt::Display for LimitReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One association's limits as they apply: its Grp limits, and the Max
/// limits of the nearest association up the tree that sets each.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct AssocRule {
    parent: Option<u32>,
    grp_tres: Tres,
    grp_jobs: Option<u32>,
    grp_submit: Option<u32>,
    max_jobs: Option<u32>,
    max_submit: Option<u32>,
    max_wall: Option<Time>,
    max_tres_per_job: Tres,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Use {
    jobs: u32,
    cpu: u64,
    mem: u64,
    /// Queued and running (for submit limits).
    submitted: u32,
}

/// What a job counts for.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct JobLimit {
    assoc: u32,
    qos: u16,
    user: u32,
    cpu: u64,
    mem: u64,
    estimate: Time,
    running: bool,
}

/// The limits of an accounts table, what running and queued jobs use of
/// them, and which jobs they hold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct LimitBook {
    rules: Vec<AssocRule>,
    /// By association: its user's index (user associations only).
    user_of: Vec<u32>,
    qos: Vec<super::Qos>,
    assoc_use: Vec<Use>,
    qos_use: Vec<Use>,
    /// (QOS, user) → what that user's jobs of the QOS use (keyed
    /// `qos << 32 | user`: a saved state's map keys are numbers).
    qos_user: BTreeMap<u64, Use>,
    /// By job slot: what it counts for (None: no ticket, or not in the engine).
    jobs: Vec<Option<JobLimit>>,
    /// By job slot: the limit holding it.
    held: Vec<Option<LimitReason>>,
    /// Jobs a limit holds.
    holding: std::collections::BTreeSet<JobIdx>,
    /// Some use fell since the held jobs were last looked at.
    pub fell: bool,
    /// Submit limits refuse jobs (a simulator replaying a trace turns them
    /// off: the real system accepted every job of it).
    #[serde(default = "yes")]
    pub submit_limits: bool,
}

fn yes() -> bool {
    true
}

fn qos_user(qos: u16, user: u32) -> u64 {
    (qos as u64) << 32 | user as u64
}

fn over(limit: Option<u64>, used: u64, more: u64) -> bool {
    limit.is_some_and(|l| used + more > l)
}

impl LimitBook {
    /// None when nothing in the table limits anything.
    pub fn of(acc: &Accounts) -> Option<LimitBook> {
        let limited = acc.assocs.iter().any(|a| a.limits != Default::default())
            || acc.qos.iter().any(|q| q.max_wall.is_some() || !q.max_tres_per_user.is_none() || q.max_jobs_per_user.is_some() || q.max_submit_jobs_per_user.is_some() || !q.grp_tres.is_none() || q.grp_jobs.is_some());
        if !limited {
            return None;
        }
        let mut rules: Vec<AssocRule> = Vec::with_capacity(acc.assocs.len());
        for a in &acc.assocs {
            let up = a.parent.map(|p| rules[p.0 as usize].clone());
            let inherit = |own: Option<u32>, f: fn(&AssocRule) -> Option<u32>| own.or_else(|| up.as_ref().and_then(f));
            let l = &a.limits;
            rules.push(AssocRule {
                parent: a.parent.map(|p| p.0),
                grp_tres: l.grp_tres,
                grp_jobs: l.grp_jobs,
                grp_submit: l.grp_submit_jobs,
                max_jobs: inherit(l.max_jobs, |r| r.max_jobs),
                max_submit: inherit(l.max_submit_jobs, |r| r.max_submit),
                max_wall: l.max_wall.or_else(|| up.as_ref().and_then(|r| r.max_wall)),
                max_tres_per_job: Tres { cpu: l.max_tres_per_job.cpu.or_else(|| up.as_ref().and_then(|r| r.max_tres_per_job.cpu)), mem_mb: l.max_tres_per_job.mem_mb.or_else(|| up.as_ref().and_then(|r| r.max_tres_per_job.mem_mb)) },
            });
        }
        let mut names: BTreeMap<&str, u32> = BTreeMap::new();
        let user_of = acc
            .assocs
            .iter()
            .map(|a| match &a.user {
                Some(u) => {
                    let n = names.len() as u32;
                    *names.entry(u.as_str()).or_insert(n)
                }
                None => u32::MAX,
            })
            .collect();
        Some(LimitBook {
            rules,
            user_of,
            qos: acc.qos.clone(),
            assoc_use: vec![Use::default(); acc.assocs.len()],
            qos_use: vec![Use::default(); acc.qos.len()],
            qos_user: BTreeMap::new(),
            jobs: Vec::new(),
            held: Vec::new(),
            holding: Default::default(),
            fell: false,
            submit_limits: true,
        })
    }

    fn lineage(&self, a: u32) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors(Some(a), move |&x| self.rules[x as usize].parent)
    }

    fn job_of(&self, t: &Ticket, procs: u32, mem_per_proc_mb: u64, estimate: Time) -> JobLimit {
        JobLimit { assoc: t.assoc.0, qos: t.qos.0, user: self.user_of[t.assoc.0 as usize], cpu: procs as u64, mem: procs as u64 * mem_per_proc_mb, estimate, running: false }
    }

    /// Whether a job may be submitted: the submit limits, and the limits it
    /// could never meet.
    pub fn admit(&self, t: &Ticket, procs: u32, mem_per_proc_mb: u64, estimate: Time) -> Result<(), LimitReason> {
        use LimitReason::*;
        let j = self.job_of(t, procs, mem_per_proc_mb, estimate);
        let r = &self.rules[j.assoc as usize];
        let q = &self.qos[j.qos as usize];
        let qu = self.qos_user.get(&qos_user(j.qos, j.user)).cloned().unwrap_or_default();
        if !self.submit_limits {
            return self.never_met(t, procs, mem_per_proc_mb, estimate).map_or(Ok(()), Err);
        }
        if over(r.max_submit.map(u64::from), self.assoc_use[j.assoc as usize].submitted as u64, 1) {
            return Err(AssocMaxSubmitJobLimit);
        }
        if self.lineage(j.assoc).any(|a| over(self.rules[a as usize].grp_submit.map(u64::from), self.assoc_use[a as usize].submitted as u64, 1)) {
            return Err(AssocGrpSubmitJobsLimit);
        }
        if over(q.max_submit_jobs_per_user.map(u64::from), qu.submitted as u64, 1) {
            return Err(QOSMaxSubmitJobPerUserLimit);
        }
        self.never_met(t, procs, mem_per_proc_mb, estimate).map_or(Ok(()), Err)
    }

    /// A limit the job could never meet, whatever else ran.
    pub fn never_met(&self, t: &Ticket, procs: u32, mem_per_proc_mb: u64, estimate: Time) -> Option<LimitReason> {
        use LimitReason::*;
        let j = self.job_of(t, procs, mem_per_proc_mb, estimate);
        let r = &self.rules[j.assoc as usize];
        let q = &self.qos[j.qos as usize];
        if q.max_wall.is_some_and(|w| j.estimate > w) {
            return Some(QOSMaxWallDurationPerJobLimit);
        }
        if r.max_wall.is_some_and(|w| j.estimate > w) {
            return Some(AssocMaxWallDurationPerJobLimit);
        }
        if over(r.max_tres_per_job.cpu, 0, j.cpu) {
            return Some(AssocMaxCpuPerJobLimit);
        }
        if over(r.max_tres_per_job.mem_mb, 0, j.mem) {
            return Some(AssocMaxMemPerJob);
        }
        self.running_limit(&j, true)
    }

    /// The first running limit the job would exceed if it started now
    /// (`alone`: as if nothing else ran, for limits it could never meet).
    fn running_limit(&self, j: &JobLimit, alone: bool) -> Option<LimitReason> {
        use LimitReason::*;
        let zero = Use::default();
        let used = |u: &Use| if alone { zero.clone() } else { u.clone() };
        let q = &self.qos[j.qos as usize];
        let qu = used(self.qos_user.get(&qos_user(j.qos, j.user)).unwrap_or(&zero));
        let qg = used(&self.qos_use[j.qos as usize]);
        if over(q.max_jobs_per_user.map(u64::from), qu.jobs as u64, 1) {
            return Some(QOSMaxJobsPerUserLimit);
        }
        if over(q.max_tres_per_user.cpu, qu.cpu, j.cpu) {
            return Some(QOSMaxCpuPerUserLimit);
        }
        if over(q.max_tres_per_user.mem_mb, qu.mem, j.mem) {
            return Some(QOSMaxMemoryPerUser);
        }
        if over(q.grp_jobs.map(u64::from), qg.jobs as u64, 1) {
            return Some(QOSGrpJobsLimit);
        }
        if over(q.grp_tres.cpu, qg.cpu, j.cpu) {
            return Some(QOSGrpCpuLimit);
        }
        if over(q.grp_tres.mem_mb, qg.mem, j.mem) {
            return Some(QOSGrpMemLimit);
        }
        let own = used(&self.assoc_use[j.assoc as usize]);
        if over(self.rules[j.assoc as usize].max_jobs.map(u64::from), own.jobs as u64, 1) {
            return Some(AssocMaxJobsLimit);
        }
        for a in self.lineage(j.assoc) {
            let (r, u) = (&self.rules[a as usize], used(&self.assoc_use[a as usize]));
            if over(r.grp_jobs.map(u64::from), u.jobs as u64, 1) {
                return Some(AssocGrpJobsLimit);
            }
            if over(r.grp_tres.cpu, u.cpu, j.cpu) {
                return Some(AssocGrpCpuLimit);
            }
            if over(r.grp_tres.mem_mb, u.mem, j.mem) {
                return Some(AssocGrpMemLimit);
            }
        }
        None
    }

    fn slot(&mut self, j: JobIdx) {
        if self.jobs.len() <= j.index() {
            self.jobs.resize(j.index() + 1, None);
            self.held.resize(j.index() + 1, None);
        }
    }

    fn count(&mut self, j: &JobLimit, running: bool, sign: i64) {
        let add = |u: &mut Use| {
            if running {
                u.jobs = (u.jobs as i64 + sign) as u32;
                u.cpu = (u.cpu as i64 + sign * j.cpu as i64) as u64;
                u.mem = (u.mem as i64 + sign * j.mem as i64) as u64;
            } else {
                u.submitted = (u.submitted as i64 + sign) as u32;
            }
        };
        let lineage: Vec<u32> = self.lineage(j.assoc).collect();
        for a in lineage {
            add(&mut self.assoc_use[a as usize]);
        }
        add(&mut self.qos_use[j.qos as usize]);
        add(self.qos_user.entry(qos_user(j.qos, j.user)).or_default());
        if sign < 0 {
            self.fell = true;
        }
    }

    /// A job joins the engine's queue.
    pub fn queued(&mut self, slot: JobIdx, t: &Ticket, procs: u32, mem_per_proc_mb: u64, estimate: Time) {
        self.slot(slot);
        let j = self.job_of(t, procs, mem_per_proc_mb, estimate);
        self.count(&j, false, 1);
        self.jobs[slot.index()] = Some(j);
        self.held[slot.index()] = None;
    }

    /// The limit a queued job would exceed if it started now.
    pub fn blocks(&self, slot: JobIdx) -> Option<LimitReason> {
        let j = self.jobs.get(slot.index()).copied().flatten()?;
        self.running_limit(&j, false)
    }

    /// A job starts (or takes its resources back).
    pub fn started(&mut self, slot: JobIdx) {
        if let Some(mut j) = self.jobs.get(slot.index()).copied().flatten() {
            if !j.running {
                j.running = true;
                self.count(&j, true, 1);
                self.jobs[slot.index()] = Some(j);
            }
        }
    }

    /// A running job goes back to the queue.
    pub fn stopped(&mut self, slot: JobIdx) {
        if let Some(mut j) = self.jobs.get(slot.index()).copied().flatten() {
            if j.running {
                j.running = false;
                self.count(&j, true, -1);
                self.jobs[slot.index()] = Some(j);
            }
        }
    }

    /// A job leaves the engine.
    pub fn left(&mut self, slot: JobIdx) {
        self.stopped(slot);
        if let Some(j) = self.jobs.get_mut(slot.index()).and_then(Option::take) {
            self.count(&j, false, -1);
        }
        self.unhold(slot);
    }

    pub fn hold(&mut self, slot: JobIdx, why: LimitReason) {
        self.slot(slot);
        self.held[slot.index()] = Some(why);
        self.holding.insert(slot);
    }

    pub fn unhold(&mut self, slot: JobIdx) {
        if let Some(h) = self.held.get_mut(slot.index()) {
            *h = None;
        }
        self.holding.remove(&slot);
    }

    pub fn held(&self, slot: JobIdx) -> Option<LimitReason> {
        self.held.get(slot.index()).copied().flatten()
    }

    /// Jobs a limit holds, in slot order.
    pub fn holding(&self) -> Vec<JobIdx> {
        self.holding.iter().copied().collect()
    }
}
