//! `tessera twin`: does the simulator predict the live system? Start a
//! controller and agents on this machine, replay a shrunk trace through them
//! with sleep jobs (`tessera replay`), simulate the very workload that was
//! submitted with the same cluster and policy, and compare job by job (start
//! instants) and metric by metric.

use crate::client::runtime;
use crate::local::Guard;
use crate::replay::{self, parse_shrink, plan, Files, Pace};
use anyhow::{anyhow, bail, Context, Result};
use hyper::Method;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tessera_core::{Cluster, PolicyKind};
use tessera_proto::api::ClusterInfo;
use tessera_proto::client::{Client, Target};
use tessera_sim::metrics::{Classic, JobTimes};
use tessera_sim::run::simulate;
use tessera_workload::swf::SwfReader;
use tessera_workload::transform::{first_jobs, Shrink};

/// `tessera twin`'s settings (see its `--help`).
#[derive(Clone, Debug)]
pub struct Options {
    pub trace: PathBuf,
    pub max_jobs: usize,
    /// One percentage.
    pub shrink: String,
    pub cluster: Option<PathBuf>,
    pub policy: String,
    pub agents: usize,
    /// Default: a fresh directory under the system's temporary directory, kept.
    pub dir: Option<PathBuf>,
}

/// The comparison.
#[derive(Serialize, Debug)]
pub struct Twin {
    pub trace: String,
    pub jobs: usize,
    pub shrink_pct: f64,
    pub cluster: String,
    pub policy: String,
    /// |live start − simulated start| over the jobs, seconds.
    pub start_abs_median: f64,
    pub start_abs_p90: f64,
    pub start_abs_p99: f64,
    pub start_abs_max: f64,
    /// Mean of live start − simulated start (a systematic lag is positive).
    pub start_signed_mean: f64,
    pub within_1s: usize,
    /// Jobs suspended at least once, simulated and live.
    pub suspended_sim: usize,
    pub suspended_live: usize,
    /// |live suspended time − simulated suspended time| over the jobs: the
    /// largest, and how many are within 1 s.
    pub suspended_abs_max: f64,
    pub suspended_within_1s: usize,
    pub live: Classic,
    pub simulated: Classic,
    /// (live − simulated) / simulated, by metric (live − simulated where the
    /// simulated value is 0).
    pub relative_difference: BTreeMap<String, f64>,
    pub dir: PathBuf,
    pub per_job_csv: PathBuf,
}

/// Start a local cluster (the `tessera` binary `bin`), replay, simulate what
/// was submitted, compare; the comparison is also written to `DIR/twin.json`.
pub fn run(a: &Options, bin: &Path) -> Result<Twin> {
    let trace_path = tessera_workload::traces::resolve(&a.trace)?;
    let shrinks = parse_shrink(&a.shrink)?;
    let [pct] = shrinks[..] else { bail!("--shrink {}: the twin check takes one percentage", a.shrink) };
    let policy: PolicyKind = a.policy.parse().map_err(|e| anyhow!("--policy: {e}"))?;
    let dir = match &a.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("tessera-twin-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = dir.canonicalize()?;
    let state = dir.join("state");
    std::fs::create_dir_all(&state).with_context(|| format!("creating {}", state.display()))?;
    let local = Guard::start(bin, &state, &a.cluster, a.agents, "127.0.0.1:0".parse()?, &a.policy, &[])?;
    let rt = runtime()?;
    let mut client = Client::new(Target::Unix(local.ep.socket.clone()), None);
    let info: ClusterInfo = rt.block_on(client.call::<(), _>(Method::GET, "/v1/cluster", None)).map_err(|e| anyhow!("asking the controller for its cluster: {e}"))?;
    let cluster = Arc::new(Cluster::from_toml(&info.toml, &info.path).map_err(|e| anyhow!("{e}"))?);

    let (header, mut records, _) = SwfReader::read_file(&trace_path, false)?;
    first_jobs(&mut records, a.max_jobs);
    let shrink = Shrink::uniform(pct);
    shrink.apply(&mut records).map_err(|e| anyhow!("{}: {e}", trace_path.display()))?;
    let (w, planned) = plan(&records, cluster.clone(), Pace::Trace { warmup: 0 })?;
    let files = Files::new(&dir.join("replay"))?;
    let trace = trace_path.display().to_string();
    let o = replay::run(&rt, &mut client, &info, &header, &w, &planned, &files, bin, 0, &trace, pct, shrink)?;
    drop(local);

    // the simulator on exactly what was submitted (submit times are the plan's
    // offsets from the replay's start, so both clocks start at 0)
    let (_, submitted, _) = SwfReader::read_file(&o.submitted_swf, false)?;
    let (sw, sim_planned) = plan(&submitted, cluster, Pace::Trace { warmup: 0 })?;
    if sim_planned.len() != planned.len() {
        bail!("the workload as submitted has {} jobs, the replay {}", sim_planned.len(), planned.len());
    }
    let out = simulate(&sw, policy);
    let live_by_id: BTreeMap<u64, _> = o.records.iter().map(|r| (r.id, r)).collect();
    let per_job_csv = dir.join("twin.csv");
    let mut csv = std::io::BufWriter::new(std::fs::File::create(&per_job_csv)?);
    writeln!(csv, "trace_id,procs,sim_submit,sim_start,sim_end,live_submit,live_start,live_end,start_diff,sim_suspended,live_suspended,suspended_diff")?;
    let (mut diffs, mut sim_t, mut live_t, mut susp) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, j) in sw.jobs.iter().enumerate() {
        let id = j.id as u64;
        let Some(l) = live_by_id.get(&id) else { bail!("trace job {id} has no line in the sleep jobs' log {}", files.log.display()) };
        let rel = |x: f64| x - o.t0;
        let d = rel(l.start) - out.start[i] as f64;
        diffs.push(d);
        let live_susp = l.times().suspended;
        let ds = live_susp - out.suspended[i] as f64;
        susp.push((out.suspended[i] > 0, live_susp > 0.0, ds));
        writeln!(
            csv,
            "{id},{},{},{},{},{:.3},{:.3},{:.3},{d:.3},{},{live_susp:.3},{ds:.3}",
            j.procs,
            j.submit,
            out.start[i],
            out.end[i],
            rel(l.submit),
            rel(l.start),
            rel(l.end),
            out.suspended[i]
        )?;
        let procs = j.procs as f64;
        let run = (out.end[i] - out.start[i] - out.suspended[i]) as f64;
        sim_t.push(JobTimes { submit: j.submit as f64, start: out.start[i] as f64, end: out.end[i] as f64, suspended: out.suspended[i] as f64, procs, held: procs * run });
        live_t.push(JobTimes { submit: rel(l.submit), start: rel(l.start), end: rel(l.end), ..l.times() });
    }
    csv.flush()?;
    let cap = Some(info.cores as f64);
    let (live, simulated) = (Classic::compute(&live_t, cap), Classic::compute(&sim_t, cap));
    let mut abs: Vec<f64> = diffs.iter().map(|d| d.abs()).collect();
    abs.sort_unstable_by(f64::total_cmp);
    let q = |p: f64| tessera_sim::metrics::percentile(&abs, p);
    let relative_difference = live.named().into_iter().zip(simulated.named()).map(|((k, l), (_, s))| (k.to_string(), if s != 0.0 { (l - s) / s } else { l - s })).collect();
    let t = Twin {
        trace,
        jobs: diffs.len(),
        shrink_pct: pct,
        cluster: info.name.clone(),
        policy: info.policy.clone(),
        start_abs_median: q(0.5),
        start_abs_p90: q(0.9),
        start_abs_p99: q(0.99),
        start_abs_max: abs.last().copied().unwrap_or(0.0),
        start_signed_mean: diffs.iter().sum::<f64>() / diffs.len().max(1) as f64,
        within_1s: abs.iter().filter(|&&d| d <= 1.0).count(),
        suspended_sim: susp.iter().filter(|x| x.0).count(),
        suspended_live: susp.iter().filter(|x| x.1).count(),
        suspended_abs_max: susp.iter().map(|x| x.2.abs()).fold(0.0, f64::max),
        suspended_within_1s: susp.iter().filter(|x| x.2.abs() <= 1.0).count(),
        live,
        simulated,
        relative_difference,
        dir: dir.clone(),
        per_job_csv,
    };
    std::fs::write(dir.join("twin.json"), serde_json::to_vec_pretty(&t)?)?;
    Ok(t)
}

impl std::fmt::Display for Twin {
    /// The comparison as a report: start differences, suspensions, every metric.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = self;
        writeln!(f, "Digital twin: {} jobs of {} at {}% on {} ({}), live against simulated", t.jobs, t.trace, t.shrink_pct, t.cluster, t.policy)?;
        writeln!(f, 
            "  |live start − simulated start|: median {:.3} s, p90 {:.3} s, p99 {:.3} s, max {:.3} s; within 1 s: {} of {}; mean signed {:+.3} s",
            t.start_abs_median, t.start_abs_p90, t.start_abs_p99, t.start_abs_max, t.within_1s, t.jobs, t.start_signed_mean
        )?;
        writeln!(f, 
            "  suspended: {} jobs simulated, {} live; |live − simulated suspended time|: max {:.3} s; within 1 s: {} of {}",
            t.suspended_sim, t.suspended_live, t.suspended_abs_max, t.suspended_within_1s, t.jobs
        )?;
        let width = t.relative_difference.keys().map(|k| k.len()).max().unwrap_or(0);
        writeln!(f, "  {:<width$}  {:>12}  {:>12}  {:>9}", "metric", "simulated", "live", "diff")?;
        for ((k, s), (_, l)) in t.simulated.named().into_iter().zip(t.live.named()) {
            let d = t.relative_difference.get(k).copied().unwrap_or(0.0);
            // against a simulated 0 the difference is absolute, not relative
            let diff = if s == 0.0 { format!("{d:>+8.3} ") } else { format!("{:>+8.2}%", d * 100.0) };
            writeln!(f, "  {k:<width$}  {s:>12.4}  {l:>12.4}  {diff}")?;
        }
        writeln!(f, "  files: {} (per job: {})", t.dir.display(), t.per_job_csv.display())?;
        Ok(())
    }
}
