//! Tests of the benchmarks at their own layer.

mod benches;
#[cfg(feature = "highs")]
mod power;
