//! Conservative backfilling on the nodes: every pending job, in queue order,
//! gets the earliest window free on the nodes it gets; jobs whose window
//! starts now start.

use super::*;
use crate::queue::Queue;

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
            let cores = cores_of(&a);
            self.start(now, t, job, a, out);
            // a job that started now holds what the plan reserved for it, or the
            // plan is not kept
            let end = t.get(job).expected_end;
            if self.kept.as_mut().is_some_and(|k| !k.started(job, now, end, cores)) {
                self.kept = None;
            }
        }
        if let Some(k) = &mut self.kept {
            k.close(self.version, t.queue.edits());
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
        // the last pass's plan, where it may guide this one (`Kept`); this pass's
        // own is kept where the profile alone places (a pass's, not an answer's)
        let keeping = bounded && !timeline && self.shortcuts;
        // (a pass that does not keep its plan leaves none to repair)
        let mut last = match bounded {
            true => self.kept.take().filter(|_| keeping).and_then(|k| k.usable(now, self.version, self.max_factor, self.running.as_slice())),
            false => None,
        };
        let p_min = if bounded {
            t.queue.min_need().min(i64::MAX as u64) as i64
        } else {
            0
        };
        let mut kept = keeping.then(|| Kept::new(now, self.max_factor, p_min, std::mem::take(&mut self.spare_steps)));
        let windows = reserving.then(|| std::mem::take(&mut self.blocks));
        let spare_tl = if timeline { std::mem::take(&mut self.timeline) } else { Timeline::default() };
        let running = self.running.as_slice();
        let mut profile = std::mem::take(&mut self.profile);
        let mut doomed = std::mem::take(&mut self.doomed);
        // a kept plan keeps its profile too: whole (every running job's end in
        // it, nothing cut), with its reservations; so the calls pass no running
        // jobs, and the last plan's walk changes nothing in it (`Kept`)
        let run: &[RunningJob] = if keeping { &[] } else { running };
        match last.as_mut() {
            Some(l) => l.warm(&mut profile, now, p_min),
            None => {
                match keeping {
                    true => whole_profile(&mut profile, now, self.free_cores, running, &[]),
                    false => profile.rebuild(now, self.free_cores),
                }
            }
        }
        debug_assert!(last.as_ref().is_none_or(|l| profile.free_now() + l.rest_now == self.free_cores.min(i64::MAX as u64 / 2) as i64), "a kept profile has what is free now");
        doomed.clear();
        let usable = &self.usable;
        let is_usable = |n: u32| usable[n as usize];
        let mut tl = timeline.then(|| {
            let mut tl = spare_tl;
            tl.reset(&self.board, now, &is_usable, self.shortcuts, windows);
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
        let fmax = self.max_factor;
        let mut full_at = Time::MAX;
        // on the timeline a long pass also bounds `full_at` by what the most
        // frugal queued job could use (`Frugal`): building that looks at every
        // queued job, so only once the pass has looked at a share of them
        let mut frugal: Option<Frugal> = None;
        let mut frugal_in = match bounded && tl.is_some() && self.shortcuts {
            true => (t.queue.len() / FRUGAL_SHARE).max(FRUGAL_AFTER),
            false => usize::MAX,
        };
        let capacity = self.capacity().min(i64::MAX as u64) as i64;
        let mut most = capacity;
        // p_min less what is free at `full_at` once it moved (a lower bound, as
        // reservations only take more): what the next pass's walk bounds by
        let mut deficit = 0i64;
        let mut could_start: Option<u32> = None;
        let mut pos = t.queue.head().map_or(0, |h| h.0);
        let mut answer = None;
        let mut tl_miss = Misses::new(self.shortcuts);
        // the last `lim` and the longest estimate it allows (`est_within`)
        let mut est_for: (Time, Time) = (Time::MIN, 0);
        // after arrivals and jobs that ended on time only, the walk takes the
        // last plan's steps that hold as they were at once (`Kept::run`)
        if let (Some(l), Some(k)) = (last.as_mut(), kept.as_mut()) {
            if let Some(after) = l.run(&t.queue, now, &mut k.steps, starts, &mut doomed) {
                pos = after;
            }
        }
        loop {
            // walking the last plan, its steps bound `full_at` and what is free
            // before it from above (`Kept`)
            if let Some(l) = last.as_ref().filter(|l| l.walking) {
                (full_at, most) = l.bounds(capacity, now);
            }
            let lim = full_at.saturating_sub(now);
            // the queue's searches compare estimates, not scaled windows
            if lim != est_for.0 {
                est_for = (lim, est_within(lim, fmax));
            }
            let est_lim = est_for.1;
            // the walk's next step, where it is the next position: the queue
            // index answers for it without a walk
            let step_here = last.as_ref().filter(|l| l.walking).is_some_and(|l| l.next_pos() == Some(pos));
            let p = if bounded {
                let dur_of = |e: Time| footprint(scaled(e, fmax));
                if could_start.is_none_or(|c| c < pos) {
                    let rest = last.as_ref().map_or(0, |l| l.rest_now);
                    let free_now = (profile.free_now() + rest).min(frugal.as_ref().map_or(i64::MAX, |f| f.profile.free_now()));
                    let ok = |n: u64, e: Time| (n as i64) <= free_now && e <= est_lim;
                    could_start = match step_here && t.queue.passes_at(pos, ok) {
                        true => Some(pos),
                        false => t.queue.find_first(pos, ok),
                    };
                    if could_start.is_none() {
                        break;
                    }
                }
                let d_ref = &doomed;
                let can_fit_early = |n: u64, e: Time| (n as i64) <= most && e <= est_lim && !d_ref.dominates(n, dur_of(e));
                let found = match step_here && t.queue.passes_at(pos, can_fit_early) {
                    true => Some(pos),
                    false => t.queue.find_first(pos, can_fit_early),
                };
                let Some(p) = found else {
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
            frugal_in -= 1;
            if frugal_in == 0 {
                frugal_in = usize::MAX;
                let per_core = self.least_mem_per_core(t);
                if let Some(tl) = tl.as_mut().filter(|_| per_core > 0) {
                    let (f, below) = tl.frugal(per_core, p_min, std::mem::take(&mut self.frugal));
                    most = most.min(f.profile.max_free_before(full_at));
                    frugal = Some(f);
                    if let Some(b) = below.filter(|&b| b < full_at) {
                        full_at = b;
                        most = bound_by(full_at, &mut profile, &mut frugal, run, keeping);
                    }
                }
            }
            let job = t.queue.job_at(p);
            let (need, est) = t.queue.filed_at(p);
            let need = need.min(i64::MAX as u64);
            let dur_min = footprint(scaled(est, fmax));
            let d = &self.demand[job.index()];
            // the timeline only fills during the pass and `full_at` only moves
            // earlier: a job at least as large and as long as one with no window
            // has none either
            if bounded && tl.is_some() && tl_miss.known(&self.board, d, est) {
                continue;
            }
            // the last plan's step for this job, while its walk has not ended:
            // a step that holds is taken as it is (its reservation is in the
            // profile); anything else ends the walk, and the plan goes on from
            // this job as from scratch (`Kept`)
            if let Some(l) = last.as_mut().filter(|l| l.walking) {
                match l.take(p, job, need, dur_min, now) {
                    Some(s) => {
                        if let Some(k) = &mut kept {
                            k.steps.push(s);
                        }
                        if s.settle(now, starts, &mut doomed) {
                            could_start = None;
                        }
                        continue;
                    }
                    None => {
                        // give the steps not taken back, or, where that is more
                        // work, build the profile again with the steps taken
                        let undo = l.steps[l.next..].iter().filter(|s| s.at.is_some()).count();
                        let taken = kept.as_ref().map_or(&[][..], |k| &k.steps[..]);
                        if undo > taken.iter().filter(|s| s.at.is_some()).count() + running.len() / REBUILD_PER {
                            whole_profile(&mut profile, now, self.free_cores, running, taken);
                        } else {
                            l.undo(&mut profile, now);
                        }
                        // the repair goes on while reservations are as they were
                        l.walking = false;
                        (full_at, deficit) = match profile.first_below(p_min) {
                            Some((at, free)) => (at, p_min.saturating_sub(free)),
                            None => (Time::MAX, 0),
                        };
                        most = if full_at < Time::MAX { profile.max_free_before(full_at) } else { capacity };
                        could_start = None;
                        // from scratch: this job again, with the bounds exact
                        pos = p;
                        continue;
                    }
                }
            }
            // past the walk, the last plan's step for this job, while the repair
            // has not ended: a step that holds is reserved again without a search
            let step = match last.as_mut().map(|l| l.at(p)) {
                Some(Err(())) => {
                    recycle(&mut self.spare_steps, last.take());
                    None
                }
                Some(Ok(s)) => s,
                None => None,
            };
            let hint = step.as_ref().and_then(|(s, more)| s.holds(job, need, dur_min, now, full_at, *more));
            let old = step.as_ref().and_then(|(s, _)| s.at.map(|t| (t, s.need, s.dur)));
            let fit = match hint {
                Some((at, short)) => {
                    profile.shortfall = short;
                    at.map(|t0| (t0, profile.segment_at(t0, run)))
                }
                None if bounded => profile.earliest_fit_before(need, dur_min, full_at, run),
                None => Some(profile.earliest_fit(need, dur_min, run)),
            };
            let at = fit.map(|f| f.0);
            // a reservation other than the last plan's for this job ends the repair
            if at.map(|t| (t, need, dur_min)) != old {
                recycle(&mut self.spare_steps, last.take());
            }
            if let Some(k) = &mut kept {
                k.steps.push(Step { pos: p, job, need, dur: dur_min, at, short: profile.shortfall, full_at, deficit, most, started: false });
            }
            let Some((t0, seg)) = fit else {
                // free cores only go down during a pass, so no job at least as
                // large and as long will fit either
                doomed.insert(need, dur_min);
                continue;
            };
            let placed = match tl.as_mut() {
                None => Some((t0, seg, dur_min, None)),
                Some(tl) => {
                    // what the most frugal job could use bounds the start too
                    let t0 = match frugal.as_mut() {
                        Some(f) => f.profile.earliest_fit_before(need, dur_min, full_at, &[]).map(|x| x.0.max(t0)),
                        None => Some(t0),
                    };
                    let found = if bounded {
                        t0.and_then(|t0| tl.earliest_between(&self.board, d, est, t0, full_at))
                    } else {
                        Some(tl.earliest(&self.board, d, est))
                    };
                    if found.is_none() {
                        tl_miss.record(&self.board, d, est);
                    }
                    found.map(|(ts, a)| {
                        let dur = footprint(scaled(est, a.factor));
                        tl.occupy(&a, ts, ts + dur);
                        (ts, profile.segment_at(ts, run), dur, Some(a))
                    })
                }
            };
            let Some((ts, seg, dur, a)) = placed else {
                continue;
            };
            let cores = a.as_ref().map_or(need, cores_of);
            let mut below = profile.reserve(seg, dur, cores, p_min, run);
            if let (Some(tl), Some(a), Some(f)) = (tl.as_ref(), a.as_ref(), frugal.as_mut()) {
                below = below.into_iter().chain(tl.frugal_take(f, a, ts, ts + dur, p_min)).min();
            }
            let moved = below.filter(|&b| bounded && b < full_at);
            if let Some(below) = moved {
                full_at = below;
                most = bound_by(full_at, &mut profile, &mut frugal, run, keeping);
                if keeping {
                    deficit = p_min.saturating_sub(profile.free_at(full_at));
                }
            }
            if mode == Plan::Explain(job) {
                answer = Some(ts);
                break;
            }
            if ts == now && bounded {
                starts.push((job, a));
            }
            // which job could start now changes with what is free now and with
            // `full_at` (and, on the timeline, with the frugal profile) only
            if ts == now || moved.is_some() || tl.is_some() {
                could_start = None;
            }
        }
        // a walk that did not end keeps the steps it did not reach (`Kept::carry`)
        if let (Some(l), Some(k)) = (last.as_ref().filter(|l| l.walking), kept.as_mut()) {
            l.carry(&mut k.steps);
        }
        recycle(&mut self.spare_steps, last);
        self.profile = profile;
        self.doomed = doomed;
        if let Some(f) = frugal {
            self.frugal = f.profile;
        }
        if let Some(mut tl) = tl {
            if let Some(w) = tl.windows.take() {
                self.blocks = w;
            }
            self.timeline = tl;
        }
        if keeping {
            self.kept = kept;
        }
        answer
    }
}

/// A kept plan's profile built from scratch at `now`: `free` processors free,
/// every running job's end, and the reservations of `steps` (what is left of
/// them from `now` on).
fn whole_profile(profile: &mut Profile, now: Time, free: u64, running: &[RunningJob], steps: &[Step]) {
    profile.rebuild_whole(now, free, running);
    for s in steps {
        if let Some(t0) = s.at {
            let (from, to) = (t0.max(now), t0.saturating_add(s.dur));
            if from < to {
                let pos = profile.segment_at(from, &[]);
                profile.reserve(pos, to - from, s.need, 0, &[]);
            }
        }
    }
}

/// The longest estimate whose window on the fastest nodes (factor `fmax`)
/// lasts at most `lim` seconds, its footprint counted, or -1 if none does:
/// `e <= est_within(lim, fmax)` exactly when `footprint(scaled(e, fmax)) <= lim`.
fn est_within(lim: Time, fmax: f64) -> Time {
    let fits = |e: Time| footprint(scaled(e, fmax)) <= lim;
    if !fits(0) {
        return -1;
    }
    let guess = est_limit(lim, fmax).clamp(0, Time::MAX - 1);
    if fits(guess) && !fits(guess + 1) {
        return guess;
    }
    if fits(Time::MAX) {
        return Time::MAX;
    }
    // rounding or saturation missed the boundary: find it by halves
    let (mut lo, mut hi) = (0, Time::MAX);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        match fits(mid) {
            true => lo = mid,
            false => hi = mid,
        }
    }
    lo
}

/// A plan the pass is done with leaves its steps' buffer to the next.
fn recycle(spare: &mut Vec<Step>, done: Option<Kept>) {
    if let Some(k) = done {
        if k.steps.capacity() > spare.capacity() {
            *spare = k.steps;
        }
    }
}

/// A walk that ends gives back the reservations of the steps it did not
/// take, unless there are more of them than of those it took and one in
/// `REBUILD_PER` running jobs: the profile is then built again (every running
/// job's end, the steps taken) at about that cost. Measured on Curie and RICC
/// with `--capacity` (BENCHMARKS.md): 32 against 4, 8 (the first choice), 16
/// and never.
const REBUILD_PER: usize = 32;

/// A pass on the timeline builds [`Frugal`] once it has looked at one in
/// `FRUGAL_SHARE` of the queued jobs, and at least `FRUGAL_AFTER`: most passes
/// end sooner.
const FRUGAL_SHARE: usize = 32;
const FRUGAL_AFTER: usize = 8;

/// `full_at` moved earlier: nothing after it matters to either profile (cut
/// off, unless the profile is kept). The most processors free before it.
fn bound_by(full_at: Time, profile: &mut Profile, frugal: &mut Option<Frugal>, running: &[RunningJob], keep: bool) -> i64 {
    if !keep {
        profile.truncate_after(full_at, running);
    }
    let most = profile.max_free_before(full_at);
    match frugal {
        Some(f) => {
            f.profile.truncate_after(full_at, &[]);
            most.min(f.profile.max_free_before(full_at))
        }
        None => most,
    }
}

impl NodeEngine {
    /// A kept plan's profile is the one a plan would build at its instant from
    /// the running jobs, the ones that ended since and its steps' reservations
    /// (asserted by the engine's invariants).
    pub(super) fn check_kept(&self) {
        let Some(k) = &self.kept else { return };
        if self.version != k.version + k.freed.len() as u64 {
            return; // the next pass discards it
        }
        let mut kept = self.profile.clone();
        for &(end, procs) in &k.freed {
            kept.give(k.now, end.max(k.now + 1), procs as i64);
        }
        let mut fresh = Profile::default();
        whole_profile(&mut fresh, k.now, self.free_cores, self.running.as_slice(), &k.steps);
        let (a, b) = (kept.values(), fresh.values());
        for &(t0, _) in a.iter().chain(&b) {
            assert_eq!(kept.free_at(t0), fresh.free_at(t0), "the kept profile at {t0} (planned at {}): {a:?}, from scratch {b:?}", k.now);
        }
    }
}

impl NodeEngine {
    /// The least memory per core any queued job asks (MiB; 0 if one asks none,
    /// or takes whole nodes, whatever their memory).
    fn least_mem_per_core(&self, t: &JobTable) -> u64 {
        t.queue
            .iter()
            .map(|(_, j)| {
                let d = &self.demand[j.index()];
                if d.whole || self.board.parts[d.part as usize].exclusive { 0 } else { d.mem_per_proc }
            })
            .min()
            .unwrap_or(0)
    }
}

/// One job the plan looked at: where it reserved (`at`), or that it found no
/// window ending by `full_at`; `short`, the fewest processors any earlier
/// start lacked (from [`Profile::earliest_fit_before`]); and the bounds in
/// force when it was looked at: `full_at`, `deficit` (the plan's `p_min` less
/// what was free at `full_at`, at least) and `most` (at least what was free
/// at any instant before `full_at`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Step {
    pos: u32,
    job: JobIdx,
    need: u64,
    dur: Time,
    at: Option<Time>,
    short: i64,
    full_at: Time,
    deficit: i64,
    most: i64,
    /// The pass started it: it no longer waits (dropped by [`Kept::close`]).
    started: bool,
}

/// Conservative's plan kept from one pass to the next, with its profile, so
/// that a pass walks the jobs whose reservations still hold without searching
/// or reserving again, and plans from scratch from the first job a change
/// affects (`docs/semantics.md`, conservative's fact 4).
///
/// The profile is kept whole: every running job's end in it, nothing cut off,
/// and every step's reservation. Between the passes, running jobs end: those
/// that end early give their cores back to it ([`Kept::warm`]), at most `C`
/// (`more`) more free at any instant; those the plan started hold what it
/// reserved for them. So at any step of the walk, with every earlier step
/// taken as it was, the profile of the new plan so far has at most `C` more
/// processors free than the last plan's had there:
///
/// * A job whose every earlier start lacked more than `C` still finds no
///   earlier window, and its own still fits (the jobs after it were placed
///   around it): its reservation holds.
/// * A job that found no window ending by the last plan's `full_at` finds
///   none still if it lacked more than `C`, and if that `full_at` still has
///   fewer than `p_min` free (`deficit` more than `C`, less any fall in
///   `p_min`), so that the new `full_at` is no later.
/// * The same instant and the last plan's `most` plus `C` bound the new plan's
///   `full_at` and what is free before it from above, so the walk looks at
///   every job the plan from scratch would (and may look at more).
///
/// Any job the walk looks at that has no step, or whose step does not hold, or
/// a step with a reservation that the walk goes by, ends the walk: the
/// reservations of the steps not taken are given back to the profile, which is
/// then the new plan's so far, exactly (or, where that is more work, the
/// profile is built again with the steps taken); `full_at` and `most` are found
/// in it. From that job the plan repairs the rest ([`Kept::at`], [`Step::holds`]):
/// a step that still lacked more than `C` and still ends by the now exact
/// `full_at` is reserved again without a search, until a reservation differs
/// from the last plan's; from there it plans as from scratch. A walk that does not end
/// keeps the steps it did not reach for the next pass. Any other change (a job
/// that started elsewhere, a node that changed, a running job past its
/// expected end) discards the plan. The property test
/// `a_kept_conservative_plan_schedules_as_a_fresh_one` checks the schedules.
#[derive(Debug, Clone)]
pub(super) struct Kept {
    now: Time,
    fmax: f64,
    /// The plan's `p_min`.
    p_min: i64,
    /// The engine's version once the plan's jobs started.
    version: u64,
    /// The queue's count of edits then ([`Queue::edits`]).
    edits: u64,
    steps: Vec<Step>,
    /// Running jobs that ended since (each bumped the version): their expected
    /// end and processors.
    freed: Vec<(Time, u32)>,
    /// After [`Kept::usable`]: the most processors more free at any instant.
    more: i64,
    /// After [`Kept::warm`]: `more` plus how much `p_min` fell, which each
    /// step's `deficit` must exceed.
    slack: i64,
    /// The processors that the steps not yet taken hold now in the profile.
    pub(super) rest_now: i64,
    /// The bounds of the last step taken, if any.
    bound: Option<(Time, i64)>,
    /// The pass walks the plan (its reservations in the profile); once not,
    /// it repairs it (reserving again what holds).
    walking: bool,
    /// The next step to look at: by the walk ([`Kept::take`]), or, on a plan
    /// just made, by its starts ([`Kept::started`]).
    next: usize,
}

impl Kept {
    /// A plan made at `now`, its steps to go in `steps` (emptied).
    fn new(now: Time, fmax: f64, p_min: i64, mut steps: Vec<Step>) -> Kept {
        steps.clear();
        Kept { now, fmax, p_min, version: 0, edits: 0, steps, freed: Vec::new(), more: 0, slack: 0, rest_now: 0, bound: None, walking: true, next: 0 }
    }

    /// A running job ended (or left) with `r`'s end and processors.
    pub(super) fn released(&mut self, r: RunningJob) {
        self.freed.push((r.expected_end, r.procs));
    }

    /// A job the plan started now is expected to end at `end` on `cores`: true
    /// if that is what it reserved. The plan's jobs start in its order, so the
    /// steps are looked through once per pass.
    fn started(&mut self, job: JobIdx, now: Time, end: Time, cores: u64) -> bool {
        let from = self.next;
        let Some(i) = self.steps.get(from..).and_then(|rest| rest.iter().position(|s| s.job == job)).map(|i| i + from) else { return false };
        self.next = i + 1;
        let s = &mut self.steps[i];
        s.started = true;
        s.at == Some(now) && end == now.saturating_add(s.dur) && cores == s.need
    }

    /// The pass's jobs have started, and the engine is at `version`: the steps
    /// of those that started go (their reservations are now running jobs).
    fn close(&mut self, version: u64, edits: u64) {
        // (no step is marked unless one started: `next` moved)
        if self.next > 0 {
            self.steps.retain(|s| !s.started);
        }
        self.version = version;
        self.edits = edits;
        self.next = 0;
    }

    /// The plan, if the engine changed only by running jobs that ended since
    /// and none still running is past its expected end.
    fn usable(mut self, now: Time, version: u64, fmax: f64, running: &[RunningJob]) -> Option<Kept> {
        let overdue = running.first().is_some_and(|r| r.expected_end <= now);
        if overdue || now < self.now || version != self.version + self.freed.len() as u64 || fmax.to_bits() != self.fmax.to_bits() {
            return None;
        }
        // a job that ended had its processors until its expected end (at least
        // the instant after the plan's) in the plan's profile
        let plan_now = self.now;
        self.more = self
            .freed
            .iter()
            .filter(|&&(end, _)| end.max(plan_now + 1) > now)
            .map(|&(_, procs)| procs as i64)
            .sum();
        self.next = 0;
        Some(self)
    }

    /// Bring the kept profile to `now`: what lay before goes, and the jobs
    /// that ended early give their processors back from now to their expected
    /// end. `p_min` is the new plan's.
    fn warm(&mut self, profile: &mut Profile, now: Time, p_min: i64) {
        profile.advance(now);
        let plan_now = self.now;
        for &(end, procs) in &self.freed {
            profile.give(now, end.max(plan_now + 1), procs as i64);
        }
        self.freed.clear();
        self.slack = self.more.saturating_add(self.p_min.saturating_sub(p_min));
        self.rest_now = self.steps.iter().filter(|s| s.at.is_some_and(|t0| t0 <= now && now < t0.saturating_add(s.dur))).map(|s| s.need.min(i64::MAX as u64) as i64).sum();
        self.bound = None;
    }

    /// Whether a step's `full_at` still has fewer than `p_min` free: an
    /// instant not past, whose deficit exceeds what ended early since.
    fn bounded(&self, s: &Step, now: Time) -> bool {
        s.full_at < Time::MAX && s.full_at >= now && s.deficit > self.slack
    }

    /// The queue position of the next step the walk looks for.
    fn next_pos(&self) -> Option<u32> {
        self.steps.get(self.next).map(|s| s.pos)
    }

    /// What a step bounds `full_at` and `most` by now.
    fn step_bounds(&self, s: &Step, capacity: i64, now: Time) -> (Time, i64) {
        match self.bounded(s, now) {
            true => (s.full_at, s.most.saturating_add(self.more).min(capacity)),
            false => (Time::MAX, capacity),
        }
    }

    /// The bounds on `full_at` and `most` up to the next step: that step's and
    /// the last one taken's (`full_at` only moves earlier, and free processors
    /// only go down, as the plan goes on), whichever are lower.
    fn bounds(&self, capacity: i64, now: Time) -> (Time, i64) {
        let (f, m) = self.steps.get(self.next).map_or((Time::MAX, capacity), |s| self.step_bounds(s, capacity, now));
        match self.bound {
            Some((bf, bm)) => (f.min(bf), m.min(bm)),
            None => (f, m),
        }
    }

    /// The walk reaches queue position `p` (`job`, needing `need` for `dur`):
    /// the last plan's step there, carried to this pass, if it holds. None
    /// ends the walk: no step there, a step that does not hold, or a step with
    /// a reservation that the walk went by (each left for [`Kept::undo`]).
    fn take(&mut self, p: u32, job: JobIdx, need: u64, dur: Time, now: Time) -> Option<Step> {
        let s = self.reach(p).ok()??;
        let bounded = self.bounded(&s, now);
        let holds = s.lacks_more(job, need, dur, self.more)
            && match s.at {
                Some(t0) => t0 >= now,
                None => bounded,
            };
        holds.then(|| self.taken(s, now))
    }

    /// The walk takes `s`, its next step: what it holds now leaves the rest's
    /// count, its bounds join those of the steps taken. The step as this pass
    /// keeps it.
    fn taken(&mut self, s: Step, now: Time) -> Step {
        self.next += 1;
        if s.at.is_some_and(|t0| t0 <= now && now < t0.saturating_add(s.dur)) {
            self.rest_now -= s.need.min(i64::MAX as u64) as i64;
        }
        let (f, m) = self.step_bounds(&s, i64::MAX, now);
        self.bound = Some(self.bound.map_or((f, m), |(bf, bm)| (bf.min(f), bm.min(m))));
        self.carried(s)
    }

    /// After arrivals and jobs that ended at their expected end only (nothing
    /// more free at any instant, and no job queued but at the tail, none
    /// gone), take at once the steps, from the walk's next, that
    /// [`Kept::take`] would take one by one: each job still at its position,
    /// filed as it was, and the bounds in force there those of the last plan
    /// (its `full_at` not past). A reservation
    /// that starts now starts; a job that found no window is doomed. The
    /// pass's `lim` is only shorter than the last plan's, so the jobs between
    /// the steps, which it went by, are gone by again, and each step's job
    /// still passes: a reservation ends by its `full_at`, and a step without
    /// one is taken only where its job is no longer than `full_at` allows.
    /// The queue position after the last step taken, if any.
    fn run(&mut self, q: &Queue, now: Time, into: &mut Vec<Step>, starts: &mut Vec<(JobIdx, Option<Allocation>)>, doomed: &mut Doomed) -> Option<u32> {
        if self.more != 0 || q.edits() != self.edits {
            return None;
        }
        let mut after = None;
        while let Some(&s) = self.steps.get(self.next) {
            let Some((job, need, est)) = q.entry_at(s.pos) else { break };
            let same = s.lacks_more(job, need.min(i64::MAX as u64), footprint(scaled(est, self.fmax)), 0);
            // the bounds there are the last plan's: its `full_at` not past
            let bounds_kept = s.full_at == Time::MAX || self.bounded(&s, now);
            let holds = match s.at {
                Some(t0) => t0 >= now,
                None => s.full_at < Time::MAX && s.dur <= s.full_at - now,
            };
            if !(same && bounds_kept && holds) {
                break;
            }
            let taken = self.taken(s, now);
            into.push(taken);
            taken.settle(now, starts, doomed);
            after = Some(s.pos + 1);
        }
        after
    }

    /// A step as this pass keeps it: what ended early since lowers what it
    /// lacked and its deficit, and raises its `most`.
    fn carried(&self, s: Step) -> Step {
        Step { short: s.short.saturating_sub(self.more), deficit: s.deficit.saturating_sub(self.slack), most: s.most.saturating_add(self.more), started: false, ..s }
    }

    /// Past the walk, the step at queue position `p`, which the repair reaches
    /// now, with the most processors more free than then. The steps of jobs
    /// the repair went by are dropped: an error if one had reserved (what it
    /// reserved is no longer taken, so the repair ends).
    fn at(&mut self, p: u32) -> Result<Option<(Step, i64)>, ()> {
        let Some(s) = self.reach(p)? else { return Ok(None) };
        self.next += 1;
        Ok(Some((s, self.more)))
    }

    /// Go on to queue position `p`: the steps of jobs before it are dropped
    /// (an error, left as the next step, if one had reserved: what it reserved
    /// is no longer taken); the step at `p`, if any, is the next, not yet
    /// taken.
    fn reach(&mut self, p: u32) -> Result<Option<Step>, ()> {
        while let Some(s) = self.steps.get(self.next).filter(|s| s.pos < p) {
            if s.at.is_some() {
                return Err(());
            }
            self.next += 1;
        }
        Ok(self.steps.get(self.next).filter(|s| s.pos == p).copied())
    }

    /// The walk ended: the steps not taken give their reservations back.
    fn undo(&mut self, profile: &mut Profile, now: Time) {
        for s in &self.steps[self.next..] {
            if let Some(t0) = s.at {
                profile.give(t0.max(now), t0.saturating_add(s.dur), s.need.min(i64::MAX as u64) as i64);
            }
        }
    }

    /// The walk did not end: the steps it did not reach go on to the next
    /// plan as they are (their reservations stay in the profile).
    fn carry(&self, into: &mut Vec<Step>) {
        into.extend(self.steps[self.next..].iter().map(|&s| self.carried(s)));
    }
}

impl Step {
    /// A step the walk took: its job starts if its reservation starts now
    /// (true; one later is already in the profile, so what is free now is as
    /// it was), and a job that found no window leaves its shape doomed.
    fn settle(&self, now: Time, starts: &mut Vec<(JobIdx, Option<Allocation>)>, doomed: &mut Doomed) -> bool {
        match self.at {
            Some(t0) if t0 == now => {
                starts.push((self.job, None));
                true
            }
            Some(_) => false,
            None => {
                doomed.insert(self.need, self.dur);
                false
            }
        }
    }

    /// The step is `job`'s (needing `need` for `dur`), and every earlier start
    /// lacked more than the `more` processors more free now.
    fn lacks_more(&self, job: JobIdx, need: u64, dur: Time, more: i64) -> bool {
        self.job == job && self.need == need && self.dur == dur && self.short > more
    }

    /// If this step of the last plan still holds, past the walk, for `job`
    /// (needing `need` for `dur`) with at most `more` processors more free:
    /// its window's start (or none) and a bound on what any earlier start
    /// lacks now.
    fn holds(&self, job: JobIdx, need: u64, dur: Time, now: Time, full_at: Time, more: i64) -> Option<(Option<Time>, i64)> {
        let holds = self.lacks_more(job, need, dur, more)
            && match self.at {
                Some(t0) => t0 >= now && t0.saturating_add(dur) <= full_at,
                None => full_at <= self.full_at,
            };
        holds.then(|| (self.at, self.short - more))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Plan {
    Pass,
    Explain(JobIdx),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The queue's searches compare estimates with `est_within(lim, fmax)`
    /// where the plan compares windows: the two agree on every estimate,
    /// factors that divide evenly or not, and limits too short for any window.
    #[test]
    fn an_estimate_bound_agrees_with_the_window_it_stands_for() {
        for fmax in [1.0, 1.25, 1.5, 2.0, 3.0, 0.7, 1.0 / 3.0, 1.1] {
            for lim in (-3..=300).chain([86_400, 1 << 40]) {
                let e_max = est_within(lim, fmax);
                for e in (0..=400).chain([e_max - 1, e_max, e_max + 1].into_iter().filter(|&e| e >= 0)) {
                    let fits = footprint(scaled(e, fmax)) <= lim;
                    assert_eq!(e <= e_max, fits, "estimate {e}, lim {lim}, factor {fmax}: bound {e_max}");
                }
            }
        }
        assert_eq!(est_within(Time::MAX, 1.0), Time::MAX);
        assert_eq!(est_within(0, 1.0), -1);
    }
}
