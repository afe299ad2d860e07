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

/// Queued intervals of one partition, per canonical-unit need: (submit, start, job)
/// sorted by submit, with the running maximum of start (and its job) for overlap
/// queries.
struct Waits {
    by_need: BTreeMap<u64, (Vec<i64>, Vec<(i64, i64)>)>,
}

impl Waits {
    /// A job of need <= k that waited during [a, b): submit < b and start > a.
    fn find(&self, k: u64, a: i64, b: i64) -> Option<(i64, u64)> {
        for (&need, (submits, prefix_max)) in self.by_need.range(1..=k) {
            let n = submits.partition_point(|&s| s < b);
            if n > 0 && prefix_max[n - 1].0 > a {
                return Some((prefix_max[n - 1].1, need));
            }
        }
        None
    }
}

fn waits(store: &Store, run: i64, node_rows: &[NodeRow]) -> Result<BTreeMap<String, Waits>, StoreError> {
    let e = |source| StoreError::Sqlite { path: store.path().to_string(), source };
    let unit_of: BTreeMap<&str, tessera_core::CanonicalUnit> = node_rows.iter().map(|n| (n.partition.as_str(), n.unit)).collect();
    let mut q = store
        .connection()
        .prepare("SELECT partition, submit_time, start_time, job_id, req_procs, req_mem_mb FROM jobs WHERE run_id = ?1 AND start_time > submit_time ORDER BY submit_time")
        .map_err(e)?;
    let mut raw: BTreeMap<String, BTreeMap<u64, Vec<(i64, i64, i64)>>> = BTreeMap::new();
    let mut rows = q.query(params![run]).map_err(e)?;
    while let Some(r) = rows.next().map_err(e)? {
        let part: String = r.get(0).map_err(e)?;
        let Some(unit) = unit_of.get(part.as_str()) else { continue };
        let need = unit.need(r.get::<_, i64>(4).map_err(e)? as u64, r.get::<_, i64>(5).map_err(e)? as u64, 0);
        if need == 0 {
            continue;
        }
        raw.entry(part).or_default().entry(need).or_default().push((r.get(1).map_err(e)?, r.get(2).map_err(e)?, r.get(3).map_err(e)?));
    }
    Ok(raw
        .into_iter()
        .map(|(p, by)| {
            let by_need = by
                .into_iter()
                .map(|(need, v)| {
                    let submits = v.iter().map(|x| x.0).collect();
                    let mut best = (i64::MIN, 0);
                    let prefix = v
                        .iter()
                        .map(|x| {
                            if x.1 > best.0 {
                                best = (x.1, x.2);
                            }
                            best
                        })
                        .collect();
                    (need, (submits, prefix))
                })
                .collect();
            (p, Waits { by_need })
        })
        .collect())
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
            let waiter = waits.get(&n.partition).and_then(|w| w.find(k, p.from, p.to));
            if let Some((job, need)) = waiter {
                match flagged.last_mut() {
                    Some(f) if f.node == n.name && f.to == p.from && f.units == k && f.waiting_job == job => f.to = p.to,
                    _ => flagged.push(Flagged { node: n.name.clone(), from: p.from, to: p.to, units: k, waiting_job: job, job_units: need }),
                }
            }
            // spread k × dt over the spans [p.from, p.to) overlaps
            let mut a = p.from;
            while a < p.to {
                let i = (a - from) / width;
                let b = p.to.min(from + (i + 1) * width);
                let s = &mut spans[i as usize];
                s.0 += k as f64 * (b - a) as f64;
                if waiter.is_some() {
                    s.1 += k as f64 * (b - a) as f64;
                }
                a = b;
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
