//! Conservative backfilling on the nodes: every pending job, in queue order,
//! gets the earliest window free on the nodes it gets; jobs whose window
//! starts now start.

use super::*;

impl NodeEngine {
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
    pub(super) fn pass_conservative(&mut self, now: Time, t: &mut JobTable, out: &mut Vec<Effect>) {
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
        // limits hold what they hold before the plan (so held jobs reserve
        // nothing); a job that a start of this pass puts over one waits
        if t.limits.is_some() {
            let pending: Vec<JobIdx> = t.pending().map(|(_, j)| j).collect();
            for j in pending {
                t.over_limit(j);
            }
        }
        let mut starts = Vec::new();
        self.plan(now, t, Plan::Pass, &mut starts);
        self.quiet_cache = starts
            .is_empty()
            .then(|| (self.version, t.queue.edits(), t.queue.end()));
        for (job, a) in starts {
            if t.over_limit(job) {
                continue;
            }
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
    pub(super) fn plan(
        &mut self,
        now: Time,
        t: &JobTable,
        mode: Plan,
        starts: &mut Vec<(JobIdx, Option<Allocation>)>,
    ) -> Option<Time> {
        let bounded = matches!(mode, Plan::Pass);
        // the windows go to the timeline for the plan (and come back after it)
        let reserving = self.reserving();
        let timeline = !self.exact_aggregate && !self.cores_interchangeable() || reserving;
        let windows = reserving.then(|| std::mem::take(&mut self.blocks));
        let running = self.running.as_slice();
        let mut profile = std::mem::take(&mut self.profile);
        let mut doomed = std::mem::take(&mut self.doomed);
        profile.rebuild(now, self.free_cores);
        doomed.clear();
        let usable = &self.usable;
        let is_usable = |n: u32| usable[n as usize];
        let mut tl = timeline.then(|| {
            let mut tl = Timeline::new(&self.board, now, &is_usable, self.shortcuts, windows);
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
        if let Some(w) = tl.and_then(|tl| tl.windows) {
            self.blocks = w;
        }
        answer
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Plan {
    Pass,
    Explain(JobIdx),
}
