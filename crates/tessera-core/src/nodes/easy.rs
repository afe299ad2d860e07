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
    pub(super) fn shadow(
        &self,
        now: Time,
        head: JobIdx,
        head_need: u64,
        scratch: &mut Mirror,
        bits: &mut Vec<u64>,
    ) -> (Time, Allocation) {
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
                        return (bounds[bi], a);
                    }
                }
                bi += 1;
            }
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
                    return (t, a);
                }
            }
        }
        // everything has ended; a DELAY node set may still have to wait to
        // span, a reservation's window to end
        let t = last.max(d.submit.saturating_add(self.board.delay));
        let later = bounds[bi..].iter().copied().filter(|&b| b > t);
        for t in std::iter::once(t).chain(later) {
            if let Ok(a) = place(scratch, bits, t) {
                return (t, a);
            }
        }
        // no usable node can ever hold it (down or drained nodes, windows):
        // nothing may start before it, as with a reservation at the end of time
        (Time::MAX, Allocation::default())
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
        let (shadow, mut extra_now) = match self.shadow_cache {
            Some((v, h, shadow, extra_now)) if self.shortcuts && v == self.version && h == head && !overdue => (shadow, extra_now),
            _ => {
                let (mut scratch, mut bits) = (std::mem::take(&mut self.scratch), std::mem::take(&mut self.scratch_bits));
                let (shadow, reserved) = self.shadow(now, head, head_need, &mut scratch, &mut bits);
                // the extra resources: free at the shadow time, less the head's
                // reservation; they differ from what is free now on the nodes
                // given back by then and those reserved
                let mut extra = std::mem::take(&mut self.extra);
                extra.sync(&self.free, &self.index);
                for &n in scratch.own() {
                    extra.copy_node(&scratch.v, n);
                    extra.set(n);
                }
                extra.v.take(&reserved);
                for p in &reserved.parts {
                    extra.set(p.node);
                }
                (self.scratch, self.scratch_bits, self.extra) = (scratch, bits, extra);
                // the extra cores usable now, Σ min(free, extra) over the nodes
                // that take jobs: all free cores but where the extra are fewer
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
                self.shadow_cache = Some((self.version, head, shadow, extra_now));
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
        loop {
            let ft = self.free_cores;
            let xc = extra_now;
            let found = t
                .queue
                .find_first(pos, |n, e| n <= ft && (e <= est_lim || n <= xc));
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
                    self.extra.v.take(&b);
                    for p in &b.parts {
                        self.extra.set(p.node);
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
        // back by the shadow, one on the extra resources took them from what
        // the head does not need, and first fit takes the same there): kept
        // until something else changes, as for interchangeable cores
        if self.indexed(&self.demand[head.index()]) && !self.placement_varies() {
            self.shadow_cache = Some((self.version, head, shadow, extra_now));
        }
    }

    /// What is both free now and extra, node by node: the free view but where
    /// the extra resources may be fewer.
    fn build_view(&mut self) {
        let mut view = std::mem::take(&mut self.view);
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
        debug_assert!(self.free.cores.len() > 4096 || {
            let mut w = self.free.clone();
            w.clamp_to(&self.extra.v);
            w == view.v
        });
        self.view = view;
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
