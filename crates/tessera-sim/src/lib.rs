//! `tessera-sim`: the trace-driven simulator.
//!
//! It drives [`tessera_core::Engine`] with a virtual clock: at each distinct instant
//! it delivers every completion, then every arrival in queue order, then one
//! scheduling pass, and turns each `Start` effect into a future completion event at
//! `start + min(runtime, estimate)` (a job is killed at its limit). A job that runs
//! for zero seconds completes at the instant it starts, in a further round of the
//! same instant (completions, then one more pass). Events are ordered by
//! (time, job index), so runs are deterministic.

pub mod metrics;
pub mod output;
pub mod power;
pub mod reference;
pub mod run;
pub mod share;
pub mod sleeplog;
pub mod workload;

pub use metrics::Summary;
pub use power::{stretch, PowerMode, PowerNodes, PowerRule, PowerSetup};
pub use run::{simulate, simulate_fed, simulate_observed, Fed, Fedout, Halt, Parts, Placements, PowerOutcome, PowerSample, SimOutcome};
pub use workload::{in_queue_order, prepare, prepare_on, prepare_power, queue_key, spec_of, Machine, Preparer, TimeRange, Workload, WorkloadError};

// The workload crate bounds times without depending on the engine: the two bounds
// must be one.
const _: () = assert!(tessera_core::MAX_TIME == tessera_workload::bounds::MAX_TIME, "the workload bounds differ from the engine's");
