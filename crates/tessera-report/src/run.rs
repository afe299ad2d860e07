//! The report of one recorded run (a simulation's `--db`, or a controller's
//! accounting store): everything is read from the store, so a simulation's
//! report and a live run's are the same code.

use crate::chart::{Chart, Series};
use crate::html::{Block, Page};
use crate::series::{busy_and_queue, by_size, cdf, spans, TimeAxis};
use crate::table::{f2, pct, Table};
use crate::ReportError;
use tessera_accounting::acct;
use tessera_accounting::billing::{bill, BillReport, Prices};
use tessera_accounting::overhead::{overhead, OverheadReport};
use tessera_accounting::store::{PowerRow, Store};
use tessera_accounting::usage::{usage, By, UsageRow};
use tessera_sim::metrics::{Classic, JobTimes};

/// Everything a run's report shows.
#[derive(Clone, Debug)]
pub struct RunData {
    pub source: String,
    pub run: i64,
    pub kind: String,
    pub label: String,
    pub site: String,
    pub cluster: String,
    pub policy: String,
    /// Every job was written (a simulation writes in batches; a live run is
    /// complete at every instant).
    pub complete: bool,
    pub nodes: u64,
    pub cores: u64,
    /// The run's nodes are one pool of interchangeable whole nodes (a
    /// power-budgeted run: PARM sizes jobs in nodes and names none), so no
    /// job or interval is known to be on a named node.
    pub pooled: bool,
    pub jobs: Vec<JobTimes>,
    pub metrics: Classic,
    pub power: Vec<PowerRow>,
    pub overhead: OverheadReport,
    pub usage_by_account: Vec<UsageRow>,
    pub usage_by_node_type: Vec<UsageRow>,
    pub bill: BillReport,
}

/// The jobs of a run that held resources, as the metrics see them: a job
/// cancelled while it waited never ran. What a job held is its cores times
/// what it ran (end − start − suspended).
pub fn job_times(store: &Store, run: i64) -> Result<Vec<JobTimes>, ReportError> {
    let jobs = acct::jobs(store, run, &Default::default())?;
    Ok(jobs
        .iter()
        .filter(|j| j.alloc_cores > 0 && j.end >= j.start)
        .map(|j| JobTimes { submit: j.submit as f64, start: j.start as f64, end: j.end as f64, suspended: j.suspended_s as f64, procs: j.req_procs as f64, held: (j.alloc_cores * j.wall_raw_s) as f64 })
        .collect())
}

/// Nodes and cores of a run. A power-budgeted run (one with power samples)
/// records its machine as one pool of whole nodes whose canonical unit is one
/// node: its nodes are its cores over the cores of that unit.
pub fn cores(store: &Store, run: i64) -> Result<(u64, u64), ReportError> {
    let e = |source| tessera_accounting::store::StoreError::Sqlite { path: store.path().to_string(), source };
    let (n, c, pooled_nodes, pooled): (i64, Option<i64>, Option<i64>, bool) = store
        .connection()
        .query_row(
            "SELECT COUNT(*), SUM(cores), SUM(cores / MAX(unit_cores, 1)), EXISTS (SELECT 1 FROM power_samples WHERE run_id = ?1) FROM nodes WHERE run_id = ?1",
            [run],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .map_err(e)?;
    let nodes = if pooled { pooled_nodes.unwrap_or(0) } else { n };
    Ok((nodes.max(0) as u64, c.unwrap_or(0).max(0) as u64))
}

/// A power-budgeted run's utilization: its nodes busy over time, as sampled,
/// over its nodes, from the first submission to the last end (the one
/// computation `sim run`'s summary uses too).
pub fn sampled_utilization(power: &[PowerRow], m: &Classic, nodes: u64) -> f64 {
    tessera_sim::metrics::sampled_utilization(power.iter().map(|r| (r.time as f64, r.busy_nodes as f64)), m.first_submit, m.last_end, nodes as f64)
}

impl RunData {
    pub fn load(store: &Store, run: i64, prices: Prices) -> Result<RunData, ReportError> {
        let e = |source| tessera_accounting::store::StoreError::Sqlite { path: store.path().to_string(), source };
        let (kind, label, site, cluster, policy, complete): (String, String, String, String, String, bool) = store
            .connection()
            .query_row("SELECT kind, label, site, cluster, policy, complete FROM runs WHERE id = ?1", [run], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))
            .map_err(e)?;
        let (nodes, cores) = cores(store, run)?;
        let jobs = job_times(store, run)?;
        let power = store.power(run)?;
        let mut metrics = Classic::compute(&jobs, (cores > 0).then_some(cores as f64));
        let pooled = !power.is_empty();
        if pooled {
            // jobs' records hold their starting sizes; PARM resized them since
            metrics.utilization = Some(sampled_utilization(&power, &metrics, nodes));
        }
        Ok(RunData {
            source: store.path().to_string(),
            run,
            kind: kind.clone(),
            label,
            site,
            cluster,
            policy,
            complete: complete || kind == "live",
            nodes,
            cores,
            pooled,
            jobs,
            metrics,
            power,
            overhead: overhead(store, run)?,
            usage_by_account: usage(store, run, By::Account)?,
            usage_by_node_type: usage(store, run, By::NodeType)?,
            bill: bill(store, run, prices)?,
        })
    }

    /// The HTML page.
    pub fn page(&self) -> Page {
        let mut p = Page::new(format!("Tessera report: {} ({}, {})", self.label, self.policy, self.kind));
        p.subtitle.push(format!(
            "run {} of {}; cluster {} at site {}: {} nodes, {} cores{}",
            self.run,
            self.source,
            self.cluster,
            self.site,
            self.nodes,
            self.cores,
            if self.pooled { " (one pool of whole nodes: jobs are sized in nodes, and none is placed on a named node)" } else { "" }
        ));
        if !self.complete {
            p.subtitle.push("WARNING: this run is unfinished (its recording was cut short); the report covers only the jobs written.".into());
        }
        let axis = TimeAxis::fit(self.metrics.first_submit, self.metrics.makespan);
        let mut summary = vec![Block::Table(summary_table(&self.metrics, self.pooled.then_some(self.nodes), self.cores, self.jobs.len()))];
        if self.pooled {
            summary.push(Block::Text(
                "Utilization counts the nodes busy over time, as sampled (as sim run's summary does): PARM resizes running jobs. Usage and bills count each job at the size it started at, as its accounting record holds it, so they do not add up to the utilization.".into(),
            ));
        }
        p.section("Summary", summary);
        let (mut busy, queue) = busy_and_queue(&self.jobs);
        if !self.power.is_empty() {
            // a power-budgeted run's nodes busy, as it sampled them (PARM resizes
            // running jobs: their records hold their starting sizes)
            let mut last = 0f64;
            let events = self
                .power
                .iter()
                .map(|r| {
                    let d = r.busy_nodes as f64 - last;
                    last = r.busy_nodes as f64;
                    (r.time as f64, d)
                })
                .collect();
            busy = spans(events, self.metrics.first_submit, self.metrics.last_end);
        }
        // a power run's busy count is in nodes
        let (cap, busy_label) = if self.pooled { (self.nodes.max(1) as f64, "nodes busy (% of the machine)") } else { (self.cores.max(1) as f64, "cores busy (% of the cluster)") };
        p.section(
            "Utilization and queue",
            vec![
                Block::Chart(Chart::lines("Utilization over time", &axis.label(), busy_label, vec![Series::step("utilization", busy.iter().map(|&(t, b)| (axis.x(t), 100.0 * b / cap)).collect())])),
                Block::Chart(Chart::lines("Queue length over time", &axis.label(), "jobs waiting (mean over each span)", vec![Series::step("jobs waiting", queue.iter().map(|&(t, q)| (axis.x(t), q)).collect())])),
            ],
        );
        p.section("Waiting and slowdown", wait_blocks(&[("this run", &self.jobs)]));
        if !self.power.is_empty() {
            p.section("Power", power_blocks(&self.power, &axis));
        }
        p.section("True overhead in canonical units", overhead_blocks(&self.overhead, &axis, self.pooled));
        p.section("Usage and bills", usage_blocks(&self.usage_by_account, &self.usage_by_node_type, &self.bill));
        p
    }
}

/// The summary's rows: the classical metrics, by the simulator's definitions
/// (`nodes` for a machine counted in whole nodes).
pub fn summary_table(m: &Classic, nodes: Option<u64>, cores: u64, jobs: usize) -> Table {
    let mut t = Table::new(&["metric", "value"]);
    t.row(vec!["jobs".into(), jobs.to_string()]);
    if let Some(n) = nodes {
        t.row(vec!["nodes".into(), n.to_string()]);
    }
    t.row(vec!["cores".into(), cores.to_string()]);
    for (name, v) in m.named() {
        t.row(vec![name.into(), if name == "utilization" { pct(Some(v)) } else { f2(v) }]);
    }
    t.row(vec!["jobs suspended".into(), m.jobs_suspended.to_string()]);
    t
}

/// Wait and bounded-slowdown CDFs and means by job size, one series per run.
pub fn wait_blocks(runs: &[(&str, &[JobTimes])]) -> Vec<Block> {
    let waits: Vec<Series> = runs.iter().map(|(n, j)| Series::line(*n, cdf(j.iter().map(|j| j.wait()).collect()))).collect();
    let bsld: Vec<Series> = runs.iter().map(|(n, j)| Series::line(*n, cdf(j.iter().map(|j| j.bounded_slowdown()).collect()))).collect();
    let sizes: Vec<Vec<(String, u64, f64, f64)>> = runs.iter().map(|(_, j)| by_size(j)).collect();
    let mut categories: Vec<String> = Vec::new();
    for s in &sizes {
        for r in s {
            if !categories.contains(&r.0) {
                categories.push(r.0.clone());
            }
        }
    }
    categories.sort_by_key(|c| c.split('-').next().and_then(|x| x.parse::<u64>().ok()).unwrap_or(0));
    let per = |f: fn(&(String, u64, f64, f64)) -> f64| -> Vec<(String, Vec<f64>)> {
        runs.iter().zip(&sizes).map(|((n, _), s)| (n.to_string(), categories.iter().map(|c| s.iter().find(|r| &r.0 == c).map_or(f64::NAN, f)).collect())).collect()
    };
    vec![
        Block::Chart(Chart::lines("Wait time distribution (CDF)", "wait (s, log scale; waits under 1 s at the lowest)", "fraction of jobs", waits).log_x()),
        Block::Chart(Chart::lines("Bounded slowdown distribution (CDF, 10 s bound)", "bounded slowdown (log scale)", "fraction of jobs", bsld).log_x()),
        Block::Chart(Chart::bars("Mean wait by job size", "job size (processors)", "mean wait (s)", categories.clone(), per(|r| r.2))),
        Block::Chart(Chart::bars("Mean bounded slowdown by job size", "job size (processors)", "mean bounded slowdown", categories.clone(), per(|r| r.3))),
    ]
}

fn power_blocks(power: &[PowerRow], axis: &TimeAxis) -> Vec<Block> {
    let drawn: Vec<(f64, f64)> = power.iter().map(|r| (axis.x(r.time as f64), r.power_w / 1000.0)).collect();
    let budget: Vec<(f64, f64)> = power.iter().map(|r| (axis.x(r.time as f64), r.budget_w / 1000.0)).collect();
    let cap = |f: fn(&PowerRow) -> Option<f64>| -> Vec<(f64, f64)> { power.iter().filter_map(|r| f(r).map(|c| (axis.x(r.time as f64), c))).collect() };
    vec![
        Block::Chart(Chart::lines("Power drawn against the budget", &axis.label(), "power (kW)", vec![Series::step("power drawn", drawn), Series::step("budget", budget).dashed()])),
        Block::Chart(Chart::lines(
            "CPU power caps of busy nodes over time",
            &axis.label(),
            "CPU cap (W per node)",
            vec![Series::step("node-weighted mean cap", cap(|r| r.cap_mean_w)), Series::step("lowest cap", cap(|r| r.cap_min_w)).dashed(), Series::step("highest cap", cap(|r| r.cap_max_w)).dashed()],
        )),
    ]
}

/// `pooled`: the run's nodes are one pool (a power-budgeted run), whose unit is
/// one node: no interval is on a named node, so the table has no node column.
fn overhead_blocks(o: &OverheadReport, axis: &TimeAxis, pooled: bool) -> Vec<Block> {
    let mut hist: std::collections::BTreeMap<u64, f64> = Default::default();
    for h in o.histogram.values() {
        for (k, v) in h {
            *hist.entry(*k).or_default() += v;
        }
    }
    let units = o.canonical_units.iter().map(|(p, u)| format!("{p}: {u}")).collect::<Vec<_>>().join("; ");
    let mut top = o.flagged_intervals.clone();
    top.sort_by_key(|f| (std::cmp::Reverse(f.to - f.from), f.node.clone(), f.from));
    let mut t = if pooled {
        Table::new(&["from (s)", "to (s)", "hours", "nodes idle", "waiting job", "its nodes"])
    } else {
        Table::new(&["node", "from (s)", "to (s)", "hours", "units idle", "waiting job", "its units"])
    };
    for f in top.iter().take(15) {
        let mut row = if pooled { Vec::new() } else { vec![f.node.clone()] };
        row.extend([f.from.to_string(), f.to.to_string(), f2((f.to - f.from) as f64 / 3600.0), f.units.to_string(), f.waiting_job.to_string(), f.job_units.to_string()]);
        t.row(row);
    }
    let (summary, intervals, hist_x, hist_y) = if pooled {
        (
            format!(
                "Canonical unit: one node of the machine ({units}). True overhead: {:.2} node-hours idle; flagged (k nodes idle while a job needing at most k waited): {} intervals, {:.2} h.",
                o.canonical_unit_hours.total,
                o.flagged_intervals.len(),
                o.flagged_hours
            ),
            "Longest flagged intervals (the machine's nodes are one pool: PARM sizes jobs in nodes and names none, so an interval counts the idle nodes of the whole machine, and no node is named):",
            "nodes idle (the whole machine)",
            "hours at that level",
        )
    } else {
        (
            format!(
                "Canonical units ({units}). True overhead: {:.2} unit-hours; flagged (a node had k units idle while a job needing at most k waited in its partition): {} intervals, {:.2} h.",
                o.canonical_unit_hours.total,
                o.flagged_intervals.len(),
                o.flagged_hours
            ),
            "Longest flagged intervals:",
            "canonical units idle on a node",
            "node-hours at that level",
        )
    };
    vec![
        Block::Text(summary),
        Block::Chart(Chart::lines(
            "True overhead over time",
            &axis.label(),
            "canonical units idle (cluster total)",
            vec![
                Series::step("true overhead", o.over_time.iter().map(|&(t, u, _)| (axis.x(t as f64), u)).collect()),
                Series::step("of which flagged", o.over_time.iter().map(|&(t, _, f)| (axis.x(t as f64), f)).collect()),
            ],
        )),
        Block::Chart({
            let (names, hours) = bins(&hist);
            Chart::bars("True overhead histogram", hist_x, hist_y, names, vec![(if pooled { "hours" } else { "node-hours" }.into(), hours)])
        }),
        Block::Text(intervals.into()),
        Block::Table(t),
    ]
}

/// A histogram's levels as at most 24 bars: one per level, or equal ranges.
fn bins(hist: &std::collections::BTreeMap<u64, f64>) -> (Vec<String>, Vec<f64>) {
    const MAX: u64 = 24;
    let top = hist.keys().next_back().copied().unwrap_or(0);
    if (hist.len() as u64) <= MAX {
        return (hist.keys().map(|k| k.to_string()).collect(), hist.values().copied().collect());
    }
    let width = (top + 1).div_ceil(MAX);
    let mut hours = vec![0f64; (top / width + 1) as usize];
    for (k, v) in hist {
        hours[(k / width) as usize] += v;
    }
    let names = (0..hours.len() as u64).map(|i| format!("{}-{}", i * width, ((i + 1) * width - 1).min(top))).collect();
    (names, hours)
}

fn usage_blocks(acc: &[UsageRow], types: &[UsageRow], b: &BillReport) -> Vec<Block> {
    let usage_chart = |title: &str, x: &str, rows: &[UsageRow]| {
        Chart::bars(
            title,
            x,
            "core-hours",
            rows.iter().map(|r| r.key.clone()).collect(),
            vec![("raw core-hours".into(), rows.iter().map(|r| r.core_hours).collect()), ("normalized core-hours".into(), rows.iter().map(|r| r.norm_core_hours).collect())],
        )
    };
    let priced = b.prices.core_hour > 0.0 || b.prices.gb_hour > 0.0 || b.prices.gpu_hour > 0.0;
    let mut bills = vec![
        ("allocated core-hours".to_string(), b.accounts.values().map(|x| x.allocated.core_hours).collect::<Vec<_>>()),
        ("billed core-hours".to_string(), b.accounts.values().map(|x| x.billed.core_hours).collect()),
    ];
    if b.accounts.values().any(|x| x.billed.gpu_hours > 0.0) {
        bills.push(("billed GPU-hours".into(), b.accounts.values().map(|x| x.billed.gpu_hours).collect()));
    }
    let mut t = Table::new(&["account", "jobs", "core_h", "norm_core_h", "billed_core_h", "billed_gb_h", "billed_gpu_h", "cost"]);
    for r in acc {
        let bl = b.accounts.get(&r.key);
        t.row(vec![
            r.key.clone(),
            r.jobs.to_string(),
            f2(r.core_hours),
            f2(r.norm_core_hours),
            f2(bl.map_or(0.0, |x| x.billed.core_hours)),
            f2(bl.map_or(0.0, |x| x.billed.memory_gb_hours)),
            f2(bl.map_or(0.0, |x| x.billed.gpu_hours)),
            if priced { f2(bl.map_or(0.0, |x| x.cost)) } else { "-".into() },
        ]);
    }
    let mut blocks = vec![
        Block::Chart(usage_chart("Usage by account", "account", acc)),
        Block::Chart(usage_chart("Usage by node type", "node type", types)),
        Block::Chart(Chart::bars("Bills by account (true overhead not billed)", "account", "hours", b.accounts.keys().cloned().collect(), bills)),
    ];
    if priced {
        blocks.push(Block::Chart(Chart::bars("Cost by account", "account", "cost (currency units)", b.accounts.keys().cloned().collect(), vec![("cost".into(), b.accounts.values().map(|x| x.cost).collect())])));
    }
    blocks.push(Block::Table(t));
    blocks.push(Block::Text(format!(
        "Provider loss (true overhead, idle and unallocated): {:.2} core-h, {:.2} GB-h, {:.2} GPU-h of {:.2} core-h, {:.2} GB-h, {:.2} GPU-h.",
        b.provider_loss.core_hours, b.provider_loss.memory_gb_hours, b.provider_loss.gpu_hours, b.capacity.core_hours, b.capacity.memory_gb_hours, b.capacity.gpu_hours
    )));
    blocks
}

