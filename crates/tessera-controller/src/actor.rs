//! The one owner of the controller's state. Messages arrive on a channel; the
//! actor takes every message waiting (up to [`MAX_BATCH`]), admits or refuses
//! each (validation, permissions), writes the admitted events to the journal in
//! one transaction, applies them and a scheduling pass to the state, carries out
//! the actions (agents' commands, accounting records) and only then replies.
//! Between messages it sleeps until the engine's wake-up, an agent's poll
//! expiring or the next heartbeat check.

use tessera_proto::unix_now;
use crate::auth::{Identity, Role};
use crate::journal::Journal;
use crate::metrics::Metrics;
pub use crate::admission::JobOp;
use crate::state::{Action, Event, State};
use crate::{ApiError, Config};
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};
use tessera_accounting::store::{NodeRecord, RunInfo, RunKind, Store};
use tessera_core::{Cluster, Engine, JobId, JobState, NodeChange};
use tessera_proto::api::*;
use tokio::sync::oneshot;

/// Most messages taken into one batch (one journal transaction).
pub const MAX_BATCH: usize = 8192;
/// Longest an agent's poll is held open without commands.
pub const POLL_HOLD: Duration = Duration::from_secs(5);
/// Journal entries between snapshots.
pub const SNAPSHOT_EVERY: u64 = 20_000;

pub type Reply<T> = oneshot::Sender<Result<T, ApiError>>;

/// What handlers ask of the actor.
pub enum Msg {
    Submit { who: Identity, req: SubmitRequest, reply: Reply<SubmitReply> },
    JobOp { who: Identity, job: JobRef, op: JobOp, reply: Reply<JobInfo> },
    NodeOp { who: Identity, node: String, change: NodeChange, reason: String, reply: Reply<NodeInfo> },
    Jobs { reply: Reply<Vec<JobInfo>> },
    Job { id: JobRef, reply: Reply<JobInfo> },
    Script { who: Identity, id: JobRef, reply: Reply<JobScript> },
    Nodes { reply: Reply<Vec<NodeInfo>> },
    Register { who: Identity, req: RegisterRequest, reply: Reply<RegisterReply> },
    Poll { who: Identity, msg: AgentMessage, reply: Reply<PollReply> },
    Report { who: Identity, msg: AgentMessage, reply: Reply<()> },
    Metrics { reply: Reply<String> },
    Cluster { reply: Reply<ClusterInfo> },
    Reconfigure { who: Identity, req: ReconfigureRequest, reply: Reply<ReconfigureReply> },
    SetBudget { who: Identity, req: BudgetRequest, reply: Reply<BudgetReply> },
    Reserve { who: Identity, req: tessera_core::ResvRequest, reply: Reply<ReservationInfo> },
    Unreserve { who: Identity, name: String, reply: Reply<()> },
    Reservations { reply: Reply<Vec<ReservationInfo>> },
    Shares { reply: Reply<Vec<ShareRow>> },
    Accounts { reply: Reply<tessera_core::share::Accounts> },
    ChangeAccounts { who: Identity, words: Vec<String>, reply: Reply<()> },
    Priorities { reply: Reply<Vec<PrioRow>> },
    Dashboard { reply: Reply<tessera_report::dashboard::Dashboard> },
    Step { who: Identity, job: JobRef, req: StepRequest, reply: Reply<StepInfo> },
    StepInfo { job: JobRef, step: u32, reply: Reply<StepInfo> },
    StepSignal { who: Identity, job: JobRef, step: u32, signal: i32, reply: Reply<StepInfo> },
    End { who: Identity, job: JobRef, code: i32, reply: Reply<JobInfo> },
    Shutdown,
}

/// Replies sent once the batch is durable and applied.
enum After {
    Submit(Reply<SubmitReply>, Vec<u64>),
    Job(Reply<JobInfo>, u64),
    Node(Reply<NodeInfo>, u32),
    /// (reply, agent, its jobs, every node it presents, those ignored)
    Register(Reply<RegisterReply>, String, Vec<AgentJob>, Vec<(u64, u32, u32)>, Vec<String>, Vec<String>),
    Reconfigure(Reply<ReconfigureReply>, Vec<String>, Vec<String>, Vec<String>),
    Poll(Reply<PollReply>, String),
    Ack(Reply<()>),
    Budget(Reply<BudgetReply>, Option<f64>),
    Resv(Reply<ReservationInfo>, String),
    Step(Reply<StepInfo>, u64, u32),
}

struct Session {
    id: u64,
    /// Every node the agent presented, known to the cluster or not.
    presented: Vec<String>,
    last_seen: Instant,
    outbox: Vec<AgentCommand>,
    parked: Option<(Reply<PollReply>, Instant)>,
}

pub struct Actor {
    cfg: Config,
    cluster: Cluster,
    cluster_info: ClusterInfo,
    state: State,
    journal: Journal,
    store: Store,
    run_id: i64,
    /// The run's nodes in the accounting store, by node id (every node the
    /// run has had), and each cluster node's id there.
    node_records: Vec<NodeRecord>,
    acct_ids: Vec<u32>,
    node_index: BTreeMap<String, u32>,
    agents: BTreeMap<String, Session>,
    /// Agents the state names that have not registered since this start, and
    /// when they are declared lost.
    awaited: BTreeMap<String, Instant>,
    sessions: u64,
    /// When the pass that batches of the gathering window left undone is due.
    pass_after: Option<Instant>,
    pub metrics: Metrics,
    euid: u32,
    /// Each node's latest power reading from its agent, and when it came.
    power: Vec<Option<(NodePowerReading, Instant)>>,
    /// Since when the measured power has been over the budget.
    over_since: Option<Instant>,
    /// Each node's confinement of its jobs, as its agent last registered it.
    confinement: BTreeMap<u32, tessera_proto::api::Confinement>,
}


/// A cluster file's accounts, QOS and priority settings: its own tables, or
/// the accounts file it names (relative to it).
pub fn sharing_of(toml: &str, path: &str, cluster: &Cluster) -> Result<Option<tessera_core::share::SharingConfig>> {
    let dir = std::path::Path::new(path).parent().map(std::path::Path::to_path_buf).unwrap_or_default();
    Ok(tessera_core::share::SharingConfig::of_cluster(toml, path, cluster.accounts_file.as_deref(), |f| {
        let p = dir.join(f);
        std::fs::read_to_string(&p).map(|t| (t, p.display().to_string())).map_err(|e| format!("reading accounts file {}: {e}", p.display()))
    })?)
}

impl Actor {
    /// Open the state directory: create it on first start, else restore the
    /// snapshot and replay the journal (writing any accounting record the crash
    /// kept from the store).
    pub fn open(cfg: Config) -> Result<Actor> {
        std::fs::create_dir_all(&cfg.state_dir).with_context(|| format!("creating state directory {}", cfg.state_dir.display()))?;
        let journal = Journal::open(&cfg.db_path())?;
        let (created_toml, created_path, policy, created) = match journal.setting("cluster")? {
            Some(text) => {
                let path = journal.setting("cluster_path")?.unwrap_or_default();
                let policy = journal.setting("policy")?.unwrap_or_else(|| "easy".into());
                let created: i64 = journal.setting("created")?.and_then(|v| v.parse().ok()).unwrap_or(0);
                (text, path, policy, created)
            }
            None => {
                let now = unix_now();
                journal.set_setting("cluster", &cfg.cluster_toml)?;
                journal.set_setting("cluster_path", &cfg.cluster_path)?;
                journal.set_setting("policy", cfg.policy.name())?;
                journal.set_setting("created", &now.to_string())?;
                (cfg.cluster_toml.clone(), cfg.cluster_path.clone(), cfg.policy.name().to_string(), now)
            }
        };
        let rec = journal.recover()?;
        // the cluster of the snapshot: the one created with, or the last applied
        let (toml, path) = rec.snapshot.as_ref().and_then(|(_, s)| s.ledger.cluster_file.clone()).unwrap_or((created_toml, created_path));
        let mut cluster = Cluster::from_toml(&toml, &path).map_err(|e| anyhow::anyhow!("{e}"))?;
        let policy: tessera_core::PolicyKind = policy.parse().map_err(|e| anyhow::anyhow!("{e}"))?;
        // PARM's settings, as the state directory was created with
        let parm = match journal.setting("parm")? {
            Some(text) => serde_json::from_str(&text).with_context(|| format!("{}: the setting `parm`", cfg.db_path().display()))?,
            None => {
                let p = cfg.parm.clone().unwrap_or_else(crate::parm_defaults);
                if policy == tessera_core::PolicyKind::Parm {
                    journal.set_setting("parm", &serde_json::to_string(&p)?)?;
                }
                p
            }
        };
        let mut store = Store::open(&cfg.accounting_path())?;
        let run = RunInfo {
            kind: RunKind::Live,
            label: cfg.state_dir.canonicalize().unwrap_or(cfg.state_dir.clone()).display().to_string(),
            site: cfg.site.clone(),
            cluster: cluster.name.clone(),
            policy: policy.name().to_string(),
            epoch_offset: 0,
            recorded_at: created,
        };
        let run_id = store.live_run(&run, &NodeRecord::from_cluster(&cluster))?;
        // accounts, QOS and priority settings, as the state directory was
        // created with (its cluster file's, or the accounts file it named)
        let sharing: Option<(tessera_core::share::Accounts, tessera_core::share::PriorityConfig)> = match journal.setting("sharing")? {
            Some(text) => serde_json::from_str(&text).with_context(|| format!("{}: the setting `sharing`", cfg.db_path().display()))?,
            None => {
                let s = sharing_of(&toml, &path, &cluster)?.map(|c| (c.accounts, c.priority));
                journal.set_setting("sharing", &serde_json::to_string(&s)?)?;
                s
            }
        };
        let mut state = match rec.snapshot {
            Some((_, s)) => s,
            None => {
                let engine = match policy {
                    tessera_core::PolicyKind::Parm => {
                        if sharing.is_some() {
                            anyhow::bail!("{path}: accounts and multifactor priority order a queue; policy parm decides its own order");
                        }
                        let info = cluster.power_machine().map_err(|e| anyhow::anyhow!("policy parm: {e}"))?;
                        Engine::parm(info.machine, parm)
                    }
                    _ => {
                        let e = Engine::with_cluster(policy, &cluster).map_err(|e| anyhow::anyhow!("{e}"))?;
                        match &sharing {
                            Some((a, p)) => e.with_sharing(a.clone(), *p, &cluster).map_err(|e| anyhow::anyhow!("{e}"))?,
                            None => e,
                        }
                    }
                };
                State::new(engine, &cluster, created, cfg.kill_grace_s)
            }
        };
        // the store's nodes as of the snapshot (a crash may have come between a
        // reconfigure's journal entry and the snapshot after it)
        let (mut acct_ids, mut node_records) = store.live_nodes(run_id, &NodeRecord::from_cluster(&cluster), state.ledger.now)?;
        let mut records = Vec::new();
        let mut actions = Vec::new();
        let replayed = rec.entries.len();
        for (_, now, events) in rec.entries {
            actions.clear();
            state.apply(&mut cluster, now, &events, &mut actions);
            if events.iter().any(|e| matches!(e, Event::Reconfigure { .. })) {
                (acct_ids, node_records) = store.live_nodes(run_id, &NodeRecord::from_cluster(&cluster), now)?;
            }
            records.extend(actions.drain(..).filter_map(|a| match a {
                Action::Record(r) => Some(by_node_id(*r, &acct_ids)),
                _ => None,
            }));
        }
        let written = store.append_jobs(run_id, &node_records, &records)?;
        let (toml, path) = state.ledger.cluster_file.clone().unwrap_or((toml, path));
        if toml != cfg.cluster_toml && !cfg.cluster_toml.is_empty() {
            tracing::warn!(state = %cfg.state_dir.display(), "the state directory runs cluster {path}; it is kept (the one given now is ignored; `tessera cluster reconfigure` applies a changed file)");
        }
        let (cluster_info, node_index) = derived(&cluster, policy.name(), toml, path);
        let grace = Instant::now() + Duration::from_secs(cfg.heartbeat_timeout_s);
        let awaited = state.ledger.node_agent.iter().flatten().map(|a| (a.clone(), grace)).collect();
        tracing::info!(state = %cfg.state_dir.display(), replayed, jobs = state.ledger.jobs.len(), recovered_records = written, "controller state opened");
        let mut actor = Actor {
            cfg,
            cluster,
            cluster_info,
            state,
            journal,
            store,
            run_id,
            node_records,
            acct_ids,
            node_index,
            agents: BTreeMap::new(),
            awaited,
            sessions: (unix_now() as u64) << 20,
            pass_after: None,
            metrics: Metrics::default(),
            euid: nix::unistd::geteuid().as_raw(),
            power: Vec::new(),
            over_since: None,
            confinement: BTreeMap::new(),
        };
        if replayed > 0 {
            actor.snapshot()?;
        }
        Ok(actor)
    }

    /// Whether `uid` is an operator over the Unix socket.
    pub fn is_operator_uid(euid: u32, operators: &[u32], uid: u32) -> bool {
        uid == 0 || uid == euid || operators.contains(&uid)
    }

    pub fn euid(&self) -> u32 {
        self.euid
    }

    /// Run until [`Msg::Shutdown`] or every sender is gone.
    pub fn run(mut self, rx: Receiver<Msg>) -> Result<()> {
        let max = self.cfg.max_batch.clamp(1, MAX_BATCH);
        let mut batch = Vec::with_capacity(max);
        loop {
            let timeout = self.next_deadline().saturating_duration_since(Instant::now());
            match rx.recv_timeout(timeout) {
                Ok(m) => batch.push(m),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            while batch.len() < max {
                match rx.try_recv() {
                    Ok(m) => batch.push(m),
                    Err(_) => break,
                }
            }
            let stop = batch.iter().any(|m| matches!(m, Msg::Shutdown));
            self.step(&mut batch)?;
            if stop {
                break;
            }
        }
        self.snapshot()
    }

    /// The gathering window at the start of each second, in seconds.
    fn coalesce_s(&self) -> f64 {
        self.cfg.coalesce_ms as f64 / 1000.0
    }

    /// The end of the gathering window, if now is inside it (the window at
    /// the start of each second). Jobs that end together (as a trace's do, on
    /// the second) reach the controller a few milliseconds apart, and a client
    /// submits a second's jobs one after the other: every batch of the window
    /// is journaled, applied and answered at once, but without a pass
    /// ([`Event::PassLater`]); the second's pass is made when the window ends,
    /// so it sees them all, as in the simulator. (Holding the batches until
    /// the window's end instead let a client that waits for each answer
    /// submit one job per window: the next ones came after the pass.)
    fn gathering(&self) -> Option<Instant> {
        let w = self.coalesce_s();
        let into = tessera_proto::unix_now_f64().fract();
        (into < w).then(|| Instant::now() + Duration::from_secs_f64(w - into))
    }

    /// Snapshot the state (dropping the journal before it), once every
    /// accounting record it implies is durable.
    fn snapshot(&mut self) -> Result<()> {
        self.store.checkpoint().context("syncing the accounting store")?;
        self.journal.snapshot(&self.state).context("writing a snapshot")?;
        Ok(())
    }

    fn next_deadline(&self) -> Instant {
        let now = Instant::now();
        let mut d = now + Duration::from_secs(1);
        if let Some(w) = self.state.wake() {
            // at the start of wall-clock second `w` (the engine's clock is the
            // whole Unix second), not a whole number of seconds from now
            // (and the coalescing window after it, for that second's ends)
            let at = w as f64 + self.coalesce_s();
            let wait = (at - tessera_proto::unix_now_f64()).clamp(0.0, 86_400.0);
            d = d.min(now + Duration::from_secs_f64(wait));
        }
        for s in self.agents.values() {
            if let Some((_, t)) = &s.parked {
                d = d.min(*t);
            }
        }
        if let Some(t) = self.pass_after {
            d = d.min(t);
        }
        d
    }

    /// One batch: admit, journal, apply, act, reply.
    fn step(&mut self, batch: &mut Vec<Msg>) -> Result<()> {
        // a reconfigure is admitted on the state as it stands and journaled
        // alone: what comes after it is admitted on the new cluster
        loop {
            let rest = match batch.iter().position(|m| matches!(m, Msg::Reconfigure { .. })) {
                Some(0) => batch.split_off(1),
                Some(i) => batch.split_off(i),
                None => Vec::new(),
            };
            self.step_one(batch)?;
            if rest.is_empty() {
                return Ok(());
            }
            *batch = rest;
        }
    }

    fn step_one(&mut self, batch: &mut Vec<Msg>) -> Result<()> {
        let mut events = Vec::new();
        let mut after = Vec::new();
        let mut next_id = self.state.ledger.next_id;
        for m in batch.drain(..) {
            self.admit(m, &mut events, &mut after, &mut next_id);
        }
        let reconfigure = events.iter().any(|e| matches!(e, Event::Reconfigure { .. }));
        if !reconfigure {
            self.check_heartbeats(&mut events);
        }
        let now = unix_now().max(self.state.ledger.now);
        let due = self.state.wake().is_some_and(|w| w <= now) || self.pass_after.is_some_and(|t| t <= Instant::now());
        let window = if reconfigure { None } else { self.gathering() };
        if events.is_empty() && due && window.is_some() {
            // a wake-up inside the window: the pass comes at its end
            self.pass_after = window;
        } else if !events.is_empty() || due {
            if let Some(end) = window {
                events.push(Event::PassLater);
                self.pass_after = Some(end);
            } else {
                self.pass_after = None;
            }
            self.commit(now, &events)?;
            if reconfigure {
                self.reconfigured(now)?;
            }
            if self.journal.since_snapshot >= SNAPSHOT_EVERY {
                self.snapshot()?;
            }
        }
        for a in after {
            self.answer(a);
        }
        self.flush_polls(false);
        Ok(())
    }

    /// Journal a batch (durable before anyone hears of it: a failed write
    /// stops the controller), apply it and carry out its actions.
    fn commit(&mut self, now: i64, events: &[Event]) -> Result<()> {
        let t0 = Instant::now();
        let seq = self.journal.append(now, events).context("writing the journal")?;
        crate::failstop::injected_panic(seq);
        let t1 = Instant::now();
        let mut actions = Vec::new();
        self.state.apply(&mut self.cluster, now, events, &mut actions);
        let took = t1.elapsed();
        self.metrics.batch(t1 - t0, took);
        self.act(actions)?;
        // PARM's decision took `took`: with --charge-solve-time, journaled
        // and charged to the jobs it started or reconfigured (they hear of
        // their later end), as the simulator's does; a restart replays it
        if self.state.engine().as_parm().is_some_and(|m| m.config().charge_solve_time && m.decided()) && !events.iter().any(|e| matches!(e, Event::DecisionTime { .. })) {
            let micros = took.as_micros().max(1) as u64;
            return self.commit(now, &[Event::DecisionTime { micros }, Event::PassLater]);
        }
        Ok(())
    }

    /// After a changed cluster file was applied: what the actor derives from
    /// the cluster follows, the accounting store learns the nodes, agents
    /// presenting nodes the cluster now has bring them up, and a snapshot
    /// records the new cluster.
    fn reconfigured(&mut self, now: i64) -> Result<()> {
        // (a file the state refused leaves the cluster and its file as they were)
        let (toml, path) = self.state.ledger.cluster_file.clone().unwrap_or_else(|| (self.cluster_info.toml.clone(), self.cluster_info.path.clone()));
        (self.cluster_info, self.node_index) = derived(&self.cluster, &self.cluster_info.policy, toml, path);
        (self.acct_ids, self.node_records) = self.store.live_nodes(self.run_id, &NodeRecord::from_cluster(&self.cluster), now)?;
        let mut ups = Vec::new();
        for (agent, s) in &self.agents {
            let nodes: Vec<u32> = s.presented.iter().filter_map(|n| self.node_index.get(n).copied()).filter(|&i| self.state.ledger.node_agent[i as usize].is_none()).collect();
            if !nodes.is_empty() {
                tracing::info!(agent = %agent, nodes = nodes.len(), "the agent presents nodes the changed cluster adds");
                ups.push(Event::AgentUp { agent: agent.clone(), nodes });
            }
        }
        if !ups.is_empty() {
            self.commit(now, &ups)?;
        }
        self.snapshot()
    }

    fn admit(&mut self, m: Msg, events: &mut Vec<Event>, after: &mut Vec<After>, next_id: &mut u64) {
        match m {
            Msg::Shutdown => {}
            Msg::Submit { who, req, reply } => match self.state.seen(&self.cluster, self.cfg.default_limit_s, &who, &req, events) {
                Err(e) => drop(reply.send(Err(e))),
                Ok(Some(ids)) => {
                    tracing::info!(user = %who.user, jobs = ?ids, "a submission sent again: the jobs its key created");
                    after.push(After::Submit(reply, ids));
                }
                Ok(None) => match self.state.admit_submit(&self.cluster, self.cfg.default_limit_s, &who, &req, *next_id) {
                    Ok(ev) => {
                        let Event::Submit { first, req: r, .. } = &ev else { unreachable!() };
                        let n = r.array.as_ref().map_or(1, |a| a.indices.len() as u64);
                        let ids = (*first..*first + n).collect();
                        *next_id += n;
                        self.metrics.submitted += n;
                        events.push(ev);
                        after.push(After::Submit(reply, ids));
                    }
                    Err(e) => drop(reply.send(Err(e))),
                },
            },
            Msg::Step { who, job, req, reply } => match self.state.resolve(job).and_then(|job| Ok((job, self.state.admit_step(&who, job, &req, events)?))) {
                Ok((job, ev)) => {
                    let Event::StepStart(b) = &ev else { unreachable!() };
                    after.push(After::Step(reply, job, b.2.id));
                    events.push(ev);
                }
                Err(e) => drop(reply.send(Err(e))),
            },
            Msg::StepInfo { job, step, reply } => {
                let _ = reply.send(self.state.resolve(job).and_then(|job| self.state.step_info(&self.cluster, job, step).ok_or_else(|| ApiError::new(404, format!("job {job} has no step {step}")))));
            }
            Msg::End { who, job, code, reply } => match self.state.resolve(job).and_then(|job| Ok((job, self.state.admit_end(&who, job, code)?))) {
                Ok((job, ev)) => {
                    events.push(ev);
                    after.push(After::Job(reply, job));
                }
                Err(e) => drop(reply.send(Err(e))),
            },
            Msg::StepSignal { who, job, step, signal, reply } => match self.state.resolve(job).and_then(|job| Ok((job, self.state.admit_step_signal(&who, job, step, signal)?))) {
                Ok((job, ev)) => {
                    events.push(ev);
                    after.push(After::Step(reply, job, step));
                }
                Err(e) => drop(reply.send(Err(e))),
            },
            Msg::JobOp { who, job, op, reply } => match self.state.resolve(job).and_then(|job| Ok((job, self.state.admit_op(&who, job, op)?))) {
                Ok((job, ev)) => {
                    events.push(ev);
                    after.push(After::Job(reply, job));
                }
                Err(e) => drop(reply.send(Err(e))),
            },
            Msg::NodeOp { who, node, change, reason, reply } => {
                if who.role != Role::Operator {
                    let _ = reply.send(Err(ApiError::new(403, format!("{} is not an operator: only operators change nodes", who.user))));
                    return;
                }
                match self.node_index.get(&node) {
                    Some(&n) => {
                        let reason = if reason.is_empty() { format!("set {} by {}", change_name(change), who.user) } else { reason };
                        events.push(Event::Node { node: n, change, reason });
                        after.push(After::Node(reply, n));
                    }
                    None => drop(reply.send(Err(ApiError::new(404, format!("no node {node} in cluster {}", self.cluster.name))))),
                }
            }
            Msg::Jobs { reply } => {
                let ids = self.state.live_ids();
                let mut v: Vec<JobInfo> = ids.into_iter().filter_map(|id| self.state.job_info(&self.cluster, id)).collect();
                v.extend(self.state.ledger.done.values().map(|d| d.info.clone()));
                let _ = reply.send(Ok(v));
            }
            Msg::Job { id, reply } => {
                let _ = reply.send(self.state.resolve(id).and_then(|id| self.state.job_info(&self.cluster, id).ok_or_else(|| ApiError::new(404, format!("no job {id} (finished jobs are in tessera acct)")))));
            }
            Msg::Script { who, id, reply } => {
                let _ = reply.send(self.state.resolve(id).and_then(|id| self.state.script(&who, id)));
            }
            Msg::Nodes { reply } => {
                let used = self.node_usage();
                let v = (0..self.cluster.nodes.len() as u32).map(|n| self.node_info(n, used[n as usize])).collect();
                let _ = reply.send(Ok(v));
            }
            Msg::Dashboard { reply } => {
                let d = self.dashboard();
                let _ = reply.send(Ok(d));
            }
            Msg::Cluster { reply } => drop(reply.send(Ok(self.cluster_info.clone()))),
            Msg::SetBudget { who, req, reply } => {
                if who.role != Role::Operator {
                    let _ = reply.send(Err(ApiError::new(403, format!("{} is not an operator: only operators change the power budget", who.user))));
                    return;
                }
                // what the running jobs need does not depend on the budget: a
                // budget set earlier in this batch is only the one replaced
                match self.state.engine().can_set_budget(req.watts) {
                    Ok(()) => {
                        tracing::info!(user = %who.user, watts = req.watts, "the power budget changes");
                        let earlier = events.iter().rev().find_map(|e| if let Event::SetBudget { watts } = e { Some(*watts) } else { None });
                        let previous = earlier.or(self.state.budget_w(&self.cluster));
                        events.push(Event::SetBudget { watts: req.watts });
                        after.push(After::Budget(reply, previous));
                    }
                    Err(e @ tessera_core::Rejection::BudgetTooLow { .. }) => drop(reply.send(Err(ApiError::new(409, e.to_string())))),
                    Err(tessera_core::Rejection::Unsupported { .. }) => {
                        drop(reply.send(Err(ApiError::new(409, format!("cluster `{}` has no power budget (power_budget_w and a power model in its cluster file): there is none to change", self.cluster.name)))))
                    }
                    Err(e) => drop(reply.send(Err(ApiError::new(400, format!("field `watts`: {e}"))))),
                }
            }
            Msg::Reserve { who, req, reply } => match crate::resv::admit(&self.state, &self.cluster, &who, &req, unix_now().max(self.state.ledger.now)) {
                Ok((ev, name)) => {
                    after.push(After::Resv(reply, name));
                    events.push(ev);
                }
                Err(e) => drop(reply.send(Err(e))),
            },
            Msg::Unreserve { who, name, reply } => match crate::resv::admit_delete(self.state.engine(), &who, &name) {
                Ok(ev) => {
                    events.push(ev);
                    after.push(After::Ack(reply));
                }
                Err(e) => drop(reply.send(Err(e))),
            },
            Msg::Accounts { reply } => drop(reply.send(self.state.engine().shares().map(|v| v.accounts.clone()).ok_or_else(no_accounts))),
            Msg::ChangeAccounts { who, words, reply } => match crate::shares::admit_change(&self.state, &who, &words, unix_now().max(self.state.ledger.now)) {
                Ok(ev) => {
                    events.push(ev);
                    after.push(After::Ack(reply));
                }
                Err(e) => drop(reply.send(Err(e))),
            },
            Msg::Shares { reply } => drop(reply.send(crate::shares::shares(&self.state).ok_or_else(no_accounts))),
            Msg::Priorities { reply } => drop(reply.send(crate::shares::priorities(&self.state, &self.cluster).ok_or_else(no_accounts))),
            Msg::Reservations { reply } => {
                let now = unix_now();
                let v = self.state.engine().reservations().iter().map(|r| crate::resv::info(&self.cluster, r, now)).collect();
                let _ = reply.send(Ok(v));
            }
            Msg::Reconfigure { who, req, reply } => match self.admit_reconfigure(&who, &req) {
                Ok((ev, (added, removed, changed))) => {
                    events.push(ev);
                    after.push(After::Reconfigure(reply, added, removed, changed));
                }
                Err(e) => drop(reply.send(Err(e))),
            },
            Msg::Metrics { reply } => {
                let power = self.power_now();
                let text = self.metrics.render(&mut self.state, &self.cluster, self.agents.len(), power);
                let _ = reply.send(Ok(text));
            }
            Msg::Register { who, req, reply } => match self.admit_register(&who, &req) {
                Ok((nodes, ignored)) => {
                    events.push(Event::AgentUp { agent: req.agent.clone(), nodes });
                    self.power_readings(&req.agent, &req.power, events);
                    for j in &req.jobs {
                        if let AgentJob::Ended(x) = j {
                            self.ended(x, events);
                        }
                    }
                    events.extend(self.never_launched(&req));
                    let presented = req.nodes.iter().map(|n| n.name.clone()).collect();
                    events.extend(req.steps_ended.iter().map(|x| Event::StepEnded(Box::new(x.clone()))));
                    after.push(After::Register(reply, req.agent, req.jobs, req.steps, presented, ignored));
                }
                Err(e) => drop(reply.send(Err(e))),
            },
            Msg::Poll { who, msg, reply } => match self.session(&who, &msg) {
                Ok(()) => after.push(After::Poll(reply, msg.agent)),
                Err(e) => drop(reply.send(Err(e))),
            },
            Msg::Report { who, msg, reply } => match self.session(&who, &msg) {
                Ok(()) => {
                    self.power_readings(&msg.agent, &msg.power, events);
                    for &(job, attempt) in &msg.resized {
                        if self.state.awaits_resize(job, attempt) {
                            tracing::info!(job, attempt, "the job acknowledged its resize");
                            events.push(Event::Resized { job, attempt });
                        }
                    }
                    // every agent reports every 2 s: the power is summed once a second
                    if !msg.power.is_empty() && self.metrics.power_due() {
                        let (_, allocated, measured) = self.power_now();
                        self.metrics.power_sample(allocated, measured);
                        self.govern(events);
                    }
                    for x in &msg.ended {
                        self.ended(x, events);
                    }
                    events.extend(msg.steps.iter().map(|x| Event::StepEnded(Box::new(x.clone()))));
                    after.push(After::Ack(reply));
                }
                Err(e) => drop(reply.send(Err(e))),
            },
        }
    }

    /// A job's end, as its agent reports it; a job whose cgroup the node
    /// could not make drains the node (the node's fault, not the job's).
    fn ended(&self, x: &JobExit, events: &mut Vec<Event>) {
        events.push(Event::Ended(*x));
        if let Some(f) = x.failure.filter(|f| f.stage == tessera_proto::api::LaunchStage::Cgroup) {
            let node = self.state.ledger.jobs.get(&x.job).filter(|m| m.attempt == x.attempt).and_then(|m| m.nodes.first().copied());
            if let Some(n) = node.filter(|&n| !self.state.engine().node_status(n).is_some_and(|s| s.drain)) {
                let reason = f.describe("", "", "");
                tracing::warn!(node = %self.cluster.nodes[n as usize].name, "draining the node: {reason}");
                events.push(Event::Node { node: n, change: NodeChange::Drain, reason: format!("cgroup: {}", tessera_core::quote::clip(&reason, 300)) });
            }
        }
    }

    /// Keep an agent's power readings; a node whose cap cannot be set or
    /// whose power cannot be read is drained with the reason (its power then
    /// counts as its maximum: docs/live.md, "Power-aware scheduling").
    fn power_readings(&mut self, agent: &str, readings: &[NodePowerReading], events: &mut Vec<Event>) {
        self.power.resize(self.cluster.nodes.len(), None);
        for r in readings {
            let Some(&n) = self.node_index.get(&r.node) else { continue };
            if self.state.ledger.node_agent[n as usize].as_deref().is_some_and(|a| a != agent) {
                continue;
            }
            if let Some(why) = &r.error {
                let drained = self.state.engine().node_status(n).is_some_and(|s| s.drain);
                let asked = events.iter().any(|e| matches!(e, Event::Node { node, change: NodeChange::PowerFault, .. } if *node == n));
                if !drained && !asked {
                    tracing::warn!(node = %r.node, "power domain failed, draining the node: {why}");
                    events.push(Event::Node { node: n, change: NodeChange::PowerFault, reason: format!("power: {}", tessera_core::quote::clip(why, 300)) });
                }
            }
            self.power[n as usize] = Some((r.clone(), Instant::now()));
        }
    }

    /// The power governor (crate::governor): once the measured power has
    /// been over the budget for a whole report interval (a shorter excess is
    /// the agents' reports being taken at different instants), cut the caps
    /// of the most over-drawing jobs, and wait another interval for the
    /// nodes to report at their new caps.
    fn govern(&mut self, events: &mut Vec<Event>) {
        let (Some(budget_w), _, Some(measured_w)) = self.power_now() else { return };
        if measured_w <= budget_w + 1e-6 {
            self.over_since = None;
            return;
        }
        let since = *self.over_since.get_or_insert_with(Instant::now);
        if since.elapsed() < Duration::from_secs(tessera_proto::api::POWER_REPORT_S) {
            return;
        }
        self.over_since = None;
        let fresh = Duration::from_secs(3 * tessera_proto::api::POWER_REPORT_S);
        let engine = self.state.engine();
        let mut jobs = Vec::new();
        for m in self.state.ledger.jobs.values() {
            let (Some(cap_w), Some(_), Some(floor_w)) = (m.cap_w, m.start, engine.cap_floor(JobId(m.id))) else { continue };
            let Some(p) = m.nodes.first().and_then(|&n| self.cluster.node_types[self.cluster.nodes[n as usize].node_type].power.as_ref()) else { continue };
            let measured: f64 = m.nodes.iter().filter_map(|&n| self.power.get(n as usize)?.as_ref().filter(|(_, at)| at.elapsed() <= fresh).map(|(r, _)| r.watts)).sum();
            jobs.push(crate::governor::Drawing { job: m.id, attempt: m.attempt, cap_w, floor_w, levels: p.cap_levels_w.clone(), nodes: m.nodes.len() as u32, measured_w: measured, allocated_w: m.nodes.len() as f64 * p.busy_w(cap_w) });
        }
        for (job, attempt, cap_w) in crate::governor::cuts(budget_w, measured_w, &jobs) {
            tracing::warn!(job, cap_w, measured_w, budget_w, "measured power over the budget: the job's cap comes down");
            self.metrics.throttles += 1;
            events.push(Event::Throttle { job, attempt, cap_w });
        }
    }

    /// Power now, in watts: the budget (None: the cluster has none), what the
    /// scheduler allocated (running jobs' nodes at their caps, idle nodes at
    /// their idle power; a node whose domain failed at its maximum), and what
    /// the agents last measured or modelled (None: no node reports power).
    pub fn power_now(&self) -> (Option<f64>, f64, Option<f64>) {
        let fresh = Duration::from_secs(3 * tessera_proto::api::POWER_REPORT_S);
        let mut measured: Option<f64> = None;
        for (r, at) in self.power.iter().flatten() {
            if at.elapsed() <= fresh {
                *measured.get_or_insert(0.0) += r.watts;
            }
        }
        (self.state.budget_w(&self.cluster), crate::metrics::allocated_power_w(&self.state, &self.cluster), measured)
    }

    /// The nodes an agent registers, and those it presents that the cluster
    /// does not have (ignored, unless it has none of them).
    /// A changed cluster file, if an operator sends it and the state can move
    /// onto it (checked on a copy: the same step the journaled event replays).
    #[allow(clippy::type_complexity)]
    fn admit_reconfigure(&mut self, who: &Identity, req: &ReconfigureRequest) -> Result<(Event, (Vec<String>, Vec<String>, Vec<String>)), ApiError> {
        if who.role != Role::Operator {
            return Err(ApiError::new(403, format!("{} is not an operator: only operators change the cluster", who.user)));
        }
        let new = Cluster::from_toml(&req.toml, &req.path).map_err(|e| ApiError::new(400, e.to_string()))?;
        let (mut state, mut cluster) = (self.state.clone(), self.cluster.clone());
        let now = unix_now().max(self.state.ledger.now);
        state
            .reconfigure(&mut cluster, now, &req.toml, &req.path, &mut Default::default())
            .map_err(|why| ApiError::new(409, format!("cluster file {} not applied: {why}", if req.path.is_empty() { "(unnamed)" } else { &req.path })))?;
        tracing::info!(user = %who.user, path = %req.path, "applying a changed cluster file");
        Ok((Event::Reconfigure { toml: req.toml.clone(), path: req.path.clone() }, tessera_core::Reconfiguration::differences(&self.cluster, &new)))
    }

    fn admit_register(&mut self, who: &Identity, req: &RegisterRequest) -> Result<(Vec<u32>, Vec<String>), ApiError> {
        if who.role != Role::Agent {
            return Err(ApiError::new(403, "only agents (with the cluster key) register nodes"));
        }
        if req.version != PROTOCOL_VERSION {
            return Err(ApiError::new(400, format!("agent protocol version {} (this controller speaks {PROTOCOL_VERSION})", req.version)));
        }
        if req.agent.is_empty() || req.agent.len() > 255 {
            return Err(ApiError::new(400, "field `agent`: expected a name of 1 to 255 characters"));
        }
        let mut nodes = Vec::new();
        let mut ignored = Vec::new();
        for n in &req.nodes {
            let Some(&i) = self.node_index.get(&n.name) else {
                ignored.push(n.name.clone());
                continue;
            };
            if let Some(other) = &self.state.ledger.node_agent[i as usize] {
                if other != &req.agent && self.agents.contains_key(other) {
                    return Err(ApiError::new(409, format!("node {} is presented by agent {other}", n.name)));
                }
            }
            let want = &self.cluster.nodes[i as usize];
            if n.cores < want.cores || n.memory_mb < want.memory_mb || n.gpus < want.gpus {
                tracing::warn!(node = %n.name, agent = %req.agent, "the agent reports fewer resources than the cluster file ({} cores, {} MiB, {} GPUs there)", want.cores, want.memory_mb, want.gpus);
            }
            nodes.push(i);
        }
        for (n, i) in req.nodes.iter().filter_map(|n| Some((n, *self.node_index.get(&n.name)?))) {
            match &n.confinement {
                Some(c) => self.confinement.insert(i, c.clone()),
                None => self.confinement.remove(&i),
            };
        }
        if nodes.is_empty() {
            return Err(ApiError::new(400, match ignored.first() {
                Some(n) => format!("field `nodes`: no node {n} in cluster {}", self.cluster.name),
                None => "field `nodes`: expected at least one node".to_string(),
            }));
        }
        if !ignored.is_empty() {
            tracing::warn!(agent = %req.agent, nodes = %tessera_core::hostlist::compress(&ignored.iter().map(|s| s.as_str()).collect::<Vec<_>>()), "the agent presents nodes the cluster does not have: ignored");
        }
        Ok((nodes, ignored))
    }

    fn session(&mut self, who: &Identity, msg: &AgentMessage) -> Result<(), ApiError> {
        if who.role != Role::Agent {
            return Err(ApiError::new(403, "only agents poll and report"));
        }
        match self.agents.get_mut(&msg.agent) {
            Some(s) if s.id == msg.session => {
                s.last_seen = Instant::now();
                Ok(())
            }
            _ => Err(ApiError::new(409, format!("agent {} has no session {}: register again", msg.agent, msg.session))),
        }
    }

    fn check_heartbeats(&mut self, events: &mut Vec<Event>) {
        let now = Instant::now();
        let limit = Duration::from_secs(self.cfg.heartbeat_timeout_s);
        let lost: Vec<String> = self.agents.iter().filter(|(_, s)| now.duration_since(s.last_seen) > limit).map(|(a, _)| a.clone()).collect();
        for a in lost {
            tracing::warn!(agent = %a, "agent stopped answering: its nodes go down");
            if let Some(s) = self.agents.remove(&a) {
                if let Some((r, _)) = s.parked {
                    let _ = r.send(Err(ApiError::new(409, "session expired")));
                }
            }
            events.push(Event::AgentLost { agent: a });
        }
        let late: Vec<String> = self.awaited.iter().filter(|(_, &t)| t <= now).map(|(a, _)| a.clone()).collect();
        for a in late {
            self.awaited.remove(&a);
            tracing::warn!(agent = %a, "agent did not come back after the restart: its nodes go down");
            events.push(Event::AgentLost { agent: a });
        }
    }

    fn act(&mut self, actions: Vec<Action>) -> Result<()> {
        let mut records = Vec::new();
        for a in actions {
            let (node, cmd) = match a {
                Action::Record(r) => {
                    records.push(by_node_id(*r, &self.acct_ids));
                    continue;
                }
                Action::Launch { node, launch } => {
                    self.metrics.started += 1;
                    (node, AgentCommand::Launch(launch))
                }
                Action::Kill { node, job, attempt } => (node, AgentCommand::Kill { job, attempt, grace_s: self.cfg.kill_grace_s }),
                Action::Suspend { node, job, attempt, at } => (node, AgentCommand::Suspend { job, attempt, grace_ms: 1000, at: Some(at) }),
                Action::Resume { node, job, attempt, at } => (node, AgentCommand::Resume { job, attempt, at: Some(at) }),
                Action::Power { node, cap_w, busy } => (node, AgentCommand::Power { node: self.cluster.nodes[node as usize].name.clone(), cap_w, busy }),
                Action::Reconfigure { node, job, attempt, nodes, cap_w, at, end } => {
                    let names: Vec<&str> = nodes.iter().map(|&n| self.cluster.nodes[n as usize].name.as_str()).collect();
                    let nodelist = tessera_core::hostlist::compress(&names);
                    (node, AgentCommand::Reconfigure { job, attempt, nodelist, nodes: nodes.len() as u32, cap_w, at, end })
                }
                Action::Step { node, launch } => (node, AgentCommand::Step(launch)),
                Action::SignalStep { node, job, attempt, step, signal } => (node, AgentCommand::SignalStep { job, attempt, step, signal }),
            };
            if let Some(s) = self.state.ledger.node_agent[node as usize].as_ref().and_then(|a| self.agents.get_mut(a)) {
                s.outbox.push(cmd);
            }
        }
        if !records.is_empty() {
            self.metrics.finished += records.len() as u64;
            self.store.append_jobs(self.run_id, &self.node_records, &records).context("writing accounting records")?;
        }
        Ok(())
    }

    fn answer(&mut self, a: After) {
        match a {
            After::Submit(r, ids) => drop(r.send(Ok(SubmitReply { jobs: ids }))),
            After::Job(r, id) => drop(r.send(self.state.job_info(&self.cluster, id).ok_or_else(|| ApiError::new(404, format!("no job {id}"))))),
            After::Node(r, n) => {
                let used = self.node_usage()[n as usize];
                drop(r.send(Ok(self.node_info(n, used))))
            }
            After::Ack(r) => drop(r.send(Ok(()))),
            After::Step(r, job, step) => drop(r.send(self.state.step_info(&self.cluster, job, step).ok_or_else(|| ApiError::new(409, format!("job {job} ended before its step {step} started"))))),
            After::Resv(r, name) => drop(r.send(match self.state.engine().reservation(&name) {
                Some(x) => Ok(crate::resv::info(&self.cluster, x, unix_now())),
                // made in the same batch as one of its name
                None => Err(ApiError::new(409, format!("reservation {name}: refused (one of that name, or on the same nodes, was made at the same time)"))),
            })),
            After::Budget(r, previous_w) => drop(r.send(Ok(BudgetReply { budget_w: self.state.budget_w(&self.cluster).unwrap_or(0.0), previous_w }))),
            After::Reconfigure(r, added, removed, changed) => {
                drop(r.send(Ok(ReconfigureReply { cluster: self.cluster_info.clone(), added, removed, changed })));
            }
            After::Register(r, agent, jobs, steps, presented, ignored) => {
                self.sessions += 1;
                let id = self.sessions;
                self.awaited.remove(&agent);
                let mut outbox = self.reconcile(&agent, &jobs);
                outbox.extend(self.state.steps_missing_on(&self.cluster, &agent, &steps).into_iter().map(|l| AgentCommand::Step(Box::new(l))));
                if let Some(old) = self.agents.insert(agent.clone(), Session { id, presented, last_seen: Instant::now(), outbox, parked: None }) {
                    if let Some((p, _)) = old.parked {
                        let _ = p.send(Err(ApiError::new(409, "a newer session replaced this one")));
                    }
                }
                tracing::info!(agent = %agent, session = id, "agent registered");
                let _ = r.send(Ok(RegisterReply { session: id, heartbeat_timeout_s: self.cfg.heartbeat_timeout_s, ignored }));
            }
            After::Poll(r, agent) => {
                if let Some(s) = self.agents.get_mut(&agent) {
                    if let Some((old, _)) = s.parked.take() {
                        let _ = old.send(Ok(PollReply { commands: Vec::new() }));
                    }
                    // answer well within the heartbeat timeout: the poll is the heartbeat
                    let hold = POLL_HOLD.min(Duration::from_millis(self.cfg.heartbeat_timeout_s * 1000 / 3));
                    s.parked = Some((r, Instant::now() + hold));
                }
            }
        }
    }

    /// Ends for the jobs being killed on a registering agent's nodes that the
    /// agent does not hold, running or ended: their launch was lost (sent to
    /// an agent that was down, whose new session starts without it) and the
    /// controller killed them (a limit, a cancel) before the agent came back.
    /// Nothing runs, so nothing will report an end: they end now, killed.
    fn never_launched(&self, req: &RegisterRequest) -> Vec<Event> {
        let held: std::collections::BTreeSet<(u64, u32)> = req
            .jobs
            .iter()
            .map(|j| match j {
                AgentJob::Running { job, attempt, .. } => (*job, *attempt),
                AgentJob::Ended(x) => (x.job, x.attempt),
            })
            .collect();
        let now = unix_now();
        self.state
            .expected_on(&req.agent)
            .into_iter()
            .filter(|&(job, attempt, _, st)| matches!(st, JobState::Ending { .. }) && !held.contains(&(job, attempt)))
            .map(|(job, attempt, _, _)| {
                tracing::warn!(job, attempt, agent = %req.agent, "a job being killed that its agent does not hold: it never ran, it ends");
                Event::Ended(JobExit { job, attempt, code: None, signal: Some(9), cpu_s: 0.0, start: now, end: now, limit_hit: false, usage: None, failure: None })
            })
            .collect()
    }

    /// What a (re)registering agent must do so that it holds exactly the jobs
    /// the state says it runs: launch what it lacks, kill what it should not
    /// run, and bring suspension in line.
    fn reconcile(&mut self, agent: &str, reported: &[AgentJob]) -> Vec<AgentCommand> {
        let mut cmds = Vec::new();
        let mut held: BTreeMap<(u64, u32), bool> = BTreeMap::new();
        for j in reported {
            if let AgentJob::Running { job, attempt, suspended } = j {
                held.insert((*job, *attempt), *suspended);
            }
        }
        for (job, attempt, _node, st) in self.state.expected_on(agent) {
            match (held.remove(&(job, attempt)), st) {
                (None, JobState::Ending { .. }) | (Some(_), JobState::Ending { .. }) => cmds.push(AgentCommand::Kill { job, attempt, grace_s: self.cfg.kill_grace_s }),
                (None, _) => {
                    if let Some(l) = self.state.launch_of(&self.cluster, job) {
                        cmds.push(AgentCommand::Launch(Box::new(l)));
                        if let JobState::Suspended { since, .. } = st {
                            cmds.push(AgentCommand::Suspend { job, attempt, grace_ms: 1000, at: Some(since) });
                        }
                    }
                }
                (Some(false), JobState::Suspended { since, .. }) => cmds.push(AgentCommand::Suspend { job, attempt, grace_ms: 1000, at: Some(since) }),
                // resumed while the agent was away: now is as near as is known
                (Some(true), JobState::Running { .. }) => cmds.push(AgentCommand::Resume { job, attempt, at: Some(self.state.ledger.now) }),
                (Some(_), _) => {}
            }
        }
        for ((job, attempt), _) in held {
            tracing::warn!(job, attempt, agent, "the agent runs a job the controller does not: killed");
            cmds.push(AgentCommand::Kill { job, attempt, grace_s: self.cfg.kill_grace_s });
        }
        // caps: a node a job holds runs at the job's cap; one the agent
        // reports otherwise (a command lost while the controller was away)
        // is set again
        for m in self.state.ledger.jobs.values() {
            let Some(cap_w) = m.cap_w else { continue };
            for &n in &m.nodes {
                if self.state.ledger.node_agent[n as usize].as_deref() != Some(agent) {
                    continue;
                }
                let reported = self.power.get(n as usize).and_then(|p| p.as_ref()).and_then(|(r, _)| r.cap_w);
                if reported.is_none_or(|c| (c - cap_w).abs() > 0.5) {
                    cmds.insert(0, AgentCommand::Power { node: self.cluster.nodes[n as usize].name.clone(), cap_w, busy: true });
                }
            }
        }
        cmds
    }

    /// Answer parked polls that have commands (or that waited long enough).
    fn flush_polls(&mut self, all: bool) {
        let now = Instant::now();
        for s in self.agents.values_mut() {
            let due = s.parked.as_ref().is_some_and(|(_, t)| all || *t <= now || !s.outbox.is_empty());
            if due {
                let (r, _) = s.parked.take().unwrap();
                let commands = std::mem::take(&mut s.outbox);
                let _ = r.send(Ok(PollReply { commands }));
            }
        }
    }

    /// Cores, memory and GPUs allocated on every node, and whether any job holds it.
    fn node_usage(&self) -> Vec<(u32, u64, u32, bool)> {
        let mut used = vec![(0u32, 0u64, 0u32, false); self.cluster.nodes.len()];
        for m in self.state.ledger.jobs.values() {
            if let Some(a) = self.state.engine().allocation(JobId(m.id)) {
                for p in &a.parts {
                    let u = &mut used[p.node as usize];
                    *u = (u.0 + p.cores, u.1 + p.mem, u.2 + p.gpus, true);
                }
            }
        }
        used
    }

    /// What the dashboard shows now.
    fn dashboard(&mut self) -> tessera_report::dashboard::Dashboard {
        use tessera_report::dashboard::{Dashboard, DashboardNode};
        let used = self.node_usage();
        let queue = crate::metrics::queue_by_reason(&mut self.state, &self.cluster).into_iter().map(|((p, r), n)| (p.to_string(), r.to_string(), n)).collect();
        // the smallest need, in its partition's canonical units, of a queued job
        let mut least: BTreeMap<String, u64> = BTreeMap::new();
        for id in self.state.engine().queue().collect::<Vec<_>>() {
            let Some((spec, _)) = self.state.engine().job(id) else { continue };
            let part = &self.cluster.partitions[spec.partition.map_or(self.cluster.default_partition_index(), |p| p as usize)];
            let need = part.canonical_unit.need(spec.procs as u64, spec.mem_per_proc_mb.saturating_mul(spec.procs as u64), spec.gpus_per_node as u64);
            let e = least.entry(part.name.clone()).or_insert(u64::MAX);
            *e = (*e).min(need.max(1));
        }
        let mut nodes = Vec::with_capacity(used.len());
        let mut overhead: Vec<(String, u64, u64)> = Vec::new();
        let mut power = Some(());
        let (_, allocated, measured) = self.power_now();
        for (n, &u) in used.iter().enumerate() {
            let info = self.node_info(n as u32, u);
            let rec = &self.node_records[n];
            let t = &self.cluster.node_types[self.cluster.nodes[n].node_type];
            let cap = (rec.cores as u64, rec.memory_mb, rec.gpus as u64);
            let up = matches!(info.state.as_str(), "idle" | "mixed" | "allocated");
            let k = if up { rec.unit.idle_units(cap, (u.0 as u64, u.1, u.2 as u64)) } else { 0 };
            let flagged = if least.get(&rec.partition).is_some_and(|&need| need <= k) { k } else { 0 };
            match overhead.iter_mut().find(|o| o.0 == t.name) {
                Some(o) => {
                    o.1 += k;
                    o.2 += flagged;
                }
                None => overhead.push((t.name.clone(), k, flagged)),
            }
            if t.power.is_none() {
                power = None;
            }
            nodes.push(DashboardNode { name: info.name, node_type: t.name.clone(), state: info.state, cores: info.cores, alloc_cores: info.alloc_cores });
        }
        Dashboard {
            cluster: self.cluster.name.clone(),
            policy: self.cluster_info.policy.clone(),
            now: tessera_proto::unix_now(),
            agents: self.agents.len(),
            running_jobs: self.state.ledger.jobs.values().filter(|m| self.state.engine().allocation(JobId(m.id)).is_some()).count() as u64,
            queue,
            nodes,
            power_w: power.map(|_| allocated),
            budget_w: self.state.budget_w(&self.cluster),
            measured_w: measured,
            power_history: self.metrics.power_history(),
            overhead,
            rates: self.metrics.recent_rates(),
        }
    }

    fn node_info(&self, n: u32, (ac, am, ag, busy): (u32, u64, u32, bool)) -> NodeInfo {
        let node = &self.cluster.nodes[n as usize];
        let t = &self.cluster.node_types[node.node_type];
        let st = self.state.engine().node_status(n).cloned().unwrap_or(tessera_core::NodeStatus { up: false, drain: false, reason: "unknown".into(), power_fault: false });
        let agent = self.state.ledger.node_agent[n as usize].clone();
        let state = if !st.up {
            if agent.is_none() && st.reason.starts_with("no agent") { "unknown" } else { "down" }
        } else if st.drain {
            if busy { "draining" } else { "drain" }
        } else if ac == 0 {
            "idle"
        } else if ac >= node.cores {
            "allocated"
        } else {
            "mixed"
        };
        NodeInfo {
            name: node.name.clone(),
            partitions: self.cluster.partitions.iter().filter(|p| p.nodes.contains(&(n as usize))).map(|p| p.name.clone()).collect(),
            state: state.into(),
            reason: st.reason.clone(),
            cores: node.cores,
            alloc_cores: ac,
            memory_mb: node.memory_mb,
            alloc_memory_mb: am,
            gpus: node.gpus,
            alloc_gpus: ag,
            features: t.features.clone(),
            factor: t.factor,
            confinement: agent.as_ref().and_then(|_| self.confinement.get(&n).cloned()),
            agent,
        }
    }
}

fn change_name(c: NodeChange) -> &'static str {
    match c {
        NodeChange::Down => "down",
        NodeChange::Up => "up",
        NodeChange::Drain => "drain",
        NodeChange::Resume => "resume",
        NodeChange::PowerFault => "drain (power fault)",
    }
}

/// What the actor derives from its cluster: the cluster and policy as `GET
/// /v1/cluster` serves them (with the file's text and name), and each node's
/// index by name.
fn derived(cluster: &Cluster, policy: &str, toml: String, path: String) -> (ClusterInfo, BTreeMap<String, u32>) {
    let info = ClusterInfo { name: cluster.name.clone(), policy: policy.to_string(), toml, path, nodes: cluster.nodes.len(), cores: cluster.total_cores() };
    (info, cluster.nodes.iter().enumerate().map(|(i, n)| (n.name.clone(), i as u32)).collect())
}

/// An accounting record with its allocations naming nodes by their id in the
/// run (`ids`: each cluster node's).
fn by_node_id(mut r: tessera_accounting::store::JobRecord, ids: &[u32]) -> tessera_accounting::store::JobRecord {
    for a in &mut r.allocations {
        a.node = ids[a.node as usize];
    }
    r
}

/// Fair share and priorities need accounts.
fn no_accounts() -> ApiError {
    ApiError::new(409, "the cluster has no accounts ([priority], [[qos]], [[account]] and [[user]] tables in its cluster file, or an accounts file it names): there is no fair share to show".to_string())
}
