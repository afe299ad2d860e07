//! Tessera's benchmarks, each a command of the binary and a figure in
//! BENCHMARKS.md:
//!
//! * [`sim`]: whole trace replays (`tessera sim bench`), every policy against
//!   the naive reference simulator;
//! * [`pass`]: one scheduling pass as a live controller runs it, against a deep
//!   queue on a large machine (`tessera sim bench-pass`);
//! * [`stream`]: millions of jobs through the engine in flat memory (`tessera sim
//!   bench-stream`);
//! * [`power`]: one PARM decision, Tessera's structured solver against microlp
//!   and HiGHS (`tessera power bench`; HiGHS, [`highs_mip`], only with the cargo
//!   feature `highs`).
//!
//! [`driver`] drives the engine for `pass` and `stream`; [`measure`] times and
//! reads memory, for these and for the live system's load tests.

pub mod driver;
pub mod highs_mip;
pub mod measure;
pub mod pass;
pub mod power;
pub mod sim;
pub mod stream;
