//! `tessera-core` is Tessera's scheduling engine.
//!
//! It is pure: it does no I/O, never reads a clock and never awaits. Time is an
//! integer number of seconds passed to every call, so the same engine is driven by
//! the trace-driven simulator (virtual clock) and by the live controller (wall clock),
//! and what the simulator predicts is what the live system does.
//!
//! The contract is [`Engine::handle`]: an [`Input`] goes in, [`Effect`]s come out.
//! Drivers go through [`step`], which feeds, at each distinct instant, first what
//! happens to the jobs already there (completions first), then every arrival (in
//! queue order), then [`Input::Pass`] until nothing more is due; see
//! `ARCHITECTURE.md`.

pub mod civil;
pub mod cluster;
pub mod duration;
pub mod contract;
pub mod engine;
mod gate;
pub mod hostlist;
pub mod quote;
pub mod job;
mod nodes;
pub mod nodeset;
pub mod pending;
pub mod policy;
pub mod power;
mod profile;
mod queue;
pub mod resv;
mod running;
pub mod share;
pub mod step;
mod table;

pub use cluster::{BenchmarkKind, CanonicalUnit, Cluster, ClusterError, Node, NodePower, NodeType, Partition, PowerSetupInfo, PreemptMode, Reconfiguration, Reference};
pub use nodeset::{NodeSetError, NodeSetSpec, SetAttribute, SetPlus, SetPolicy, SetPriority};
pub use contract::{Effect, Input, NodeChoice, Submission, JobRecord, NeedsPowerMachine, NodeChange, Rejection, MAX_TIME};
pub use engine::{Engine, Snapshot};
pub use step::{step, Driver};
pub use job::{scaled, After, AfterKind, FinalState, JobId, JobIdx, JobSpec, JobState, Shape, KillReason, Outcome, SuspendedBy, Throttle};
pub use nodes::{AllocPart, Allocation, NodeStatus, Parts};
pub use pending::PendingReason;
pub use policy::{PolicyKind, UnknownPolicy};
pub use resv::{Repeat, Reservation, ReservationSpec, ResvError, ResvNodes, ResvReqError, ResvRequest};

/// Time in whole seconds. Traces, estimates and every engine call use it.
pub type Time = i64;

/// The earliest of some instants, None if there is none: what a driver or
/// the engine waits for next. (A loop: an iterator flattening the options
/// cost the engine's every input a measurable share of a replay.)
#[inline]
pub fn earliest<const N: usize>(instants: [Option<Time>; N]) -> Option<Time> {
    let mut first: Option<Time> = None;
    for t in instants {
        let Some(t) = t else { continue };
        first = Some(match first {
            Some(f) if f <= t => f,
            _ => t,
        });
    }
    first
}
