//! `tessera-workload`: job streams for Tessera.
//!
//! * [`swf`]: the Standard Workload Format of the Parallel Workloads Archive
//!   (Feitelson, Tsafrir, Krakov 2014): all 18 fields, header comments kept, plain
//!   or gzip input detected by content, read as a stream.
//! * [`jobs`]: how a simulator reads an SWF record as a job (the documented job
//!   semantics: processors, estimate, skip reasons).
//! * [`lublin`]: the Lublin & Feitelson (2003) model of rigid parallel jobs,
//!   seeded, which generates Tessera's embedded default workload.
//! * [`bounds`]: the range (times within ±2^42 s) every job stream stays in, so
//!   that nothing wraps on its way to the engine.

pub mod bounds;
pub mod jobs;
pub mod lublin;
pub use tessera_core::quote;
pub mod swf;
mod special;
pub mod traces;
pub mod transform;

pub use jobs::{SkipReason, TraceJob};
pub use swf::{SwfError, SwfHeader, SwfReader, SwfRecord, SwfWriter};
