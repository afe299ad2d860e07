//! Node-side pieces of Tessera: what an agent does on the machine it runs on.
//! For now, CPU power caps through the Linux powercap sysfs interface, which is how
//! a node enforces the per-node CPU cap the scheduler's power-aware policy decides.

pub mod powercap;
