//! Arguments of the live system's commands: the daemons (`controller`, `agent`,
//! `up`, `down`), the users' commands (`job`, `queue`, `nodes`, `node
//! drain|resume|down|up`) and `token`.

use clap::{Args, Subcommand, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;

pub use tessera_emulation::client::ClientArgs;

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum ListFormat {
    Table,
    Json,
}

#[derive(Args, Debug)]
pub struct ControllerArgs {
    /// State directory: journal, snapshot, accounting store, key, socket.
    #[arg(long, env = "TESSERA_STATE_DIR", default_value = "tessera-state")]
    pub state_dir: PathBuf,
    /// Cluster file (default: the embedded default cluster). Used when the state
    /// directory is created; a restart keeps the cluster it was created with.
    #[arg(long)]
    pub cluster: Option<PathBuf>,
    /// Scheduling policy: fcfs, easy, conservative, or parm (power-aware: a
    /// cluster file with power_budget_w and a power model).
    #[arg(long, default_value = "easy", value_parser = crate::values::policy)]
    pub policy: String,
    #[command(flatten)]
    pub parm: tessera_controller::ParmFlags,
    /// TCP address for remote users and agents.
    #[arg(long, default_value = "127.0.0.1:6817")]
    pub listen: SocketAddr,
    /// Seconds without a poll after which an agent's nodes go down.
    #[arg(long, default_value_t = 10)]
    pub heartbeat_timeout: u64,
    /// Seconds between SIGTERM and SIGKILL when a job is killed.
    #[arg(long, default_value_t = 5)]
    pub kill_grace: u64,
    /// Time limit of a job that states none (Slurm's syntax).
    #[arg(long, default_value = "1:00:00")]
    pub default_time: String,
    /// Uids that are operators over the Unix socket (root and the controller's own uid always are).
    #[arg(long, value_delimiter = ',')]
    pub operators: Vec<u32>,
    /// Site name for accounting records.
    #[arg(long, default_value = "TESSERA-LOCAL")]
    pub site: String,
    /// Most requests committed in one journal transaction (1: no group commit;
    /// for the load test's comparison).
    #[arg(long, default_value_t = tessera_controller::actor::MAX_BATCH, hide = true)]
    pub max_batch: usize,
    /// Milliseconds at the start of each second in which the controller
    /// gathers messages before its pass, so that the job ends of one second are
    /// one pass, as in the simulator (0: none).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(0..=500))]
    pub coalesce_ms: u64,
}

#[derive(Args, Debug)]
pub struct AgentArgs {
    /// Agent name (default: the host name).
    #[arg(long)]
    pub name: Option<String>,
    /// Controller URL (http://HOST:PORT).
    #[arg(long, env = "TESSERA_CONTROLLER")]
    pub controller: String,
    /// The cluster key file (the agent signs its own agent token with it).
    #[arg(long, conflicts_with = "token")]
    pub key_file: Option<PathBuf>,
    /// An agent token (tessera token create --role agent).
    #[arg(long, env = "TESSERA_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Nodes this agent presents (a hostlist, e.g. node[001-016]); default: the host name.
    #[arg(long)]
    pub nodes: Option<String>,
    /// Cluster file giving the presented nodes' cores, memory and GPUs
    /// (default: detected from this machine).
    #[arg(long)]
    pub cluster: Option<PathBuf>,
    /// Use the embedded default cluster for the nodes' resources.
    #[arg(long, conflicts_with = "cluster")]
    pub default_cluster: bool,
    /// The agent's state directory (its jobs' records).
    #[arg(long)]
    pub state_dir: PathBuf,
    /// Seconds past a job's limit before the agent ends it itself.
    #[arg(long, default_value_t = 2)]
    pub limit_slack: u64,
    /// The powercap class directory of a real node's RAPL packages (where
    /// its CPU cap is set and its energy read; a fake tree in tests).
    #[arg(long, default_value = tessera_agent::powercap::DEFAULT_ROOT)]
    pub powercap_root: PathBuf,
    /// Where the nodes' CPU caps go and their power comes from: model (the
    /// cluster file's: emulated nodes), rapl (under --powercap-root), none, or
    /// auto (the model for a cluster file's nodes, else RAPL if present).
    #[arg(long, default_value = "auto")]
    pub power_domain: tessera_agent::power::Choice,
    #[command(flatten)]
    pub cgroup: tessera_agent::cgroup::CgroupFlags,
}

#[derive(Args, Debug)]
pub struct UpArgs {
    /// State directory of the controller and agents.
    #[arg(long, env = "TESSERA_STATE_DIR", default_value = "tessera-state")]
    pub state_dir: PathBuf,
    /// Cluster file (default: the embedded default cluster, 32 nodes of 8 cores).
    #[arg(long)]
    pub cluster: Option<PathBuf>,
    /// Agents to start; the cluster's nodes are shared among them. A state
    /// directory's agents keep their nodes at every start (DIR/agents.json).
    #[arg(long, default_value_t = 2)]
    pub agents: usize,
    /// Scheduling policy: fcfs, easy, conservative, or parm (power-aware: a
    /// cluster file with power_budget_w and a power model).
    #[arg(long, default_value = "easy", value_parser = crate::values::policy)]
    pub policy: String,
    #[command(flatten)]
    pub parm: tessera_controller::ParmFlags,
    /// TCP address of the controller (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Return once everything is up, leaving the daemons running (stop them with tessera down).
    #[arg(long, short = 'd')]
    pub detach: bool,
    /// On a state directory that runs another cluster, apply the --cluster
    /// file given (as scontrol reconfigure: running jobs kept; refused if a
    /// job would lose its place). Without it, the state's cluster is kept.
    #[arg(long)]
    pub reconfigure: bool,
}

#[derive(Args, Debug)]
pub struct ReconfigureArgs {
    /// The changed cluster file.
    pub file: PathBuf,
    #[command(flatten)]
    pub client: ClientArgs,
}

#[derive(Args, Debug)]
pub struct SetBudgetArgs {
    /// The new budget (W).
    pub watts: f64,
    #[command(flatten)]
    pub client: ClientArgs,
}

#[derive(Args, Debug)]
pub struct DownArgs {
    /// State directory of the controller (its socket, endpoint file and key).
    #[arg(long, env = "TESSERA_STATE_DIR", default_value = "tessera-state")]
    pub state_dir: PathBuf,
}

#[derive(Subcommand, Debug)]
pub enum JobCommand {
    /// Submit a batch script (sbatch): #SBATCH lines, then these options.
    Submit(SubmitArgs),
    /// Cancel jobs (scancel).
    Cancel(JobIds),
    /// Hold queued jobs.
    Hold(JobIds),
    /// Release held jobs.
    Release(JobIds),
    /// Suspend running jobs (operators).
    Suspend(JobIds),
    /// Resume suspended jobs (operators).
    Resume(JobIds),
    /// Requeue running jobs.
    Requeue(JobIds),
    /// Show jobs in full (scontrol show job).
    Show(JobShowArgs),
    /// Print a queued or running job's script, or its environment
    /// (scontrol write batch_script): your own jobs, or any as an operator.
    Script(JobScriptArgs),
}

#[derive(Args, Debug)]
pub struct JobScriptArgs {
    /// The job id, or an array task (7_3).
    pub id: tessera_proto::api::JobRef,
    /// Print its environment (NAME=value lines) instead of its script.
    #[arg(long)]
    pub env: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

#[derive(Args, Debug)]
pub struct JobIds {
    /// Job ids, or array tasks (7_3).
    #[arg(required = true)]
    pub ids: Vec<tessera_proto::api::JobRef>,
    #[command(flatten)]
    pub client: ClientArgs,
}

#[derive(Args, Debug)]
pub struct JobShowArgs {
    /// Job ids, or array tasks (7_3).
    #[arg(required = true)]
    pub ids: Vec<tessera_proto::api::JobRef>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ListFormat,
    #[command(flatten)]
    pub client: ClientArgs,
}

#[derive(Args, Debug)]
pub struct SubmitArgs {
    /// Batch script (default: read from standard input, unless --wrap).
    pub script: Option<PathBuf>,
    /// Run this command line as the job (a #!/bin/sh script).
    #[arg(long, conflicts_with = "script")]
    pub wrap: Option<String>,
    #[command(flatten)]
    pub opts: tessera_proto::submit::JobOptions,
    /// Working directory (default: the current one).
    #[arg(short = 'D', long)]
    pub chdir: Option<PathBuf>,
    /// Print only the job id.
    #[arg(long)]
    pub parsable: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

#[derive(Args, Debug)]
pub struct QueueArgs {
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ListFormat,
    /// Also jobs that ended in the last five minutes.
    #[arg(long)]
    pub all: bool,
    /// Only these users (comma-separated).
    #[arg(short = 'u', long)]
    pub user: Option<String>,
    /// Only these jobs (comma-separated ids or array tasks, 7_3).
    #[arg(short = 'j', long)]
    pub jobs: Option<String>,
    /// Also each job's time limit, and its limit on the nodes it runs on (the
    /// reference limit at their pace).
    #[arg(short = 'l', long)]
    pub long: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

#[derive(Args, Debug)]
pub struct RunCmd {
    #[command(flatten)]
    pub run: tessera_agent::run::RunArgs,
    #[command(flatten)]
    pub client: ClientArgs,
}

#[derive(Args, Debug)]
pub struct SallocCmd {
    #[command(flatten)]
    pub salloc: tessera_agent::run::SallocArgs,
    #[command(flatten)]
    pub client: ClientArgs,
}

#[derive(Args, Debug)]
pub struct NodesArgs {
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ListFormat,
    /// One line per node (sinfo -N).
    #[arg(short = 'N', long)]
    pub node_oriented: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

#[derive(Args, Debug)]
pub struct NodeStateArgs {
    /// Nodes (a hostlist such as node[001-004]).
    pub nodes: String,
    /// Reason, recorded with the node's state.
    #[arg(long, default_value = "")]
    pub reason: String,
    #[command(flatten)]
    pub client: ClientArgs,
}

#[derive(Subcommand, Debug)]
pub enum TokenCommand {
    /// Sign a token with the cluster key (operators: the key file is theirs alone).
    Create(tessera_controller::auth::TokenArgs),
}

