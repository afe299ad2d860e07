//! Integration tests of the agent crate.
mod cgroup_v2;
mod launch;
mod powercap;
