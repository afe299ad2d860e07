//! Integration tests of the agent crate.
mod launch;
mod powercap;
