//! Tests of the studies at their own layer: runs from typed specifications,
//! sweeps from files, comparisons, the experiments' reports.

mod runs;
mod sweeps;
mod experiments;
mod fairshare;
