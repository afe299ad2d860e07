//! `tessera-slurm`: Tessera for sites that run Slurm.
//!
//! * [`conf`]: slurm.conf read as Slurm reads it (comments, continuation
//!   lines, `Include`, keys in any case).
//! * [`factors`]: the side file that gives nodes their benchmarks.
//! * [`site`]: a slurm.conf's nodes and partitions as a Tessera cluster file,
//!   with every setting left out listed by file and line.
//! * [`sacct`]: sacct's job history read into jobs (steps folded, arrays,
//!   heterogeneous and requeued jobs as sacct shows them).
//! * [`history`]: that history as a workload (SWF) and accounting records.
//! * [`cli`]: `tessera import slurm-conf` and `tessera import sacct`.

pub mod cli;
pub mod conf;
pub mod factors;
pub mod history;
pub mod sacct;
pub mod site;

pub use conf::{ImportError, Place};
