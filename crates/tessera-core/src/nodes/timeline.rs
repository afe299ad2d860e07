//! Conservative backfilling on nodes: what each node holds over time (running
//! jobs until their expected end, reservations made during the pass), and the
//! earliest window in which the board can place a job.

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
}

pub(super) struct Timeline {
    now: Time,
    cap: Free,
    occ: Vec<Vec<Occ>>,
    /// Every end of an occupation after now: the candidate start times.
    ends: Vec<Time>,
}

impl Timeline {
    pub fn new(board: &Board, _free: &Free, now: Time) -> Timeline {
        let cap = board.full();
        Timeline { now, occ: vec![Vec::new(); cap.cores.len()], cap, ends: Vec::new() }
    }

    pub fn occupy(&mut self, a: &Allocation, from: Time, to: Time) {
        for p in &a.parts {
            self.occ[p.node as usize].push(Occ { from, to, cores: p.cores, mem: p.mem });
        }
        if to > self.now {
            if let Err(i) = self.ends.binary_search(&to) {
                self.ends.insert(i, to);
            }
        }
    }

    /// What node `n` has free throughout [from, to).
    fn free_over(&self, n: usize, from: Time, to: Time) -> (u32, u64) {
        let occ = &self.occ[n];
        let mut most = (0u32, 0u64);
        let points = std::iter::once(from).chain(occ.iter().map(|o| o.from).filter(|&t| t > from && t < to));
        for t in points {
            let (mut c, mut m) = (0u32, 0u64);
            for o in occ {
                if o.from <= t && t < o.to {
                    c += o.cores;
                    m += o.mem;
                }
            }
            most = (most.0.max(c), most.1.max(m));
        }
        (self.cap.cores[n] - most.0, self.cap.mem[n].saturating_sub(most.1))
    }

    /// The earliest start and placement for a job limited to `est` reference
    /// seconds. At each candidate time the tiers of node speed are tried slowest
    /// first: with every node eligible, a job needs its nodes for ceil(est / f_min)
    /// seconds; when that fails, faster tiers need fewer, faster nodes for less
    /// time. Within a tier the board places as it always does (partition order,
    /// node sets), so a job that can start now lands where EASY would put it.
    pub fn earliest(&self, board: &Board, d: &Demand, est: Time) -> (Time, Allocation) {
        let part = &board.parts[d.part as usize];
        let mut view = Free { cores: vec![0; self.cap.cores.len()], mem: vec![0; self.cap.cores.len()] };
        let candidates = std::iter::once(self.now).chain(self.ends.iter().copied());
        for t in candidates {
            for &f in part.tiers.iter().rev() {
                let dur = footprint(scaled(est, f));
                let mut total = 0u64;
                for &n in &part.nodes {
                    let n = n as usize;
                    let (c, m) = if board.nodes[n].factor >= f { self.free_over(n, t, t + dur) } else { (0, 0) };
                    view.cores[n] = c;
                    view.mem[n] = m;
                    total += c as u64;
                }
                if total < d.procs as u64 {
                    continue;
                }
                if let Ok(a) = board.place(d, &view, t, &|n| board.nodes[n as usize].factor >= f) {
                    return (t, a);
                }
            }
        }
        // everything has ended; a DELAY node set may still wait to span sets
        let t = self.ends.last().copied().unwrap_or(self.now).max(d.submit + board.delay).max(self.now);
        let full = board.full();
        let a = board.place(d, &full, t, &|_| true).expect("every job fits once everything has ended");
        (t, a)
    }
}
