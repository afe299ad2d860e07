//! Conservative backfilling on nodes: what each node holds over time (running
//! jobs until their expected end, reservations made during the pass), and the
//! earliest window in which the board can place a job.
//!
//! The pass first asks the aggregate profile (free cores of the whole machine
//! over time), which is exact on one node and a necessary condition on many; the
//! timeline then checks node by node from the earliest instant the aggregate
//! allows.

use super::board::{Allocation, Board, Demand, Free};
use crate::job::scaled;
use crate::profile::footprint;
use crate::Time;

#[derive(Debug, Clone, Copy)]
struct Occ {
    from: Time,
    to: Time,
    cores: u32,
    mem: u64,
    gpus: u32,
}

pub(super) struct Timeline {
    now: Time,
    cap: Free,
    occ: Vec<Vec<Occ>>,
    /// Every end of an occupation after now: the candidate start times.
    ends: Vec<Time>,
}

impl Timeline {
    pub fn new(board: &Board, now: Time) -> Timeline {
        let cap = board.full();
        Timeline {
            now,
            occ: vec![Vec::new(); cap.cores.len()],
            cap,
            ends: Vec::new(),
        }
    }

    pub fn occupy(&mut self, a: &Allocation, from: Time, to: Time) {
        for p in &a.parts {
            self.occ[p.node as usize].push(Occ {
                from,
                to,
                cores: p.cores,
                mem: p.mem,
                gpus: p.gpus,
            });
        }
        if to > self.now {
            if let Err(i) = self.ends.binary_search(&to) {
                self.ends.insert(i, to);
            }
        }
    }

    /// What node `n` has free throughout [from, to).
    fn free_over(&self, n: usize, from: Time, to: Time) -> (u32, u64, u32) {
        let occ = &self.occ[n];
        let mut most = (0u32, 0u64, 0u32);
        let points =
            std::iter::once(from).chain(occ.iter().map(|o| o.from).filter(|&t| t > from && t < to));
        for (k, t) in points.enumerate() {
            let (mut c, mut m, mut g) = (0u32, 0u64, 0u32);
            for o in occ {
                if o.from <= t && t < o.to {
                    c += o.cores;
                    m += o.mem;
                    g += o.gpus;
                }
            }
            most = (most.0.max(c), most.1.max(m), most.2.max(g));
            if k == 0 && most.0 >= self.cap.cores[n] {
                // every core is taken at the start: the node gives nothing
                return (0, 0, 0);
            }
        }
        (
            self.cap.cores[n] - most.0,
            self.cap.mem[n].saturating_sub(most.1),
            self.cap.gpus[n] - most.2,
        )
    }

    /// The earliest start at or after `from` (and placement) for a job limited to
    /// `est` reference seconds, with its window ending by `limit`. At each
    /// candidate time the tiers of node speed are tried slowest first: with every
    /// node eligible, a job needs its nodes for ceil(est / f_min) seconds; when
    /// that fails, faster tiers need fewer, faster nodes for less time. Within a
    /// tier the board places as it always does (partition order, node sets), so a
    /// job that can start now lands where EASY would put it.
    pub fn earliest_between(
        &self,
        board: &Board,
        d: &Demand,
        est: Time,
        from: Time,
        limit: Time,
        usable: &dyn Fn(u32) -> bool,
    ) -> Option<(Time, Allocation)> {
        let part = &board.parts[d.part as usize];
        let n_all = self.cap.cores.len();
        let mut view = Free {
            cores: vec![0; n_all],
            mem: vec![0; n_all],
            gpus: vec![0; n_all],
        };
        let candidates = std::iter::once(self.now)
            .chain(self.ends.iter().copied())
            .filter(|&t| t >= from);
        for t in candidates {
            if t >= limit {
                break;
            }
            for &f in part.tiers.iter().rev() {
                let dur = footprint(scaled(est, f));
                if t.saturating_add(dur) > limit {
                    continue;
                }
                let mut total = 0u64;
                for &n in &part.nodes {
                    let n = n as usize;
                    let (c, m, g) = if board.nodes[n].factor >= f && usable(n as u32) {
                        self.free_over(n, t, t + dur)
                    } else {
                        (0, 0, 0)
                    };
                    view.cores[n] = c;
                    view.mem[n] = m;
                    view.gpus[n] = g;
                    total += c as u64;
                }
                if total < d.procs as u64 {
                    continue;
                }
                if let Ok(a) = board.place(d, &view, t, &|n| {
                    board.nodes[n as usize].factor >= f && usable(n)
                }) {
                    return Some((t, a));
                }
            }
        }
        None
    }

    /// The earliest start and placement with no limit: once everything has ended
    /// the job fits (a DELAY node set may still wait to span sets).
    pub fn earliest(
        &self,
        board: &Board,
        d: &Demand,
        est: Time,
        usable: &dyn Fn(u32) -> bool,
    ) -> (Time, Allocation) {
        if let Some(found) = self.earliest_between(board, d, est, self.now, Time::MAX, usable) {
            return found;
        }
        let t = self
            .ends
            .last()
            .copied()
            .unwrap_or(self.now)
            .max(d.submit.saturating_add(board.delay))
            .max(self.now);
        let full = board.full();
        // nodes that are down or drained stay so in the plan; a job no usable node
        // can hold is planned on the whole machine
        let a = board
            .place(d, &full, t, usable)
            .or_else(|_| board.place(d, &full, t, &|_| true))
            .expect("every job fits once everything has ended");
        (t, a)
    }
}
