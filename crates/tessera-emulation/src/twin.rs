//! `tessera twin`: does the simulator predict the live system? Start a
//! controller and agents on this machine, replay a shrunk trace through them
//! with sleep jobs (`tessera replay`), simulate the very workload that was
//! submitted with the same cluster and policy, and compare job by job (start
//! instants) and metric by metric.

use crate::client::runtime;
use crate::local::Guard;
use crate::replay::{self, parse_shrink, plan, Files, Pace, Planned};
use anyhow::{anyhow, bail, Context, Result};
use hyper::Method;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tessera_core::power::{ParmConfig, PowerJob};
use tessera_core::{Cluster, PolicyKind};
use tessera_proto::api::ClusterInfo;
use tessera_proto::client::{Client, Target};
use tessera_sim::metrics::{Classic, JobTimes};
use tessera_sim::run::simulate;
use tessera_sim::workload::prepare_power;
use tessera_sim::share::SimSharing;
use tessera_sim::{Machine, PowerMode, PowerNodes, PowerRule, PowerSetup, Workload};
use tessera_workload::swf::{SwfHeader, SwfReader, SwfRecord};
use tessera_workload::transform::{first_jobs, Shrink};

/// `tessera twin`'s settings (see its `--help`).
#[derive(Clone, Debug)]
pub struct Options {
    /// An SWF trace, or None with `testbed`.
    pub trace: Option<PathBuf>,
    /// The PARM paper's testbed job set instead of a trace: `SetL` or `SetH`,
    /// with `:SEED` (default 1) for the draw (`tessera experiment parm-testbed`).
    pub testbed: Option<String>,
    /// PARM's settings, for the controller and the simulator alike.
    pub parm: tessera_controller::ParmFlags,
    pub max_jobs: usize,
    /// One percentage.
    pub shrink: String,
    pub cluster: Option<PathBuf>,
    pub policy: String,
    pub agents: usize,
    /// A reservations file, instants in seconds from the replay's start.
    pub reservations: Option<PathBuf>,
    /// Default: a fresh directory under the system's temporary directory, kept.
    pub dir: Option<PathBuf>,
    /// The controller's gathering window (`tessera controller --coalesce-ms`).
    pub coalesce_ms: u64,
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
    /// The controller's gathering window at the start of each second (ms),
    /// and the submissions sent after the window of their second: the
    /// simulator takes a second's submissions together, the controller those
    /// of the window, so a job sent later may be decided in a pass of its own
    /// (a busy machine: a wider window with `--coalesce-ms`).
    pub coalesce_ms: u64,
    pub outside_window: usize,
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
    /// Jobs per hour, from the first submission to the last end.
    pub throughput_sim: f64,
    pub throughput_live: f64,
    /// On a power-budgeted cluster: the power sampled from `/metrics` once a
    /// second during the live run (`power.csv`).
    pub power: Option<PowerSummary>,
    /// With accounts or reservations: the jobs whose simulated start they
    /// changed (against the same simulation in submission order without
    /// reservations), and the associations and reservations there were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sharing: Option<SharingSummary>,
    pub dir: PathBuf,
    pub per_job_csv: PathBuf,
}

/// What accounts and reservations did in a twin run.
#[derive(Serialize, Debug, Clone)]
pub struct SharingSummary {
    pub associations: usize,
    pub reservations: usize,
    /// Jobs whose simulated start differs from submission order without
    /// reservations.
    pub moved: usize,
}

/// The live run's power, sampled from the controller's `/metrics` once a second.
#[derive(Serialize, Debug, Clone)]
pub struct PowerSummary {
    pub samples: usize,
    pub budget_w: f64,
    pub max_allocated_w: f64,
    pub max_measured_w: f64,
    pub mean_measured_w: f64,
    /// Samples whose measured power exceeds the budget, and the longest run
    /// of them in seconds (0: never over).
    pub over_budget_samples: usize,
    pub longest_over_budget_s: f64,
    pub csv: PathBuf,
}

/// Start a local cluster (the `tessera` binary `bin`), replay, simulate what
/// was submitted, compare; the comparison is also written to `DIR/twin.json`.
pub fn run(a: &Options, bin: &Path) -> Result<Twin> {
    let shrinks = parse_shrink(&a.shrink)?;
    let [pct] = shrinks[..] else { bail!("--shrink {}: the twin check takes one percentage", a.shrink) };
    let policy: PolicyKind = a.policy.parse().map_err(|e| anyhow!("--policy: {e}"))?;
    // PARM's own durations shrink with the jobs' (resize costs, f_se)
    let mut flags = a.parm.clone();
    if policy == PolicyKind::Parm && flags.model_time_scale.is_none() {
        flags.model_time_scale = Some(pct.min(100.0));
    }
    let parm = flags.config(&a.policy).map_err(anyhow::Error::msg)?.unwrap_or_else(tessera_controller::parm_defaults);
    // the jobs: a trace's, or a testbed set's
    let source = match (&a.trace, &a.testbed) {
        (Some(t), None) => Jobs::Trace(tessera_workload::traces::resolve(t)?),
        (None, Some(s)) => parse_testbed(s)?,
        _ => bail!("give --trace or --testbed (one of them)"),
    };
    let dir = match &a.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("tessera-twin-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = dir.canonicalize()?;
    let state = dir.join("state");
    std::fs::create_dir_all(&state).with_context(|| format!("creating {}", state.display()))?;
    let mut extra = flags.args();
    extra.extend(["--coalesce-ms".to_string(), a.coalesce_ms.to_string()]);
    let local = Guard::start(bin, &state, &a.cluster, a.agents, "127.0.0.1:0".parse()?, &a.policy, &extra)?;
    let rt = runtime()?;
    let mut client = Client::new(Target::Unix(local.ep.socket.clone()), None);
    let info: ClusterInfo = rt.block_on(client.call::<(), _>(Method::GET, "/v1/cluster", None)).map_err(|e| anyhow!("asking the controller for its cluster: {e}"))?;
    let cluster = Arc::new(Cluster::from_toml(&info.toml, &info.path).map_err(|e| anyhow!("{e}"))?);

    // under PARM with their power behaviour (the seeded rule, or the set's draw)
    let shrink = Shrink::uniform(pct);
    let (trace, header, records, mut power_w) = match &source {
        Jobs::Trace(path) => {
            let (header, mut records, _) = SwfReader::read_file(path, false)?;
            first_jobs(&mut records, a.max_jobs);
            shrink.apply(&mut records).map_err(|e| anyhow!("{}: {e}", path.display()))?;
            let power_w = match policy {
                PolicyKind::Parm => Some(prepare_power(&records, Arc::new(power_setup(&cluster, parm.clone())?))),
                _ => None,
            };
            (path.display().to_string(), header, records, power_w)
        }
        Jobs::Testbed(set, seed) => {
            let (records, w) = testbed_jobs(&cluster, set, *seed, pct, policy == PolicyKind::Parm, parm.clone())?;
            (format!("parm-testbed {set} seed {seed}"), SwfHeader::default(), records, w)
        }
    };
    let (w, planned) = match &mut power_w {
        Some(pw) => {
            let planned = plan_power(pw, &cluster)?;
            (pw.clone(), planned)
        }
        None => plan(&records, cluster.clone(), Pace::Trace { warmup: 0 })?,
    };
    // accounts (the cluster file's) and reservations, live and simulated alike
    let sharing = tessera_controller::actor::sharing_of(&info.toml, &info.path, &cluster)?;
    let resv = a.reservations.as_deref().map(replay::read_reservations).transpose()?.unwrap_or_default();
    if policy == PolicyKind::Parm && (sharing.is_some() || !resv.is_empty()) {
        bail!("accounts and reservations order a queue; policy parm decides its own order (use fcfs, easy or conservative)");
    }
    let user = replay::replaying_user();
    let charged = sharing.as_ref().map(|s| replay::accounts_for(&s.accounts, &user, &planned)).unwrap_or_default();
    let power = cluster.power_budget_w.map(|_| Sampler::start(local.ep.socket.clone()));
    let files = Files::new(&dir.join("replay"))?;
    let o = replay::run(&rt, &mut client, &info, &header, &w, &planned, &charged, &resv, &files, bin, 0, &trace, pct, shrink)?;
    let power = power.map(|s| s.finish(&dir.join("power.csv"))).transpose()?;
    drop(local);

    // the simulator on exactly what was submitted (submit times are the plan's
    // offsets from the replay's start, so both clocks start at 0; with
    // accounts the simulated clock starts at t0 modulo the calculation
    // period, so that priorities are calculated at the same instants)
    let origin = sharing.as_ref().map_or(0, |s| (o.t0 as i64).rem_euclid(s.priority.calc_period));
    let mut summary = None;
    let (sw, out) = match power_w {
        Some(pw) => {
            let out = simulate(&pw, policy);
            (pw, out)
        }
        None => {
            let (_, submitted, _) = SwfReader::read_file(&o.submitted_swf, false)?;
            let (mut sw, sim_planned) = plan(&submitted, cluster.clone(), Pace::Trace { warmup: 0 })?;
            if sim_planned.len() != planned.len() {
                bail!("the workload as submitted has {} jobs, the replay {}", sim_planned.len(), planned.len());
            }
            for j in &mut sw.jobs {
                j.submit += origin;
            }
            if let Some(s) = sharing {
                let by_trace: BTreeMap<u64, Option<&str>> = planned.iter().zip(&charged).map(|(p, a)| (p.trace_id, a.as_deref())).collect();
                let tickets = sw
                    .jobs
                    .iter()
                    .map(|j| s.accounts.ticket(&user, by_trace.get(&(j.id as u64)).copied().flatten(), None, 0).map_err(|e| anyhow!("trace job {}: {e}", j.id)))
                    .collect::<Result<Vec<_>>>()?;
                sw.sharing = Some(Arc::new(SimSharing { accounts: s.accounts, priority: s.priority, tickets, source: info.path.clone(), history: Vec::new(), history_at: 0 }));
            }
            for r in &resv {
                let name = r.name.clone().unwrap_or_default();
                let spec = replay::shift_reservation(r, origin).resolve(&cluster, origin, &name).map_err(|e| anyhow!("reservation {name}: {e}"))?;
                sw.reservations.push(spec);
            }
            let out = simulate(&sw, policy);
            if sw.sharing.is_some() || !sw.reservations.is_empty() {
                let plain = Workload { sharing: None, reservations: Vec::new(), ..sw.clone() };
                let fifo = simulate(&plain, policy);
                let moved = fifo.start.iter().zip(&out.start).filter(|(a, b)| a != b).count();
                summary = Some(SharingSummary { associations: sw.sharing.as_ref().map_or(0, |s| s.accounts.assocs.len()), reservations: sw.reservations.len(), moved });
            }
            (sw, out)
        }
    };
    let live_by_id: BTreeMap<u64, _> = o.records.iter().map(|r| (r.id, r)).collect();
    let per_job_csv = dir.join("twin.csv");
    let mut csv = std::io::BufWriter::new(std::fs::File::create(&per_job_csv)?);
    writeln!(csv, "trace_id,procs,sim_submit,sim_start,sim_end,live_submit,live_start,live_end,start_diff,sim_suspended,live_suspended,suspended_diff")?;
    let (mut diffs, mut sim_t, mut live_t, mut susp) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, j) in sw.jobs.iter().enumerate() {
        let id = j.id as u64;
        let Some(l) = live_by_id.get(&id) else { bail!("trace job {id} has no line in the sleep jobs' log {}", files.log.display()) };
        let rel = |x: f64| x - o.t0;
        let (sim_submit, sim_start, sim_end) = (j.submit - origin, out.start[i] - origin, out.end[i] - origin);
        let d = rel(l.start) - sim_start as f64;
        diffs.push(d);
        let live_susp = l.times().suspended;
        let ds = live_susp - out.suspended_of(i) as f64;
        susp.push((out.suspended_of(i) > 0, live_susp > 0.0, ds));
        writeln!(
            csv,
            "{id},{},{},{},{},{:.3},{:.3},{:.3},{d:.3},{},{live_susp:.3},{ds:.3}",
            j.procs,
            sim_submit,
            sim_start,
            sim_end,
            rel(l.submit),
            rel(l.start),
            rel(l.end),
            out.suspended_of(i)
        )?;
        // (a power-aware job is sized in nodes: its cores on n_max nodes)
        let procs = if sw.power_jobs.is_empty() { j.procs as f64 } else { l.cores as f64 };
        let run = (out.end[i] - out.start[i] - out.suspended_of(i)) as f64;
        sim_t.push(JobTimes { submit: sim_submit as f64, start: sim_start as f64, end: sim_end as f64, suspended: out.suspended_of(i) as f64, procs, held: procs * run });
        live_t.push(JobTimes { submit: rel(l.submit), start: rel(l.start), end: rel(l.end), ..l.times() });
    }
    csv.flush()?;
    let cap = Some(info.cores as f64);
    let (live, simulated) = (Classic::compute(&live_t, cap), Classic::compute(&sim_t, cap));
    let (throughput_live, throughput_sim) = (per_hour(&live), per_hour(&simulated));
    let abs = sorted_abs(&diffs);
    let q = |p: f64| tessera_sim::metrics::percentile(&abs, p);
    let relative_difference = relative(&live, &simulated);
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
        coalesce_ms: a.coalesce_ms,
        outside_window: o.late_ms.iter().filter(|&&l| l >= a.coalesce_ms as f64).count(),
        suspended_sim: susp.iter().filter(|x| x.0).count(),
        suspended_live: susp.iter().filter(|x| x.1).count(),
        suspended_abs_max: susp.iter().map(|x| x.2.abs()).fold(0.0, f64::max),
        suspended_within_1s: susp.iter().filter(|x| x.2.abs() <= 1.0).count(),
        live,
        simulated,
        relative_difference,
        throughput_sim,
        throughput_live,
        power,
        sharing: summary,
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
        writeln!(f, "  submissions sent after the controller's {} ms gathering window of their second: {} of {}", t.coalesce_ms, t.outside_window, t.jobs)?;
        writeln!(f, 
            "  suspended: {} jobs simulated, {} live; |live − simulated suspended time|: max {:.3} s; within 1 s: {} of {}",
            t.suspended_sim, t.suspended_live, t.suspended_abs_max, t.suspended_within_1s, t.jobs
        )?;
        metric_table(f, &t.simulated, &t.live, &t.relative_difference, "live")?;
        let dt = if t.throughput_sim > 0.0 { format!("{:+.2}%", 100.0 * (t.throughput_live / t.throughput_sim - 1.0)) } else { "-".into() };
        writeln!(f, "  throughput: simulated {:.3} jobs/h, live {:.3} jobs/h ({dt})", t.throughput_sim, t.throughput_live)?;
        if let Some(p) = &t.power {
            writeln!(
                f,
                "  power (sampled each second, {} samples): budget {:.0} W; allocated at most {:.0} W; measured at most {:.0} W, mean {:.0} W; over the budget in {} samples (longest {:.0} s); {}",
                p.samples, p.budget_w, p.max_allocated_w, p.max_measured_w, p.mean_measured_w, p.over_budget_samples, p.longest_over_budget_s, p.csv.display()
            )?;
        }
        if let Some(s) = &t.sharing {
            writeln!(f, "  accounts: {} associations, {} reservations; they moved {} of {} simulated starts (against submission order without reservations)", s.associations, s.reservations, s.moved, t.jobs)?;
        }
        writeln!(f, "  files: {} (per job: {})", t.dir.display(), t.per_job_csv.display())?;
        Ok(())
    }
}

/// |d| for every difference, sorted (for percentiles).
pub(crate) fn sorted_abs(diffs: &[f64]) -> Vec<f64> {
    let mut abs: Vec<f64> = diffs.iter().map(|d| d.abs()).collect();
    abs.sort_unstable_by(f64::total_cmp);
    abs
}

/// (observed − simulated) / simulated, by metric (observed − simulated where
/// the simulated value is 0).
pub(crate) fn relative(observed: &Classic, simulated: &Classic) -> BTreeMap<String, f64> {
    observed.named().into_iter().zip(simulated.named()).map(|((k, l), (_, s))| (k.to_string(), if s != 0.0 { (l - s) / s } else { l - s })).collect()
}

/// Every classical metric, simulated beside observed (`label`), and their difference.
pub(crate) fn metric_table(f: &mut std::fmt::Formatter<'_>, simulated: &Classic, observed: &Classic, diffs: &BTreeMap<String, f64>, label: &str) -> std::fmt::Result {
    let width = diffs.keys().map(|k| k.len()).max().unwrap_or(0);
    writeln!(f, "  {:<width$}  {:>12}  {:>12}  {:>9}", "metric", "simulated", label, "diff")?;
    for ((k, s), (_, l)) in simulated.named().into_iter().zip(observed.named()) {
        let d = diffs.get(k).copied().unwrap_or(0.0);
        // against a simulated 0 the difference is absolute, not relative
        let diff = if s == 0.0 { format!("{d:>+8.3} ") } else { format!("{:>+8.2}%", d * 100.0) };
        writeln!(f, "  {k:<width$}  {s:>12.4}  {l:>12.4}  {diff}")?;
    }
    Ok(())
}

/// Jobs per hour over a run's makespan.
pub(crate) fn per_hour(m: &Classic) -> f64 {
    if m.makespan > 0.0 { m.jobs as f64 * 3600.0 / m.makespan } else { 0.0 }
}

/// Where a twin's jobs come from.
enum Jobs {
    Trace(PathBuf),
    /// The PARM paper's testbed set (`SetL`, `SetH`) and its seed.
    Testbed(String, u64),
}

/// `SetL` or `SetH`, with `:SEED` (default 1).
fn parse_testbed(s: &str) -> Result<Jobs> {
    let (set, seed) = s.split_once(':').unwrap_or((s, "1"));
    let set = ["SetL", "SetH"].into_iter().find(|k| k.eq_ignore_ascii_case(set.trim()));
    let seed = seed.trim().parse::<u64>().ok().filter(|&x| x >= 1);
    match (set, seed) {
        (Some(set), Some(seed)) => Ok(Jobs::Testbed(set.to_string(), seed)),
        _ => bail!("--testbed {s}: expected SetL or SetH, optionally with :SEED (a seed >= 1), e.g. SetL:3"),
    }
}

/// PARM on the cluster's power machine, as the live controller runs it: its
/// decisions' solve times charged if it charges them (`--charge-solve-time`:
/// the simulator's own, measured as it runs), its resize acknowledgements
/// aside (a sleep job acknowledges at once).
fn power_setup(cluster: &Cluster, mut cfg: ParmConfig) -> Result<PowerSetup> {
    let info = cluster.power_machine().map_err(anyhow::Error::msg)?;
    cfg.resize_ack_s = None;
    let charge_solve_time = cfg.charge_solve_time;
    Ok(PowerSetup { name: cluster.name.clone(), info, hardware: PowerNodes::of(cluster), rule: PowerRule::default(), mode: PowerMode::Parm(cfg), charge_solve_time })
}

/// The PARM paper's testbed job set `set` drawn with `seed` (`tessera
/// experiment parm-testbed`) on the cluster's power machine, its times shrunk
/// to `pct` percent: under PARM a power-aware workload (moldable, malleable,
/// profiled); otherwise the paper's baseline, every job rigid on its n_min
/// nodes at full power for its runtime there (exact estimates), as SWF records.
fn testbed_jobs(cluster: &Cluster, set: &str, seed: u64, pct: f64, parm: bool, cfg: ParmConfig) -> Result<(Vec<SwfRecord>, Option<Workload>)> {
    use tessera_studies::testbed::{testbed_mix, testbed_workload, TestbedRule};
    let setup = power_setup(cluster, cfg)?;
    let mix = testbed_mix(set).ok_or_else(|| anyhow!("--testbed {set}: expected SetL or SetH"))?;
    let mut w = testbed_workload(&mix, seed, TestbedRule::default(), &setup.info);
    let cpn = setup.info.machine.node_cores.max(1);
    let scale = |t: f64| ((t * pct / 100.0).round() as i64).max(1);
    let mut records = Vec::with_capacity(w.jobs.len());
    for (j, pj) in w.jobs.iter_mut().zip(w.power_jobs.iter_mut()) {
        j.submit = (j.submit as f64 * pct / 100.0).round() as i64;
        pj.t1 *= pct / 100.0;
        let (nodes, runtime) = match parm {
            // its estimate: its time on n_max nodes at full power
            true => (pj.n_max, scale(pj.time(pj.n_max, setup.info.cpu_max_w))),
            false => (pj.n_min, scale(j.runtime as f64)),
        };
        j.runtime = runtime;
        j.estimate = runtime;
        j.procs = nodes;
        let mut r = SwfRecord::unknown(j.id);
        r.submit_time = j.submit;
        r.run_time = runtime;
        r.requested_time = runtime;
        r.allocated_procs = (nodes * cpn) as i64;
        r.requested_procs = (nodes * cpn) as i64;
        r.status = 1;
        records.push(r);
    }
    if !parm {
        return Ok((records, None));
    }
    w.machine = Machine::Power(Arc::new(setup));
    Ok((records, Some(w)))
}

/// The jobs of a power-aware workload (jobs sized in nodes, each with its
/// PASS job) as a replay submits them: the first at 0, each with its
/// estimate on n_max nodes at full power in whole seconds. The workload is
/// made the one submitted: submit times from 0, and each PASS job exactly
/// what the controller builds from its submission.
fn plan_power(w: &mut Workload, cluster: &Cluster) -> Result<Vec<Planned>> {
    let info = cluster.power_machine().map_err(anyhow::Error::msg)?;
    let cpn = info.machine.node_cores.max(1);
    let first = w.jobs.first().map_or(0, |j| j.submit);
    let mut out = Vec::with_capacity(w.jobs.len());
    for (j, pj) in w.jobs.iter_mut().zip(w.power_jobs.iter_mut()) {
        let id = u64::try_from(j.id).map_err(|_| anyhow!("job {}: expected a job number >= 0", j.id))?;
        let estimate = pj.time(pj.n_max, info.cpu_max_w).round().max(1.0) as i64;
        *pj = PowerJob::sized(pj.app, pj.scaling, estimate as f64, pj.n_min, pj.n_max, info.cpu_max_w, pj.n_max as f64 * 1024.0, pj.malleable && pj.n_min < pj.n_max);
        j.submit -= first;
        let mut record = SwfRecord::unknown(j.id);
        record.submit_time = j.submit;
        (record.run_time, record.requested_time) = (estimate, estimate);
        (record.allocated_procs, record.requested_procs) = ((pj.n_max * cpn) as i64, (pj.n_max * cpn) as i64);
        record.status = 1;
        out.push(Planned {
            trace_id: id,
            offset: j.submit as f64,
            procs: pj.n_max * cpn,
            runtime: estimate,
            estimate,
            mem_per_proc_mb: 0,
            partition: None,
            record,
            power: Some(pj.clone()),
        });
    }
    Ok(out)
}

/// Samples the controller's power gauges from `/metrics` once a second, on a
/// thread of its own, until [`Sampler::finish`].
struct Sampler {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Vec<(f64, f64, f64, f64)>>,
}

impl Sampler {
    fn start(socket: PathBuf) -> Sampler {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut rows = Vec::new();
            let Ok(rt) = runtime() else { return rows };
            let mut client = Client::new(Target::Unix(socket), None);
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                let next = std::time::Instant::now() + std::time::Duration::from_secs(1);
                if let Ok((_, body)) = rt.block_on(client.raw(Method::GET, "/metrics", None)) {
                    let text = String::from_utf8_lossy(&body);
                    let gauge = |name: &str| text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse::<f64>().ok());
                    if let (Some(b), Some(a), Some(m)) = (gauge("tessera_power_budget_watts"), gauge("tessera_allocated_power_watts"), gauge("tessera_measured_power_watts")) {
                        rows.push((tessera_proto::unix_now_f64(), b, a, m));
                    }
                }
                std::thread::sleep(next.saturating_duration_since(std::time::Instant::now()));
            }
            rows
        });
        Sampler { stop, thread }
    }

    /// Stop sampling, write the samples to `csv` and sum them up.
    fn finish(self, csv: &Path) -> Result<PowerSummary> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let rows = self.thread.join().map_err(|_| anyhow!("the power sampler panicked"))?;
        let mut f = std::io::BufWriter::new(std::fs::File::create(csv).with_context(|| format!("creating {}", csv.display()))?);
        writeln!(f, "unix_time,budget_w,allocated_w,measured_w")?;
        let (mut over, mut run_start, mut longest) = (0, None::<f64>, 0.0f64);
        for &(t, b, a, m) in &rows {
            writeln!(f, "{t:.3},{b:.1},{a:.1},{m:.1}")?;
            if m > b + 1e-6 {
                over += 1;
                let s = *run_start.get_or_insert(t);
                longest = longest.max(t - s + 1.0);
            } else {
                run_start = None;
            }
        }
        f.flush()?;
        let n = rows.len().max(1) as f64;
        Ok(PowerSummary {
            samples: rows.len(),
            budget_w: rows.iter().map(|r| r.1).fold(0.0, f64::max),
            max_allocated_w: rows.iter().map(|r| r.2).fold(0.0, f64::max),
            max_measured_w: rows.iter().map(|r| r.3).fold(0.0, f64::max),
            mean_measured_w: rows.iter().map(|r| r.3).sum::<f64>() / n,
            over_budget_samples: over,
            longest_over_budget_s: longest,
            csv: csv.to_path_buf(),
        })
    }
}
