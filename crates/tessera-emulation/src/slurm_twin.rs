//! `tessera twin --slurm`: does the simulator predict a real Slurm? Start
//! Debian's Slurm 22.05 on this machine (`scripts/slurm-emulate --accounting`:
//! one slurmctld, a slurmd per emulated node, a slurmdbd on a private
//! MariaDB), replay a shrunk trace through it with sleep jobs, read back what
//! Slurm did with `sacct`, import its slurm.conf and that history as a user
//! would (`tessera import slurm-conf`, `tessera import sacct`), simulate the
//! very jobs Slurm ran (its submission instants, its limits in whole minutes,
//! the durations it measured) under Slurm's policy settings (backfilling every
//! bf_interval, the head of the queue alone between), and compare job by job
//! and metric by metric.

use crate::replay::parse_shrink;
use crate::twin::{metric_table, per_hour, relative, sorted_abs};
use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tessera_core::{Cluster, PolicyKind};
use tessera_sim::metrics::{percentile, Classic, JobTimes};
use tessera_sim::run::simulate;
use tessera_sim::workload::{prepare, prepare_on};
use tessera_sim::Machine;
use tessera_slurm::cli::{ImportCommand, SacctArgs, SlurmConfArgs};
use tessera_workload::swf::SwfReader;
use tessera_workload::transform::{first_jobs, Shrink};

/// `tessera twin --slurm`'s settings (see its `--help`).
#[derive(Clone, Debug)]
pub struct Options {
    pub trace: PathBuf,
    pub max_jobs: usize,
    /// One percentage.
    pub shrink: String,
    /// Tessera's policy for the simulation (conservative: Slurm's backfill
    /// reserves for every job it tests).
    pub policy: String,
    /// The emulated cluster: nodes of `cpus` CPUs.
    pub nodes: u32,
    pub cpus: u32,
    /// Slurm's SchedulerParameters (None: Slurm's defaults).
    pub sched_params: Option<String>,
    /// `scripts/slurm-emulate` (None: found from the current directory or the source tree).
    pub emulator: Option<PathBuf>,
    /// Default: a fresh directory under the system's temporary directory, kept.
    pub dir: Option<PathBuf>,
}

/// The comparison of a real Slurm with Tessera's simulation of its jobs.
#[derive(Serialize, Debug)]
pub struct SlurmTwin {
    pub trace: String,
    pub jobs: usize,
    /// Trace jobs not replayed, by reason (the simulator's skip reasons on a
    /// pool of the emulated cluster's CPUs: `larger_than_machine`, …).
    pub left_out: BTreeMap<&'static str, u64>,
    pub shrink_pct: f64,
    pub nodes: u32,
    pub cpus: u32,
    /// Slurm's SchedulerParameters (empty: its defaults).
    pub scheduler_parameters: String,
    /// The imported cluster file's `backfill_interval` (Slurm's bf_interval).
    pub backfill_interval_s: Option<i64>,
    pub policy: String,
    /// |Slurm's start − simulated start| over the jobs, seconds.
    pub start_abs_median: f64,
    pub start_abs_p90: f64,
    pub start_abs_p99: f64,
    pub start_abs_max: f64,
    /// Mean of Slurm's start − simulated start.
    pub start_signed_mean: f64,
    pub within_1s: usize,
    pub slurm: Classic,
    pub simulated: Classic,
    /// (Slurm − simulated) / simulated, by metric (Slurm − simulated where the
    /// simulated value is 0).
    pub relative_difference: BTreeMap<String, f64>,
    pub throughput_sim: f64,
    pub throughput_slurm: f64,
    /// sacct's rows, and the steps folded into their jobs.
    pub sacct_rows: u64,
    pub sacct_steps: u64,
    pub dir: PathBuf,
    pub per_job_csv: PathBuf,
}

/// Replay on Slurm, import, simulate, compare; the comparison is also written
/// to `DIR/twin.json`, Slurm's files under `DIR/slurm`.
pub fn run(a: &Options) -> Result<SlurmTwin> {
    let shrinks = parse_shrink(&a.shrink)?;
    let [pct] = shrinks[..] else { bail!("--shrink {}: the twin check takes one percentage", a.shrink) };
    let policy: PolicyKind = a.policy.parse().map_err(|e| anyhow!("--policy: {e}"))?;
    if policy == PolicyKind::Parm {
        bail!("--policy parm: Slurm does not choose power caps; compare it with fcfs, easy or conservative");
    }
    if !(1..=1000).contains(&a.nodes) || !(1..=1024).contains(&a.cpus) {
        bail!("--slurm-nodes {} --slurm-cpus {}: expected 1..=1000 nodes of 1..=1024 CPUs", a.nodes, a.cpus);
    }
    let emulator = find_emulator(a.emulator.as_deref())?;
    let dir = match &a.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("tessera-slurm-twin-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = dir.canonicalize()?;

    // the jobs, as the live twin takes them: the first N, shrunk
    let trace = tessera_workload::traces::resolve(&a.trace)?;
    let (_, mut records, _) = SwfReader::read_file(&trace, false)?;
    first_jobs(&mut records, a.max_jobs);
    Shrink::uniform(pct).apply(&mut records).map_err(|e| anyhow!("{}: {e}", trace.display()))?;
    let w = prepare(&records, a.nodes * a.cpus);
    if w.jobs.is_empty() {
        bail!("{}: no job of the first {} fits {} nodes of {} CPUs", trace.display(), a.max_jobs, a.nodes, a.cpus);
    }
    let left_out: BTreeMap<&'static str, u64> = w.skipped.iter().map(|(r, n)| (r.key(), *n)).collect();
    // what slurm-emulate replays: a job never runs past its limit (Slurm
    // would kill it up to 30 s late, the simulator at once)
    let csv = dir.join("slurm.csv");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&csv).with_context(|| format!("creating {}", csv.display()))?);
    writeln!(f, "id,submit,cores,runtime,limit")?;
    let first = w.jobs[0].submit;
    for j in &w.jobs {
        writeln!(f, "{},{},{},{},{}", j.id, j.submit - first, j.procs, j.runtime.min(j.estimate.max(1)), j.estimate.max(1))?;
    }
    f.flush()?;
    drop(f);

    // Slurm: start it, replay, wait for the last job, read its accounting
    let sdir = dir.join("slurm");
    let slurm = Slurm::start(&emulator, &sdir, a, &dir.join("slurm-emulate.log"))?;
    slurm.emulate(&["replay", "--csv", &csv.display().to_string(), "--parallel", "4"])?;
    let span: i64 = w.jobs.iter().map(|j| j.runtime.min(j.estimate.max(1))).sum::<i64>() + w.jobs.last().map_or(0, |j| j.submit - first);
    slurm.wait_idle(Duration::from_secs(span as u64 + 600))?;
    let sacct = dir.join("sacct.txt");
    slurm.sacct(&sacct, w.jobs.len())?;
    let conf = sdir.join("slurm.conf");
    drop(slurm);

    // imported as a user imports them
    let cluster_file = dir.join("cluster.toml");
    let swf = dir.join("slurm.swf");
    let mut notes = Vec::new();
    tessera_slurm::cli::run(ImportCommand::SlurmConf(SlurmConfArgs { conf, factors: None, output: Some(cluster_file.clone()) }), &mut notes).map_err(|e| anyhow!("{e}"))?;
    std::fs::write(dir.join("import-notes.txt"), &notes)?;
    tessera_slurm::cli::run(ImportCommand::Sacct(SacctArgs { file: sacct.clone(), cluster: cluster_file.clone(), db: Some(dir.join("accounting.db")), output: Some(swf.clone()), site: None }), &mut Vec::new())
        .map_err(|e| anyhow!("{e}"))?;
    let text = std::fs::read_to_string(&sacct)?;
    let history = tessera_slurm::sacct::read(&text, &sacct.display().to_string()).map_err(|e| anyhow!("{e}"))?;
    let ctext = std::fs::read_to_string(&cluster_file)?;
    let cluster = Arc::new(Cluster::from_toml(&ctext, &cluster_file.display().to_string()).map_err(|e| anyhow!("{e}"))?);

    // the simulator on the jobs as Slurm ran them
    let (_, ran, _) = SwfReader::read_file(&swf, false)?;
    let sw = prepare_on(&ran, Machine::Cluster { cluster: cluster.clone(), partition: None, nodeset: None });
    if sw.jobs.len() != w.jobs.len() {
        bail!("Slurm ran {} of the {} jobs replayed ({} skipped by the simulator: {:?}); see {}", sw.jobs.len(), w.jobs.len(), sw.skipped.values().sum::<u64>(), sw.skipped, sacct.display());
    }
    let out = simulate(&sw, policy);
    let by_id: BTreeMap<i64, usize> = ran.iter().enumerate().map(|(i, r)| (r.job_number, i)).collect();
    let trace_id: BTreeMap<i64, &str> = history.jobs.iter().map(|j| (j.id, j.name.strip_prefix('r').unwrap_or(&j.name))).collect();
    let per_job_csv = dir.join("twin.csv");
    let mut csv = std::io::BufWriter::new(std::fs::File::create(&per_job_csv)?);
    writeln!(csv, "trace_id,slurm_job,procs,submit,sim_start,sim_end,slurm_start,slurm_end,start_diff")?;
    let (mut diffs, mut sim_t, mut slurm_t) = (Vec::new(), Vec::new(), Vec::new());
    for (i, j) in sw.jobs.iter().enumerate() {
        let r = &ran[by_id[&j.id]];
        let start = (r.submit_time + r.wait_time) as f64;
        let end = start + r.run_time as f64;
        let d = start - out.start[i] as f64;
        diffs.push(d);
        writeln!(csv, "{},{},{},{},{},{},{start},{end},{d}", trace_id.get(&j.id).copied().unwrap_or("?"), j.id, j.procs, j.submit, out.start[i], out.end[i])?;
        let procs = j.procs as f64;
        sim_t.push(JobTimes { submit: j.submit as f64, start: out.start[i] as f64, end: out.end[i] as f64, suspended: 0.0, procs, held: procs * (out.end[i] - out.start[i]) as f64 });
        slurm_t.push(JobTimes { submit: j.submit as f64, start, end, suspended: 0.0, procs, held: procs * (end - start) });
    }
    csv.flush()?;
    let cap = Some(cluster.total_cores() as f64);
    let (slurm, simulated) = (Classic::compute(&slurm_t, cap), Classic::compute(&sim_t, cap));
    let abs = sorted_abs(&diffs);
    let t = SlurmTwin {
        trace: trace.display().to_string(),
        jobs: diffs.len(),
        left_out,
        shrink_pct: pct,
        nodes: a.nodes,
        cpus: a.cpus,
        scheduler_parameters: a.sched_params.clone().unwrap_or_default(),
        backfill_interval_s: cluster.backfill_interval_s,
        policy: a.policy.clone(),
        start_abs_median: percentile(&abs, 0.5),
        start_abs_p90: percentile(&abs, 0.9),
        start_abs_p99: percentile(&abs, 0.99),
        start_abs_max: abs.last().copied().unwrap_or(0.0),
        start_signed_mean: diffs.iter().sum::<f64>() / diffs.len().max(1) as f64,
        within_1s: abs.iter().filter(|&&d| d <= 1.0).count(),
        relative_difference: relative(&slurm, &simulated),
        throughput_sim: per_hour(&simulated),
        throughput_slurm: per_hour(&slurm),
        slurm,
        simulated,
        sacct_rows: history.rows,
        sacct_steps: history.steps,
        dir: dir.clone(),
        per_job_csv,
    };
    std::fs::write(dir.join("twin.json"), serde_json::to_vec_pretty(&t)?)?;
    Ok(t)
}

impl std::fmt::Display for SlurmTwin {
    /// The comparison as a report: start differences, every metric.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = self;
        let params = if t.scheduler_parameters.is_empty() { "Slurm's default SchedulerParameters".to_string() } else { format!("SchedulerParameters={}", t.scheduler_parameters) };
        let bf = t.backfill_interval_s.map_or("no backfill interval".to_string(), |b| format!("backfill every {b} s"));
        writeln!(f, "Slurm twin: {} jobs of {} at {}% on Slurm 22.05 ({} nodes x {} CPUs, {params}) against Tessera's simulation ({}, {bf})", t.jobs, t.trace, t.shrink_pct, t.nodes, t.cpus, t.policy)?;
        if !t.left_out.is_empty() {
            let why: Vec<String> = t.left_out.iter().map(|(k, n)| format!("{n} {k}")).collect();
            writeln!(f, "  trace jobs left out: {}", why.join(", "))?;
        }
        writeln!(f, "  sacct: {} rows, {} steps folded into their jobs", t.sacct_rows, t.sacct_steps)?;
        writeln!(
            f,
            "  |Slurm start − simulated start|: median {:.1} s, p90 {:.1} s, p99 {:.1} s, max {:.1} s; within 1 s: {} of {}; mean signed {:+.2} s",
            t.start_abs_median, t.start_abs_p90, t.start_abs_p99, t.start_abs_max, t.within_1s, t.jobs, t.start_signed_mean
        )?;
        metric_table(f, &t.simulated, &t.slurm, &t.relative_difference, "slurm")?;
        let dt = if t.throughput_sim > 0.0 { format!("{:+.2}%", 100.0 * (t.throughput_slurm / t.throughput_sim - 1.0)) } else { "-".into() };
        writeln!(f, "  throughput: simulated {:.3} jobs/h, Slurm {:.3} jobs/h ({dt})", t.throughput_sim, t.throughput_slurm)?;
        writeln!(f, "  files: {} (per job: {}; Slurm's slurm.conf, logs and sacct.txt there too)", t.dir.display(), t.per_job_csv.display())?;
        Ok(())
    }
}

/// `scripts/slurm-emulate`: as given, else from the current directory, else
/// from the source tree this binary was built from.
fn find_emulator(given: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = given {
        return if p.is_file() { Ok(p.to_path_buf()) } else { bail!("--emulator {}: no such file", p.display()) };
    }
    let here = PathBuf::from("scripts/slurm-emulate");
    let tree = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/slurm-emulate");
    [here, tree].into_iter().find(|p| p.is_file()).ok_or_else(|| anyhow!("scripts/slurm-emulate not found: run from the repository's root, or give --emulator PATH"))
}

/// A Slurm started by `scripts/slurm-emulate`, stopped when dropped.
struct Slurm {
    emulator: PathBuf,
    dir: PathBuf,
    log: PathBuf,
}

impl Slurm {
    fn start(emulator: &Path, dir: &Path, a: &Options, log: &Path) -> Result<Slurm> {
        for tool in ["slurmctld", "slurmd", "slurmdbd", "sacct", "munged", "mariadbd"] {
            if !Command::new("sh").args(["-c", &format!("command -v {tool}")]).stdout(Stdio::null()).status().is_ok_and(|s| s.success()) {
                bail!("{tool} not found: the Slurm twin needs Debian's Slurm, munge and MariaDB (apt-get install -y slurm-wlm slurmdbd munge mariadb-server; run as root)");
            }
        }
        std::fs::write(log, "")?;
        let s = Slurm { emulator: emulator.to_path_buf(), dir: dir.to_path_buf(), log: log.to_path_buf() };
        let (nodes, cpus) = (a.nodes.to_string(), a.cpus.to_string());
        s.emulate_env(&["start", "--nodes", &nodes, "--cpus", &cpus, "--accounting"], a.sched_params.as_deref())?;
        Ok(s)
    }

    /// One `slurm-emulate` command on this Slurm's directory, its output
    /// appended to the log.
    fn emulate(&self, args: &[&str]) -> Result<()> {
        self.emulate_env(args, None)
    }

    fn emulate_env(&self, args: &[&str], sched_params: Option<&str>) -> Result<()> {
        let log = std::fs::OpenOptions::new().append(true).open(&self.log)?;
        let mut c = Command::new("bash");
        c.arg(&self.emulator).args(args).arg("--dir").arg(&self.dir).stdout(log.try_clone()?).stderr(log);
        if let Some(p) = sched_params {
            c.env("SLURM_EMU_SCHED_PARAMS", p);
        }
        let status = c.status().with_context(|| format!("running {}", self.emulator.display()))?;
        if !status.success() {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            bail!("{} {} failed ({status}); the end of {}:\n{}", self.emulator.display(), args.first().unwrap_or(&""), self.log.display(), tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
        }
        Ok(())
    }

    /// A Slurm client command's standard output (UTC times).
    fn client(&self, program: &str, args: &[&str]) -> Result<String> {
        let o = Command::new(program).args(args).env("SLURM_CONF", self.dir.join("slurm.conf")).env("TZ", "UTC").output().with_context(|| format!("running {program}"))?;
        if !o.status.success() {
            bail!("{program} {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr).trim());
        }
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    }

    /// Wait until no job is pending or running.
    fn wait_idle(&self, limit: Duration) -> Result<()> {
        let t0 = Instant::now();
        while !self.client("squeue", &["-h", "-o", "%i"])?.trim().is_empty() {
            if t0.elapsed() > limit {
                bail!("Slurm still has jobs after {} s (see {})", limit.as_secs(), self.dir.display());
            }
            std::thread::sleep(Duration::from_secs(1));
        }
        Ok(())
    }

    /// sacct's history of every job into `out`, once slurmdbd has all `jobs`
    /// of them finished (slurmctld sends them on asynchronously).
    fn sacct(&self, out: &Path, jobs: usize) -> Result<()> {
        let format = format!("--format={}", tessera_slurm::sacct::FORMAT);
        let t0 = Instant::now();
        loop {
            let text = self.client("sacct", &["-P", "-a", "-D", "-S", "2000-01-01", "-E", "now", &format])?;
            let h = tessera_slurm::sacct::read(&text, &out.display().to_string()).map_err(|e| anyhow!("{e}"))?;
            if (h.jobs.len() >= jobs && h.unfinished == 0) || t0.elapsed() > Duration::from_secs(120) {
                std::fs::write(out, &text).with_context(|| format!("writing {}", out.display()))?;
                if h.jobs.len() < jobs {
                    bail!("sacct shows {} of the {jobs} jobs replayed after 120 s ({})", h.jobs.len(), out.display());
                }
                return Ok(());
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        if let Err(e) = self.emulate(&["stop"]) {
            eprintln!("stopping Slurm: {e}");
        }
    }
}
