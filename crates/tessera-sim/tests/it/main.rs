//! Integration tests of the simulator: hand-worked schedules, properties over random
//! traces, determinism, and the shared real traces.
mod common;
mod determinism;
mod fed;
mod properties;
mod properties_nodes;
mod schedules;
mod traces;
