//! Tessera's controller: the live driver of the engine.
//!
//! One thread (the actor, [`actor`]) owns the controller's [`state::State`] —
//! the engine plus what the controller knows of each job — and nothing else
//! touches it: HTTP handlers ([`http`]) and agents' connections send it
//! messages and await replies. The actor turns the wall clock into engine time
//! (Unix seconds), writes each batch of events to the journal ([`journal`])
//! before the engine sees it (group commit), applies it, carries out the
//! resulting actions (a start becomes a command to the node's agent, a finished
//! job a record in the accounting store) and answers. A restart restores the
//! last snapshot, replays the journal and lets agents re-register with what they
//! hold. The controller is fail-stop ([`failstop`]): a panic anywhere ends the
//! process, for its supervisor to start it again and recovery to run.

pub mod actor;
mod admission;
pub mod auth;
pub mod failstop;
pub mod governor;
pub mod http;
pub mod journal;
pub mod metrics;
pub mod openapi;
pub mod request;
pub mod resv;
pub mod shares;
pub mod state;
pub mod steps;

use std::net::SocketAddr;
use std::path::PathBuf;
use tessera_core::PolicyKind;

/// A controller's settings, validated.
#[derive(Debug, Clone)]
pub struct Config {
    pub state_dir: PathBuf,
    /// The cluster file's text and name (used on first start; a restart uses
    /// the cluster the state directory was created with).
    pub cluster_toml: String,
    pub cluster_path: String,
    pub policy: PolicyKind,
    /// TCP address for remote users and agents (tokens).
    pub listen: SocketAddr,
    /// Seconds without a poll after which an agent's nodes go down.
    pub heartbeat_timeout_s: u64,
    /// Seconds between SIGTERM and SIGKILL when a job is killed.
    pub kill_grace_s: u64,
    /// Limit of a job that states none, reference seconds.
    pub default_limit_s: i64,
    /// Uids that are operators over the Unix socket (root and the controller's
    /// own uid always are).
    pub operators: Vec<u32>,
    /// Site name for accounting.
    pub site: String,
    /// Most messages committed in one journal transaction ([`actor::MAX_BATCH`]
    /// normally; 1 turns group commit off, for the load test's comparison).
    pub max_batch: usize,
    /// The gathering window, milliseconds (Slurm's `batch_sched_delay` in
    /// spirit): the engine's clock is the whole second, and jobs that end in
    /// the same second, or a client's submissions of one second, reach the
    /// controller a few milliseconds apart. Batches of the first `coalesce_ms`
    /// of a second are journaled, applied and answered at once but make no pass
    /// (`Event::PassLater`); the second's pass is made when the window ends, and
    /// timed wake-ups are taken this long into their second; so the events of
    /// one second meet one pass, as in the simulator. 0 turns it off.
    pub coalesce_ms: u64,
    /// PARM's settings when `policy` is parm (None: the live defaults,
    /// [`parm_defaults`]). Kept in the state directory at its first start.
    pub parm: Option<tessera_core::power::ParmConfig>,
}

/// PARM's settings for a live controller (--policy parm), kept in its state
/// directory at the first start (docs/power.md, docs/live.md); None: the
/// default.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ParmFlags {
    /// PARM variant: noMM, noSE (moldable) or wSE (malleable; default).
    #[arg(long = "parm-variant")]
    pub variant: Option<String>,
    /// Decision rule: starts-first (default) or paper.
    #[arg(long = "parm-rule")]
    pub rule: Option<String>,
    /// Fairness exponent α of the weight (default 1).
    #[arg(long)]
    pub alpha: Option<f64>,
    /// Least seconds between two resizes of a job (f_se; default 500).
    #[arg(long)]
    pub fse: Option<i64>,
    /// Seconds a shrunk job has to acknowledge before it is killed (default 60).
    #[arg(long)]
    pub resize_ack: Option<i64>,
    /// An expanded job runs on its new nodes at once (a runtime that keeps
    /// processes on every node it may use: the paper's Charm++ testbed);
    /// default: it waits for them to boot (Eq. 21), as in `sim run`.
    #[arg(long)]
    pub no_expand_boots: bool,
    /// Measure each decision's solve time and charge it to the jobs it
    /// started or resized (they end that much later), as `sim run
    /// --charge-solve-time` does; default: the decision is paid in real time
    /// only (jobs start once it is made).
    #[arg(long)]
    pub charge_solve_time: bool,
    /// PARM's own durations (f_se, resize and boot times) in percent of the
    /// paper's, for an emulated cluster whose jobs' times are shrunk as much
    /// (`tessera twin` passes its --shrink); default 100.
    #[arg(long)]
    pub model_time_scale: Option<f64>,
}

impl ParmFlags {
    /// The flags again, for a controller `tessera up` starts.
    pub fn args(&self) -> Vec<String> {
        let given = [
            ("--parm-variant", self.variant.clone()),
            ("--parm-rule", self.rule.clone()),
            ("--alpha", self.alpha.map(|a| a.to_string())),
            ("--fse", self.fse.map(|f| f.to_string())),
            ("--resize-ack", self.resize_ack.map(|f| f.to_string())),
            ("--model-time-scale", self.model_time_scale.map(|f| f.to_string())),
        ];
        let mut v: Vec<String> = given.into_iter().filter_map(|(k, v)| Some([k.to_string(), v?])).flatten().collect();
        for (flag, given) in [("--no-expand-boots", self.no_expand_boots), ("--charge-solve-time", self.charge_solve_time)] {
            if given {
                v.push(flag.into());
            }
        }
        v
    }

    /// PARM's settings under `policy`, or None when no flag is given (the
    /// state directory's, or [`parm_defaults`]); an error names the flag.
    pub fn config(&self, policy: &str) -> Result<Option<tessera_core::power::ParmConfig>, String> {
        if self.args().is_empty() {
            return Ok(None);
        }
        if !policy.eq_ignore_ascii_case("parm") {
            return Err("--parm-variant, --parm-rule, --alpha, --fse, --resize-ack, --no-expand-boots, --charge-solve-time and --model-time-scale apply to --policy parm only".into());
        }
        let mut c = tessera_core::power::ParmConfig::from_flags(self.variant.as_deref(), self.rule.as_deref(), self.alpha, self.fse)?;
        c.resize_ack_s = Some(RESIZE_ACK_S);
        c.expand_boots = !self.no_expand_boots;
        c.charge_solve_time = self.charge_solve_time;
        match self.model_time_scale {
            Some(p) if !(p.is_finite() && p > 0.0 && p <= 100.0) => return Err(format!("--model-time-scale {p}: expected a percentage above 0 and at most 100")),
            Some(p) => c.time_scale = p / 100.0,
            None => {}
        }
        match self.resize_ack {
            Some(s) if !(1..=86_400).contains(&s) => return Err(format!("--resize-ack {s}: expected seconds from 1 to 86400")),
            Some(s) => c.resize_ack_s = Some(s),
            None => {}
        }
        Ok(Some(c))
    }
}

/// Seconds a live malleable job has to acknowledge a shrink before it is
/// killed (docs/live.md, "Reconfiguration").
pub const RESIZE_ACK_S: i64 = 60;

/// PARM's settings when a controller is given none: the simulator's defaults
/// (wSE, α = 1, f_se = 500 s, the structured solver, boots charged on an
/// expansion) with Tessera's starts-first decision rule, as `sim run --policy
/// parm` (docs/power.md).
pub fn parm_defaults() -> tessera_core::power::ParmConfig {
    tessera_core::power::ParmConfig { resize_ack_s: Some(RESIZE_ACK_S), ..tessera_core::power::ParmConfig::tessera() }
}

/// The files of a controller's state directory that every local user may read
/// (everything else there is the operator's: docs/live.md, "Who can read
/// what"): where the controller listens, and the accounting store (which
/// holds no script and no environment; every user reads every job's record,
/// as in Slurm with PrivateData unset). SQLite gives a store's WAL files its
/// own mode.
pub const PUBLIC_FILES: &[&str] = &["controller.json", "accounting.db", "accounting.db-wal", "accounting.db-shm"];

impl Config {
    pub fn socket_path(&self) -> PathBuf {
        self.state_dir.join("tessera.sock")
    }
    pub fn key_path(&self) -> PathBuf {
        self.state_dir.join("cluster.key")
    }
    pub fn db_path(&self) -> PathBuf {
        self.state_dir.join("state.db")
    }
    pub fn accounting_path(&self) -> PathBuf {
        self.state_dir.join("accounting.db")
    }
}

/// Where clients find a running controller: written to `controller.json` in the
/// state directory once it listens.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Endpoint {
    pub url: String,
    pub socket: PathBuf,
    pub pid: u32,
}

/// An error reply: HTTP status and body.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: u16,
    pub body: tessera_proto::api::ErrorReply,
}

impl ApiError {
    pub fn new(status: u16, msg: impl Into<String>) -> ApiError {
        ApiError { status, body: tessera_proto::api::ErrorReply { error: msg.into(), option: None, value: None, expected: None, line: None } }
    }
    pub fn option(e: tessera_proto::submit::OptionError) -> ApiError {
        ApiError {
            status: 400,
            body: tessera_proto::api::ErrorReply { error: e.to_string(), option: Some(e.option), value: Some(e.value), expected: Some(e.expected), line: e.line },
        }
    }
}
