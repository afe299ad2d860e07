//! `tessera sim run` and `tessera sim bench`.

use crate::out::{out, outln};
use crate::cli::{Format, SimBenchArgs, SimRunArgs};
use anyhow::{bail, Context, Result};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;
use tessera_core::{Cluster, PolicyKind};
use tessera_sim::output::{write_jobs_csv, write_swf};
use tessera_sim::reference::simulate_reference;
use std::sync::Arc;
use tessera_core::nodeset::SetAttribute;
use tessera_core::NodeSetSpec;
use tessera_sim::workload::{default_capacity, prepare, prepare_on, Machine};
use tessera_sim::{simulate, Summary};
use tessera_workload::lublin::{generate, LublinParams};
use tessera_workload::swf::{SwfHeader, SwfReader, SwfRecord};
use tessera_report::run::RunData;

/// The embedded default cluster (also at examples/clusters/default.toml).
pub const DEFAULT_CLUSTER: &str = include_str!("../../../examples/clusters/default.toml");
/// Jobs and seed of the embedded default workload.
pub const DEFAULT_JOBS: usize = 10_000;
pub const DEFAULT_SEED: u64 = 1;

pub fn load_cluster(path: &Path) -> Result<Cluster> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading cluster file {}", path.display()))?;
    Ok(Cluster::from_toml(&text, &path.display().to_string())?)
}

pub fn default_cluster() -> Cluster {
    Cluster::from_toml(DEFAULT_CLUSTER, "examples/clusters/default.toml").expect("the embedded default cluster is valid")
}

fn read_trace(path: &Path, lenient: bool) -> Result<(SwfHeader, Vec<SwfRecord>)> {
    let (header, records, report) = SwfReader::read_file(path, lenient)?;
    if report.skipped > 0 {
        eprintln!("{}: {report}", path.display());
    }
    Ok((header, records))
}

/// The node set given on the command line, with the cluster's site options unless
/// overridden by flags.
fn nodeset_of(a: &SimRunArgs, cluster: &Cluster) -> Result<Option<NodeSetSpec>> {
    let Some(text) = &a.nodeset else { return Ok(None) };
    let mut spec = NodeSetSpec::parse_job(text)?.with_site_options(cluster.nodeset.as_ref());
    if a.nodeset_optional {
        spec.optional = true;
    }
    if let Some(t) = a.nodeset_tolerance {
        spec.tolerance = Some(t);
    }
    if let Some(p) = &a.nodeset_priority {
        spec.priority = p.parse().map_err(|m: String| anyhow::anyhow!("--nodeset-priority: {m}"))?;
    }
    if let Some(p) = &a.nodeset_plus {
        spec.plus = p.parse().map_err(|m: String| anyhow::anyhow!("--nodeset-plus: {m}"))?;
    }
    spec.validate().map_err(|m| anyhow::anyhow!("--nodeset {text}: {m}"))?;
    // a value no node has is a typo or not a node set at all (`--nodeset garbage`)
    let (what, present): (&str, Vec<String>) = match spec.attribute {
        SetAttribute::Feature => ("feature", cluster.node_types.iter().flat_map(|t| t.features.iter().cloned()).collect()),
        SetAttribute::Network => ("network", cluster.node_types.iter().filter_map(|t| t.network.clone()).collect()),
        SetAttribute::ProcSpeed | SetAttribute::Memory => ("", Vec::new()),
    };
    if !what.is_empty() {
        if let Some(v) = spec.list.iter().find(|v| !present.contains(v)) {
            let mut known: Vec<&str> = present.iter().map(String::as_str).collect();
            known.sort_unstable();
            known.dedup();
            let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
            bail!(
                "--nodeset {}: no node of cluster `{}` has {what} {}: expected one of its {what}s ({known}), in a Slurm constraint (`a|b`, `[a|b]`) or Moab's form (`ONEOF:FEATURE:a:b`)",
                tessera_workload::quote::bounded(text),
                cluster.name,
                tessera_workload::quote::bounded(v)
            );
        }
    }
    Ok(Some(spec))
}

/// One simulation, before its outputs are written.
pub struct Executed {
    pub label: String,
    pub policy: PolicyKind,
    pub header: SwfHeader,
    pub records: Vec<SwfRecord>,
    pub w: tessera_sim::Workload,
    pub outcome: tessera_sim::SimOutcome,
    pub summary: Summary,
}

/// Read (or generate) the jobs, build the machine and simulate, as `sim run`
/// does; `compare` and `sweep` run their variants through this too.
pub fn execute(a: &SimRunArgs) -> Result<Executed> {
    let t0 = Instant::now();
    let policy: PolicyKind = a.policy.parse()?;
    let mut cluster = match &a.cluster {
        Some(p) => Some(load_cluster(p)?),
        None if a.trace.is_none() => Some(default_cluster()),
        None => None,
    };
    if let Some(b) = a.power.budget_w {
        let c = cluster.as_mut().context("--budget-w needs --cluster with a power model")?;
        anyhow::ensure!(b.is_finite() && b > 0.0 && b <= 1e12, "--budget-w {b}: expected watts in (0, 1e12]");
        anyhow::ensure!(c.power_budget_w.is_some(), "--budget-w: cluster `{}` has no power_budget_w and power model to budget", c.name);
        c.power_budget_w = Some(b);
    }
    let cluster_cores = match &cluster {
        Some(c) => Some(u32::try_from(c.total_cores()).context("the cluster has more than 2^32 cores")?),
        None => None,
    };
    let (label, header, mut records) = match &a.trace {
        Some(path) => {
            let path = &tessera_workload::traces::resolve(path)?;
            let (h, r) = read_trace(path, a.lenient)?;
            (path.display().to_string(), h, r)
        }
        None => {
            let procs = cluster_cores.expect("default cluster");
            let (h, r) = generate(&LublinParams::new(procs, DEFAULT_JOBS, DEFAULT_SEED)).context("generating the default workload")?;
            (format!("default (Lublin-Feitelson 2003 model, {DEFAULT_JOBS} jobs, seed {DEFAULT_SEED}, {procs} processors)"), h, r)
        }
    };
    let parse_time = t0.elapsed().as_secs_f64();
    if let Some(n) = a.max_jobs {
        tessera_workload::transform::first_jobs(&mut records, n);
    }
    if let Some(g) = a.arrival_scale {
        tessera_workload::transform::scale_arrivals(&mut records, g).with_context(|| format!("--arrival-scale {g:?} on {label}"))?;
    }
    let w = match cluster {
        Some(cluster) => {
            let partition = match &a.partition {
                None => None,
                Some(name) => Some(cluster.partition_index(name).with_context(|| {
                    let known: Vec<&str> = cluster.partitions.iter().map(|p| p.name.as_str()).collect();
                    format!("--partition {name}: no such partition; known: {}", known.join(", "))
                })? as u16),
            };
            let nodeset = nodeset_of(&a, &cluster)?;
            match crate::power_cmd::setup(&cluster, policy, &a.power)? {
                Some(setup) => {
                    if partition.is_some() || nodeset.is_some() {
                        bail!("--partition and --nodeset do not apply to a power-budgeted cluster (its default partition is one machine)");
                    }
                    prepare_on(&records, Machine::Power(Arc::new(setup)))
                }
                None => prepare_on(&records, Machine::Cluster { cluster: Arc::new(cluster), partition, nodeset }),
            }
        }
        None if policy == PolicyKind::Parm => bail!("policy parm needs --cluster with a power budget (e.g. examples/clusters/theta-overprovisioned.toml)"),
        None if crate::power_cmd::any_power_flag(&a.power) => {
            bail!("power flags (--cap, --power-out, --parm-*, …) apply to a cluster with a power budget: give --cluster (e.g. examples/clusters/theta-overprovisioned.toml)")
        }
        None => {
            let capacity = match a.capacity {
                Some(c) => u32::try_from(c).ok().filter(|&c| c > 0).with_context(|| format!("--capacity {c}: expected 1..=4294967295"))?,
                None => default_capacity(&header, &label)?,
            };
            prepare(&records, capacity)
        }
    };
    w.check_time_range(&label)?;
    let t1 = Instant::now();
    let outcome = {
        let _span = tracing::info_span!("simulate", policy = policy.name(), jobs = w.jobs.len()).entered();
        simulate(&w, policy)
    };
    anyhow::ensure!(outcome.rejected == 0, "{label}: the engine rejected {} of the simulator's inputs (a simulator defect; please report it with this trace)", outcome.rejected);
    let sim_time = t1.elapsed().as_secs_f64();
    let mut summary = Summary::compute(&label, &w, &outcome);
    summary.policy = policy.name().to_string();
    summary.parse_wall_time_s = parse_time;
    summary.sim_wall_time_s = sim_time;
    summary.wall_time_s = t0.elapsed().as_secs_f64();
    Ok(Executed { label, policy, header, records, w, outcome, summary })
}

pub fn run(mut a: SimRunArgs) -> Result<()> {
    let t0 = Instant::now();
    a.trace = a.trace.as_deref().map(tessera_workload::traces::resolve).transpose()?;
    let mut inputs: Vec<(&str, &Path)> = Vec::new();
    inputs.extend(a.trace.as_deref().map(|p| ("trace", p)));
    inputs.extend(a.cluster.as_deref().map(|p| ("cluster file", p)));
    let outputs: Vec<(&str, &Path)> = [("--jobs-out", &a.jobs_out), ("--swf-out", &a.swf_out), ("--summary", &a.summary), ("--report", &a.report), ("--db", &a.db), ("--power-out", &a.power.power_out)]
        .into_iter()
        .filter_map(|(f, p)| p.as_deref().map(|p| (f, p)))
        .collect();
    crate::paths::check(&inputs, &outputs)?;
    let Executed { label, policy, header, records, w, outcome, mut summary } = execute(&a)?;
    let capacity = w.capacity;
    if let (Some(p), Some(po)) = (&a.power.power_out, &outcome.power) {
        crate::power_cmd::write_power_csv(p, po)?;
    }
    if let Some(p) = &a.jobs_out {
        let f = File::create(p).with_context(|| format!("creating {}", p.display()))?;
        write_jobs_csv(f, &w, &outcome).with_context(|| format!("writing {}", p.display()))?;
    }
    if let Some(p) = &a.swf_out {
        let f = File::create(p).with_context(|| format!("creating {}", p.display()))?;
        let note = format!("simulated by tessera {} with policy {} on {capacity} processors", env!("CARGO_PKG_VERSION"), policy.name());
        write_swf(f, &header, &note, &records, &w, &outcome).with_context(|| format!("writing {}", p.display()))?;
    }
    let site = a.site.clone().unwrap_or_else(|| match &w.machine {
        Machine::Cluster { cluster, .. } => cluster.name.clone(),
        Machine::Pool(c) => format!("pool-{c}"),
        Machine::Power(s) => s.name.clone(),
    });
    if let Some(db) = &a.db {
        let offset = header.unix_start_time.unwrap_or(0);
        let run = crate::record::record(db, &site, &label, policy.name(), offset, &w, &outcome, &records)?;
        eprintln!("recorded as run {run} in {}", db.display());
        if let Some(r) = &a.report {
            let store = tessera_accounting::store::Store::open(db)?;
            crate::acct_cmd::write_report(r, &RunData::load(&store, run, Default::default())?.page())?;
        }
    } else if let Some(r) = &a.report {
        // the report reads the run from a store: an in-memory one
        let mut store = tessera_accounting::store::Store::in_memory()?;
        let run = crate::record::record_into(&mut store, &site, &label, policy.name(), header.unix_start_time.unwrap_or(0), &w, &outcome, &records)?;
        crate::acct_cmd::write_report(r, &RunData::load(&store, run, Default::default())?.page())?;
    }
    summary.wall_time_s = t0.elapsed().as_secs_f64();
    let json = serde_json::to_string_pretty(&summary)?;
    if let Some(p) = &a.summary {
        std::fs::write(p, format!("{json}\n")).with_context(|| format!("writing {}", p.display()))?;
    }
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
