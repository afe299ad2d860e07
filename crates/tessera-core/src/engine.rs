//! The engine: `Engine::handle(now, input, &mut effects)` is the whole contract.
//!
//! Submissions and completions only update state; jobs start only in an
//! [`Input::Pass`], so a driver that delivers every completion and arrival of an
//! instant before the pass gets exactly the semantics in `docs/semantics.md`.
//!
//! Two machines sit behind the same contract: a pool of identical processors (the
//! fast path for `--capacity` replays) and a cluster of nodes (node types, scaling
//! factors, memory, node sets). Both run the same three policies.

use crate::cluster::Cluster;
use crate::job::{JobIdx, JobSpec, JobState, NodeSetId};
use crate::nodes::{Allocation, NodeEngine};
use crate::nodeset::NodeSetSpec;
use crate::pending::PendingReason;
use crate::policy::PolicyKind;
use crate::pool::PoolEngine;
use crate::power::{ParmConfig, ParmEngine, PowerJob, PowerMachine};
use crate::Time;

/// What a driver tells the engine.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Input {
    /// A job enters the queue now. Drivers submit in (submit time, job id) order;
    /// the n-th submitted job gets `JobIdx(n)`. The job must be able to run
    /// ([`Engine::can_run`]).
    Submit(JobSpec),
    /// A moldable or malleable job with its power profile enters the queue now
    /// (PARM engines only).
    SubmitPower(JobSpec, PowerJob),
    /// A running job has ended now (finished, failed or killed at its limit).
    Complete(JobIdx),
    /// Run one scheduling pass now.
    Pass,
}

/// What the engine asks the driver to do.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Effect {
    /// Start `job` now with `procs` processors, on the nodes of
    /// [`Engine::allocation`] for a cluster. The driver must report its completion
    /// no later than `now + ceil(estimate / factor)`.
    Start { job: JobIdx, procs: u32 },
    /// Run `job` (started, or running) on `nodes` nodes with its CPUs capped at
    /// `cap_w` watts (PARM). Its expected end changes: see [`Engine::expected_end`].
    Configure { job: JobIdx, nodes: u32, cap_w: f64 },
}

/// The scheduling engine.
#[derive(Debug, Clone)]
pub enum Engine {
    Pool(PoolEngine),
    Nodes(Box<NodeEngine>),
    /// PARM on an overprovisioned machine under a power budget.
    Parm(Box<ParmEngine>),
}

macro_rules! both {
    ($self:expr, $e:ident => $body:expr) => {
        match $self {
            Engine::Pool($e) => $body,
            Engine::Nodes($e) => $body,
            Engine::Parm($e) => $body,
        }
    };
}

impl Engine {
    /// One pool of `capacity` identical processors.
    pub fn new(policy: PolicyKind, capacity: u32) -> Self {
        Engine::Pool(PoolEngine::new(policy, capacity))
    }

    /// The nodes of a cluster.
    pub fn with_cluster(policy: PolicyKind, cluster: &Cluster) -> Self {
        Engine::Nodes(Box::new(NodeEngine::new(policy, cluster)))
    }

    /// PARM on an overprovisioned machine.
    pub fn parm(machine: PowerMachine, config: ParmConfig) -> Self {
        Engine::Parm(Box::new(ParmEngine::new(machine, config)))
    }

    /// The one entry point. `now` must not go backwards between calls.
    pub fn handle(&mut self, now: Time, input: Input, out: &mut Vec<Effect>) {
        match input {
            Input::Submit(spec) => match self {
                Engine::Pool(e) => e.submit(now, spec),
                Engine::Nodes(e) => e.submit(now, spec),
                Engine::Parm(_) => panic!("a PARM engine takes Input::SubmitPower"),
            },
            Input::SubmitPower(spec, pj) => match self {
                Engine::Parm(e) => e.submit(now, spec, pj),
                _ => panic!("Input::SubmitPower needs a PARM engine"),
            },
            Input::Complete(job) => both!(self, e => e.complete(now, job)),
            Input::Pass => both!(self, e => e.pass(now, out)),
        }
        #[cfg(debug_assertions)]
        self.sanity_check();
    }

    pub fn policy(&self) -> PolicyKind {
        both!(self, e => e.policy())
    }

    /// Processors (cores; nodes for PARM) of the machine.
    pub fn capacity(&self) -> u64 {
        match self {
            Engine::Pool(e) => e.capacity() as u64,
            Engine::Nodes(e) => e.capacity(),
            Engine::Parm(e) => e.capacity(),
        }
    }

    /// Processors free now.
    pub fn free(&self) -> u64 {
        match self {
            Engine::Pool(e) => e.free() as u64,
            Engine::Nodes(e) => e.free(),
            Engine::Parm(e) => e.free(),
        }
    }

    /// When a running job is expected to end under its current configuration
    /// (PARM), None for other engines (their drivers know the runtime).
    pub fn expected_end(&self, job: JobIdx) -> Option<Time> {
        match self {
            Engine::Parm(e) => e.expected_end(job),
            _ => None,
        }
    }

    /// The PARM engine, for its power, usage and decision statistics.
    pub fn as_parm(&self) -> Option<&ParmEngine> {
        match self {
            Engine::Parm(e) => Some(e),
            _ => None,
        }
    }

    /// Power drawn now (PARM).
    pub fn power_w(&self) -> Option<f64> {
        match self {
            Engine::Parm(e) => Some(e.power_w()),
            _ => None,
        }
    }

    pub fn queued(&self) -> usize {
        both!(self, e => e.table().queue.len())
    }

    pub fn running(&self) -> usize {
        both!(self, e => e.running())
    }

    pub fn job(&self, job: JobIdx) -> (&JobSpec, JobState) {
        both!(self, e => e.table().job(job))
    }

    /// Pending jobs in queue order.
    pub fn queue(&self) -> Box<dyn Iterator<Item = JobIdx> + '_> {
        both!(self, e => Box::new(e.table().pending()))
    }

    /// Whether a job can ever run here (processors, partition, memory). Drivers
    /// must not submit jobs that cannot.
    pub fn can_run(&mut self, spec: &JobSpec) -> bool {
        match self {
            Engine::Pool(e) => e.can_run(spec),
            Engine::Nodes(e) => e.can_run(spec),
            Engine::Parm(_) => false,
        }
    }

    /// Register a per-job node-set request (cluster engines; a pool ignores it).
    pub fn register_nodeset(&mut self, spec: NodeSetSpec) -> NodeSetId {
        match self {
            Engine::Pool(_) | Engine::Parm(_) => NodeSetId(0),
            Engine::Nodes(e) => e.register_nodeset(spec),
        }
    }

    /// Where a job runs (cluster engines), once started.
    pub fn allocation(&self, job: JobIdx) -> Option<&Allocation> {
        match self {
            Engine::Pool(_) | Engine::Parm(_) => None,
            Engine::Nodes(e) => e.allocation(job),
        }
    }

    /// The pace of a started job: the scaling factor of its slowest node (1 in a pool).
    pub fn factor(&self, job: JobIdx) -> f64 {
        self.allocation(job).map_or(1.0, |a| a.factor)
    }

    /// Jobs whose node set no set could ever satisfy, which therefore ran anywhere.
    pub fn dropped_nodesets(&self) -> u64 {
        match self {
            Engine::Pool(_) | Engine::Parm(_) => 0,
            Engine::Nodes(e) => e.dropped_nodesets(),
        }
    }

    /// The blocked head of the queue and its shadow time (EASY's reservation), as
    /// of a pass at `now`.
    pub fn head_reservation(&mut self, now: Time) -> Option<(JobIdx, Time)> {
        match self {
            Engine::Pool(e) => e.head_reservation(),
            Engine::Nodes(e) => e.head_reservation(now),
            Engine::Parm(e) => e.head_reservation(),
        }
    }

    /// Why a pending job has not started, as of the last pass at `now`.
    pub fn pending_reason(&self, now: Time, job: JobIdx) -> Option<PendingReason> {
        both!(self, e => e.pending_reason(now, job))
    }

    /// Assert the engine's invariants (resources conserved, a job is queued xor
    /// running, the running list ordered). Debug builds run it after every call.
    pub fn sanity_check(&self) {
        both!(self, e => e.sanity_check())
    }
}
