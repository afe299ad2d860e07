//! Advance reservations on the nodes (`crate::resv`): making and removing
//! them, their windows as placement sees them, and placement that respects
//! them.

use super::*;
use crate::resv::{Blocks, Reservation, ReservationSpec, ResvError, ResvNodes};

impl NodeEngine {
    pub(crate) fn reservations(&self) -> &[Reservation] {
        &self.resvs
    }

    /// Make a reservation (nodes picked or checked against the running jobs
    /// and the other reservations); returns its id.
    pub(crate) fn reserve(&mut self, now: Time, t: &JobTable, spec: ReservationSpec) -> Result<u32, ResvError> {
        if self.resvs.iter().any(|r| r.spec.name == spec.name) {
            return Err(ResvError::Duplicate(spec.name));
        }
        if spec.end <= spec.start {
            return Err(ResvError::Window { start: spec.start, end: spec.end });
        }
        if let Some(p) = spec.repeat.period() {
            if spec.end - spec.start >= p {
                return Err(ResvError::TooLong { len: spec.end - spec.start, period: p });
            }
        }
        let mut r = Reservation { id: self.next_resv, spec, nodes: Vec::new() };
        let Some((start, _)) = r.window_after(now) else {
            return Err(ResvError::Ended);
        };
        // running or suspended jobs expected on a node at the window's start
        let mut busy: Vec<Time> = vec![Time::MIN; self.board.nodes.len()];
        for (i, a) in self.alloc.iter().enumerate() {
            let Some(a) = a else { continue };
            let j = JobIdx(i as u32);
            let end = match t.state(j) {
                JobState::Suspended { .. } => Time::MAX,
                _ => t.get(j).expected_end,
            };
            for p in &a.parts {
                busy[p.node as usize] = busy[p.node as usize].max(end);
            }
        }
        let clash = |n: u32, r: &Reservation| -> Option<String> {
            self.resvs
                .iter()
                .filter(|o| !r.spec.maint && !o.spec.maint && o.nodes.contains(&n))
                .find(|o| o.overlaps(r, now))
                .map(|o| o.spec.name.clone())
        };
        match &r.spec.nodes {
            ResvNodes::List(list) => {
                if list.is_empty() {
                    return Err(ResvError::NoNodes);
                }
                for &n in list {
                    if n as usize >= self.board.nodes.len() {
                        return Err(ResvError::UnknownNode(n));
                    }
                    if !r.spec.ignore_jobs && busy[n as usize] > start {
                        return Err(ResvError::Busy { node: n, until: busy[n as usize] });
                    }
                    if let Some(other) = clash(n, &r) {
                        return Err(ResvError::Overlap { node: n, other });
                    }
                }
                let mut nodes = list.clone();
                nodes.sort_unstable();
                nodes.dedup();
                r.nodes = nodes;
            }
            ResvNodes::Count { count, features, partition } => {
                let from: Vec<u32> = match partition {
                    Some(p) => self.board.parts.get(*p as usize).map(|p| p.nodes.clone()).unwrap_or_default(),
                    None => (0..self.board.nodes.len() as u32).collect(),
                };
                let mut nodes: Vec<u32> = from
                    .into_iter()
                    .filter(|&n| {
                        let s = &self.board.nodes[n as usize];
                        features.iter().all(|f| s.features.iter().any(|g| g == f))
                            && self.status[n as usize].up
                            && (r.spec.ignore_jobs || busy[n as usize] <= start)
                            && clash(n, &r).is_none()
                    })
                    .take(*count as usize)
                    .collect();
                if nodes.len() < *count as usize || *count == 0 {
                    return Err(ResvError::NotEnough { wanted: *count, found: nodes.len() as u32 });
                }
                nodes.sort_unstable();
                r.nodes = nodes;
            }
        }
        let id = r.id;
        self.next_resv += 1;
        self.resvs.push(r);
        self.rebuild_blocks(now);
        Ok(id)
    }

    /// Remove a reservation; returns its id.
    pub(crate) fn unreserve(&mut self, now: Time, name: &str) -> Result<u32, ResvError> {
        let i = self.resvs.iter().position(|r| r.spec.name == name).ok_or_else(|| ResvError::Unknown(name.to_string()))?;
        let id = self.resvs.remove(i).id;
        self.rebuild_blocks(now);
        Ok(id)
    }

    /// Bring the windows up to `now`: reservations that ended for good leave
    /// (their ids are returned, for the jobs still waiting in them), recurring
    /// ones move on.
    pub(crate) fn refresh_blocks(&mut self, now: Time, t: &JobTable) -> Vec<u32> {
        if !self.resvs.is_empty() && !self.blocks.built {
            // read back: the demands' copies of their specs' estimate and
            // reservation are filled again
            for j in t.live() {
                let s = t.spec(j);
                let d = &mut self.demand[j.index()];
                d.est = s.estimate;
                d.resv = s.reservation;
            }
        }
        let gone: Vec<u32> = self.resvs.iter().filter(|r| r.window_after(now).is_none()).map(|r| r.id).collect();
        if !gone.is_empty() {
            self.resvs.retain(|r| !gone.contains(&r.id));
            self.rebuild_blocks(now);
        } else if !self.resvs.is_empty() && (!self.blocks.built || now >= self.blocks.refresh_at) {
            self.rebuild_blocks(now);
        }
        gone
    }

    fn rebuild_blocks(&mut self, now: Time) {
        self.version += 1;
        self.blocks = if self.resvs.is_empty() { Blocks::default() } else { Blocks::build(&self.resvs, self.board.nodes.len(), now) };
    }

    /// Some reservation keeps nodes from some jobs now or later.
    #[inline]
    pub(crate) fn reserving(&self) -> bool {
        self.blocks.any()
    }

    /// A reservation, and the fastest factor among its nodes.
    pub(crate) fn resv_of(&self, id: u32) -> Option<(&Reservation, f64)> {
        let r = self.resvs.iter().find(|r| r.id == id)?;
        let f = r.nodes.iter().map(|&n| self.board.nodes[n as usize].factor).fold(0.0, f64::max);
        Some((r, f))
    }

    /// Place `d` starting at `t` on `free`, on nodes that take jobs and on
    /// which no window of a reservation it is not in overlaps its run (and,
    /// in one, inside its window): the speed tiers are tried slowest first,
    /// each needing the nodes for as long as the estimate lasts there.
    pub(crate) fn place_windowed(&self, d: &Demand, free: &Free, t: Time, usable: &dyn Fn(u32) -> bool) -> Result<Allocation, Blocked> {
        let tiers = &self.board.parts[d.part as usize].tiers;
        let slowest = tiers.last().copied().unwrap_or(1.0);
        let mut last = Err(Blocked::Resources);
        for &f in tiers.iter().rev() {
            let end = t.saturating_add(scaled(d.est, f).max(1));
            let b = &self.blocks;
            let nodes = &self.board.nodes;
            let ok = |n: u32| usable(n) && (f <= slowest || nodes[n as usize].factor >= f) && b.ok(n, t, end, d.resv);
            match self.board.place(d, free, t, &ok) {
                Ok(a) => return Ok(a),
                Err(e) => last = Err(e),
            }
        }
        last
    }
}

impl NodeEngine {
    /// A queued job no longer runs in a reservation: its demand is plain
    /// now, and so may be the key it is filed under.
    pub(crate) fn leave_reservation(&mut self, t: &mut JobTable, job: JobIdx) {
        self.demand[job.index()].resv = None;
        t.queue.set_key(job, self.filed_key(&self.demand[job.index()]));
    }
}

impl NodeEngine {
    /// Why a pending job waits, where a reservation is the reason: its own
    /// window has not come (or has no room), or a maintenance window keeps it
    /// from what is free now.
    pub(crate) fn resv_reason(&self, now: Time, d: &Demand) -> Option<PendingReason> {
        if !self.reserving() {
            return None;
        }
        if let Some(id) = d.resv {
            let r = self.resvs.iter().find(|r| r.id == id)?;
            let (start, _) = r.window_after(now)?;
            return Some(PendingReason::Reservation { start });
        }
        let usable = &self.usable;
        if self.place_windowed(d, &self.free, now, &|n| usable[n as usize]).is_ok()
            || self.board.place(d, &self.free, now, &|n| usable[n as usize]).is_err()
        {
            return None;
        }
        let slowest = self.board.parts[d.part as usize].tiers.last().copied().unwrap_or(1.0);
        let end = now.saturating_add(scaled(d.est, slowest).max(1));
        let maint = self
            .resvs
            .iter()
            .filter(|r| r.spec.maint)
            .any(|r| r.windows(now, end).iter().any(|&(s, _)| s < end));
        maint.then_some(PendingReason::Maintenance)
    }
}
