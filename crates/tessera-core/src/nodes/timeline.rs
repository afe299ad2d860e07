//! Conservative backfilling on nodes: what each node holds over time (running
//! jobs until their expected end, reservations made during the pass), and the
//! earliest window in which the board can place a job.
//!
//! The pass first asks the aggregate profile (free cores of the whole machine
//! over time), which is exact on one node and a necessary condition on many; the
//! timeline then checks node by node from the earliest instant the aggregate
//! allows.
//!
//! A candidate instant costs the nodes that change, not the whole machine: the
//! timeline keeps what every node has free at a cursor instant, moved over the
//! sorted boundaries of the occupations (forward or back). Over a window
//! [t, t + d) a node has what it has at t unless an occupation starts on it
//! inside the window (running jobs all started before; only reservations made
//! during the pass can), and only those few nodes are worked out in full.

use super::board::{Allocation, Board, Demand, Free, Misses};
use crate::resv::Blocks;
use crate::job::scaled;
use crate::profile::{footprint, Profile};
use crate::Time;
use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Included};

#[derive(Debug, Clone, Copy)]
struct Occ {
    from: Time,
    to: Time,
    cores: u32,
    mem: u64,
    gpus: u32,
}

/// The most emptied lists of boundaries a timeline keeps for later passes,
/// and the most room a list kept may have (together at most 2 MB).
const SPARE_EDGE_LISTS: usize = 4096;
const SPARE_EDGES_ROOM: usize = 16;

/// One boundary of an occupation: at `t` it starts (`add`) or ends on `node`.
#[derive(Debug, Clone, Copy)]
struct Edge {
    t: Time,
    node: u32,
    add: bool,
    cores: u32,
    mem: u64,
    gpus: u32,
}

/// What every node holds and has free at now, as the cursor keeps it there.
#[derive(Debug, Clone, Default)]
struct AtNow {
    held: Vec<(u32, u64, u32)>,
    at: Free,
    total: u64,
    nonzero: Vec<u64>,
    live: usize,
}

/// Built again at every pass on the timeline, in the buffers of the last
/// ([`Timeline::reset`]): a pass allocates only where it outgrows them.
#[derive(Debug, Clone, Default)]
pub(super) struct Timeline {
    now: Time,
    cap: Free,
    usable: Vec<bool>,
    occ: Vec<Vec<Occ>>,
    /// Every end of an occupation after now: the candidate start times.
    ends: Vec<Time>,
    /// Boundaries after now of what was there before the first search, in time
    /// order (`base[..base_applied]` are at or before the cursor), and of what
    /// was added since (per instant, in the order added). The
    /// boundaries at or before the cursor are counted in `held`.
    base: Vec<Edge>,
    base_applied: usize,
    edges: BTreeMap<Time, Vec<Edge>>,
    /// The lists of `edges` of earlier passes, emptied, for its new instants
    /// (a pass then allocates few for them): at most [`SPARE_EDGE_LISTS`]
    /// lists of at most [`SPARE_EDGES_ROOM`] boundaries each.
    spare_edges: Vec<Vec<Edge>>,
    cursor: Time,
    /// Starts of occupations after now, in time order.
    starts: Vec<(Time, u32)>,
    /// What each node holds at the cursor.
    held: Vec<(u32, u64, u32)>,
    /// What each node has free at the cursor: nothing on a node out of service
    /// or with no core free.
    at: Free,
    /// Free cores at the cursor over every node.
    total: u64,
    /// The nodes with a free core at the cursor, one bit each (and, once
    /// `lean` is set, memory for a core of `lean` MiB).
    nonzero: Vec<u64>,
    /// The bits set in `nonzero`.
    live: usize,
    /// The least memory per core of any queued job (MiB), once the pass has
    /// worked it out for [`Frugal`]; 0 before.
    lean: u64,
    /// Per partition, whether its nodes are in index order (for a partition of
    /// every node, the nodes with a free core can then be visited in partition
    /// order from `nonzero`).
    in_order: Vec<bool>,
    /// Nodes already worked out for the window at hand.
    seen: Vec<bool>,
    /// The cursor's state at now, from the first search on: a seek back to
    /// near now starts from a copy of it rather than undoing every boundary
    /// on the way.
    at_now: Option<AtNow>,
    /// Whether `base`, `starts` and `ends` are sorted (from the first search on).
    settled: bool,
    /// Per candidate instant, the demands known to find no window starting
    /// there: the timeline only fills, so a demand at least as large and as
    /// long finds none either.
    misses: BTreeMap<Time, Misses>,
    shortcuts: bool,
    /// Reservations' windows, node by node (None: there are none).
    pub(super) windows: Option<Blocks>,
}

impl Timeline {
    /// Start the timeline of a pass at `now`: nothing held on any node, the
    /// nodes `usable` says take jobs, and the windows of the reservations.
    pub fn reset(
        &mut self,
        board: &Board,
        now: Time,
        usable: &dyn Fn(u32) -> bool,
        shortcuts: bool,
        windows: Option<Blocks>,
    ) {
        self.cap.copy_from(&board.empty);
        let n = self.cap.cores.len();
        self.usable.clear();
        self.usable.extend((0..n as u32).map(usable));
        self.at.copy_from(&self.cap);
        self.total = 0;
        self.nonzero.clear();
        self.nonzero.resize(n.div_ceil(64), 0);
        for (i, &ok) in self.usable.iter().enumerate() {
            if !ok || self.cap.cores[i] == 0 {
                self.at.cores[i] = 0;
                self.at.mem[i] = 0;
                self.at.gpus[i] = 0;
            } else {
                self.nonzero[i / 64] |= 1 << (i % 64);
            }
            self.total += self.at.cores[i] as u64;
        }
        self.live = self.nonzero.iter().map(|w| w.count_ones() as usize).sum();
        self.lean = 0;
        self.in_order.clear();
        self.in_order.extend(board.parts.iter().map(|p| p.nodes.windows(2).all(|w| w[0] < w[1])));
        self.now = now;
        self.occ.resize_with(n, Vec::new);
        for o in &mut self.occ {
            o.clear();
        }
        self.held.clear();
        self.held.resize(n, (0, 0, 0));
        // a reservation's window begins or ends: a job may start then
        self.ends.clear();
        if let Some(w) = &windows {
            self.ends.extend(w.bounds.iter().copied().filter(|&b| b > now));
        }
        self.windows = windows;
        self.base.clear();
        self.base_applied = 0;
        for (_, mut list) in std::mem::take(&mut self.edges) {
            // (bounded: small lists, and not too many, so that the room kept
            // cannot grow with the longest pass seen)
            if list.capacity() <= SPARE_EDGES_ROOM && self.spare_edges.len() < SPARE_EDGE_LISTS {
                list.clear();
                self.spare_edges.push(list);
            }
        }
        self.cursor = now;
        self.starts.clear();
        self.seen.clear();
        self.seen.resize(n, false);
        self.settled = false;
        self.at_now = None;
        self.misses.clear();
        self.shortcuts = shortcuts;
    }

    pub fn occupy(&mut self, a: &Allocation, from: Time, to: Time) {
        for p in &a.parts {
            let o = Occ {
                from,
                to,
                cores: p.cores,
                mem: p.mem,
                gpus: p.gpus,
            };
            self.occ[p.node as usize].push(o);
            let edge = |t, add| Edge {
                t,
                node: p.node,
                add,
                cores: p.cores,
                mem: p.mem,
                gpus: p.gpus,
            };
            if from <= self.now {
                self.apply(&edge(from, true));
                self.at_now(|tl| tl.apply(&edge(from, true)));
            } else {
                self.insert(edge(from, true));
                if self.settled {
                    let i = self.starts.partition_point(|s| s.0 <= from);
                    self.starts.insert(i, (from, p.node));
                } else {
                    self.starts.push((from, p.node));
                }
            }
            if to != Time::MAX {
                self.insert(edge(to, false));
            }
        }
        if to > self.now {
            if !self.settled {
                self.ends.push(to);
            } else if let Err(i) = self.ends.binary_search(&to) {
                self.ends.insert(i, to);
            }
        }
    }

    /// Sort what was built before the first search (one sort instead of an
    /// insertion per occupation).
    fn settle(&mut self) {
        if !self.settled {
            self.settled = true;
            self.base.sort_unstable_by_key(|e| e.t);
            self.starts.sort_by_key(|s| s.0);
            self.ends.sort_unstable();
            self.ends.dedup();
            // the cursor is at now: nothing after it is applied yet
            let mut snap = self.at_now.take().unwrap_or_default();
            self.save_state(&mut snap);
            self.at_now = Some(snap);
        }
    }

    /// Run `f` on the state at now in place of the cursor's (if taken).
    fn at_now(&mut self, f: impl FnOnce(&mut Timeline)) {
        let Some(mut s) = self.at_now.take() else { return };
        self.swap_state(&mut s);
        f(self);
        self.swap_state(&mut s);
        self.at_now = Some(s);
    }

    /// Copy the cursor's state into `s`.
    fn save_state(&self, s: &mut AtNow) {
        s.held.clone_from(&self.held);
        s.at.copy_from(&self.at);
        s.nonzero.clone_from(&self.nonzero);
        (s.total, s.live) = (self.total, self.live);
    }

    fn swap_state(&mut self, s: &mut AtNow) {
        std::mem::swap(&mut self.held, &mut s.held);
        std::mem::swap(&mut self.at, &mut s.at);
        std::mem::swap(&mut self.nonzero, &mut s.nonzero);
        std::mem::swap(&mut self.total, &mut s.total);
        std::mem::swap(&mut self.live, &mut s.live);
    }

    fn insert(&mut self, e: Edge) {
        if !self.settled {
            // while building the cursor is at now and every boundary is later
            self.base.push(e);
            return;
        }
        // a reservation's nodes share its two boundaries: one entry each
        let spare = &mut self.spare_edges;
        self.edges.entry(e.t).or_insert_with(|| spare.pop().unwrap_or_default()).push(e);
        if e.t <= self.cursor {
            self.apply(&e);
        }
    }

    fn apply(&mut self, e: &Edge) {
        let n = e.node as usize;
        let h = &mut self.held[n];
        if e.add {
            *h = (h.0 + e.cores, h.1 + e.mem, h.2 + e.gpus);
        } else {
            *h = (h.0 - e.cores, h.1 - e.mem, h.2 - e.gpus);
        }
        let h = *h;
        self.total -= self.at.cores[n] as u64;
        let (c, m, g) = if !self.usable[n] || h.0 >= self.cap.cores[n] {
            (0, 0, 0)
        } else {
            (
                self.cap.cores[n] - h.0,
                self.cap.mem[n].saturating_sub(h.1),
                self.cap.gpus[n].saturating_sub(h.2),
            )
        };
        self.at.cores[n] = c;
        self.at.mem[n] = m;
        self.at.gpus[n] = g;
        self.total += c as u64;
        let bit = 1u64 << (n % 64);
        let was = self.nonzero[n / 64] & bit != 0;
        if self.holds_some(n) {
            self.nonzero[n / 64] |= bit;
            self.live += usize::from(!was);
        } else {
            self.nonzero[n / 64] &= !bit;
            self.live -= usize::from(was);
        }
    }

    /// Whether node `n` may give a queued job something at the cursor: a free
    /// core, and memory for it where the least any job asks is known.
    #[inline]
    fn holds_some(&self, n: usize) -> bool {
        self.at.cores[n] > 0 && (self.lean == 0 || self.cap.mem[n] == 0 || self.at.mem[n] >= self.lean)
    }

    fn unapply(&mut self, e: &Edge) {
        self.apply(&Edge { add: !e.add, ..*e });
    }

    /// Move the cursor to `t` (forward or back).
    fn seek(&mut self, t: Time) {
        // back to nearer now than the cursor (counting the running jobs'
        // ends): start again from now
        let nearer_now = t < self.cursor && {
            let behind = self.base.partition_point(|e| e.t <= t);
            behind < self.base_applied - behind
        };
        if nearer_now {
            if let Some(mut snap) = self.at_now.take() {
                // the cursor takes the state at now, which keeps a copy
                self.swap_state(&mut snap);
                self.save_state(&mut snap);
                self.at_now = Some(snap);
                self.base_applied = 0;
                self.cursor = self.now;
            }
        }
        while self.base_applied < self.base.len() && self.base[self.base_applied].t <= t {
            let e = self.base[self.base_applied];
            self.apply(&e);
            self.base_applied += 1;
        }
        while self.base_applied > 0 && self.base[self.base_applied - 1].t > t {
            self.base_applied -= 1;
            let e = self.base[self.base_applied];
            self.unapply(&e);
        }
        let (c, mut edges) = (self.cursor, std::mem::take(&mut self.edges));
        if t > c {
            for e in edges.range((Excluded(c), Included(t))).flat_map(|x| x.1) {
                self.apply(e);
            }
        } else if t < c {
            for e in edges.range((Excluded(t), Included(c))).rev().flat_map(|x| x.1.iter().rev()) {
                self.unapply(e);
            }
        }
        std::mem::swap(&mut self.edges, &mut edges);
        self.cursor = t;
    }

    /// Place `d` over [t, end) on the nodes of speed at least `f`, each node's
    /// free share worked out from its occupations alone (no cursor, no
    /// skipping): what the engine without shortcuts uses, so that the property
    /// tests compare the fast search with it.
    fn place_naive(
        &self,
        board: &Board,
        d: &Demand,
        t: Time,
        end: Time,
        f: f64,
    ) -> Option<Allocation> {
        let n_all = self.cap.cores.len();
        let mut view = Free {
            cores: vec![0; n_all],
            mem: vec![0; n_all],
            gpus: vec![0; n_all],
        };
        let w = &self.windows;
        let ok = |n: u32| {
            board.nodes[n as usize].factor >= f && self.usable[n as usize] && w.as_ref().is_none_or(|w| w.ok(n, t, end, d.resv))
        };
        for &n in &board.parts[d.part as usize].nodes {
            if ok(n) {
                let (c, m, g) = self.free_over(n as usize, t, end);
                view.cores[n as usize] = c;
                view.mem[n as usize] = m;
                view.gpus[n as usize] = g;
            }
        }
        board.place(d, &view, t, &ok).ok()
    }

    /// What node `n` has free throughout [from, to).
    fn free_over(&self, n: usize, from: Time, to: Time) -> (u32, u64, u32) {
        let occ = &self.occ[n];
        let mut most = (0u32, 0u64, 0u32);
        let points =
            std::iter::once(from).chain(occ.iter().map(|o| o.from).filter(|&t| t > from && t < to));
        for t in points {
            let (c, m, g) = held_at(occ, t);
            most = (most.0.max(c), most.1.max(m), most.2.max(g));
            if most.0 >= self.cap.cores[n] {
                // every core is taken at some instant: the node gives nothing
                // (no task runs without a core, whatever memory is left)
                return (0, 0, 0);
            }
        }
        (
            self.cap.cores[n] - most.0,
            self.cap.mem[n].saturating_sub(most.1),
            self.cap.gpus[n].saturating_sub(most.2),
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
        &mut self,
        board: &Board,
        d: &Demand,
        est: Time,
        from: Time,
        limit: Time,
    ) -> Option<(Time, Allocation)> {
        self.settle();
        let misses = std::mem::take(&mut self.misses);
        let mut missed = Vec::new();
        let found = self.search(board, d, est, from, limit, &misses, &mut missed);
        self.misses = misses;
        for t in missed {
            self.misses
                .entry(t)
                .or_insert_with(|| Misses::new(true))
                .record(board, d, est);
        }
        found
    }

    /// `earliest_between` over the candidates; the instants at which `d` found
    /// nothing go to `missed` (when shortcuts are on).
    #[allow(clippy::too_many_arguments)]
    fn search(
        &mut self,
        board: &Board,
        d: &Demand,
        est: Time,
        from: Time,
        limit: Time,
        misses: &BTreeMap<Time, Misses>,
        missed: &mut Vec<Time>,
    ) -> Option<(Time, Allocation)> {
        let part = &board.parts[d.part as usize];
        let whole = part.nodes.len() == self.cap.cores.len();
        // the board would skip every node with no free core: visit only the others
        let sparse = d.sets.is_none() && whole && self.in_order[d.part as usize];
        let f_min = part.tiers.last().copied().unwrap_or(1.0);
        let mut masked = Free::default();
        let mut patched: Vec<(usize, (u32, u64, u32))> = Vec::new();
        // the candidates: now, then every end at or after `from`
        let mut k = self.ends.partition_point(|&e| e < from);
        let mut next = (from <= self.now).then_some(self.now);
        let mut known = misses.range(from.min(self.now)..).peekable();
        loop {
            let t = match next.take() {
                Some(t) => t,
                None => match self.ends.get(k) {
                    Some(&e) => {
                        k += 1;
                        e
                    }
                    None => break,
                },
            };
            if t >= limit {
                break;
            }
            while known.next_if(|m| *m.0 < t).is_some() {}
            if known.peek().is_some_and(|m| *m.0 == t && m.1.known(board, d, est)) {
                continue;
            }
            self.seek(t);
            for &f in part.tiers.iter().rev() {
                let dur = footprint(scaled(est, f));
                if t.saturating_add(dur) > limit {
                    continue;
                }
                let end = t + dur;
                if !self.shortcuts {
                    // the reference: every node of the partition worked out in full
                    if let Some(a) = self.place_naive(board, d, t, end, f) {
                        return Some((t, a));
                    }
                    continue;
                }
                // nodes on which a reservation starts inside the window hold the
                // most at some instant after t: work them out in full
                let lo = self.starts.partition_point(|s| s.0 <= t);
                let hi = self.starts.partition_point(|s| s.0 < end);
                patched.clear();
                let mut total = self.total;
                // a node with nothing free at t (for any queued job) has nothing
                // over the window: where the window holds more starts than
                // nodes have something, look for starts on those nodes instead
                let few = self.live < hi - lo;
                let mut by_start = self.starts[lo..hi].iter().map(|s| s.1);
                let mut by_node = ones(&self.nonzero);
                loop {
                    let n = if few {
                        let Some(n) = by_node.next() else { break };
                        if !self.occ[n as usize].iter().any(|o| o.from > t && o.from < end) {
                            continue;
                        }
                        n as usize
                    } else {
                        let Some(n) = by_start.next() else { break };
                        n as usize
                    };
                    if self.seen[n] || !self.holds_some(n) {
                        continue;
                    }
                    self.seen[n] = true;
                    let v = self.free_over(n, t, end);
                    patched.push((n, (self.at.cores[n], self.at.mem[n], self.at.gpus[n])));
                    total = total - self.at.cores[n] as u64 + v.0 as u64;
                    self.at.cores[n] = v.0;
                    self.at.mem[n] = v.1;
                    self.at.gpus[n] = v.2;
                }
                let all_fast = f <= f_min;
                let eligible = |n: u32| board.nodes[n as usize].factor >= f;
                let view = if all_fast {
                    &self.at
                } else {
                    masked.copy_from(&self.at);
                    for n in 0..masked.cores.len() {
                        if !eligible(n as u32) {
                            masked.cores[n] = 0;
                            masked.mem[n] = 0;
                            masked.gpus[n] = 0;
                        }
                    }
                    &masked
                };
                if !(all_fast && whole) {
                    total = part.nodes.iter().map(|&n| view.cores[n as usize] as u64).sum();
                }
                let found = if total < d.procs as u64 {
                    None
                } else {
                    let (usable, w) = (&self.usable, &self.windows);
                    let ok = |n: u32| eligible(n) && usable[n as usize] && w.as_ref().is_none_or(|w| w.ok(n, t, end, d.resv));
                    if sparse {
                        board.pick_in(d, view, ones(&self.nonzero), &ok)
                    } else {
                        board.place(d, view, t, &ok).ok()
                    }
                };
                for &(n, (c, m, g)) in &patched {
                    self.seen[n] = false;
                    self.at.cores[n] = c;
                    self.at.mem[n] = m;
                    self.at.gpus[n] = g;
                }
                if let Some(a) = found {
                    return Some((t, a));
                }
            }
            if self.shortcuts {
                missed.push(t);
            }
        }
        None
    }

    /// The earliest start and placement with no limit: once everything has ended
    /// the job fits (a DELAY node set may still wait to span sets).
    pub fn earliest(&mut self, board: &Board, d: &Demand, est: Time) -> (Time, Allocation) {
        self.settle();
        let now = self.now;
        if let Some(found) = self.earliest_between(board, d, est, now, Time::MAX) {
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
        let usable = &self.usable;
        let a = board
            .place(d, &full, t, &|n| usable[n as usize])
            .or_else(|_| board.place(d, &full, t, &|_| true))
            .expect("every job fits once everything has ended");
        (t, a)
    }
}

/// What the most frugal pending job could use, over time: on each node the
/// cores it could take with `per_core` MiB each (the least any pending job asks
/// per core), summed over the machine, as the timeline stands (`docs/semantics.md`:
/// where this falls below the smallest need, no job fits).
pub(super) struct Frugal {
    per_core: u64,
    pub profile: Profile,
    /// Scratch: the instants a reservation's window is cut at on a node.
    points: Vec<Time>,
}

impl Timeline {
    /// What node `n` could give a job of `per_core` MiB a core, with `held` taken.
    fn frugal_of(&self, n: usize, held: (u32, u64), per_core: u64) -> i64 {
        if !self.usable[n] || held.0 >= self.cap.cores[n] {
            return 0;
        }
        let c = (self.cap.cores[n] - held.0) as u64;
        let m = self.cap.mem[n];
        (if m == 0 { c } else { c.min(m.saturating_sub(held.1) / per_core) }) as i64
    }

    /// The frugal profile of what the timeline holds now, and the first instant
    /// at which it is below `p_min`: one sweep over the boundaries after now,
    /// in time order.
    pub fn frugal(&mut self, per_core: u64, p_min: i64, mut profile: Profile) -> (Frugal, Option<Time>) {
        self.settle();
        // what every node holds at now, from the copy kept there: the cursor
        // stays where the searches left it (moving it back to now and out
        // again cost one pass over every boundary before it)
        let mut held = match &self.at_now {
            Some(s) => s.held.clone(),
            None => {
                self.seek(self.now);
                self.held.clone()
            }
        };
        let free_now = (0..held.len()).map(|n| self.frugal_of(n, (held[n].0, held[n].1), per_core)).sum();
        let mut steps: Vec<(Time, i64)> = Vec::new();
        let mut later = self.edges.values().flatten().peekable();
        let mut base = self.base.iter().peekable();
        loop {
            // the two sorted lists merged in time order
            let e = match (base.peek(), later.peek()) {
                (Some(a), Some(b)) if a.t > b.t => later.next(),
                (Some(_), _) => base.next(),
                (None, _) => later.next(),
            };
            let Some(e) = e else { break };
            let n = e.node as usize;
            let h = &mut held[n];
            let before = self.frugal_of(n, (h.0, h.1), per_core);
            *h = if e.add { (h.0 + e.cores, h.1 + e.mem, h.2) } else { (h.0 - e.cores, h.1 - e.mem, h.2) };
            let d = self.frugal_of(n, (h.0, h.1), per_core) - before;
            match steps.last_mut() {
                Some(s) if s.0 == e.t => s.1 += d,
                _ if d != 0 => steps.push((e.t, d)),
                _ => {}
            }
        }
        let below = profile.from_steps(self.now, free_now, &steps, p_min);
        // from now on the nodes a search visits are those with memory for a
        // core of the most frugal job (the others give every job nothing)
        self.lean = per_core;
        let lean = |tl: &mut Timeline| {
            for n in 0..tl.at.cores.len() {
                if !tl.holds_some(n) {
                    tl.nonzero[n / 64] &= !(1u64 << (n % 64));
                }
            }
            tl.live = tl.nonzero.iter().map(|w| w.count_ones() as usize).sum();
        };
        lean(self);
        self.at_now(lean);
        (Frugal { per_core, profile, points: Vec::new() }, below)
    }

    /// `a`, just occupied over [from, to), takes from the frugal profile what it
    /// takes on each of its nodes; the first instant it leaves below `p_min`.
    pub fn frugal_take(&self, f: &mut Frugal, a: &Allocation, from: Time, to: Time, p_min: i64) -> Option<Time> {
        let mut below: Option<Time> = None;
        let mut points = std::mem::take(&mut f.points);
        for p in &a.parts {
            let n = p.node as usize;
            // the occupation itself is the node's last
            let others = &self.occ[n][..self.occ[n].len() - 1];
            points.clear();
            points.push(from);
            for o in others {
                points.extend([o.from, o.to].into_iter().filter(|&x| x > from && x < to));
            }
            points.sort_unstable();
            points.dedup();
            for (k, &x) in points.iter().enumerate() {
                let y = points.get(k + 1).copied().unwrap_or(to);
                let held = held_at(others, x);
                let held = (held.0, held.1);
                let take = self.frugal_of(n, held, f.per_core) - self.frugal_of(n, (held.0 + p.cores, held.1 + p.mem), f.per_core);
                if take > 0 {
                    let pos = f.profile.segment_at(x, &[]);
                    if let Some(b) = f.profile.reserve(pos, y - x, take as u64, p_min, &[]) {
                        below = Some(below.map_or(b, |c| c.min(b)));
                    }
                }
            }
        }
        f.points = points;
        below
    }
}

/// What `occ` holds at instant `t`: cores, memory, GPUs.
fn held_at(occ: &[Occ], t: Time) -> (u32, u64, u32) {
    occ.iter().filter(|o| o.from <= t && t < o.to).fold((0, 0, 0), |h, o| (h.0 + o.cores, h.1 + o.mem, h.2 + o.gpus))
}

/// The positions of the set bits, in increasing order.
fn ones(bits: &[u64]) -> impl Iterator<Item = u32> + '_ {
    bits.iter().enumerate().flat_map(|(w, &word)| {
        let mut x = word;
        std::iter::from_fn(move || {
            (x != 0).then(|| {
                let b = x.trailing_zeros();
                x &= x - 1;
                w as u32 * 64 + b
            })
        })
    })
}
