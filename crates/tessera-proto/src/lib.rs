//! What the CLI, the controller and the agents exchange, and the validation of
//! user requests at the boundary. Wire types are not engine types: the engine's
//! types stay free to change (`ARCHITECTURE.md`).
//!
//! `api`: the HTTP routes' bodies. `submit`: the options of `tessera job submit`, in Slurm's syntax, parsed from
//! the command line and from a script's `#SBATCH` lines, each error naming the
//! option, the value and what is allowed.

pub mod statedir;
pub mod submit;

/// The wall clock in Unix seconds: the time the controller gives the engine and
/// the agents record starts and ends in.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

/// The wall clock as Unix seconds with their fraction.
pub fn unix_now_f64() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}
pub mod api;
pub mod client;
