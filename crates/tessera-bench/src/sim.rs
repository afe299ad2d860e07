//! `tessera sim bench`: parsing and every policy timed on whole traces, against
//! the naive reference simulator (which rescans the queue at every pass), in a
//! pool and, with a cluster file, on its nodes.

use crate::measure::time_min_median;
use anyhow::{bail, Context, Result};
use std::fmt::Write;
use std::path::PathBuf;
use std::sync::Arc;
use tessera_core::PolicyKind;
use tessera_sim::reference::simulate_reference;
use tessera_sim::simulate;
use tessera_sim::workload::{default_capacity, prepare, prepare_on, Machine};
use tessera_studies::run::load_cluster;
use tessera_workload::swf::SwfReader;

/// `tessera sim bench`'s settings (see its `--help`).
#[derive(Clone, Debug)]
pub struct Options {
    pub traces: Vec<PathBuf>,
    pub policies: Vec<String>,
    pub repeat: usize,
    pub naive_max_jobs: usize,
    pub naive_conservative_max_jobs: usize,
    pub max_jobs: Option<usize>,
    pub cluster: Option<PathBuf>,
    /// Also time each policy with multifactor priority and Fair Tree (every
    /// trace group an account), as a ratio to submission order.
    pub fairshare: bool,
}

/// One trace and policy timed.
#[derive(serde::Serialize)]
struct Row {
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
    /// With --fairshare: the same trace ordered by multifactor priority, and
    /// the ratio to submission order.
    fairshare_s: Option<f64>,
    fairshare_over_fifo: Option<f64>,
}

/// Time parsing and every policy on each trace; compare with the naive
/// reference. In the table format, `line` gets each row as it is measured (and
/// a note on traces cut short); the end of the report is returned: the
/// conservative / EASY ratios, or the JSON of every row.
pub fn run(a: &Options, json: bool, line: &mut dyn FnMut(&str) -> Result<()>) -> Result<String> {
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
        if a.max_jobs.is_some() && !json {
            line(&format!("{name}: first {} records (parse time is for the whole file)", records.len()))?;
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
            let fairshare_s = a.fairshare.then(|| {
                let mut wf = w.clone();
                let priority = tessera_core::share::PriorityConfig { kind: tessera_core::share::PriorityKind::Multifactor, ..Default::default() };
                wf.sharing = Some(Arc::new(tessera_sim::share::SimSharing::from_trace(&wf.jobs, priority)));
                time_min_median(a.repeat, || simulate(&wf, policy)).0
            });
            rows.push(Row {
                fairshare_s,
                fairshare_over_fifo: fairshare_s.map(|f| f / sim_s),
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
            if !json {
                let r = rows.last().unwrap();
                line(&format!(
                    "{:<28} {:>7} jobs  {:<12} parse {:>7.3} s  sim {:>7.3} s (median {:>7.3})  sim/parse {:>5.2}  naive {}  max queue {}{}",
                    r.trace, r.jobs, r.policy, r.parse_s, r.sim_s, r.sim_median_s, r.sim_over_parse,
                    r.naive_s.map_or("-".to_string(), |n| format!("{n:.3} s ({:.1}x the engine)", n / r.sim_s)),
                    r.max_queue,
                    r.nodes_s.map_or(String::new(), |n| format!("  nodes {n:.3} s ({:.2}x the pool)", n / r.sim_s)),
                ))?;
                if let Some(f) = r.fairshare_s {
                    line(&format!("{:<28} {:>7} jobs  {:<12} fair share (multifactor, Fair Tree) {f:>7.3} s: {:.2}x submission order", r.trace, r.jobs, r.policy, f / r.sim_s))?;
                }
            }
        }
    }
    let mut w = String::new();
    if !json {
        // conservative against EASY, per trace, in the pool and on nodes
        for r in rows.iter().filter(|r| r.policy == "conservative") {
            if let Some(e) = rows.iter().find(|e| e.trace == r.trace && e.policy == "easy") {
                let nodes = match (r.nodes_s, e.nodes_s) {
                    (Some(c), Some(x)) => format!(", on nodes {:.1}x", c / x),
                    _ => String::new(),
                };
                writeln!(w, "{}: conservative / EASY {:.1}x in the pool{nodes}", r.trace, r.sim_s / e.sim_s)?;
            }
        }
    }
    if json {
        writeln!(w, "{}", serde_json::to_string_pretty(&rows)?)?;
    }
    Ok(w)
}
