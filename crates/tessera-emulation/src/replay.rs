//! `tessera replay`: replay a trace against a running controller with
//! suspension-aware sleep jobs, as the thesis's `runworkload` does with
//! `sigsleep` on an emulated Slurm cluster.
//!
//! The trace is read and filtered with the simulator's own job semantics on
//! the controller's cluster (`GET /v1/cluster`), so exactly the jobs the
//! simulator would replay are submitted, each as `tessera sleep-job` with its
//! processors, memory, estimate (as the time limit) and partition. Each job is
//! submitted at its planned instant, counted in wall time from a start on a
//! whole second (so a late submission never delays the ones after it, the
//! thesis's drift correction): its scaled submission time, or, with `--group`,
//! a warm-up of `--warmup` jobs at once and then groups of G jobs every
//! `--period` seconds. Submissions go in order over one connection, so the
//! controller numbers and queues them in the trace's order.
//!
//! `--shrink 100:50:10` runs the replay once per percentage (100, 90, ..., 50),
//! each after the previous one ended, with one output directory each.

use crate::client::{explain, runtime};
use anyhow::{anyhow, bail, Context, Result};
use hyper::Method;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tessera_core::share::{trace_group, Accounts};
use tessera_core::{Cluster, ResvRequest};
use tessera_proto::api::{ClusterInfo, JobInfo, JobStateCode, OptionArg, SubmitReply, SubmitRequest};
use tessera_proto::client::Client;
use tessera_proto::unix_now_f64 as wall;
use tessera_proto::submit::MAX_LIMIT_S;
use tessera_sim::metrics::{Classic, JobTimes};
use tessera_sim::sleeplog::{read_log, SleepRecord};
use tessera_sim::workload::{prepare_on, Machine, Workload};
use tessera_workload::swf::{SwfHeader, SwfReader, SwfRecord, SwfWriter};
use tessera_workload::transform::{first_jobs, Shrink};

/// The final-states entry for jobs that ended too long ago for the
/// controller to list them (their states are in `tessera acct`).
pub const UNLISTED: &str = "ENDED_EARLIER (see tessera acct)";

/// `tessera replay`'s settings (see its `--help`), the controller aside.
#[derive(Clone, Debug)]
pub struct Options {
    pub trace: PathBuf,
    pub max_jobs: Option<usize>,
    /// P, or START:END:STEP in percent ([`parse_shrink`]).
    pub shrink: String,
    pub runtime_shrink: f64,
    pub estimate_shrink: f64,
    pub submit_shrink: f64,
    pub warmup: usize,
    pub group: Option<usize>,
    pub period: Option<f64>,
    pub warmup_period: f64,
    pub drift: f64,
    pub out: PathBuf,
    pub lenient: bool,
    pub timeout: u64,
    /// A reservations file (`[[reservation]]` tables, as `sim run
    /// --reservations`), its instants seconds from the replay's start.
    pub reservations: Option<PathBuf>,
}

/// When each job is submitted.
#[derive(Clone, Copy, Debug)]
pub enum Pace {
    /// At the (shrunk) trace's submission offsets; the first `warmup` jobs at 0.
    Trace { warmup: usize },
    /// The thesis's runworkload: `warmup` jobs at 0, then groups of `group`
    /// every `period` (+ `drift`) seconds from `warmup_period`.
    Groups { warmup: usize, group: usize, period: f64, warmup_period: f64, drift: f64 },
}

/// One job to submit.
#[derive(Clone, Debug)]
pub struct Planned {
    pub trace_id: u64,
    /// Seconds from the replay's start.
    pub offset: f64,
    pub procs: u32,
    pub runtime: i64,
    pub estimate: i64,
    pub mem_per_proc_mb: u64,
    pub partition: Option<String>,
    /// The trace record as submitted (shrunk, its submit time the offset).
    pub record: SwfRecord,
    /// A power-aware job (`--policy parm`): its PASS job, submitted as
    /// `--moldable`, `--malleable`, `--power-profile`, `--parallelism` and
    /// `--sigma`, its estimate its time on `n_max` nodes at full power, and
    /// run as `tessera sleep-job --work`.
    pub power: Option<tessera_core::power::PowerJob>,
}

/// The jobs of a shrunk trace that the simulator would replay on `cluster`,
/// with when each is submitted.
pub fn plan(records: &[SwfRecord], cluster: Arc<Cluster>, pace: Pace) -> Result<(Workload, Vec<Planned>)> {
    let w = prepare_on(records, Machine::Cluster { cluster: cluster.clone(), partition: None, nodeset: None });
    let first = w.jobs.first().map_or(0, |j| j.submit);
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(w.jobs.len());
    for (k, j) in w.jobs.iter().enumerate() {
        let id = u64::try_from(j.id).map_err(|_| anyhow!("trace job {}: expected a job number ≥ 0 (it names the sleep job's log line)", j.id))?;
        if !seen.insert(id) {
            bail!("trace job {id} appears twice: expected unique job numbers (each names one line of the sleep jobs' log)");
        }
        if j.preceding > 0 && j.think > 0 {
            bail!("trace job {id}: a think time of {} s after its preceding job (field 18): a live replay expresses field 17 as --dependency=afterany, which has no delay; set field 18 to 0 or -1", j.think);
        }
        if j.estimate > MAX_LIMIT_S {
            bail!("trace job {id}: its estimate of {} s (after shrinking) is beyond the longest time limit, {MAX_LIMIT_S} s: shrink the estimates (--estimate-shrink)", j.estimate);
        }
        let offset = match pace {
            Pace::Trace { warmup } if k < warmup => 0.0,
            Pace::Trace { .. } => (j.submit - first) as f64,
            Pace::Groups { warmup, .. } if k < warmup => 0.0,
            Pace::Groups { warmup, group, period, warmup_period, drift } => warmup_period + (period + drift) * ((k - warmup) / group) as f64,
        };
        let mut record = records[w.record_index[k] as usize].clone();
        record.submit_time = offset.round() as i64;
        out.push(Planned {
            trace_id: id,
            offset,
            procs: j.procs,
            runtime: j.runtime,
            estimate: j.estimate,
            mem_per_proc_mb: j.mem_per_proc_mb,
            partition: w.machine.partition_of(j).map(|p| cluster.partitions[p as usize].name.clone()),
            record,
            power: None,
        });
    }
    Ok((w, out))
}

/// The account each planned job charges on a cluster with accounts: its
/// trace group's `g<group>` when `user` has an association there, else None
/// (the user's default account), as the simulator charges a trace job
/// (tessera_sim::share).
pub fn accounts_for(acc: &Accounts, user: &str, planned: &[Planned]) -> Vec<Option<String>> {
    planned
        .iter()
        .map(|p| {
            let g = trace_group(p.record.group_id);
            acc.user_assoc(user, &g).map(|_| g)
        })
        .collect()
}

/// A reservations file's requests, their instants seconds from the replay's
/// start; errors name file, line and field.
pub fn read_reservations(p: &Path) -> Result<Vec<ResvRequest>> {
    let name = p.display().to_string();
    let text = std::fs::read_to_string(p).with_context(|| format!("reading reservations file {name}"))?;
    let reqs = tessera_core::resv::request::from_toml(&text, &name)?;
    reqs.into_iter()
        .enumerate()
        .map(|(i, (mut r, line))| {
            let at = |field: &str, v: &str| anyhow!("{name}:{}: reservation[{i}]: {field}={v}: expected seconds from the replay's start, or D-HH:MM:SS", line.unwrap_or(0));
            if r.name.is_none() {
                r.name = Some(format!("r{i}"));
            }
            r.start.parse::<i64>().map_err(|_| at("start", &r.start))?;
            if let Some(e) = &r.end {
                e.parse::<i64>().map_err(|_| at("end", e))?;
            }
            Ok(r)
        })
        .collect()
}

/// A request of [`read_reservations`] with its instants counted from `t0`
/// (Unix seconds live, or the simulated clock's origin).
pub fn shift_reservation(r: &ResvRequest, t0: i64) -> ResvRequest {
    let shift = |s: &str| s.parse::<i64>().map_or_else(|_| s.to_string(), |v| (v + t0).to_string());
    ResvRequest { start: shift(&r.start), end: r.end.as_deref().map(shift), ..r.clone() }
}

/// The controller's accounts (None: it has none), for [`accounts_for`].
pub fn live_accounts(rt: &tokio::runtime::Runtime, client: &mut Client) -> Result<Option<Accounts>> {
    match rt.block_on(client.call::<(), Accounts>(Method::GET, "/v1/accounts", None)) {
        Ok(a) => Ok(Some(a)),
        Err(e) if e.status() == Some(409) => Ok(None),
        Err(e) => Err(explain(e)).context("asking the controller for its accounts"),
    }
}

/// The user the replay submits as: the local user (over the controller's
/// socket, its identity).
pub fn replaying_user() -> String {
    tessera_controller::auth::local_user(nix::unistd::geteuid().as_raw()).0
}

/// The percentages of `--shrink`: P, or START:END:STEP.
pub fn parse_shrink(s: &str) -> Result<Vec<f64>> {
    let num = |x: &str| -> Result<f64> {
        let v: f64 = x.trim().parse().map_err(|_| anyhow!("--shrink {s:?}: {x:?} is not a number; expected P or START:END:STEP in percent (e.g. 100:50:10)"))?;
        if !(v.is_finite() && v > 0.0 && v <= 1e6) {
            bail!("--shrink {s:?}: {x} is out of range; expected percentages above 0 (and at most 1e6)");
        }
        Ok(v)
    };
    let parts: Vec<&str> = s.split(':').collect();
    match parts.as_slice() {
        [p] => Ok(vec![num(p)?]),
        [a, b, step] => {
            let (a, b, step) = (num(a)?, num(b)?, num(step)?);
            let dir = if b < a { -1.0 } else { 1.0 };
            let n = ((b - a).abs() / step + 1e-9).floor() as usize;
            if n > 1000 {
                bail!("--shrink {s:?}: {} runs; expected at most 1001", n + 1);
            }
            Ok((0..=n).map(|i| a + dir * step * i as f64).collect())
        }
        _ => bail!("--shrink {s:?}: expected P or START:END:STEP in percent (e.g. 100 or 100:50:10)"),
    }
}

/// A whole number of percent prints without a decimal point.
fn pct_name(p: f64) -> String {
    if p.fract() == 0.0 { format!("{p:.0}") } else { format!("{p}") }
}

/// A time limit in Slurm's minutes:seconds form.
fn limit(secs: i64) -> String {
    format!("{}:{:02}", secs / 60, secs % 60)
}

fn quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

fn opt(o: &str, v: impl Into<String>) -> OptionArg {
    OptionArg { option: o.into(), value: v.into() }
}

/// What a replay did, and where its files are.
#[derive(Serialize, Debug)]
pub struct Outcome {
    pub trace: String,
    pub shrink_pct: f64,
    pub shrink: ShrinkPct,
    pub cluster: String,
    pub policy: String,
    pub cores: u64,
    pub jobs: usize,
    pub skipped: BTreeMap<String, u64>,
    /// Unix seconds of the replay's start: planned offsets count from it.
    pub t0: f64,
    pub submit_seconds: f64,
    /// How late submissions were against their planned instant (ms).
    pub late_p50_ms: f64,
    pub late_p99_ms: f64,
    pub late_max_ms: f64,
    /// Each submission's lateness (ms), in submission order.
    #[serde(skip)]
    pub late_ms: Vec<f64>,
    /// Seconds from the start until the last job ended.
    pub seconds: f64,
    /// Jobs by their final state at the controller.
    pub states: BTreeMap<String, usize>,
    /// Jobs without a line in the log (never started, or killed without a chance to write).
    pub missing_from_log: usize,
    pub metrics: Classic,
    pub log: PathBuf,
    pub jobs_csv: PathBuf,
    pub submitted_swf: PathBuf,
    pub cluster_file: PathBuf,
    pub metrics_json: PathBuf,
    /// The log's records, as read once the replay ended.
    #[serde(skip)]
    pub records: Vec<SleepRecord>,
}

#[derive(Serialize, Debug, Clone, Copy)]
pub struct ShrinkPct {
    pub submit: f64,
    pub runtime: f64,
    pub estimate: f64,
}

/// One replay's files, in `dir`.
pub struct Files {
    pub dir: PathBuf,
    pub log: PathBuf,
}

impl Files {
    pub fn new(dir: &Path) -> Result<Files> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let dir = dir.canonicalize()?;
        let log = dir.join("sleep.log");
        if std::fs::metadata(&log).is_ok_and(|m| m.len() > 0) {
            bail!("{} already holds a replay's log: give another --out (a replay never appends to or overwrites an earlier one)", log.display());
        }
        Ok(Files { log, dir })
    }
}

/// Replay the trace once per shrink percentage against the controller
/// `connect` reaches, the sleep jobs running the `tessera` binary `bin`; `each`
/// sees every replay's outcome as it ends.
pub fn replay(a: &Options, connect: impl FnOnce() -> Result<Client>, bin: &Path, each: &mut dyn FnMut(&Outcome) -> Result<()>) -> Result<Vec<Outcome>> {
    let trace = tessera_workload::traces::resolve(&a.trace)?;
    let shrinks = parse_shrink(&a.shrink)?;
    for (flag, v) in [("--runtime-shrink", a.runtime_shrink), ("--estimate-shrink", a.estimate_shrink), ("--submit-shrink", a.submit_shrink)] {
        if !(v.is_finite() && v > 0.0) {
            bail!("{flag} {v}: expected a percentage above 0");
        }
    }
    let pace = match (a.group, a.period) {
        (Some(0), _) => bail!("--group 0: expected at least 1 job per group"),
        (Some(group), Some(period)) => {
            if !(period.is_finite() && period >= 0.0 && a.warmup_period.is_finite() && a.warmup_period >= 0.0 && a.drift.is_finite() && period + a.drift >= 0.0) {
                bail!("--period, --warmup-period, --drift: expected seconds ≥ 0 (period + drift ≥ 0)");
            }
            Pace::Groups { warmup: a.warmup, group, period, warmup_period: a.warmup_period, drift: a.drift }
        }
        _ => Pace::Trace { warmup: a.warmup },
    };
    let rt = runtime()?;
    let mut client = connect()?;
    let info: ClusterInfo = rt.block_on(client.call::<(), _>(Method::GET, "/v1/cluster", None)).map_err(explain).context("asking the controller for its cluster")?;
    let cluster = Arc::new(Cluster::from_toml(&info.toml, &info.path).map_err(|e| anyhow!("the controller's cluster: {e}"))?);
    let (header, mut records, report) = SwfReader::read_file(&trace, a.lenient)?;
    if report.skipped > 0 {
        eprintln!("{}: {report}", trace.display());
    }
    if let Some(n) = a.max_jobs {
        first_jobs(&mut records, n);
    }
    let resv = a.reservations.as_deref().map(read_reservations).transpose()?.unwrap_or_default();
    let accounts = live_accounts(&rt, &mut client)?;
    let mut outcomes = Vec::new();
    for &s in &shrinks {
        let shrink = Shrink { submit_pct: s * a.submit_shrink / 100.0, runtime_pct: s * a.runtime_shrink / 100.0, estimate_pct: s * a.estimate_shrink / 100.0 };
        let mut recs = records.clone();
        shrink.apply(&mut recs).map_err(|e| anyhow!("{}: shrinking by {s}%: {e}", trace.display()))?;
        let (w, planned) = plan(&recs, cluster.clone(), pace)?;
        if planned.is_empty() {
            bail!("{}: no job of the trace can run on cluster {} (skipped: {:?})", trace.display(), info.name, w.skipped);
        }
        let dir = if shrinks.len() == 1 { a.out.clone() } else { a.out.join(format!("shrink-{}", pct_name(s))) };
        let files = Files::new(&dir)?;
        if shrinks.len() > 1 {
            eprintln!("replay at {}% ({} of {})", pct_name(s), outcomes.len() + 1, shrinks.len());
        }
        let charged = accounts.as_ref().map(|acc| accounts_for(acc, &replaying_user(), &planned)).unwrap_or_default();
        let o = run(&rt, &mut client, &info, &header, &w, &planned, &charged, &resv, &files, bin, a.timeout, &trace.display().to_string(), s, shrink)?;
        each(&o)?;
        outcomes.push(o);
    }
    Ok(outcomes)
}

/// How long the replay waits for a controller that cannot be reached (one
/// restarting) before it gives up.
const PATIENCE: Duration = Duration::from_secs(300);

/// Submit every planned job at its instant (under `accounts[k]` where given),
/// wait until none is queued or running, then write the per-job records and
/// metrics. The reservations `resv` (instants from the start) are made just
/// before the start and deleted at the end.
#[allow(clippy::too_many_arguments)]
pub fn run(
    rt: &tokio::runtime::Runtime,
    client: &mut Client,
    info: &ClusterInfo,
    header: &SwfHeader,
    w: &Workload,
    planned: &[Planned],
    accounts: &[Option<String>],
    resv: &[ResvRequest],
    files: &Files,
    bin: &Path,
    timeout: u64,
    trace: &str,
    shrink_pct: f64,
    shrink: Shrink,
) -> Result<Outcome> {
    // what the simulator needs to replay the same jobs: the workload as
    // submitted and the cluster
    let swf = files.dir.join("submitted.swf");
    let cluster_file = files.dir.join("cluster.toml");
    write_submitted(&swf, header, trace, shrink, planned)?;
    std::fs::write(&cluster_file, &info.toml).with_context(|| format!("writing {}", cluster_file.display()))?;
    std::fs::File::create(&files.log).with_context(|| format!("creating {}", files.log.display()))?;

    let n = planned.len();
    let bar = ProgressBar::new(n as u64);
    bar.set_style(ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} submitted, {msg}").expect("template").progress_chars("=> "));
    let env: BTreeMap<String, String> = std::env::var("PATH").map(|p| BTreeMap::from([("PATH".to_string(), p)])).unwrap_or_default();
    let workdir = files.dir.display().to_string();
    // start on a whole second, so that the controller's whole-second clock sees
    // each submission in the second it was planned for
    // (a second more to make the reservations first)
    let t0 = wall().floor() + if resv.is_empty() { 1.0 } else { 2.0 };
    for r in resv {
        let r = shift_reservation(r, t0 as i64);
        let _: tessera_proto::api::ReservationInfo = rt.block_on(client.call(Method::POST, "/v1/reservations", Some(&r))).map_err(explain).with_context(|| format!("making reservation {}", r.name.as_deref().unwrap_or("")))?;
    }
    let start = Instant::now() + Duration::from_secs_f64((t0 - wall()).max(0.0));
    let mut ids = Vec::with_capacity(n);
    // trace job → its live job id
    let mut live = BTreeMap::new();
    let mut late = Vec::with_capacity(n);
    let log_lines = LogCounter::new(&files.log);
    rt.block_on(async {
        for (k, p) in planned.iter().enumerate() {
            tokio::time::sleep_until((start + Duration::from_secs_f64(p.offset)).into()).await;
            let sent = wall();
            late.push(((sent - t0 - p.offset) * 1e3).max(0.0));
            let script = format!(
                "#!/bin/sh\nexec {} sleep-job --id {} --runtime {} --log {} --submit {sent:.6} --cores {}{}\n",
                quote(bin),
                p.trace_id,
                p.runtime,
                quote(&files.log),
                p.procs,
                if p.power.is_some() { " --work" } else { "" }
            );
            let mut options = vec![opt("-n", p.procs.to_string()), opt("-t", limit(p.estimate)), opt("-J", format!("t{}", p.trace_id)), opt("-o", "/dev/null"), opt("--suspend-tstp", "")];
            if let Some(pj) = &p.power {
                options.push(opt("--moldable", format!("{}-{}", pj.n_min, pj.n_max)));
                if pj.malleable && pj.n_min < pj.n_max {
                    options.push(opt("--malleable", ""));
                }
                options.push(opt("--power-profile", pj.app.name));
                options.push(opt("--parallelism", pj.scaling.a.to_string()));
                options.push(opt("--sigma", pj.scaling.sigma.to_string()));
            }
            if let Some(part) = &p.partition {
                options.push(opt("-p", part.clone()));
            }
            if let Some(Some(acct)) = accounts.get(k) {
                options.push(opt("-A", acct.clone()));
            }
            if p.mem_per_proc_mb > 0 {
                options.push(opt("--mem-per-cpu", format!("{}M", p.mem_per_proc_mb)));
            }
            // SWF field 17: after the preceding job, if it was submitted before
            // (as the simulator replays it; `plan` refused a think time)
            if let Some(&on) = (p.record.preceding_job > 0).then(|| live.get(&(p.record.preceding_job as u64))).flatten() {
                options.push(opt("--dependency", format!("afterany:{on}")));
            }
            // keyed, so that a submission sent again after a controller restart
            // files no second job
            let idempotency_key = Some(format!("replay-{t0:.0}-{}", p.trace_id));
            let req = SubmitRequest { script, options, workdir: workdir.clone(), env: env.clone(), script_name: None, idempotency_key };
            let r: SubmitReply = client.call_patiently(Method::POST, "/v1/jobs", Some(&req), PATIENCE).await.map_err(explain).with_context(|| format!("submitting trace job {}", p.trace_id))?;
            ids.push(r.jobs[0]);
            live.insert(p.trace_id, r.jobs[0]);
            bar.inc(1);
            if ids.len() % 64 == 0 {
                bar.set_message(format!("{} ended", log_lines.count()));
            }
        }
        Ok::<_, anyhow::Error>(())
    })?;
    let submit_seconds = wall() - t0;

    // wait until no job of this replay is queued or running
    let deadline = (timeout > 0).then(|| Instant::now() + Duration::from_secs(timeout));
    let mine: BTreeSet<u64> = ids.iter().copied().collect();
    let mut last_check = Instant::now() - Duration::from_secs(60);
    let states: BTreeMap<String, usize> = loop {
        let ended = log_lines.count();
        bar.set_message(format!("{ended} ended"));
        if ended >= n || last_check.elapsed() >= Duration::from_secs(5) {
            last_check = Instant::now();
            let jobs: Vec<JobInfo> = rt.block_on(client.call_patiently::<(), _>(Method::GET, "/v1/jobs", None, PATIENCE)).map_err(explain).context("listing jobs")?;
            let live = jobs.iter().filter(|j| mine.contains(&j.id) && matches!(j.state, JobStateCode::Pending | JobStateCode::Running | JobStateCode::Suspended | JobStateCode::Completing)).count();
            if live == 0 {
                let mut m = jobs.iter().filter(|j| mine.contains(&j.id)).fold(BTreeMap::new(), |mut m, j| {
                    *m.entry(j.state.name().to_string()).or_insert(0) += 1;
                    m
                });
                // the controller lists a finished job for 5 minutes; the
                // accounting store (tessera acct) keeps every one
                let listed: usize = m.values().sum();
                if listed < mine.len() {
                    m.insert(UNLISTED.to_string(), mine.len() - listed);
                }
                break m;
            }
        }
        if deadline.is_some_and(|d| Instant::now() > d) {
            bar.abandon();
            bail!("--timeout: jobs of the replay are still queued or running; the log so far is {}", files.log.display());
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    let seconds = wall() - t0;
    // (a one-off reservation whose window ended has gone already)
    for r in resv {
        let name = r.name.as_deref().unwrap_or_default();
        match rt.block_on(client.call::<(), ()>(Method::DELETE, &format!("/v1/reservations/{name}"), None)) {
            Ok(()) => {}
            Err(e) if e.status() == Some(404) => {}
            Err(e) => return Err(explain(e)).with_context(|| format!("deleting reservation {name}")),
        }
    }
    bar.finish_with_message(format!("{} ended", log_lines.count()));

    let log = read_log(&files.log)?;
    let by_id: BTreeMap<u64, &SleepRecord> = log.iter().map(|r| (r.id, r)).collect();
    let missing = planned.iter().filter(|p| !by_id.contains_key(&p.trace_id)).count();
    let jobs_csv = files.dir.join("jobs.csv");
    write_jobs_csv(&jobs_csv, t0, planned, &ids, &late, &by_id)?;
    let times: Vec<JobTimes> = log.iter().map(SleepRecord::times).collect();
    let metrics = Classic::compute(&times, Some(info.cores as f64));
    let metrics_json = files.dir.join("metrics.json");
    let (p50, p99, max) = tessera_bench::measure::quantiles(late.clone());
    let o = Outcome {
        trace: trace.to_string(),
        shrink_pct,
        shrink: ShrinkPct { submit: shrink.submit_pct, runtime: shrink.runtime_pct, estimate: shrink.estimate_pct },
        cluster: info.name.clone(),
        policy: info.policy.clone(),
        cores: info.cores,
        jobs: n,
        skipped: w.skipped.iter().map(|(r, c)| (r.key().to_string(), *c)).collect(),
        t0,
        submit_seconds,
        late_p50_ms: p50,
        late_p99_ms: p99,
        late_max_ms: max,
        late_ms: late,
        seconds,
        states,
        missing_from_log: missing,
        metrics,
        log: files.log.clone(),
        jobs_csv,
        submitted_swf: swf,
        cluster_file,
        metrics_json: metrics_json.clone(),
        records: Vec::new(),
    };
    std::fs::write(&metrics_json, serde_json::to_vec_pretty(&o)?).with_context(|| format!("writing {}", metrics_json.display()))?;
    Ok(Outcome { records: log, ..o })
}

/// Lines in a growing log, counted incrementally.
struct LogCounter {
    path: PathBuf,
    state: std::cell::Cell<(u64, usize)>,
}

impl LogCounter {
    fn new(path: &Path) -> LogCounter {
        LogCounter { path: path.to_path_buf(), state: std::cell::Cell::new((0, 0)) }
    }

    fn count(&self) -> usize {
        use std::io::{Read, Seek};
        let (mut at, mut lines) = self.state.get();
        if let Ok(mut f) = std::fs::File::open(&self.path) {
            if f.seek(std::io::SeekFrom::Start(at)).is_ok() {
                let mut buf = Vec::new();
                if f.read_to_end(&mut buf).is_ok() {
                    // count complete lines only
                    if let Some(last) = buf.iter().rposition(|&b| b == b'\n') {
                        lines += buf[..=last].iter().filter(|&&b| b == b'\n').count();
                        at += last as u64 + 1;
                    }
                }
            }
        }
        self.state.set((at, lines));
        lines
    }
}

fn write_submitted(path: &Path, header: &SwfHeader, trace: &str, shrink: Shrink, planned: &[Planned]) -> Result<()> {
    let f = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = SwfWriter::new(std::io::BufWriter::new(f));
    let ctx = || format!("writing {}", path.display());
    w.write_header(header).with_context(ctx)?;
    w.write_comment(&format!(
        "Tessera replay of {trace}: the jobs as submitted (submit times in seconds from the replay's start; shrunk to {}% submit, {}% runtime, {}% estimate)",
        shrink.submit_pct, shrink.runtime_pct, shrink.estimate_pct
    ))
    .with_context(ctx)?;
    for p in planned {
        w.write_record(&p.record).with_context(ctx)?;
    }
    w.into_inner().flush().with_context(ctx)?;
    Ok(())
}

fn write_jobs_csv(path: &Path, t0: f64, planned: &[Planned], ids: &[u64], late: &[f64], log: &BTreeMap<u64, &SleepRecord>) -> Result<()> {
    let f = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = std::io::BufWriter::new(f);
    let ctx = || format!("writing {}", path.display());
    writeln!(w, "trace_id,job_id,procs,runtime,estimate,partition,planned_submit,late_ms,submit,start,end,suspended,wait").with_context(ctx)?;
    for (k, p) in planned.iter().enumerate() {
        let rel = |x: f64| format!("{:.3}", x - t0);
        let (submit, start, end, susp, wait) = match log.get(&p.trace_id) {
            Some(r) => (rel(r.submit), rel(r.start), rel(r.end), format!("{:.3}", r.suspended()), format!("{:.3}", r.start - r.submit)),
            None => Default::default(),
        };
        writeln!(
            w,
            "{},{},{},{},{},{},{},{:.1},{submit},{start},{end},{susp},{wait}",
            p.trace_id,
            ids[k],
            p.procs,
            p.runtime,
            p.estimate,
            tessera_core::quote::csv(p.partition.as_deref().unwrap_or("")),
            p.offset,
            late[k]
        )
        .with_context(ctx)?;
    }
    w.flush().with_context(ctx)?;
    Ok(())
}

/// The metrics as a table, one line each.
pub fn metrics_table(m: &Classic) -> String {
    let mut rows: Vec<(&str, String)> = vec![("jobs", m.jobs.to_string())];
    for (k, v) in m.named() {
        rows.push((k, if k == "utilization" { format!("{v:.4}") } else { format!("{v:.2}") }));
    }
    if m.jobs_suspended > 0 {
        rows.push(("jobs suspended", m.jobs_suspended.to_string()));
        rows.push(("mean suspended (s)", format!("{:.2}", m.mean_suspended)));
        rows.push(("mean running (s)", format!("{:.2}", m.mean_run)));
    }
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    rows.iter().map(|(k, v)| format!("  {k:<width$}  {v}\n")).collect()
}

impl std::fmt::Display for Outcome {
    /// The replay as a report: what was replayed, how late, the final states,
    /// the metrics and where the files are.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let o = self;
        writeln!(
            f,
            "Replayed {} jobs of {} at {}% (submit {}%, runtime {}%, estimate {}%) on cluster {} ({} cores), policy {}",
            o.jobs,
            o.trace,
            pct_name(o.shrink_pct),
            o.shrink.submit,
            o.shrink.runtime,
            o.shrink.estimate,
            o.cluster,
            o.cores,
            o.policy
        )?;
        if !o.skipped.is_empty() {
            writeln!(f, "  skipped as the simulator skips them: {:?}", o.skipped)?;
        }
        writeln!(
            f,
            "  submitted over {:.1} s (late against plan: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms); all ended {:.1} s after the start",
            o.submit_seconds, o.late_p50_ms, o.late_p99_ms, o.late_max_ms, o.seconds
        )?;
        writeln!(f, "  final states: {:?}; without a log line: {}", o.states, o.missing_from_log)?;
        write!(f, "{}", metrics_table(&o.metrics))?;
        writeln!(f, "  sleep jobs' log:         {}", o.log.display())?;
        writeln!(f, "  per-job records:         {}", o.jobs_csv.display())?;
        writeln!(f, "  workload as submitted:   {} (simulate it: tessera sim run --trace {} --cluster {} --policy {})", o.submitted_swf.display(), o.submitted_swf.display(), o.cluster_file.display(), o.policy)?;
        writeln!(f, "  metrics and this report: {}", o.metrics_json.display())
    }
}
