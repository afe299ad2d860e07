//! True overhead in canonical units (Andrijauskas, Sfiligoi & Würthwein, "Defining
//! a canonical unit for accounting purposes"): a node's true overhead at an instant
//! is the largest k such that k times every threshold of its canonical unit fits in
//! its unallocated resources. Integrated over time per node, node type and
//! partition; kept as a histogram per node; and correlated with the queue: an
//! interval where a node had k units of true overhead while an eligible job (same
//! partition) waited that needed no more than k units is scheduling overhead worth
//! a look, not leftover.

use crate::store::{Store, StoreError};
use crate::timeline::{holdings, nodes, walk, window, NodeRow};
use rusqlite::params;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct UnitHours {
    pub total: f64,
    pub by_node: BTreeMap<String, f64>,
    pub by_node_type: BTreeMap<String, f64>,
    pub by_partition: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Flagged {
    pub node: String,
    pub from: i64,
    pub to: i64,
    /// Canonical units of true overhead on the node.
    pub units: u64,
    /// A job that waited meanwhile, and the units it needed (<= `units`).
    pub waiting_job: i64,
    pub job_units: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OverheadReport {
    pub run: i64,
    pub from: i64,
    pub to: i64,
    /// Canonical unit of each partition, e.g. "1 core + 2 GB".
    pub canonical_units: BTreeMap<String, String>,
    pub canonical_unit_hours: UnitHours,
    /// Per node: hours spent at each level of true overhead (units -> hours).
    pub histogram: BTreeMap<String, BTreeMap<u64, f64>>,
    pub flagged_intervals: Vec<Flagged>,
    pub flagged_hours: f64,
    /// True overhead of the whole cluster over time: (start of a span, mean
    /// canonical units over it, of which flagged), [`SPANS`] equal spans from
    /// `from` to `to`.
    pub over_time: Vec<(i64, f64, f64)>,
}

/// Spans of [`OverheadReport::over_time`].
pub const SPANS: i64 = 240;

/// The waiting of one partition's jobs, per canonical-unit need: for each need,
/// disjoint stretches `(from, to, job)` in time order, each within that job's
/// wait `[submit, start)`, together covering every instant at which some job of
/// that need was waiting.
struct Waits {
    by_need: BTreeMap<u64, Vec<(i64, i64, i64)>>,
}

impl Waits {
    /// The parts of `[a, b)` during which a job of need <= k waited, disjoint and
    /// in time order, each with one such job and its need.
    fn during(&self, k: u64, a: i64, b: i64) -> Vec<(i64, i64, i64, u64)> {
        let mut parts = Vec::new();
        for (&need, stretches) in self.by_need.range(1..=k) {
            let first = stretches.partition_point(|s| s.1 <= a);
            for &(from, to, job) in stretches[first..].iter().take_while(|s| s.0 < b) {
                parts.push((from.max(a), to.min(b), job, need));
            }
        }
        parts.sort_unstable_by_key(|p| (p.0, p.3, p.2));
        let mut out: Vec<(i64, i64, i64, u64)> = Vec::with_capacity(parts.len());
        let mut covered = a;
        for (from, to, job, need) in parts {
            if to > covered {
                out.push((from.max(covered), to, job, need));
                covered = to;
            }
        }
        out
    }
}

fn waits(store: &Store, run: i64, node_rows: &[NodeRow]) -> Result<BTreeMap<String, Waits>, StoreError> {
    let e = |source| StoreError::Sqlite { path: store.path().to_string(), source };
    let unit_of: BTreeMap<&str, tessera_core::CanonicalUnit> = node_rows.iter().map(|n| (n.partition.as_str(), n.unit)).collect();
    let mut q = store
        .connection()
        .prepare("SELECT partition, submit_time, start_time, job_id, req_procs, req_mem_mb FROM jobs WHERE run_id = ?1 AND start_time > submit_time ORDER BY submit_time, job_id")
        .map_err(e)?;
    let mut out: BTreeMap<String, Waits> = BTreeMap::new();
    let mut rows = q.query(params![run]).map_err(e)?;
    while let Some(r) = rows.next().map_err(e)? {
        let part: String = r.get(0).map_err(e)?;
        let Some(unit) = unit_of.get(part.as_str()) else { continue };
        let need = unit.need(r.get::<_, i64>(4).map_err(e)?.max(0) as u64, r.get::<_, i64>(5).map_err(e)?.max(0) as u64, 0);
        if need == 0 {
            continue;
        }
        let (submit, start, job): (i64, i64, i64) = (r.get(1).map_err(e)?, r.get(2).map_err(e)?, r.get(3).map_err(e)?);
        // jobs come in submit order: a wait adds only what it reaches beyond the last
        let stretches = out.entry(part).or_insert_with(|| Waits { by_need: BTreeMap::new() }).by_need.entry(need).or_default();
        let reached = stretches.last().map_or(i64::MIN, |s| s.1);
        if start > reached {
            stretches.push((submit.max(reached), start, job));
        }
    }
    Ok(out)
}

pub fn overhead(store: &Store, run: i64) -> Result<OverheadReport, StoreError> {
    let node_rows = nodes(store, run)?;
    let hold = holdings(store, run, node_rows.len())?;
    let (from, to) = window(store, run)?;
    let waits = waits(store, run, &node_rows)?;
    let mut hours = UnitHours { total: 0.0, by_node: BTreeMap::new(), by_node_type: BTreeMap::new(), by_partition: BTreeMap::new() };
    let mut histogram: BTreeMap<String, BTreeMap<u64, f64>> = BTreeMap::new();
    let mut flagged: Vec<Flagged> = Vec::new();
    let width = ((to - from) + SPANS - 1).div_euclid(SPANS).max(1);
    // (units, flagged units) × seconds in each span
    let mut spans = vec![(0f64, 0f64); ((to - from).max(0) / width + 1) as usize];
    for (n, h) in node_rows.iter().zip(&hold) {
        let cap = n.capacity();
        let mut unit_seconds = 0f64;
        let hist = histogram.entry(n.name.clone()).or_default();
        walk(h, from, to, |p| {
            let k = n.unit.idle_units(cap, p.used);
            let dt = (p.to - p.from) as f64;
            unit_seconds += k as f64 * dt;
            *hist.entry(k).or_default() += dt / 3600.0;
            if k == 0 {
                return;
            }
            let waiting = waits.get(&n.partition).map(|w| w.during(k, p.from, p.to)).unwrap_or_default();
            for &(a, b, job, need) in &waiting {
                match flagged.last_mut() {
                    Some(f) if f.node == n.name && f.to == a && f.units == k && f.waiting_job == job => f.to = b,
                    _ => flagged.push(Flagged { node: n.name.clone(), from: a, to: b, units: k, waiting_job: job, job_units: need }),
                }
            }
            // spread k × dt over the spans [p.from, p.to) overlaps, and the flagged parts likewise
            let mut spread = |a: i64, b: i64, flagged: bool| {
                let mut a = a;
                while a < b {
                    let i = (a - from) / width;
                    let end = b.min(from + (i + 1) * width);
                    let s = &mut spans[i as usize];
                    if flagged {
                        s.1 += k as f64 * (end - a) as f64;
                    } else {
                        s.0 += k as f64 * (end - a) as f64;
                    }
                    a = end;
                }
            };
            spread(p.from, p.to, false);
            for &(a, b, _, _) in &waiting {
                spread(a, b, true);
            }
        });
        let uh = unit_seconds / 3600.0;
        hours.total += uh;
        hours.by_node.insert(n.name.clone(), uh);
        *hours.by_node_type.entry(n.node_type.clone()).or_default() += uh;
        *hours.by_partition.entry(n.partition.clone()).or_default() += uh;
    }
    let flagged_hours = flagged.iter().map(|f| (f.to - f.from) as f64 / 3600.0).fold(0.0, |a, b| a + b);
    let canonical_units = node_rows.iter().map(|n| (n.partition.clone(), n.unit.to_string())).collect();
    let over_time = spans.iter().enumerate().filter(|(i, _)| from + *i as i64 * width < to).map(|(i, u)| (from + i as i64 * width, u.0 / width as f64, u.1 / width as f64)).collect();
    Ok(OverheadReport { run, from, to, canonical_units, canonical_unit_hours: hours, histogram, flagged_intervals: flagged, flagged_hours, over_time })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{AllocationRecord, JobRecord, NodeRecord, RunInfo, RunKind};
    use tessera_core::CanonicalUnit;

    fn job(id: i64, submit: i64, start: i64, end: i64, cores: u32) -> JobRecord {
        JobRecord { name: format!("j{id}"), ..JobRecord::completed(id, submit, start, end, vec![AllocationRecord { node: 0, cores, memory_mb: 0, gpus: 0 }]) }
    }

    /// An 8-core node (unit: 1 core) half-held by job 1 over [0, 2000); job 2
    /// (2 cores) is submitted at 500 and waits until 1500; job 3 (1 core) waits
    /// over [1700, 1800). The flags cover exactly [500, 1500) and [1700, 1800),
    /// each naming its waiter; the node's idle stretch before 500 is overhead
    /// but not flagged (it used to be flagged from 0, the start of the stretch).
    #[test]
    fn a_flag_starts_when_the_fitting_job_began_to_wait() {
        let mut store = Store::in_memory().unwrap();
        let node = NodeRecord {
            name: "n1".into(),
            node_type: "std".into(),
            partition: "batch".into(),
            cores: 8,
            memory_mb: 16_000,
            gpus: 0,
            hs06_per_core: None,
            factor: 1.0,
            unit: CanonicalUnit { cores: 1, memory_mb: 0, gpus: 0 },
            valid_from: 0,
        };
        let run = RunInfo { kind: RunKind::Simulation, label: "t".into(), site: "s".into(), cluster: "c".into(), policy: "fcfs".into(), epoch_offset: 0, recorded_at: 0 };
        let jobs = vec![job(1, 0, 0, 2000, 4), job(2, 500, 1500, 1600, 2), job(3, 1700, 1800, 1900, 1)];
        let id = store.record_run(&run, &[node], jobs).unwrap();
        let r = overhead(&store, id).unwrap();
        let got: Vec<(i64, i64, u64, i64, u64)> = r.flagged_intervals.iter().map(|f| (f.from, f.to, f.units, f.waiting_job, f.job_units)).collect();
        assert_eq!(got, vec![(500, 1500, 4, 2, 2), (1700, 1800, 4, 3, 1)]);
        assert_eq!(r.flagged_hours, 1100.0 / 3600.0);
        // the flagged part of the time series adds up to the same unit-seconds
        let width = r.over_time[1].0 - r.over_time[0].0;
        let flagged_unit_s: f64 = r.over_time.iter().map(|s| s.2 * width as f64).sum();
        assert!((flagged_unit_s - 4.0 * 1100.0).abs() < 1e-6, "{flagged_unit_s}");
    }
}
