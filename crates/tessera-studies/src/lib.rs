//! Studies on the simulator: what a user runs to learn something from it.
//!
//! * [`spec`]: [`RunSpec`], one simulation, typed; `tessera sim run` builds one
//!   from its flags, a comparison one per variant, a sweep one per case.
//! * [`run`]: a [`RunSpec`] executed (jobs read or generated, the machine built,
//!   simulated) and `sim run`'s outputs written; [`power`] the power-aware setup;
//!   [`record`] a simulation recorded in the accounting store.
//! * [`compare`] and [`sweep`]: many runs at once ([`parallel`]).
//! * The reproducible experiments: [`nodesets`], and the PARM paper's
//!   ([`parm_paper`]), its attribution ([`attribution`]) and testbed
//!   ([`testbed`]), on the machinery of [`parm`].
//! * [`files`]: outputs never overwrite inputs; HTML pages written.
//! * [`trace_info`]: what a trace holds, and what a simulation would replay of it.
//!
//! Errors name the `sim run` flag (or experiment flag) whose value is wrong,
//! since that is how users and sweep files name a run's settings.

pub mod attribution;
pub mod compare;
pub mod files;
pub mod nodesets;
pub mod parallel;
pub mod parm;
pub mod parm_paper;
pub mod power;
pub mod record;
pub mod run;
pub mod spec;
pub mod sweep;
pub mod testbed;
pub mod trace_info;

pub use run::{execute, Executed, Outputs};
pub use spec::{PowerSpec, RunSpec};
