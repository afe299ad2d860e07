//! The engine's contract: what a driver tells the engine ([`Input`]), what the
//! engine asks of it or tells it ([`Effect`]), why an input could not apply
//! ([`Rejection`]) and a job's final record ([`JobRecord`]). The engine
//! (`engine.rs`) and its machines (`nodes/`, `power/`) produce these; drivers
//! (the simulator, the controller, benches, tests) consume them. See
//! ARCHITECTURE.md, "The engine contract".

use crate::job::{After, FinalState, JobId, JobSpec, KillReason, Outcome};
use crate::nodes::Allocation;
use crate::nodeset::NodeSetSpec;
use crate::power::Usage;
use crate::Time;
use serde::{Deserialize, Serialize};

/// The largest time (s) and estimate the engine accepts: 2^42 s, about 139,000
/// years. Sums of a few such values never overflow an i64, so the engine's time
/// arithmetic cannot wrap; boundaries (trace reader, flags, API) reject more.
pub const MAX_TIME: Time = 1 << 42;

/// The most memory per processor a job may ask for (MiB): 2^31, so that a job's
/// memory on a node (tasks × memory per task) fits a u64.
pub const MAX_MEM_PER_PROC_MB: u64 = 1 << 31;

/// A change of a node's state, each with a reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NodeChange {
    /// The node failed: its jobs are killed (and requeued if they asked to be).
    Down,
    /// The node answers again (clears `Down`; a drain stays).
    Up,
    /// The node finishes its jobs and takes no new ones.
    Drain,
    /// An operator returns the node to service (clears `Drain` and `Down`,
    /// and `PowerFault`).
    Resume,
    /// The node's power domain failed (its cap cannot be set or its power
    /// read): it is drained, and its power counts as its maximum (busy at
    /// full CPU power) until an operator resumes it.
    PowerFault,
}

/// Nodes a job must run on (all of them, `include`, Slurm's `-w`) and nodes
/// it may not (`exclude`, `-x`), by index in the cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeChoice {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<u32>,
}

impl NodeChoice {
    pub fn is_empty(&self) -> bool {
        self.include.is_empty() && self.exclude.is_empty()
    }
}

/// A job entering the queue: [`Input::Submit`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Submission {
    pub spec: JobSpec,
    pub nodeset: Option<NodeSetSpec>,
    pub after: Vec<After>,
    /// Nodes it must use and nodes it may not (Slurm's `-w`, `-x`).
    pub nodes: NodeChoice,
}

/// What a driver tells the engine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Input {
    /// A job enters the queue now (held if `spec.hold`), with its own node-set
    /// request if it has one (None: its partition's or the site's default). Its
    /// id must be new among the jobs the engine holds. The request leaves the
    /// engine with the job.
    /// `after`: its dependencies, on jobs in the engine or that ended at this
    /// instant (a driver resolves those that ended before: drops the met,
    /// refuses the impossible, turns a delay still to run into `spec.begin`).
    /// Boxed: the other inputs are small, and every input is moved several
    /// times on its way in.
    Submit(Box<Submission>),
    /// Cancel a queued job (it leaves at once) or a running one (it is killed).
    Cancel(JobId),
    /// Keep a pending job from starting; it keeps its place in the queue.
    Hold(JobId),
    /// Let a held job start again.
    Release(JobId),
    /// An operator stops a running job; it keeps its resources and its limit stops.
    Suspend(JobId),
    /// An operator continues a job they suspended.
    Resume(JobId),
    /// Kill a running job and put it back in the queue.
    Requeue(JobId),
    /// A job's processes have ended now, with this outcome.
    Complete { job: JobId, outcome: Outcome },
    /// Node `node` (index in the cluster's nodes) changed state.
    Node {
        node: u32,
        change: NodeChange,
        reason: String,
    },
    /// Run one scheduling pass now.
    Pass,
    /// The cluster changes under the running engine: nodes and partitions added,
    /// removed or changed, matched by name. Jobs keep their places: queued jobs
    /// their queue position, running jobs their nodes and their limits (a new
    /// scaling factor applies from a job's next start). Refused, with the engine
    /// unchanged, if any job would lose its place (see `nodes/reconfigure.rs`).
    /// An added node takes jobs at once unless the driver sets it down.
    Reconfigure(Box<crate::cluster::Reconfiguration>),
    /// The last pass's decision took this long to compute (µs): the jobs it
    /// started or reconfigured begin their new configuration that much later.
    /// Power-aware machines only; a simulator sends it to charge solve times
    /// as the PARM paper does (a live controller pays them in real time).
    DecisionTime { micros: u64 },
    /// A shrunk job acknowledged its new configuration (power-aware machines
    /// whose jobs acknowledge resizes): the nodes it gave up are free.
    Resized(JobId),
    /// An operator changed the power budget (W; power-aware machines). A
    /// lower budget is met at the next pass, by lowering caps before anything
    /// new starts; one the running jobs cannot be held to is refused.
    SetBudget { watts: f64 },
    /// The power measured on the nodes exceeded the budget, and the driver's
    /// power governor lowers a running job's CPU cap: for the rest of its run
    /// the job runs at most at `cap_w`, never below its floor (the lowest
    /// cap its profile allows), re-capped at once (`Effect::Configure`).
    /// Power-aware machines, and queue policies under a power budget.
    CapCeiling { job: JobId, cap_w: f64 },
    /// An operator reserves nodes over a window (queue machines; see
    /// `resv.rs`): nothing outside the reservation runs on them then.
    Reserve(Box<crate::resv::ReservationSpec>),
    /// An operator deletes a reservation: pending jobs that asked for it lose
    /// it and are held.
    Unreserve(String),
    /// An operator changed the accounts (engines with accounts): associations
    /// and QOS matched by name keep their usage, live jobs their association
    /// and QOS; refused if a live job's would be gone.
    SetAccounts(Box<crate::share::Accounts>),
}

impl Input {
    /// A submission without a node-set request of its own.
    pub fn submit(spec: JobSpec) -> Input {
        Input::submission(spec, None, Vec::new(), NodeChoice::default())
    }

    /// A submission with its node-set request, dependencies and node choice.
    pub fn submission(spec: JobSpec, nodeset: Option<NodeSetSpec>, after: Vec<After>, nodes: NodeChoice) -> Input {
        Input::Submit(Box::new(Submission { spec, nodeset, after, nodes }))
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Input::Submit(_) => "submit",
            Input::Cancel(_) => "cancel",
            Input::Hold(_) => "hold",
            Input::Release(_) => "release",
            Input::Suspend(_) => "suspend",
            Input::Resume(_) => "resume",
            Input::Requeue(_) => "requeue",
            Input::Complete { .. } => "complete",
            Input::Node { .. } => "node",
            Input::Pass => "pass",
            Input::Reconfigure(_) => "reconfigure",
            Input::DecisionTime { .. } => "decision time",
            Input::Resized(_) => "resized",
            Input::SetBudget { .. } => "set budget",
            Input::CapCeiling { .. } => "cap ceiling",
            Input::Reserve(_) => "reserve",
            Input::Unreserve(_) => "unreserve",
            Input::SetAccounts(_) => "set accounts",
        }
    }

    pub(crate) fn job(&self) -> Option<JobId> {
        match self {
            Input::Submit(s) => Some(s.spec.id),
            Input::Cancel(j)
            | Input::Hold(j)
            | Input::Release(j)
            | Input::Suspend(j)
            | Input::Resume(j)
            | Input::Requeue(j)
            | Input::Resized(j)
            | Input::CapCeiling { job: j, .. } => Some(*j),
            Input::Complete { job, .. } => Some(*job),
            Input::Node { .. } | Input::Pass | Input::Reconfigure(_) | Input::DecisionTime { .. } | Input::SetBudget { .. } | Input::Reserve(_) | Input::Unreserve(_) | Input::SetAccounts(_) => None,
        }
    }
}

/// Why an input could not apply. The engine's state is unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum Rejection {
    #[error("no job {0} in the engine")]
    UnknownJob(JobId),
    #[error("a job {0} is already in the engine")]
    DuplicateJob(JobId),
    #[error("job {job} is {state}; {input} needs a job that is {needs}")]
    WrongState {
        job: JobId,
        state: &'static str,
        input: &'static str,
        needs: &'static str,
    },
    #[error("job {job}: {field} is {value}: expected {expected}")]
    InvalidSpec {
        job: JobId,
        field: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error("job {job} can never run here: {why}")]
    NeverFits { job: JobId, why: &'static str },
    /// An association or QOS limit refuses it: a submit limit reached, or a
    /// limit it could never meet (Slurm's reason name).
    #[error("job {job} violates accounting/QOS policy: {reason}")]
    OverLimit { job: JobId, reason: crate::share::LimitReason },
    #[error("no node {0} in the cluster")]
    UnknownNode(u32),
    /// A power budget the running jobs cannot be held to: at their lowest caps
    /// (and smallest sizes they may take now) they draw more.
    #[error("a budget of {budget_w} W is below what the running jobs need at their lowest caps, {needed_w} W (let jobs end, or cancel some, first)")]
    BudgetTooLow { budget_w: u64, needed_w: u64 },
    #[error("{input} is not supported by a {engine} engine")]
    Unsupported {
        input: &'static str,
        engine: &'static str,
    },
    #[error("the cluster cannot change so: {0}")]
    CannotReconfigure(String),
    /// A reservation could not be made or removed.
    #[error("reservation {name}: {why}")]
    Reservation { name: String, why: crate::resv::ResvError },
    #[error("time went backwards: {now} after {last}")]
    TimeWentBack { now: Time, last: Time },
    #[error("time {0} is beyond the engine's range (at most 2^42 s)")]
    TimeOutOfRange(Time),
}

/// A job's final record: what the driver keeps once the job has left the engine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    pub spec: JobSpec,
    pub state: FinalState,
    pub outcome: Option<Outcome>,
    /// When it entered the queue (its submission, or its last requeue).
    pub submit: Time,
    /// When it (last) started; None if it never did.
    pub start: Option<Time>,
    pub end: Time,
    /// Where it ran, and its pace (the factor of its slowest node).
    pub alloc: Option<Allocation>,
    /// Its limit in real seconds on its nodes.
    pub limit: Option<Time>,
    /// Seconds it spent suspended.
    pub suspended_s: Time,
    /// Times it went back to the queue.
    pub requeues: u32,
    /// Power-aware jobs: energy and node-seconds.
    pub usage: Option<Usage>,
}

/// What the engine asks the driver to do, or tells it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Effect {
    /// Start `job` now on `alloc`. The engine kills it after `limit` real seconds
    /// of running (its estimate scaled by the allocation's factor).
    Start {
        job: JobId,
        alloc: Allocation,
        limit: Option<Time>,
    },
    /// Kill `job`; report its completion once its processes are gone (it holds its
    /// resources until then).
    Kill { job: JobId, reason: KillReason },
    /// Stop `job`'s processes (SIGTSTP, then SIGSTOP).
    Suspend { job: JobId },
    /// Continue `job`'s processes (SIGCONT).
    Resume { job: JobId },
    /// Run `job` on `nodes` nodes with its CPUs capped at `cap_w` watts (PARM);
    /// under that configuration it ends at `end`.
    Configure {
        job: JobId,
        nodes: u32,
        cap_w: f64,
        end: Time,
    },
    /// Run a pass at this instant even if nothing else happens (a limit runs out,
    /// a node-set delay ends). Replaces any earlier wake-up; a pass at or after it
    /// consumes it (the engine asks again if it still needs one).
    WakeAt(Time),
    /// `job` has left the engine.
    Finished(Box<JobRecord>),
    /// `job` ended and went back to the queue (an operator's requeue, or a
    /// node failure of a job submitted with `requeue`): it waits to start again.
    Requeued { job: JobId },
    /// An input could not apply.
    Rejected {
        input: &'static str,
        job: Option<JobId>,
        reason: Rejection,
    },
}

/// PARM asked of a machine without a power model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the parm policy needs a power-aware machine (a cluster file with power_budget_w)")]
pub struct NeedsPowerMachine;
