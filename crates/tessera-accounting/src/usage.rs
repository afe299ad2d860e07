//! Usage roll-ups (sreport-like) and utilization.

use crate::store::{Store, StoreError};
use crate::timeline::{holdings, nodes, walk, window};
use rusqlite::params;
use serde::Serialize;
use std::collections::BTreeMap;

/// What to roll usage up by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    User,
    Group,
    Account,
    Partition,
    NodeType,
    Month,
}

impl std::str::FromStr for By {
    type Err = String;
    fn from_str(s: &str) -> Result<By, String> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "user" => By::User,
            "group" => By::Group,
            "account" => By::Account,
            "partition" => By::Partition,
            "nodetype" | "node_type" | "node-type" => By::NodeType,
            "month" => By::Month,
            _ => return Err(format!("cannot group by `{s}`; expected one of user, group, account, partition, nodetype, month")),
        })
    }
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct UsageRow {
    pub key: String,
    pub jobs: u64,
    pub wall_hours: f64,
    /// Wall hours × scaling factor (reference hours).
    pub norm_wall_hours: f64,
    pub cpu_hours: f64,
    pub norm_cpu_hours: f64,
    pub core_hours: f64,
    pub norm_core_hours: f64,
    pub hs06_hours: f64,
}

pub use crate::civil::month_of;

/// The rows in natural order of their keys (user2 before user10).
fn natural_order(rows: BTreeMap<String, UsageRow>) -> Vec<UsageRow> {
    let mut v: Vec<UsageRow> = rows.into_values().collect();
    v.sort_by(|a, b| crate::natural::cmp(&a.key, &b.key));
    v
}

/// Usage per user, group, account, partition, node type or month (of the job's end).
pub fn usage(store: &Store, run: i64, by: By) -> Result<Vec<UsageRow>, StoreError> {
    let e = |source| StoreError::Sqlite { path: store.path().to_string(), source };
    let c = store.connection();
    let mut out: BTreeMap<String, UsageRow> = BTreeMap::new();
    if by == By::NodeType {
        // split each job's usage over the nodes it held
        let mut q = c
            .prepare(
                "SELECT n.node_type, a.job, a.cores, MAX(a.end_time - a.start_time - j.suspended_s, 0), j.factor, n.hs06_per_core, j.cpu_raw_s, j.alloc_cores \
                 FROM allocations a JOIN nodes n ON n.run_id = a.run_id AND n.node_id = a.node_id JOIN jobs j ON j.id = a.job WHERE a.run_id = ?1",
            )
            .map_err(e)?;
        let mut seen: BTreeMap<String, std::collections::BTreeSet<i64>> = BTreeMap::new();
        let mut rows = q.query(params![run]).map_err(e)?;
        while let Some(r) = rows.next().map_err(e)? {
            let key: String = r.get(0).map_err(e)?;
            let job: i64 = r.get(1).map_err(e)?;
            let cores = r.get::<_, i64>(2).map_err(e)? as f64;
            let hours = r.get::<_, i64>(3).map_err(e)? as f64 / 3600.0;
            let f: f64 = r.get(4).map_err(e)?;
            let hs: Option<f64> = r.get(5).map_err(e)?;
            let cpu: f64 = r.get(6).map_err(e)?;
            let total_cores = r.get::<_, i64>(7).map_err(e)?.max(1) as f64;
            let row = out.entry(key.clone()).or_insert_with(|| UsageRow { key: key.clone(), ..Default::default() });
            let share = cores / total_cores;
            row.wall_hours += hours * share;
            row.norm_wall_hours += hours * share * f;
            row.cpu_hours += cpu / 3600.0 * share;
            row.norm_cpu_hours += cpu / 3600.0 * share * f;
            row.core_hours += cores * hours;
            row.norm_core_hours += cores * hours * f;
            row.hs06_hours += cores * hours * hs.unwrap_or(0.0);
            seen.entry(key).or_default().insert(job);
        }
        for (k, s) in seen {
            out.get_mut(&k).unwrap().jobs = s.len() as u64;
        }
        return Ok(natural_order(out));
    }
    let offset: i64 = c.query_row("SELECT epoch_offset FROM runs WHERE id = ?1", params![run], |r| r.get(0)).map_err(e)?;
    let col = match by {
        By::User => "user",
        By::Group => "grp",
        By::Account => "account",
        By::Partition => "partition",
        By::Month => "end_time",
        By::NodeType => unreachable!(),
    };
    let mut q = c
        .prepare(&format!(
            "SELECT {col}, wall_raw_s, wall_norm_s, cpu_raw_s, cpu_norm_s, core_hours, norm_core_hours, COALESCE(hs06_hours, 0) FROM jobs WHERE run_id = ?1"
        ))
        .map_err(e)?;
    let mut rows = q.query(params![run]).map_err(e)?;
    while let Some(r) = rows.next().map_err(e)? {
        let key = if by == By::Month { month_of(r.get::<_, i64>(0).map_err(e)? + offset) } else { r.get(0).map_err(e)? };
        let row = out.entry(key.clone()).or_insert_with(|| UsageRow { key, ..Default::default() });
        row.jobs += 1;
        row.wall_hours += r.get::<_, i64>(1).map_err(e)? as f64 / 3600.0;
        row.norm_wall_hours += r.get::<_, f64>(2).map_err(e)? / 3600.0;
        row.cpu_hours += r.get::<_, f64>(3).map_err(e)? / 3600.0;
        row.norm_cpu_hours += r.get::<_, f64>(4).map_err(e)? / 3600.0;
        row.core_hours += r.get::<_, f64>(5).map_err(e)?;
        row.norm_core_hours += r.get::<_, f64>(6).map_err(e)?;
        row.hs06_hours += r.get::<_, f64>(7).map_err(e)?;
    }
    Ok(natural_order(out))
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct UtilizationRow {
    pub key: String,
    pub nodes: u64,
    pub capacity_core_hours: f64,
    pub allocated_core_hours: f64,
    pub idle_core_hours: f64,
    pub utilization: f64,
    /// Allocated core-hours × the node's scaling factor.
    pub allocated_norm_core_hours: f64,
}

/// Allocated over available core-hours in the run's window, per node type, per
/// partition and in total.
pub fn utilization(store: &Store, run: i64) -> Result<(i64, i64, Vec<UtilizationRow>), StoreError> {
    let node_rows = nodes(store, run)?;
    let hold = holdings(store, run, node_rows.len())?;
    let (from, to) = window(store, run)?;
    let mut rows: BTreeMap<String, UtilizationRow> = BTreeMap::new();
    for (n, h) in node_rows.iter().zip(&hold) {
        let mut used = 0f64;
        walk(h, from, to, |p| used += p.used.0 as f64 * (p.to - p.from) as f64 / 3600.0);
        let cap = n.cores as f64 * (to - from) as f64 / 3600.0;
        for key in [format!("nodetype {}", n.node_type), format!("partition {}", n.partition), "total".to_string()] {
            let r = rows.entry(key.clone()).or_insert_with(|| UtilizationRow { key, ..Default::default() });
            r.nodes += 1;
            r.capacity_core_hours += cap;
            r.allocated_core_hours += used;
            r.allocated_norm_core_hours += used * n.factor;
        }
    }
    for r in rows.values_mut() {
        r.idle_core_hours = r.capacity_core_hours - r.allocated_core_hours;
        r.utilization = if r.capacity_core_hours > 0.0 { r.allocated_core_hours / r.capacity_core_hours } else { 0.0 };
    }
    Ok((from, to, rows.into_values().collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months() {
        assert_eq!(month_of(0), "1970-01");
        assert_eq!(month_of(1027839845), "2002-07");
        assert_eq!(month_of(951868800), "2000-03"); // 2000-03-01 00:00 UTC
        assert_eq!(month_of(951868799), "2000-02");
    }
}

/// One job of a run as fair share charges it (`tessera sim run
/// --usage-from`): who, when (the run's seconds), and what it held on each
/// node: cores, memory (MiB), GPUs and the node's scaling factor.
#[derive(Clone, Debug, PartialEq)]
pub struct PastUse {
    pub user: String,
    pub account: String,
    pub partition: String,
    pub start: i64,
    pub end: i64,
    pub parts: Vec<(u32, u64, u32, f64)>,
}

/// Every job of run `run` that held anything, in the order recorded.
pub fn past_use(store: &Store, run: i64) -> Result<Vec<PastUse>, StoreError> {
    store.check_run(run)?;
    let c = store.connection();
    let e = |source| StoreError::Sqlite { path: store.path().to_string(), source };
    let mut q = c
        .prepare(
            "SELECT j.id, j.user, j.account, j.partition, j.start_time, j.end_time, a.cores, a.memory_mb, a.gpus, n.factor \
             FROM jobs j JOIN allocations a ON a.job = j.id JOIN nodes n ON n.run_id = j.run_id AND n.node_id = a.node_id \
             WHERE j.run_id = ?1 ORDER BY j.id, a.node_id",
        )
        .map_err(e)?;
    let mut rows = q.query(params![run]).map_err(e)?;
    let mut out: Vec<PastUse> = Vec::new();
    let mut last = None;
    while let Some(r) = rows.next().map_err(e)? {
        let id: i64 = r.get(0).map_err(e)?;
        let part = (r.get::<_, i64>(6).map_err(e)?.clamp(0, u32::MAX as i64) as u32, r.get::<_, i64>(7).map_err(e)?.max(0) as u64, r.get::<_, i64>(8).map_err(e)?.clamp(0, u32::MAX as i64) as u32, r.get::<_, f64>(9).map_err(e)?);
        if last == Some(id) {
            out.last_mut().expect("a job before").parts.push(part);
            continue;
        }
        last = Some(id);
        out.push(PastUse { user: r.get(1).map_err(e)?, account: r.get(2).map_err(e)?, partition: r.get(3).map_err(e)?, start: r.get(4).map_err(e)?, end: r.get(5).map_err(e)?, parts: vec![part] });
    }
    Ok(out)
}
