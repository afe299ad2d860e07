//! Why a job is not running: a typed reason, never an error.

use crate::nodeset::{SetAttribute, SetPolicy};
use crate::Time;
use std::fmt;

/// Why a pending job has not started. Reported by [`crate::Engine::pending_reason`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "reason")]
pub enum PendingReason {
    /// The job is first in the queue and not enough processors are free.
    Resources { needed: u32, free: u32 },
    /// Jobs ahead of it in the queue come first, and it cannot be backfilled
    /// without delaying them.
    Priority,
    /// Conservative backfilling holds a reservation for it from `start`.
    ReservedFor { start: Time },
    /// Enough resources are free, but not within a node set as the job requires.
    NodeSet { policy: SetPolicy, attribute: SetAttribute },
    /// Held by its user or an operator: it waits until released.
    Held,
    /// It waits for jobs it depends on to end (or for an earlier job of its
    /// singleton key).
    Dependency,
    /// Its array has as many tasks let through as its `%N` allows.
    ArrayLimit,
    /// It may not start before `at` (its begin time, or a dependency's delay).
    BeginTime { at: Time },
    /// The power budget cannot feed even the job's smallest, lowest-cap shape now.
    PowerBudget { needed_w: u64, free_w: u64 },
    /// An association or QOS limit holds it (Slurm's reason name).
    Limit { limit: crate::share::LimitReason },
    /// It runs in an advance reservation whose window (the next from `start`)
    /// has not come, or is full (Slurm's `Reservation`).
    Reservation { start: Time },
    /// It would start now but for a maintenance reservation's window on the
    /// nodes it could use (Slurm's `ReqNodeNotAvail, Reserved for
    /// maintenance`).
    Maintenance,
}

impl fmt::Display for PendingReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PendingReason::Resources { needed, free } => {
                write!(f, "Resources (needs {needed} processors, {free} free)")
            }
            PendingReason::Priority => write!(f, "Priority"),
            PendingReason::Held => write!(f, "JobHeld"),
            PendingReason::Dependency => write!(f, "Dependency"),
            PendingReason::ArrayLimit => write!(f, "JobArrayTaskLimit"),
            PendingReason::BeginTime { at } => write!(f, "BeginTime (not before {at})"),
            PendingReason::ReservedFor { start } => write!(f, "ReservedFor (start at {start})"),
            PendingReason::NodeSet { policy, attribute } => write!(f, "NodeSet (waiting for a complete {policy}:{attribute} set)"),
            PendingReason::PowerBudget { needed_w, free_w } => write!(f, "PowerBudget (needs {needed_w} W, {free_w} W free)"),
            PendingReason::Limit { limit } => write!(f, "{limit}"),
            PendingReason::Reservation { start } => write!(f, "Reservation (its window from {start})"),
            PendingReason::Maintenance => write!(f, "ReqNodeNotAvail, Reserved for maintenance"),
        }
    }
}
