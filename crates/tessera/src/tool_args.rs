//! Arguments of the emulation tools (`tessera_emulation`): `sleep-job`,
//! `replay`, `metrics`, `twin`, `chaos`, `soak` and `loadtest`.

use crate::live_args::{ClientArgs, ListFormat};
use crate::values::{at_least_one, duration_s, seconds_range};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct SleepJobArgs {
    /// The job's id in the workload (written to the log).
    #[arg(long)]
    pub id: u64,
    /// Seconds to sleep, suspended time excluded (fractions allowed).
    #[arg(long)]
    pub runtime: f64,
    /// Log to append the job's line to (created if missing).
    #[arg(long)]
    pub log: PathBuf,
    /// Submission instant (Unix seconds) to record; default
    /// $TESSERA_SUBMIT_TIME, which the controller sets, else the start.
    #[arg(long)]
    pub submit: Option<f64>,
    /// Cores to record; default $TESSERA_NTASKS (or $SLURM_NTASKS), else 1.
    #[arg(long)]
    pub cores: Option<u32>,
    /// What the runtime counts from: `scheduler`, the start the controller
    /// recorded ($TESSERA_START_TIME; this process's own start when unset),
    /// so the scheduler sees the job run exactly its runtime, as in the trace;
    /// or `process`, this process's start, as the thesis's sigsleep (each
    /// launch's latency then lengthens the job as the scheduler sees it).
    #[arg(long, value_enum, default_value = "scheduler")]
    pub count_from: CountFrom,
    /// Under the power-aware policy: end when the scheduler's model says for the
    /// current configuration, acknowledging and logging each (docs/live.md).
    #[arg(long)]
    pub work: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CountFrom {
    Scheduler,
    Process,
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// SWF trace (plain or gzip). A bare file name not in the current directory is looked up in $TESSERA_TRACES.
    #[arg(long)]
    pub trace: PathBuf,
    /// Replay only the first N records of the trace (N >= 1; without it, all).
    #[arg(long, value_parser = at_least_one)]
    pub max_jobs: Option<usize>,
    /// Shrink factor in percent applied to submission offsets, runtimes and
    /// estimates: P, or START:END:STEP for a sweep (100:50:10 runs 100, 90, ...,
    /// 50; one output each).
    #[arg(long, default_value = "100")]
    pub shrink: String,
    /// Further percentage for runtimes only (multiplies --shrink).
    #[arg(long, default_value_t = 100.0)]
    pub runtime_shrink: f64,
    /// Further percentage for estimates (time limits) only.
    #[arg(long, default_value_t = 100.0)]
    pub estimate_shrink: f64,
    /// Further percentage for submission offsets only.
    #[arg(long, default_value_t = 100.0)]
    pub submit_shrink: f64,
    /// Submit the first N jobs at once, at the start (warm-up).
    #[arg(long, default_value_t = 0)]
    pub warmup: usize,
    /// After the warm-up, submit in groups of G jobs every --period seconds
    /// instead of at the trace's submission times.
    #[arg(long, requires = "period")]
    pub group: Option<usize>,
    /// Seconds between groups (with --group).
    #[arg(long, requires = "group")]
    pub period: Option<f64>,
    /// Seconds from the start to the first group (with --group).
    #[arg(long, default_value_t = 0.0, requires = "group")]
    pub warmup_period: f64,
    /// Seconds added to each period (with --group): group g is due at
    /// warmup-period + (period + drift) × g, in wall time from the start.
    #[arg(long, default_value_t = 0.0, requires = "group")]
    pub drift: f64,
    /// Output directory: the sleep jobs' log, per-job records, the workload as
    /// submitted, metrics (a sweep: one subdirectory per percentage).
    #[arg(long, default_value = "replay")]
    pub out: PathBuf,
    /// Skip malformed trace lines (counted on stderr) instead of stopping.
    #[arg(long)]
    pub lenient: bool,
    /// Give up waiting for the jobs to end after this many seconds (0: wait).
    #[arg(long, default_value_t = 0)]
    pub timeout: u64,
    /// Reservations file ([[reservation]] tables, as `sim run --reservations`),
    /// instants in seconds from the replay's start: made just before it,
    /// deleted when it ends (operators only).
    #[arg(long)]
    pub reservations: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ListFormat,
    #[command(flatten)]
    pub client: ClientArgs,
}

#[derive(Args, Debug)]
pub struct MetricsArgs {
    /// A sleep jobs' log (JSON lines, as `tessera sleep-job` writes).
    #[arg(long, conflicts_with_all = ["db", "state_dir"])]
    pub log: Option<PathBuf>,
    /// An accounting store (a simulation's --db, or a controller's accounting.db).
    #[arg(long, conflicts_with = "state_dir")]
    pub db: Option<PathBuf>,
    /// A controller's state directory: its live accounting store.
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// Run of the store (default: the latest).
    #[arg(long)]
    pub run: Option<i64>,
    /// Processors of the machine, for utilization (a store knows its nodes; a
    /// log does not).
    #[arg(long)]
    pub capacity: Option<u64>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ListFormat,
}

#[derive(Args, Debug)]
pub struct TwinArgs {
    /// SWF trace (plain or gzip). A bare file name not in the current directory is looked up in $TESSERA_TRACES.
    #[arg(long, required_unless_present = "testbed")]
    pub trace: Option<PathBuf>,
    /// Instead of a trace, the PARM paper's testbed job set: SetL or SetH, with :SEED (default 1).
    #[arg(long, conflicts_with = "trace")]
    pub testbed: Option<String>,
    #[command(flatten)]
    pub parm: tessera_controller::ParmFlags,
    /// The first N records of the trace (N >= 1).
    #[arg(long, default_value_t = 2000, value_parser = at_least_one)]
    pub max_jobs: usize,
    /// Shrink factor in percent (submission offsets, runtimes, estimates).
    #[arg(long)]
    pub shrink: String,
    /// Cluster file (default: the embedded default cluster).
    #[arg(long)]
    pub cluster: Option<PathBuf>,
    /// fcfs, easy, conservative or parm (a cluster with a power budget); default
    /// easy, and conservative with --slurm (Slurm's backfill reserves for every job it tests).
    #[arg(long)]
    pub policy: Option<String>,
    /// Agents presenting the cluster's nodes.
    #[arg(long, default_value_t = 2)]
    pub agents: usize,
    /// Milliseconds at the start of each second in which the controller gathers
    /// messages before its pass (tessera controller --coalesce-ms): wider than
    /// the controller's 20 so that a second's submissions, sent one after the
    /// other, are one pass as in the simulator even on a busy machine.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(0..=500), conflicts_with = "slurm")]
    pub coalesce_ms: u64,
    /// Predict a real Slurm instead of Tessera's live system: Debian's Slurm
    /// 22.05 started on this machine (scripts/slurm-emulate --accounting; root,
    /// slurm-wlm, slurmdbd, munge, mariadb-server), the jobs replayed there,
    /// imported back from sacct and its slurm.conf, and simulated.
    #[arg(long, conflicts_with_all = ["testbed", "cluster", "reservations"])]
    pub slurm: bool,
    /// With --slurm: emulated nodes (one slurmd each).
    #[arg(long, default_value_t = 8, requires = "slurm")]
    pub slurm_nodes: u32,
    /// With --slurm: CPUs of each emulated node.
    #[arg(long, default_value_t = 16, requires = "slurm")]
    pub slurm_cpus: u32,
    /// With --slurm: Slurm's SchedulerParameters, e.g. bf_interval=10 (default: Slurm's own).
    #[arg(long, requires = "slurm")]
    pub sched_params: Option<String>,
    /// With --slurm: the slurm-emulate script (default: scripts/slurm-emulate).
    #[arg(long, requires = "slurm")]
    pub emulator: Option<PathBuf>,
    /// Reservations file ([[reservation]] tables), instants in seconds from
    /// the replay's start: made live at the start, and in the simulation.
    #[arg(long)]
    pub reservations: Option<PathBuf>,
    /// Directory for the controller's state and the replay's files (default:
    /// a fresh directory under the system's temporary directory, kept).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ListFormat,
}

#[derive(Args, Debug)]
pub struct ChaosArgs {
    /// SWF trace (plain or gzip), replayed with sleep jobs. A bare file name not in the current directory is looked up in $TESSERA_TRACES.
    #[arg(long)]
    pub trace: PathBuf,
    /// The first N records of the trace (N >= 1; without it, all).
    #[arg(long, value_parser = at_least_one)]
    pub max_jobs: Option<usize>,
    /// Shrink factor in percent (submission offsets, runtimes, estimates).
    #[arg(long, default_value = "100")]
    pub shrink: String,
    /// Cluster file (default: the embedded default cluster).
    #[arg(long)]
    pub cluster: Option<PathBuf>,
    /// fcfs, easy or conservative.
    #[arg(long, default_value = "easy")]
    pub policy: String,
    /// Agents presenting the cluster's nodes.
    #[arg(long, default_value_t = 4)]
    pub agents: usize,
    /// Seconds between one restart and the next kill: MIN:MAX, drawn uniformly.
    #[arg(long, default_value = "5:30", value_parser = seconds_range)]
    pub every: (f64, f64),
    /// Seconds a killed daemon stays down: MIN:MAX, drawn uniformly (below the
    /// heartbeat timeout, so that no agent is declared lost).
    #[arg(long, default_value = "0:5", value_parser = seconds_range)]
    pub down: (f64, f64),
    /// Seconds without a poll after which the controller declares an agent lost.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub heartbeat_timeout: u64,
    /// Seed of the kill schedule.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Directory for the controller's state, the replay's files and the kill
    /// log (created; it must not hold an earlier replay).
    #[arg(long, default_value = "chaos")]
    pub out: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ListFormat,
}

#[derive(Args, Debug)]
pub struct SoakArgs {
    /// Jobs submitted per minute, evenly spaced.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub rate: u64,
    /// How long to submit: seconds, or a number with s, m or h.
    #[arg(long, default_value = "1h", value_parser = duration_s)]
    pub duration: i64,
    /// Memory must stay flat from this point on (the warm-up before it fills
    /// the controller's list of recently finished jobs, 300 s, and the
    /// allocators' pools).
    #[arg(long, default_value = "10m", value_parser = duration_s)]
    pub flat_from: i64,
    /// Seconds between memory samples.
    #[arg(long, default_value = "1m", value_parser = duration_s)]
    pub sample_every: i64,
    /// Growth allowed after --flat-from, as a fraction of the memory then, on
    /// top of 2 MiB (allocator noise).
    #[arg(long, default_value_t = 0.10)]
    pub tolerance: f64,
    /// Agents presenting the cluster's nodes.
    #[arg(long, default_value_t = 4)]
    pub agents: usize,
    /// Cluster file (default: the embedded default cluster, 32 nodes of 8 cores).
    #[arg(long)]
    pub cluster: Option<PathBuf>,
    /// fcfs, easy or conservative.
    #[arg(long, default_value = "easy")]
    pub policy: String,
    /// Directory for the state, logs and the samples (created).
    #[arg(long, default_value = "soak")]
    pub dir: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ListFormat,
}

#[derive(Args, Debug)]
pub struct LoadTestArgs {
    /// Jobs submitted and run (each a real /bin/true process).
    #[arg(long, default_value_t = 10_000)]
    pub jobs: usize,
    /// Concurrent clients, each on its own connection, one submission at a time.
    #[arg(long, default_value_t = 8)]
    pub clients: usize,
    /// Agents presenting the cluster's nodes (each forks its jobs' shepherds
    /// through its own launcher).
    #[arg(long, default_value_t = 4)]
    pub agents: usize,
    /// Cluster file (default: the embedded default cluster, 32 nodes of 8 cores).
    #[arg(long)]
    pub cluster: Option<PathBuf>,
    /// Scheduling policy: fcfs, easy or conservative.
    #[arg(long, default_value = "easy")]
    pub policy: String,
    /// Scheduling passes timed with the whole load queued.
    #[arg(long, default_value_t = 100)]
    pub passes: usize,
    /// Held jobs submitted to a controller with group commit and to one without
    /// (one transaction per submission), for the ratio (0: skip the comparison).
    #[arg(long, default_value_t = 2_000)]
    pub compare_jobs: usize,
    /// Give up (stopping everything) after this many seconds.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
    /// Directory for state, logs and job output (default: a fresh temporary
    /// directory, removed afterwards). A directory the test creates is marked
    /// an ext4 top directory (chattr +T), so that its files are not created
    /// among inodes freed minutes before (see BENCHMARKS.md).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ListFormat,
}
