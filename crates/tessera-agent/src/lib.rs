//! Node-side pieces of Tessera: what an agent does on the machine it runs on.
//! `agent` presents nodes to the controller and runs their jobs; `launch` starts
//! a job under a shepherd that outlives the agent and records how it ended,
//! started by `launcher`, a small process the agent keeps for that (`sys`
//! has the raw system calls the shepherds make);
//! `powercap` sets CPU power limits through the Linux powercap sysfs interface,
//! which is how a node enforces the per-node CPU cap the power-aware policy
//! decides.

pub mod agent;
mod bpf;
pub mod cgroup;
pub mod launch;
pub mod launcher;
pub mod suspensions;
pub mod powercap;
pub mod run;
pub mod power;
mod sys;
