//! The pool engine: one pool of identical processors (no cluster file, or
//! `--capacity`). The fast path for replaying large traces; its schedules are
//! exactly those of the node engine on a single node (a test checks it).

use crate::engine::Effect;
use crate::job::{JobIdx, JobSpec, JobState};
use crate::pending::PendingReason;
use crate::policy::{PolicyKind, NOT_PARM};
use crate::profile::{footprint, Doomed, Profile};
use crate::running::{Running, RunningJob};
use crate::table::JobTable;
use crate::Time;

/// The scheduling engine for one pool of identical processors.
#[derive(Debug, Clone)]
pub struct PoolEngine {
    policy: PolicyKind,
    capacity: u32,
    free: u32,
    t: JobTable,
    running: Running,
    /// Scratch space for conservative backfilling, kept to avoid allocating per pass.
    profile: Profile,
    starts: Vec<(u32, JobIdx)>,
    doomed: Doomed,
}

impl PoolEngine {
    pub fn new(policy: PolicyKind, capacity: u32) -> Self {
        assert!(policy != PolicyKind::Parm, "{NOT_PARM}");
        PoolEngine {
            policy,
            capacity,
            free: capacity,
            t: JobTable::new(),
            running: Running::default(),
            profile: Profile::default(),
            starts: Vec::new(),
            doomed: Doomed::default(),
        }
    }

    pub fn policy(&self) -> PolicyKind {
        self.policy
    }

    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    pub fn free(&self) -> u32 {
        self.free
    }

    pub(crate) fn table(&self) -> &JobTable {
        &self.t
    }

    pub fn running(&self) -> usize {
        self.running.len()
    }

    pub fn can_run(&self, spec: &JobSpec) -> bool {
        spec.procs >= 1 && spec.procs <= self.capacity
    }

    pub fn submit(&mut self, now: Time, spec: JobSpec) {
        assert!(self.can_run(&spec), "job {:?} does not fit the machine", spec.id);
        self.t.submit(now, spec);
    }

    pub fn complete(&mut self, now: Time, job: JobIdx) {
        let start = self.t.finish(now, job);
        let r = self.running.remove(start + self.t.spec(job).estimate, job);
        self.free += r.procs;
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

    fn start(&mut self, now: Time, pos: u32, job: JobIdx, out: &mut Vec<Effect>) {
        let spec = self.t.begin(now, pos, job);
        self.free -= spec.procs;
        self.running.insert(RunningJob { expected_end: now + spec.estimate, job, procs: spec.procs });
        out.push(Effect::Start { job, procs: spec.procs });
    }

    /// Start jobs from the head of the queue while they fit. Returns the blocked
    /// head, if any.
    fn start_from_head(&mut self, now: Time, out: &mut Vec<Effect>) -> Option<(u32, JobIdx)> {
        while let Some((pos, job)) = self.t.queue.head() {
            if self.t.jobs[job.index()].spec.procs > self.free {
                return Some((pos, job));
            }
            self.start(now, pos, job, out);
        }
        None
    }

    /// EASY backfilling (see `docs/semantics.md` for the exact rule).
    fn pass_easy(&mut self, now: Time, out: &mut Vec<Effect>) {
        let Some((head_pos, head)) = self.start_from_head(now, out) else { return };
        let mut free = self.free;
        // Cheap exit before computing the shadow: nothing after the head fits now.
        let Some(mut pos) = self.t.queue.find_first(head_pos + 1, |p, _| p <= free) else {
            return;
        };
        let head_procs = self.t.jobs[head.index()].spec.procs;
        let (shadow, released) =
            self.running.shadow(head_procs - free).expect("a job no larger than the machine always gets a shadow time");
        let mut extra = (free + released) - head_procs;
        loop {
            let slack = shadow - now;
            let (f, x) = (free, extra);
            let found = self.t.queue.find_first(pos, |p, e| p <= f && (e <= slack || p <= x));
            let Some(p) = found else { break };
            let job = self.t.queue.job_at(p);
            let spec = self.t.jobs[job.index()].spec;
            if spec.estimate > slack {
                extra -= spec.procs;
            }
            self.start(now, p, job, out);
            free = self.free;
            if free == 0 {
                break;
            }
            pos = p + 1;
        }
    }

    /// Conservative backfilling: rebuild the profile from the running jobs, then give
    /// every queued job, in queue order, the earliest start at which its processors
    /// are free for its whole estimate; those whose start is now start.
    ///
    /// Only the jobs that start now matter (every reservation is recomputed at the
    /// next pass), and that allows two exact shortcuts (`docs/semantics.md`):
    ///
    /// * Let `full_at` be the first instant at which fewer processors are free than
    ///   the smallest queued job needs. No window can contain it, so every
    ///   reservation that starts before it also ends by it, and reservations that
    ///   start after it never change the profile before it. The pass therefore only
    ///   places jobs whose window fits before `full_at` (`p <= most free before
    ///   full_at`, `estimate <= full_at - now`), found through the queue index
    ///   without visiting the others; `full_at` only moves earlier.
    /// * It stops as soon as no later job can start now: none asks for at most the
    ///   processors still free now with a window that ends by `full_at`.
    fn pass_conservative(&mut self, now: Time, out: &mut Vec<Effect>) {
        let Some((head_pos, _)) = self.t.queue.head() else { return };
        let p_min = self.t.queue.min_procs() as i64;
        if (self.free as i64) < p_min {
            return;
        }
        let running = self.running.as_slice();
        self.profile.rebuild(now, self.free);
        self.starts.clear();
        // the running jobs alone never leave fewer than `free_now >= p_min` free
        let mut full_at = Time::MAX;
        let mut most = self.capacity as i64;
        self.doomed.clear();
        // a job at or after `pos` that could still start now (None: look again)
        let mut could_start: Option<u32> = None;
        let mut pos = head_pos;
        loop {
            let lim = full_at.saturating_sub(now);
            if could_start.is_none_or(|c| c < pos) {
                let free_now = self.profile.free_now();
                let can_start_now = |p: u32, e: Time| (p as i64) <= free_now && e.max(1) <= lim;
                could_start = self.t.queue.find_first(pos, can_start_now);
                if could_start.is_none() {
                    break;
                }
            }
            let doomed = &self.doomed;
            let can_fit_early =
                |p: u32, e: Time| (p as i64) <= most && e.max(1) <= lim && !doomed.dominates(p, e.max(1));
            let Some(p) = self.t.queue.find_first(pos, can_fit_early) else { break };
            let job = self.t.queue.job_at(p);
            let spec = &self.t.jobs[job.index()].spec;
            let dur = footprint(spec.estimate);
            if let Some((start, seg)) = self.profile.earliest_fit_before(spec.procs, dur, full_at, running) {
                if let Some(t) = self.profile.reserve(seg, dur, spec.procs, p_min, running) {
                    if t < full_at {
                        full_at = t;
                        self.profile.truncate_after(full_at, running);
                        most = self.profile.max_free_before(full_at);
                    }
                }
                if start == now {
                    self.starts.push((p, job));
                }
                could_start = None;
            } else {
                // free processors only go down during a pass, so no job at least
                // as large and as long will fit either
                self.doomed.insert(spec.procs, dur);
            }
            pos = p + 1;
        }
        let mut starts = std::mem::take(&mut self.starts);
        for &(pos, job) in &starts {
            self.start(now, pos, job, out);
        }
        starts.clear();
        self.starts = starts;
    }

    /// The job at the head of the queue and the time by which enough processors
    /// are expected to be free for it (the shadow time of EASY backfilling), when
    /// it cannot start now.
    pub fn head_reservation(&self) -> Option<(JobIdx, Time)> {
        let (_, head) = self.t.queue.head()?;
        let procs = self.t.jobs[head.index()].spec.procs;
        if procs <= self.free {
            return None;
        }
        self.running.shadow(procs - self.free).map(|(t, _)| (head, t))
    }

    /// Why a pending job has not started, as of the last pass at `now`.
    pub fn pending_reason(&self, now: Time, job: JobIdx) -> Option<PendingReason> {
        let e = &self.t.jobs[job.index()];
        if !matches!(e.state, JobState::Pending { .. }) {
            return None;
        }
        let head = self.t.is_head(job);
        Some(match self.policy {
            PolicyKind::Fcfs | PolicyKind::Easy if head => {
                PendingReason::Resources { needed: e.spec.procs, free: self.free }
            }
            PolicyKind::Fcfs | PolicyKind::Easy => PendingReason::Priority,
            PolicyKind::Parm => unreachable!("{NOT_PARM}"),
            PolicyKind::Conservative => {
                let mut profile = Profile::default();
                let running = self.running.as_slice();
                profile.rebuild(now, self.free);
                let mut reason = PendingReason::Priority;
                for (_, j) in self.t.queue.iter() {
                    let spec = &self.t.jobs[j.index()].spec;
                    let dur = footprint(spec.estimate);
                    let (start, seg) = profile.earliest_fit(spec.procs, dur, running);
                    profile.reserve(seg, dur, spec.procs, 0, running);
                    if j == job {
                        reason = if start == now && head {
                            PendingReason::Resources { needed: spec.procs, free: self.free }
                        } else {
                            PendingReason::ReservedFor { start }
                        };
                        break;
                    }
                }
                reason
            }
        })
    }

    /// Assert the engine's invariants: processors are conserved (free + running =
    /// capacity), no job is both queued and running, and the running list is sorted.
    pub fn sanity_check(&self) {
        let used: u64 = self.running.as_slice().iter().map(|r| r.procs as u64).sum();
        assert_eq!(used + self.free as u64, self.capacity as u64, "processors are not conserved");
        let rs = self.running.as_slice();
        assert!(rs.windows(2).all(|w| (w[0].expected_end, w[0].job) < (w[1].expected_end, w[1].job)));
        for r in rs {
            assert!(matches!(self.t.jobs[r.job.index()].state, JobState::Running { .. }));
        }
        self.t.sanity_check();
    }
}
