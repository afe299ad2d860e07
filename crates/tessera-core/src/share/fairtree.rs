//! Fair Tree (Slurm's default fair-share algorithm since 19.05; R. Cox and
//! L. Morrison, BYU; <https://slurm.schedmd.com/fair_tree.html>).
//!
//! Each association's Level Fairshare compares it with its siblings only:
//! `LF = S / U`, `S` its shares over its and its siblings' shares, `U` its
//! usage over its parent's (infinite without usage; 0 without shares). The
//! tree is sorted by LF, highest first, at every level and walked depth first;
//! users are ranked in the order found, and a user's fair-share factor is its
//! rank over the number of user associations (the first 1.0, the last 1/n,
//! never 0). So every user of an account with a higher LF than a sibling
//! account ranks above every user of that sibling.
//!
//! Ties, as Slurm's implementation resolves them (its regression test 24.4,
//! reproduced in `tests`): among equal LF, users sort before accounts; a user
//! tied with the sibling before it takes that sibling's rank, and the first
//! user below an account tied with the sibling before it takes the rank last
//! given. (Slurm's page says tied accounts' children are merged; its code, by
//! the test, does not, and Tessera follows the code.) `Fairshare=parent`
//! ([`super::Assoc::use_parent`]): such a user's LF is infinite; such an
//! account's children compete among its parent's.

use super::accounts::{Accounts, AssocId};
use serde::{Deserialize, Serialize};
use std::cell::Cell;

/// One association's figures, as `sshare -l` shows them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FsRow {
    /// Usage of it and everything below it (decayed, in the usage unit).
    pub raw_usage: f64,
    /// Its shares over its and its siblings' shares.
    pub norm_shares: f64,
    /// Its usage over the whole tree's.
    pub norm_usage: f64,
    /// Its usage over its parent's.
    pub effective_usage: f64,
    /// `norm_shares / effective_usage` (infinite without usage, 0 without
    /// shares; NaN for an account with `Fairshare=parent`, which has none).
    /// JSON has no infinity: it is written `"inf"` (and NaN `"nan"`).
    #[serde(with = "non_finite")]
    pub level_fs: f64,
    /// The fair-share factor (users only; 0 for accounts).
    pub fairshare: f64,
}

mod non_finite {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        match *v {
            v if v.is_finite() => s.serialize_f64(v),
            v if v.is_nan() => s.serialize_str("nan"),
            v if v > 0.0 => s.serialize_str("inf"),
            _ => s.serialize_str("-inf"),
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        N(f64),
        S(String),
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        match Raw::deserialize(d)? {
            Raw::N(v) => Ok(v),
            Raw::S(s) => match s.as_str() {
                "inf" => Ok(f64::INFINITY),
                "-inf" => Ok(f64::NEG_INFINITY),
                "nan" => Ok(f64::NAN),
                _ => Err(serde::de::Error::custom(format!("expected a number, \"inf\" or \"nan\", found {s:?}"))),
            },
        }
    }
}

/// The tree as Fair Tree walks it, worked out once per accounts table: each
/// association's fair-share parent (an account with `Fairshare=parent` gives
/// its children to the nearest ancestor without), its fair-share children
/// (`kids`) and its children in the accounts table.
#[derive(Clone, Debug, Default)]
struct Shape {
    kids: Vec<Vec<AssocId>>,
    children: Vec<Vec<u32>>,
    fs_parent: Vec<Option<AssocId>>,
    users: usize,
    /// Per association, fixed by the table: its parent, whether it is a user,
    /// whether it has `Fairshare=parent`, and its norm shares (its shares over
    /// its fair-share siblings').
    parent: Vec<u32>,
    user: Vec<bool>,
    use_parent: Vec<bool>,
    norm_shares: Vec<f64>,
    /// The accounts with `Fairshare=parent`.
    parent_accounts: Vec<u32>,
    /// By rank: the fair-share factor, `rank / users` (worked out once).
    by_rank: Vec<f64>,
    /// Per association: the users in it and below it, as Fair Tree walks it
    /// (its fair-share children's, recursively; 1 for a user).
    count: Vec<u32>,
}

impl Shape {
    fn of(acc: &Accounts) -> Shape {
        let n = acc.assocs.len();
        let fs_parent: Vec<Option<AssocId>> = acc
            .assocs
            .iter()
            .map(|a| {
                let mut p = a.parent;
                while let Some(q) = p.filter(|q| q.0 != 0 && acc.get(*q).use_parent) {
                    p = acc.get(q).parent;
                }
                p
            })
            .collect();
        let mut kids: Vec<Vec<AssocId>> = vec![Vec::new(); n];
        let mut children: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (i, a) in acc.assocs.iter().enumerate() {
            if !a.use_parent || a.is_user() {
                if let Some(p) = fs_parent[i] {
                    kids[p.0 as usize].push(AssocId(i as u32));
                }
            }
            if let Some(p) = a.parent {
                children[p.0 as usize].push(i as u32);
            }
        }
        let users = acc.assocs.iter().filter(|a| a.is_user()).count();
        // children come after their parents in the table
        let mut count: Vec<u32> = acc.assocs.iter().map(|a| u32::from(a.is_user())).collect();
        for p in (0..n).rev() {
            let below: u32 = kids[p].iter().map(|k| count[k.0 as usize]).sum();
            count[p] += below;
        }
        let mut norm_shares = vec![0.0; n];
        for group in &kids {
            let sum: f64 = group.iter().filter(|k| !acc.get(**k).use_parent).map(|k| acc.get(*k).shares as f64).sum();
            for k in group {
                let a = acc.get(*k);
                norm_shares[k.0 as usize] = if a.use_parent || sum == 0.0 { 0.0 } else { a.shares as f64 / sum };
            }
        }
        Shape {
            kids,
            children,
            fs_parent,
            users,
            parent: acc.assocs.iter().map(|a| a.parent.map_or(u32::MAX, |p| p.0)).collect(),
            user: acc.assocs.iter().map(|a| a.is_user()).collect(),
            use_parent: acc.assocs.iter().map(|a| a.use_parent).collect(),
            norm_shares,
            parent_accounts: (0..n as u32).filter(|&i| acc.assocs[i as usize].use_parent && !acc.assocs[i as usize].is_user()).collect(),
            by_rank: (0..=users).map(|r| r as f64 / users as f64).collect(),
            count,
        }
    }
}

/// Fair Tree kept up to date as usage is charged. A charge changes the
/// usage of one user association and of its ancestors only, so only the
/// sibling groups under those are worked out again (each group's Level FS
/// shares its parent's usage), kept sorted from one calculation to the next,
/// and only those groups that changed order or ties are read again for the
/// ranking ([`Tree::regroup`]); a user's rank is worked out when its factor
/// is first read ([`Tree::rank`]). A group's Level FS are worked out only where the order could
/// depend on them: most of the time it is that of `shares / usage`, which
/// changes only for those charged ([`Tree::level`]). What it holds is
/// exactly what working out every Level FS of the whole tree on the same
/// usage gives: the same sums in the same order, the same quotients, the
/// same ranks (property test `an_updated_tree_is_the_tree_worked_out_afresh`,
/// against the plain algorithm).
///
/// Its state is the usage it was given and the factors it gave; the rest is
/// worked out again from them when read back (the same figures).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(from = "TreeState", into = "TreeState")]
pub(crate) struct Tree {
    /// Per association: its own usage, as last given.
    usage: Vec<f64>,
    /// Per association: the fair-share factor as read back from a state
    /// (users only; 0 for accounts), until the tree is worked out again.
    fairshare: Vec<f64>,
    shape: Shape,
    /// Per association, of its group as ranked: the users of the siblings
    /// before it, and where the rank given last before it comes from.
    before: Vec<u32>,
    from: Vec<Source>,
    /// Per association: where the rank given last in it comes from.
    end: Vec<Source>,
    /// Per association: its fair-share factor as last worked out, and the
    /// ranking it was worked out in (`ranking`, bumped whenever an order or a
    /// tie changes).
    known: Vec<Cell<(u64, f64)>>,
    ranking: u64,
    /// Per association: the usage of it and everything below it.
    raw: Vec<f64>,
    /// Per association: where its Level FS stands whatever its parent's
    /// usage ([`Tree::standing`]), and whether its Level FS equals that of
    /// the fair-share sibling before it in order (a tie).
    q: Vec<f64>,
    tied: Vec<bool>,
    /// Per association: its place among its fair-share siblings.
    at: Vec<u32>,
    /// Per association: its fair-share children were last put in order by
    /// working out their Level FS (two were close), and are so again.
    exact: Vec<bool>,
    /// Scratch: Level FS by association, for groups worked out exactly; the
    /// (group, child) whose standing changed.
    lf: Vec<f64>,
    touched: Vec<u32>,
    /// Scratch: per group, the first child whose standing changed, and per
    /// child the next ([`NONE`]: no more).
    first: Vec<u32>,
    next: Vec<u32>,
    /// Whether `raw`, `q` and `tied` are worked out (else the next update
    /// works out all, from `usage`).
    fitted: bool,
    /// Scratch: the associations whose usage changed, and a mark per association.
    changed: Vec<u32>,
    mark: Vec<bool>,
}

#[derive(Serialize, Deserialize)]
struct TreeState {
    usage: Vec<f64>,
    fairshare: Vec<f64>,
}

impl From<TreeState> for Tree {
    fn from(s: TreeState) -> Tree {
        Tree { usage: s.usage, fairshare: s.fairshare, ..Tree::default() }
    }
}

impl From<Tree> for TreeState {
    fn from(t: Tree) -> TreeState {
        TreeState { fairshare: t.factors(), usage: t.usage }
    }
}

/// Two are equal if they were given the same usage and gave the same
/// factors (the rest is worked out from these).
impl PartialEq for Tree {
    fn eq(&self, o: &Tree) -> bool {
        self.usage == o.usage && self.factors() == o.factors()
    }
}

impl Tree {
    /// The tree of `acc` with no usage, worked out.
    pub fn of(acc: &Accounts) -> Tree {
        let mut t = Tree::default();
        t.reshape(acc);
        t.update(&[], None);
        t
    }

    /// Made again for `acc` (the usage and factors kept if they fit it), to
    /// be worked out again at the next update.
    pub fn reshape(&mut self, acc: &Accounts) {
        let n = acc.assocs.len();
        let shape = Shape::of(acc);
        self.freeze();
        if self.usage.len() != n {
            self.usage = vec![0.0; n];
        }
        if self.fairshare.len() != n {
            self.fairshare = vec![0.0; n];
        }
        self.q = vec![0.0; n];
        self.tied = vec![false; n];
        self.lf = vec![0.0; n];
        self.exact = vec![true; n];
        self.first = vec![NONE; n];
        self.next = vec![NONE; n];
        self.at = vec![0; n];
        for kids in &shape.kids {
            for (i, k) in kids.iter().enumerate() {
                self.at[k.0 as usize] = i as u32;
            }
        }
        self.shape = shape;
        self.before = vec![0; n];
        self.from = vec![Source::Entering; n];
        self.end = vec![Source::Entering; n];
        self.known = vec![Cell::new((0, 0.0)); n];
        self.ranking = 1;
        self.raw = vec![0.0; n];
        self.mark = vec![false; n];
    }

    /// Whether it was made for a table of this size.
    pub fn fits(&self, acc: &Accounts) -> bool {
        self.shape.fs_parent.len() == acc.assocs.len()
    }

    /// A user association's fair-share factor (0 for an account).
    #[inline]
    pub fn fairshare(&self, a: usize) -> f64 {
        if !self.fitted {
            return self.fairshare.get(a).copied().unwrap_or(0.0);
        }
        let Some(known) = self.known.get(a) else { return 0.0 };
        match known.get() {
            (ranking, fs) if ranking == self.ranking => fs,
            _ => self.fairshare_anew(a),
        }
    }

    /// A factor not worked out since the last change of order or tie.
    #[inline(never)]
    fn fairshare_anew(&self, a: usize) -> f64 {
        let fs = if self.shape.user[a] { self.shape.by_rank[self.rank(a)] } else { 0.0 };
        self.known[a].set((self.ranking, fs));
        fs
    }

    /// Every association's fair-share factor.
    fn factors(&self) -> Vec<f64> {
        (0..self.usage.len()).map(|a| self.fairshare(a)).collect()
    }

    /// The factors kept as they are (to be worked out again at the next
    /// update, from the usage).
    fn freeze(&mut self) {
        if self.fitted {
            self.fairshare = self.factors();
            self.fitted = false;
        }
    }

    /// The usage it was last given.
    pub fn usage(&self) -> &[f64] {
        &self.usage
    }

    /// Set as if read back from a state (worked out again at the next update).
    #[cfg(test)]
    pub fn set_fairshare(&mut self, a: usize, v: f64) {
        self.freeze();
        self.fairshare[a] = v;
    }

    /// `usage` is each association's own usage (only user associations are
    /// charged; an account's usage is its subtree's); since the last update
    /// it changed for the associations in `changed` only (any order, repeats
    /// allowed; None: any may have). Missing entries are 0.
    pub fn update(&mut self, usage: &[f64], changed: Option<&[u32]>) {
        let n = self.usage.len();
        let mut list = std::mem::take(&mut self.changed);
        list.clear();
        let mut take = |i: usize| {
            let u = usage.get(i).copied().unwrap_or(0.0);
            if u.to_bits() != self.usage[i].to_bits() {
                self.usage[i] = u;
                list.push(i as u32);
            }
        };
        match changed {
            Some(c) => c.iter().filter(|&&a| (a as usize) < n).for_each(|&a| take(a as usize)),
            None => (0..n).for_each(take),
        }
        if self.fitted {
            // those charged and their ancestors
            let k = list.len();
            for i in 0..k {
                let mut a = self.shape.parent[list[i] as usize];
                while a != u32::MAX && !self.mark[a as usize] {
                    self.mark[a as usize] = true;
                    list.push(a);
                    a = self.shape.parent[a as usize];
                }
            }
            for &a in &list[k..] {
                self.mark[a as usize] = false;
            }
            // parents come before their children in the table
            list.sort_unstable_by(|a, b| b.cmp(a));
            list.dedup();
        } else {
            list.clear();
            list.extend((0..n as u32).rev());
        }
        // each subtree's usage, its children's added last to first
        for &a in &list {
            let a = a as usize;
            let mut sum = self.usage[a];
            for &c in self.shape.children[a].iter().rev() {
                sum += self.raw[c as usize];
            }
            self.raw[a] = sum;
            self.q[a] = self.standing(a);
        }
        // a group's Level FS changes with its parent's usage
        // the fair-share children whose standing changed, listed by group
        for &a in &list {
            if let (Some(p), true) = (self.shape.fs_parent[a as usize], self.shape.user[a as usize] || !self.shape.use_parent[a as usize]) {
                self.next[a as usize] = std::mem::replace(&mut self.first[p.0 as usize], a);
            }
        }
        let all = !self.fitted;
        let mut moved = all;
        let mut touched = std::mem::take(&mut self.touched);
        for &a in &list {
            let mut k = std::mem::replace(&mut self.first[a as usize], NONE);
            touched.clear();
            while k != NONE {
                touched.push(k);
                k = self.next[k as usize];
            }
            if !self.shape.kids[a as usize].is_empty() && (self.level(a as usize, &touched) || all) {
                self.regroup(a as usize);
                moved = true;
            }
        }
        self.touched = touched;
        self.changed = list;
        self.fitted = true;
        if moved {
            self.ranking += 1;
        }
    }

    /// Group `g` read for the ranking (its order or ties changed): each
    /// child's users before it, and where the rank given last before it
    /// comes from, as Fair Tree's depth-first walk gives ranks: a user not
    /// tied with the sibling before it gets the next rank down, one tied
    /// gets the rank last given, and the first child is tied as its group is
    /// (the root is not).
    fn regroup(&mut self, g: usize) {
        let (mut users, mut last) = (0, Source::Entering);
        for (i, k) in self.shape.kids[g].iter().enumerate() {
            let k = k.0 as usize;
            self.before[k] = users;
            self.from[k] = last;
            let n = self.shape.count[k];
            if n > 0 {
                last = match (self.shape.user[k], i) {
                    (false, _) => Source::Last(k as u32),
                    (true, 0) => Source::First,
                    (true, _) if self.tied[k] => last,
                    (true, _) => Source::At(users),
                };
            }
            users += n;
        }
        self.end[g] = last;
    }

    /// A user's rank in the walk: the number of users from it to the last
    /// (the first ranked is `users`), or, tied, the rank last given before it.
    fn rank(&self, u: usize) -> usize {
        let g = self.group_of(u);
        let tied = if self.at[u] == 0 { self.group_tied(g) } else { self.tied[u] };
        if tied {
            self.resolve(g, self.from[u])
        } else {
            self.untied_rank(g, self.before[u])
        }
    }

    /// The group an association is ranked in: its fair-share parent's (the
    /// root's for the root).
    fn group_of(&self, a: usize) -> usize {
        self.shape.fs_parent[a].map_or(0, |p| p.0 as usize)
    }

    /// The rank of an untied user with `before` of group `g`'s users before
    /// it: one less for every user before it in the walk.
    fn untied_rank(&self, mut g: usize, before: u32) -> usize {
        let mut at = before;
        while g != 0 {
            at += self.before[g];
            g = self.group_of(g);
        }
        self.shape.users - at as usize
    }

    /// Whether group `g`'s first child is tied: `g` is tied with the sibling
    /// before it, or is a first child of a group so tied (the root is not).
    fn group_tied(&self, mut g: usize) -> bool {
        while g != 0 {
            if self.at[g] != 0 {
                return self.tied[g];
            }
            g = self.group_of(g);
        }
        false
    }

    /// The rank `s` names in group `g`.
    fn resolve(&self, mut g: usize, mut s: Source) -> usize {
        loop {
            match s {
                Source::At(users) => return self.untied_rank(g, users),
                Source::First if !self.group_tied(g) => return self.untied_rank(g, 0),
                Source::First | Source::Entering if g == 0 => return self.shape.users,
                Source::First | Source::Entering => {
                    s = self.from[g];
                    g = self.group_of(g);
                }
                Source::Last(a) => {
                    g = a as usize;
                    s = self.end[g];
                }
            }
        }
    }

    /// Where `k`'s Level FS stands whatever its parent's usage `U`: its
    /// Level FS is `ns / (raw / U)`, so its order among its siblings is that
    /// of `ns / raw` (`U` is theirs too) but for rounding. Infinite for
    /// `Fairshare=parent` or shares without usage, 0 without shares (those
    /// are its Level FS for any `U`), `ns / raw` otherwise, and NaN where
    /// the figures are so large or small that rounding bounds do not hold
    /// (its group is then worked out exactly).
    fn standing(&self, k: usize) -> f64 {
        let (ns, raw) = (self.shape.norm_shares[k], self.raw[k]);
        if self.shape.use_parent[k] || (ns != 0.0 && raw == 0.0) {
            f64::INFINITY
        } else if ns == 0.0 {
            0.0
        } else if tame(raw) && tame(ns) {
            ns / raw
        } else {
            f64::NAN
        }
    }

    /// How two fair-share siblings `a` then `b` stand, from [`Tree::standing`]
    /// alone: whether the Level FS of `a` is certainly above `b`'s, certainly
    /// below, certainly equal (the same from the same figures), or too close
    /// to tell without working them out. With `ns`, `raw` and `U` tame
    /// (and `raw ≤ U`: a parent's usage sums its children's),
    /// each Level FS is within 2^-51 of `ns × U / raw` and each standing
    /// within 2^-52 of `ns / raw`, so standings 2^-40 apart order their
    /// Level FS the same way.
    #[inline]
    fn pair(&self, a: usize, b: usize) -> Pair {
        const APART: f64 = 1.0 + 1.0 / (1u64 << 40) as f64;
        let (qa, qb) = (self.q[a], self.q[b]);
        if qa > qb * APART {
            return Pair::Apart;
        }
        if qb > qa * APART {
            return Pair::Wrong;
        }
        let same = if qa == 0.0 || qa == f64::INFINITY || qb == 0.0 || qb == f64::INFINITY {
            qa == qb
        } else {
            self.raw[a].to_bits() == self.raw[b].to_bits() && self.shape.norm_shares[a].to_bits() == self.shape.norm_shares[b].to_bits()
        };
        match same {
            // equal Level FS: users first, then declaration order
            true if (!self.shape.user[a], a) < (!self.shape.user[b], b) => Pair::Tied,
            true => Pair::Wrong,
            false => Pair::Close,
        }
    }

    /// `p`'s fair-share children in order again, and their ties; whether
    /// their order or their ties changed. Their Level FS all change with
    /// `p`'s usage, but their order and ties do not unless a standing
    /// changed or two are close: only then are they worked out
    /// ([`Tree::level_exactly`]).
    fn level(&mut self, p: usize, changed: &[u32]) -> bool {
        let usage = self.raw[p];
        if usage != 0.0 && !tame(usage) {
            return self.level_exactly(p, false);
        }
        if !self.exact[p] && changed.len() * 8 < self.shape.kids[p].len() {
            // few changed: only the pairs they are in can have (the others'
            // standings are as they were, and none was close)
            if let Some(moved) = self.level_around(p, changed) {
                return moved;
            }
        }
        self.exact[p] = false;
        let mut kids = std::mem::take(&mut self.shape.kids[p]);
        let mut sorted = false;
        let mut moved = false;
        loop {
            // the ties, set as found (and undone by the exact working out if
            // two are close)
            let (mut wrong, mut close) = (false, false);
            for i in 1..kids.len() {
                let k = kids[i].0 as usize;
                let tied = match self.pair(kids[i - 1].0 as usize, k) {
                    Pair::Apart => false,
                    Pair::Tied => true,
                    Pair::Wrong => {
                        wrong = true;
                        false
                    }
                    Pair::Close => {
                        close = true;
                        break;
                    }
                };
                moved |= std::mem::replace(&mut self.tied[k], tied) != tied;
            }
            if close || (wrong && sorted) {
                self.shape.kids[p] = kids;
                return self.level_exactly(p, moved || sorted);
            }
            if !wrong {
                break;
            }
            // a standing changed: in order by standing (none is close)
            let (q, user) = (&self.q, &self.shape.user);
            kids.sort_by(|a, b| {
                let (a, b) = (a.0 as usize, b.0 as usize);
                q[b].total_cmp(&q[a]).then(user[b].cmp(&user[a])).then(a.cmp(&b))
            });
            sorted = true;
        }
        if let Some(first) = kids.first() {
            self.tied[first.0 as usize] = false;
        }
        if sorted {
            self.placed(&kids);
        }
        self.shape.kids[p] = kids;
        moved | sorted
    }

    /// The pairs of `p`'s fair-share children that `changed` are in looked
    /// at: None if one is out of order or close; else their ties set, and
    /// whether one changed.
    fn level_around(&mut self, p: usize, changed: &[u32]) -> Option<bool> {
        let kids = &self.shape.kids[p];
        for &k in changed {
            let i = self.at[k as usize] as usize;
            let before = i.checked_sub(1).map(|h| self.pair(kids[h].0 as usize, k as usize));
            let after = kids.get(i + 1).map(|n| self.pair(k as usize, n.0 as usize));
            if [before, after].iter().any(|x| matches!(x, Some(Pair::Wrong | Pair::Close))) {
                return None;
            }
        }
        let mut moved = false;
        for &k in changed {
            let i = self.at[k as usize] as usize;
            for j in [i, i + 1] {
                if j > 0 && j < kids.len() {
                    let tied = matches!(self.pair(kids[j - 1].0 as usize, kids[j].0 as usize), Pair::Tied);
                    moved |= std::mem::replace(&mut self.tied[kids[j].0 as usize], tied) != tied;
                }
            }
        }
        Some(moved)
    }

    /// Each of `kids` (a group, in its order) knows its place.
    fn placed(&mut self, kids: &[AssocId]) {
        for (i, k) in kids.iter().enumerate() {
            self.at[k.0 as usize] = i as u32;
        }
    }

    /// A fair-share child's Level FS under a parent of usage `usage`.
    fn level_fs(&self, k: usize, usage: f64) -> f64 {
        let effective = if usage > 0.0 { self.raw[k] / usage } else { 0.0 };
        let ns = self.shape.norm_shares[k];
        if self.shape.use_parent[k] {
            f64::INFINITY
        } else if ns == 0.0 {
            0.0
        } else {
            ns / effective
        }
    }

    /// The Level FS of `p`'s fair-share children worked out, the children
    /// put in order by it and their ties set; whether their order or their
    /// ties changed (`moved`: the order already did).
    fn level_exactly(&mut self, p: usize, mut moved: bool) -> bool {
        let mut kids = std::mem::take(&mut self.shape.kids[p]);
        let usage = self.raw[p];
        for &k in &kids {
            self.lf[k.0 as usize] = self.level_fs(k.0 as usize, usage);
        }
        let (lf, user) = (&self.lf, &self.shape.user);
        // highest first, users before accounts, then declaration order
        let order = |a: &AssocId, b: &AssocId| {
            let (a, b) = (a.0 as usize, b.0 as usize);
            lf[b].total_cmp(&lf[a]).then(user[b].cmp(&user[a])).then(a.cmp(&b))
        };
        if kids.windows(2).any(|w| order(&w[0], &w[1]).is_ge()) {
            kids.sort_by(order);
            moved = true;
        }
        self.placed(&kids);
        self.exact[p] = true;
        for i in 1..kids.len() {
            let k = kids[i].0 as usize;
            let tied = self.lf[kids[i - 1].0 as usize] == self.lf[k];
            moved |= std::mem::replace(&mut self.tied[k], tied) != tied;
        }
        if let Some(first) = kids.first() {
            self.tied[first.0 as usize] = false;
        }
        self.shape.kids[p] = kids;
        moved
    }

    /// Every association's figures, as `sshare -l` shows them (all but the
    /// norm usage, [`with_norm_usage`]).
    pub fn rows(&self) -> Vec<FsRow> {
        let s = &self.shape;
        let mut rows: Vec<FsRow> = self.raw.iter().enumerate().map(|(a, &raw_usage)| FsRow { raw_usage, fairshare: self.fairshare(a), ..FsRow::default() }).collect();
        // ancestors come first, so a parent's own figures are known before its children's
        for p in 0..rows.len() {
            let usage = rows[p].raw_usage;
            let parent_shares = rows[p].norm_shares;
            for k in &s.kids[p] {
                let k = k.0 as usize;
                let r = &mut rows[k];
                r.effective_usage = if usage > 0.0 { r.raw_usage / usage } else { 0.0 };
                // one with Fairshare=parent shows the shares it defers to
                r.norm_shares = if s.use_parent[k] { parent_shares } else { s.norm_shares[k] };
                r.level_fs = self.level_fs(k, usage);
            }
        }
        for &i in &s.parent_accounts {
            let i = i as usize;
            let p = self.group_of(i);
            let parent_usage = if s.parent[i] == u32::MAX { 0.0 } else { rows[s.parent[i] as usize].raw_usage };
            rows[i].norm_shares = rows[p].norm_shares;
            rows[i].effective_usage = if parent_usage > 0.0 { rows[i].raw_usage / parent_usage } else { 0.0 };
            rows[i].level_fs = f64::NAN;
        }
        rows
    }
}

/// Fair Tree over the accounts, from each association's own usage (only user
/// associations are charged; an account's usage is its subtree's).
pub fn fair_tree(acc: &Accounts, own_usage: &[f64]) -> Vec<FsRow> {
    let mut tree = Tree::default();
    tree.reshape(acc);
    tree.update(own_usage, None);
    let mut rows = tree.rows();
    with_norm_usage(&mut rows);
    rows
}

/// Each row's usage over the whole tree's (what `sshare` shows; the ranks do
/// not need it).
pub(crate) fn with_norm_usage(rows: &mut [FsRow]) {
    let total = rows.first().map_or(0.0, |r| r.raw_usage);
    for r in rows {
        r.norm_usage = if total > 0.0 { (r.raw_usage / total).min(1.0) } else { 0.0 };
    }
}

/// Within these bounds a usage or norm shares, and their quotients, are far
/// from overflow and from subnormal numbers (a usage is kept undecayed, over
/// a scale down to 1e-150: see `Sharing::usage`).
fn tame(x: f64) -> bool {
    (1e-100..=1e200).contains(&x)
}

/// No association.
const NONE: u32 = u32::MAX;

/// How two fair-share siblings stand ([`Tree::pair`]).
enum Pair {
    /// The first's Level FS is above the second's.
    Apart,
    /// Equal, and in order.
    Tied,
    /// Out of order.
    Wrong,
    /// Too close to tell without working them out.
    Close,
}

/// Where the rank given last before a point of a group comes from
/// ([`Tree::regroup`]).
#[derive(Clone, Copy, Debug, Default)]
enum Source {
    /// From before the group: the rank given last before it.
    #[default]
    Entering,
    /// Its first child, a user: ranked as the group is tied.
    First,
    /// An untied user with this many of the group's users before it.
    At(u32),
    /// The rank given last in this child, an account.
    Last(u32),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::share::accounts::{Assoc, Limits};

    /// Slurm's Fair Tree regression test (testsuite/expect/test24.4 and its
    /// test24.4.prog.c, contributed with Fair Tree by BYU): the tree, its
    /// shares (None: `Fairshare=parent`) and raw usage, and the published
    /// `sshare -l` figures (NormShares, EffectvUsage, LevelFS, FairShare).
    #[allow(clippy::type_complexity)]
    const TREE: &[(&str, Option<&str>, &str, Option<u32>, f64, f64, f64, f64, f64)] = &[
        // account, user, parent, shares, own usage, NormShares, EffectvUsage, LevelFS, FairShare
        ("root", Some("u1"), "root", Some(10), 0.0, 0.048077, 0.0, f64::INFINITY, 1.0),
        ("root", Some("u2"), "root", Some(10), 10.0, 0.048077, 0.041667, 1.153846, 0.666667),
        ("aA", None, "root", Some(40), 0.0, 0.192308, 0.1875, 1.025641, 0.0),
        ("aAA", None, "aA", Some(30), 0.0, 0.75, 0.444444, 1.6875, 0.0),
        ("aAA", Some("uAA1"), "aAA", Some(1), 20.0, 1.0, 1.0, 1.0, 0.619048),
        ("aAB", None, "aA", Some(10), 0.0, 0.25, 0.555556, 0.45, 0.0),
        ("aAB", Some("uAB1"), "aAB", Some(1), 25.0, 0.5, 1.0, 0.5, 0.523810),
        ("aAB", Some("uAB2"), "aAB", Some(1), 0.0, 0.5, 0.0, f64::INFINITY, 0.571429),
        ("aB", None, "root", Some(60), 0.0, 0.288462, 0.104167, 2.769231, 0.0),
        ("aBA", None, "aB", Some(25), 0.0, 0.416667, 1.0, 0.416667, 0.0),
        ("aBA", Some("uBA1"), "aBA", Some(1), 25.0, 1.0, 1.0, 1.0, 0.714286),
        ("aBB", None, "aB", Some(35), 0.0, 0.583333, 0.0, f64::INFINITY, 0.0),
        ("aBB", Some("uBB1"), "aBB", Some(1), 0.0, 1.0, 0.0, f64::INFINITY, 0.761905),
        ("aC", None, "root", Some(0), 0.0, 0.0, 0.125, 0.0, 0.0),
        ("aC", Some("uC1"), "aC", Some(0), 30.0, 0.0, 1.0, 0.0, 0.047619),
        ("aD", None, "root", Some(50), 0.0, 0.240385, 0.458333, 0.524476, 0.0),
        ("aD", Some("uD1"), "aD", None, 20.0, 0.240385, 0.181818, f64::INFINITY, 0.476190),
        ("aD", Some("uD2"), "aD", Some(40), 20.0, 0.235294, 0.181818, 1.294118, 0.238095),
        ("aD", Some("uD3"), "aD", Some(50), 25.0, 0.294118, 0.227273, 1.294118, 0.333333),
        ("aDA", None, "aD", None, 0.0, 0.240385, 0.409091, f64::NAN, 0.0),
        ("aDA", Some("uDA1"), "aDA", None, 10.0, 0.240385, 0.090909, f64::INFINITY, 0.476190),
        ("aDA", Some("uDA2"), "aDA", Some(30), 10.0, 0.176471, 0.090909, 1.941176, 0.380952),
        ("aDA", Some("uDA3"), "aDA", Some(50), 25.0, 0.294118, 0.227273, 1.294118, 0.333333),
        ("aE", None, "root", Some(10), 0.0, 0.048077, 0.0, f64::INFINITY, 0.0),
        ("aE", Some("aE1"), "aE", Some(10), 0.0, 0.5, 0.0, f64::INFINITY, 1.0),
        ("aE", Some("aE2"), "aE", Some(10), 0.0, 0.5, 0.0, f64::INFINITY, 1.0),
        ("aF", None, "root", Some(20), 0.0, 0.096154, 0.0, f64::INFINITY, 0.0),
        ("aF", Some("uF1"), "aF", Some(10), 0.0, 0.333333, 0.0, f64::INFINITY, 1.0),
        ("aF", Some("uF2"), "aF", Some(20), 0.0, 0.666667, 0.0, f64::INFINITY, 1.0),
        ("aG", None, "root", Some(8), 0.0, 0.038462, 0.083333, 0.461538, 0.0),
        ("aG", Some("uG1"), "aG", Some(10), 10.0, 0.5, 0.5, 1.0, 0.190476),
        ("aGA", None, "aG", Some(10), 0.0, 0.5, 0.5, 1.0, 0.0),
        ("aGA", Some("uGA1"), "aGA", Some(20), 4.0, 0.5, 0.4, 1.25, 0.190476),
        ("aGA", Some("uGA2"), "aGA", Some(20), 6.0, 0.5, 0.6, 0.833333, 0.095238),
    ];

    pub(crate) fn slurm_test_tree() -> (Accounts, Vec<f64>) {
        let mut acc = Accounts::new();
        let mut usage = vec![0.0];
        for &(account, user, parent, shares, own, ..) in TREE {
            let parent = acc.account(parent).expect("parents come first");
            acc.push(Assoc { account: account.into(), user: user.map(str::to_string), parent: Some(parent), shares: shares.unwrap_or(0), use_parent: shares.is_none(), limits: Limits::default(), qos: Vec::new(), default_qos: None });
            usage.push(own);
        }
        (acc, usage)
    }

    #[test]
    fn slurms_published_fair_tree_example() {
        let (acc, usage) = slurm_test_tree();
        let rows = fair_tree(&acc, &usage);
        assert_eq!(rows[0].raw_usage, 240.0, "root's usage is the whole tree's");
        let close = |a: f64, b: f64| (a.is_infinite() && b.is_infinite()) || (a.is_nan() && b.is_nan()) || (a - b).abs() < 5e-7;
        for (i, &(account, user, _, _, _, ns, eu, lf, fs)) in TREE.iter().enumerate() {
            let r = rows[i + 1];
            let who = format!("{account}/{}", user.unwrap_or(""));
            assert!(close(r.norm_shares, ns), "{who} NormShares {} != {ns}", r.norm_shares);
            assert!(close(r.effective_usage, eu), "{who} EffectvUsage {} != {eu}", r.effective_usage);
            assert!(close(r.level_fs, lf), "{who} LevelFS {} != {lf}", r.level_fs);
            assert!(close(r.fairshare, fs), "{who} FairShare {} != {fs}", r.fairshare);
        }
    }

    proptest::proptest! {
        /// A tree updated charge after charge (told which associations were
        /// charged, or not told) holds what working out the whole tree on
        /// the same usage gives, bit for bit: every factor, Level FS and
        /// usage. Trees with `Fairshare=parent` accounts and users, no
        /// shares, and usage from a few values (so Level FS ties).
        #[test]
        fn an_updated_tree_is_the_tree_worked_out_afresh(
            accounts in proptest::collection::vec((0usize..8, 0u32..4, 0u32..6), 0..7),
            users in proptest::collection::vec((0usize..8, 0u32..4, 0u32..6), 1..14),
            charges in proptest::collection::vec(proptest::collection::vec((0usize..14, 0usize..10), 0..5), 1..25),
            told in proptest::collection::vec(proptest::bool::weighted(0.85), 25),
        ) {
            let mut acc = Accounts::new();
            let mut names = vec!["root".to_string()];
            for (i, &(parent, shares, up)) in accounts.iter().enumerate() {
                let parent = AssocId(acc.account(&names[parent % names.len()]).unwrap().0);
                let name = format!("a{i}");
                acc.push(Assoc { account: name.clone(), user: None, parent: Some(parent), shares, use_parent: up == 0, limits: Limits::default(), qos: Vec::new(), default_qos: None });
                names.push(name);
            }
            let mut ids = Vec::new();
            for (i, &(parent, shares, up)) in users.iter().enumerate() {
                let account = names[parent % names.len()].clone();
                let parent = acc.account(&account).unwrap();
                ids.push(acc.push(Assoc { account, user: Some(format!("u{i}")), parent: Some(parent), shares, use_parent: up == 0, limits: Limits::default(), qos: Vec::new(), default_qos: None }).0);
            }
            // a few values, so that Level FS tie; sums a rounding apart
            // (0.1 + 0.2 against 0.3), so that they are close but not tied;
            // and figures too small or large for the bounds on rounding
            const AMOUNTS: [f64; 10] = [1.0, 2.0, 0.5, 3.0, 1.0 / 3.0, 10.0, 0.1, 0.2, 0.3, 1e-160];
            let mut usage = vec![0.0; acc.assocs.len()];
            let mut tree = Tree::of(&acc);
            for (step, batch) in charges.iter().enumerate() {
                let mut charged = Vec::new();
                for &(u, amount) in batch {
                    let a = ids[u % ids.len()];
                    usage[a as usize] += AMOUNTS[amount];
                    charged.push(a);
                }
                tree.update(&usage, told[step].then_some(&charged[..]));
                let afresh = fair_tree(&acc, &usage);
                let mut rows = tree.rows();
                with_norm_usage(&mut rows);
                let (plain_lf, plain_fs) = plain(&acc, &usage);
                for (i, r) in rows.iter().enumerate() {
                    proptest::prop_assert_eq!(r.fairshare.to_bits(), plain_fs[i].to_bits(), "step {} association {} fairshare: {} updated, {} by the plain algorithm", step, i, r.fairshare, plain_fs[i]);
                    if !acc.assocs[i].use_parent || acc.assocs[i].is_user() {
                        proptest::prop_assert_eq!(r.level_fs.to_bits(), plain_lf[i].to_bits(), "step {} association {} level FS", step, i);
                    }
                }
                for (i, (a, b)) in rows.iter().zip(&afresh).enumerate() {
                    for (what, x, y) in [("fairshare", a.fairshare, b.fairshare), ("level FS", a.level_fs, b.level_fs), ("usage", a.raw_usage, b.raw_usage), ("norm shares", a.norm_shares, b.norm_shares), ("effective usage", a.effective_usage, b.effective_usage)] {
                        proptest::prop_assert_eq!(x.to_bits(), y.to_bits(), "step {} association {} {}: {} updated, {} afresh", step, i, what, x, y);
                    }
                }
            }
        }
    }

    /// Fair Tree as plainly as it is stated: each subtree's usage, every
    /// Level FS, each group sorted by it (users first, then declaration
    /// order), the users ranked depth first with Slurm's ties. Each
    /// association's Level FS and fair-share factor.
    fn plain(acc: &Accounts, own: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let shape = Shape::of(acc);
        let n = acc.assocs.len();
        let mut raw = vec![0.0; n];
        for a in (0..n).rev() {
            raw[a] = own.get(a).copied().unwrap_or(0.0) + shape.children[a].iter().rev().fold(0.0, |s, &c| s + raw[c as usize]);
        }
        let mut lf = vec![0.0; n];
        let mut kids = shape.kids.clone();
        for p in 0..n {
            for k in &kids[p] {
                let k = k.0 as usize;
                let effective = if raw[p] > 0.0 { raw[k] / raw[p] } else { 0.0 };
                let ns = shape.norm_shares[k];
                lf[k] = if shape.use_parent[k] { f64::INFINITY } else if ns == 0.0 { 0.0 } else { ns / effective };
            }
            kids[p].sort_by(|a, b| lf[b.0 as usize].total_cmp(&lf[a.0 as usize]).then(shape.user[b.0 as usize].cmp(&shape.user[a.0 as usize])).then(a.cmp(b)));
        }
        let mut fs = vec![0.0; n];
        fn visit(p: usize, tied: bool, kids: &[Vec<AssocId>], lf: &[f64], user: &[bool], users: usize, rank: &mut usize, untied: &mut usize, fs: &mut [f64]) {
            for (i, k) in kids[p].iter().enumerate() {
                let k = k.0 as usize;
                let tied = if i == 0 { tied } else { lf[k] == lf[kids[p][i - 1].0 as usize] };
                if user[k] {
                    if !tied {
                        *rank = *untied;
                    }
                    fs[k] = *rank as f64 / users as f64;
                    *untied -= 1;
                } else {
                    visit(k, tied, kids, lf, user, users, rank, untied, fs);
                }
            }
        }
        let (mut rank, mut untied) = (shape.users, shape.users);
        if n > 0 {
            visit(0, false, &kids, &lf, &shape.user, shape.users, &mut rank, &mut untied, &mut fs);
        }
        (lf, fs)
    }

    #[test]
    fn zero_shares_rank_last_and_a_tied_account_takes_the_rank_last_given() {
        let mut acc = Accounts::from_groups([(1, 1), (1, 2), (2, 3)]);
        acc.assocs[2].shares = 0;
        let rows = fair_tree(&acc, &[]);
        let fs: Vec<f64> = acc.users().map(|u| rows[u.0 as usize].fairshare).collect();
        // g1 and g2 tie (no usage): u2 ranks 3, u1 (no shares) 2, and u3, the
        // first user of the tied g2, takes the rank last given
        assert_eq!(fs, [2.0 / 3.0, 1.0, 2.0 / 3.0]);
    }
}
