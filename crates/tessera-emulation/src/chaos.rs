//! `tessera chaos`: the live system under `kill -9`. Start a controller and
//! agents on this machine, replay a trace through them with sleep jobs
//! (`tessera replay`), and meanwhile SIGKILL the controller or an agent at
//! random moments, starting each again after a random pause. At the end, check
//! what a scheduler owes its users: every job acknowledged ran exactly once
//! (one line in the sleep jobs' log) and has exactly one accounting record, in
//! the state it asked for: COMPLETED, or TIMEOUT having run its whole limit (no
//! job here is requeued or lost, since the pauses stay within the agents'
//! heartbeat timeout).

use crate::client::runtime;
use crate::local::Guard;
use crate::replay::{self, parse_shrink, plan, Files, Pace};
use anyhow::{anyhow, bail, Context, Result};
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

/// `tessera chaos`'s settings (see its `--help`).
#[derive(Clone, Debug)]
pub struct Options {
    pub trace: PathBuf,
    pub max_jobs: Option<usize>,
    /// One percentage.
    pub shrink: String,
    pub cluster: Option<PathBuf>,
    pub policy: String,
    pub agents: usize,
    /// Seconds between one restart and the next kill, (min, max).
    pub every: (f64, f64),
    /// Seconds a killed daemon stays down, (min, max).
    pub down: (f64, f64),
    pub heartbeat_timeout: u64,
    pub seed: u64,
    pub out: PathBuf,
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
    /// The shrink percentage, and the jobs the controller acknowledged.
    #[serde(skip)]
    pub shrink_pct: f64,
    #[serde(skip)]
    pub acknowledged: usize,
}

/// Replay under kill -9 on a local cluster (the `tessera` binary `bin`); what
/// was found, also written to `OUT/chaos.json` ([`Chaos::check`] says whether
/// it passed).
pub fn run(a: &Options, bin: &Path) -> Result<Chaos> {
    let trace_path = tessera_workload::traces::resolve(&a.trace)?;
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
    let (header, mut records, _) = SwfReader::read_file(&trace_path, false)?;
    if let Some(n) = a.max_jobs {
        first_jobs(&mut records, n);
    }
    let shrink = Shrink::uniform(pct);
    shrink.apply(&mut records).map_err(|e| anyhow!("{}: {e}", trace_path.display()))?;

    // a fixed port: the agents find the restarted controller where it was
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let extra = ["--heartbeat-timeout".to_string(), a.heartbeat_timeout.to_string()];
    let mut local = Guard::start(bin, &state, &a.cluster, a.agents, format!("127.0.0.1:{port}").parse()?, &a.policy, &extra)?;
    let rt = runtime()?;
    let socket = local.0.as_ref().expect("started").ep.socket.clone();
    let mut client = Client::new(Target::Unix(socket.clone()), None);
    let info: ClusterInfo = rt.block_on(client.call::<(), _>(Method::GET, "/v1/cluster", None)).map_err(|e| anyhow!("asking the controller for its cluster: {e}"))?;
    let cluster = Arc::new(Cluster::from_toml(&info.toml, &info.path).map_err(|e| anyhow!("{e}"))?);
    let (w, planned) = plan(&records, cluster, Pace::Trace { warmup: 0 })?;
    let n = planned.len();
    let trace = trace_path.display().to_string();

    // the replay in its own thread, the kills in this one
    let t0 = Instant::now();
    let replay = {
        let bin = bin.to_path_buf();
        let trace = trace.clone();
        std::thread::spawn(move || -> Result<()> {
            let rt = runtime()?;
            let mut client = Client::new(Target::Unix(socket), None);
            replay::run(&rt, &mut client, &info, &header, &w, &planned, &[], &[], &files, &bin, 0, &trace, pct, shrink).map(drop)
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
        shrink_pct: pct,
        acknowledged: ids.len(),
    };
    // what each job asked for: to run to its end, or to be stopped at its limit
    let all_completed = c.states.keys().all(|s| s == "COMPLETED" || s == "TIMEOUT");
    let c = Chaos { passed: c.unrecorded.is_empty() && c.recorded_twice.is_empty() && c.unknown_records.is_empty() && c.ran_not_once.is_empty() && c.timed_out_early.is_empty() && all_completed && ids.len() == n, ..c };
    std::fs::write(dir.join("chaos.json"), serde_json::to_vec_pretty(&c)?)?;
    Ok(c)
}

impl Chaos {
    /// An error unless the run passed: what went wrong, the first few jobs of each kind.
    pub fn check(&self) -> Result<()> {
        let c = self;
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
                c.dir.display()
            );
        }
        Ok(())
    }
}

impl std::fmt::Display for Chaos {
    /// The run as a report: kills, accounting records, jobs not run once.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = self;
        writeln!(f, "Chaos replay of {} jobs of {} at {}% in {:.0} s: the controller killed {} times, agents {} times (down at most {:.1} s each; log {})", c.jobs, c.trace, c.shrink_pct, c.seconds, c.controller_kills, c.agent_kills, c.longest_down_s, c.kill_log.display())?;
        writeln!(f, "  accounting records by state: {:?}", c.states)?;
        writeln!(f, "  jobs acknowledged: {}; without a record: {}; recorded twice: {}; records of unknown jobs: {}", c.acknowledged, c.unrecorded.len(), c.recorded_twice.len(), c.unknown_records.len())?;
        writeln!(f, "  jobs that did not run exactly once (sleep log lines ≠ 1): {}", c.ran_not_once.len())?;
        writeln!(f, "  jobs recorded TIMEOUT that ended by themselves before their limit: {}", c.timed_out_early.len())?;
        writeln!(f, "  {}", if c.passed { "PASSED: every job ran once and is accounted once" } else { "FAILED" })
    }
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
