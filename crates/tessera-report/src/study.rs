//! Pages of several runs: a comparison overlays simulations of one trace; a
//! sweep's page plots its metrics against each parameter.

use crate::chart::{Chart, Series};
use crate::html::{Block, Page};
use crate::run::wait_blocks;
use crate::series::{busy_and_queue, TimeAxis};
use crate::table::{Table, TableFormat};
use tessera_sim::metrics::{Classic, JobTimes};

/// One simulated variant: its name, its jobs' times and its machine's size.
pub struct Variant {
    pub name: String,
    pub jobs: Vec<JobTimes>,
    /// Processors (nodes for a power-budgeted machine).
    pub capacity: f64,
}

impl Variant {
    pub fn metrics(&self) -> Classic {
        Classic::compute(&self.jobs, Some(self.capacity))
    }
}

/// Each metric of each variant, and its difference from the first variant.
pub fn difference_table(variants: &[Variant]) -> Table {
    let metrics: Vec<Classic> = variants.iter().map(Variant::metrics).collect();
    let mut header = vec!["metric".to_string()];
    for (i, v) in variants.iter().enumerate() {
        header.push(v.name.clone());
        if i > 0 {
            header.push(format!("{} vs {}", v.name, variants[0].name));
        }
    }
    let mut t = Table { header, rows: Vec::new() };
    let Some(first) = metrics.first() else { return t };
    for (k, (name, base)) in first.named().into_iter().enumerate() {
        let mut row = vec![name.to_string()];
        for (i, m) in metrics.iter().enumerate() {
            let v = m.named()[k].1;
            row.push(format!("{v:.4}"));
            if i > 0 {
                let d = v - base;
                row.push(if base != 0.0 { format!("{d:+.4} ({:+.1}%)", 100.0 * d / base.abs()) } else { format!("{d:+.4}") });
            }
        }
        t.rows.push(row);
    }
    t
}

/// The comparison page: the variants overlaid on every chart, and the table of
/// differences.
pub fn compare_page(trace: &str, variants: &[Variant]) -> Page {
    let mut p = Page::new(format!("Tessera comparison: {trace}"));
    p.subtitle.push(format!("{} variants on the same jobs: {}", variants.len(), variants.iter().map(|v| v.name.as_str()).collect::<Vec<_>>().join(", ")));
    p.section("Metrics (differences from the first variant)", vec![Block::Table(difference_table(variants))]);
    let first = variants.iter().flat_map(|v| v.jobs.iter().map(|j| j.submit)).fold(f64::INFINITY, f64::min);
    let last = variants.iter().flat_map(|v| v.jobs.iter().map(|j| j.end)).fold(f64::NEG_INFINITY, f64::max);
    let axis = TimeAxis::fit(if first.is_finite() { first } else { 0.0 }, (last - first).max(0.0));
    let (mut util, mut queue) = (Vec::new(), Vec::new());
    for v in variants {
        let (b, q) = busy_and_queue(&v.jobs);
        util.push(Series::step(&v.name, b.iter().map(|&(t, x)| (axis.x(t), 100.0 * x / v.capacity.max(1.0))).collect()));
        queue.push(Series::step(&v.name, q.iter().map(|&(t, x)| (axis.x(t), x)).collect()));
    }
    p.section(
        "Utilization and queue",
        vec![
            Block::Chart(Chart::lines("Utilization over time", &axis.label(), "busy (% of the machine)", util)),
            Block::Chart(Chart::lines("Queue length over time", &axis.label(), "jobs waiting (mean over each span)", queue)),
        ],
    );
    let runs: Vec<(&str, &[JobTimes])> = variants.iter().map(|v| (v.name.as_str(), v.jobs.as_slice())).collect();
    p.section("Waiting and slowdown", wait_blocks(&runs));
    p
}

/// A sweep's results: a CSV with a `case` column, identity columns and metric
/// columns (those in [`SWEEP_METRICS`]).
#[derive(Clone, Debug, PartialEq)]
pub struct SweepTable {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// The metric columns of a sweep, in order.
pub const SWEEP_METRICS: &[&str] = &[
    "jobs",
    "mean_wait_s",
    "median_wait_s",
    "p95_wait_s",
    "mean_response_s",
    "mean_slowdown",
    "mean_bounded_slowdown",
    "area_weighted_slowdown",
    "utilization",
    "makespan_s",
    "energy_kwh",
    "max_power_w",
];

impl SweepTable {
    pub fn csv(&self) -> String {
        Table { header: self.header.clone(), rows: self.rows.clone() }.render(TableFormat::Csv)
    }

    fn col(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }

    /// The page: the table, and each metric against each parameter that varies.
    pub fn page(&self, title: &str) -> Page {
        let mut p = Page::new(format!("Tessera sweep: {title}"));
        p.subtitle.push(format!("{} cases", self.rows.len()));
        let identity: Vec<usize> = (1..self.header.len()).filter(|&i| !SWEEP_METRICS.contains(&self.header[i].as_str())).collect();
        let numeric = |i: usize| self.rows.iter().all(|r| r[i].parse::<f64>().is_ok());
        // columns whose value differs between cases
        let varies: Vec<bool> = (0..self.header.len())
            .map(|i| {
                let mut v: Vec<&String> = self.rows.iter().map(|r| &r[i]).collect();
                v.sort();
                v.dedup();
                v.len() > 1
            })
            .collect();
        let params: Vec<usize> = identity.iter().copied().filter(|&i| varies[i] && numeric(i)).collect();
        let mut blocks = Vec::new();
        for &pi in &params {
            for (metric, unit) in [("mean_wait_s", "mean wait (s)"), ("mean_bounded_slowdown", "mean bounded slowdown"), ("utilization", "utilization (fraction)")] {
                let Some(mi) = self.col(metric) else { continue };
                let mut groups: std::collections::BTreeMap<String, Vec<(f64, f64)>> = Default::default();
                for r in &self.rows {
                    let key = identity.iter().filter(|&&i| i != pi && varies[i]).map(|&i| format!("{}={}", self.header[i], short(&r[i]))).collect::<Vec<_>>().join(" ");
                    if let (Ok(x), Ok(y)) = (r[pi].parse::<f64>(), r[mi].parse::<f64>()) {
                        groups.entry(if key.is_empty() { "all".into() } else { key }).or_default().push((x, y));
                    }
                }
                let series = groups
                    .into_iter()
                    .map(|(k, mut v)| {
                        v.sort_by(|a, b| a.0.total_cmp(&b.0));
                        Series::line(k, v)
                    })
                    .collect();
                blocks.push(Block::Chart(Chart::lines(&format!("{unit} against {}", self.header[pi]), &self.header[pi], unit, series)));
            }
        }
        if params.is_empty() {
            let names: Vec<String> = self.rows.iter().map(|r| format!("case {}", r[0])).collect();
            for (metric, unit) in [("mean_wait_s", "mean wait (s)"), ("mean_bounded_slowdown", "mean bounded slowdown")] {
                if let Some(mi) = self.col(metric) {
                    blocks.push(Block::Chart(Chart::bars(&format!("{unit} by case"), "case", unit, names.clone(), vec![(metric.into(), self.rows.iter().map(|r| r[mi].parse().unwrap_or(f64::NAN)).collect())])));
                }
            }
        }
        p.section("Metrics against the parameters", blocks);
        p.section("Every case", vec![Block::Table(Table { header: self.header.clone(), rows: self.rows.clone() })]);
        p
    }
}

/// A trace or cluster path by its file name.
fn short(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}
