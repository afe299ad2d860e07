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

use super::accounts::{AssocId, Accounts};
use serde::{Deserialize, Serialize};

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
/// its children to the nearest ancestor without) and children, whose order
/// is kept from one calculation to the next (usage changes little between
/// two, so sorting them again costs little).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Shape {
    kids: Vec<Vec<AssocId>>,
    fs_parent: Vec<Option<AssocId>>,
    users: usize,
    /// Per association: (Level FS, is a user), the sort key's values.
    key: Vec<(f64, bool)>,
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
}

impl Shape {
    pub fn of(acc: &Accounts) -> Shape {
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
        for (i, a) in acc.assocs.iter().enumerate() {
            if !(a.use_parent && !a.is_user()) {
                if let Some(p) = fs_parent[i] {
                    kids[p.0 as usize].push(AssocId(i as u32));
                }
            }
        }
        let users = acc.assocs.iter().filter(|a| a.is_user()).count();
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
            fs_parent,
            users,
            key: vec![(0.0, false); n],
            parent: acc.assocs.iter().map(|a| a.parent.map_or(u32::MAX, |p| p.0)).collect(),
            user: acc.assocs.iter().map(|a| a.is_user()).collect(),
            use_parent: acc.assocs.iter().map(|a| a.use_parent).collect(),
            norm_shares,
            parent_accounts: (0..n as u32).filter(|&i| acc.assocs[i as usize].use_parent && !acc.assocs[i as usize].is_user()).collect(),
            by_rank: (0..=users).map(|r| r as f64 / users as f64).collect(),
        }
    }

    /// Whether it was worked out for a table of this size.
    pub fn fits(&self, acc: &Accounts) -> bool {
        self.fs_parent.len() == acc.assocs.len()
    }
}

/// Fair Tree over the accounts, from each association's own usage (only user
/// associations are charged; an account's usage is its subtree's).
pub fn fair_tree(acc: &Accounts, own_usage: &[f64]) -> Vec<FsRow> {
    let mut rows = Vec::new();
    fair_tree_into(acc, &mut Shape::of(acc), own_usage, &mut rows);
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

/// [`fair_tree`] into `rows`, with the tree's shape worked out before, all
/// but the norm usage ([`with_norm_usage`]).
pub(crate) fn fair_tree_into(acc: &Accounts, shape: &mut Shape, own_usage: &[f64], rows: &mut Vec<FsRow>) {
    let n = acc.assocs.len();
    rows.clear();
    rows.extend((0..n).map(|i| FsRow { raw_usage: own_usage.get(i).copied().unwrap_or(0.0), ..FsRow::default() }));
    // parents come before their children: add each subtree's usage upwards
    for i in (1..n).rev() {
        let p = shape.parent[i];
        if p != u32::MAX {
            let u = rows[i].raw_usage;
            rows[p as usize].raw_usage += u;
        }
    }
    // ancestors come first, so a parent's own figures are known before its children's
    for p in 0..n {
        let group = &shape.kids[p];
        if group.is_empty() {
            continue;
        }
        let usage = rows[p].raw_usage;
        let parent_shares = rows[p].norm_shares;
        for k in group {
            let k = k.0 as usize;
            let r = &mut rows[k];
            r.effective_usage = if usage > 0.0 { r.raw_usage / usage } else { 0.0 };
            if shape.use_parent[k] {
                // it shows the shares it defers to, and ranks first
                r.norm_shares = parent_shares;
                r.level_fs = f64::INFINITY;
                continue;
            }
            r.norm_shares = shape.norm_shares[k];
            r.level_fs = if r.norm_shares == 0.0 { 0.0 } else { r.norm_shares / r.effective_usage };
        }
    }
    for &i in &shape.parent_accounts {
        let i = i as usize;
        let p = shape.fs_parent[i].map_or(0, |q| q.0 as usize);
        let parent_usage = if shape.parent[i] == u32::MAX { 0.0 } else { rows[shape.parent[i] as usize].raw_usage };
        rows[i].norm_shares = rows[p].norm_shares;
        rows[i].effective_usage = if parent_usage > 0.0 { rows[i].raw_usage / parent_usage } else { 0.0 };
        rows[i].level_fs = f64::NAN;
    }
    if shape.users > 0 {
        for (i, k) in shape.key.iter_mut().enumerate() {
            *k = (rows[i].level_fs, shape.user[i]);
        }
        let users = shape.users;
        let mut walk = Walk { shape, rank: users, untied: users, rows };
        walk.visit(AssocId(0), false);
    }
}

struct Walk<'a> {
    shape: &'a mut Shape,
    /// The rank the last user got (a user tied with it gets it too).
    rank: usize,
    /// The rank the next untied user gets: one less for every user ranked.
    untied: usize,
    rows: &'a mut [FsRow],
}

impl Walk<'_> {
    /// Rank the users below `p`, highest Level FS first; `tied`: `p` has the
    /// Level FS of the sibling ranked before it.
    fn visit(&mut self, p: AssocId, tied: bool) {
        let mut kids = std::mem::take(&mut self.shape.kids[p.0 as usize]);
        let key = &self.shape.key;
        // highest first, users before accounts, then declaration order: one
        // order whatever the order before
        kids.sort_by(|a, b| {
            let (ka, kb) = (key[a.0 as usize], key[b.0 as usize]);
            kb.0.total_cmp(&ka.0).then(kb.1.cmp(&ka.1)).then(a.cmp(b))
        });
        for (i, &k) in kids.iter().enumerate() {
            let (lf, user) = self.shape.key[k.0 as usize];
            let tied = if i == 0 { tied } else { lf == self.shape.key[kids[i - 1].0 as usize].0 };
            if user {
                if !tied {
                    self.rank = self.untied;
                }
                self.rows[k.0 as usize].fairshare = self.shape.by_rank[self.rank];
                self.untied -= 1;
            } else {
                self.visit(k, tied);
            }
        }
        self.shape.kids[p.0 as usize] = kids;
    }
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
