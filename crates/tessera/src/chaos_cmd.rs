//! `tessera chaos`: the live system under `kill -9`. Start a controller and
//! agents on this machine, replay a trace through them with sleep jobs
//! (`tessera replay`), and meanwhile SIGKILL the controller or an agent at
//! random moments, starting each again after a random pause. At the end, check
//! what a scheduler owes its users: every job acknowledged ran exactly once
//! (one line in the sleep jobs' log) and has exactly one accounting record, in
//! the state it asked for: COMPLETED, or TIMEOUT having run its whole limit (no
//! job here is requeued or lost, since the pauses stay within the agents'
//! heartbeat timeout).

use crate::live_args::ListFormat;
use crate::loadtest_cmd::Guard;
use crate::out::outln;
use crate::replay_cmd::{self, parse_shrink, plan, Files, Pace};
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use hyper::Method;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tessera_core::Cluster;
use tessera_proto::api::ClusterInfo;
use tessera_proto::client::{Client, Target};
use tessera_workload::swf::SwfReader;
use tessera_workload::transform::{first_jobs, Shrink};

#[derive(Args, Debug)]
pub struct ChaosArgs {
    /// SWF trace (plain or gzip), replayed with sleep jobs. A bare file name not in the current directory is looked up in $TESSERA_TRACES.
    #[arg(long)]
    pub trace: PathBuf,
    /// The first N records of the trace (N >= 1; without it, all).
    #[arg(long, value_parser = crate::cli::at_least_one)]
    pub max_jobs: Option<usize>,
    /// Shrink factor in percent (submission offsets, runtimes, estimates).
    #[arg(long, default_value = "100")]
    pub shrink: String,
    /// Cluster file (default: the embedded default cluster).
    #[arg(long)]
    pub cluster: Option<PathBuf>,
    /// fcfs, easy or conservative.
    #[arg(long, default_value = "easy")]
    pub policy: String,
    /// Agents presenting the cluster's nodes.
    #[arg(long, default_value_t = 4)]
    pub agents: usize,
    /// Seconds between one restart and the next kill: MIN:MAX, drawn uniformly.
    #[arg(long, default_value = "5:30", value_parser = seconds_range)]
    pub every: (f64, f64),
    /// Seconds a killed daemon stays down: MIN:MAX, drawn uniformly (below the
    /// heartbeat timeout, so that no agent is declared lost).
    #[arg(long, default_value = "0:5", value_parser = seconds_range)]
    pub down: (f64, f64),
    /// Seconds without a poll after which the controller declares an agent lost.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub heartbeat_timeout: u64,
    /// Seed of the kill schedule.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Directory for the controller's state, the replay's files and the kill
    /// log (created; it must not hold an earlier replay).
    #[arg(long, default_value = "chaos")]
    pub out: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ListFormat,
}

/// `MIN:MAX` seconds, 0 <= MIN <= MAX <= 86400.
fn seconds_range(s: &str) -> Result<(f64, f64), String> {
    let bad = || format!("expected MIN:MAX seconds with 0 <= MIN <= MAX <= 86400 (e.g. 5:30), found {}", tessera_core::quote::bounded(s));
    let (a, b) = s.split_once(':').ok_or_else(bad)?;
    let (a, b): (f64, f64) = (a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?);
    if !(a.is_finite() && b.is_finite() && 0.0 <= a && a <= b && b <= 86_400.0) {
        return Err(bad());
    }
    Ok((a, b))
}

/// What the run did and found.
#[derive(Serialize, Debug)]
pub struct Chaos {
    pub trace: String,
    pub jobs: usize,
    pub seconds: f64,
    pub controller_kills: usize,
    pub agent_kills: usize,
    pub longest_down_s: f64,
    /// Jobs by their accounting state.
    pub states: BTreeMap<String, usize>,
    /// Acknowledged jobs with no accounting record.
    pub unrecorded: Vec<u64>,
    /// Jobs recorded more than once.
    pub recorded_twice: Vec<u64>,
    /// Records of jobs this replay never submitted.
    pub unknown_records: Vec<u64>,
    /// Trace jobs whose sleep job did not write exactly one log line: (trace
    /// job, lines).
    pub ran_not_once: Vec<(u64, usize)>,
    /// Trace jobs recorded TIMEOUT although their sleep job ended by itself
    /// (wrote its line) with a run time at least a second under its limit.
    pub timed_out_early: Vec<u64>,
    pub passed: bool,
    pub kill_log: PathBuf,
    pub dir: PathBuf,
}

pub fn chaos(mut a: ChaosArgs) -> Result<()> {
    a.trace = tessera_workload::traces::resolve(&a.trace)?;
    let [pct] = parse_shrink(&a.shrink)?[..] else { bail!("--shrink {}: chaos replays at one percentage", a.shrink) };
    if a.down.1 >= a.heartbeat_timeout as f64 {
        bail!("--down {}:{}: expected pauses shorter than --heartbeat-timeout {} s (a longer one loses the agent, and its jobs are requeued or failed by design)", a.down.0, a.down.1, a.heartbeat_timeout);
    }
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let dir = a.out.canonicalize()?;
    let state = dir.join("state");
    if state.join("journal").exists() || state.join("state.db").exists() {
        bail!("{} holds an earlier run's controller state: give another --out", state.display());
    }
    std::fs::create_dir_all(&state)?;
    let files = Files::new(&dir.join("replay"))?;
    let (header, mut records, _) = SwfReader::read_file(&a.trace, false)?;
    if let Some(n) = a.max_jobs {
        first_jobs(&mut records, n);
    }
    let shrink = Shrink::uniform(pct);
    shrink.apply(&mut records).map_err(|e| anyhow!("{}: {e}", a.trace.display()))?;

    // a fixed port: the agents find the restarted controller where it was
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let extra = ["--heartbeat-timeout".to_string(), a.heartbeat_timeout.to_string()];
    let mut local = Guard::start(&state, &a.cluster, a.agents, format!("127.0.0.1:{port}").parse()?, &a.policy, &extra)?;
    let rt = crate::live_cmd::runtime()?;
    let socket = local.0.as_ref().expect("started").ep.socket.clone();
    let mut client = Client::new(Target::Unix(socket.clone()), None);
    let info: ClusterInfo = rt.block_on(client.call::<(), _>(Method::GET, "/v1/cluster", None)).map_err(|e| anyhow!("asking the controller for its cluster: {e}"))?;
    let cluster = Arc::new(Cluster::from_toml(&info.toml, &info.path).map_err(|e| anyhow!("{e}"))?);
    let (w, planned) = plan(&records, cluster, Pace::Trace { warmup: 0 })?;
    let n = planned.len();
    let trace = a.trace.display().to_string();

    // the replay in its own thread, the kills in this one
    let t0 = Instant::now();
    let replay = {
        let bin = std::env::current_exe()?;
        let trace = trace.clone();
        std::thread::spawn(move || -> Result<()> {
            let rt = crate::live_cmd::runtime()?;
            let mut client = Client::new(Target::Unix(socket), None);
            replay_cmd::run(&rt, &mut client, &info, &header, &w, &planned, &files, &bin, 0, &trace, pct, shrink).map(drop)
        })
    };
    let kill_log = dir.join("kills.csv");
    let mut kills = std::io::BufWriter::new(std::fs::File::create(&kill_log).with_context(|| format!("creating {}", kill_log.display()))?);
    writeln!(kills, "at_s,daemon,down_s")?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(a.seed);
    let (mut controller_kills, mut agent_kills, mut longest) = (0, 0, 0.0f64);
    let l = local.0.as_mut().expect("started");
    let n_agents = l.agents.len();
    'outer: loop {
        let due = Instant::now() + Duration::from_secs_f64(rng.gen_range(a.every.0..=a.every.1));
        while Instant::now() < due {
            if replay.is_finished() {
                break 'outer;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let down = rng.gen_range(a.down.0..=a.down.1);
        // the controller half the time, else one of the agents
        let victim = if rng.gen_bool(0.5) { None } else { Some(rng.gen_range(0..n_agents)) };
        let at = t0.elapsed().as_secs_f64();
        match victim {
            None => l.kill9_controller()?,
            Some(k) => l.kill9_agent(k)?,
        }
        std::thread::sleep(Duration::from_secs_f64(down));
        match victim {
            None => {
                l.restart_controller()?;
                controller_kills += 1;
            }
            Some(k) => {
                l.restart_agent(k)?;
                agent_kills += 1;
            }
        }
        longest = longest.max(down);
        writeln!(kills, "{at:.3},{},{down:.3}", victim.map_or("controller".to_string(), |k| format!("agent{}", k + 1)))?;
        kills.flush()?;
    }
    let replayed = replay.join().map_err(|_| anyhow!("the replay thread panicked"))?;
    let seconds = t0.elapsed().as_secs_f64();
    replayed.context("the replay under chaos")?;

    // every acknowledged job's record (the last ones may still be on their way)
    let (ids, limits) = submitted_ids(&dir.join("replay").join("jobs.csv"))?;
    let acct = state.join("accounting.db");
    let deadline = Instant::now() + Duration::from_secs(60);
    let rows = loop {
        let rows = recorded(&acct)?;
        if ids.values().all(|id| rows.contains_key(id)) || Instant::now() > deadline {
            break rows;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    drop(local);
    let lines = log_lines(&dir.join("replay").join("sleep.log"))?;
    let mut states = BTreeMap::new();
    let submitted: std::collections::BTreeSet<u64> = ids.values().copied().collect();
    for (_, (st, _)) in rows.iter().filter(|(id, _)| submitted.contains(id)) {
        *states.entry(st.clone()).or_insert(0) += 1;
    }
    let c = Chaos {
        trace,
        jobs: n,
        seconds,
        controller_kills,
        agent_kills,
        longest_down_s: longest,
        unrecorded: ids.values().filter(|id| !rows.contains_key(id)).copied().collect(),
        recorded_twice: rows.iter().filter(|(_, (_, k))| *k > 1).map(|(id, _)| *id).collect(),
        unknown_records: rows.keys().filter(|id| !submitted.contains(id)).copied().collect(),
        // a job that completed wrote its one line; one killed at its limit may
        // have written it in the instant the limit passed (time is whole seconds)
        ran_not_once: ids
            .iter()
            .map(|(t, id)| (*t, *id, lines.get(t).copied().unwrap_or(0)))
            .filter(|(_, id, k)| if rows.get(id).is_some_and(|r| r.0 == "TIMEOUT") { *k > 1 } else { *k != 1 })
            .map(|(t, _, k)| (t, k))
            .collect(),
        timed_out_early: ids
            .iter()
            .filter(|(t, id)| rows.get(id).is_some_and(|r| r.0 == "TIMEOUT") && lines.get(t).is_some_and(|&k| k == 1) && limits.get(t).is_some_and(|&(run, limit)| run + 1.0 <= limit))
            .map(|(t, _)| *t)
            .collect(),
        passed: false,
        states,
        kill_log,
        dir: dir.clone(),
    };
    // what each job asked for: to run to its end, or to be stopped at its limit
    let all_completed = c.states.keys().all(|s| s == "COMPLETED" || s == "TIMEOUT");
    let c = Chaos { passed: c.unrecorded.is_empty() && c.recorded_twice.is_empty() && c.unknown_records.is_empty() && c.ran_not_once.is_empty() && c.timed_out_early.is_empty() && all_completed && ids.len() == n, ..c };
    std::fs::write(dir.join("chaos.json"), serde_json::to_vec_pretty(&c)?)?;
    match a.format {
        ListFormat::Json => outln!("{}", serde_json::to_string_pretty(&c)?)?,
        ListFormat::Table => {
            outln!("Chaos replay of {} jobs of {} at {pct}% in {:.0} s: the controller killed {} times, agents {} times (down at most {:.1} s each; log {})", n, c.trace, c.seconds, c.controller_kills, c.agent_kills, c.longest_down_s, c.kill_log.display())?;
            outln!("  accounting records by state: {:?}", c.states)?;
            outln!("  jobs acknowledged: {}; without a record: {}; recorded twice: {}; records of unknown jobs: {}", ids.len(), c.unrecorded.len(), c.recorded_twice.len(), c.unknown_records.len())?;
            outln!("  jobs that did not run exactly once (sleep log lines ≠ 1): {}", c.ran_not_once.len())?;
            outln!("  jobs recorded TIMEOUT that ended by themselves before their limit: {}", c.timed_out_early.len())?;
            outln!("  {}", if c.passed { "PASSED: every job ran once and is accounted once" } else { "FAILED" })?;
        }
    }
    if !c.passed {
        bail!(
            "chaos: {} jobs unrecorded {:?}, {} recorded twice {:?}, {} unknown records, {} not run exactly once {:?}, {} timed out early {:?}, states {:?} (see {})",
            c.unrecorded.len(),
            &c.unrecorded[..c.unrecorded.len().min(10)],
            c.recorded_twice.len(),
            &c.recorded_twice[..c.recorded_twice.len().min(10)],
            c.unknown_records.len(),
            c.ran_not_once.len(),
            &c.ran_not_once[..c.ran_not_once.len().min(10)],
            c.timed_out_early.len(),
            &c.timed_out_early[..c.timed_out_early.len().min(10)],
            c.states,
            dir.display()
        );
    }
    Ok(())
}

/// From the replay's jobs.csv: trace job → controller job id, and trace job →
/// (run time, limit) in seconds as submitted.
#[allow(clippy::type_complexity)]
fn submitted_ids(csv: &Path) -> Result<(BTreeMap<u64, u64>, BTreeMap<u64, (f64, f64)>)> {
    let text = std::fs::read_to_string(csv).with_context(|| format!("reading {}", csv.display()))?;
    let (mut ids, mut limits) = (BTreeMap::new(), BTreeMap::new());
    for (i, l) in text.lines().enumerate().skip(1) {
        let f: Vec<&str> = l.split(',').collect();
        let [t, j, _procs, run, limit, ..] = f[..] else { bail!("{}:{}: expected trace_id,job_id,procs,runtime,estimate,…", csv.display(), i + 1) };
        let field = |v: &str, name: &str| -> Result<f64> { v.parse().with_context(|| format!("{}:{}: {name}", csv.display(), i + 1)) };
        let t: u64 = t.parse().with_context(|| format!("{}:{}: trace_id", csv.display(), i + 1))?;
        ids.insert(t, j.parse().with_context(|| format!("{}:{}: job_id", csv.display(), i + 1))?);
        limits.insert(t, (field(run, "runtime")?, field(limit, "estimate")?));
    }
    Ok((ids, limits))
}

/// Job id → (state, how many records), over the store's live run. A job that
/// timed out having run its whole limit is `TIMEOUT`; one that timed out
/// earlier (a restarted controller's mistake) is `TIMEOUT before its limit`.
fn recorded(db: &Path) -> Result<BTreeMap<u64, (String, usize)>> {
    let store = tessera_accounting::store::Store::open(db)?;
    let run = store.resolve_run(None)?;
    let mut out: BTreeMap<u64, (String, usize)> = BTreeMap::new();
    for j in tessera_accounting::acct::jobs(&store, run, &Default::default())? {
        let state = if j.state == "TIMEOUT" && j.wall_norm_s < j.time_limit as f64 { "TIMEOUT before its limit".to_string() } else { j.state };
        let e = out.entry(j.job_id as u64).or_insert((state, 0));
        e.1 += 1;
    }
    Ok(out)
}

/// Lines in the sleep jobs' log, by trace job (a job run twice writes two).
fn log_lines(log: &Path) -> Result<BTreeMap<u64, usize>> {
    let text = std::fs::read_to_string(log).with_context(|| format!("reading {}", log.display()))?;
    let mut out = BTreeMap::new();
    for (i, l) in text.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(l).with_context(|| format!("{}:{}", log.display(), i + 1))?;
        let id = v["id"].as_u64().ok_or_else(|| anyhow!("{}:{}: no job id", log.display(), i + 1))?;
        *out.entry(id).or_insert(0) += 1;
    }
    Ok(out)
}
