//! Integration tests of the engine, through a small `TestEnv`.
mod env;
mod purity;
mod schedules;
