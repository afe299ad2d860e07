//! The controller's HTTP/JSON API: request and response bodies for users (the
//! CLI) and for node agents. Version [`PROTOCOL_VERSION`]; every route is under
//! `/v1`. Times are Unix seconds.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The wire protocol's version: routes live under `/v{PROTOCOL_VERSION}`.
pub const PROTOCOL_VERSION: u32 = 1;

/// One command-line option of `tessera job submit` (`-n`, `--time`, ...) and its
/// value (empty for a flag). The controller reads the script's `#SBATCH` lines
/// first, then these, so the command line wins, as with sbatch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OptionArg {
    pub option: String,
    #[serde(default)]
    pub value: String,
}

/// `POST /v1/jobs`: a batch script and its options.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmitRequest {
    /// The batch script (with `#SBATCH` lines); the CLI turns `--wrap CMD` into
    /// a `#!/bin/sh` script.
    pub script: String,
    #[serde(default)]
    pub options: Vec<OptionArg>,
    /// The directory the job runs in and its output paths are relative to.
    pub workdir: String,
    /// The submitter's environment, passed to the job (sbatch's `--export=ALL`).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The script's file name: the job's name unless `-J` gives one (`wrap` for
    /// `--wrap`, as sbatch).
    #[serde(default)]
    pub script_name: Option<String>,
    /// A key naming this submission (at most 128 printable characters), so that a
    /// client may send it again when it did not get the reply (the controller
    /// restarted, the connection broke): the same user's same key gets the jobs
    /// the first one created, while any of them is queued, running or listed
    /// as finished (for 300 s after the last one ends). Another request with a
    /// key still remembered is refused (409).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// The reply to a submission: the job ids (one per array task).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmitReply {
    pub jobs: Vec<u64>,
}

/// An error reply (4xx, 5xx): what went wrong, and for bad input, the option or
/// field, the value and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorReply {
    pub error: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub option: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
}

/// Slurm's job state codes, as `tessera queue` shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JobStateCode {
    Pending,
    Running,
    Suspended,
    Completing,
    Completed,
    Failed,
    Cancelled,
    Timeout,
    NodeFail,
    OutOfMemory,
}

impl JobStateCode {
    /// squeue's compact code (`PD`, `R`, `S`, `CG`, `CD`, `F`, `CA`, `TO`, `NF`).
    pub fn short(self) -> &'static str {
        match self {
            JobStateCode::Pending => "PD",
            JobStateCode::Running => "R",
            JobStateCode::Suspended => "S",
            JobStateCode::Completing => "CG",
            JobStateCode::Completed => "CD",
            JobStateCode::Failed => "F",
            JobStateCode::Cancelled => "CA",
            JobStateCode::Timeout => "TO",
            JobStateCode::NodeFail => "NF",
            JobStateCode::OutOfMemory => "OOM",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            JobStateCode::Pending => "PENDING",
            JobStateCode::Running => "RUNNING",
            JobStateCode::Suspended => "SUSPENDED",
            JobStateCode::Completing => "COMPLETING",
            JobStateCode::Completed => "COMPLETED",
            JobStateCode::Failed => "FAILED",
            JobStateCode::Cancelled => "CANCELLED",
            JobStateCode::Timeout => "TIMEOUT",
            JobStateCode::NodeFail => "NODE_FAIL",
            JobStateCode::OutOfMemory => "OUT_OF_MEMORY",
        }
    }
}

/// A job as `tessera queue` and `tessera job show` see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobInfo {
    pub id: u64,
    /// `ARRAYID_TASK` for array tasks, else the id.
    pub display_id: String,
    pub name: String,
    pub user: String,
    pub uid: u32,
    pub partition: String,
    pub state: JobStateCode,
    /// Why it is pending (the engine's reason, or the controller's: dependency,
    /// array throttle), or how it ended.
    pub reason: String,
    /// The reason in full (`tessera job show`).
    #[serde(default)]
    pub reason_detail: String,
    pub submit: i64,
    pub start: Option<i64>,
    pub end: Option<i64>,
    /// Seconds it has run (suspended time excluded).
    pub elapsed_s: i64,
    /// Its limit in reference seconds (None: unlimited).
    pub time_limit_s: Option<i64>,
    /// Its limit in real seconds on the nodes it runs on (the reference limit
    /// at their pace); None while it waits, or unlimited.
    #[serde(default)]
    pub limit_on_nodes_s: Option<i64>,
    pub procs: u32,
    pub nodes: u32,
    pub nodelist: String,
    pub workdir: String,
    pub stdout: String,
    pub stderr: String,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub requeues: u32,
}

/// A job as users name it: its id (`12`), or an array task (`7_3`: task 3 of
/// array job 7), as Slurm's commands take them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobRef {
    Id(u64),
    Task(u64, u32),
}

impl std::str::FromStr for JobRef {
    type Err = String;

    fn from_str(s: &str) -> Result<JobRef, String> {
        let bad = || format!("job {}: expected a job id (12) or an array task (7_3)", tessera_core::quote::bounded(s));
        let digits = |x: &str| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit());
        match s.split_once('_') {
            None if digits(s) => s.parse().map(JobRef::Id).map_err(|_| bad()),
            Some((a, t)) if digits(a) && digits(t) => Ok(JobRef::Task(a.parse().map_err(|_| bad())?, t.parse().map_err(|_| bad())?)),
            _ => Err(bad()),
        }
    }
}

impl std::fmt::Display for JobRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JobRef::Id(id) => write!(f, "{id}"),
            JobRef::Task(a, t) => write!(f, "{a}_{t}"),
        }
    }
}

/// `GET /v1/jobs/{id}/script`: a live job's script and environment, for its
/// owner and the operators only (`tessera job script`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobScript {
    pub id: u64,
    pub script: String,
    pub env: BTreeMap<String, String>,
}

/// A node as `tessera nodes` sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeInfo {
    pub name: String,
    pub partitions: Vec<String>,
    /// `idle`, `mixed`, `allocated`, `drain` (`draining` while jobs still run),
    /// `down` or `unknown` (no agent has registered it).
    pub state: String,
    pub reason: String,
    pub cores: u32,
    pub alloc_cores: u32,
    pub memory_mb: u64,
    pub alloc_memory_mb: u64,
    pub gpus: u32,
    pub alloc_gpus: u32,
    pub features: Vec<String>,
    pub factor: f64,
    /// The agent presenting it, if one is registered.
    pub agent: Option<String>,
    /// How its agent confines its jobs (None: not at all, or no agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confinement: Option<Confinement>,
}

/// `GET /v1/cluster`: the cluster and policy the controller schedules, so a
/// client (a trace replay, a simulation of the same run) uses exactly them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterInfo {
    pub name: String,
    /// `fcfs`, `easy` or `conservative`.
    pub policy: String,
    /// The cluster file's text: the one the state directory was created
    /// with, or the last one an operator applied (`POST /v1/cluster`).
    pub toml: String,
    /// Where that file was read from (empty: the embedded default).
    pub path: String,
    pub nodes: usize,
    pub cores: u64,
}

/// `POST /v1/cluster` body: apply a changed cluster file to the running
/// controller (operators; as `scontrol reconfigure` rereads slurm.conf).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReconfigureRequest {
    /// The cluster file's text.
    pub toml: String,
    /// Its name, for messages and `GET /v1/cluster`.
    #[serde(default)]
    pub path: String,
}

/// `POST /v1/cluster` reply: the cluster now scheduled, and its nodes that the
/// change added, removed or changed (cores, memory, GPUs, type, factor,
/// features or partitions), by name.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReconfigureReply {
    pub cluster: ClusterInfo,
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub changed: Vec<String>,
}

/// `POST /v1/nodes/{name}/{action}` body.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeAction {
    #[serde(default)]
    pub reason: String,
}

// ---------------------------------------------------------------- agents

/// How a job's processes ended, as the agent saw it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct JobExit {
    pub job: u64,
    pub attempt: u32,
    /// Exit code, or None if killed by a signal.
    pub code: Option<i32>,
    pub signal: Option<i32>,
    /// User + system CPU seconds of the job's processes.
    pub cpu_s: f64,
    pub start: i64,
    pub end: i64,
    /// The agent ended it at its limit (the controller was not there to).
    pub limit_hit: bool,
    /// Why it never ran: the step of its launch that failed, and the error.
    #[serde(default)]
    pub failure: Option<LaunchFailure>,
    /// What the job's cgroup counted, when it ran in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<CgroupUsage>,
}

/// A job's (or a step's) own counters, read from its cgroup when it ended:
/// every process it started is counted, a double-forked one included.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CgroupUsage {
    /// User + system CPU seconds.
    pub cpu_s: f64,
    /// The peak of its memory (resident and page cache charged to it), KiB.
    pub max_rss_kb: u64,
    /// Processes the kernel's out-of-memory killer killed in it.
    pub oom_kills: u64,
    /// Seconds some of its tasks stalled on CPU and on memory (pressure
    /// stall information; cgroup v2 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pressure_s: Option<(f64, f64)>,
}

/// The step of a job's launch that failed. The job's identity is taken before
/// its working directory is entered and its output files are opened, so each
/// of those fails as the submitter's own attempt would.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LaunchStage {
    /// A NUL byte in the script's environment, working directory or paths.
    Request,
    /// The agent could not write the job's script or record in its spool, or
    /// start its shepherd.
    Spool,
    /// Taking the submitter's uid, gid and supplementary groups.
    Identity,
    /// Entering the working directory.
    Workdir,
    /// Opening (creating) the output file.
    Stdout,
    /// Opening (creating) the error file.
    Stderr,
    /// Executing the script.
    Exec,
    /// Creating the job's cgroup or entering it (the node's fault: the
    /// controller drains the node).
    Cgroup,
    /// Reaching the step's client (`tessera run`) for its output.
    Io,
}

impl LaunchStage {
    /// The stage's number in an agent's spool record.
    pub fn code(self) -> i64 {
        self as i64
    }

    pub fn from_code(c: i64) -> Option<LaunchStage> {
        use LaunchStage::*;
        [Request, Spool, Identity, Workdir, Stdout, Stderr, Exec, Cgroup, Io].into_iter().find(|s| s.code() == c)
    }
}

/// A launch that failed: where, and the operating system's error number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchFailure {
    pub stage: LaunchStage,
    pub errno: i32,
}

impl LaunchFailure {
    /// What happened, for `tessera job show` and the accounting record, given
    /// the job's working directory and output paths.
    pub fn describe(&self, workdir: &str, stdout: &str, stderr: &str) -> String {
        let err = std::io::Error::from_raw_os_error(self.errno);
        match self.stage {
            LaunchStage::Request => format!("launch failed: a NUL byte in the job's environment, working directory or output paths ({err})"),
            LaunchStage::Spool => format!("launch failed: the node's agent could not prepare the job ({err})"),
            LaunchStage::Identity => format!("launch failed: cannot take the submitter's uid, gid and groups ({err})"),
            LaunchStage::Workdir => format!("launch failed: cannot enter the working directory `{}`: {err}", workdir.escape_debug()),
            LaunchStage::Stdout => format!("launch failed: cannot open the output file `{}`: {err}", stdout.escape_debug()),
            LaunchStage::Stderr => format!("launch failed: cannot open the error file `{}`: {err}", stderr.escape_debug()),
            LaunchStage::Exec => format!("launch failed: cannot execute the job's script: {err}"),
            LaunchStage::Cgroup => format!("launch failed: the node cannot confine the job in a cgroup ({err})"),
            LaunchStage::Io => format!("launch failed: the node cannot reach the step's client (tessera run) for its output ({err})"),
        }
    }
}

/// A job an agent holds: still running, or ended and not yet acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum AgentJob {
    Running { job: u64, attempt: u32, suspended: bool },
    Ended(JobExit),
}

/// A node as its agent presents it (names from the cluster file; the detected
/// resources are checked against the cluster file's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentNode {
    pub name: String,
    pub cores: u32,
    pub memory_mb: u64,
    pub gpus: u32,
    /// How the agent confines the node's jobs (None: it does not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confinement: Option<Confinement>,
}

/// A node's confinement of its jobs: a cgroup per job and per step, and the
/// controls in force in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confinement {
    /// The cgroup version: 1 or 2.
    pub version: u8,
    pub controls: Vec<Control>,
}

impl std::fmt::Display for Confinement {
    /// `v1:cpuset,memory,pids,devices,freezer`, as `tessera nodes` shows it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "v{}:", self.version)?;
        let names: Vec<&str> = self.controls.iter().map(|c| c.name()).collect();
        f.write_str(&names.join(","))
    }
}

/// One control a job's cgroup applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Control {
    /// The cores the engine allocated (real nodes only: an emulated node's
    /// cores are not the host's).
    Cpuset,
    /// The job's memory, swap off.
    Memory,
    /// A ceiling on the job's processes and threads.
    Pids,
    /// Only the allocated GPUs' device files (on nodes with GPU devices).
    Devices,
    /// Suspension freezes the cgroup.
    Freezer,
}

impl Control {
    pub fn name(self) -> &'static str {
        match self {
            Control::Cpuset => "cpuset",
            Control::Memory => "memory",
            Control::Pids => "pids",
            Control::Devices => "devices",
            Control::Freezer => "freezer",
        }
    }
}

/// `POST /v1/agent/register`: an agent (re)joins with everything it holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegisterRequest {
    pub agent: String,
    pub version: u32,
    pub nodes: Vec<AgentNode>,
    pub jobs: Vec<AgentJob>,
    /// Its nodes' power domains as they stand (their caps in force), when it
    /// has any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub power: Vec<NodePowerReading>,
    /// The steps it runs (job, attempt, step), and those that ended and
    /// were not yet acknowledged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<(u64, u32, u32)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps_ended: Vec<StepExit>,
}

/// An advance reservation, as `GET /v1/reservations` lists it and `POST
/// /v1/reservations` (a `tessera_core::ResvRequest`) answers: its window in
/// force or next (Unix seconds), its nodes and who may use it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservationInfo {
    pub name: String,
    pub start: i64,
    pub end: i64,
    /// A hostlist.
    pub nodes: String,
    pub node_count: u32,
    /// MAINT, IGNORE_JOBS, DAILY, WEEKLY.
    pub flags: Vec<String>,
    pub users: Vec<String>,
    pub accounts: Vec<String>,
    /// Its window is in force now.
    pub active: bool,
}

/// `POST /v1/accounts`: an operator's change to the accounts, in sacctmgr's
/// words (`add account physics Parent=root Fairshare=40`, ...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccountChange {
    pub words: Vec<String>,
}

/// One association as `GET /v1/shares` (`tessera share`, sshare) shows it,
/// in tree order: Fair Tree as of the last calculation, usage as it stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShareRow {
    pub account: String,
    /// The user of a user association.
    pub user: Option<String>,
    /// Depth below root (root 0).
    pub depth: u32,
    pub raw_shares: u32,
    pub norm_shares: f64,
    /// Decayed usage, in the usage unit (core-seconds, normalized or canonical).
    pub raw_usage: f64,
    pub norm_usage: f64,
    pub effective_usage: f64,
    /// Level fair share, as sshare prints it (`inf` without usage).
    pub level_fs: String,
    /// The fair-share factor (user associations).
    pub fairshare: f64,
}

/// One pending job's priority as `GET /v1/priorities` (`tessera prio`,
/// sprio) shows it: each factor weighted, and the sum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrioRow {
    pub job: u64,
    pub partition: String,
    pub user: String,
    pub account: String,
    pub priority: u32,
    pub age: f64,
    pub fairshare: f64,
    pub jobsize: f64,
    pub partition_factor: f64,
    pub qos_name: String,
    pub qos: f64,
    pub nice: i32,
}

/// `POST /v1/cluster/budget`: an operator changes the power budget (W).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetRequest {
    pub watts: f64,
}

/// The budget now in force, and the one before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetReply {
    pub budget_w: f64,
    pub previous_w: Option<f64>,
}

/// Seconds between an agent's power reports.
pub const POWER_REPORT_S: u64 = 2;

/// One node's power, as its agent reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodePowerReading {
    pub node: String,
    /// The CPU cap in force (W); None: never set.
    pub cap_w: Option<f64>,
    /// Power drawn over the last interval (W).
    pub watts: f64,
    /// Energy drawn since the agent started (J).
    pub energy_j: f64,
    /// Measured (RAPL energy counters), else modelled (an emulated node).
    pub measured: bool,
    /// Why the node's cap cannot be set or its power read, if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RegisterReply {
    /// Names this registration; polls and reports carry it. A new session
    /// (a restarted controller) asks the agent to register again.
    pub session: u64,
    /// Seconds between polls after which the controller declares the nodes down.
    pub heartbeat_timeout_s: u64,
    /// Nodes the agent presents that the cluster does not have (ignored; a
    /// changed cluster file that adds them brings them into service).
    #[serde(default)]
    pub ignored: Vec<String>,
}

/// `POST /v1/agent/poll`: the agent's heartbeat and long-poll for commands.
/// `POST /v1/agent/report`: jobs that ended; the reply (204) comes once they are
/// journaled, and the agent then forgets them (as it does the ended jobs of a
/// registration, once registered).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentMessage {
    pub agent: String,
    pub session: u64,
    #[serde(default)]
    pub ended: Vec<JobExit>,
    /// Its nodes' power, every few seconds (on polls).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub power: Vec<NodePowerReading>,
    /// Runs (job, attempt) that acknowledged their latest configuration
    /// (a line in `$TESSERA_CONFIG_ACK`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resized: Vec<(u64, u32)>,
    /// Steps whose tasks on one of its nodes all ended (reported until
    /// acknowledged, as job ends).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepExit>,
}

/// What a job runs with on its first node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Launch {
    pub job: u64,
    pub attempt: u32,
    pub name: String,
    pub user: String,
    pub uid: u32,
    pub gid: u32,
    pub script: String,
    pub workdir: String,
    pub stdout: String,
    pub stderr: String,
    pub env: BTreeMap<String, String>,
    /// Real seconds it may run (suspended time excluded); None: unlimited.
    pub limit_s: Option<i64>,
    /// Seconds between SIGTERM and SIGKILL.
    pub kill_grace_s: u64,
    /// What the job holds on each of its nodes, first node first (the
    /// agent confines it to that).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shares: Vec<NodeShare>,
    /// Suspension sends SIGTSTP first and freezes after the grace period (a
    /// job that records its suspensions, as the emulation's sleep job);
    /// otherwise the freezer alone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub suspend_tstp: bool,
    /// A step's task: its output and error go to its client's connections
    /// instead of files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io: Option<TaskIo>,
    /// The host cpus it is bound to (none: not bound).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub affinity: Vec<u32>,
}

/// Where a step's task sends its output: a connection for its standard
/// output and one for its error, each starting `KEY TASK 1` or `KEY TASK 2`
/// and a newline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskIo {
    pub addr: String,
    pub key: String,
    pub task: u32,
}

/// What a job holds on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeShare {
    pub node: String,
    pub cores: u32,
    /// MiB (0: the job asked for none; it is held to the node's memory).
    pub memory_mb: u64,
    pub gpus: u32,
}

// ---------------------------------------------------------------- steps

/// `POST /v1/jobs/{id}/steps`: start a step of a running job (`tessera
/// run`, Slurm's srun): `ntasks` tasks of `cpus_per_task` cores each, spread
/// over `nodes` of the job's nodes (default: as many as there are tasks, at
/// most all of them), each running `argv`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepRequest {
    pub ntasks: u32,
    #[serde(default)]
    pub nodes: Option<u32>,
    #[serde(default = "one")]
    pub cpus_per_task: u32,
    #[serde(default)]
    pub ntasks_per_node: Option<u32>,
    /// The step's name (sacct's JobName; default the command's).
    #[serde(default)]
    pub name: String,
    pub argv: Vec<String>,
    /// The tasks' environment (the client's, as srun's `--export=ALL`).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub workdir: String,
    pub io: StepIo,
}

fn one() -> u32 {
    1
}

/// Where a step's tasks connect: the client's addresses (each agent uses
/// the first it reaches), its output port and the key each connection
/// starts with, and the port of its PMI-1 server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepIo {
    pub addrs: Vec<String>,
    pub port: u16,
    pub key: String,
    #[serde(default)]
    pub pmi_port: Option<u16>,
}

/// A step as `tessera run` follows it (`GET /v1/jobs/{id}/steps/{step}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepInfo {
    pub job: u64,
    pub step: u32,
    pub name: String,
    /// Running while a node's tasks have not all ended; then how it ended.
    pub state: JobStateCode,
    pub nodelist: String,
    pub ntasks: u32,
    /// Tasks on each of its nodes, in node order (task ids in blocks).
    pub tasks_per_node: Vec<u32>,
    /// The worst of its tasks' exits: the highest code, or a signal.
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// Why it ended so, when its state says more than the exits.
    #[serde(default)]
    pub reason: String,
}

/// `POST /v1/jobs/{id}/end`: the client of an allocation without a batch
/// script (`tessera run` outside a job, `tessera salloc`) ends it, with the
/// exit code of what it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndRequest {
    pub code: i32,
}

/// `POST /v1/jobs/{id}/steps/{step}/signal`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignalRequest {
    pub signal: i32,
}

/// One node's part of a step, for its agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepLaunch {
    pub job: u64,
    pub attempt: u32,
    pub step: u32,
    /// The step's name (its command's).
    pub name: String,
    pub user: String,
    pub uid: u32,
    pub gid: u32,
    /// This node and what the job holds on it; its index among the step's
    /// nodes.
    pub share: NodeShare,
    pub nodeid: u32,
    /// The task ids (ranks) this node runs.
    pub tasks: Vec<u32>,
    pub ntasks: u32,
    pub cpus_per_task: u32,
    pub argv: Vec<String>,
    /// The step's environment (SLURM_STEP_ID, SLURM_NTASKS, ... set); the
    /// agent adds each task's own (SLURM_PROCID, SLURM_LOCALID, PMI_RANK, ...).
    pub env: BTreeMap<String, String>,
    pub workdir: String,
    pub io: StepIo,
    pub kill_grace_s: u64,
}

/// How a step ended on one node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepExit {
    pub job: u64,
    pub attempt: u32,
    pub step: u32,
    pub node: String,
    /// Each task's (id, exit code, signal).
    pub tasks: Vec<(u32, Option<i32>, Option<i32>)>,
    pub start: i64,
    pub end: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<CgroupUsage>,
    /// Why its tasks never ran, if they did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<LaunchFailure>,
}

/// What the controller asks of an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum AgentCommand {
    Launch(Box<Launch>),
    /// Start one node's part of a job's step (its tasks).
    Step(Box<StepLaunch>),
    /// Send a signal to every process of a step on the agent's nodes.
    SignalStep { job: u64, attempt: u32, step: u32, signal: i32 },
    /// SIGTERM to the job's process group, SIGKILL after the grace period.
    Kill { job: u64, attempt: u32, grace_s: u64 },
    /// SIGTSTP, then SIGSTOP after `grace_ms`. `at`: the controller's instant
    /// of the suspension (whole Unix seconds, as the engine's clock), which the
    /// agent records for the job (`$TESSERA_SUSPENSIONS`) before it signals.
    Suspend {
        job: u64,
        attempt: u32,
        grace_ms: u64,
        #[serde(default)]
        at: Option<i64>,
    },
    /// SIGCONT, `at` recorded first as for `Suspend`.
    Resume {
        job: u64,
        attempt: u32,
        #[serde(default)]
        at: Option<i64>,
    },
    /// Set one of the agent's nodes' CPU cap (W), and say whether a job
    /// holds it (an emulated node draws power by it). A cap the node cannot
    /// take is reported back (the controller drains the node).
    Power { node: String, cap_w: f64, busy: bool },
    /// A running job's new configuration (the power-aware scheduler resized
    /// or re-capped it): its nodes (a hostlist, first node first), their
    /// count and its CPU cap, from the controller's instant `at`, and when the
    /// scheduler's model now expects it to end (`end`, Unix seconds). The
    /// agent appends it to the job's configuration file (`$TESSERA_CONFIG`)
    /// and sends the job SIGWINCH.
    Reconfigure {
        job: u64,
        attempt: u32,
        nodelist: String,
        nodes: u32,
        cap_w: f64,
        at: i64,
        #[serde(default)]
        end: i64,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PollReply {
    pub commands: Vec<AgentCommand>,
}
