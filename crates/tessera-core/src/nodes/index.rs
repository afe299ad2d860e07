//! The free view indexed: which nodes have a free core (so that a first fit
//! or a sum visits those nodes only), and views that differ from the free view
//! on a few nodes, brought up to date node by node instead of copied whole.
//!
//! On a busy machine most nodes have no free core, and a pass changes a few
//! nodes: EASY's shadow (the free view plus what the jobs ending by then give
//! back) and its extra resources (that view less the head's reservation) touch
//! the nodes of those jobs only.

use super::board::{Board, Free};

/// The nodes with a free core, and a log of the nodes whose free resources
/// changed. Not saved: an engine read back (or reconfigured) builds it again
/// at its next pass, and places without it until then.
#[derive(Debug, Clone, Default)]
pub(crate) struct FreeIndex {
    /// Bit n: node n may have a free core. Set whenever a node has a free core
    /// after a change, cleared when it has none: every node with a free core
    /// is set.
    bits: Vec<u64>,
    /// Per partition: its nodes are in ascending order, so that the set bits
    /// visit them in partition order (first fit on them is first fit on the
    /// partition).
    ordered: Vec<bool>,
    /// Per partition: bit n set if node n is the partition's and takes jobs,
    /// so that first fit skips the others a word at a time.
    eligible: Vec<Vec<u64>>,
    /// Nodes changed since position `base` (an absolute count), and whether
    /// the index is built.
    log: Vec<u32>,
    base: u64,
    built: bool,
    /// Whether the changes are logged (only while EASY places node by node:
    /// a view brought up to date after the log was off copies whole).
    logging: bool,
}

impl FreeIndex {
    /// The index of `free`, where `usable[n]` tells whether node n takes jobs.
    pub fn build(board: &Board, free: &Free, usable: &[bool], after: &FreeIndex) -> FreeIndex {
        let n = free.cores.len();
        let mut bits = vec![0u64; n.div_ceil(64)];
        for (i, &c) in free.cores.iter().enumerate() {
            if c > 0 {
                bits[i / 64] |= 1 << (i % 64);
            }
        }
        let eligible = board
            .parts
            .iter()
            .map(|p| {
                let mut e = vec![0u64; n.div_ceil(64)];
                for &m in p.nodes.iter().filter(|&&m| usable[m as usize]) {
                    e[m as usize / 64] |= 1 << (m % 64);
                }
                e
            })
            .collect();
        FreeIndex {
            bits,
            ordered: board.parts.iter().map(|p| p.nodes.windows(2).all(|w| w[0] < w[1])).collect(),
            eligible,
            log: Vec::new(),
            // past every position a view has seen: views copy whole once
            base: after.base + after.log.len() as u64 + 1,
            built: true,
            logging: false,
        }
    }

    pub fn built(&self) -> bool {
        self.built
    }

    /// Whether first fit on partition `part` may visit the set bits only.
    pub fn ordered(&self, part: u32) -> bool {
        self.built && self.ordered[part as usize]
    }

    /// The free resources of `nodes` changed (`free` is the view after).
    #[inline]
    pub fn touch(&mut self, free: &Free, nodes: impl Iterator<Item = u32> + Clone) {
        if !self.built {
            return;
        }
        // a job's nodes run in order: each word of bits is loaded and stored
        // once for the nodes in it
        let (mut w, mut word) = (usize::MAX, 0u64);
        for n in nodes.clone() {
            let (nw, b) = (n as usize / 64, n % 64);
            if nw != w {
                if w != usize::MAX {
                    self.bits[w] = word;
                }
                (w, word) = (nw, self.bits[nw]);
            }
            word = (word & !(1 << b)) | (((free.cores[n as usize] > 0) as u64) << b);
        }
        if w != usize::MAX {
            self.bits[w] = word;
        }
        if !self.logging {
            return;
        }
        self.log.extend(nodes);
        // a view this far behind copies whole
        if self.log.len() > free.cores.len() {
            self.base += self.log.len() as u64;
            self.log.clear();
        }
    }

    /// Node `n` (of the partitions `board` lists it in) starts or stops taking
    /// jobs.
    pub fn set_usable(&mut self, board: &Board, n: u32, usable: bool) {
        if !self.built {
            return;
        }
        let (w, b) = (n as usize / 64, n % 64);
        for (e, p) in self.eligible.iter_mut().zip(&board.parts) {
            if p.member[n as usize] {
                e[w] = (e[w] & !(1 << b)) | ((usable as u64) << b);
            }
        }
    }

    /// Bits of the nodes of partition `part` that take jobs.
    pub fn eligible(&self, part: u32) -> &[u64] {
        &self.eligible[part as usize]
    }

    /// Log the changes from now on, or stop (a view then copies whole once).
    pub fn log(&mut self, on: bool) {
        if on != self.logging {
            self.logging = on;
            self.base += self.log.len() as u64 + 1;
            self.log.clear();
        }
    }

    /// Nodes that may have a free core, ascending.
    pub fn ones(&self) -> impl Iterator<Item = u32> + '_ {
        ones(&self.bits)
    }

    pub fn bits(&self) -> &[u64] {
        &self.bits
    }

    fn now(&self) -> u64 {
        self.base + self.log.len() as u64
    }

    /// Nodes changed since position `seen`; None if the log no longer reaches
    /// back there.
    fn since(&self, seen: u64) -> Option<&[u32]> {
        (self.built && self.logging && seen >= self.base).then(|| &self.log[(seen - self.base) as usize..])
    }
}

/// The set bits of a bitset, ascending.
pub(crate) fn ones(bits: &[u64]) -> Ones<impl Iterator<Item = u64> + '_> {
    Ones::new(bits.iter().copied())
}

/// The bits set in both `bits` and `mask` (as long as `bits`), ascending.
pub(crate) fn ones_in<'a>(bits: &'a [u64], mask: &'a [u64]) -> Ones<impl Iterator<Item = u64> + 'a> {
    debug_assert_eq!(bits.len(), mask.len());
    Ones::new(bits.iter().zip(mask).map(|(b, m)| b & m))
}

/// The set bits of a sequence of 64-bit words, ascending.
pub(crate) struct Ones<W> {
    words: W,
    w: u32,
    cur: u64,
}

impl<W: Iterator<Item = u64>> Ones<W> {
    fn new(mut words: W) -> Self {
        let cur = words.next().unwrap_or(0);
        Ones { words, w: 0, cur }
    }
}

impl<W: Iterator<Item = u64>> Iterator for Ones<W> {
    type Item = u32;
    #[inline]
    fn next(&mut self) -> Option<u32> {
        while self.cur == 0 {
            self.w += 1;
            self.cur = self.words.next()?;
        }
        let b = self.cur.trailing_zeros();
        self.cur &= self.cur - 1;
        Some(self.w * 64 + b)
    }
}

/// A view equal to the free view except on the nodes it changed itself
/// (`own`) and those the free view changed since it was brought up to date.
#[derive(Debug, Clone, Default)]
pub(crate) struct Mirror {
    pub v: Free,
    seen: u64,
    own: Vec<u32>,
    mark: Vec<bool>,
}

impl Mirror {
    /// Make it the free view again, copying only the nodes that differ.
    pub fn sync(&mut self, free: &Free, ix: &FreeIndex) {
        let n = free.cores.len();
        match self.changed(free, ix) {
            Some(changed) => {
                for &m in changed.iter().chain(&self.own) {
                    copy_node(&mut self.v, free, m);
                }
                for &m in &self.own {
                    self.mark[m as usize] = false;
                }
            }
            None => {
                self.v.copy_from(free);
                self.mark.clear();
                self.mark.resize(n, false);
            }
        }
        self.own.clear();
        self.seen = ix.now();
        debug_assert!(n > 4096 || self.v == *free, "a mirror out of step with the free view");
    }

    /// Bring it up to date on the nodes the free view changed on since, with
    /// `f` (which works a node out again), keeping what it set itself
    /// elsewhere; false (and unchanged) if the free view's log no longer
    /// reaches back to its last update.
    pub fn refresh(&mut self, free: &Free, ix: &FreeIndex, mut f: impl FnMut(&mut Free, usize)) -> bool {
        let Some(changed) = self.changed(free, ix) else {
            return false;
        };
        for &m in changed {
            f(&mut self.v, m as usize);
            self.set(m);
        }
        self.seen = ix.now();
        true
    }

    /// The nodes the free view changed on since this view's last update, if
    /// its log reaches back there and this view is sized for it.
    fn changed<'a>(&self, free: &Free, ix: &'a FreeIndex) -> Option<&'a [u32]> {
        let n = free.cores.len();
        ix.since(self.seen).filter(|_| self.v.cores.len() == n && self.mark.len() == n)
    }

    /// Node `n` of this view takes `o`'s values there.
    pub fn copy_node(&mut self, o: &Free, n: u32) {
        copy_node(&mut self.v, o, n);
    }

    /// This view gains what `a` holds; false (and unchanged) if it was never
    /// brought up to date.
    pub fn give(&mut self, a: &super::Allocation) -> bool {
        if a.parts.iter().any(|p| p.node as usize >= self.mark.len()) {
            return false;
        }
        self.v.give(a);
        self.set_all(a);
        true
    }

    /// This view loses what `a` holds.
    pub fn take(&mut self, a: &super::Allocation) {
        self.v.take(a);
        self.set_all(a);
    }

    fn set_all(&mut self, a: &super::Allocation) {
        for p in &a.parts {
            self.set(p.node);
        }
    }

    /// This view changed node `n`.
    pub fn set(&mut self, n: u32) {
        if !std::mem::replace(&mut self.mark[n as usize], true) {
            self.own.push(n);
        }
    }

    /// Nodes it changed itself since it was brought up to date, once each.
    pub fn own(&self) -> &[u32] {
        &self.own
    }

    /// Every node where it may differ from the free view now, or None if the
    /// free view's log no longer reaches back to its last update.
    pub fn differs<'a>(&'a self, ix: &'a FreeIndex) -> Option<impl Iterator<Item = u32> + 'a> {
        ix.since(self.seen).map(|c| self.own.iter().chain(c).copied())
    }
}

fn copy_node(v: &mut Free, o: &Free, n: u32) {
    let n = n as usize;
    v.cores[n] = o.cores[n];
    v.mem[n] = o.mem[n];
    v.gpus[n] = o.gpus[n];
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bits set in both sets, against a filter over every bit, on words
    /// empty, full and mixed.
    #[test]
    fn ones_in_visits_the_bits_set_in_both() {
        let mut seed = 0x2545f4914f6cdd1du64;
        let mut rnd = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..50 {
            let words = 1 + (rnd() % 5) as usize;
            let pick = |r: u64| match r % 4 {
                0 => 0,
                1 => u64::MAX,
                _ => r,
            };
            let bits: Vec<u64> = (0..words).map(|_| pick(rnd())).collect();
            let mask: Vec<u64> = (0..words).map(|_| pick(rnd())).collect();
            let want: Vec<u32> = (0..words as u32 * 64)
                .filter(|&n| (bits[n as usize / 64] & mask[n as usize / 64]) >> (n % 64) & 1 == 1)
                .collect();
            assert_eq!(ones_in(&bits, &mask).collect::<Vec<_>>(), want, "round {round}");
            let plain: Vec<u32> = (0..words as u32 * 64).filter(|&n| bits[n as usize / 64] >> (n % 64) & 1 == 1).collect();
            assert_eq!(ones(&bits).collect::<Vec<_>>(), plain, "round {round}");
        }
        assert_eq!(ones_in(&[], &[]).count(), 0);
    }
}
