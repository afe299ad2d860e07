//! Fair billing (Andrijauskas, Sfiligoi & Würthwein, §3.3): on every node, the true
//! overhead is the provider's loss; the rest of the unallocated resources is
//! charged to the jobs on that node in proportion to what they allocated, resource
//! by resource, over time. A job's rate for a resource is what it is billed over
//! what it allocated (143% for memory when 30% of a node's memory is unallocated and
//! all its cores are busy). Energy is billed as each job's record gives it
//! (measured or modelled on a power-aware cluster): what its own nodes drew.

use crate::store::{Store, StoreError};
use crate::timeline::{holdings, nodes, walk, window};
use rusqlite::params;
use serde::Serialize;
use std::collections::BTreeMap;

/// Price per resource-hour (optional; 0 gives no cost column).
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Prices {
    pub core_hour: f64,
    pub gb_hour: f64,
    pub gpu_hour: f64,
    /// Per kWh of the energy in the jobs' records.
    pub kwh: f64,
}

/// Core-hours, memory GB-hours, GPU-hours.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Amounts {
    pub core_hours: f64,
    pub memory_gb_hours: f64,
    pub gpu_hours: f64,
}

impl Amounts {
    fn add(&mut self, o: &Amounts) {
        self.core_hours += o.core_hours;
        self.memory_gb_hours += o.memory_gb_hours;
        self.gpu_hours += o.gpu_hours;
    }
}

/// Billed over allocated, per resource (None where nothing was allocated).
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Rates {
    pub cpu: Option<f64>,
    pub memory: Option<f64>,
    pub gpu: Option<f64>,
}

fn rates(alloc: &Amounts, billed: &Amounts) -> Rates {
    let r = |b: f64, a: f64| (a > 0.0).then(|| b / a);
    Rates { cpu: r(billed.core_hours, alloc.core_hours), memory: r(billed.memory_gb_hours, alloc.memory_gb_hours), gpu: r(billed.gpu_hours, alloc.gpu_hours) }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Bill {
    pub allocated: Amounts,
    pub billed: Amounts,
    pub rates: Rates,
    /// Billed core-hours weighted by the HS06 per core of the nodes, when known.
    pub hs06_hours: f64,
    /// The energy its records carry (kWh; 0 where none does).
    pub energy_kwh: f64,
    pub cost: f64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct JobBill {
    pub job_id: i64,
    pub user: String,
    pub account: String,
    #[serde(flatten)]
    pub bill: Bill,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BillReport {
    pub run: i64,
    pub prices: Prices,
    pub jobs: Vec<JobBill>,
    pub accounts: BTreeMap<String, Bill>,
    pub users: BTreeMap<String, Bill>,
    /// Capacity nobody was billed for: true overhead, idle nodes, resources no job
    /// on the node allocated.
    pub provider_loss: Amounts,
    pub capacity: Amounts,
}

/// A job's (or a group's) allocated and billed amounts, billed HS06-hours and
/// energy (kWh).
type Sums = (Amounts, Amounts, f64, f64);

fn finish((alloc, billed, hs06, kwh): Sums, p: &Prices) -> Bill {
    let cost = billed.core_hours * p.core_hour + billed.memory_gb_hours * p.gb_hour + billed.gpu_hours * p.gpu_hour + kwh * p.kwh;
    Bill { rates: rates(&alloc, &billed), allocated: alloc, billed, hs06_hours: hs06, energy_kwh: kwh, cost }
}

pub fn bill(store: &Store, run: i64, prices: Prices) -> Result<BillReport, StoreError> {
    let node_rows = nodes(store, run)?;
    let hold = holdings(store, run, node_rows.len())?;
    let (from, to) = window(store, run)?;
    // per job: allocated, billed, hs06-hours billed
    let mut per_job: BTreeMap<i64, Sums> = BTreeMap::new();
    let mut capacity = Amounts::default();
    let mut billed_total = Amounts::default();
    for (n, h) in node_rows.iter().zip(&hold) {
        let cap = n.capacity();
        let span = (to - from) as f64 / 3600.0;
        capacity.add(&Amounts { core_hours: cap.0 as f64 * span, memory_gb_hours: cap.1 as f64 / 1024.0 * span, gpu_hours: cap.2 as f64 * span });
        walk(h, from, to, |p| {
            if p.active.is_empty() {
                return;
            }
            let k = n.unit.idle_units(cap, p.used);
            // the true overhead is not billed
            let billable = |c: u64, thr: u64| if thr > 0 && c > 0 { c - k * thr } else { c };
            let b = (billable(cap.0, n.unit.cores as u64), billable(cap.1, n.unit.memory_mb), billable(cap.2, n.unit.gpus as u64));
            let dt = (p.to - p.from) as f64 / 3600.0;
            let rate = |b: u64, used: u64| if used > 0 { b as f64 / used as f64 } else { 0.0 };
            let (rc, rm, rg) = (rate(b.0, p.used.0), rate(b.1, p.used.1), rate(b.2, p.used.2));
            for &i in p.active {
                let hd = &p.holdings[i];
                let e = per_job.entry(hd.job).or_default();
                let a = Amounts { core_hours: hd.cores as f64 * dt, memory_gb_hours: hd.memory_mb as f64 / 1024.0 * dt, gpu_hours: hd.gpus as f64 * dt };
                let bl = Amounts { core_hours: a.core_hours * rc, memory_gb_hours: a.memory_gb_hours * rm, gpu_hours: a.gpu_hours * rg };
                e.0.add(&a);
                e.1.add(&bl);
                e.2 += bl.core_hours * n.hs06_per_core.unwrap_or(0.0);
                billed_total.add(&bl);
            }
        });
    }
    let e = |source| StoreError::Sqlite { path: store.path().to_string(), source };
    let mut q = store.connection().prepare("SELECT id, job_id, user, account, energy_j FROM jobs WHERE run_id = ?1 ORDER BY id").map_err(e)?;
    let meta: Vec<(i64, i64, String, String, Option<f64>)> = q
        .query_map(params![run], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
        .map_err(e)?
        .collect::<Result<_, _>>()
        .map_err(e)?;
    let mut jobs = Vec::new();
    let mut accounts: BTreeMap<String, Sums> = BTreeMap::new();
    let mut users: BTreeMap<String, Sums> = BTreeMap::new();
    for (id, job_id, user, account, energy_j) in meta {
        let (a, b, h, _) = per_job.get(&id).copied().unwrap_or_default();
        let kwh = energy_j.unwrap_or(0.0) / 3.6e6;
        for agg in [accounts.entry(account.clone()).or_default(), users.entry(user.clone()).or_default()] {
            agg.0.add(&a);
            agg.1.add(&b);
            agg.2 += h;
            agg.3 += kwh;
        }
        jobs.push(JobBill { job_id, user, account, bill: finish((a, b, h, kwh), &prices) });
    }
    let close = |m: BTreeMap<String, Sums>| m.into_iter().map(|(k, s)| (k, finish(s, &prices))).collect();
    let provider_loss = Amounts {
        core_hours: capacity.core_hours - billed_total.core_hours,
        memory_gb_hours: capacity.memory_gb_hours - billed_total.memory_gb_hours,
        gpu_hours: capacity.gpu_hours - billed_total.gpu_hours,
    };
    Ok(BillReport { run, prices, jobs, accounts: close(accounts), users: close(users), provider_loss, capacity })
}
