//! `tessera-slurm`: Tessera for sites that run Slurm.
//!
//! * [`conf`]: slurm.conf read as Slurm reads it (comments, continuation
//!   lines, `Include`, keys in any case).
//! * [`factors`]: the side file that gives nodes their benchmarks.
//! * [`site`]: a slurm.conf's nodes and partitions as a Tessera cluster file,
//!   with every setting left out listed by file and line.
//! * [`cli`]: `tessera import slurm-conf`.

pub mod cli;
pub mod conf;
pub mod factors;
pub mod site;

pub use conf::{ImportError, Place};
