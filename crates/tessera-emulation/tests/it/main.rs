//! Tests of the emulation tools at their own layer: planning a replay, the
//! local cluster's agents, a live run's metrics. (The tools end to end start
//! real daemons: they are the `tessera` binary's tests, `live/` and
//! `sleep_job.rs`, which start them through this crate.)

mod local;
mod metrics;
mod replay;
