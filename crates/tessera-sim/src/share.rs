//! Fair share in the simulator: which association each trace job charges, and
//! what each account and user received against the share it was given.
//!
//! A trace names users and groups by number (SWF fields 12 and 13). Without an
//! accounts file each group is an account under root and each (user, group) an
//! association, all with one share ([`Accounts::from_groups`]), named `g<group>`
//! and `u<user>`. With a file, a job charges its user's association with its
//! group's account `g<group>` when the user has one, else the user's default
//! account; a job of a user the file does not know is an error (Slurm refuses
//! such a submission). A trace whose header names its numbers (`; Note: user
//! 3 = alice`, `; Note: account 2 = physics`, as `tessera import sacct`
//! writes them) charges by those names instead. Usage accrues from the
//! trace's own history, from an empty start, or from a site's imported
//! history (`history`: `tessera sim run --usage-from`).

use crate::metrics::job_times;
use crate::{SimOutcome, Workload};
use serde::Serialize;
use std::collections::BTreeMap;
use tessera_core::share::{trace_group, trace_user, Accounts, AssocId, PastJob, PriorityConfig, Ticket};
use tessera_core::Time;
use tessera_workload::jobs::TraceJob;
use tessera_workload::swf::SwfHeader;

/// The names behind a trace's user and group numbers, from its header's
/// notes (`; Note: user 3 = alice`, `; Note: account 2 = physics`): a job
/// of user 3 and group 2 charges alice's association under physics.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceNames {
    pub users: BTreeMap<i32, String>,
    pub accounts: BTreeMap<i32, String>,
}

impl TraceNames {
    pub fn of(header: &SwfHeader) -> TraceNames {
        let mut n = TraceNames::default();
        for l in &header.lines {
            let Some(note) = l.trim_start_matches(';').trim().strip_prefix("Note:") else { continue };
            let Some((what, name)) = note.split_once('=') else { continue };
            let mut w = what.split_whitespace();
            let (Some(kind), Some(num), None) = (w.next(), w.next().and_then(|x| x.parse::<i32>().ok()), w.next()) else { continue };
            let name = name.trim().to_string();
            match kind {
                "user" => n.users.insert(num, name),
                "account" => n.accounts.insert(num, name),
                _ => None,
            };
        }
        n
    }
}

/// The accounts and settings a simulation runs with, and each job's ticket.
#[derive(Clone, Debug)]
pub struct SimSharing {
    pub accounts: Accounts,
    pub priority: PriorityConfig,
    /// By job index.
    pub tickets: Vec<Ticket>,
    /// Where the accounts come from (a file, or "the trace's groups").
    pub source: String,
    /// Usage before the simulation's first instant, `history_at` (an
    /// imported history: `Engine::with_history`).
    pub history: Vec<PastJob>,
    pub history_at: Time,
}

/// Trace users the accounts do not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {jobs} jobs of {} users have no association ({}{}): add them as [[user]] tables, or leave out the accounts file to make each trace group an account", users.len(), users.iter().take(8).cloned().collect::<Vec<_>>().join(", "), if users.len() > 8 { ", …" } else { "" })]
pub struct NoAssociation {
    pub file: String,
    pub jobs: usize,
    pub users: Vec<String>,
}

impl SimSharing {
    /// Leave out of `w` the jobs a limit they could never meet would refuse
    /// (counted as skipped, `over_limit`), with their tickets.
    pub fn drop_never_met(&mut self, w: &mut crate::Workload) {
        let Some(book) = tessera_core::share::never_met_checker(&self.accounts) else { return };
        // the memory a job asks on this machine (its partition's default if the trace gives none)
        let keep: Vec<bool> = w.jobs.iter().zip(&self.tickets).map(|(j, t)| book(t, j.procs, w.machine.spec(j).mem_per_proc_mb, j.estimate).is_none()).collect();
        let dropped = keep.iter().filter(|k| !**k).count();
        if dropped == 0 {
            return;
        }
        let mut it = keep.iter();
        w.jobs.retain(|_| *it.next().expect("one per job"));
        let mut it = keep.iter();
        w.record_index.retain(|_| *it.next().expect("one per job"));
        let mut it = keep.iter();
        self.tickets.retain(|_| *it.next().expect("one per job"));
        if !w.power_jobs.is_empty() {
            let mut it = keep.iter();
            w.power_jobs.retain(|_| *it.next().expect("one per job"));
        }
        *w.skipped.entry(tessera_workload::jobs::SkipReason::OverLimit).or_insert(0) += dropped as u64;
    }

    /// Each trace group an account, each (user, group) an association.
    pub fn from_trace(jobs: &[TraceJob], priority: PriorityConfig) -> SimSharing {
        let accounts = Accounts::from_groups(jobs.iter().map(|j| (j.group as i64, j.user as i64)));
        let tickets = Self::resolve(jobs, &accounts, "the trace's groups", &TraceNames::default()).expect("every trace user has an association with its group");
        SimSharing { accounts, priority, tickets, source: "the trace's groups".into(), history: Vec::new(), history_at: 0 }
    }

    /// The accounts of a file (`names`: the trace's own names for its numbers).
    pub fn from_file(jobs: &[TraceJob], accounts: Accounts, priority: PriorityConfig, source: &str, names: &TraceNames) -> Result<SimSharing, NoAssociation> {
        let tickets = Self::resolve(jobs, &accounts, source, names)?;
        Ok(SimSharing { accounts, priority, tickets, source: source.to_string(), history: Vec::new(), history_at: 0 })
    }

    fn resolve(jobs: &[TraceJob], accounts: &Accounts, source: &str, names: &TraceNames) -> Result<Vec<Ticket>, NoAssociation> {
        let mut tickets = Vec::with_capacity(jobs.len());
        let mut missing = std::collections::BTreeSet::new();
        let mut n_missing = 0;
        let mut cache: std::collections::BTreeMap<(i32, i32), Option<Ticket>> = Default::default();
        for j in jobs {
            let user = || names.users.get(&j.user).cloned().unwrap_or_else(|| trace_user(j.user as i64));
            let t = *cache.entry((j.user, j.group)).or_insert_with(|| {
                let account = names.accounts.get(&j.group).cloned().unwrap_or_else(|| trace_group(j.group as i64));
                accounts.ticket(&user(), Some(&account), None, 0).or_else(|_| accounts.ticket(&user(), None, None, 0)).ok()
            });
            match t {
                Some(t) => tickets.push(t),
                None => {
                    n_missing += 1;
                    missing.insert(user());
                }
            }
        }
        if n_missing > 0 {
            return Err(NoAssociation { file: source.to_string(), jobs: n_missing, users: missing.into_iter().collect() });
        }
        Ok(tickets)
    }
}

/// What one association received in a run.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ShareRow {
    /// `account` or `account/user`.
    pub association: String,
    pub depth: usize,
    pub jobs: u64,
    pub mean_wait_s: f64,
    pub mean_bounded_slowdown: f64,
    /// Core-seconds its jobs held (every node's cores alike).
    pub core_s: f64,
    /// Its share of the machine as given: its shares over its siblings', times
    /// its parent's, up to root.
    pub share_given: f64,
    /// Its part of all core-seconds held.
    pub share_received: f64,
}

/// Waits, slowdowns and the share each association received, accounts and
/// users, in tree order; None for a run without accounts.
pub fn fairness(w: &Workload, o: &SimOutcome) -> Option<Vec<ShareRow>> {
    let s = w.sharing.as_ref()?;
    let acc = &s.accounts;
    let n = acc.assocs.len();
    let times = job_times(w, o);
    let (mut jobs, mut wait, mut bsld, mut core_s) = (vec![0u64; n], vec![0f64; n], vec![0f64; n], vec![0f64; n]);
    for (i, t) in times.iter().enumerate() {
        for a in acc.lineage(s.tickets[i].assoc) {
            let k = a.0 as usize;
            jobs[k] += 1;
            wait[k] += t.wait();
            bsld[k] += t.bounded_slowdown();
            core_s[k] += t.held;
        }
    }
    let total = core_s[0];
    let children = acc.children();
    let mut given = vec![0f64; n];
    given[0] = 1.0;
    for (p, kids) in children.iter().enumerate() {
        let sum: f64 = kids.iter().map(|k| acc.get(*k).shares as f64).sum();
        for k in kids {
            given[k.0 as usize] = if sum > 0.0 { given[p] * acc.get(*k).shares as f64 / sum } else { 0.0 };
        }
    }
    let mut rows = Vec::with_capacity(n);
    let mut order = vec![(AssocId(0), 0usize)];
    while let Some((a, depth)) = order.pop() {
        let k = a.0 as usize;
        let m = jobs[k].max(1) as f64;
        rows.push(ShareRow {
            association: acc.get(a).label(),
            depth,
            jobs: jobs[k],
            mean_wait_s: wait[k] / m,
            mean_bounded_slowdown: if jobs[k] == 0 { 0.0 } else { bsld[k] / m },
            core_s: core_s[k],
            share_given: given[k],
            share_received: if total > 0.0 { core_s[k] / total } else { 0.0 },
        });
        for c in children[k].iter().rev() {
            order.push((*c, depth + 1));
        }
    }
    Some(rows)
}

/// The shares as text: root and the accounts below it, then the `top` users
/// that received most (the JSON summary has every association).
pub fn fairness_table(rows: &[ShareRow], top: usize) -> String {
    let mut shown: Vec<&ShareRow> = rows.iter().filter(|r| !r.association.contains('/')).collect();
    let mut users: Vec<&ShareRow> = rows.iter().filter(|r| r.association.contains('/')).collect();
    users.sort_by(|a, b| b.core_s.total_cmp(&a.core_s).then_with(|| a.association.cmp(&b.association)));
    let hidden = users.len().saturating_sub(top);
    shown.extend(users.into_iter().take(top));
    let mut out = String::from("\nshares (accounts; users by core-hours received)\n");
    let w = shown.iter().map(|r| r.association.len() + 2 * r.depth.min(8)).max().unwrap_or(0).max(11);
    out.push_str(&format!("{:<w$}  {:>8}  {:>12}  {:>10}  {:>12}  {:>6}  {:>8}\n", "association", "jobs", "mean wait s", "mean bsld", "core-hours", "given", "received"));
    for r in shown {
        let name = format!("{}{}", "  ".repeat(if r.association.contains('/') { 0 } else { r.depth.min(8) }), r.association);
        out.push_str(&format!("{name:<w$}  {:>8}  {:>12.1}  {:>10.2}  {:>12.1}  {:>5.1}%  {:>7.1}%\n", r.jobs, r.mean_wait_s, r.mean_bounded_slowdown, r.core_s / 3600.0, 100.0 * r.share_given, 100.0 * r.share_received));
    }
    if hidden > 0 {
        out.push_str(&format!("({hidden} more users in the JSON summary)\n"));
    }
    out
}
