//! `tessera experiment nodesets`: node sets on a heterogeneous cluster (no
//! node sets, ONEOF:PROCSPEED, tolerance 0.5, and tolerance 0.5 with MINLOSS),
//! at one or more loads.

use crate::run::{cluster_or_embedded, trace_or_shared};
use anyhow::{Context, Result};
use std::fmt::Write;
use std::path::PathBuf;
use std::sync::Arc;
use tessera_core::{NodeSetSpec, PolicyKind, SetPriority};

/// The experiment's default cluster (also at examples/clusters/sdsc-blue-3gen.toml).
const SDSC_BLUE_3GEN: &str = include_str!("../../../examples/clusters/sdsc-blue-3gen.toml");

use tessera_sim::{prepare_on, simulate, Machine, Summary};
use tessera_workload::swf::SwfReader;
use tessera_workload::transform;

#[derive(serde::Serialize)]
struct Row {
    arrival_scale: f64,
    config: String,
    jobs: u64,
    mean_wait_s: f64,
    mean_bounded_slowdown: f64,
    utilization: f64,
    makespan_days: f64,
    jobs_per_day: f64,
    throughput_vs_none_pct: f64,
    normalized_throughput: f64,
    lost_core_hours: f64,
    lost_pct: f64,
    nodesets_dropped: u64,
    sim_wall_s: f64,
}

fn configs() -> Vec<(&'static str, Option<NodeSetSpec>)> {
    let speed = NodeSetSpec::parse_job("ONEOF:PROCSPEED").unwrap();
    let tolerant = NodeSetSpec { tolerance: Some(0.5), ..speed.clone() };
    let minloss = NodeSetSpec { priority: SetPriority::MinLoss, ..tolerant.clone() };
    vec![
        ("no node sets", None),
        ("ONEOF:PROCSPEED", Some(speed)),
        ("ONEOF:PROCSPEED, TOLERANCE 0.5", Some(tolerant)),
        ("ONEOF:PROCSPEED, TOLERANCE 0.5, MINLOSS", Some(minloss)),
    ]
}

/// `tessera experiment nodesets`'s settings (see its `--help`).
#[derive(Clone, Debug)]
pub struct Options {
    pub trace: Option<PathBuf>,
    pub cluster: Option<PathBuf>,
    pub policy: PolicyKind,
    pub arrival_scales: Vec<f64>,
    pub max_jobs: Option<usize>,
}

/// Run the experiment; its report as a Markdown table, or as JSON (one row per
/// load and configuration).
pub fn run(a: &Options, json: bool) -> Result<String> {
    let trace = trace_or_shared(&a.trace, "SDSC-BLUE-2000-4.2-cln.swf.gz")?;
    let (cluster_label, cluster) = cluster_or_embedded(&a.cluster, "examples/clusters/sdsc-blue-3gen.toml", SDSC_BLUE_3GEN)?;
    let cluster = Arc::new(cluster);
    let policy = a.policy;
    let (_, mut records, _) = SwfReader::read_file(&trace, false)?;
    if let Some(n) = a.max_jobs {
        transform::first_jobs(&mut records, n);
    }
    let mut rows: Vec<Row> = Vec::new();
    let label = trace.display().to_string();
    let mut loads = Vec::new();
    for &scale in &a.arrival_scales {
        let mut recs = records.clone();
        transform::scale_arrivals(&mut recs, scale).with_context(|| format!("--arrival-scale {scale:?} on {label}"))?;
        loads.push(recs);
    }
    // every (load, configuration) run is independent: a worker per core takes
    // the next one, the heaviest loads (smallest scale) first
    let runs: Vec<(usize, usize)> = (0..loads.len()).flat_map(|l| (0..configs().len()).map(move |c| (l, c))).collect();
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by(|&x, &y| a.arrival_scales[runs[x].0].total_cmp(&a.arrival_scales[runs[y].0]));
    let done = crate::parallel::parallel(&order, crate::parallel::cores(), "experiment runs", |&r| {
        let (l, c) = runs[r];
        let nodeset = configs().swap_remove(c).1;
        let result = (|| -> Result<(Summary, f64)> {
            let w = prepare_on(&loads[l], Machine::Cluster { cluster: cluster.clone(), partition: None, nodeset });
            w.check_time_range(&label)?;
            let t = std::time::Instant::now();
            let o = simulate(&w, policy);
            let wall = t.elapsed().as_secs_f64();
            Ok((Summary::compute("", &w, &o), wall))
        })();
        (r, result)
    });
    let mut results: Vec<Option<(Summary, f64)>> = (0..runs.len()).map(|_| None).collect();
    for (r, result) in done {
        results[r] = Some(result?);
    }
    for (l, &scale) in a.arrival_scales.iter().enumerate() {
        let first = l * configs().len();
        let base = results[first].as_ref().and_then(|r| r.0.cluster.as_ref()).map_or(1.0, |c| c.jobs_per_day);
        for (c, (name, _)) in configs().into_iter().enumerate() {
            let (s, wall) = results[first + c].take().expect("every run ran");
            let c = s.cluster.as_ref().expect("cluster runs have cluster metrics");
            rows.push(Row {
                arrival_scale: scale,
                config: name.to_string(),
                jobs: s.jobs_simulated,
                mean_wait_s: s.mean_wait,
                mean_bounded_slowdown: s.mean_bounded_slowdown,
                utilization: s.utilization,
                makespan_days: s.makespan as f64 / 86400.0,
                jobs_per_day: c.jobs_per_day,
                throughput_vs_none_pct: 100.0 * (c.jobs_per_day / base - 1.0),
                normalized_throughput: c.normalized_throughput,
                lost_core_hours: c.lost_core_seconds / 3600.0,
                lost_pct: 100.0 * c.lost_fraction,
                nodesets_dropped: c.nodeset_dropped,
                sim_wall_s: wall,
            });
        }
    }
    if json {
        return Ok(format!("{}\n", serde_json::to_string_pretty(&rows)?));
    }
    let mut w = String::new();
    writeln!(w, "trace: {}  cluster: {}  policy: {}", trace.display(), cluster_label, policy)?;
    writeln!(w)?;
    let mut t = tessera_report::Table::new(&[
        "arrival scale", "configuration", "jobs", "mean wait (s)", "mean bounded slowdown", "utilization", "makespan (days)", "jobs/day", "throughput vs none",
        "reference core-s/s", "lost core-hours (%)", "node sets dropped",
    ]);
    for r in &rows {
        t.row(vec![
            r.arrival_scale.to_string(),
            r.config.clone(),
            r.jobs.to_string(),
            format!("{:.0}", r.mean_wait_s),
            format!("{:.2}", r.mean_bounded_slowdown),
            format!("{:.3}", r.utilization),
            format!("{:.1}", r.makespan_days),
            format!("{:.1}", r.jobs_per_day),
            format!("{:+.1}%", r.throughput_vs_none_pct),
            format!("{:.1}", r.normalized_throughput),
            format!("{:.0} ({:.2}%)", r.lost_core_hours, r.lost_pct),
            r.nodesets_dropped.to_string(),
        ]);
    }
    write!(w, "{}", t.markdown())?;
    Ok(w)
}
