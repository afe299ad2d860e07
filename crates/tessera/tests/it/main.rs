//! End-to-end tests of the `tessera` binary: real process, files in a temp dir.
mod accounting;
mod bench;
mod bounds;
mod cli;
mod common;
mod escaping;
mod hardening;
mod live;
mod power;
mod reports;
mod sleep_job;
mod slurm_import;
mod slurm_twin;
