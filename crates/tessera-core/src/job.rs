//! Jobs as the engine sees them: what was asked for, never what will happen.
//!
//! The engine knows a job's processor count and its estimate (the user's time
//! limit, in reference seconds); the actual runtime belongs to the driver (the
//! simulator's trace, or the real process in the controller).

use crate::Time;

/// The user-visible job number (SWF field 1, or the controller's job id).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId(pub u64);

/// A dense index into the engine's job table: the n-th submitted job has index n.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobIdx(pub u32);

impl JobIdx {
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A node-set request registered with [`crate::Engine::register_nodeset`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NodeSetId(pub u32);

/// What a job asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobSpec {
    pub id: JobId,
    /// Processors (tasks) requested; at least 1.
    pub procs: u32,
    /// The time limit the scheduler plans with, in reference seconds (>= 0). On
    /// nodes with scaling factor f the job is limited to ceil(estimate / f) seconds.
    pub estimate: Time,
    /// Partition (index into the cluster's partitions); None: the default. Ignored
    /// by a pool engine.
    pub partition: Option<u16>,
    /// Memory per processor in MiB (0: not stated).
    pub mem_per_proc_mb: u64,
    /// The job's own node-set request; None: the partition's or the site's default.
    pub nodeset: Option<NodeSetId>,
}

impl JobSpec {
    pub fn new(id: JobId, procs: u32, estimate: Time) -> Self {
        JobSpec { id, procs, estimate, partition: None, mem_per_proc_mb: 0, nodeset: None }
    }
}

/// The state machine of a job inside the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobState {
    /// Waiting in the queue since `submit`.
    Pending { submit: Time },
    /// Started at `start`; the engine plans with its expected end.
    Running { submit: Time, start: Time },
    /// Completion was reported at `end`.
    Done { submit: Time, start: Time, end: Time },
}

impl JobState {
    pub fn submit(&self) -> Time {
        match *self {
            JobState::Pending { submit } | JobState::Running { submit, .. } | JobState::Done { submit, .. } => submit,
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
