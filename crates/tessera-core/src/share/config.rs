//! Reading accounts, QOS and priority settings: from a cluster file's own
//! `[priority]`, `[[qos]]`, `[[account]]` and `[[user]]` tables, or from the
//! accounts file it names (same tables). Stage 1 is a raw serde struct that
//! rejects unknown keys inside each table; stage 2 the validated
//! [`Accounts`] and [`PriorityConfig`]. Errors name file, line, key and what
//! was expected, as the cluster file's do.

use super::accounts::{Accounts, Assoc, Limits, Qos, QosId, QosPreemptMode, Tres};
use super::priority::{PriorityConfig, Weights};
use crate::cluster::config::{memory_mb, plain_name, RawMemory, Source};
use crate::cluster::ClusterError;
use crate::duration::{parse_duration, DURATION_FORMS};
use crate::Time;
use serde::Deserialize;
use std::collections::BTreeMap;

/// What a file says about sharing.
#[derive(Clone, Debug, PartialEq)]
pub struct SharingConfig {
    pub accounts: Accounts,
    pub priority: PriorityConfig,
}

#[derive(Deserialize)]
struct RawSharing {
    priority: Option<toml::Spanned<RawPriority>>,
    #[serde(default)]
    qos: Vec<toml::Spanned<RawQos>>,
    #[serde(default)]
    account: Vec<toml::Spanned<RawAccount>>,
    #[serde(default)]
    user: Vec<toml::Spanned<RawUser>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPriority {
    #[serde(rename = "type")]
    kind: Option<String>,
    calc_period: Option<RawTime>,
    half_life: Option<RawTime>,
    max_age: Option<RawTime>,
    usage: Option<String>,
    favor_small: Option<bool>,
    weights: Option<RawWeights>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWeights {
    age: Option<i64>,
    fairshare: Option<i64>,
    jobsize: Option<i64>,
    partition: Option<i64>,
    qos: Option<i64>,
}

/// Slurm's time syntax as text, or a bare number of minutes (as slurm.conf
/// reads one).
#[derive(Deserialize)]
#[serde(untagged)]
enum RawTime {
    Minutes(i64),
    Text(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTres {
    cpu: Option<i64>,
    mem: Option<RawMemory>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    grp_tres: Option<RawTres>,
    grp_jobs: Option<i64>,
    grp_submit_jobs: Option<i64>,
    max_jobs: Option<i64>,
    max_submit_jobs: Option<i64>,
    max_wall: Option<RawTime>,
    max_tres_per_job: Option<RawTres>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawShares {
    Count(i64),
    Word(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAccount {
    name: String,
    parent: Option<String>,
    shares: Option<RawShares>,
    qos: Option<Vec<String>>,
    default_qos: Option<String>,
    #[serde(flatten)]
    limits: RawLimits,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUser {
    name: String,
    account: Option<String>,
    accounts: Option<Vec<String>>,
    default_account: Option<String>,
    shares: Option<RawShares>,
    qos: Option<Vec<String>>,
    default_qos: Option<String>,
    #[serde(flatten)]
    limits: RawLimits,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQos {
    name: String,
    priority: Option<i64>,
    usage_factor: Option<f64>,
    max_wall: Option<RawTime>,
    max_tres_per_user: Option<RawTres>,
    max_jobs_per_user: Option<i64>,
    max_submit_jobs_per_user: Option<i64>,
    grp_tres: Option<RawTres>,
    grp_jobs: Option<i64>,
    preempt: Option<Vec<String>>,
    preempt_mode: Option<String>,
}

/// The most jobs or processors a limit may name.
const MAX_COUNT: i64 = u32::MAX as i64;

impl SharingConfig {
    /// The sharing tables of a file's text (a cluster file's, or an accounts
    /// file's); None when it has none.
    pub fn from_toml(text: &str, source_name: &str) -> Result<Option<SharingConfig>, ClusterError> {
        let src = Source::new(text, source_name);
        let raw: RawSharing = toml::from_str(text).map_err(|e| {
            let line = e.span().and_then(|s| src.line_of(s));
            src.err(line, String::new(), e.message().trim().to_string())
        })?;
        if raw.priority.is_none() && raw.qos.is_empty() && raw.account.is_empty() && raw.user.is_empty() {
            return Ok(None);
        }
        let priority = match &raw.priority {
            None => PriorityConfig::default(),
            Some(p) => read_priority(&src, p)?,
        };
        let mut acc = Accounts::new();
        read_qos(&src, &raw.qos, &mut acc)?;
        read_accounts(&src, &raw.account, &mut acc)?;
        read_users(&src, &raw.user, &mut acc)?;
        Ok(Some(SharingConfig { accounts: acc, priority }))
    }
}

impl SharingConfig {
    /// A cluster file's sharing: its own tables, or those of the accounts file
    /// it names (`accounts = "..."`), which `read` fetches by the name as
    /// written (returning its text and the name to show, or why it could not).
    /// None when it has neither.
    pub fn of_cluster(text: &str, source_name: &str, accounts_file: Option<&str>, read: impl FnOnce(&str) -> Result<(String, String), String>) -> Result<Option<SharingConfig>, ClusterError> {
        let own = SharingConfig::from_toml(text, source_name)?;
        let Some(file) = accounts_file else { return Ok(own) };
        let src = Source::new(text, source_name);
        let at = src.key_line(0..text.len(), "accounts");
        if own.is_some() {
            return Err(src.err(at, "accounts", "the cluster file has [priority], [[qos]], [[account]] or [[user]] tables and names an accounts file: keep them in one place"));
        }
        let (other, name) = read(file).map_err(|m| src.err(at, "accounts", m))?;
        match SharingConfig::from_toml(&other, &name)? {
            Some(c) => Ok(Some(c)),
            None => Err(src.err(at, "accounts", format!("{name} has no [priority], [[qos]], [[account]] or [[user]] tables"))),
        }
    }
}

/// Errors of one table: `at(key)` is the key's line, `key(k)` its path.
struct Table<'s, 'a> {
    src: &'s Source<'a>,
    span: std::ops::Range<usize>,
    path: String,
}

impl Table<'_, '_> {
    fn err(&self, key: &str, message: impl Into<String>) -> ClusterError {
        let path = if key.is_empty() { self.path.clone() } else { format!("{}.{key}", self.path) };
        self.src.err(self.src.key_line(self.span.clone(), key.split('.').next().unwrap_or(key)), path, message)
    }

    fn time(&self, key: &str, t: &RawTime) -> Result<Option<Time>, ClusterError> {
        let text = match t {
            RawTime::Minutes(m) => m.to_string(),
            RawTime::Text(s) => s.clone(),
        };
        parse_duration(&text).map_err(|()| self.err(key, format!("expected {DURATION_FORMS}, found {}", crate::quote::bounded(&text))))
    }

    fn count(&self, key: &str, v: Option<i64>) -> Result<Option<u32>, ClusterError> {
        match v {
            None => Ok(None),
            Some(n) if (0..=MAX_COUNT).contains(&n) => Ok(Some(n as u32)),
            Some(n) => Err(self.err(key, format!("expected a count 0..={MAX_COUNT}, found {n}"))),
        }
    }

    fn tres(&self, key: &str, t: &Option<RawTres>) -> Result<Tres, ClusterError> {
        let Some(t) = t else { return Ok(Tres::default()) };
        let cpu = self.count(&format!("{key}.cpu"), t.cpu)?.map(u64::from);
        let mem_mb = t.mem.as_ref().map(|m| memory_mb(m).map_err(|m| self.err(&format!("{key}.mem"), m))).transpose()?;
        Ok(Tres { cpu, mem_mb })
    }

    fn limits(&self, l: &RawLimits) -> Result<Limits, ClusterError> {
        Ok(Limits {
            grp_tres: self.tres("grp_tres", &l.grp_tres)?,
            grp_jobs: self.count("grp_jobs", l.grp_jobs)?,
            grp_submit_jobs: self.count("grp_submit_jobs", l.grp_submit_jobs)?,
            max_jobs: self.count("max_jobs", l.max_jobs)?,
            max_submit_jobs: self.count("max_submit_jobs", l.max_submit_jobs)?,
            max_wall: l.max_wall.as_ref().map(|t| self.time("max_wall", t)).transpose()?.flatten(),
            max_tres_per_job: self.tres("max_tres_per_job", &l.max_tres_per_job)?,
        })
    }

    fn shares(&self, s: &Option<RawShares>) -> Result<(u32, bool), ClusterError> {
        match s {
            None => Ok((1, false)),
            Some(RawShares::Count(n)) if (0..=MAX_COUNT).contains(n) => Ok((*n as u32, false)),
            Some(RawShares::Word(w)) if w.eq_ignore_ascii_case("parent") => Ok((0, true)),
            Some(RawShares::Count(n)) => Err(self.err("shares", format!("expected shares 0..={MAX_COUNT} or \"parent\", found {n}"))),
            Some(RawShares::Word(w)) => Err(self.err("shares", format!("expected shares 0..={MAX_COUNT} or \"parent\", found {}", crate::quote::bounded(w)))),
        }
    }

    fn qos_list(&self, acc: &Accounts, key: &str, names: &Option<Vec<String>>) -> Result<Vec<QosId>, ClusterError> {
        names.iter().flatten().map(|n| self.qos(acc, key, n)).collect()
    }

    fn qos(&self, acc: &Accounts, key: &str, name: &str) -> Result<QosId, ClusterError> {
        acc.qos_id(name).ok_or_else(|| self.err(key, format!("unknown QOS {}; known: {}", crate::quote::bounded(name), acc.qos.iter().map(|q| q.name.as_str()).collect::<Vec<_>>().join(", "))))
    }
}

fn read_priority(src: &Source<'_>, p: &toml::Spanned<RawPriority>) -> Result<PriorityConfig, ClusterError> {
    let t = Table { src, span: p.span(), path: "priority".into() };
    let r = p.get_ref();
    let d = PriorityConfig::default();
    let kind = match &r.kind {
        None => d.kind,
        Some(k) => k.parse().map_err(|m: String| t.err("type", m))?,
    };
    let calc_period = match &r.calc_period {
        None => d.calc_period,
        Some(v) => t.time("calc_period", v)?.ok_or_else(|| t.err("calc_period", "expected a period of at least a second"))?,
    };
    let half_life = match &r.half_life {
        None => d.half_life,
        Some(v) => t.time("half_life", v)?.unwrap_or(0),
    };
    let max_age = match &r.max_age {
        None => d.max_age,
        Some(v) => t.time("max_age", v)?.ok_or_else(|| t.err("max_age", "expected an age of at least a second"))?,
    };
    let usage = match &r.usage {
        None => d.usage,
        Some(u) => u.parse().map_err(|m: String| t.err("usage", m))?,
    };
    let weight = |k: &str, v: Option<i64>, def: u32| -> Result<u32, ClusterError> {
        match v {
            None => Ok(def),
            Some(n) if (0..=MAX_COUNT).contains(&n) => Ok(n as u32),
            Some(n) => Err(t.err(&format!("weights.{k}"), format!("expected a weight 0..={MAX_COUNT}, found {n}"))),
        }
    };
    let w = r.weights.as_ref();
    let dw = d.weights;
    let weights = Weights {
        age: weight("age", w.and_then(|w| w.age), dw.age)?,
        fairshare: weight("fairshare", w.and_then(|w| w.fairshare), dw.fairshare)?,
        jobsize: weight("jobsize", w.and_then(|w| w.jobsize), dw.jobsize)?,
        partition: weight("partition", w.and_then(|w| w.partition), dw.partition)?,
        qos: weight("qos", w.and_then(|w| w.qos), dw.qos)?,
    };
    Ok(PriorityConfig { kind, weights, max_age, half_life, calc_period, usage, favor_small: r.favor_small.unwrap_or(d.favor_small) })
}

fn name_ok(t: &Table<'_, '_>, name: &str) -> Result<(), ClusterError> {
    if name.is_empty() || name.contains('/') || name.contains(',') || name.chars().any(char::is_whitespace) {
        return Err(t.err("name", format!("expected a name without white space, `/` or `,`, found {}", crate::quote::bounded(name))));
    }
    plain_name(name).map_err(|m| t.err("name", m))
}

fn read_qos(src: &Source<'_>, raw: &[toml::Spanned<RawQos>], acc: &mut Accounts) -> Result<(), ClusterError> {
    // names first, so that preempt lists may name any QOS of the file
    for (i, q) in raw.iter().enumerate() {
        let t = Table { src, span: q.span(), path: format!("qos[{i}]") };
        let name = &q.get_ref().name;
        name_ok(&t, name)?;
        if raw[..i].iter().any(|o| &o.get_ref().name == name) {
            return Err(t.err("name", format!("QOS {} is declared twice", crate::quote::bounded(name))));
        }
        if acc.qos_id(name).is_none() {
            acc.qos.push(Qos { name: name.clone(), ..Qos::normal() });
        }
    }
    for (i, q) in raw.iter().enumerate() {
        let t = Table { src, span: q.span(), path: format!("qos[{i}]") };
        let r = q.get_ref();
        let id = acc.qos_id(&r.name).expect("named above");
        let priority = t.count("priority", r.priority)?.unwrap_or(0);
        let usage_factor = match r.usage_factor {
            None => 1.0,
            Some(f) if f.is_finite() && (0.0..=1e6).contains(&f) => f,
            Some(f) => return Err(t.err("usage_factor", format!("expected a factor 0..=1000000, found {f}"))),
        };
        let preempt = t.qos_list(acc, "preempt", &r.preempt)?;
        if preempt.contains(&id) {
            return Err(t.err("preempt", "a QOS cannot preempt itself"));
        }
        let preempt_mode = match r.preempt_mode.as_deref() {
            None | Some("suspend") => QosPreemptMode::Suspend,
            Some("requeue") => QosPreemptMode::Requeue,
            Some(o) => return Err(t.err("preempt_mode", format!("expected \"suspend\" or \"requeue\", found {}", crate::quote::bounded(o)))),
        };
        acc.qos[id.0 as usize] = Qos {
            name: r.name.clone(),
            priority,
            usage_factor,
            max_wall: r.max_wall.as_ref().map(|v| t.time("max_wall", v)).transpose()?.flatten(),
            max_tres_per_user: t.tres("max_tres_per_user", &r.max_tres_per_user)?,
            max_jobs_per_user: t.count("max_jobs_per_user", r.max_jobs_per_user)?,
            max_submit_jobs_per_user: t.count("max_submit_jobs_per_user", r.max_submit_jobs_per_user)?,
            grp_tres: t.tres("grp_tres", &r.grp_tres)?,
            grp_jobs: t.count("grp_jobs", r.grp_jobs)?,
            preempt,
            preempt_mode,
        };
    }
    Ok(())
}

fn read_accounts(src: &Source<'_>, raw: &[toml::Spanned<RawAccount>], acc: &mut Accounts) -> Result<(), ClusterError> {
    let table = |i: usize| Table { src, span: raw[i].span(), path: format!("account[{i}]") };
    for (i, a) in raw.iter().enumerate() {
        let t = table(i);
        name_ok(&t, &a.get_ref().name)?;
        if raw[..i].iter().any(|o| o.get_ref().name == a.get_ref().name) {
            return Err(t.err("name", format!("account {} is declared twice", crate::quote::bounded(&a.get_ref().name))));
        }
    }
    // root's own line sets root's limits and QOS
    let mut pending: Vec<usize> = Vec::new();
    for (i, a) in raw.iter().enumerate() {
        let r = a.get_ref();
        if r.name == "root" {
            let t = table(i);
            if r.parent.is_some() {
                return Err(t.err("parent", "root has no parent"));
            }
            let root = &mut acc.assocs[0];
            root.limits = t.limits(&r.limits)?;
            let qos = t.qos_list(acc, "qos", &r.qos)?;
            let default_qos = r.default_qos.as_deref().map(|q| t.qos(acc, "default_qos", q)).transpose()?;
            acc.assocs[0].qos = qos;
            acc.assocs[0].default_qos = default_qos;
        } else {
            pending.push(i);
        }
    }
    // parents before children, whatever the file's order
    while !pending.is_empty() {
        let before = pending.len();
        let mut left = Vec::new();
        for i in pending {
            let r = raw[i].get_ref();
            let t = table(i);
            let parent_name = r.parent.as_deref().unwrap_or("root");
            let Some(parent) = acc.account(parent_name) else {
                if !raw.iter().any(|o| o.get_ref().name == parent_name) {
                    return Err(t.err("parent", format!("unknown account {}", crate::quote::bounded(parent_name))));
                }
                left.push(i);
                continue;
            };
            let (shares, use_parent) = t.shares(&r.shares)?;
            let a = Assoc {
                account: r.name.clone(),
                user: None,
                parent: Some(parent),
                shares,
                use_parent,
                limits: t.limits(&r.limits)?,
                qos: t.qos_list(acc, "qos", &r.qos)?,
                default_qos: r.default_qos.as_deref().map(|q| t.qos(acc, "default_qos", q)).transpose()?,
            };
            acc.push(a);
        }
        if left.len() == before {
            let t = table(left[0]);
            return Err(t.err("parent", "the accounts' parents form a cycle"));
        }
        pending = left;
    }
    Ok(())
}

fn read_users(src: &Source<'_>, raw: &[toml::Spanned<RawUser>], acc: &mut Accounts) -> Result<(), ClusterError> {
    let mut defaults: BTreeMap<String, String> = BTreeMap::new();
    for (i, u) in raw.iter().enumerate() {
        let t = Table { src, span: u.span(), path: format!("user[{i}]") };
        let r = u.get_ref();
        name_ok(&t, &r.name)?;
        let accounts: Vec<String> = match (&r.account, &r.accounts) {
            (Some(a), None) => vec![a.clone()],
            (None, Some(v)) if !v.is_empty() => v.clone(),
            (Some(_), Some(_)) => return Err(t.err("accounts", "give `account` or `accounts`, not both")),
            _ => return Err(t.err("account", "expected the account the user charges (`account = \"...\"` or `accounts = [...]`)")),
        };
        let (shares, use_parent) = t.shares(&r.shares)?;
        let limits = t.limits(&r.limits)?;
        let qos = t.qos_list(acc, "qos", &r.qos)?;
        let default_qos = r.default_qos.as_deref().map(|q| t.qos(acc, "default_qos", q)).transpose()?;
        for a in &accounts {
            let parent = acc.account(a).ok_or_else(|| t.err("account", format!("unknown account {}", crate::quote::bounded(a))))?;
            if acc.user_assoc(&r.name, a).is_some() {
                return Err(t.err("account", format!("user {} already has an association with account {}", crate::quote::bounded(&r.name), crate::quote::bounded(a))));
            }
            acc.push(Assoc { account: a.clone(), user: Some(r.name.clone()), parent: Some(parent), shares, use_parent, limits: limits.clone(), qos: qos.clone(), default_qos });
        }
        match &r.default_account {
            Some(d) if !accounts.contains(d) && acc.user_assoc(&r.name, d).is_none() => {
                return Err(t.err("default_account", format!("user {} has no association with account {}", crate::quote::bounded(&r.name), crate::quote::bounded(d))));
            }
            Some(d) => {
                defaults.insert(r.name.clone(), d.clone());
            }
            None => {
                defaults.entry(r.name.clone()).or_insert_with(|| accounts[0].clone());
            }
        }
    }
    acc.defaults = defaults;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
[priority]
type = "multifactor"
calc_period = 5
half_life = "7-0"
usage = "canonical"
weights = { age = 100, fairshare = 5000 }

[[qos]]
name = "high"
priority = 100
max_wall = "1-0"
max_tres_per_user = { cpu = 64, mem = "1T" }
preempt = ["scavenger"]

[[qos]]
name = "scavenger"
usage_factor = 0.0
preempt_mode = "requeue"

[[account]]
name = "theory"
parent = "physics"
shares = 10

[[account]]
name = "physics"
shares = 40
grp_tres = { cpu = 512 }
qos = ["normal", "high"]

[[user]]
name = "alice"
accounts = ["theory", "physics"]
default_account = "physics"
max_jobs = 4
"#;

    #[test]
    fn a_whole_file() {
        let c = SharingConfig::from_toml(FILE, "acct.toml").unwrap().unwrap();
        assert_eq!(c.priority.calc_period, 300);
        assert_eq!(c.priority.half_life, 7 * 86_400);
        assert_eq!((c.priority.weights.age, c.priority.weights.fairshare, c.priority.weights.qos), (100, 5000, 1000));
        let a = &c.accounts;
        let labels: Vec<String> = a.assocs.iter().map(Assoc::label).collect();
        assert_eq!(labels, ["root", "physics", "theory", "theory/alice", "physics/alice"]);
        assert_eq!(a.get(a.account("physics").unwrap()).limits.grp_tres.cpu, Some(512));
        assert_eq!(a.qos(a.qos_id("high").unwrap()).max_tres_per_user.mem_mb, Some(1024 * 1024));
        assert_eq!(a.qos(a.qos_id("high").unwrap()).preempt, [a.qos_id("scavenger").unwrap()]);
        let t = a.ticket("alice", None, Some("high"), 0).unwrap();
        assert_eq!(a.get(t.assoc).label(), "physics/alice");
        // theory inherits physics's QOS list
        assert!(a.ticket("alice", Some("theory"), Some("scavenger"), 0).is_err());
        assert_eq!(a.get(t.assoc).limits.max_jobs, Some(4));
        assert_eq!(SharingConfig::from_toml("name = \"x\"\n", "c.toml").unwrap(), None);
    }

    #[test]
    fn errors_name_file_line_key_and_expectation() {
        for (from, to, want) in [
            ("calc_period = 5", "calc_period = \"soon\"", "acct.toml:4: `priority.calc_period`: expected minutes"),
            ("usage = \"canonical\"", "usage = \"coins\"", "acct.toml:6: `priority.usage`: unknown usage unit `coins`; expected"),
            ("preempt = [\"scavenger\"]", "preempt = [\"gold\"]", "acct.toml:14: `qos[0].preempt`: unknown QOS `gold`; known: normal, high, scavenger"),
            ("parent = \"physics\"", "parent = \"maths\"", "acct.toml:23: `account[0].parent`: unknown account `maths`"),
            ("shares = 40", "shares = -4", "acct.toml:28: `account[1].shares`: expected shares"),
            ("grp_tres = { cpu = 512 }", "grp_tres = { gpu = 512 }", "acct.toml:26: unknown field `gpu`, expected `cpu` or `mem`"),
            ("default_account = \"physics\"", "default_account = \"chem\"", "acct.toml:35: `user[0].default_account`: user `alice` has no association with account `chem`"),
        ] {
            let text = FILE.replace(from, to);
            let e = SharingConfig::from_toml(&text, "acct.toml").unwrap_err().to_string();
            assert!(e.starts_with(want), "{to}: {e}");
        }
    }
}
