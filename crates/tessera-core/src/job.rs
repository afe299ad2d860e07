//! Jobs as the engine sees them: what was asked for, never what will happen.
//!
//! The engine knows a job's processor count and its estimate (the user's time
//! limit); the actual runtime belongs to the driver (the simulator's trace, or the
//! real process in the controller).

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

/// What a job asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobSpec {
    pub id: JobId,
    /// Processors requested; at least 1.
    pub procs: u32,
    /// The time limit the scheduler plans with (seconds, >= 0). The job is killed
    /// when it reaches it, so it never runs longer.
    pub estimate: Time,
}

/// The state machine of a job inside the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobState {
    /// Waiting in the queue since `submit`.
    Pending { submit: Time },
    /// Started at `start`; the engine plans with `start + estimate` as its end.
    Running { submit: Time, start: Time },
    /// Completion was reported at `end`.
    Done { submit: Time, start: Time, end: Time },
}

impl JobState {
    pub fn submit(&self) -> Time {
        match *self {
            JobState::Pending { submit }
            | JobState::Running { submit, .. }
            | JobState::Done { submit, .. } => submit,
        }
    }
}
