//! The node agent: it presents one or more nodes to the controller, runs the
//! jobs it is told to (through [`crate::launch`]), signals them, enforces their
//! limits, and reports how they ended. It decides nothing: the controller does.
//!
//! The agent registers with everything it holds (running jobs, and jobs that
//! ended and were not yet acknowledged), then long-polls for commands; the poll
//! is its heartbeat. Jobs keep running while the controller is away; a
//! restarted agent finds its jobs in its state directory and re-adopts them.
//! Job records are removed only once the controller has acknowledged their end
//! (the report's reply comes after the controller's journal commit).

use tessera_proto::unix_now;
use crate::suspensions;
use crate::launch::{self, Slot, Spawned};
use crate::launcher::Launcher;
use crate::cgroup::{Hierarchy, JobGroup, Limits};

mod steps;
use anyhow::{Context, Result};
use hyper::Method;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tessera_proto::api::*;
use tessera_proto::client::{Client, ClientError, Target};
use tokio::sync::{mpsc, watch};

/// How long the agent gathers job ends before reporting the first one: jobs
/// that end together (in the same second, as a trace's do) are reaped a few
/// milliseconds apart, and only one report is in flight at a time, so without
/// it the second end would wait for the controller's pass on the first.
const REPORT_GATHER: Duration = Duration::from_millis(5);

/// How often the agent reports its nodes' power (with a job's end, or alone).
pub const POWER_EVERY: Duration = Duration::from_secs(POWER_REPORT_S);

#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub name: String,
    pub target: Target,
    /// An agent token signed with the cluster key.
    pub token: String,
    pub nodes: Vec<AgentNode>,
    pub state_dir: PathBuf,
    /// Seconds past a job's limit before the agent ends it itself (the
    /// controller's own kill normally comes first).
    pub limit_slack_s: u64,
    /// Each node's power domain, when the nodes have one: emulated nodes the
    /// cluster file's model, real nodes their RAPL packages (empty: the agent
    /// sets no caps and reports no power).
    pub power: Vec<(String, crate::power::Source)>,
    /// Where its jobs' cgroups go (None: its jobs are not confined).
    pub cgroups: Option<Hierarchy>,
    /// Its nodes are emulated: their cores are not the host's, so a job's
    /// cgroup has no cpuset.
    pub emulated: bool,
    /// Each GPU's device file on this host, by index: a job may open only
    /// those of the GPUs it was given.
    pub gpu_devices: Vec<PathBuf>,
}

/// The ceiling on a job's processes and threads on a node: 256 per core it
/// holds there, and at least 4096.
pub fn pids_max(cores: u32) -> u64 {
    (256 * cores as u64).max(4096)
}

/// The agent's `run` line of a job's record.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct RunInfo {
    start: i64,
    limit_s: Option<i64>,
    grace_s: u64,
    /// It runs in a cgroup of its own ([`Hierarchy::job`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    cgroup: bool,
    /// The node it runs on here, and the host cpus and GPUs it was given.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    node: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    cpus: Vec<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    gpus: Vec<u32>,
    /// Suspension sends SIGTSTP before the freezer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    tstp: bool,
    /// A step's task: (step, task id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    task: Option<(u32, u32)>,
    /// Its job's cgroup on the node (`slot_N`, `job_ID_ATTEMPT`), and the
    /// out-of-memory kills counted there before the job (a reused slot's).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    cg_name: String,
    #[serde(default, skip_serializing_if = "is_zero")]
    oom_base: u64,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

struct Job {
    slot: Slot,
    /// The owner of the slot's script (the uid the job runs as).
    owner: u32,
    pids: Option<Spawned>,
    /// Started by this agent process (reaped here), else adopted.
    ours: bool,
    info: RunInfo,
    started: Instant,
    suspended_since: Option<Instant>,
    suspended_for: Duration,
    /// Bytes of its acknowledgements read so far, while it owes one.
    acks_read: Option<u64>,
    stop_at: Option<Instant>,
    kill_at: Option<Instant>,
    limit_hit: bool,
    /// Its cgroup, when it is confined.
    cg: Option<JobGroup>,
    /// Its cpus and GPUs are counted in the agent's `cpus_held`.
    counted: bool,
    /// Its first process ended, but others are left in its cgroup: killed,
    /// and waited for before its end is reported.
    draining: Option<JobExit>,
    exit: Option<JobExit>,
}


impl Job {
    /// A job started at `info.start` (its run time so far counted from then).
    fn new(slot: Slot, owner: u32, info: RunInfo, ours: bool) -> Job {
        let elapsed = (unix_now() - info.start).max(0) as u64;
        Job {
            slot,
            owner,
            pids: None,
            ours,
            started: Instant::now().checked_sub(Duration::from_secs(elapsed)).unwrap_or_else(Instant::now),
            info,
            suspended_since: None,
            suspended_for: Duration::ZERO,
            acks_read: None,
            stop_at: None,
            kill_at: None,
            limit_hit: false,
            cg: None,
            counted: false,
            draining: None,
            exit: None,
        }
    }

    /// Its first process ended as `x`: the job ends once its cgroup is
    /// empty (what is left is killed), with the cgroup's counters.
    fn settle(&mut self, x: JobExit) {
        let Some(cg) = &self.cg else {
            self.exit = Some(x);
            return;
        };
        if !cg.empty() {
            cg.kill();
            if !cg.empty() {
                self.draining = Some(x);
                return;
            }
        }
        self.draining = None;
        let mut usage = cg.usage(None);
        usage.oom_kills = usage.oom_kills.saturating_sub(self.info.oom_base);
        if cg.pooled {
            cg.release();
        } else if !cg.remove() {
            tracing::warn!(job = x.job, attempt = x.attempt, "the job's cgroup could not be removed");
        }
        self.exit = Some(JobExit { cpu_s: usage.cpu_s, usage: Some(usage), ..x });
    }

    /// Send `s` to its processes: every one in its cgroup, or its process
    /// group.
    fn signal(&self, s: Signal) {
        match (&self.cg, self.pids) {
            (Some(cg), _) => cg.signal(s as i32),
            (None, Some(p)) => {
                let _ = killpg(Pid::from_raw(p.pgid), s);
            }
            (None, None) => {}
        }
    }

    /// Stop it: the freezer, or SIGSTOP.
    fn stop(&self) {
        match &self.cg {
            Some(cg) => {
                if let Err(e) = cg.freeze(true) {
                    tracing::warn!("freezing a job: {e}");
                }
            }
            None => self.signal(Signal::SIGSTOP),
        }
    }

    /// Continue it: thawed, and SIGCONT to every process (one that stopped
    /// itself on SIGTSTP included).
    fn cont(&self) {
        if let Some(cg) = &self.cg {
            if let Err(e) = cg.freeze(false) {
                tracing::warn!("thawing a job: {e}");
            }
        }
        self.signal(Signal::SIGCONT);
    }
}

/// The slots of the agent's spool: how many there are, and the free ones by
/// the owner of their script. A script is reused only for the same user (a
/// job's leftover process could otherwise hold a user's open file and read or
/// change another user's script); a slot changing owner gets a new script file.
struct Spool {
    slots: u32,
    free: BTreeMap<u32, Vec<u32>>,
}

impl Spool {
    fn take(&mut self, owner: u32, state: &Path) -> Slot {
        if let Some(n) = self.free.get_mut(&owner).and_then(|v| v.pop()) {
            return Slot::new(state, n);
        }
        if let Some(n) = self.free.values_mut().find_map(|v| v.pop()) {
            let slot = Slot::new(state, n);
            // the files the job itself writes are the new owner's alone
            let _ = std::fs::remove_file(&slot.script);
            let _ = std::fs::remove_file(slot.config_ack());
            return slot;
        }
        self.slots += 1;
        Slot::new(state, self.slots - 1)
    }

    fn give_back(&mut self, slot: &Slot, owner: u32) {
        self.free.entry(owner).or_default().push(slot.n);
    }
}

enum Inbox {
    Commands(Vec<AgentCommand>),
    Reregister,
}

pub struct Agent {
    cfg: AgentConfig,
    spool: Spool,
    launcher: Launcher,
    client: Client,
    jobs: BTreeMap<(u64, u32), Job>,
    session: watch::Sender<u64>,
    power: crate::power::Domains,
    /// Runs that acknowledged their configuration, to report.
    resized: Vec<(u64, u32)>,
    /// A cap or a node's busy state changed since the last report: the next
    /// report goes at once, so that the controller's sum over the agents'
    /// nodes follows the change within a poll, not a report interval.
    power_changed: bool,
    /// How many running jobs hold each host cpu and each node's GPU (a
    /// suspended job keeps its cpuset while another runs on its cores).
    cpus_held: BTreeMap<u32, u32>,
    gpus_held: BTreeMap<(String, u32), u32>,
    /// The steps' parts on its nodes, by (job, attempt, step), and the
    /// cgroups of jobs whose steps only run here.
    steps: BTreeMap<(u64, u32, u32, String), steps::StepRun>,
    externs: BTreeMap<(u64, u32), steps::Extern>,
}

impl Agent {
    /// Load the jobs left in the state directory by an earlier run; launch new
    /// ones through `launcher` (started while the process had one thread).
    pub fn open(cfg: AgentConfig, launcher: Launcher) -> Result<Agent> {
        let jobs_dir = cfg.state_dir.join("jobs");
        // traversable, so that a job's user can run the script it owns there;
        // the records are the operator's
        tessera_proto::statedir::create_dir(&jobs_dir).with_context(|| format!("creating {}", jobs_dir.display()))?;
        std::fs::set_permissions(&jobs_dir, std::os::unix::fs::PermissionsExt::from_mode(tessera_proto::statedir::DIR_MODE))?;
        let mut slots = 0;
        for e in std::fs::read_dir(&jobs_dir)? {
            if let Some(n) = e?.file_name().to_str().and_then(Slot::parse_name) {
                slots = slots.max(n + 1);
            }
        }
        let euid = nix::unistd::geteuid().as_raw();
        let mut spool = Spool { slots, free: BTreeMap::new() };
        let mut jobs = BTreeMap::new();
        let mut tasks = Vec::new();
        for n in 0..slots {
            let slot = Slot::new(&cfg.state_dir, n);
            let owner = std::fs::metadata(&slot.script).map_or(euid, |m| std::os::unix::fs::MetadataExt::uid(&m));
            // the operator's only (a spool of an older agent had them 0644)
            if std::fs::metadata(&slot.record).is_ok_and(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o077 != 0) {
                std::fs::set_permissions(&slot.record, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
            }
            let mut rec = slot.read();
            let Some((job, attempt, run)) = rec.run.clone() else {
                spool.give_back(&slot, owner); // free, or never started
                continue;
            };
            let info: RunInfo = serde_json::from_str(&run).with_context(|| format!("{}: its run line", slot.record.display()))?;
            if info.task.is_some() {
                tasks.push((job, attempt, slot, owner, info, rec.pids));
                continue;
            }
            if rec.pids.is_none() && rec.exit.is_none() {
                // the shepherd may be writing its pids at this moment
                std::thread::sleep(Duration::from_millis(200));
                rec = slot.read();
            }
            let mut j = Job::new(slot, owner, info, false);
            j.pids = rec.pids;
            j.cg = match (&cfg.cgroups, j.info.cgroup) {
                (Some(h), true) if !j.info.cg_name.is_empty() => Some(h.named(&j.info.cg_name)),
                (Some(h), true) => Some(h.job(job, attempt)),
                _ => None,
            };
            if let Some(x) = ended(job, attempt, &j) {
                j.settle(x);
            }
            tracing::info!(job, attempt, ended = j.exit.is_some(), "re-adopted a job");
            jobs.insert((job, attempt), j);
        }
        let client = Client::new(cfg.target.clone(), Some(cfg.token.clone()));
        let (session, _) = watch::channel(0);
        // a job's cgroup whose record is gone (the agent stopped between
        // the two) holds nothing anyone waits for
        if let Some(h) = &cfg.cgroups {
            for (job, attempt) in h.jobs() {
                if !jobs.contains_key(&(job, attempt)) && !tasks.iter().any(|t| (t.0, t.1) == (job, attempt)) {
                    tracing::warn!(job, attempt, "a cgroup of a job the agent no longer holds: its processes are killed");
                    let cg = h.job(job, attempt);
                    cg.kill();
                    for _ in 0..50 {
                        if cg.empty() {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    cg.remove();
                }
            }
            // a slot's cgroup whose slot holds nothing now: emptied
            for n in h.slots() {
                let held = jobs.values().any(|j: &Job| j.slot.n == n && j.exit.is_none()) || tasks.iter().any(|t| t.2.n == n);
                if let (Some(cg), false) = (h.slot(n), held) {
                    if !cg.empty() {
                        tracing::warn!(slot = n, "processes left in a free slot's cgroup: killed");
                        cg.kill();
                    }
                }
            }
        }
        let power = crate::power::Domains::open(&cfg.state_dir, cfg.power.clone());
        let mut a = Agent { cfg, spool, launcher, client, jobs, session, power, resized: Vec::new(), power_changed: false, cpus_held: BTreeMap::new(), gpus_held: BTreeMap::new(), steps: BTreeMap::new(), externs: BTreeMap::new() };
        for (job, attempt, slot, owner, info, pids) in tasks {
            a.adopt_task(job, attempt, slot, owner, info, pids);
        }
        let held: Vec<RunInfo> = a.externs.values().map(|x| x.info.clone()).collect();
        for info in held {
            a.hold(&info, 1);
        }
        let held: Vec<RunInfo> = a.jobs.values_mut().filter(|j| j.exit.is_none()).map(|j| {
            j.counted = true;
            j.info.clone()
        }).collect();
        for info in held {
            a.hold(&info, 1);
        }
        Ok(a)
    }

    /// Register (retrying until the controller answers) with every job held.
    async fn register(&mut self) -> Result<()> {
        loop {
            let req = RegisterRequest {
                agent: self.cfg.name.clone(),
                version: PROTOCOL_VERSION,
                nodes: self.cfg.nodes.clone(),
                jobs: self
                    .jobs
                    .iter()
                    .map(|(&(job, attempt), j)| match j.exit {
                        Some(x) => AgentJob::Ended(x),
                        None => AgentJob::Running { job, attempt, suspended: j.suspended_since.is_some() },
                    })
                    .collect(),
                power: self.power.readings(),
                steps: self.steps.iter().filter(|(_, r)| r.exit.is_none()).map(|(k, _)| (k.0, k.1, k.2)).collect(),
                steps_ended: self.steps.values().filter_map(|r| r.exit.clone()).collect(),
            };
            match self.client.call::<_, RegisterReply>(Method::POST, "/v1/agent/register", Some(&req)).await {
                Ok(r) => {
                    tracing::info!(agent = %self.cfg.name, session = r.session, nodes = self.cfg.nodes.len(), jobs = req.jobs.len(), "registered");
                    if !r.ignored.is_empty() {
                        tracing::warn!(agent = %self.cfg.name, nodes = ?r.ignored, "the controller's cluster does not have these nodes: they take no jobs until a cluster file that has them is applied");
                    }
                    self.forget_reported(&req.jobs);
                    self.forget_steps(&req.steps_ended);
                    self.session.send_replace(r.session);
                    return Ok(());
                }
                Err(e @ ClientError::Api { status: 400 | 401 | 403, .. }) => return Err(e).context("the controller refused the registration"),
                Err(e) => {
                    tracing::warn!(agent = %self.cfg.name, "registration failed, retrying: {e}");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
        }
    }

    fn forget_reported(&mut self, reported: &[AgentJob]) {
        for r in reported {
            if let AgentJob::Ended(x) = r {
                if let Some(j) = self.jobs.remove(&(x.job, x.attempt)) {
                    j.slot.free(x.job, x.attempt);
                    self.spool.give_back(&j.slot, j.owner);
                    if j.counted {
                        self.hold(&j.info, -1);
                    }
                }
            }
        }
    }

    /// Run until the controller refuses this agent for good.
    pub async fn run(mut self) -> Result<()> {
        let (reap_tx, mut reap_rx) = mpsc::unbounded_channel::<i32>();
        let ended = self.launcher.take_ended().context("the agent runs once")?;
        std::thread::Builder::new().name("tessera-reaper".into()).spawn(move || reaper(ended, reap_tx))?;
        self.register().await?;
        let (in_tx, mut in_rx) = mpsc::unbounded_channel();
        let poller = tokio::spawn(poll_loop(self.cfg.clone(), self.session.subscribe(), in_tx));
        // one report in flight at a time, sent by a task of its own so that
        // launches go on while the controller commits it
        let (rep_tx, mut rep_rx) = mpsc::unbounded_channel::<(Vec<JobExit>, Vec<(u64, u32)>, Vec<StepExit>, Result<(), ClientError>)>();
        let (send_tx, mut send_rx) = mpsc::unbounded_channel::<AgentMessage>();
        let mut client = Client::new(self.cfg.target.clone(), Some(self.cfg.token.clone()));
        let reporter = tokio::spawn(async move {
            while let Some(msg) = send_rx.recv().await {
                let r = client.call::<_, ()>(Method::POST, "/v1/agent/report", Some(&msg)).await;
                if rep_tx.send((msg.ended, msg.resized, msg.steps, r)).is_err() {
                    return;
                }
            }
        });
        let mut reporting = false;
        let mut retry_at = Instant::now();
        let mut report_at: Option<Instant> = None;
        let mut power_at = Instant::now() + POWER_EVERY;
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        loop {
            tokio::select! {
                m = in_rx.recv() => match m {
                    Some(Inbox::Commands(cmds)) => for c in cmds { self.command(c) },
                    Some(Inbox::Reregister) => self.register().await?,
                    None => break,
                },
                Some(pid) = reap_rx.recv() => self.reaped(pid)?,
                Some((sent, acks, steps, r)) = rep_rx.recv() => {
                    reporting = false;
                    match r {
                        Ok(()) => {
                            self.forget_reported(&sent.into_iter().map(AgentJob::Ended).collect::<Vec<_>>());
                            self.forget_steps(&steps);
                        }
                        Err(ClientError::Api { status: 409, .. }) => {
                            self.resized.extend(acks);
                            self.register().await?
                        }
                        Err(e) => {
                            self.resized.extend(acks);
                            tracing::warn!(agent = %self.cfg.name, "report failed, will retry: {e}");
                            retry_at = Instant::now() + Duration::from_millis(500);
                        }
                    }
                }
                _ = tick.tick() => self.timers(),
                _ = tokio::time::sleep_until(report_at.unwrap_or_else(Instant::now).into()), if report_at.is_some() => {}
            }
            while let Ok(pid) = reap_rx.try_recv() {
                self.reaped(pid)?;
            }
            let power_due = !self.power.nodes.is_empty() && (Instant::now() >= power_at || self.power_changed);
            if !reporting && Instant::now() >= retry_at && (power_due || !self.resized.is_empty() || self.jobs.values().any(|j| j.exit.is_some()) || self.steps.values().any(|r| r.exit.is_some())) {
                if !power_due {
                    let at = *report_at.get_or_insert_with(|| Instant::now() + REPORT_GATHER);
                    if Instant::now() < at {
                        continue;
                    }
                }
                report_at = None;
                reporting = true;
                power_at = Instant::now() + POWER_EVERY;
                self.power_changed = false;
                let ended: Vec<JobExit> = self.jobs.values().filter_map(|j| j.exit).collect();
                let power = self.power.readings();
                let resized = std::mem::take(&mut self.resized);
                let _ = send_tx.send(AgentMessage { agent: self.cfg.name.clone(), session: *self.session.borrow(), ended, power, resized, steps: self.steps.values().filter_map(|r| r.exit.clone()).collect() });
            }
        }
        poller.abort();
        reporter.abort();
        Ok(())
    }

    fn command(&mut self, c: AgentCommand) {
        match c {
            AgentCommand::Launch(l) => self.launch(&l),
            AgentCommand::Step(s) => self.step(&s),
            AgentCommand::SignalStep { job, attempt, step, signal } => self.signal_step(job, attempt, step, signal),
            AgentCommand::Kill { job, attempt, grace_s } => {
                self.kill_steps(job, attempt, grace_s);
                if let Some(j) = self.jobs.get_mut(&(job, attempt)) {
                    tracing::info!(job, attempt, "kill");
                    terminate(j, grace_s);
                }
            }
            AgentCommand::Suspend { job, attempt, grace_ms, at } => {
                self.stop_steps(job, attempt, true);
                if let Some(j) = self.jobs.get_mut(&(job, attempt)) {
                    if j.suspended_since.is_none() && j.exit.is_none() {
                        tracing::info!(job, attempt, "suspend");
                        note_suspension(j, suspensions::Mark::Suspend, at);
                        j.suspended_since = Some(Instant::now());
                        if j.cg.is_some() && !j.info.tstp {
                            // the freezer alone
                            j.stop();
                        } else {
                            j.signal(Signal::SIGTSTP);
                            j.stop_at = Some(Instant::now() + Duration::from_millis(grace_ms));
                        }
                    }
                }
            }
            AgentCommand::Power { node, cap_w, busy } => self.power(&node, cap_w, busy),
            AgentCommand::Reconfigure { job, attempt, nodelist, nodes, cap_w, at, end } => {
                if let Some(j) = self.jobs.get_mut(&(job, attempt)) {
                    if j.exit.is_none() {
                        tracing::info!(job, attempt, nodes, cap_w, "reconfigure");
                        let line = format!("{at} {nodes} {cap_w} {nodelist} {end}\n");
                        if let Err(e) = append(&j.slot.config(), &line) {
                            tracing::warn!(file = %j.slot.config().display(), "recording a configuration: {e}");
                        }
                        // its acknowledgement is looked for from now on
                        if j.acks_read.is_none() {
                            j.acks_read = Some(std::fs::metadata(j.slot.config_ack()).map_or(0, |m| m.len()));
                        }
                        j.signal(Signal::SIGWINCH);
                    }
                }
            }
            AgentCommand::Resume { job, attempt, at } => {
                self.stop_steps(job, attempt, false);
                if let Some(j) = self.jobs.get_mut(&(job, attempt)) {
                    if let Some(since) = j.suspended_since.take() {
                        tracing::info!(job, attempt, "resume");
                        note_suspension(j, suspensions::Mark::Resume, at);
                        j.suspended_for += since.elapsed();
                        j.stop_at = None;
                        j.cont();
                    }
                }
            }
        }
    }

    /// Set a node's cap (the reading that follows reports a cap the node
    /// could not take, and the controller drains the node).
    fn power(&mut self, node: &str, cap_w: f64, busy: bool) {
        if !self.cfg.nodes.iter().any(|n| n.name == node) {
            tracing::warn!(node, cap_w, "a cap for a node this agent does not present: ignored");
            return;
        }
        let d = self.power.get_or_missing(node, "no power domain: the node is not emulated and has no RAPL package zone under powercap");
        match d.set(cap_w, busy) {
            Ok(w) => tracing::debug!(node, cap_w = w, busy, "cap set"),
            Err(e) => {
                tracing::warn!(node, cap_w, "cannot set the cap: {e}");
                d.set_busy(busy);
                d.error = Some(e);
            }
        }
        if let Err(e) = self.power.save() {
            tracing::warn!("keeping the caps in power.json: {e}");
        }
        self.power_changed = true;
    }

    fn launch(&mut self, l: &Launch) {
        let key = (l.job, l.attempt);
        if self.jobs.contains_key(&key) {
            return;
        }
        let owner = launch::runs_as(l);
        let slot = self.spool.take(owner, &self.cfg.state_dir);
        let mut info = RunInfo { start: unix_now(), limit_s: l.limit_s, grace_s: l.kill_grace_s, cgroup: false, node: String::new(), cpus: Vec::new(), gpus: Vec::new(), tstp: l.suspend_tstp, task: None, cg_name: String::new(), oom_base: 0 };
        let mut l = l.clone();
        let confined = self.confine(&mut l, &mut info, slot.n);
        // a struct of plain fields: its JSON cannot fail
        let run = serde_json::to_string(&info).expect("serializes");
        let r = match &confined {
            Ok((_, enter)) => self.launcher.spawn(&slot, &run, &l, enter),
            Err(e) => Err(launch::SpawnError { failure: LaunchFailure { stage: LaunchStage::Cgroup, errno: e.raw_os_error().unwrap_or(libc::EIO) }, message: format!("the job's cgroup: {e}") }),
        };
        let mut job = Job::new(slot, owner, info, true);
        if confined.is_err() {
            let _ = job.slot.begin(l.job, l.attempt, &run);
        }
        job.cg = confined.ok().and_then(|(cg, _)| cg);
        match r {
            Ok(p) => {
                tracing::debug!(job = l.job, attempt = l.attempt, pid = p.pgid, "launched");
                job.pids = Some(p);
                self.hold(&job.info, 1);
                job.counted = true;
            }
            Err(e) => {
                tracing::warn!(job = l.job, attempt = l.attempt, "cannot start the job: {e}");
                // recorded like any end, so a restart reports it too
                let _ = job.slot.append_exit(l.job, l.attempt, 1, -1, unix_now(), Some(e.failure));
                if let Some(x) = ended(l.job, l.attempt, &job) {
                    job.settle(x);
                }
            }
        }
        self.jobs.insert(key, job);
    }

    /// Make the cgroup `l` runs in on its first node, with what it holds
    /// there: the least-used host cpus (a real node), its memory, a ceiling
    /// on its processes, its GPUs' device files only; the GPUs' variables
    /// set to match. Returns the cgroup and the files its first process
    /// writes itself into (none when the agent does not confine jobs).
    fn confine(&mut self, l: &mut Launch, info: &mut RunInfo, slot: u32) -> std::io::Result<(Option<JobGroup>, Vec<PathBuf>)> {
        let cg = self.confine_job(l.job, l.attempt, l.shares.first().cloned(), &mut l.env, info, Some(slot))?;
        let Some(cg) = cg else { return Ok((None, Vec::new())) };
        match cg.enter_batch() {
            Ok(enter) => Ok((Some(cg), enter)),
            Err(e) => {
                cg.remove();
                info.cgroup = false;
                Err(e)
            }
        }
    }

    /// Make the cgroup of run `attempt` of `job` on the node of `share`
    /// (its first node's when none), with what it holds there: the
    /// least-used host cpus (a real node), its memory, a ceiling on its
    /// processes, its GPUs' device files only; the GPUs' variables set in
    /// `env` to match, its cpus and GPUs in `info`. None when the agent does
    /// not confine jobs.
    /// `slot`: the spool slot of its batch script, whose cgroup (v1) it
    /// reuses; None: a cgroup of its own.
    fn confine_job(&mut self, job: u64, attempt: u32, share: Option<tessera_proto::api::NodeShare>, env: &mut BTreeMap<String, String>, info: &mut RunInfo, slot: Option<u32>) -> std::io::Result<Option<JobGroup>> {
        let node = share.as_ref().map_or_else(|| self.cfg.nodes.first().map_or(String::new(), |n| n.name.clone()), |s| s.node.clone());
        let presented = self.cfg.nodes.iter().find(|n| n.name == node).cloned();
        let (cores, mem_mb, gpus) = match (&share, &presented) {
            (Some(s), _) => (s.cores, s.memory_mb, s.gpus),
            (None, Some(n)) => (n.cores, n.memory_mb, n.gpus),
            (None, None) => (1, 0, 0),
        };
        info.node = node.clone();
        // GPUs: the least-used of the node's, by index
        let node_gpus = presented.as_ref().map_or(0, |n| n.gpus);
        let mut by_use: Vec<u32> = (0..node_gpus).collect();
        by_use.sort_by_key(|g| (self.gpus_held.get(&(node.clone(), *g)).copied().unwrap_or(0), *g));
        info.gpus = by_use.into_iter().take(gpus as usize).collect();
        info.gpus.sort_unstable();
        let devices = self.cfg.cgroups.as_ref().is_some_and(|h| h.confinement(self.cfg.emulated, !self.cfg.gpu_devices.is_empty()).controls.contains(&tessera_proto::api::Control::Devices));
        if !info.gpus.is_empty() {
            // numbered from 0 where the cgroup hides the others (the GPU
            // runtimes number the devices they can open), else by index
            let ids: Vec<String> = if devices { (0..info.gpus.len()).map(|i| i.to_string()).collect() } else { info.gpus.iter().map(|g| g.to_string()).collect() };
            for var in ["CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL"] {
                env.insert(var.into(), ids.join(","));
            }
        }
        let Some(h) = &self.cfg.cgroups else { return Ok(None) };
        if !self.cfg.emulated {
            let pool = crate::cgroup::host_cpus();
            let mut by_use = pool.clone();
            by_use.sort_by_key(|c| (self.cpus_held.get(c).copied().unwrap_or(0), *c));
            info.cpus = by_use.into_iter().take((cores as usize).clamp(1, pool.len().max(1))).collect();
            info.cpus.sort_unstable();
        }
        let memory_mb = if mem_mb > 0 { mem_mb } else { presented.as_ref().map_or(0, |n| n.memory_mb) };
        let mut deny = Vec::new();
        if devices {
            for (i, dev) in self.cfg.gpu_devices.iter().enumerate() {
                if !info.gpus.contains(&(i as u32)) {
                    deny.push(crate::cgroup::device_numbers(dev)?);
                }
            }
        }
        let limits = Limits { cpus: (!self.cfg.emulated).then(|| info.cpus.clone()), memory_bytes: (memory_mb > 0).then_some(memory_mb << 20), pids_max: Some(pids_max(cores)), deny };
        let cg = slot.and_then(|n| h.slot(n)).unwrap_or_else(|| h.job(job, attempt));
        match cg.create(&limits) {
            Ok(()) => {
                info.cgroup = true;
                info.cg_name = cg.name();
                if cg.pooled {
                    info.oom_base = cg.reuse();
                }
                Ok(Some(cg))
            }
            Err(e) => {
                cg.remove();
                Err(e)
            }
        }
    }

    /// Count a job's cpus and GPUs as held (`by` 1) or given back (`by` -1).
    fn hold(&mut self, info: &RunInfo, by: i32) {
        for c in &info.cpus {
            let n = self.cpus_held.entry(*c).or_default();
            *n = n.saturating_add_signed(by);
        }
        for g in &info.gpus {
            let n = self.gpus_held.entry((info.node.clone(), *g)).or_default();
            *n = n.saturating_add_signed(by);
        }
        self.cpus_held.retain(|_, n| *n > 0);
        self.gpus_held.retain(|_, n| *n > 0);
    }

    fn reaped(&mut self, pid: i32) -> Result<()> {
        if pid < 0 {
            anyhow::bail!("the launcher (pid {}) died: the agent stops (its jobs run on, and a restarted agent re-adopts them)", self.launcher.pid);
        }
        for (&(job, attempt), j) in self.jobs.iter_mut() {
            if j.ours && j.exit.is_none() && j.draining.is_none() && j.pids.is_some_and(|p| p.shepherd == pid) {
                let x = ended(job, attempt, j).unwrap_or_else(|| lost(job, attempt, j));
                j.settle(x);
                return Ok(());
            }
        }
        self.task_reaped(pid);
        Ok(())
    }

    fn timers(&mut self) {
        self.step_timers();
        let now = Instant::now();
        let slack = self.cfg.limit_slack_s;
        for (&(job, attempt), j) in self.jobs.iter_mut() {
            if j.exit.is_some() {
                continue;
            }
            if let Some(x) = j.draining {
                // its first process ended: waiting for the rest to be gone
                j.settle(x);
                continue;
            }
            if let Some(read) = j.acks_read {
                // a whole new line acknowledges the latest configuration
                if acknowledged(&j.slot.config_ack(), read) {
                    tracing::info!(job, attempt, "the job acknowledged its configuration");
                    j.acks_read = None;
                    self.resized.push((job, attempt));
                }
            }
            if !j.ours {
                // adopted: its shepherd is not our child; look for its exit file
                let mut x = ended(job, attempt, j);
                if x.is_none() && j.pids.is_none_or(|p| !alive(p.shepherd)) {
                    // gone: its exit file may have landed since the read above
                    x = Some(ended(job, attempt, j).unwrap_or_else(|| lost(job, attempt, j)));
                }
                if let Some(x) = x {
                    j.settle(x);
                    continue;
                }
            }
            if j.stop_at.is_some_and(|t| t <= now) {
                j.stop_at = None;
                j.stop();
            }
            if j.kill_at.is_some_and(|t| t <= now) {
                j.kill_at = None;
                tracing::info!(job, attempt, "grace period over: SIGKILL");
                match &j.cg {
                    Some(cg) => cg.kill(),
                    None => j.signal(Signal::SIGKILL),
                }
            }
            if let (Some(limit), None, None) = (j.info.limit_s, j.suspended_since, j.kill_at) {
                let ran = now.duration_since(j.started).saturating_sub(j.suspended_for);
                if !j.limit_hit && ran >= Duration::from_secs(limit.max(0) as u64 + slack) {
                    tracing::info!(job, attempt, limit, "time limit reached: SIGTERM");
                    j.limit_hit = true;
                    let grace = j.info.grace_s;
                    terminate(j, grace);
                }
            }
        }
    }
}

fn terminate(j: &mut Job, grace_s: u64) {
    if j.exit.is_some() || j.draining.is_some() || j.kill_at.is_some() {
        return;
    }
    j.signal(Signal::SIGTERM);
    if j.suspended_since.is_some() {
        j.cont();
    }
    j.kill_at = Some(Instant::now() + Duration::from_secs(grace_s));
}

/// Record the controller's instant of a suspension or resumption in the job's
/// suspension record, before the job is signalled.
fn note_suspension(j: &Job, mark: suspensions::Mark, at: Option<i64>) {
    let Some(at) = at else { return };
    if let Err(e) = suspensions::append(&j.slot.suspensions(), mark, at) {
        tracing::warn!(file = %j.slot.suspensions().display(), "recording a suspension: {e}");
    }
}

fn alive(pid: i32) -> bool {
    nix::sys::signal::kill(Pid::from_raw(pid), None).is_ok()
}

fn ended(job: u64, attempt: u32, j: &Job) -> Option<JobExit> {
    let r = j.slot.read();
    let x = r.exit?;
    Some(JobExit { job, attempt, code: x.code, signal: x.signal, cpu_s: x.cpu_s, start: j.info.start, end: x.end, limit_hit: j.limit_hit, failure: r.failure, usage: None })
}

/// A job whose shepherd vanished without writing how it ended.
fn lost(job: u64, attempt: u32, j: &Job) -> JobExit {
    tracing::warn!(job, attempt, "the job's shepherd is gone without an exit record");
    let _ = j.slot.append_exit(job, attempt, -1, 9, unix_now(), None);
    JobExit { job, attempt, code: None, signal: Some(9), cpu_s: 0.0, start: j.info.start, end: unix_now(), limit_hit: j.limit_hit, failure: None, usage: None }
}

async fn poll_loop(cfg: AgentConfig, mut session: watch::Receiver<u64>, tx: mpsc::UnboundedSender<Inbox>) {
    let mut client = Client::new(cfg.target.clone(), Some(cfg.token.clone()));
    loop {
        let s = *session.borrow_and_update();
        let msg = AgentMessage { agent: cfg.name.clone(), session: s, ended: Vec::new(), power: Vec::new(), resized: Vec::new(), steps: Vec::new() };
        match client.call::<_, PollReply>(Method::POST, "/v1/agent/poll", Some(&msg)).await {
            Ok(r) => {
                if !r.commands.is_empty() && tx.send(Inbox::Commands(r.commands)).is_err() {
                    return;
                }
            }
            Err(ClientError::Api { status: 409, .. }) => {
                if tx.send(Inbox::Reregister).is_err() {
                    return;
                }
                if session.changed().await.is_err() {
                    return;
                }
            }
            Err(e) => {
                tracing::debug!(agent = %cfg.name, "poll failed: {e}");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

/// Tell the loop which shepherds ended, as the launcher reports them; -1 once
/// the launcher is gone.
fn reaper(mut ended: std::os::unix::net::UnixStream, tx: mpsc::UnboundedSender<i32>) {
    use std::io::Read;
    let mut b = [0u8; 4];
    loop {
        if ended.read_exact(&mut b).is_err() {
            let _ = tx.send(-1);
            return;
        }
        if tx.send(i32::from_le_bytes(b)).is_err() {
            return;
        }
    }
}

/// Detected resources of this machine: (cores, memory MiB, GPUs).
pub fn detect() -> (u32, u64, u32) {
    let cores = std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1);
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| t.lines().find(|l| l.starts_with("MemTotal:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok()))
        .map_or(0, |kb| kb / 1024);
    let gpus = std::fs::read_dir("/dev")
        .map(|d| d.filter_map(|e| e.ok()).filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with("nvidia") && n[6..].parse::<u32>().is_ok())).count() as u32)
        .unwrap_or(0);
    (cores, mem, gpus)
}

pub fn state_dir_for(base: &Path, name: &str) -> PathBuf {
    base.join("agents").join(name)
}

/// Append a line to a job's record file (which its launch created).
fn append(path: &Path, line: &str) -> std::io::Result<()> {
    use std::io::Write;
    std::fs::OpenOptions::new().append(true).open(path)?.write_all(line.as_bytes())
}

/// Whether the job's acknowledgements hold a whole line past byte `from` (at
/// most 4 KiB are read: the job writes the file).
fn acknowledged(path: &Path, from: u64) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else { return false };
    let mut buf = [0u8; 4096];
    let n = f.seek(SeekFrom::Start(from)).and_then(|_| f.read(&mut buf)).unwrap_or(0);
    buf[..n].contains(&b'\n')
}
