//! The engine: `Engine::handle(now, input, &mut effects)` is the whole contract.
//!
//! Inputs are what happens outside (a submission, a cancellation, a completion
//! with its outcome, a node going down, an operator's hold, suspend or requeue,
//! and the driver's request for a scheduling pass). Effects are what the engine
//! asks the driver to do (start a job on an allocation, kill one and why, suspend
//! or resume one, reconfigure a power-aware job, wake it at an instant) or tell
//! it (a job's final record, an input that could not apply). Jobs start only in
//! a pass; a driver that delivers every completion and arrival of an instant
//! before the pass gets exactly the semantics in `docs/semantics.md`.
//!
//! The engine holds only live jobs: a job that ends leaves it, its final record
//! going to the driver, so memory follows the live jobs, not the history. Its
//! whole state can be saved and restored ([`Engine::snapshot`]).

use crate::cluster::Cluster;
use crate::contract::{
    Effect, Input, JobRecord, NeedsPowerMachine, NodeChange, Rejection, Submission, MAX_MEM_PER_PROC_MB,
    MAX_TIME,
};
use crate::gate::{Admission, Gates};
use crate::job::{After, FinalState, JobId, JobIdx, JobSpec, JobState, KillReason, Outcome, SuspendedBy};
use crate::nodes::{Allocation, NodeEngine, NodeStatus};
use crate::nodeset::NodeSetSpec;
use crate::pending::PendingReason;
use crate::policy::PolicyKind;
use crate::power::{ParmConfig, ParmEngine, PowerMachine, Usage};
use crate::table::JobTable;
use crate::Time;
use serde::{Deserialize, Serialize};


/// The machine behind the contract.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum Machine {
    /// FCFS, EASY or conservative on the nodes of a cluster (one node of N cores
    /// for a pool of N processors).
    Nodes(Box<NodeEngine>),
    /// PARM on an overprovisioned machine under a power budget.
    Parm(Box<ParmEngine>),
}

/// The scheduling engine.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Engine {
    pub(crate) t: JobTable,
    pub(crate) m: Machine,
    /// The last instant seen.
    pub(crate) now: Time,
    /// The last wake-up asked for.
    wake: Option<Time>,
    /// What queued jobs wait for besides resources (holds, dependencies,
    /// array throttles, begin times).
    #[serde(default)]
    pub(crate) gates: Gates,
    /// Node-set DELAY instants of pending jobs (when they may span sets). Entries
    /// of jobs that have started or left stay until their instant passes: they
    /// only cost a pass.
    delays: std::collections::BTreeSet<(Time, JobIdx)>,
    /// Accounts, fair share and multifactor priority (None: submission
    /// order, nobody charged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) share: Option<Box<crate::share::Sharing>>,
    /// [`crate::step::step`]'s lists of effects and inputs, empty between
    /// steps: kept so that a step allocates none.
    #[serde(skip)]
    pub(crate) step_bufs: (Vec<Effect>, Vec<Input>, Vec<Input>),
}

/// A saved engine state.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Snapshot(Engine);

impl Engine {
    /// One pool of `capacity` identical processors: a cluster of one node.
    pub fn new(policy: PolicyKind, capacity: u32) -> Result<Self, NeedsPowerMachine> {
        Self::with_cluster(policy, &Cluster::pool(capacity))
    }

    /// The nodes of a cluster, under FCFS, EASY or conservative backfilling.
    /// PARM needs a power-aware machine: [`Engine::parm`].
    pub fn with_cluster(policy: PolicyKind, cluster: &Cluster) -> Result<Self, NeedsPowerMachine> {
        if policy == PolicyKind::Parm {
            return Err(NeedsPowerMachine);
        }
        Ok(Self::build(Machine::Nodes(Box::new(NodeEngine::new(
            policy, cluster,
        )))))
    }

    /// The same engine, trying every queued job at every pass: the placement
    /// misses remembered within a pass (a job at least as large as one that could
    /// not be placed is not tried) are not used. For tests that check those
    /// shortcuts change no schedule.
    #[doc(hidden)]
    pub fn without_shortcuts(mut self) -> Self {
        if let Machine::Nodes(m) = &mut self.m {
            m.shortcuts = false;
        }
        self
    }

    /// PARM on an overprovisioned machine.
    pub fn parm(machine: PowerMachine, config: ParmConfig) -> Self {
        Self::build(Machine::Parm(Box::new(ParmEngine::new(machine, config))))
    }

    fn build(m: Machine) -> Self {
        Engine {
            t: JobTable::new(),
            m,
            now: Time::MIN,
            wake: None,
            gates: Gates::default(),
            delays: Default::default(),
            share: None,
            step_bufs: Default::default(),
        }
    }

    /// The one entry point.
    pub fn handle(&mut self, now: Time, input: Input, out: &mut Vec<Effect>) {
        let job = input.job();
        let kind = input.kind();
        if let Err(reason) = self.apply(now, input, out) {
            out.push(Effect::Rejected {
                input: kind,
                job,
                reason,
            });
        }
        self.ask_wake(out);
        #[cfg(debug_assertions)]
        self.sanity_check();
    }

    fn apply(&mut self, now: Time, input: Input, out: &mut Vec<Effect>) -> Result<(), Rejection> {
        if now > MAX_TIME || now < -MAX_TIME {
            return Err(Rejection::TimeOutOfRange(now));
        }
        if now < self.now {
            return Err(Rejection::TimeWentBack {
                now,
                last: self.now,
            });
        }
        self.now = now;
        if let Machine::Parm(m) = &mut self.m {
            // a decision that waits for acknowledgements stands only while
            // nothing else happens
            if !matches!(input, Input::Pass | Input::Resized(_) | Input::DecisionTime { .. }) {
                m.forget_deferred();
            }
        }
        match input {
            Input::Submit(s) => {
                let Submission { spec, nodeset, after, nodes } = *s;
                self.submit(now, spec, nodeset, after, nodes, out)
            }
            Input::Cancel(id) => {
                let j = self.lookup(id)?;
                match self.t.state(j) {
                    JobState::Pending | JobState::Held => {
                        self.finish(now, j, FinalState::Cancelled, None, out);
                        Ok(())
                    }
                    JobState::Running { .. } | JobState::Suspended { .. } => {
                        self.kill(now, j, KillReason::Cancel, out);
                        Ok(())
                    }
                    s @ JobState::Ending { .. } => {
                        Err(wrong(id, s, "cancel", "queued, running or suspended"))
                    }
                }
            }
            Input::Hold(id) | Input::Release(id) => {
                let hold = matches!(input, Input::Hold(_));
                let j = self.lookup(id)?;
                let s = self.t.state(j);
                let by_user = self.gates.gate(j).is_some_and(|g| g.user);
                match (hold, s.queued(), by_user) {
                    (true, true, false) | (false, true, true) => {
                        self.gates.set_user(j, hold);
                        self.t.set_held(j, self.gates.closed(j));
                        Ok(())
                    }
                    (true, ..) => Err(wrong(id, s, "hold", "queued and not held already")),
                    (false, ..) => Err(wrong(id, s, "release", "held by its user")),
                }
            }
            Input::Suspend(id) => {
                let j = self.lookup(id)?;
                let Machine::Nodes(m) = &mut self.m else {
                    return Err(self.unsupported("suspend"));
                };
                match self.t.state(j) {
                    JobState::Running { .. } => {
                        m.suspend(&self.t, j);
                        self.t.suspend(now, j, SuspendedBy::Operator);
                        out.push(Effect::Suspend { job: id });
                        Ok(())
                    }
                    s => Err(wrong(id, s, "suspend", "running")),
                }
            }
            Input::Resume(id) => {
                let j = self.lookup(id)?;
                let Machine::Nodes(m) = &mut self.m else {
                    return Err(self.unsupported("resume"));
                };
                match self.t.state(j) {
                    JobState::Suspended {
                        by: SuspendedBy::Operator,
                        ..
                    } => {
                        self.t.resume(now, j);
                        m.resume(&mut self.t, j);
                        out.push(Effect::Resume { job: id });
                        Ok(())
                    }
                    s => Err(wrong(id, s, "resume", "suspended by an operator")),
                }
            }
            Input::Requeue(id) => {
                let j = self.lookup(id)?;
                match self.t.state(j) {
                    JobState::Running { .. } | JobState::Suspended { .. } => {
                        self.kill(now, j, KillReason::Requeue, out);
                        Ok(())
                    }
                    s => Err(wrong(id, s, "requeue", "running or suspended")),
                }
            }
            Input::Complete { job: id, outcome } => {
                let j = self.lookup(id)?;
                let state = self.t.state(j);
                let requeue_on_failure = self.t.spec(j).requeue;
                let final_state = match (state, outcome) {
                    (JobState::Pending | JobState::Held, _) => {
                        return Err(wrong(id, state, "complete", "running, suspended or ending"))
                    }
                    (
                        JobState::Ending {
                            reason: KillReason::Cancel,
                            ..
                        },
                        _,
                    ) => Some(FinalState::Cancelled),
                    (
                        JobState::Ending {
                            reason: KillReason::TimeLimit,
                            ..
                        },
                        _,
                    ) => Some(FinalState::Timeout),
                    (
                        JobState::Ending {
                            reason: KillReason::Requeue,
                            ..
                        },
                        _,
                    ) => None,
                    (
                        JobState::Ending {
                            reason: KillReason::NodeFailure,
                            ..
                        },
                        _,
                    )
                    | (_, Outcome::NodeFailed)
                        if requeue_on_failure =>
                    {
                        None
                    }
                    (
                        JobState::Ending {
                            reason: KillReason::NodeFailure,
                            ..
                        },
                        _,
                    )
                    | (_, Outcome::NodeFailed) => Some(FinalState::NodeFail),
                    (_, Outcome::OutOfMemory) => Some(FinalState::OutOfMemory),
                    (_, Outcome::Exited(0)) => Some(FinalState::Completed),
                    (_, Outcome::Exited(_) | Outcome::Signaled(_)) => Some(FinalState::Failed),
                };
                match final_state {
                    Some(fs) => self.finish(now, j, fs, Some(outcome), out),
                    None => {
                        self.share_charge(now, j);
                        self.release(now, j);
                        self.t.requeue(j);
                        self.share_queued(now, j);
                        self.note_delay(j);
                        out.push(Effect::Requeued { job: id });
                    }
                }
                Ok(())
            }
            Input::Node {
                node,
                change,
                reason,
            } => {
                let set = |s: &mut NodeStatus| match change {
                    NodeChange::Down => {
                        s.up = false;
                        s.reason = reason;
                    }
                    NodeChange::Up => s.up = true,
                    NodeChange::Drain => {
                        s.drain = true;
                        s.reason = reason;
                    }
                    NodeChange::Resume => {
                        s.drain = false;
                        s.up = true;
                        s.power_fault = false;
                    }
                    NodeChange::PowerFault => {
                        s.drain = true;
                        s.power_fault = true;
                        s.reason = reason;
                    }
                };
                let kill = match &mut self.m {
                    Machine::Nodes(m) => {
                        let n = m.node_index(node).ok_or(Rejection::UnknownNode(node))?;
                        m.set_status(n, set);
                        if change == NodeChange::Down {
                            m.jobs_on(node)
                        } else {
                            Vec::new()
                        }
                    }
                    // a node outside the power-aware machine changes nothing
                    Machine::Parm(m) => m.set_status(node, set),
                };
                for j in kill {
                    if !matches!(self.t.state(j), JobState::Ending { .. }) {
                        self.kill(now, j, KillReason::NodeFailure, out);
                    }
                }
                Ok(())
            }
            Input::Pass => {
                // a pass at or after the wake-up asked for consumes it
                if self.wake.is_some_and(|w| w <= now) {
                    self.wake = None;
                }
                // begin times and dependencies' delays that have run out
                let mut open = Vec::new();
                self.gates.due(now, &mut open);
                self.open(open);
                while self.delays.first().is_some_and(|&(t, _)| t <= now) {
                    self.delays.pop_first();
                }
                // a shrunk job that has not acknowledged in time is killed
                let overdue = match &self.m {
                    Machine::Parm(m) => m.overdue(now),
                    Machine::Nodes(_) => Vec::new(),
                };
                for j in overdue {
                    if matches!(self.t.state(j), JobState::Running { .. }) {
                        self.kill(now, j, KillReason::ResizeTimeout, out);
                    }
                    if let Machine::Parm(m) = &mut self.m {
                        m.no_deadline(j); // its nodes stay with it until its end
                    }
                }
                self.share_pass(now);
                self.resv_pass(now);
                match &mut self.m {
                    Machine::Nodes(m) => m.pass(now, &mut self.t, out),
                    Machine::Parm(m) => m.pass(now, &mut self.t, out),
                }
                Ok(())
            }
            Input::Reserve(spec) => self.reserve(now, *spec),
            Input::Unreserve(name) => self.unreserve(now, &name),
            Input::SetAccounts(a) => self.set_accounts(*a),
            Input::Reconfigure(r) => {
                let Machine::Nodes(m) = &self.m else {
                    return Err(self.unsupported("reconfigure"));
                };
                let (t, m) = m.reconfigured(&self.t, &r).map_err(Rejection::CannotReconfigure)?;
                self.t = t;
                self.m = Machine::Nodes(Box::new(m));
                self.share_reconfigured(&r.cluster);
                // DELAY instants follow the new cluster's node-set delay
                self.delays.clear();
                let queued: Vec<_> = self.t.queued().map(|(_, j)| j).collect();
                for j in queued {
                    self.note_delay(j);
                }
                Ok(())
            }
            Input::SetBudget { watts } => {
                self.can_set_budget(watts)?;
                match &mut self.m {
                    Machine::Parm(m) => m.set_budget(watts),
                    Machine::Nodes(m) => m.set_budget(watts),
                }
                Ok(())
            }
            Input::CapCeiling { job, cap_w } => {
                let j = self.lookup(job)?;
                let state = self.t.state(j);
                if !matches!(state, JobState::Running { .. }) {
                    return Err(Rejection::WrongState { job, state: state.name(), input: "cap ceiling", needs: "running" });
                }
                if !(cap_w.is_finite() && cap_w > 0.0) {
                    return Err(Rejection::InvalidSpec { job, field: "cap_w", value: cap_w.to_string(), expected: "watts above 0" });
                }
                let done = match &mut self.m {
                    Machine::Parm(m) => m.cap_ceiling(now, &mut self.t, j, cap_w, out),
                    Machine::Nodes(m) => m.cap_ceiling(&self.t, j, cap_w, out),
                };
                done.ok_or(Rejection::Unsupported { input: "cap ceiling", engine: "queue without a power budget" })
            }
            Input::Resized(id) => {
                let j = self.lookup(id)?;
                let Machine::Parm(m) = &mut self.m else {
                    return Err(Rejection::Unsupported { input: "resized", engine: "queue" });
                };
                match m.resized(j) {
                    true => Ok(()),
                    false => Err(wrong(id, self.t.state(j), "resized", "shrunk and not yet acknowledged")),
                }
            }
            Input::DecisionTime { micros } => {
                let Machine::Parm(m) = &mut self.m else {
                    return Err(self.unsupported("decision time"));
                };
                m.charge_decision(micros as f64 * 1e-6, &mut self.t, out);
                Ok(())
            }
        }
    }

    /// Whether a job could be submitted: a valid spec that some state of the
    /// machine could run (its id aside). Drivers use it to sort out jobs that
    /// could never run before replaying them.
    pub fn can_run(&self, spec: &JobSpec, nodeset: Option<&NodeSetSpec>) -> Result<(), Rejection> {
        self.can_run_with(spec, nodeset, &crate::NodeChoice::default())
    }

    /// [`Engine::can_run`] for a job that names nodes it must use or may not.
    pub fn can_run_with(&self, spec: &JobSpec, nodeset: Option<&NodeSetSpec>, choice: &crate::NodeChoice) -> Result<(), Rejection> {
        self.vet(spec)?;
        self.resv_vet(spec)?;
        let never = |why| Rejection::NeverFits { job: spec.id, why };
        match &self.m {
            Machine::Nodes(m) => m
                .demand_of(spec, nodeset, choice, 0)
                .map(|_| ())
                .map_err(|e| never(e.why())),
            Machine::Parm(m) => match spec.power {
                _ if nodeset.is_some() => Err(never(NO_NODESETS)),
                None => Err(never(NO_PROFILE)),
                Some(pj) if !m.can_run(&pj) => Err(never(NO_SHAPE)),
                Some(_) => Ok(()),
            },
        }
    }

    fn vet(&self, spec: &JobSpec) -> Result<(), Rejection> {
        let id = spec.id;
        if spec.procs == 0 {
            return Err(Rejection::InvalidSpec {
                job: id,
                field: "procs",
                value: "0".into(),
                expected: "at least 1 processor",
            });
        }
        if spec.mem_per_proc_mb > MAX_MEM_PER_PROC_MB {
            return Err(Rejection::InvalidSpec {
                job: id,
                field: "mem_per_proc_mb",
                value: spec.mem_per_proc_mb.to_string(),
                expected: "at most 2^31 MiB per processor",
            });
        }
        if !(0..=MAX_TIME).contains(&spec.estimate) {
            return Err(Rejection::InvalidSpec {
                job: id,
                field: "estimate",
                value: spec.estimate.to_string(),
                expected: "0 to 2^42 seconds",
            });
        }
        let cpt = spec.shape.cpt();
        if spec.procs % cpt != 0 {
            return Err(Rejection::InvalidSpec {
                job: id,
                field: "shape.cpus_per_task",
                value: cpt.to_string(),
                expected: "a divisor of its processors (each task has that many)",
            });
        }
        if spec.shape.nodes > spec.procs / cpt {
            return Err(Rejection::InvalidSpec {
                job: id,
                field: "shape.nodes",
                value: spec.shape.nodes.to_string(),
                expected: "at most one node per task",
            });
        }
        Ok(())
    }

    fn submit(
        &mut self,
        now: Time,
        spec: JobSpec,
        nodeset: Option<NodeSetSpec>,
        after: Vec<After>,
        choice: crate::NodeChoice,
        out: &mut Vec<Effect>,
    ) -> Result<(), Rejection> {
        let id = spec.id;
        if self.t.lookup(id).is_some() {
            return Err(Rejection::DuplicateJob(id));
        }
        self.vet(&spec)?;
        self.share_vet(&spec)?;
        self.resv_vet(&spec)?;
        if let (Some(l), Some(ticket)) = (&self.t.limits, spec.ticket) {
            l.admit(&ticket, spec.procs, spec.mem_per_proc_mb, spec.estimate).map_err(|reason| Rejection::OverLimit { job: id, reason })?;
        }
        if let Err(on) = self.gates.check(&self.t, now, id, &after) {
            return Err(Rejection::InvalidSpec {
                job: id,
                field: "after",
                value: on.to_string(),
                expected: "jobs in the engine, or that ended at this instant, other than itself",
            });
        }
        let never = |why| Rejection::NeverFits { job: id, why };
        let j = match &mut self.m {
            Machine::Nodes(m) => {
                let (d, need, dropped) = m
                    .admit(&spec, nodeset.as_ref(), &choice, now)
                    .map_err(|e| never(e.why()))?;
                let j = self.t.insert_keyed(now, spec, need, m.filed_key(&d));
                m.attach(j, d, nodeset, dropped);
                self.note_delay(j);
                j
            }
            Machine::Parm(m) => {
                if nodeset.is_some() {
                    return Err(never(NO_NODESETS));
                }
                let Some(pj) = spec.power else {
                    return Err(never(NO_PROFILE));
                };
                if !m.can_run(&pj) {
                    return Err(never(NO_SHAPE));
                }
                let j = self.t.insert(now, spec, pj.n_min as u64);
                m.attach(j, pj);
                j
            }
        };
        self.share_queued(now, j);
        let admission = self.gates.attach(&self.t, now, j, &spec, after);
        self.t.set_held(j, self.gates.closed(j));
        if let Admission::Never = admission {
            self.finish(now, j, FinalState::Cancelled, None, out);
        }
        Ok(())
    }

    /// Jobs whose gates opened: they may start.
    fn open(&mut self, jobs: Vec<JobIdx>) {
        for j in jobs {
            if self.t.state(j) == JobState::Held && !self.gates.closed(j) {
                self.t.set_held(j, false);
            }
        }
    }

    /// Remember when a pending job with a DELAY node set may start spanning sets.
    fn note_delay(&mut self, j: JobIdx) {
        if let Machine::Nodes(m) = &self.m {
            if let Some(at) = m.delay_until(j) {
                if at > self.now {
                    self.delays.insert((at, j));
                }
            }
        }
    }

    fn unsupported(&self, input: &'static str) -> Rejection {
        Rejection::Unsupported {
            input,
            engine: "PARM",
        }
    }

    fn lookup(&self, id: JobId) -> Result<JobIdx, Rejection> {
        self.t.lookup(id).ok_or(Rejection::UnknownJob(id))
    }

    /// Ask the driver to kill a running or suspended job; it ends when the driver
    /// reports its completion.
    fn kill(&mut self, now: Time, j: JobIdx, reason: KillReason, out: &mut Vec<Effect>) {
        let e = self.t.get(j);
        let id = e.spec.id;
        match e.state {
            JobState::Running { start } => {
                let e = self.t.get_mut(j);
                e.ran += now - e.period;
                e.period = now;
                e.state = JobState::Ending {
                    start,
                    at: now,
                    reason,
                };
            }
            JobState::Suspended { start, since, .. } => {
                // back in the running list, expected to end now
                let e = self.t.get_mut(j);
                e.suspended_s += now - since;
                e.period = now;
                e.state = JobState::Ending {
                    start,
                    at: now,
                    reason,
                };
                if let Machine::Nodes(m) = &mut self.m {
                    m.resume_at(&mut self.t, j, now);
                }
            }
            _ => return,
        }
        out.push(Effect::Kill { job: id, reason });
    }

    /// Give back a job's resources; returns its allocation and usage.
    fn release(&mut self, now: Time, j: JobIdx) -> (Option<Allocation>, Option<Usage>) {
        match &mut self.m {
            Machine::Nodes(m) => {
                let usage = m.usage(&self.t, j, now);
                (m.release(&self.t, j), usage)
            }
            Machine::Parm(m) => m.release(now, j),
        }
    }

    /// The job leaves the engine; its record goes to the driver.
    fn finish(
        &mut self,
        now: Time,
        j: JobIdx,
        state: FinalState,
        outcome: Option<Outcome>,
        out: &mut Vec<Effect>,
    ) {
        self.share_charge(now, j);
        let (alloc, usage) = self.release(now, j);
        if let Machine::Nodes(m) = &mut self.m {
            m.detach(j);
        }
        let (mut open, mut never) = (Vec::new(), Vec::new());
        self.gates.leave(&self.t, now, j, &self.t.get(j).spec, state, &mut open, &mut never);
        let mut e = self.t.remove(j);
        if let JobState::Suspended { since, .. } = e.state {
            e.suspended_s += now - since;
        }
        out.push(Effect::Finished(Box::new(JobRecord {
            spec: e.spec,
            state,
            outcome,
            submit: e.submit,
            start: e.state.start(),
            end: now,
            alloc,
            limit: e.limit,
            suspended_s: e.suspended_s,
            requeues: e.requeues,
            usage,
        })));
        self.open(open);
        // jobs whose dependency can no longer be met are cancelled (and so
        // are theirs, in turn)
        for id in never {
            if let Some(d) = self.t.lookup(id).filter(|&d| self.t.state(d).queued()) {
                self.finish(now, d, FinalState::Cancelled, None, out);
            }
        }
    }

    /// Emit a wake-up when the next instant the engine needs a pass has changed.
    fn ask_wake(&mut self, out: &mut Vec<Effect>) {
        let deadline = match &self.m {
            Machine::Nodes(m) => m.next_deadline(&self.t, self.now),
            Machine::Parm(m) => m.next_deadline(),
        };
        let next = crate::earliest([deadline, self.delays.first().map(|d| d.0), self.gates.next_timer(), self.share_wake()])
        // the engine's clock ends at MAX_TIME: nothing is due after it
        .filter(|&t| t <= MAX_TIME);
        if let Some(t) = next {
            if self.wake != Some(t) {
                out.push(Effect::WakeAt(t));
            }
        }
        self.wake = next;
    }

    /// PARM: the knapsack its next decision at `now` would solve, and the running
    /// jobs' current choices (what the decision benchmark times).
    pub fn decision_problem(
        &self,
        now: Time,
    ) -> Option<(crate::power::Problem, Vec<Option<u32>>)> {
        match &self.m {
            Machine::Parm(m) => Some(m.clone().decision_problem(now, &self.t)),
            Machine::Nodes(_) => None,
        }
    }

    /// Save the whole state.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot(self.clone())
    }

    /// An engine in the state `s` was saved in.
    pub fn restore(s: Snapshot) -> Engine {
        s.0
    }

    /// The last instant the engine has seen.
    pub fn now(&self) -> Time {
        self.now
    }

    pub fn policy(&self) -> PolicyKind {
        match &self.m {
            Machine::Nodes(m) => m.policy(),
            Machine::Parm(_) => PolicyKind::Parm,
        }
    }

    /// Processors (cores; nodes for PARM) of the machine.
    pub fn capacity(&self) -> u64 {
        match &self.m {
            Machine::Nodes(m) => m.capacity(),
            Machine::Parm(m) => m.capacity(),
        }
    }

    /// Processors free now on nodes that take jobs (a drained or down node's
    /// idle cores are not counted).
    pub fn free(&self) -> u64 {
        match &self.m {
            Machine::Nodes(m) => m.free(),
            Machine::Parm(m) => m.free(),
        }
    }

    /// The PARM engine, for its power and decision statistics.
    pub fn as_parm(&self) -> Option<&ParmEngine> {
        match &self.m {
            Machine::Parm(e) => Some(e),
            Machine::Nodes(_) => None,
        }
    }

    /// Jobs the engine holds (queued, running, suspended, ending).
    pub fn jobs(&self) -> usize {
        self.t.len()
    }

    /// Job-table slots allocated: the most jobs held at once.
    pub fn slots(&self) -> usize {
        self.t.slots()
    }

    /// Jobs in the queue (pending or held).
    pub fn queued(&self) -> usize {
        self.t.queue.len()
    }

    /// Jobs holding resources and expected to end (running or ending).
    pub fn running(&self) -> usize {
        match &self.m {
            Machine::Nodes(m) => m.running(),
            Machine::Parm(m) => m.running(),
        }
    }

    /// A live job's spec and state.
    pub fn job(&self, id: JobId) -> Option<(&JobSpec, JobState)> {
        let j = self.t.lookup(id)?;
        let e = self.t.get(j);
        Some((&e.spec, e.state))
    }

    /// Queued jobs (pending and held) in queue order.
    pub fn queue(&self) -> impl Iterator<Item = JobId> + '_ {
        self.t.queued().map(|(_, j)| self.t.spec(j).id)
    }

    /// The dependencies a queued job still waits for.
    pub fn waits_for(&self, id: JobId) -> &[After] {
        self.t.lookup(id).map_or(&[], |j| self.gates.waits_for(j))
    }

    /// Where a job runs, once started.
    pub fn allocation(&self, id: JobId) -> Option<&Allocation> {
        let j = self.t.lookup(id)?;
        match &self.m {
            Machine::Nodes(e) => e.allocation(j),
            Machine::Parm(e) => e.allocation(j),
        }
    }

    /// Whether the power budget may be set to `watts` now: a power-aware
    /// machine whose running jobs fit it at their lowest caps.
    pub fn can_set_budget(&self, watts: f64) -> Result<(), Rejection> {
        let needed = match &self.m {
            Machine::Parm(m) => Some(m.least_power_w(self.now, &self.t)),
            Machine::Nodes(m) => m.least_power_w(),
        };
        let Some(needed) = needed else {
            return Err(Rejection::Unsupported { input: "set budget", engine: "queue without a power budget" });
        };
        if !(watts.is_finite() && watts > 0.0 && watts <= 1e12) {
            return Err(Rejection::InvalidSpec { job: JobId(0), field: "watts", value: watts.to_string(), expected: "a budget in watts, above 0 and at most 1e12" });
        }
        if needed > watts + 1e-6 {
            return Err(Rejection::BudgetTooLow { budget_w: watts.floor() as u64, needed_w: needed.ceil() as u64 });
        }
        Ok(())
    }

    /// Whether a running job was shrunk and has not acknowledged it yet (PARM
    /// with `resize_ack_s`): [`Input::Resized`] would apply.
    pub fn awaits_resize(&self, id: JobId) -> bool {
        let Some(j) = self.t.lookup(id) else { return false };
        self.as_parm().is_some_and(|m| m.releasing(j))
    }

    /// When a running job ends under its current configuration (PARM's model).
    pub fn power_end(&self, id: JobId) -> Option<Time> {
        let j = self.t.lookup(id)?;
        self.as_parm()?.expected_end(j)
    }

    /// A running job's node count and CPU cap (W): PARM's choice, or full power
    /// under a queue policy on a power-budgeted cluster.
    pub fn power_config(&self, id: JobId) -> Option<(u32, f64)> {
        let j = self.t.lookup(id)?;
        match &self.m {
            Machine::Parm(m) => m.config_of(j),
            Machine::Nodes(m) => m.power_config(j),
        }
    }

    /// The lowest CPU cap a running job may be held to (W): its profile's
    /// floor under PARM, the lowest level of its nodes under a queue policy's
    /// power budget ([`Input::CapCeiling`] goes no lower).
    pub fn cap_floor(&self, id: JobId) -> Option<f64> {
        let j = self.t.lookup(id)?;
        match &self.m {
            Machine::Parm(m) => m.cap_floor(j),
            Machine::Nodes(m) => m.cap_floor(j),
        }
    }

    /// The power budget in force (W): the cluster's, or what an operator set
    /// since ([`Input::SetBudget`]); None without one.
    pub fn budget_w(&self) -> Option<f64> {
        match &self.m {
            Machine::Parm(m) => Some(m.machine().budget_w),
            Machine::Nodes(m) => m.budget_w(),
        }
    }

    /// A node's state.
    pub fn node_status(&self, node: u32) -> Option<&NodeStatus> {
        match &self.m {
            Machine::Nodes(e) => e.node_status(node as usize),
            Machine::Parm(e) => e.node_status(node),
        }
    }

    /// Jobs whose node set no set could ever satisfy, which therefore ran anywhere.
    pub fn dropped_nodesets(&self) -> u64 {
        match &self.m {
            Machine::Nodes(e) => e.dropped_nodesets(),
            Machine::Parm(_) => 0,
        }
    }

    /// The blocked head of the queue and its shadow time (EASY's reservation), as
    /// of a pass at `now`.
    pub fn head_reservation(&self, now: Time) -> Option<(JobId, Time)> {
        let (j, t) = match &self.m {
            Machine::Nodes(e) => e.head_reservation(now, &self.t)?,
            Machine::Parm(_) => return None,
        };
        Some((self.t.spec(j).id, t))
    }

    /// Why a queued job has not started, as of the last pass at `now`.
    pub fn pending_reason(&self, now: Time, id: JobId) -> Option<PendingReason> {
        let j = self.t.lookup(id)?;
        if self.t.state(j) == JobState::Held {
            let limit = self.t.limits.as_ref().and_then(|l| l.held(j)).map(|limit| PendingReason::Limit { limit });
            return self.gates.reason(j).or(limit);
        }
        match &self.m {
            Machine::Nodes(e) => e.pending_reason(now, &self.t, j),
            Machine::Parm(e) => e.pending_reason(&self.t, j),
        }
    }

    /// Assert the engine's invariants: the job table agrees with itself;
    /// resources are conserved node by node (or nodes and power within the
    /// budget, for PARM); every job holding resources is running, suspended or
    /// ending; the running list is ordered. Debug builds run it after every call.
    pub fn sanity_check(&self) {
        self.t.sanity_check();
        self.gates.sanity_check(&self.t);
        match &self.m {
            Machine::Nodes(e) => e.sanity_check(&self.t),
            Machine::Parm(e) => e.sanity_check(&self.t),
        }
        self.share_sanity_check();
    }
}

const NO_NODESETS: &str = "a power-aware engine places no node sets";
const NO_PROFILE: &str = "a power-aware engine needs the job's power profile";
const NO_SHAPE: &str = "its smallest shape needs more nodes or power than the machine has";


fn wrong(job: JobId, s: JobState, input: &'static str, needs: &'static str) -> Rejection {
    Rejection::WrongState {
        job,
        state: s.name(),
        input,
        needs,
    }
}
