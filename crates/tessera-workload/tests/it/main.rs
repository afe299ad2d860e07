//! Integration tests of the workload crate.
mod swf_files;
mod swf_roundtrip;
