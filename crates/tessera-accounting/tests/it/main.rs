//! Integration tests of the accounting crate.
mod escaping;
mod publish;
