//! Emulation: the live system run on this machine, to check it against the
//! simulator and to break it on purpose.
//!
//! * [`local`]: a local cluster of real daemons (a controller and agents,
//!   processes of the `tessera` binary), every node registered; `tessera up`,
//!   the tools below and the live tests start theirs through it; [`interrupt`]
//!   stops them on SIGINT or SIGTERM, through [`stop`].
//! * [`sleep_job`]: the job of an emulated cluster, suspension-aware.
//! * [`replay`]: a trace replayed against a running controller with sleep jobs;
//!   [`metrics`] the classical metrics of a live run.
//! * [`twin`]: does the simulator predict the live system? [`chaos`]: every job
//!   ran and is accounted once under kill -9; [`soak`]: memory flat at a steady
//!   rate; [`loadtest`]: rates and pass times under load.
//! * [`client`]: what the users' commands and these tools share to talk to a
//!   controller.
//!
//! The tools take the path of the `tessera` binary that the daemons and the
//! sleep jobs run, so that they need not be that binary themselves.

pub mod chaos;
pub mod admin;
pub mod client;
pub mod interrupt;
pub mod loadtest;
pub mod local;
pub mod metrics;
pub mod replay;
pub mod sleep_job;
pub mod soak;
pub mod stop;
pub mod supervise;
pub mod twin;
pub mod slurm_twin;
