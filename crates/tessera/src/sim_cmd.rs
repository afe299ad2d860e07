//! `tessera sim run` and `tessera sim bench`.

use crate::out::{out, outln};
use crate::cli::{Format, SimBenchArgs, SimRunArgs};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::Instant;
use tessera_core::PolicyKind;
use tessera_sim::reference::simulate_reference;
use std::sync::Arc;
use tessera_sim::workload::{default_capacity, prepare, prepare_on, Machine};
use tessera_sim::simulate;
use tessera_studies::run::{execute, load_cluster, write_outputs, Outputs};
use tessera_studies::{PowerSpec, RunSpec};
use tessera_workload::swf::SwfReader;

/// The run `sim run`'s flags describe (its outputs aside).
pub fn spec_of(a: &SimRunArgs) -> RunSpec {
    let p = &a.power;
    let power = PowerSpec {
        parm_variant: p.parm_variant.clone(), solver: p.solver.clone(), milp_node_limit: p.milp_node_limit, milp_time_limit: p.milp_time_limit, alpha: p.alpha, fse: p.fse, amortize_resizes: p.amortize_resizes,
        parm_rule: p.parm_rule.clone(), charge_solve_time: p.charge_solve_time, cap: p.cap, power_seed: p.power_seed, budget_w: p.budget_w, theta: p.theta.clone(), parallelism: p.parallelism.clone(),
        sigma: p.sigma.clone(), package_base_w: p.package_base_w, power_out: p.power_out.clone(),
    };
    RunSpec {
        trace: a.trace.clone(), capacity: a.capacity, cluster: a.cluster.clone(), partition: a.partition.clone(), nodeset: a.nodeset.clone(), nodeset_optional: a.nodeset_optional,
        nodeset_tolerance: a.nodeset_tolerance, nodeset_priority: a.nodeset_priority.clone(), nodeset_plus: a.nodeset_plus.clone(),
        // the flag's parser accepted it
        policy: a.policy.parse().expect("a known policy"),
        power, lenient: a.lenient, max_jobs: a.max_jobs, arrival_scale: a.arrival_scale,
    }
}

pub fn run(mut a: SimRunArgs) -> Result<()> {
    let t0 = Instant::now();
    a.trace = a.trace.as_deref().map(tessera_workload::traces::resolve).transpose()?;
    let spec = spec_of(&a);
    let outputs = Outputs { jobs_out: a.jobs_out, swf_out: a.swf_out, summary: a.summary, report: a.report, db: a.db, site: a.site };
    let mut inputs: Vec<(&str, &Path)> = Vec::new();
    inputs.extend(spec.trace.as_deref().map(|p| ("trace", p)));
    inputs.extend(spec.cluster.as_deref().map(|p| ("cluster file", p)));
    tessera_studies::files::check(&inputs, &outputs.named(&spec))?;
    let (summary, json) = write_outputs(execute(&spec)?, &spec, &outputs, t0)?;
    match a.format {
        Format::Json => outln!("{json}")?,
        Format::Table => out!("{}", summary.table())?,
    }
    Ok(())
}

#[derive(serde::Serialize)]
struct BenchRow {
    trace: String,
    jobs: usize,
    policy: String,
    parse_s: f64,
    sim_s: f64,
    sim_median_s: f64,
    sim_over_parse: f64,
    naive_s: Option<f64>,
    naive_over_sim: Option<f64>,
    max_queue: usize,
    /// With --cluster: the same trace on the cluster's nodes, and the ratio to the pool.
    nodes_s: Option<f64>,
    nodes_over_pool: Option<f64>,
}

fn time_min_median<T>(repeat: usize, mut f: impl FnMut() -> T) -> (f64, f64, T) {
    let mut times = Vec::with_capacity(repeat);
    let mut last = None;
    for _ in 0..repeat.max(1) {
        let t = Instant::now();
        let out = f();
        times.push(t.elapsed().as_secs_f64());
        last = Some(out);
    }
    times.sort_by(f64::total_cmp);
    (times[0], times[times.len() / 2], last.unwrap())
}

pub fn bench(a: SimBenchArgs) -> Result<()> {
    let traces: Vec<PathBuf> = if a.traces.is_empty() {
        let dir = tessera_workload::traces::shared_dir()
            .context("no --trace given and the shared traces directory was not found (set TESSERA_TRACES)")?;
        ["HPC2N-2002-2.2-cln.swf.gz", "CEA-Curie-2011-2.1-cln.swf.gz", "RICC-2010-2.swf.gz"].iter().map(|f| dir.join(f)).collect()
    } else {
        a.traces.iter().map(|t| tessera_workload::traces::resolve(t)).collect::<Result<_, _>>()?
    };
    let policies: Vec<PolicyKind> = if a.policies.is_empty() {
        vec![PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::Conservative]
    } else {
        a.policies.iter().map(|p| p.parse()).collect::<Result<_, _>>()?
    };
    let cluster = a.cluster.as_deref().map(load_cluster).transpose()?.map(Arc::new);
    let mut rows = Vec::new();
    for path in &traces {
        if !path.is_file() {
            bail!("{}: no such trace", path.display());
        }
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("?").trim_end_matches(".gz").trim_end_matches(".swf").to_string();
        let (parse_s, _, parsed) = time_min_median(a.repeat, || SwfReader::read_file(path, false));
        let (header, mut records, _) = parsed?;
        if let Some(n) = a.max_jobs {
            records.truncate(n);
        }
        let w = prepare(&records, default_capacity(&header, &name)?);
        w.check_time_range(&name)?;
        let on_nodes = cluster.as_ref().map(|c| prepare_on(&records, Machine::Cluster { cluster: c.clone(), partition: None, nodeset: None }));
        if let Some(wn) = &on_nodes {
            wn.check_time_range(&name)?;
        }
        if a.max_jobs.is_some() && a.format == Format::Table {
            outln!("{name}: first {} records (parse time is for the whole file)", records.len())?;
        }
        for &policy in &policies {
            let (sim_s, sim_median_s, outcome) = time_min_median(a.repeat, || simulate(&w, policy));
            let naive_limit = match policy {
                PolicyKind::Conservative => a.naive_conservative_max_jobs,
                _ => a.naive_max_jobs,
            };
            let naive_s = (w.jobs.len() <= naive_limit).then(|| {
                let (t, _, reference) = time_min_median(1, || simulate_reference(&w, policy));
                assert!(
                    reference.start == outcome.start && reference.end == outcome.end,
                    "{name} {policy}: the engine and the naive reference disagree"
                );
                t
            });
            let nodes_s = on_nodes.as_ref().map(|wn| time_min_median(a.repeat, || simulate(wn, policy)).0);
            rows.push(BenchRow {
                nodes_s,
                nodes_over_pool: nodes_s.map(|n| n / sim_s),
                trace: name.clone(),
                jobs: w.jobs.len(),
                policy: policy.name().to_string(),
                parse_s,
                sim_s,
                sim_median_s,
                sim_over_parse: sim_s / parse_s,
                naive_s,
                naive_over_sim: naive_s.map(|n| n / sim_s),
                max_queue: outcome.max_queue,
            });
            if a.format == Format::Table {
                let r = rows.last().unwrap();
                outln!(
                    "{:<28} {:>7} jobs  {:<12} parse {:>7.3} s  sim {:>7.3} s (median {:>7.3})  sim/parse {:>5.2}  naive {}  max queue {}{}",
                    r.trace, r.jobs, r.policy, r.parse_s, r.sim_s, r.sim_median_s, r.sim_over_parse,
                    r.naive_s.map_or("-".to_string(), |n| format!("{n:.3} s ({:.1}x the engine)", n / r.sim_s)),
                    r.max_queue,
                    r.nodes_s.map_or(String::new(), |n| format!("  nodes {n:.3} s ({:.2}x the pool)", n / r.sim_s))
                )?;
                use std::io::Write;
                std::io::stdout().flush().ok();
            }
        }
    }
    if a.format == Format::Table {
        // conservative against EASY, per trace, in the pool and on nodes
        for r in rows.iter().filter(|r| r.policy == "conservative") {
            if let Some(e) = rows.iter().find(|e| e.trace == r.trace && e.policy == "easy") {
                let nodes = match (r.nodes_s, e.nodes_s) {
                    (Some(c), Some(x)) => format!(", on nodes {:.1}x", c / x),
                    _ => String::new(),
                };
                outln!("{}: conservative / EASY {:.1}x in the pool{nodes}", r.trace, r.sim_s / e.sim_s)?;
            }
        }
    }
    if a.format == Format::Json {
        outln!("{}", serde_json::to_string_pretty(&rows)?)?;
    }
    Ok(())
}
