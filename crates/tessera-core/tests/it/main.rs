//! Integration tests of the engine, through a small `TestEnv`.
mod cluster_file;
mod budget;
mod contract;
mod drained;
mod env;
mod fuzz;
mod gates;
mod heterogeneous;
mod knapsack;
mod nodesets;
mod power;
mod purity;
mod reconfigure;
mod schedules;
mod shapes;
mod shortcuts;
mod suspension;
