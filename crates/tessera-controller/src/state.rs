//! The controller's state machine: the engine plus what the controller knows of
//! each job (script, owner, output paths, attempt), dependencies, array
//! throttles and which agent presents each node. Like the engine it does no I/O
//! and reads no clock: [`State::apply`] takes the instant and the journaled
//! events of one batch and returns [`Action`]s for the actor to carry out. The
//! journal holds only events from outside (submissions, user and operator
//! requests, agents' reports and comings and goings); everything the controller
//! derives from them (a dependency released, an array task let through, a job
//! of a lost node completed) is derived again on replay, so replaying the
//! journal over the last snapshot arrives at the same state.

use crate::request::{expand_pattern, JobRequest};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use tessera_accounting::store::{AllocationRecord, JobRecord as AcctRecord, JobStateTag, StepRecord};
use tessera_core::{hostlist, After, AfterKind, Cluster, Effect, Engine, FinalState, Input, JobId, JobState, NodeChange, Outcome, PendingReason, Throttle};
use tessera_proto::api::{CgroupUsage, JobExit, JobInfo, JobStateCode, Launch, LaunchFailure, NodeShare, StepExit, StepInfo, StepLaunch};
use crate::steps::{NodeEnd, StepMeta};
use tessera_proto::submit::DependencyKind;

/// A job as the controller knows it, beyond the engine's spec.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobMeta {
    pub id: u64,
    pub user: String,
    pub uid: u32,
    pub gid: u32,
    pub req: JobRequest,
    /// (array job id, task index) of an array task.
    pub array: Option<(u64, u32)>,
    pub submit: i64,
    /// Starts so far; the current run is attempt `attempt`.
    pub attempt: u32,
    pub nodes: Vec<u32>,
    pub start: Option<i64>,
    /// The current run's limit in real seconds (its nodes' pace).
    pub limit_real: Option<i64>,
    /// CPU seconds of the last run, as its agent reported.
    pub cpu_s: f64,
    pub exit: Option<(Option<i32>, Option<i32>)>,
    pub requeues: u32,
    /// When the current run exited by itself, as its agent saw it, if that
    /// report came while the controller was killing it at its limit.
    #[serde(default)]
    pub ended_at: Option<i64>,
    /// The step of the current run's launch that failed, as its agent reported.
    #[serde(default)]
    pub failure: Option<LaunchFailure>,
    /// The current run's intervals with its cores given back (suspended by
    /// preemption or gang), and since when it has been so, if it is now.
    #[serde(default)]
    pub released: Vec<(i64, i64)>,
    #[serde(default)]
    pub released_since: Option<i64>,
    /// The current run was killed at its limit by its agent (the controller
    /// was away when the limit ran out): it ends TIMEOUT.
    #[serde(default)]
    pub limit_hit: bool,
    /// Under PARM: the CPU cap (W) of the current run's nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap_w: Option<f64>,
    /// Under PARM: when the model expects the current run to end, as last
    /// told to it (`TESSERA_POWER_END`, or its last reconfiguration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_end: Option<i64>,
    /// What the current run's cgroup counted (its batch step), as its
    /// agent reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<CgroupUsage>,
    /// The current run's steps (`tessera run`), by number.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepMeta>,
}

/// An event from outside, as journaled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Event {
    /// Jobs `first..first + n` (n = array tasks, or 1).
    Submit { first: u64, user: String, uid: u32, gid: u32, req: Box<JobRequest> },
    Cancel(u64),
    Hold(u64),
    Release(u64),
    Suspend(u64),
    Resume(u64),
    Requeue(u64),
    /// An operator's node change.
    Node { node: u32, change: NodeChange, reason: String },
    /// An agent registered these nodes.
    AgentUp { agent: String, nodes: Vec<u32> },
    /// An agent stopped answering.
    AgentLost { agent: String },
    Ended(JobExit),
    /// The batch's scheduling pass waits: it came in the gathering window at
    /// the start of its second, and the second's pass is made once the window
    /// ends, after every event of the window (as the simulator handles all of
    /// an instant's events before its pass).
    PassLater,
    /// An operator applied a changed cluster file (its text and name); the
    /// actor journals it alone in its batch (see [`State::reconfigure`]).
    Reconfigure { toml: String, path: String },
    /// A shrunk job's run acknowledged its new configuration (PARM): the
    /// nodes it gave up are free.
    Resized { job: u64, attempt: u32 },
    /// An operator changed the power budget (W).
    SetBudget { watts: f64 },
    /// An operator made an advance reservation (resolved: instants, nodes).
    Reserve(Box<tessera_core::ReservationSpec>),
    /// An operator deleted one.
    Unreserve(String),
    /// An operator changed the accounts (`tessera account`): the new table.
    SetAccounts(Box<tessera_core::share::Accounts>),
    /// The measured power exceeded the budget: the power governor holds run
    /// `attempt` of `job` to this CPU cap for the rest of the run (W).
    Throttle { job: u64, attempt: u32, cap_w: f64 },
    /// The PARM decision of the batch before took this long (measured by the
    /// controller, journaled after it): charged to the jobs it started or
    /// reconfigured, as the simulator's `--charge-solve-time` does.
    DecisionTime { micros: u64 },
    /// A step admitted: (job, attempt, the step with its layout).
    StepStart(Box<(u64, u32, StepMeta)>),
    /// A node's tasks of a step all ended, as its agent reported.
    StepEnded(Box<StepExit>),
    /// A step's client forwarded a signal to its tasks.
    StepSignal { job: u64, attempt: u32, step: u32, signal: i32 },
    /// The client of an allocation without a batch script ended it.
    End { job: u64, attempt: u32, code: i32 },
}

/// What the actor is asked to do.
#[derive(Debug, Clone)]
pub enum Action {
    Launch { node: u32, launch: Box<Launch> },
    Kill { node: u32, job: u64, attempt: u32 },
    /// `at`: the instant the engine suspended or resumed it.
    Suspend { node: u32, job: u64, attempt: u32, at: i64 },
    Resume { node: u32, job: u64, attempt: u32, at: i64 },
    /// Append to the accounting store.
    Record(Box<AcctRecord>),
    /// Set a node's CPU power cap (W), before anything runs at it, and say
    /// whether a job holds the node (an emulated node draws power by it).
    Power { node: u32, cap_w: f64, busy: bool },
    /// A running job's configuration changed (PARM): its nodes, first node
    /// first, and its CPU cap. Sent to the agent of its first node.
    Reconfigure { node: u32, job: u64, attempt: u32, nodes: Vec<u32>, cap_w: f64, at: i64, end: i64 },
    /// Start a node's part of a step.
    Step { node: u32, launch: Box<StepLaunch> },
    /// Signal a step's tasks on a node.
    SignalStep { node: u32, job: u64, attempt: u32, step: u32, signal: i32 },
}

/// How a finished job ended (kept for dependencies and `job show`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Done {
    pub info: JobInfo,
    pub ok: bool,
    /// Its steps, as they ended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepInfo>,
}

/// Seconds a finished job stays visible in `tessera queue --all` and `job show`
/// (Slurm's MinJobAge is 300 s).
pub const DONE_KEEP_S: i64 = 300;

/// The controller's state: the engine, and what the controller knows beyond
/// it. Only [`State::apply`] and [`State::reconfigure`] change the engine, and
/// only through [`tessera_core::step`]; everything else reads it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct State {
    engine: Engine,
    pub ledger: Ledger,
}

/// What the controller knows beyond the engine: each job's request, owner and
/// runs, finished jobs, dependencies, array throttles, keyed submissions and
/// which agent presents each node. The controller's side of
/// [`tessera_core::step`]: it turns the engine's effects into [`Action`]s.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ledger {
    pub jobs: BTreeMap<u64, JobMeta>,
    /// Finished jobs by end time, for [`DONE_KEEP_S`].
    pub done: BTreeMap<u64, Done>,
    done_order: VecDeque<(i64, u64)>,
    /// Whether each finished job ended successfully (dependencies), kept as
    /// long as the job is listed ([`DONE_KEEP_S`]), as Slurm forgets a job
    /// after MinJobAge: a dependency on an older job is refused.
    pub outcomes: BTreeMap<u64, bool>,
    pub next_id: u64,
    /// The agent presenting each node.
    pub node_agent: Vec<Option<String>>,
    /// Nodes an operator set down (an agent's return does not bring them up).
    admin_down: Vec<bool>,
    pub now: i64,
    pub kill_grace_s: u64,
    /// Keyed submissions, `uid:key` → (first job, jobs, jobs not yet
    /// forgotten, the request's digest); a key is forgotten with the last of
    /// its jobs (see [`DONE_KEEP_S`]).
    #[serde(default)]
    keys: BTreeMap<String, (u64, u64, u64, u64)>,
    /// The key of each job of a keyed submission.
    #[serde(default)]
    key_of: BTreeMap<u64, String>,
    /// The cluster file (text, name) the state runs on, when an operator
    /// changed it; None: the one the state directory was created with.
    #[serde(default)]
    pub cluster_file: Option<(String, String)>,
    /// The instant the engine last asked to be woken at ([`Effect::WakeAt`]);
    /// a pass at or after it consumes it.
    wake: Option<i64>,
}

/// How a keyed submission is filed: its user's uid and the key.
pub fn submission_key(uid: u32, key: &str) -> String {
    format!("{uid}:{key}")
}

const NO_AGENT: &str = "no agent has registered the node";

impl State {
    /// A fresh state at `now`: every node down until its agent registers.
    pub fn new(engine: Engine, cluster: &Cluster, now: i64, kill_grace_s: u64) -> State {
        let mut s = State {
            engine,
            ledger: Ledger {
                jobs: BTreeMap::new(),
                done: BTreeMap::new(),
                done_order: VecDeque::new(),
                outcomes: BTreeMap::new(),
                next_id: 1,
                node_agent: vec![None; cluster.nodes.len()],
                admin_down: vec![false; cluster.nodes.len()],
                now,
                kill_grace_s,
                keys: BTreeMap::new(),
                key_of: BTreeMap::new(),
                cluster_file: None,
                wake: None,
            },
        };
        let downs = (0..cluster.nodes.len() as u32).map(|n| Input::Node { node: n, change: NodeChange::Down, reason: NO_AGENT.into() });
        s.step(cluster, now, downs, false, &mut Vec::new());
        s
    }

    /// The engine, to read.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Whether run `attempt` of `job` was shrunk and owes its acknowledgement.
    pub fn awaits_resize(&self, job: u64, attempt: u32) -> bool {
        self.ledger.jobs.get(&job).is_some_and(|m| m.attempt == attempt) && self.engine.awaits_resize(JobId(job))
    }

    /// The power budget in force (W): the engine's (an operator may have
    /// changed it), else the cluster file's.
    pub fn budget_w(&self, cluster: &Cluster) -> Option<f64> {
        self.engine.budget_w().or(cluster.power_budget_w)
    }

    /// Apply one journaled batch at `now` (never before the last): its events,
    /// then a scheduling pass.
    pub fn apply(&mut self, cluster: &mut Cluster, now: i64, events: &[Event], out: &mut Vec<Action>) {
        let now = now.max(self.ledger.now);
        self.ledger.now = now;
        let mut inputs = VecDeque::new();
        for ev in events {
            match ev {
                Event::Reconfigure { toml, path } => {
                    if let Err(why) = self.reconfigure(cluster, now, toml, path, &mut inputs) {
                        // admitted only after the same check passed: a build
                        // that reads the file differently refuses it the same way
                        tracing::warn!("cluster file {path} not applied: {why}");
                    }
                }
                Event::StepStart(_) | Event::StepEnded(_) | Event::StepSignal { .. } => self.step_event(cluster, ev, out),
                _ => self.event(cluster, now, ev, &mut inputs),
            }
        }
        let pass = !events.contains(&Event::PassLater);
        self.step(cluster, now, inputs, pass, out);
        while let Some(&(t, id)) = self.ledger.done_order.front() {
            if t + DONE_KEEP_S > now {
                break;
            }
            self.ledger.done_order.pop_front();
            self.ledger.done.remove(&id);
            self.ledger.outcomes.remove(&id);
            if let Some(k) = self.ledger.key_of.remove(&id) {
                if let Some(e) = self.ledger.keys.get_mut(&k) {
                    e.2 -= 1;
                    if e.2 == 0 {
                        self.ledger.keys.remove(&k);
                    }
                }
            }
        }
    }

    /// The engine's instant: `inputs`, then a pass if asked, as every driver
    /// feeds it ([`tessera_core::step`]); the effects become actions.
    fn step(&mut self, cluster: &Cluster, now: i64, inputs: impl IntoIterator<Item = Input>, pass: bool, out: &mut Vec<Action>) {
        let mut carry = Carry { ledger: &mut self.ledger, cluster, out, due: VecDeque::new() };
        tessera_core::step(&mut self.engine, now, inputs, pass, &mut carry);
    }

    /// Apply a changed cluster file at `now`: the engine moves its jobs onto the
    /// new cluster ([`Input::Reconfigure`]: nodes and partitions matched by
    /// name) and the controller's own tables follow (which agent presents each
    /// node, operators' downs, each job's nodes and partition). An added node
    /// is down until an agent presents it. Refused, changing nothing, when the
    /// file does not read or a job would lose its place.
    pub fn reconfigure(&mut self, cluster: &mut Cluster, now: i64, toml: &str, path: &str, inputs: &mut VecDeque<Input>) -> Result<(), String> {
        let new = Cluster::from_toml(toml, path).map_err(|e| e.to_string())?;
        let r = tessera_core::Reconfiguration::between(cluster, new);
        let mut fx = Vec::new();
        self.engine.handle(now, Input::Reconfigure(Box::new(r.clone())), &mut fx);
        if let Some(why) = fx.into_iter().find_map(|e| match e {
            Effect::Rejected { reason, .. } => Some(reason.to_string()),
            _ => None,
        }) {
            return Err(why);
        }
        let old_index = r.old_index();
        self.ledger.node_agent = old_index.iter().map(|o| o.and_then(|o| self.ledger.node_agent[o as usize].clone())).collect();
        self.ledger.admin_down = old_index.iter().map(|o| o.is_some_and(|o| self.ledger.admin_down[o as usize])).collect();
        for m in self.ledger.jobs.values_mut() {
            m.nodes = m.nodes.iter().filter_map(|&n| r.nodes[n as usize]).collect();
            if let Some(p) = r.partitions[m.req.partition as usize] {
                m.req.partition = p as u16;
            }
        }
        for (n, o) in old_index.iter().enumerate() {
            if o.is_none() {
                inputs.push_back(Input::Node { node: n as u32, change: NodeChange::Down, reason: NO_AGENT.into() });
            }
        }
        self.ledger.cluster_file = Some((toml.to_string(), path.to_string()));
        *cluster = r.cluster;
        Ok(())
    }

    /// The jobs a keyed submission created and its request's digest
    /// ([`crate::request::digest`]), if the key is still remembered.
    pub fn keyed(&self, uid: u32, key: &str) -> Option<(Vec<u64>, u64)> {
        self.ledger.keys.get(&submission_key(uid, key)).map(|&(first, n, _, d)| ((first..first + n).collect(), d))
    }

    /// The instant the engine asked to be woken at ([`Effect::WakeAt`]), if
    /// no pass has consumed it.
    pub fn wake(&self) -> Option<i64> {
        self.ledger.wake
    }

    /// A step started, ended on a node, or signalled: the agents' commands.
    fn step_event(&mut self, cluster: &Cluster, ev: &Event, out: &mut Vec<Action>) {
        match ev {
            Event::StepStart(b) => {
                let (job, attempt, s) = &**b;
                let running = matches!(self.engine.job(JobId(*job)), Some((_, JobState::Running { .. })));
                let Some(m) = self.ledger.jobs.get(job).filter(|m| m.attempt == *attempt && running && m.steps.len() as u32 == s.id) else { return };
                let Some(launches) = Self::step_launches(&self.engine, &self.ledger, cluster, m, s) else { return };
                let m = self.ledger.jobs.get_mut(job).expect("just found");
                out.extend(launches.into_iter().map(|(node, launch)| Action::Step { node, launch: Box::new(launch) }));
                let names: Vec<&str> = s.nodes.iter().map(|&n| cluster.nodes[n as usize].name.as_str()).collect();
                tracing::info!(job, step = s.id, tasks = s.req.ntasks, nodes = %hostlist::compress(&names), "step");
                m.steps.push(s.clone());
            }
            Event::StepEnded(x) => {
                let Some(m) = self.ledger.jobs.get_mut(&x.job).filter(|m| m.attempt == x.attempt) else { return };
                let Some(s) = m.steps.get_mut(x.step as usize) else { return };
                let Some(k) = s.nodes.iter().position(|&n| cluster.nodes[n as usize].name == x.node) else { return };
                if s.ended[k].is_none() {
                    s.ended[k] = Some(NodeEnd::of(x));
                }
            }
            Event::StepSignal { job, attempt, step, signal } => {
                let Some(m) = self.ledger.jobs.get_mut(job).filter(|m| m.attempt == *attempt) else { return };
                let Some(s) = m.steps.get_mut(*step as usize) else { return };
                s.signalled = Some(*signal);
                for (k, &node) in s.nodes.iter().enumerate() {
                    if s.ended[k].is_none() {
                        out.push(Action::SignalStep { node, job: *job, attempt: *attempt, step: *step, signal: *signal });
                    }
                }
            }
            _ => {}
        }
    }

    /// Each node's part of step `s` of job `m`.
    fn step_launches(engine: &Engine, ledger: &Ledger, cluster: &Cluster, m: &JobMeta, s: &StepMeta) -> Option<Vec<(u32, StepLaunch)>> {
        let alloc = engine.allocation(JobId(m.id))?;
        let names: Vec<&str> = s.nodes.iter().map(|&n| cluster.nodes[n as usize].name.as_str()).collect();
        let env = crate::steps::step_env(s, m.id, &hostlist::compress(&names));
        let mut first = 0;
        let mut out = Vec::new();
        for (k, (&node, &count)) in s.nodes.iter().zip(&s.tasks_per_node).enumerate() {
            let p = alloc.parts.iter().find(|p| p.node == node)?;
            out.push((
                node,
                StepLaunch {
                    job: m.id,
                    attempt: m.attempt,
                    step: s.id,
                    name: s.req.name.clone(),
                    user: m.user.clone(),
                    uid: m.uid,
                    gid: m.gid,
                    share: NodeShare { node: cluster.nodes[node as usize].name.clone(), cores: p.cores, memory_mb: p.mem, gpus: p.gpus },
                    nodeid: k as u32,
                    tasks: (first..first + count).collect(),
                    ntasks: s.req.ntasks,
                    cpus_per_task: s.req.cpus_per_task.max(1),
                    argv: s.req.argv.clone(),
                    env: env.clone(),
                    workdir: s.req.workdir.clone(),
                    io: s.req.io.clone(),
                    kill_grace_s: ledger.kill_grace_s,
                },
            ));
            first += count;
        }
        Some(out)
    }

    /// The parts of running steps an agent should run and does not
    /// (`held`: those it reports), to start again.
    pub fn steps_missing_on(&self, cluster: &Cluster, agent: &str, held: &[(u64, u32, u32)]) -> Vec<StepLaunch> {
        let mut out = Vec::new();
        for m in self.ledger.jobs.values() {
            for s in m.steps.iter().filter(|s| s.end().is_none() && !held.contains(&(m.id, m.attempt, s.id))) {
                let Some(launches) = Self::step_launches(&self.engine, &self.ledger, cluster, m, s) else { continue };
                for (k, (node, l)) in launches.into_iter().enumerate() {
                    if s.ended[k].is_none() && self.ledger.node_agent[node as usize].as_deref() == Some(agent) {
                        out.push(l);
                    }
                }
            }
        }
        out
    }

    /// A step of a live or recently finished job, as its client follows it.
    pub fn step_info(&self, cluster: &Cluster, job: u64, step: u32) -> Option<StepInfo> {
        if let Some(m) = self.ledger.jobs.get(&job) {
            let s = m.steps.get(step as usize)?;
            let names: Vec<&str> = s.nodes.iter().map(|&n| cluster.nodes[n as usize].name.as_str()).collect();
            return Some(s.info(job, &hostlist::compress(&names)));
        }
        self.ledger.done.get(&job)?.steps.get(step as usize).cloned()
    }

    fn event(&mut self, cluster: &Cluster, now: i64, ev: &Event, inputs: &mut VecDeque<Input>) {
        match ev {
            Event::Submit { first, user, uid, gid, req } => self.submit(cluster, now, *first, user, *uid, *gid, req, inputs),
            Event::Cancel(j) => inputs.push_back(Input::Cancel(JobId(*j))),
            // the user's hold is the engine's (a gate of the job)
            Event::Hold(j) => inputs.push_back(Input::Hold(JobId(*j))),
            Event::Release(j) => inputs.push_back(Input::Release(JobId(*j))),
            Event::Suspend(j) => inputs.push_back(Input::Suspend(JobId(*j))),
            Event::Resume(j) => inputs.push_back(Input::Resume(JobId(*j))),
            Event::Requeue(j) => inputs.push_back(Input::Requeue(JobId(*j))),
            Event::Node { node, change, reason } => {
                let n = *node as usize;
                let change = match change {
                    NodeChange::Down => {
                        self.ledger.admin_down[n] = true;
                        NodeChange::Down
                    }
                    NodeChange::Up | NodeChange::Resume if self.ledger.node_agent[n].is_none() => {
                        self.ledger.admin_down[n] = false;
                        if *change == NodeChange::Resume {
                            inputs.push_back(Input::Node { node: *node, change: NodeChange::Resume, reason: String::new() });
                        }
                        inputs.push_back(Input::Node { node: *node, change: NodeChange::Down, reason: NO_AGENT.into() });
                        return;
                    }
                    c => {
                        if matches!(c, NodeChange::Up | NodeChange::Resume) {
                            self.ledger.admin_down[n] = false;
                        }
                        *c
                    }
                };
                inputs.push_back(Input::Node { node: *node, change, reason: reason.clone() });
            }
            Event::AgentUp { agent, nodes } => {
                for &n in nodes {
                    self.ledger.node_agent[n as usize] = Some(agent.clone());
                    if !self.ledger.admin_down[n as usize] {
                        inputs.push_back(Input::Node { node: n, change: NodeChange::Up, reason: String::new() });
                    }
                }
            }
            Event::AgentLost { agent } => {
                for n in 0..self.ledger.node_agent.len() {
                    if self.ledger.node_agent[n].as_deref() == Some(agent) {
                        self.ledger.node_agent[n] = None;
                        let reason = format!("agent {agent} stopped answering");
                        inputs.push_back(Input::Node { node: n as u32, change: NodeChange::Down, reason });
                    }
                }
            }
            // applied by `apply`, which holds the cluster and makes the pass
            Event::End { job, attempt, code } => {
                if self.ledger.jobs.get(job).is_some_and(|m| m.attempt == *attempt && m.req.no_shell) && matches!(self.engine.job(JobId(*job)), Some((_, JobState::Running { .. }))) {
                    inputs.push_back(Input::Complete { job: JobId(*job), outcome: Outcome::Exited(*code) });
                }
            }
            Event::Reconfigure { .. } | Event::PassLater | Event::StepStart(_) | Event::StepEnded(_) | Event::StepSignal { .. } => {}
            Event::SetBudget { watts } => inputs.push_back(Input::SetBudget { watts: *watts }),
            Event::Reserve(spec) => inputs.push_back(Input::Reserve(spec.clone())),
            Event::Unreserve(name) => inputs.push_back(Input::Unreserve(name.clone())),
            Event::SetAccounts(a) => inputs.push_back(Input::SetAccounts(a.clone())),
            Event::DecisionTime { micros } => inputs.push_back(Input::DecisionTime { micros: *micros }),
            Event::Throttle { job, attempt, cap_w } => {
                if self.ledger.jobs.get(job).is_some_and(|m| m.attempt == *attempt && m.start.is_some()) {
                    inputs.push_back(Input::CapCeiling { job: JobId(*job), cap_w: *cap_w });
                }
            }
            Event::Resized { job, attempt } => {
                if self.awaits_resize(*job, *attempt) {
                    inputs.push_back(Input::Resized(JobId(*job)));
                }
            }
            Event::Ended(x) => {
                let Some(m) = self.ledger.jobs.get_mut(&x.job) else { return };
                if m.attempt != x.attempt || m.start.is_none() {
                    return; // a run the controller already closed
                }
                m.cpu_s = x.cpu_s;
                m.exit = Some((x.code, x.signal));
                m.failure = x.failure;
                m.usage = x.usage;
                // a run that exited by itself: if the controller was killing
                // it at its limit meanwhile, its agent's account stands
                // (see `finished`)
                m.ended_at = (x.signal.is_none() && x.code.is_some() && !x.limit_hit).then_some(x.end);
                // the agent enforced the limit while the controller was away
                m.limit_hit = x.limit_hit;
                let outcome = match (x.code, x.signal) {
                    // the kernel killed a process of it for its memory
                    _ if x.usage.is_some_and(|u| u.oom_kills > 0) => Outcome::OutOfMemory,
                    (_, Some(s)) => Outcome::Signaled(s),
                    (Some(c), None) => Outcome::Exited(c),
                    (None, None) => Outcome::NodeFailed,
                };
                inputs.push_back(Input::Complete { job: JobId(x.job), outcome });
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn submit(&mut self, cluster: &Cluster, now: i64, first: u64, user: &str, uid: u32, gid: u32, req: &JobRequest, inputs: &mut VecDeque<Input>) {
        let tasks: Vec<Option<u32>> = match &req.array {
            Some(a) => a.indices.iter().map(|&i| Some(i)).collect(),
            None => vec![None],
        };
        let nodeset = req.nodeset.as_deref().map(|s| tessera_core::NodeSetSpec::parse_job(s).expect("validated at submit"));
        let throttle = req.array.as_ref().and_then(|a| a.max_running);
        let parm = self.engine.policy() == tessera_core::PolicyKind::Parm;
        if let Some(k) = &req.idempotency_key {
            let k = submission_key(uid, k);
            for i in 0..tasks.len() as u64 {
                self.ledger.key_of.insert(first + i, k.clone());
            }
            self.ledger.keys.insert(k, (first, tasks.len() as u64, tasks.len() as u64, crate::request::digest(req)));
        }
        // dependencies on jobs that ended before are met (one that can never
        // be met was refused at submit); the engine waits for the others
        let after: Vec<After> = req
            .dependencies
            .iter()
            .filter(|(_, d)| !self.ledger.outcomes.contains_key(d))
            .filter(|(_, d)| {
                let live = self.engine.job(JobId(*d)).is_some();
                if !live {
                    tracing::warn!(job = first, on = d, "a dependency on a job the controller no longer knows: taken as met");
                }
                live
            })
            .map(|&(kind, d)| After { kind: after_kind(kind), job: JobId(d), delay: 0 })
            .collect();
        let choice = req.choice(cluster);
        for (k, task) in tasks.iter().enumerate() {
            let id = first + k as u64;
            let mut spec = req.spec(id, cluster, parm);
            // checked at admission: an error here means the accounts changed
            // between, and the engine refuses the job with the reason
            spec.ticket = ticket_of(&self.engine, user, req).ok().flatten();
            // (a reservation deleted between admission and now: the job
            // runs outside it)
            spec.reservation = resv_of(&self.engine, user, req, spec.ticket).ok().flatten();
            spec.requeue = req.requeue;
            spec.hold = req.hold;
            spec.throttle = throttle.map(|limit| Throttle { array: first, limit });
            spec.singleton = req.singleton.then(|| singleton_key(user, &req.name));
            self.ledger.jobs.insert(
                id,
                JobMeta {
                    id,
                    user: user.to_string(),
                    uid,
                    gid,
                    req: req.clone(),
                    array: task.map(|t| (first, t)),
                    submit: now,
                    attempt: 0,
                    nodes: Vec::new(),
                    start: None,
                    limit_real: None,
                    cpu_s: 0.0,
                    exit: None,
                    requeues: 0,
                    ended_at: None,
                    failure: None,
                    released: Vec::new(),
                    released_since: None,
                    limit_hit: false,
                    cap_w: None,
                    power_end: None,
                    usage: None,
                    steps: Vec::new(),
                },
            );
            inputs.push_back(Input::submission(spec, nodeset.clone(), after.clone(), choice.clone()));
        }
        self.ledger.next_id = self.ledger.next_id.max(first + tasks.len() as u64);
    }

    /// Why a queued job waits (None: eligible, waiting for the next pass), if
    /// the controller knows the job.
    fn waiting(&self, id: u64) -> Option<Option<PendingReason>> {
        self.ledger.jobs.get(&id)?;
        Some(self.engine.pending_reason(self.ledger.now, JobId(id)))
    }

    /// The name of a queued job's pending reason (squeue's REASON), without
    /// the words that explain it: what `/metrics` counts, for every queued job.
    pub fn pending_name(&self, id: u64) -> Option<&'static str> {
        Some(self.waiting(id)?.as_ref().map_or("None", reason_name))
    }

    /// A queued job's pending reason: its name and what it means.
    pub fn pending(&self, id: u64) -> Option<(&'static str, String)> {
        let r = self.waiting(id)?;
        let text = match &r {
            Some(PendingReason::Held) => "held by its user (tessera job release)".to_string(),
            Some(PendingReason::Dependency) => {
                let on: Vec<String> = self.engine.waits_for(JobId(id)).iter().map(|a| format!("{}:{}", after_name(a.kind), a.job)).collect();
                match on.is_empty() {
                    true => "waits for an earlier job of its name and user to end (singleton)".to_string(),
                    false => format!("waits for {}", on.join(",")),
                }
            }
            Some(PendingReason::ArrayLimit) => "its array's %N limit of running tasks".to_string(),
            Some(r) => r.to_string(),
            None => "eligible: waiting for the next pass".to_string(),
        };
        Some((r.as_ref().map_or("None", reason_name), text))
    }

    /// The job a user names: its id, or the job of an array task (live, or
    /// finished and still listed).
    pub fn resolve(&self, r: tessera_proto::api::JobRef) -> Result<u64, crate::ApiError> {
        use tessera_proto::api::JobRef;
        match r {
            JobRef::Id(id) => Ok(id),
            JobRef::Task(a, t) => self
                .ledger
                .jobs
                .values()
                .find(|m| m.array == Some((a, t)))
                .map(|m| m.id)
                .or_else(|| self.ledger.done.values().find(|d| d.info.display_id == r.to_string()).map(|d| d.info.id))
                .ok_or_else(|| crate::ApiError::new(404, format!("no array task {r} (finished jobs are in tessera acct)"))),
        }
    }

    /// The tasks of array job `a` still known (live, or finished and listed),
    /// by id.
    fn array_tasks(&self, a: u64) -> Vec<u64> {
        let mut ids: Vec<u64> = self.ledger.jobs.values().filter(|m| m.array.is_some_and(|(x, _)| x == a)).map(|m| m.id).collect();
        let prefix = format!("{a}_");
        ids.extend(self.ledger.done.values().filter(|d| d.info.display_id.starts_with(&prefix)).map(|d| d.info.id));
        ids.sort_unstable();
        ids
    }

    /// Dependencies as job ids, as Slurm reads them: an array job stands for
    /// every one of its tasks, an array task (`N_T`) for that task's job.
    pub fn resolve_dependencies(&self, r: &mut JobRequest) -> Result<(), crate::ApiError> {
        let mut deps = Vec::new();
        for &(kind, on) in &r.dependencies {
            let tasks = self.array_tasks(on);
            if tasks.is_empty() {
                deps.push((kind, on));
            } else {
                deps.extend(tasks.into_iter().map(|t| (kind, t)));
            }
        }
        for &(kind, a, t) in &r.dependency_tasks {
            let id = self.resolve(tessera_proto::api::JobRef::Task(a, t)).map_err(|_| {
                crate::ApiError::option(tessera_proto::submit::OptionError {
                    option: "--dependency".into(),
                    value: format!("{}:{a}_{t}", dependency_name(kind)),
                    expected: format!("an array task that exists or ended less than {DONE_KEEP_S} s ago (task {a}_{t} is not known)"),
                    line: None,
                })
            })?;
            deps.push((kind, id));
        }
        deps.dedup();
        r.dependencies = deps;
        r.dependency_tasks.clear();
        Ok(())
    }

    pub fn job_info(&self, cluster: &Cluster, id: u64) -> Option<JobInfo> {
        if let Some(d) = self.ledger.done.get(&id) {
            return Some(d.info.clone());
        }
        let (_, st) = self.engine.job(JobId(id))?;
        let (code, reason) = match st {
            JobState::Pending | JobState::Held => (JobStateCode::Pending, self.pending(id)?),
            JobState::Running { .. } => (JobStateCode::Running, ("None", String::new())),
            JobState::Suspended { .. } => (JobStateCode::Suspended, ("None", String::new())),
            JobState::Ending { .. } => (JobStateCode::Completing, ("None", String::new())),
        };
        let m = self.ledger.jobs.get(&id)?;
        let mut info = self.ledger.info_of(cluster, m, code, reason.0.to_string());
        info.reason_detail = reason.1;
        info.elapsed_s = match st {
            JobState::Running { start } | JobState::Ending { start, .. } => self.ledger.now - start,
            JobState::Suspended { start, since, .. } => since - start,
            _ => 0,
        };
        Some(info)
    }


    /// What the agent of a running job's first node runs (see
    /// [`Ledger::launch_of`]).
    pub fn launch_of(&self, cluster: &Cluster, id: u64) -> Option<Launch> {
        self.ledger.launch_of(&self.engine, cluster, id)
    }

    /// Live jobs: running ones by id, then the queue in order.
    pub fn live_ids(&self) -> Vec<u64> {
        let mut running: Vec<u64> = self.ledger.jobs.keys().copied().filter(|id| self.engine.job(JobId(*id)).is_some_and(|(_, s)| !s.queued())).collect();
        running.extend(self.engine.queue().map(|j| j.0));
        running
    }

    /// Jobs an agent should hold, with what it should be doing to each:
    /// (job, attempt, first node, engine state).
    pub fn expected_on(&self, agent: &str) -> Vec<(u64, u32, u32, JobState)> {
        self.ledger.jobs
            .values()
            .filter_map(|m| {
                let n = *m.nodes.first()?;
                let (_, st) = self.engine.job(JobId(m.id))?;
                // an allocation without a batch script runs on no agent
                (!st.queued() && !m.req.no_shell && self.ledger.node_agent[n as usize].as_deref() == Some(agent)).then_some((m.id, m.attempt, n, st))
            })
            .collect()
    }
}

/// The controller's side of [`tessera_core::step`] for one batch.
struct Carry<'a> {
    ledger: &'a mut Ledger,
    cluster: &'a Cluster,
    out: &'a mut Vec<Action>,
    /// Inputs the effects made due at once (a job nobody runs any more ends;
    /// a dependency released).
    due: VecDeque<Input>,
}

impl tessera_core::Driver for Carry<'_> {
    fn effect(&mut self, engine: &Engine, now: i64, e: Effect) {
        self.ledger.effect(engine, self.cluster, now, e, &mut self.due, self.out);
    }

    fn due(&mut self, _now: i64, inputs: &mut Vec<Input>) {
        inputs.extend(self.due.drain(..));
    }

    fn pass_begins(&mut self, _engine: &Engine, now: i64) {
        if self.ledger.wake.is_some_and(|t| t <= now) {
            self.ledger.wake = None; // this pass consumes it
        }
    }
}

impl Ledger {
    fn effect(&mut self, engine: &Engine, cluster: &Cluster, now: i64, e: Effect, inputs: &mut VecDeque<Input>, out: &mut Vec<Action>) {
        match e {
            Effect::Start { job, alloc, limit } => {
                let m = self.jobs.get_mut(&job.0).expect("the controller knows every job the engine starts");
                m.attempt += 1;
                m.start = Some(now);
                m.nodes = alloc.parts.iter().map(|p| p.node).collect();
                m.limit_real = if m.req.unlimited { None } else { limit };
                m.exit = None;
                m.ended_at = None;
                m.limit_hit = false;
                m.failure = None;
                m.cpu_s = 0.0;
                m.usage = None;
                m.steps.clear();
                m.released.clear();
                m.released_since = None;
                m.cap_w = engine.power_config(job).map(|(_, cap)| cap);
                m.power_end = engine.power_end(job);
                if let Some(cap_w) = m.cap_w {
                    // the caps are set before the job starts on its nodes
                    out.extend(m.nodes.iter().map(|&node| Action::Power { node, cap_w, busy: true }));
                }
                let node = m.nodes[0];
                tracing::info!(job = m.id, node = %cluster.nodes[node as usize].name, attempt = m.attempt, "start");
                if !m.req.no_shell {
                    let launch = self.launch_of(engine, cluster, job.0).expect("a started job has a launch");
                    out.push(Action::Launch { node, launch: Box::new(launch) });
                }
            }
            Effect::Kill { job, reason } => {
                let Some(m) = self.jobs.get(&job.0) else { return };
                let node = m.nodes[0];
                tracing::info!(job = m.id, ?reason, "kill");
                // the nodes its running steps' tasks are on
                out.extend(m.step_nodes().into_iter().filter(|&n| self.node_agent[n as usize].is_some()).map(|n| Action::Kill { node: n, job: job.0, attempt: m.attempt }));
                if m.req.no_shell {
                    // no batch script to end: the allocation ends now
                    inputs.push_back(Input::Complete { job, outcome: Outcome::Signaled(9) });
                } else if self.node_agent[node as usize].is_some() {
                    out.push(Action::Kill { node, job: job.0, attempt: m.attempt });
                } else {
                    // nobody runs it any more: its first node's agent is gone
                    inputs.push_back(Input::Complete { job, outcome: Outcome::NodeFailed });
                }
            }
            Effect::Suspend { job } => {
                let by_operator = matches!(engine.job(job), Some((_, JobState::Suspended { by: tessera_core::SuspendedBy::Operator, .. })));
                if let Some(m) = self.jobs.get_mut(&job.0) {
                    if !by_operator {
                        m.released_since = Some(now);
                    }
                    // its batch script's node, and its steps' other nodes
                    out.push(Action::Suspend { node: m.nodes[0], job: job.0, attempt: m.attempt, at: now });
                    out.extend(m.step_nodes().into_iter().map(|node| Action::Suspend { node, job: job.0, attempt: m.attempt, at: now }));
                }
            }
            Effect::Resume { job } => {
                if let Some(m) = self.jobs.get_mut(&job.0) {
                    if let Some(s) = m.released_since.take() {
                        m.released.push((s, now));
                    }
                    out.push(Action::Resume { node: m.nodes[0], job: job.0, attempt: m.attempt, at: now });
                    out.extend(m.step_nodes().into_iter().map(|node| Action::Resume { node, job: job.0, attempt: m.attempt, at: now }));
                }
            }
            Effect::WakeAt(t) => self.wake = Some(t),
            Effect::Requeued { job } => {
                if let Some(m) = self.jobs.get_mut(&job.0) {
                    m.requeues += 1;
                    m.start = None;
                    if let Some(cap_w) = m.cap_w.take() {
                        out.extend(m.nodes.iter().map(|&node| Action::Power { node, cap_w, busy: false }));
                    }
                    m.nodes.clear();
                    tracing::info!(job = job.0, "requeued");
                }
            }
            Effect::Configure { job, cap_w, end, .. } => {
                let Some(m) = self.jobs.get_mut(&job.0) else { return };
                let nodes: Vec<u32> = engine.allocation(job).map(|a| a.parts.iter().map(|p| p.node).collect()).unwrap_or_default();
                if nodes == m.nodes && m.cap_w == Some(cap_w) && m.power_end == Some(end) {
                    return; // as it runs
                }
                m.power_end = Some(end);
                tracing::info!(job = m.id, nodes = nodes.len(), cap_w, "reconfigure");
                // nodes it gave back idle (at the cap they had), then the
                // cap of those it holds
                out.extend(m.nodes.iter().filter(|n| !nodes.contains(n)).map(|&node| Action::Power { node, cap_w: m.cap_w.unwrap_or(cap_w), busy: false }));
                out.extend(nodes.iter().map(|&node| Action::Power { node, cap_w, busy: true }));
                m.nodes = nodes.clone();
                m.cap_w = Some(cap_w);
                out.push(Action::Reconfigure { node: nodes[0], job: job.0, attempt: m.attempt, nodes, cap_w, at: now, end });
            }
            Effect::Rejected { input, job, reason } => {
                tracing::warn!(job = job.map(|j| j.0), input, %reason, "the engine refused an input");
            }
            Effect::Finished(rec) => self.finished(engine, cluster, now, *rec, out),
        }
    }
    fn finished(&mut self, engine: &Engine, cluster: &Cluster, now: i64, rec: tessera_core::JobRecord, out: &mut Vec<Action>) {
        let id = rec.spec.id.0;
        // the account it charged: its ticket's, else the one it gave, else its
        // user's name (as before accounts)
        let account = match (rec.spec.ticket, engine.shares()) {
            (Some(t), Some(v)) if v.accounts.valid(&t) => v.accounts.get(t.assoc).account.clone(),
            _ => self.jobs.get(&id).map(|m| m.req.account.clone().unwrap_or_else(|| m.user.clone())).unwrap_or_default(),
        };
        let Some(m) = self.jobs.remove(&id) else { return };
        // the nodes its steps ran on give back what they kept for it
        let mut step_nodes: Vec<u32> = m.steps.iter().flat_map(|s| s.nodes.iter().copied()).collect();
        step_nodes.sort_unstable();
        step_nodes.dedup();
        out.extend(step_nodes.into_iter().filter(|&n| self.node_agent[n as usize].is_some()).map(|n| Action::Kill { node: n, job: id, attempt: m.attempt }));
        if let (Some(cap_w), Some(_)) = (m.cap_w, rec.start) {
            // its nodes idle, at the cap they had
            out.extend(m.nodes.iter().map(|&node| Action::Power { node, cap_w, busy: false }));
        }
        // a run that exited by itself before its limit, whose end reached the
        // controller (down, or its agent down) only after it had killed the job
        // at the limit: the agent's account stands, not the kill's
        let mut rec = rec;
        if rec.state == FinalState::Failed && m.limit_hit {
            rec.state = FinalState::Timeout;
        }
        if let (FinalState::Timeout, Some(e), Some(l), Some(Outcome::Exited(c)), Some(s)) = (rec.state, m.ended_at, m.limit_real, rec.outcome, rec.start) {
            if e < s + l + rec.suspended_s {
                rec.state = if c == 0 { FinalState::Completed } else { FinalState::Failed };
                rec.end = e.max(s + rec.suspended_s);
                tracing::info!(job = id, end = rec.end, "ended before its limit, reported after the kill: recorded as its agent saw it");
            }
        }
        let ok = rec.state == FinalState::Completed;
        let tag = match rec.state {
            FinalState::Completed => JobStateTag::Completed,
            FinalState::Failed => JobStateTag::Failed,
            FinalState::Cancelled => JobStateTag::Cancelled,
            FinalState::Timeout => JobStateTag::Timeout,
            FinalState::NodeFail => JobStateTag::NodeFail,
            FinalState::OutOfMemory => JobStateTag::OutOfMemory,
        };
        let (code, signal) = match rec.outcome {
            Some(Outcome::Exited(c)) => (Some(c), None),
            Some(Outcome::Signaled(s)) => (None, Some(s)),
            // as its first process ended
            Some(Outcome::OutOfMemory) => m.exit.unwrap_or((None, None)),
            _ => (None, None),
        };
        let start = rec.start.unwrap_or(rec.end);
        let state = match rec.state {
            FinalState::Completed => JobStateCode::Completed,
            FinalState::Failed => JobStateCode::Failed,
            FinalState::Cancelled => JobStateCode::Cancelled,
            FinalState::Timeout => JobStateCode::Timeout,
            FinalState::NodeFail => JobStateCode::NodeFail,
            FinalState::OutOfMemory => JobStateCode::OutOfMemory,
        };
        // the paths as `job show` gives them, for a failed launch's reason
        let mut info = self.info_of(cluster, &m, state, String::new());
        let reason = m.failure.map_or(String::new(), |f| f.describe(&info.workdir, &info.stdout, &info.stderr));
        // its steps, one still running cut short by the job's end
        let step_nodes = |st: &StepMeta| hostlist::compress(&st.nodes.iter().map(|&n| cluster.nodes[n as usize].name.as_str()).collect::<Vec<_>>());
        let steps: Vec<StepRecord> = m.steps.iter().map(|st| st.record(&step_nodes(st), rec.end, state)).collect();
        let step_infos: Vec<StepInfo> = m
            .steps
            .iter()
            .map(|st| {
                let mut st = st.clone();
                if st.end().is_none() {
                    st.cut = Some((if state == JobStateCode::NodeFail { JobStateCode::NodeFail } else { JobStateCode::Cancelled }, rec.end));
                }
                st.info(id, &step_nodes(&st))
            })
            .collect();
        let acct = AcctRecord {
            job_id: id as i64,
            name: m.req.name.clone(),
            user: m.user.clone(),
            group: m.gid.to_string(),
            account,
            partition: cluster.partitions[m.req.partition as usize].name.clone(),
            submit: m.submit,
            start,
            end: rec.end,
            suspended_s: rec.suspended_s,
            state: tag,
            // Slurm's CODE:SIGNAL: a job ended by a signal exited with no code
            exit_code: code.unwrap_or(0),
            signal: signal.unwrap_or(0),
            reason: reason.clone(),
            array: m.array.map(|(a, t)| (a as i64, t)),
            req_procs: m.req.procs,
            req_mem_mb: m.req.mem_per_proc_mb * m.req.procs as u64,
            time_limit: m.req.limit_s,
            factor: rec.alloc.as_ref().map_or(1.0, |a| a.factor),
            cpu_s: rec.start.map(|_| m.cpu_s),
            energy_j: rec.usage.map(|u| u.energy_j),
            allocations: rec
                .alloc
                .as_ref()
                .map(|a| a.parts.iter().map(|p| AllocationRecord { node: p.node, cores: p.cores, memory_mb: p.mem, gpus: p.gpus }).collect())
                .unwrap_or_default(),
            // a job killed while parked had its cores given back until its end
            released: m.released.iter().copied().chain(m.released_since.map(|s| (s, rec.end))).collect(),
            max_rss_kb: m.usage.map(|u| u.max_rss_kb).into_iter().chain(steps.iter().filter_map(|s| s.max_rss_kb)).max(),
            // the batch script's step, on the job's first node, then its own
            steps: match (rec.start, m.nodes.first()) {
                (Some(s), Some(&first)) if !m.req.no_shell => vec![StepRecord {
                    step: "batch".into(),
                    name: "batch".into(),
                    node_list: cluster.nodes[first as usize].name.clone(),
                    ntasks: 1,
                    start: s,
                    end: rec.end,
                    state: tag,
                    exit_code: code.unwrap_or(0),
                    signal: signal.unwrap_or(0),
                    cpu_s: Some(m.cpu_s),
                    max_rss_kb: m.usage.map(|u| u.max_rss_kb),
                }],
                _ => Vec::new(),
            }
            .into_iter()
            .chain(steps)
            .collect(),
        };
        out.push(Action::Record(Box::new(acct)));
        if m.failure.is_some() {
            info.reason = "LaunchFailed".into();
            info.reason_detail = reason;
        }
        info.start = rec.start;
        info.end = Some(rec.end);
        info.elapsed_s = rec.start.map_or(0, |s| rec.end - s - rec.suspended_s);
        info.exit_code = code;
        info.signal = signal;
        info.requeues = rec.requeues;
        tracing::info!(job = id, state = state.name(), "finished");
        self.done.insert(id, Done { info, ok, steps: step_infos });
        self.done_order.push_back((now, id));
        self.outcomes.insert(id, ok);
    }
    /// What the agent of a running job's first node runs: the script with its
    /// environment (Slurm's and Tessera's variables), output paths and limit.
    pub fn launch_of(&self, engine: &Engine, cluster: &Cluster, id: u64) -> Option<Launch> {
        let m = self.jobs.get(&id)?;
        let alloc = engine.allocation(JobId(id))?;
        let names: Vec<&str> = m.nodes.iter().map(|&n| cluster.nodes[n as usize].name.as_str()).collect();
        let first = *names.first()?;
        let nodelist = hostlist::compress(&names);
        let array = m.array;
        let mut env = m.req.env.clone();
        let part = &cluster.partitions[m.req.partition as usize].name;
        let vars: [(&str, String); 11] = [
            ("JOB_ID", m.id.to_string()),
            ("JOB_NAME", m.req.name.clone()),
            ("JOB_NODELIST", nodelist.clone()),
            ("NODELIST", nodelist.clone()),
            ("NTASKS", m.req.ntasks.to_string()),
            ("JOB_NUM_NODES", m.nodes.len().to_string()),
            ("CPUS_ON_NODE", alloc.parts[0].cores.to_string()),
            ("SUBMIT_DIR", m.req.workdir.clone()),
            ("JOB_PARTITION", part.clone()),
            ("JOB_USER", m.user.clone()),
            ("RESTART_COUNT", m.requeues.to_string()),
        ];
        for prefix in ["TESSERA_", "SLURM_"] {
            for (k, v) in &vars {
                env.insert(format!("{prefix}{k}"), v.clone());
            }
            if let Some((a, t)) = array {
                env.insert(format!("{prefix}ARRAY_JOB_ID"), a.to_string());
                env.insert(format!("{prefix}ARRAY_TASK_ID"), t.to_string());
            }
        }
        env.insert("SLURM_JOBID".into(), m.id.to_string());
        env.insert("SLURM_NNODES".into(), m.nodes.len().to_string());
        if let Some(cap) = m.cap_w {
            // the CPU cap its nodes run at, and when the scheduler's model
            // expects it to end (docs/live.md, "Power-aware scheduling live")
            env.insert("TESSERA_POWER_CAP_W".into(), format!("{cap}"));
            if let Some(end) = engine.power_end(JobId(id)) {
                env.insert("TESSERA_POWER_END".into(), end.to_string());
            }
        }
        env.insert("SLURM_NPROCS".into(), alloc.procs.to_string());
        env.insert("SLURMD_NODENAME".into(), first.to_string());
        env.insert("TESSERA_NODENAME".into(), first.to_string());
        // Tessera's own: when the controller accepted and started the job (Unix
        // seconds), which `tessera sleep-job` records when not told otherwise
        env.insert("TESSERA_SUBMIT_TIME".into(), m.submit.to_string());
        if let Some(s) = m.start {
            env.insert("TESSERA_START_TIME".into(), s.to_string());
        }
        Some(Launch {
            job: m.id,
            attempt: m.attempt,
            name: m.req.name.clone(),
            user: m.user.clone(),
            uid: m.uid,
            gid: m.gid,
            script: m.req.script.clone(),
            workdir: m.req.workdir.clone(),
            stdout: m.output_path(&m.req.stdout, first),
            stderr: m.output_path(&m.req.stderr, first),
            env,
            limit_s: m.limit_real,
            kill_grace_s: self.kill_grace_s,
            shares: alloc.parts.iter().map(|p| NodeShare { node: cluster.nodes[p.node as usize].name.clone(), cores: p.cores, memory_mb: p.mem, gpus: p.gpus }).collect(),
            suspend_tstp: m.req.suspend_tstp,
            io: None,
            affinity: Vec::new(),
        })
    }
    fn info_of(&self, cluster: &Cluster, m: &JobMeta, state: JobStateCode, reason: String) -> JobInfo {
        let names: Vec<&str> = m.nodes.iter().map(|&n| cluster.nodes[n as usize].name.as_str()).collect();
        let first = names.first().copied().unwrap_or("%N");
        JobInfo {
            id: m.id,
            display_id: m.array.map_or_else(|| m.id.to_string(), |(a, t)| format!("{a}_{t}")),
            name: m.req.name.clone(),
            user: m.user.clone(),
            uid: m.uid,
            partition: cluster.partitions[m.req.partition as usize].name.clone(),
            state,
            reason,
            reason_detail: String::new(),
            submit: m.submit,
            start: m.start,
            end: None,
            elapsed_s: 0,
            time_limit_s: (!m.req.unlimited).then_some(m.req.limit_s),
            limit_on_nodes_s: m.start.and(m.limit_real),
            procs: m.req.procs,
            nodes: names.len() as u32,
            nodelist: if state == JobStateCode::Pending { String::new() } else { hostlist::compress(&names) },
            workdir: m.req.workdir.clone(),
            stdout: m.output_path(&m.req.stdout, first),
            stderr: m.output_path(&m.req.stderr, first),
            exit_code: m.exit.and_then(|e| e.0),
            signal: m.exit.and_then(|e| e.1),
            requeues: m.requeues,
        }
    }
}

impl JobMeta {
    /// The nodes its running steps' tasks are on, but the batch script's
    /// (whose cgroup holds the steps there): each is told of a kill or a
    /// suspension of the job as well.
    fn step_nodes(&self) -> Vec<u32> {
        let first = self.nodes.first().copied();
        let mut v: Vec<u32> = self
            .steps
            .iter()
            .filter(|s| s.end().is_none())
            .flat_map(|s| s.nodes.iter().zip(&s.ended).filter(|(_, e)| e.is_none()).map(|(&n, _)| n))
            .filter(|&n| Some(n) != first || self.req.no_shell)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// An output pattern expanded for this job on its first node, made absolute
    /// against its working directory.
    fn output_path(&self, pattern: &str, first_node: &str) -> String {
        let x = expand_pattern(pattern, self.id, &self.req.name, &self.user, first_node, self.array);
        if x.starts_with('/') {
            x
        } else {
            format!("{}/{}", self.req.workdir.trim_end_matches('/'), x)
        }
    }
}

/// The ticket of a job of `user` asking `req`'s account, QOS and nice, where
/// the engine has accounts (None where it has not); an unknown account or QOS,
/// or no association, is the option's error.
pub fn ticket_of(engine: &tessera_core::Engine, user: &str, req: &JobRequest) -> Result<Option<tessera_core::share::Ticket>, tessera_proto::submit::OptionError> {
    let Some(v) = engine.shares() else { return Ok(None) };
    v.accounts.ticket(user, req.account.as_deref(), req.qos.as_deref(), req.nice).map(Some).map_err(|e| {
        use tessera_core::share::TicketError::*;
        let (option, value) = match &e {
            UnknownQos(q) | QosNotAllowed { qos: q, .. } => ("--qos", q.clone()),
            UnknownAccount(a) | NoAssociation { account: a, .. } => ("--account", a.clone()),
            NoDefaultAccount(u) => ("--account", format!("(none given; user {u} has no default)")),
        };
        tessera_proto::submit::OptionError { option: option.into(), value, expected: format!("an account and QOS of the cluster's accounts ({e})"), line: None }
    })
}

/// The reservation a job asks for (`--reservation`), if it exists and admits
/// the job's user or account (its ticket's, else the one it names).
pub fn resv_of(engine: &tessera_core::Engine, user: &str, req: &JobRequest, ticket: Option<tessera_core::share::Ticket>) -> Result<Option<u32>, tessera_proto::submit::OptionError> {
    let Some(name) = &req.reservation else { return Ok(None) };
    let err = |expected: String| tessera_proto::submit::OptionError { option: "--reservation".into(), value: name.clone(), expected, line: None };
    let Some(r) = engine.reservation(name) else {
        let known: Vec<&str> = engine.reservations().iter().map(|r| r.spec.name.as_str()).collect();
        return Err(err(format!("an advance reservation ({})", if known.is_empty() { "there are none".to_string() } else { known.join(", ") })));
    };
    let account = match (ticket, engine.shares()) {
        (Some(t), Some(v)) if v.accounts.valid(&t) => Some(v.accounts.get(t.assoc).account.clone()),
        _ => req.account.clone(),
    };
    if !r.admits(user, account.as_deref()) {
        return Err(err(format!("a reservation that admits user {user}{} ({name} is for {})", account.map(|a| format!(" or account {a}")).unwrap_or_default(), if r.spec.maint { "maintenance".to_string() } else { [r.spec.users.clone(), r.spec.accounts.iter().map(|a| format!("account {a}")).collect()].concat().join(", ") })));
    }
    Ok(Some(r.id))
}

/// Slurm's short name of a pending reason (squeue's REASON), for `tessera queue`.
pub fn reason_name(r: &PendingReason) -> &'static str {
    match r {
        PendingReason::Resources { .. } => "Resources",
        PendingReason::Priority => "Priority",
        PendingReason::ReservedFor { .. } => "ReservedFor",
        PendingReason::NodeSet { .. } => "NodeSet",
        PendingReason::Held => "JobHeldUser",
        PendingReason::PowerBudget { .. } => "PowerBudget",
        PendingReason::Dependency => "Dependency",
        PendingReason::ArrayLimit => "JobArrayTaskLimit",
        PendingReason::BeginTime { .. } => "BeginTime",
        PendingReason::Limit { limit } => limit.name(),
        PendingReason::Reservation { .. } => "Reservation",
        PendingReason::Maintenance => "ReqNodeNotAvail, Reserved for maintenance",
    }
}

/// The singleton key of a user's job name (FNV-1a over `user`, a NUL byte and
/// `name`: the same on every build and every replay).
pub fn singleton_key(user: &str, name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in user.bytes().chain([0]).chain(name.bytes()) {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The engine's kind of a dependency.
pub fn after_kind(k: DependencyKind) -> AfterKind {
    match k {
        DependencyKind::AfterAny => AfterKind::Any,
        DependencyKind::AfterOk => AfterKind::Ok,
        DependencyKind::AfterNotOk => AfterKind::NotOk,
    }
}

/// A dependency's name, as `--dependency` spells it.
pub fn after_name(k: AfterKind) -> &'static str {
    match k {
        AfterKind::Any => "afterany",
        AfterKind::Ok => "afterok",
        AfterKind::NotOk => "afternotok",
    }
}

pub fn dependency_name(k: DependencyKind) -> &'static str {
    match k {
        DependencyKind::AfterAny => "afterany",
        DependencyKind::AfterOk => "afterok",
        DependencyKind::AfterNotOk => "afternotok",
    }
}
