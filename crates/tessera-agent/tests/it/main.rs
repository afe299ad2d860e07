//! Integration tests of the agent crate.
mod powercap;
