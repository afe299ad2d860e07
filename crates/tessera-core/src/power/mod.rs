//! Power-aware scheduling: the PASS performance model, the node power model, and
//! the knapsack the PARM scheduler solves at every trigger.

pub mod knapsack;
pub mod mps;
pub mod parm;
pub mod pass;

pub use knapsack::{Group, Item, Problem, Solution, Solver, Status};
pub use parm::{DecisionRule, ParmConfig, ParmEngine, ParmStats, ParmVariant, PowerMachine, Usage};
pub use pass::{AppProfile, Downey, PowerJob, PRESETS};
