//! Integration tests of the accounting crate.
mod publish;
