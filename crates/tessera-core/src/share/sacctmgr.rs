//! Operators' changes to the accounts, in sacctmgr's words:
//!
//! ```text
//! add account physics Parent=root Fairshare=40 GrpTRES=cpu=512
//! add user alice Account=physics DefaultAccount=physics MaxJobs=4
//! modify account physics set Fairshare=60 GrpJobs=100
//! modify user alice Account=physics set MaxJobs=8 QOS=normal,high
//! delete user alice Account=physics
//! delete account physics
//! add qos high Priority=100 UsageFactor=2 MaxJobsPerUser=20 Preempt=scavenger
//! modify qos high set GrpTRES=cpu=1024 PreemptMode=requeue
//! delete qos high
//! ```
//!
//! Keys are case-insensitive: Fairshare (a number or `parent`), GrpTRES and
//! MaxTRESPerJob (`cpu=N,mem=SIZE`), GrpJobs, GrpSubmitJobs, MaxJobs,
//! MaxSubmitJobs, MaxWall (Slurm's time syntax), QOS (a list), DefaultQOS, and
//! for users DefaultAccount. A QOS takes Priority, UsageFactor, MaxWall,
//! MaxTRESPerUser, MaxJobsPerUser, MaxSubmitJobsPerUser, GrpTRES, GrpJobs,
//! Preempt (a list) and PreemptMode (suspend or requeue). `-1` clears a limit.
//! The result is a new table; the engine takes it with `Input::SetAccounts`,
//! which matches associations and QOS by name.

use super::accounts::{Accounts, Assoc, AssocId, Limits, Qos, QosId, QosPreemptMode};
use crate::duration::parse_duration;

fn num(key: &str, v: &str) -> Result<Option<u32>, String> {
    if v == "-1" {
        return Ok(None);
    }
    v.parse().map(Some).map_err(|_| format!("{key}={v}: expected a count, or -1 for none"))
}

fn tres(key: &str, v: &str) -> Result<super::accounts::Tres, String> {
    let mut t = super::accounts::Tres::default();
    if v == "-1" {
        return Ok(t);
    }
    for part in v.split(',') {
        match part.split_once('=') {
            Some(("cpu", n)) => t.cpu = Some(n.parse().map_err(|_| format!("{key}={v}: expected cpu=N"))?),
            Some(("mem", m)) => t.mem_mb = Some(crate::cluster::config::memory_mb(&crate::cluster::config::RawMemory::Text(m.to_string())).map_err(|e| format!("{key}={v}: {e}"))?),
            _ => return Err(format!("{key}={v}: expected cpu=N,mem=SIZE (or -1 for none)")),
        }
    }
    Ok(t)
}

/// A MaxWall: Slurm's time syntax, or -1 for none.
fn wall(key: &str, v: &str) -> Result<Option<crate::Time>, String> {
    if v == "-1" {
        return Ok(None);
    }
    parse_duration(v).map_err(|()| format!("{key}={v}: expected {}", crate::duration::DURATION_FORMS))
}

/// The words after `set` of a `modify`; words before it are an error (`what`
/// says what may come there instead).
fn after_set<'a>(rest: &'a [&'a str], what: &str) -> Result<&'a [&'a str], String> {
    let s = rest.iter().position(|w| w.eq_ignore_ascii_case("set")).ok_or("modify: expected `set` before the new values")?;
    match rest[..s].first() {
        Some(w) => Err(format!("{w}: expected set{what}")),
        None => Ok(&rest[s + 1..]),
    }
}

/// Apply `key=value` settings to an association.
fn set(acc: &Accounts, a: &mut Assoc, defaults: &mut Option<String>, words: &[&str]) -> Result<(), String> {
    for w in words {
        let (k, v) = w.split_once('=').ok_or_else(|| format!("{w}: expected Key=Value"))?;
        let l: &mut Limits = &mut a.limits;
        match k.to_ascii_lowercase().as_str() {
            "fairshare" | "shares" => {
                if v.eq_ignore_ascii_case("parent") {
                    (a.shares, a.use_parent) = (0, true);
                } else {
                    a.shares = v.parse().map_err(|_| format!("{k}={v}: expected shares (a count) or parent"))?;
                    a.use_parent = false;
                }
            }
            "grptres" => l.grp_tres = tres(k, v)?,
            "maxtresperjob" => l.max_tres_per_job = tres(k, v)?,
            "grpjobs" => l.grp_jobs = num(k, v)?,
            "grpsubmitjobs" => l.grp_submit_jobs = num(k, v)?,
            "maxjobs" => l.max_jobs = num(k, v)?,
            "maxsubmitjobs" => l.max_submit_jobs = num(k, v)?,
            "maxwall" => l.max_wall = wall(k, v)?,
            "qos" => {
                a.qos = v.split(',').filter(|q| !q.is_empty()).map(|q| acc.qos_id(q).ok_or_else(|| format!("{k}={v}: unknown QOS {q}"))).collect::<Result<_, _>>()?;
            }
            "defaultqos" => a.default_qos = if v == "-1" { None } else { Some(acc.qos_id(v).ok_or_else(|| format!("{k}={v}: unknown QOS {v}"))?) },
            "defaultaccount" if a.user.is_some() => *defaults = Some(v.to_string()),
            _ => return Err(format!("{k}: expected one of Fairshare, GrpTRES, GrpJobs, GrpSubmitJobs, MaxJobs, MaxSubmitJobs, MaxWall, MaxTRESPerJob, QOS, DefaultQOS{}", if a.user.is_some() { ", DefaultAccount" } else { "" })),
        }
    }
    Ok(())
}

/// Apply `key=value` settings to a QOS.
fn set_qos(acc: &Accounts, id: QosId, q: &mut Qos, words: &[&str]) -> Result<(), String> {
    for w in words {
        let (k, v) = w.split_once('=').ok_or_else(|| format!("{w}: expected Key=Value"))?;
        match k.to_ascii_lowercase().as_str() {
            "priority" => q.priority = v.parse().map_err(|_| format!("{k}={v}: expected a priority 0..={}", u32::MAX))?,
            "usagefactor" => {
                q.usage_factor = v.parse().ok().filter(|f: &f64| f.is_finite() && *f >= 0.0 && *f <= 1e6).ok_or_else(|| format!("{k}={v}: expected a factor from 0 to 1e6"))?;
            }
            "maxwall" | "maxwalldurationperjob" => q.max_wall = wall(k, v)?,
            "maxtresperuser" | "maxtrespu" => q.max_tres_per_user = tres(k, v)?,
            "maxjobsperuser" | "maxjobspu" => q.max_jobs_per_user = num(k, v)?,
            "maxsubmitjobsperuser" | "maxsubmitjobspu" => q.max_submit_jobs_per_user = num(k, v)?,
            "grptres" => q.grp_tres = tres(k, v)?,
            "grpjobs" => q.grp_jobs = num(k, v)?,
            "preempt" => {
                q.preempt = v.split(',').filter(|x| !x.is_empty() && *x != "-1").map(|x| acc.qos_id(x).ok_or_else(|| format!("{k}={v}: unknown QOS {x}"))).collect::<Result<_, _>>()?;
                if q.preempt.contains(&id) {
                    return Err(format!("{k}={v}: a QOS cannot preempt itself"));
                }
            }
            "preemptmode" => {
                q.preempt_mode = match v.to_ascii_lowercase().as_str() {
                    "suspend" => QosPreemptMode::Suspend,
                    "requeue" => QosPreemptMode::Requeue,
                    _ => return Err(format!("{k}={v}: expected suspend or requeue")),
                }
            }
            _ => return Err(format!("{k}: expected one of Priority, UsageFactor, MaxWall, MaxTRESPerUser, MaxJobsPerUser, MaxSubmitJobsPerUser, GrpTRES, GrpJobs, Preempt, PreemptMode")),
        }
    }
    Ok(())
}

/// The accounts without QOS `name`, or why it must stay: `normal` always
/// does, and so does one an association allows or defaults to, or another
/// QOS preempts. The QOS after it move down one place.
fn delete_qos(acc: &Accounts, name: &str) -> Result<Accounts, String> {
    let id = acc.qos_id(name).ok_or_else(|| format!("no QOS {name}"))?;
    if id == QosId(0) {
        return Err("QOS normal stays".into());
    }
    let users: Vec<String> = acc.assocs.iter().filter(|a| a.qos.contains(&id) || a.default_qos == Some(id)).map(|a| a.user.as_ref().map_or_else(|| a.account.clone(), |u| format!("{}/{u}", a.account))).collect();
    if !users.is_empty() {
        return Err(format!("QOS {name} is allowed or the default for {} (modify them first)", users.join(", ")));
    }
    let preempting: Vec<&str> = acc.qos.iter().filter(|q| q.preempt.contains(&id)).map(|q| q.name.as_str()).collect();
    if !preempting.is_empty() {
        return Err(format!("QOS {name} is preempted by {} (modify them first)", preempting.join(", ")));
    }
    let shift = |q: QosId| if q.0 > id.0 { QosId(q.0 - 1) } else { q };
    let mut out = acc.clone();
    out.qos.remove(id.0 as usize);
    for q in &mut out.qos {
        q.preempt = q.preempt.iter().map(|&p| shift(p)).collect();
    }
    for a in &mut out.assocs {
        a.qos = a.qos.iter().map(|&q| shift(q)).collect();
        a.default_qos = a.default_qos.map(shift);
    }
    Ok(out)
}

/// Take out `key=value` words named `key` (case-insensitive).
fn take(words: &mut Vec<&str>, key: &str) -> Option<String> {
    let i = words.iter().position(|w| w.split_once('=').is_some_and(|(k, _)| k.eq_ignore_ascii_case(key)))?;
    Some(words.remove(i).split_once('=').expect("checked").1.to_string())
}

/// The accounts after an operator's change, or what is wrong with it.
pub fn apply<S: AsRef<str>>(acc: &Accounts, words: &[S]) -> Result<Accounts, String> {
    let words: Vec<&str> = words.iter().map(|w| w.as_ref()).collect();
    let (verb, kind, name, rest) = match words.as_slice() {
        [v, k, n, rest @ ..] => (v.to_ascii_lowercase(), k.to_ascii_lowercase(), *n, rest.to_vec()),
        _ => return Err("expected add|modify|delete account|user|qos NAME [Key=Value ...]".into()),
    };
    let mut out = acc.clone();
    let mut rest = rest;
    match (verb.as_str(), kind.as_str()) {
        ("add", "account") => {
            if acc.account(name).is_some() {
                return Err(format!("account {name} exists already"));
            }
            let parent = take(&mut rest, "parent").unwrap_or_else(|| "root".into());
            let p = acc.account(&parent).ok_or_else(|| format!("Parent={parent}: unknown account"))?;
            let mut a = Assoc { account: name.to_string(), user: None, parent: Some(p), shares: 1, use_parent: false, limits: Limits::default(), qos: Vec::new(), default_qos: None };
            set(acc, &mut a, &mut None, &rest)?;
            out.push(a);
        }
        ("add", "user") => {
            let account = take(&mut rest, "account").ok_or("add user: Account=NAME is needed")?;
            let p = acc.account(&account).ok_or_else(|| format!("Account={account}: unknown account"))?;
            if acc.user_assoc(name, &account).is_some() {
                return Err(format!("user {name} has an association with account {account} already"));
            }
            let mut a = Assoc { account: account.clone(), user: Some(name.to_string()), parent: Some(p), shares: 1, use_parent: false, limits: Limits::default(), qos: Vec::new(), default_qos: None };
            let mut default = None;
            set(acc, &mut a, &mut default, &rest)?;
            out.push(a);
            let d = default.unwrap_or_else(|| acc.defaults.get(name).cloned().unwrap_or(account));
            out.defaults.insert(name.to_string(), d);
        }
        ("modify", k @ ("account" | "user")) => {
            let account = if k == "user" { take(&mut rest, "account") } else { None };
            let after = after_set(&rest, " (or Account=NAME for a user)")?;
            let ids: Vec<AssocId> = if k == "account" {
                vec![acc.account(name).ok_or_else(|| format!("unknown account {name}"))?]
            } else {
                let v: Vec<AssocId> = (0..acc.assocs.len() as u32).map(AssocId).filter(|&i| acc.get(i).user.as_deref() == Some(name) && account.as_ref().is_none_or(|a| acc.get(i).account == *a)).collect();
                if v.is_empty() {
                    return Err(format!("user {name} has no association{}", account.map(|a| format!(" with account {a}")).unwrap_or_default()));
                }
                v
            };
            for id in ids {
                let mut a = out.assocs[id.0 as usize].clone();
                let mut default = None;
                set(acc, &mut a, &mut default, after)?;
                out.assocs[id.0 as usize] = a;
                if let Some(d) = default {
                    if out.user_assoc(name, &d).is_none() {
                        return Err(format!("DefaultAccount={d}: user {name} has no association with it"));
                    }
                    out.defaults.insert(name.to_string(), d);
                }
            }
        }
        ("delete", k @ ("account" | "user")) => {
            let account = if k == "user" { take(&mut rest, "account") } else { None };
            if let Some(w) = rest.first() {
                return Err(format!("{w}: unexpected"));
            }
            if k == "account" && name == "root" {
                return Err("the root account stays".into());
            }
            // the association(s) and everything below them go
            let gone: Vec<bool> = (0..acc.assocs.len() as u32)
                .map(|i| {
                    acc.lineage(AssocId(i)).any(|x| {
                        let a = acc.get(x);
                        if k == "account" { a.user.is_none() && a.account == name } else { a.user.as_deref() == Some(name) && account.as_ref().is_none_or(|c| a.account == *c) }
                    })
                })
                .collect();
            if !gone.iter().any(|&g| g) {
                return Err(format!("no {k} {name}{}", account.map(|a| format!(" in account {a}")).unwrap_or_default()));
            }
            let mut index = vec![None; acc.assocs.len()];
            out.assocs.clear();
            for (i, a) in acc.assocs.iter().enumerate() {
                if !gone[i] {
                    index[i] = Some(AssocId(out.assocs.len() as u32));
                    let mut a = a.clone();
                    a.parent = a.parent.map(|p| index[p.0 as usize].expect("a parent before its children"));
                    out.assocs.push(a);
                }
            }
            // defaults that named a deleted association move to one that is left
            let users: Vec<String> = out.defaults.keys().cloned().collect();
            for u in users {
                let d = out.defaults[&u].clone();
                if out.user_assoc(&u, &d).is_none() {
                    match out.assocs.iter().find(|a| a.user.as_deref() == Some(u.as_str())) {
                        Some(a) => {
                            let acct = a.account.clone();
                            out.defaults.insert(u, acct);
                        }
                        None => {
                            out.defaults.remove(&u);
                        }
                    }
                }
            }
        }
        ("add", "qos") => {
            if acc.qos_id(name).is_some() {
                return Err(format!("QOS {name} exists already"));
            }
            if acc.qos.len() >= u16::MAX as usize {
                return Err("too many QOS".into());
            }
            let mut q = Qos { name: name.to_string(), ..Qos::normal() };
            set_qos(acc, QosId(acc.qos.len() as u16), &mut q, &rest)?;
            out.qos.push(q);
        }
        ("modify", "qos") => {
            let id = acc.qos_id(name).ok_or_else(|| format!("no QOS {name}"))?;
            set_qos(acc, id, &mut out.qos[id.0 as usize], after_set(&rest, "")?)?;
        }
        ("delete", "qos") => {
            if let Some(w) = rest.first() {
                return Err(format!("{w}: unexpected"));
            }
            return delete_qos(acc, name);
        }
        _ => return Err(format!("{verb} {kind}: expected add, modify or delete, of an account, a user or a QOS")),
    }
    Ok(out)
}
