//! Rebuilding, node by node, what was allocated at every instant of a run: the
//! common ground of utilization, true overhead and billing.

use crate::store::{Store, StoreError};
use rusqlite::params;
use tessera_core::CanonicalUnit;

/// A node as recorded, with its canonical unit.
#[derive(Clone, Debug)]
pub struct NodeRow {
    pub name: String,
    pub node_type: String,
    pub partition: String,
    pub cores: u64,
    pub memory_mb: u64,
    pub gpus: u64,
    pub hs06_per_core: Option<f64>,
    pub factor: f64,
    pub unit: CanonicalUnit,
}

impl NodeRow {
    pub fn capacity(&self) -> (u64, u64, u64) {
        (self.cores, self.memory_mb, self.gpus)
    }
}

/// One job's holding on one node.
#[derive(Clone, Copy, Debug)]
pub struct Holding {
    pub job: i64,
    pub cores: u64,
    pub memory_mb: u64,
    pub gpus: u64,
    pub start: i64,
    pub end: i64,
}

/// A stretch of time during which a node's allocations do not change.
#[derive(Clone, Debug)]
pub struct Piece<'a> {
    pub from: i64,
    pub to: i64,
    /// (cores, memory, gpus) allocated.
    pub used: (u64, u64, u64),
    pub holdings: &'a [Holding],
    /// Indices into `holdings` of the jobs on the node.
    pub active: &'a [usize],
}

pub fn nodes(store: &Store, run: i64) -> Result<Vec<NodeRow>, StoreError> {
    let c = store.connection();
    let e = |source| StoreError::Sqlite { path: store.path().to_string(), source };
    let mut q = c
        .prepare("SELECT node_id, name, node_type, partition, cores, memory_mb, gpus, hs06_per_core, factor, unit_cores, unit_memory_mb, unit_gpus FROM nodes WHERE run_id = ?1 ORDER BY node_id")
        .map_err(e)?;
    let rows = q
        .query_map(params![run], |r| {
            Ok(NodeRow {
                name: r.get(1)?,
                node_type: r.get(2)?,
                partition: r.get(3)?,
                cores: r.get::<_, i64>(4)? as u64,
                memory_mb: r.get::<_, i64>(5)? as u64,
                gpus: r.get::<_, i64>(6)? as u64,
                hs06_per_core: r.get(7)?,
                factor: r.get(8)?,
                unit: CanonicalUnit { cores: r.get::<_, i64>(9)? as u32, memory_mb: r.get::<_, i64>(10)? as u64, gpus: r.get::<_, i64>(11)? as u32 },
            })
        })
        .map_err(e)?;
    rows.collect::<Result<_, _>>().map_err(e)
}

/// Every holding of every node, by node id, each list sorted by start.
pub fn holdings(store: &Store, run: i64, node_count: usize) -> Result<Vec<Vec<Holding>>, StoreError> {
    let c = store.connection();
    let e = |source| StoreError::Sqlite { path: store.path().to_string(), source };
    let mut q = c
        .prepare("SELECT node_id, job, cores, memory_mb, gpus, start_time, end_time FROM allocations WHERE run_id = ?1 ORDER BY node_id, start_time, job")
        .map_err(e)?;
    // the intervals in which jobs suspended by preemption or gang held no cores
    let mut released: std::collections::BTreeMap<i64, Vec<(i64, i64)>> = std::collections::BTreeMap::new();
    {
        let mut r = c.prepare("SELECT job, start_time, end_time FROM released WHERE run_id = ?1 ORDER BY job, start_time").map_err(e)?;
        let mut rows = r.query(params![run]).map_err(e)?;
        while let Some(x) = rows.next().map_err(e)? {
            released.entry(x.get(0).map_err(e)?).or_default().push((x.get(1).map_err(e)?, x.get(2).map_err(e)?));
        }
    }
    let mut out = vec![Vec::new(); node_count];
    let mut rows = q.query(params![run]).map_err(e)?;
    while let Some(r) = rows.next().map_err(e)? {
        let node: i64 = r.get(0).map_err(e)?;
        let h = Holding {
            job: r.get(1).map_err(e)?,
            cores: r.get::<_, i64>(2).map_err(e)? as u64,
            memory_mb: r.get::<_, i64>(3).map_err(e)? as u64,
            gpus: r.get::<_, i64>(4).map_err(e)? as u64,
            start: r.get(5).map_err(e)?,
            end: r.get(6).map_err(e)?,
        };
        let Some(gaps) = released.get(&h.job) else {
            out[node as usize].push(h);
            continue;
        };
        // split at the job's released intervals: no cores within them
        let mut at = h.start;
        for &(from, to) in gaps {
            let (from, to) = (from.clamp(at, h.end), to.clamp(at, h.end));
            if from < to {
                out[node as usize].push(Holding { start: at, end: from, ..h });
                out[node as usize].push(Holding { start: from, end: to, cores: 0, ..h });
                at = to;
            }
        }
        out[node as usize].push(Holding { start: at, ..h });
    }
    if !released.is_empty() {
        // the pieces of a split holding come after holdings that start later
        for v in &mut out {
            v.sort_by_key(|h| (h.start, h.job));
        }
    }
    Ok(out)
}

/// The time window of a run: first submit to last end.
pub fn window(store: &Store, run: i64) -> Result<(i64, i64), StoreError> {
    let c = store.connection();
    c.query_row("SELECT COALESCE(MIN(submit_time), 0), COALESCE(MAX(end_time), 0) FROM jobs WHERE run_id = ?1", params![run], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(|source| StoreError::Sqlite { path: store.path().to_string(), source })
}

/// Walk a node's allocations over [from, to), calling `f` for each piece.
pub fn walk(holdings: &[Holding], from: i64, to: i64, mut f: impl FnMut(&Piece<'_>)) {
    // events: (time, +1 start / -1 end, holding index)
    let mut events: Vec<(i64, i8, usize)> = Vec::with_capacity(holdings.len() * 2);
    for (i, h) in holdings.iter().enumerate() {
        if h.end > h.start {
            events.push((h.start, 1, i));
            events.push((h.end, -1, i));
        }
    }
    events.sort_unstable_by_key(|e| (e.0, e.1, e.2));
    let mut active: Vec<usize> = Vec::new();
    let mut used = (0u64, 0u64, 0u64);
    let mut t = from;
    let mut k = 0;
    while t < to {
        // apply every event at or before t
        while k < events.len() && events[k].0 <= t {
            let (_, d, i) = events[k];
            let h = &holdings[i];
            if d > 0 {
                active.push(i);
                used = (used.0 + h.cores, used.1 + h.memory_mb, used.2 + h.gpus);
            } else {
                active.retain(|&x| x != i);
                used = (used.0 - h.cores, used.1 - h.memory_mb, used.2 - h.gpus);
            }
            k += 1;
        }
        let next = events.get(k).map_or(to, |e| e.0.min(to));
        if next > t {
            f(&Piece { from: t, to: next, used, holdings, active: &active });
        }
        t = next;
    }
}
