//! Jobs as the engine sees them: what was asked for, never what will happen.
//!
//! The engine knows a job's processor count and its estimate (the user's time
//! limit, in reference seconds); the actual runtime belongs to the driver (the
//! simulator's trace, or the real process in the controller).

use crate::power::PowerJob;
use crate::Time;
use serde::{Deserialize, Serialize};

/// The job number the driver chose (SWF field 1's position, or the controller's
/// job id). Unique among the jobs the engine holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct JobId(pub u64);

impl std::fmt::Display for JobId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A dense index into the engine's job table (a slot, reused once its job has
/// left the engine).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct JobIdx(pub u32);

impl JobIdx {
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What a job asks for.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobSpec {
    pub id: JobId,
    /// Processors (tasks) requested; at least 1.
    pub procs: u32,
    /// The time limit, in reference seconds (>= 0). On nodes with scaling factor f
    /// the job may run ceil(estimate / f) seconds; the engine kills it then.
    pub estimate: Time,
    /// Partition (index into the cluster's partitions); None: the default.
    pub partition: Option<u16>,
    /// Memory per processor in MiB (0: not stated).
    pub mem_per_proc_mb: u64,
    /// GPUs on every node the job runs on (Slurm's `--gpus-per-node`; 0: none).
    pub gpus_per_node: u32,
    /// Put the job back in the queue when a node it runs on fails (Slurm `--requeue`).
    pub requeue: bool,
    /// Submitted held: it waits until released.
    pub hold: bool,
    /// The job's power profile (moldable and malleable jobs of a PARM engine).
    pub power: Option<PowerJob>,
    /// It may not start before this instant (Slurm's `--begin`).
    #[serde(default)]
    pub begin: Option<Time>,
    /// An array task under its array's limit of tasks let through at once
    /// (Slurm's `--array=...%N`).
    #[serde(default)]
    pub throttle: Option<Throttle>,
    /// Only one live job of this key runs at a time, in submission order
    /// (Slurm's `--dependency=singleton`: the driver keys a user's job name).
    #[serde(default)]
    pub singleton: Option<u64>,
    /// How its processors are laid out on nodes, as Slurm's `-N`,
    /// `--ntasks-per-node`, `-c` and `--exclusive` ask (the default: the
    /// engine packs processors where they are free).
    #[serde(default, skip_serializing_if = "Shape::is_free")]
    pub shape: Shape,
    /// Its association, QOS and nice value, on an engine with accounts
    /// ([`crate::share`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ticket: Option<crate::share::Ticket>,
    /// The advance reservation it runs in (its id; the driver resolves
    /// `--reservation` and checks the job may use it): only on its nodes,
    /// only within a window ([`crate::resv`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation: Option<u32>,
}

/// A job's layout on nodes (Slurm's semantics). `procs` is its tasks ×
/// `cpus_per_task`; a task's cores are on one node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shape {
    /// Exactly this many nodes (`-N`; 0: as many as the packing takes), its
    /// tasks spread over them as evenly as their room allows.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub nodes: u32,
    /// At most this many tasks on a node (`--ntasks-per-node`; 0: no cap).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tasks_per_node: u32,
    /// Cores per task (`-c`; 0 or 1: one).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cpus_per_task: u32,
    /// Whole nodes, shared with no other job (`--exclusive`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exclusive: bool,
}

fn is_zero(x: &u32) -> bool {
    *x == 0
}

impl Shape {
    /// The engine's own packing (nothing asked).
    pub fn is_free(&self) -> bool {
        *self == Shape::default()
    }

    /// Cores per task, at least one.
    pub fn cpt(&self) -> u32 {
        self.cpus_per_task.max(1)
    }
}

/// An array task's throttle: at most `limit` tasks of array `array` are let
/// through (pending for resources, running or suspended) at once; the others
/// wait, in submission order, for one to end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Throttle {
    pub array: u64,
    pub limit: u32,
}

/// What a dependency waits for of the job it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AfterKind {
    /// That it ended, however (`afterany`).
    Any,
    /// That it completed successfully (`afterok`).
    Ok,
    /// That it ended otherwise: failed, cancelled, timed out, its node failed
    /// (`afternotok`).
    NotOk,
}

/// A dependency: the job may start `delay` seconds after job `job` ends as
/// `kind` asks (Slurm's dependencies have no delay; a trace's think time,
/// SWF field 18, is one). If `job` ends otherwise, the dependent job can never
/// start: it is cancelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct After {
    pub kind: AfterKind,
    pub job: JobId,
    pub delay: Time,
}

impl After {
    /// Whether an end in `state` meets it.
    pub fn met_by(&self, state: FinalState) -> bool {
        match self.kind {
            AfterKind::Any => true,
            AfterKind::Ok => state == FinalState::Completed,
            AfterKind::NotOk => state != FinalState::Completed,
        }
    }
}

impl JobSpec {
    pub fn new(id: JobId, procs: u32, estimate: Time) -> Self {
        JobSpec {
            id,
            procs,
            estimate,
            partition: None,
            mem_per_proc_mb: 0,
            gpus_per_node: 0,
            requeue: false,
            hold: false,
            power: None,
            begin: None,
            throttle: None,
            singleton: None,
            shape: Shape::default(),
            ticket: None,
            reservation: None,
        }
    }
}

/// Who suspended a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SuspendedBy {
    /// An operator (`Input::Suspend`): the job keeps its resources until resumed.
    Operator,
    /// A job of a higher priority tier took its cores (PreemptMode SUSPEND); it
    /// resumes when they are free again.
    Preemption,
    /// Gang scheduling: it waits for its next time slice.
    Gang,
}

/// Why the engine asks the driver to kill a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum KillReason {
    /// It reached its time limit (normalized by its nodes' scaling factor).
    TimeLimit,
    /// Cancelled by its user or an operator.
    Cancel,
    /// A node it runs on went down.
    NodeFailure,
    /// An operator requeued it: it returns to the queue once it has ended.
    Requeue,
    /// A power-aware machine shrank it, and it did not acknowledge in time.
    ResizeTimeout,
}

/// The state machine of a job inside the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobState {
    /// Waiting in the queue.
    Pending,
    /// In the queue, but not eligible until released.
    Held,
    /// Started at `start` (its first start since it last entered the queue).
    Running { start: Time },
    /// Stopped since `since`; its limit does not run meanwhile.
    Suspended { start: Time, since: Time, by: SuspendedBy },
    /// Asked to die (`reason`) at `at`; it holds its resources until the driver
    /// reports its completion.
    Ending { start: Time, at: Time, reason: KillReason },
}

impl JobState {
    pub fn name(&self) -> &'static str {
        match self {
            JobState::Pending => "pending",
            JobState::Held => "held",
            JobState::Running { .. } => "running",
            JobState::Suspended { .. } => "suspended",
            JobState::Ending { .. } => "ending",
        }
    }

    /// In the queue (pending or held).
    pub fn queued(&self) -> bool {
        matches!(self, JobState::Pending | JobState::Held)
    }

    /// When it (last) started, if it holds resources.
    pub fn start(&self) -> Option<Time> {
        match *self {
            JobState::Pending | JobState::Held => None,
            JobState::Running { start } | JobState::Suspended { start, .. } | JobState::Ending { start, .. } => Some(start),
        }
    }
}

/// How a job ended, as the driver saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// Its processes exited with this code.
    Exited(i32),
    /// It was killed by this signal.
    Signaled(i32),
    /// A node it ran on failed.
    NodeFailed,
    /// The kernel's out-of-memory killer killed one of its processes (its
    /// node's cgroup counted it), however its first process ended.
    OutOfMemory,
}

/// How a job left the engine (sacct's states).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FinalState {
    /// Exit code 0.
    Completed,
    /// A non-zero exit code or a signal it was not asked to take.
    Failed,
    /// Cancelled (before or after it started).
    Cancelled,
    /// Killed at its time limit.
    Timeout,
    /// A node it ran on failed and it did not ask to be requeued.
    NodeFail,
    /// A process of it was killed for exceeding its memory.
    OutOfMemory,
}

impl FinalState {
    pub fn name(self) -> &'static str {
        match self {
            FinalState::Completed => "COMPLETED",
            FinalState::Failed => "FAILED",
            FinalState::Cancelled => "CANCELLED",
            FinalState::Timeout => "TIMEOUT",
            FinalState::NodeFail => "NODE_FAIL",
            FinalState::OutOfMemory => "OUT_OF_MEMORY",
        }
    }
}

/// The seconds a job limited to `estimate` reference seconds may run on nodes of
/// scaling factor `factor`: ceil(estimate / factor). Also how long a job of
/// `runtime` reference seconds runs there.
pub fn scaled(seconds: Time, factor: f64) -> Time {
    if factor == 1.0 || seconds == 0 {
        seconds
    } else {
        (seconds as f64 / factor).ceil() as Time
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_rounds_up() {
        assert_eq!(scaled(100, 1.0), 100);
        assert_eq!(scaled(100, 2.0), 50);
        assert_eq!(scaled(100, 1.5), 67);
        assert_eq!(scaled(100, 0.5), 200);
        assert_eq!(scaled(0, 1.5), 0);
    }
}
