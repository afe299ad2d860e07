//! EASY backfilling on the nodes: the blocked head's shadow time and
//! reservation, and the jobs that may start before it without delaying it
//! (node by node, or counting cores where they are interchangeable).

use super::*;

impl NodeEngine {
    /// The head's shadow time and reservation: release running jobs in order of
    /// expected end until the head can be placed on what is free by then. Leaves
    /// the free view at the shadow time in `scratch` (the nodes that differ
    /// from the free view now are its own) and, where the head was placed by
    /// first fit, the nodes that may have a free core then in `bits`.
    ///
    /// Also returns a bound on what the head could take at any instant before
    /// the shadow (what it could take just before then; u64::MAX where not
    /// known): see [`ShadowKept`].
    pub(super) fn shadow(
        &self,
        now: Time,
        head: JobIdx,
        head_need: u64,
        scratch: &mut Mirror,
        bits: &mut Vec<u64>,
    ) -> (Time, Allocation, u64) {
        let d = &self.demand[head.index()];
        let member = &self.board.parts[d.part as usize].member;
        let usable = &self.usable;
        let board = &self.board;
        // what the head could take on a node: its cores, as far as its memory
        // and GPUs allow there (without node sets, the board places the head as
        // soon as the sum reaches its need)
        let units = |free: &Free, n: u32| {
            if free.cores[n as usize] > 0 && member[n as usize] && usable[n as usize] {
                board.usable(d, free, n) as u64
            } else {
                0
            }
        };
        scratch.sync(&self.free, &self.index);
        let mut avail: u64 = if self.index.built() {
            self.index.ones().map(|n| units(&scratch.v, n)).sum()
        } else {
            board.parts[d.part as usize].nodes.iter().map(|&n| units(&scratch.v, n)).sum()
        };
        let indexed = self.indexed(d);
        let place = |scratch: &Mirror, bits: &mut Vec<u64>, t: Time| {
            if indexed {
                // the nodes with a free core now, and those given back
                bits.clear();
                bits.extend_from_slice(self.index.bits());
                for &n in scratch.own() {
                    bits[n as usize / 64] |= 1 << (n % 64);
                }
                self.pick_indexed(d, &scratch.v, bits)
            } else if self.reserving() {
                self.place_windowed(d, &scratch.v, t, &|n| usable[n as usize])
            } else {
                board.place(d, &scratch.v, t, &|n| usable[n as usize])
            }
        };
        // reservations' windows begin and end: the head may fit then
        let bounds = &self.blocks.bounds;
        let mut bi = bounds.partition_point(|&b| b <= now);
        let rs = self.running.as_slice();
        let mut i = 0;
        let mut last = now;
        while i < rs.len() {
            let t = rs[i].expected_end.max(now);
            while bi < bounds.len() && bounds[bi] < t {
                if avail >= head_need {
                    if let Ok(a) = place(scratch, bits, bounds[bi]) {
                        return (bounds[bi], a, u64::MAX);
                    }
                }
                bi += 1;
            }
            // what the head could take at every instant before t
            let before = avail;
            while i < rs.len() && rs[i].expected_end.max(now) == t {
                let a = self.alloc[rs[i].job.index()].as_ref().unwrap();
                for p in &a.parts {
                    let n = p.node as usize;
                    avail -= units(&scratch.v, p.node);
                    scratch.v.cores[n] += p.cores;
                    scratch.v.mem[n] += p.mem;
                    scratch.v.gpus[n] += p.gpus;
                    scratch.set(p.node);
                    avail += units(&scratch.v, p.node);
                }
                i += 1;
            }
            last = t;
            if avail >= head_need {
                if let Ok(a) = place(scratch, bits, t) {
                    return (t, a, before);
                }
            }
        }
        // everything has ended; a DELAY node set may still have to wait to
        // span, a reservation's window to end
        let t = last.max(d.submit.saturating_add(self.board.delay));
        let later = bounds[bi..].iter().copied().filter(|&b| b > t);
        for t in std::iter::once(t).chain(later) {
            if let Ok(a) = place(scratch, bits, t) {
                return (t, a, u64::MAX);
            }
        }
        // no usable node can ever hold it (down or drained nodes, windows):
        // nothing may start before it, as with a reservation at the end of time
        (Time::MAX, Allocation::default(), u64::MAX)
    }

    pub(super) fn pass_easy(&mut self, now: Time, t: &mut JobTable, out: &mut Vec<Effect>) {
        let Some((head_pos, head)) = self.start_from_head(now, t, out) else {
            return;
        };
        let ft = self.free_cores;
        if ft == 0 || t.queue.find_first(head_pos + 1, |n, _| n <= ft).is_none() {
            return;
        }
        if self.cores_interchangeable() {
            self.index.log(false);
            return self.backfill_cores(now, t, out, head_pos, head);
        }
        // the views below are brought up to date from the log of changes
        self.index.log(true);
        let head_need = t.get(head).need;
        // nothing changed since the last pass (arrivals only): same shadow and
        // extra resources, unless a running job is overdue (its end is clamped)
        let overdue = self
            .running
            .as_slice()
            .first()
            .is_some_and(|r| r.expected_end < now);
        let kept = self.shadow_cache.as_ref().filter(|_| self.shortcuts && !overdue).and_then(|k| k.holds(self.version, head, head_need, now));
        let (shadow, mut extra_now) = match kept {
            Some(Reuse::Same(shadow, extra_now)) => (shadow, extra_now),
            Some(Reuse::Freed(shadow)) => {
                // jobs that ended since gave back nodes the walk to the shadow
                // had freed: the extra resources are the same, only what is
                // free now on those nodes grew
                let extra_now = self.extra_now();
                if let Some(k) = &mut self.shadow_cache {
                    k.kept(self.version, extra_now);
                }
                (shadow, extra_now)
            }
            None => {
                let (mut scratch, mut bits) = (std::mem::take(&mut self.scratch), std::mem::take(&mut self.scratch_bits));
                let (shadow, reserved, before) = self.shadow(now, head, head_need, &mut scratch, &mut bits);
                // the extra resources: free at the shadow time, less the head's
                // reservation; they differ from what is free now on the nodes
                // given back by then and those reserved
                let mut extra = std::mem::take(&mut self.extra);
                extra.sync(&self.free, &self.index);
                for &n in scratch.own() {
                    extra.copy_node(&scratch.v, n);
                    extra.set(n);
                }
                extra.take(&reserved);
                let reserved_last = reserved.parts.iter().map(|p| p.node).max().unwrap_or(0);
                (self.scratch, self.scratch_bits, self.extra) = (scratch, bits, extra);
                self.extra_epoch += 1;
                let extra_now = self.extra_now();
                let keep = !self.placement_varies() && !self.reserving();
                // first fit placed the head on nodes up to this one
                let last = match keep && self.indexed(&self.demand[head.index()]) {
                    true => reserved_last,
                    false => u32::MAX,
                };
                self.shadow_cache = Some(ShadowKept::new(self.version, head, shadow, extra_now, if keep { before } else { u64::MAX }, last));
                (shadow, extra_now)
            }
        };
        let mut pos = head_pos + 1;
        let slack = shadow.saturating_sub(now);
        let est_lim = est_limit(slack, self.max_factor);
        // what is free and what is extra only shrink during the pass: a job at
        // least as large as one that could not be placed is not tried
        let (mut miss_free, mut miss_extra) =
            (Misses::new(self.shortcuts && !self.reserving()), Misses::new(self.shortcuts && !self.reserving()));
        let mut view_built = false;
        // the queue's search skips the jobs known not to fit where they would
        // go (`Misses::covers_filed`), unless limits are to hold them as they
        // are looked at
        let keyed = t.limits.is_none();
        loop {
            let ft = self.free_cores;
            let xc = extra_now;
            let found = match keyed {
                true => t.queue.find_first_keyed(pos, |n, e, k| {
                    n <= ft && ((e <= est_lim && !miss_free.covers_filed(n, k)) || (n <= xc && !miss_extra.covers_filed(n, k)))
                }),
                false => t.queue.find_first(pos, |n, e| n <= ft && (e <= est_lim || n <= xc)),
            };
            let Some(p) = found else { break };
            pos = p + 1;
            let job = t.queue.job_at(p);
            if t.over_limit(job) {
                continue;
            }
            let (need, est) = t.queue.filed_at(p);
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
                    if need > xc || miss_extra.known(&self.board, d, 0) {
                        continue;
                    }
                    // place on the extra resources: free now and not needed by the head
                    if !view_built {
                        self.build_view();
                        view_built = true;
                    }
                    let d = &self.demand[job.index()];
                    let Ok(b) = self.place_now(d, &self.view.v, now) else {
                        miss_extra.record(&self.board, d, 0);
                        continue;
                    };
                    extra_now -= self.extra_now_taken(&b, true);
                    self.extra.take(&b);
                    // one that still ends by the shadow (on faster nodes than
                    // first fit found among all that is free) gives them back
                    // before it: a fresh pass would count them extra
                    if now.saturating_add(scaled(est, b.factor)) <= shadow {
                        self.shadow_cache = None;
                    }
                    if let Some(k) = &mut self.shadow_cache {
                        k.on_extra.push(job);
                    }
                    b
                }
            };
            self.start(now, t, job, b, out);
            if view_built {
                let a = self.alloc[job.index()].as_ref().expect("it just started");
                for p in &a.parts {
                    self.view.v.clamp_node(&self.free, &self.extra.v, p.node as usize);
                    self.view.set(p.node);
                }
            }
            if self.free_cores == 0 {
                break;
            }
        }
        // where the head is placed by first fit, the pass's own starts leave
        // the shadow, the head's reservation and the extra resources as a
        // fresh pass would find them (a job started on what is free gives it
        // back by the shadow, one on the extra resources that runs past it
        // took them from what the head does not need, and first fit takes the
        // same there): kept until something else changes, as for
        // interchangeable cores (`ShadowKept`)
        if self.indexed(&self.demand[head.index()]) && !self.placement_varies() {
            if let Some(k) = &mut self.shadow_cache {
                k.kept(self.version, extra_now);
            }
        }
    }

    /// At most how much more of the cores free on any view `d` could take
    /// once `a` is added to it, node by node: the cores `a` gives back, or as
    /// many as its memory lets `d` have of the cores already free there; a
    /// whole node where its GPUs come back or `d` takes whole nodes.
    pub(super) fn gain(&self, d: &Demand, a: &Allocation) -> u64 {
        let whole = self.board.parts[d.part as usize].exclusive;
        a.parts
            .iter()
            .map(|p| {
                let ns = &self.board.nodes[p.node as usize];
                let g = if whole || p.gpus > 0 {
                    ns.cores as u64
                } else if d.mem_per_proc == 0 || ns.mem == 0 {
                    p.cores as u64
                } else {
                    (p.cores as u64).max(p.mem.div_ceil(d.mem_per_proc))
                };
                g.min(ns.cores as u64)
            })
            .sum()
    }

    /// The extra cores usable now, Σ min(free, extra) over the nodes that
    /// take jobs: all free cores but where the extra are fewer (the extra
    /// resources' own nodes; elsewhere they are what was free when worked
    /// out, and no node gave any back since).
    fn extra_now(&self) -> u64 {
        let (free, x) = (&self.free, &self.extra.v);
        let mut extra_now = self.free_cores;
        for &n in self.extra.own() {
            let n = n as usize;
            if self.usable[n] {
                extra_now -= (free.cores[n] - free.cores[n].min(x.cores[n])) as u64;
            }
        }
        debug_assert_eq!(
            extra_now,
            (0..free.cores.len()).filter(|&n| self.usable[n]).map(|n| free.cores[n].min(x.cores[n]) as u64).sum::<u64>()
        );
        extra_now
    }

    /// What is both free now and extra, node by node: the free view but where
    /// the extra resources may be fewer.
    fn build_view(&mut self) {
        let mut view = std::mem::take(&mut self.view);
        // the extra resources are those it was built from: only the nodes
        // the free view changed on since need it again (those the extra
        // resources changed on since changed the free view too, or were
        // clamped when a job started on them)
        let (free, x) = (&self.free, &self.extra.v);
        if self.view_epoch == Some(self.extra_epoch) && view.refresh(free, &self.index, |v, n| v.clamp_node(free, x, n)) {
            self.debug_check_view(&view);
            self.view = view;
            return;
        }
        self.view_epoch = Some(self.extra_epoch);
        view.sync(&self.free, &self.index);
        match self.extra.differs(&self.index) {
            Some(nodes) => {
                for n in nodes {
                    view.v.clamp_node(&self.free, &self.extra.v, n as usize);
                    view.set(n);
                }
            }
            // the free view changed on more nodes than it has since the
            // extra resources were worked out: every node
            None => {
                for n in 0..self.free.cores.len() as u32 {
                    view.v.clamp_node(&self.free, &self.extra.v, n as usize);
                    view.set(n);
                }
            }
        }
        self.debug_check_view(&view);
        self.view = view;
    }

    fn debug_check_view(&self, view: &Mirror) {
        debug_assert!(self.free.cores.len() > 4096 || {
            let mut w = self.free.clone();
            w.clamp_to(&self.extra.v);
            w == view.v
        });
    }

    /// EASY's backfilling when cores are interchangeable: the shadow is the first
    /// expected end at which enough cores are free for the head, the extra cores
    /// what it leaves; a job may start if it ends by the shadow or takes no more
    /// than the extra cores. The shadow and extra cores stay valid across the
    /// starts of the pass (a job ending by the shadow gives its cores back by
    /// then; one started on the extra cores uses them up), so they are kept
    /// until something else changes.
    pub(super) fn backfill_cores(
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
            if t.over_limit(job) {
                continue;
            }
            let Ok(a) = self.place_now(&self.demand[job.index()], &self.free, now) else {
                continue;
            };
            let by_shadow = now.saturating_add(scaled(t.queue.filed_at(p).1, a.factor)) <= shadow;
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
    pub(super) fn extra_now_taken(&self, a: &Allocation, from_extra: bool) -> u64 {
        a.parts
            .iter()
            .map(|p| {
                let (f, x) = (
                    self.free.cores[p.node as usize],
                    self.extra.v.cores[p.node as usize],
                );
                let x_after = if from_extra { x - p.cores } else { x };
                (f.min(x) - (f - p.cores).min(x_after)) as u64
            })
            .sum()
    }

    pub fn head_reservation(&self, now: Time, t: &JobTable) -> Option<(JobIdx, Time)> {
        let (_, head) = t.queue.head()?;
        if self
            .place_now(&self.demand[head.index()], &self.free, now)
            .is_ok()
        {
            return None;
        }
        let (mut scratch, mut bits) = (Mirror::default(), Vec::new());
        Some((head, self.shadow(now, head, t.get(head).need, &mut scratch, &mut bits).0))
    }
}

/// EASY's shadow on the nodes, its reservation and the extra resources (kept
/// in the engine's `extra`), kept while they hold: from one pass to the next
/// when only jobs arrived, and across running jobs that ended, when what they
/// gave back could not let the head start sooner nor change where first fit
/// places it at the shadow.
///
/// Why the second holds: the walk to the shadow gave back, in order of
/// expected end, what each running job holds, and placed the head at the
/// first instant it fit. A job that ends early gives back now what the walk
/// gave back at its expected end; if that is by the shadow, the walk reaches
/// the shadow with the same resources free, so the head gets the same
/// reservation there and the extra resources stay the same. Before the
/// shadow, what the head could take rose by at most what those jobs gave
/// back could add to it (`freed`, [`NodeEngine::gain`]); while `before +
/// freed` stays below its need it still fits nowhere sooner. (What the
/// passes started in between only took resources before the shadow, or took
/// extra ones.)
///
/// A job that was to end after the shadow gives back resources the walk did
/// not: the head still fits nowhere sooner, by the same bound, and fits at
/// the shadow. Where first fit placed it there, on nodes in order up to
/// `last`, a job all of whose nodes come after `last` leaves that placement
/// as it was, and what it gave back is extra: the engine adds it to the extra
/// resources. Any other such job ends the keeping (`late`).
///
/// A job a pass started on the extra resources since (`on_extra`) took them
/// from what the head did not need at the shadow: when it ends, whenever it
/// was to, the walk finds again what it found before that job started, and
/// what it gave back is extra again.
#[derive(Debug, Clone)]
pub(super) struct ShadowKept {
    version: u64,
    pub(super) head: JobIdx,
    shadow: Time,
    extra_now: u64,
    /// What the head could take at any instant before the shadow, at most
    /// (u64::MAX: nothing is kept across ends).
    before: u64,
    /// The last node of the head's reservation, where first fit placed it
    /// (u32::MAX otherwise).
    last: u32,
    /// Running jobs that ended since (each bumped the version), at most what
    /// they gave back adds to what the head could take, and whether one that
    /// was to end after the shadow gave back nodes first fit could have taken.
    ended: u64,
    freed: u64,
    late: bool,
    /// Jobs started on the extra resources since the shadow was worked out.
    pub(super) on_extra: Vec<JobIdx>,
}

/// How a kept shadow serves a pass ([`ShadowKept::holds`]).
pub(super) enum Reuse {
    /// Nothing changed but arrivals: the shadow and the extra cores usable now.
    Same(Time, u64),
    /// Running jobs ended, and the shadow holds: the extra cores usable now
    /// are worked out again.
    Freed(Time),
}

impl ShadowKept {
    fn new(version: u64, head: JobIdx, shadow: Time, extra_now: u64, before: u64, last: u32) -> ShadowKept {
        ShadowKept { version, head, shadow, extra_now, before, last, ended: 0, freed: 0, late: false, on_extra: Vec::new() }
    }

    /// The engine is at `version` after the pass that used it.
    fn kept(&mut self, version: u64, extra_now: u64) {
        self.before = self.before.saturating_add(self.freed);
        (self.version, self.extra_now, self.ended, self.freed, self.late) = (version, extra_now, 0, 0, false);
    }

    /// Running job `job` ended, expected to end at `end`, giving back `a`,
    /// which adds at most `gain` to what the head could take. True if what
    /// it gave back is extra too: it was started on the extra resources, or
    /// it was to end after the shadow, on nodes after the reservation's.
    pub(super) fn ended(&mut self, job: JobIdx, end: Time, a: &Allocation, gain: u64) -> bool {
        self.ended += 1;
        self.freed = self.freed.saturating_add(gain);
        if let Some(i) = self.on_extra.iter().position(|&j| j == job) {
            self.on_extra.swap_remove(i);
            return true;
        }
        if end <= self.shadow || self.late {
            return false;
        }
        self.late = !a.parts.iter().all(|p| p.node > self.last);
        !self.late
    }

    fn holds(&self, version: u64, head: JobIdx, need: u64, now: Time) -> Option<Reuse> {
        if head != self.head {
            return None;
        }
        if version == self.version {
            return Some(Reuse::Same(self.shadow, self.extra_now));
        }
        let only_ends = version == self.version + self.ended;
        let sooner = self.late || self.before.saturating_add(self.freed) >= need;
        (only_ends && !sooner && self.shadow > now).then_some(Reuse::Freed(self.shadow))
    }
}
