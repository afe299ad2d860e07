//! Command-line interface (clap derive).

use crate::values::{acct_fields, acct_states, at_least_one, duration_s, parsed_as, policies, policy, price};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "tessera", version, about = "Batch scheduling for heterogeneous, power-constrained HPC clusters")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Trace-driven simulation.
    Sim {
        #[command(subcommand)]
        command: SimCommand,
    },
    /// Workloads: generate synthetic ones, inspect traces.
    Workload {
        #[command(subcommand)]
        command: WorkloadCommand,
    },
    /// The running controller's accounts: add|modify|delete|show (sacctmgr's).
    Account(tessera_emulation::admin::AccountArgs),
    /// Fair share of the running controller's associations (sshare).
    Share(tessera_emulation::admin::ShareArgs),
    /// Pending jobs' priority factors, weighted (sprio).
    Prio(tessera_emulation::admin::PrioArgs),
    /// Advance reservations on the running controller (scontrol's).
    Reservation {
        #[command(subcommand)]
        command: tessera_emulation::admin::ReservationCommand,
    },
    /// Import from a Slurm site: its slurm.conf as a cluster file.
    Import {
        #[command(subcommand)]
        command: tessera_slurm::cli::ImportCommand,
    },
    /// Cluster files.
    Cluster {
        #[command(subcommand)]
        command: ClusterCommand,
    },
    /// Reproducible experiments.
    Experiment {
        #[command(subcommand)]
        command: ExperimentCommand,
    },
    /// Accounting: list jobs (sacct-like), or export APEL records.
    #[command(args_conflicts_with_subcommands = true)]
    Acct {
        #[command(subcommand)]
        command: Option<AcctCommand>,
        #[command(flatten)]
        list: AcctArgs,
    },
    /// Reports from the accounting store (sreport-like).
    Report {
        #[command(subcommand)]
        command: ReportCommand,
    },
    /// Power-aware scheduling tools: time PARM's decisions.
    Power {
        #[command(subcommand)]
        command: PowerCommand,
    },
    /// Run the controller daemon (HTTP API, journal, accounting).
    Controller(crate::live_args::ControllerArgs),
    /// Run a node agent presenting one or more nodes.
    Agent(crate::live_args::AgentArgs),
    /// Start a controller and agents emulating a cluster on this machine.
    Up(crate::live_args::UpArgs),
    /// Load-test the live system on this machine: a controller and agents on
    /// loopback, concurrent clients submitting real short jobs; submissions/s,
    /// starts/s, pass time and memory with the load queued, nothing lost.
    Loadtest(crate::tool_args::LoadTestArgs),
    /// A job that sleeps for its runtime, suspension-aware (SIGTSTP stops it
    /// and is recorded, SIGCONT resumes it for the time that remained), and
    /// appends one JSON line to a log when it ends (for emulation and replay).
    SleepJob(crate::tool_args::SleepJobArgs),
    /// Replay a trace against a running controller with sleep jobs (shrink
    /// sweeps, warm-up and groups), then report its metrics.
    Replay(crate::tool_args::ReplayArgs),
    /// The classical scheduling metrics of a live run: from the sleep jobs'
    /// log or an accounting store (the simulator's own definitions).
    Metrics(crate::tool_args::MetricsArgs),
    /// Does the simulator predict the live system? Replay a shrunk trace on a
    /// local emulated cluster, simulate the same workload, compare job by job.
    Twin(crate::tool_args::TwinArgs),
    /// The live system under kill -9: replay a trace on a local emulated
    /// cluster while killing the controller and agents at random moments;
    /// check that every job ran once and is accounted once.
    Chaos(crate::tool_args::ChaosArgs),
    /// The live system at a steady rate for a long time: short real jobs
    /// submitted at --rate per minute; the controller's and agents' memory
    /// must stay flat after the warm-up, and every job be accounted once.
    Soak(crate::tool_args::SoakArgs),
    /// Stop what `tessera up --detach` started.
    Down(crate::live_args::DownArgs),
    /// Jobs on a running controller: submit (sbatch), cancel, hold, release,
    /// suspend, resume, requeue, show.
    Job {
        #[command(subcommand)]
        command: crate::live_args::JobCommand,
    },
    /// A job step (srun): tasks across the job's nodes, their output here.
    Run(crate::live_args::RunCmd),
    /// An interactive allocation (salloc): a command run here in it.
    Salloc(crate::live_args::SallocCmd),
    /// The queue of a running controller (squeue).
    Queue(crate::live_args::QueueArgs),
    /// The nodes of a running controller (sinfo).
    Nodes(crate::live_args::NodesArgs),
    /// Tokens for remote users, operators and agents, signed with the cluster key.
    Token {
        #[command(subcommand)]
        command: crate::live_args::TokenCommand,
    },
    /// Node states on a running controller (drain, resume, down, up), and
    /// node-side controls run on the node itself (CPU power caps).
    Node {
        #[command(subcommand)]
        command: NodeCommand,
    },
    /// Publish a cluster's installed capacity (PhysicalCPUs, LogicalCPUs, Cores,
    /// Benchmark, SI00, CPUScalingReferenceSI00, scaling factors).
    Publish(PublishArgs),
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum PublishFormat {
    Text,
    Json,
    /// GLUE 2.0 LDIF: ComputingManager, ExecutionEnvironments, Benchmarks.
    Glue2,
    /// GLUE 1.3 SubCluster and CE attributes (LDIF).
    Glue13,
    /// YAIM site-info.def variables.
    Yaim,
}

#[derive(Args)]
pub struct PublishArgs {
    /// Cluster file (default: the embedded default cluster).
    #[arg(long)]
    pub cluster: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: PublishFormat,
}

#[derive(Subcommand)]
pub enum SimCommand {
    /// Replay a trace (or, with no --trace, the embedded default workload) under a policy.
    Run(SimRunArgs),
    /// Run several policies (or cluster files) on the same trace in parallel and
    /// write one report that overlays them, with the difference in each metric.
    Compare(CompareArgs),
    /// A parameter sweep from a TOML file (traces × clusters × policies ×
    /// parameters) -> one CSV; `--shard I/N` runs a slice; `merge` joins slices.
    Sweep(SweepArgs),
    /// Time parsing and every policy on traces; compare with the naive reference.
    Bench(SimBenchArgs),
    /// Time one scheduling pass as a live controller runs it: a large cluster,
    /// half busy, a deep queue of trace jobs.
    BenchPass(PassBenchArgs),
    /// Stream millions of resampled trace jobs through the engine; report jobs/s
    /// and memory.
    BenchStream(StreamBenchArgs),
}

#[derive(Args)]
pub struct CompareArgs {
    /// SWF trace (default: the embedded default workload and cluster).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Policies to compare, comma-separated.
    #[arg(long, default_value = "easy,conservative", value_parser = policies)]
    pub policy: String,
    /// Cluster files to compare (repeatable); each runs every policy.
    #[arg(long)]
    pub cluster: Vec<PathBuf>,
    /// Queue orders to compare, comma-separated (fifo, multifactor): each
    /// policy runs under each (submission order against fair share).
    #[arg(long)]
    pub priority: Option<String>,
    /// Further `sim run` flags for every variant (e.g. `--max-jobs 5000`), after `--`.
    #[arg(last = true)]
    pub flags: Vec<String>,
    /// Where to write the report.
    #[arg(long, default_value = "compare.html")]
    pub report: PathBuf,
    /// Worker threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SweepArgs {
    #[command(subcommand)]
    pub merge: Option<SweepCommand>,
    /// The sweep file (TOML; see docs/sweeps.md).
    pub file: Option<PathBuf>,
    /// Run only slice I of N (cases whose index modulo N is I; 0 <= I < N), e.g.
    /// `--shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT`.
    #[arg(long)]
    pub shard: Option<String>,
    /// The results, one CSV row per case.
    #[arg(long, short, default_value = "sweep.csv")]
    pub out: PathBuf,
    /// Also write an HTML report of the results.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Worker threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// List the cases and exit.
    #[arg(long)]
    pub list: bool,
}

#[derive(Subcommand)]
pub enum SweepCommand {
    /// Join the slices of a sharded sweep into one CSV (in case order).
    Merge {
        /// The slices' CSV files.
        #[arg(required = true)]
        parts: Vec<PathBuf>,
        /// Where to write the merged results (CSV).
        #[arg(long, short, default_value = "sweep.csv")]
        out: PathBuf,
        /// The sweep file: check that every case is there exactly once.
        #[arg(long)]
        sweep: Option<PathBuf>,
        /// Also write an HTML report of the merged results.
        #[arg(long)]
        report: Option<PathBuf>,
    },
}

#[derive(Args)]
pub struct PassBenchArgs {
    /// SWF trace the jobs come from [default: RICC-2010-2 from the shared traces directory].
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Trace records to skip before the first job.
    #[arg(long, default_value_t = 100_000)]
    pub skip: usize,
    /// Nodes of the cluster (one shared partition: jobs get cores).
    #[arg(long, default_value_t = 3600)]
    pub nodes: u32,
    /// Cores per node.
    #[arg(long, default_value_t = 16)]
    pub cores: u32,
    /// Share of the cores busy with running jobs when the queue is submitted.
    #[arg(long, default_value_t = 0.5)]
    pub busy: f64,
    /// Jobs kept in the queue.
    #[arg(long, default_value_t = 10_000)]
    pub queued: usize,
    /// The first queued job asks for this share of the cores instead of its own
    /// (a machine draining for a wide job) [default: every job as in the trace].
    #[arg(long)]
    pub wide_head: Option<f64>,
    /// Nodes drained (out of service) before the setup, spread over the cluster.
    #[arg(long, default_value_t = 0)]
    pub drained: u32,
    /// Track memory: each node has this many MiB per core, and each job asks
    /// for the trace's requested memory per processor (at most a node's), or
    /// this much where the trace does not say [default: memory not tracked].
    #[arg(long, default_value_t = 0)]
    pub mem_per_core: u64,
    /// Timed passes per policy after the first.
    #[arg(long, default_value_t = 200)]
    pub passes: usize,
    /// Policies to time [default: fcfs, easy, conservative].
    #[arg(long = "policy")]
    pub policies: Vec<String>,
    /// Seed of the setup (how far each running job has got).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Also time each policy's reference: the engine without its shortcuts
    /// (every queued job tried, every node worked out in full at every
    /// candidate instant), which the property tests compare the engine with.
    #[arg(long)]
    pub reference: bool,
    /// Order the queue by multifactor priority with Fair Tree fair share
    /// (each trace group an account, each user an association) instead of by
    /// submission.
    #[arg(long)]
    pub fairshare: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

#[derive(Args)]
pub struct StreamBenchArgs {
    /// SWF trace whose jobs are resampled [default: RICC-2010-2 from the shared traces directory].
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Jobs to run through the engine.
    #[arg(long, default_value_t = 10_000_000)]
    pub jobs: u64,
    /// Processors of the pool (jobs larger than it are cut to it).
    #[arg(long, default_value_t = 1024)]
    pub capacity: u32,
    /// Jobs kept waiting: new ones arrive whenever the queue is shorter.
    #[arg(long, default_value_t = 100)]
    pub queued: usize,
    /// Scheduling policy: fcfs, easy or conservative.
    #[arg(long, default_value = "easy")]
    pub policy: String,
    /// Seed of the resampling.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
}

#[derive(Args)]
pub struct SimRunArgs {
    /// SWF trace (.swf or .swf.gz). Without it: the embedded default workload
    /// (Lublin-Feitelson model, seed 1) on the embedded default cluster.
    /// A bare file name not in the current directory is looked up in $TESSERA_TRACES.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Machine size in processors (default: MaxProcs, else MaxNodes, from the trace header).
    #[arg(long, conflicts_with = "cluster")]
    pub capacity: Option<u64>,
    /// Cluster file (TOML): jobs are placed on its nodes (node types, scaling
    /// factors, memory, node sets; see docs/cluster-file.md).
    #[arg(long)]
    pub cluster: Option<PathBuf>,
    /// Partition of the cluster file the jobs go to (default: its default partition).
    #[arg(long, requires = "cluster")]
    pub partition: Option<String>,
    /// Node set for every job: `ONEOF:FEATURE:switchA,switchB`, `nodeset=…` or a
    /// Slurm constraint `[rack1|rack2]`. Other options come from the cluster's
    /// [nodeset] table unless given below.
    #[arg(long, requires = "cluster")]
    pub nodeset: Option<String>,
    /// ISOPTIONAL: run outside a set rather than wait for one.
    #[arg(long, requires = "nodeset")]
    pub nodeset_optional: bool,
    /// TOLERANCE for PROCSPEED sets: (max - min) / min speed allowed in a set.
    #[arg(long, requires = "nodeset")]
    pub nodeset_tolerance: Option<f64>,
    /// PRIORITYTYPE: firstfit, bestfit, worstfit, bestresource, minloss, affinity.
    #[arg(long, requires = "nodeset")]
    pub nodeset_priority: Option<String>,
    /// NODESETPLUS: none, spanevenly, delay.
    #[arg(long, requires = "nodeset")]
    pub nodeset_plus: Option<String>,
    /// Scheduling policy: fcfs, easy, conservative, or parm (power-aware; needs a
    /// cluster file with power_budget_w).
    #[arg(long, default_value = "easy", value_parser = policy)]
    pub policy: String,
    /// Queue order: fifo (submission order; the default) or multifactor
    /// (Slurm's priority/multifactor with Fair Tree fair share; docs/scheduling.md).
    #[arg(long)]
    pub priority: Option<String>,
    /// Accounts, QOS and priority settings (an accounts file); without it, a
    /// cluster file's own, else each trace group an account with equal shares.
    #[arg(long)]
    pub accounts: Option<PathBuf>,
    /// Advance reservations ([[reservation]] tables; start in seconds from the
    /// trace's start), made before the first job (docs/scheduling.md).
    #[arg(long)]
    pub reservations: Option<PathBuf>,
    /// Fair share from a site's history: each association's usage as a run of
    /// this accounting store left it (a Slurm history from `tessera import
    /// sacct`), decayed to the trace's first instant (docs/slurm.md).
    #[arg(long, value_name = "STORE")]
    pub usage_from: Option<PathBuf>,
    /// With --usage-from: the run (default: the newest).
    #[arg(long, requires = "usage_from")]
    pub usage_run: Option<i64>,
    #[command(flatten)]
    pub power: PowerArgs,
    /// Write one CSV row per job (job_id,submit,start,end,procs,estimate,wait,killed).
    #[arg(long)]
    pub jobs_out: Option<PathBuf>,
    /// Write the simulated schedule as SWF (wait and run time filled).
    #[arg(long)]
    pub swf_out: Option<PathBuf>,
    /// Write the summary as JSON.
    #[arg(long)]
    pub summary: Option<PathBuf>,
    /// Write a self-contained HTML report with charts (utilization, queue,
    /// waits, slowdowns, power, true overhead, usage and bills).
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// How to print the summary on stdout.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Skip malformed trace lines (and report them) instead of failing.
    #[arg(long)]
    pub lenient: bool,
    /// Replay only the first N jobs of the trace (N >= 1; without it, all).
    #[arg(long, value_parser = at_least_one)]
    pub max_jobs: Option<usize>,
    /// Multiply inter-arrival times by this factor (< 1 raises the load).
    #[arg(long)]
    pub arrival_scale: Option<f64>,
    /// Record the run (jobs, per-node allocations, usage) in this accounting store.
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Site name for accounting records (default: the cluster's name).
    #[arg(long, requires = "db")]
    pub site: Option<String>,
}

/// Power-aware runs: on a cluster file with `power_budget_w` (docs/power.md).
#[derive(Args, Clone, Debug, Default)]
pub struct PowerArgs {
    /// PARM variant: noMM (sizes fixed at the minimum), noSE (moldable) or wSE
    /// (malleable) [default: wSE].
    #[arg(long, help_heading = "Power")]
    pub parm_variant: Option<String>,
    /// PARM's solver: structured (Tessera's knapsack method) or milp (microlp
    /// branch and bound) [default: structured].
    #[arg(long, help_heading = "Power")]
    pub solver: Option<String>,
    /// Branch-and-bound node limit of the MILP solver; at the limit the best
    /// feasible answer is used [default: 20000].
    #[arg(long, help_heading = "Power")]
    pub milp_node_limit: Option<u64>,
    /// Wall-clock limit of each MILP decision in seconds; at the limit the best
    /// feasible answer is used (decisions then depend on the machine's speed)
    /// [default: none].
    #[arg(long, help_heading = "Power")]
    pub milp_time_limit: Option<f64>,
    /// Fairness exponent α of PARM's job weights (t_rem + waited)^α [default: 1].
    #[arg(long, help_heading = "Power")]
    pub alpha: Option<f64>,
    /// Seconds a malleable job waits between two resizes (f_se) [default: 500].
    #[arg(long, help_heading = "Power")]
    pub fse: Option<i64>,
    /// wSE: discount the value of resizing a running job by the resize's cost
    /// spread over the job's remaining run (Tessera's extension; the paper's
    /// objective ignores the cost, which is the default).
    #[arg(long, help_heading = "Power")]
    pub amortize_resizes: bool,
    /// PARM's decision rule: paper (one program over Σ w·s, speedups and weights
    /// at each job's slowest configuration, Eqs. 1–8) or starts-first (Tessera's:
    /// weights at full power; the pending jobs that start are chosen before
    /// running jobs get spare power) [default: starts-first; the experiments that
    /// reproduce the paper default to paper].
    #[arg(long, help_heading = "Power")]
    pub parm_rule: Option<String>,
    /// Add each PARM decision's measured solve time to the jobs it starts or
    /// changes, as the paper's completion times do (the run then depends on the
    /// machine's speed).
    #[arg(long, help_heading = "Power")]
    pub charge_solve_time: bool,
    /// Queue policies on a power-budgeted cluster: every CPU capped at this many
    /// watts, on as many nodes as the budget then powers (naive overprovisioning)
    /// [default: the CPU's maximum, the power-unaware baseline].
    #[arg(long, help_heading = "Power")]
    pub cap: Option<f64>,
    /// Seed of the rule that gives trace jobs a power profile [default: 1].
    #[arg(long, help_heading = "Power")]
    pub power_seed: Option<u64>,
    /// Power budget in watts, instead of the cluster file's power_budget_w.
    #[arg(long, help_heading = "Power")]
    pub budget_w: Option<f64>,
    /// Range of θ, the minimum size as a fraction of the trace size [default: 0.2,0.6].
    #[arg(long, help_heading = "Power")]
    pub theta: Option<String>,
    /// Range of Downey's average parallelism A as a multiple of the trace size
    /// [default: 0.5,2].
    #[arg(long, help_heading = "Power")]
    pub parallelism: Option<String>,
    /// Range of Downey's variance σ [default: 0,1].
    #[arg(long, help_heading = "Power")]
    pub sigma: Option<String>,
    /// Base package power c (W) of the CPU power model p = a f³ + b f + c; the
    /// paper says 13–14 W [default: 13.5].
    #[arg(long, help_heading = "Power")]
    pub package_base_w: Option<f64>,
    /// Write the power drawn over time as CSV (time,power_w,budget_w,busy_nodes).
    #[arg(long, help_heading = "Power")]
    pub power_out: Option<PathBuf>,
}

#[derive(Subcommand)]
pub enum NodeCommand {
    /// CPU power caps through the Linux powercap sysfs interface (RAPL).
    Powercap(PowercapArgs),
    /// Let running jobs finish and start no new ones (operators).
    Drain(crate::live_args::NodeStateArgs),
    /// Return drained or downed nodes to service (operators).
    Resume(crate::live_args::NodeStateArgs),
    /// Mark nodes down: their jobs are killed, requeued if they asked (operators).
    Down(crate::live_args::NodeStateArgs),
    /// Mark nodes up again (operators).
    Up(crate::live_args::NodeStateArgs),
}

#[derive(Args)]
pub struct PowercapArgs {
    #[command(subcommand)]
    pub command: PowercapCommand,
}

#[derive(Subcommand)]
pub enum PowercapCommand {
    /// Show the power zones and their constraints (limits, maxima, time windows).
    Show {
        /// The powercap class directory.
        #[arg(long, default_value = tessera_agent::powercap::DEFAULT_ROOT)]
        root: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
    },
    /// Set a power limit: on one zone (--zone, --watts), on every CPU package (--watts),
    /// or a whole node's cap split evenly over its packages (--node-watts).
    Set {
        /// The powercap class directory.
        #[arg(long, default_value = tessera_agent::powercap::DEFAULT_ROOT)]
        root: PathBuf,
        /// Zone id (intel-rapl:0) or name (package-0, dram) [default: every CPU package].
        #[arg(long, conflicts_with = "node_watts")]
        zone: Option<String>,
        /// Constraint, by name: long_term, short_term or peak_power.
        #[arg(long, default_value = "long_term")]
        constraint: String,
        /// Limit in watts for each selected zone.
        #[arg(long, required_unless_present = "node_watts", conflicts_with = "node_watts")]
        watts: Option<f64>,
        /// Limit in watts for the whole node, split evenly over its CPU packages.
        #[arg(long)]
        node_watts: Option<f64>,
        /// Validate and print the changes without writing anything.
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Subcommand)]
pub enum PowerCommand {
    /// Time PARM's decision (one knapsack) with the structured solver, the MILP
    /// (microlp) and HiGHS, on decisions built from a trace; --mps-dir writes them as MPS.
    /// Needs a build with HiGHS (`cargo build --release --features highs`).
    Bench(PowerBenchArgs),
}

#[derive(Args)]
pub struct PowerBenchArgs {
    /// SWF trace the jobs come from (default: ALCF-Theta-2022 from the shared traces directory).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Power-budgeted cluster file (default: examples/clusters/theta-overprovisioned.toml).
    #[arg(long)]
    pub cluster: Option<PathBuf>,
    /// Jobs in the system at the decision (repeatable).
    #[arg(long = "jobs", default_values_t = vec![50, 200, 1000])]
    pub jobs: Vec<usize>,
    /// Decisions per size, from jobs spread over the trace.
    #[arg(long, default_value_t = 3)]
    pub instances: usize,
    /// Timed runs of the structured solver per decision (min and median reported).
    #[arg(long, default_value_t = 5)]
    pub repeat: usize,
    /// PARM variant (wSE: running jobs may resize, so every job has all its options).
    #[arg(long, default_value = "wSE")]
    pub variant: String,
    /// MILP branch-and-bound node limit.
    #[arg(long, default_value_t = 1_000_000)]
    pub milp_node_limit: u64,
    /// MILP wall-clock limit per decision (seconds).
    #[arg(long, default_value_t = 60.0)]
    pub milp_time_limit: f64,
    /// HiGHS wall-clock limit per decision (seconds).
    #[arg(long, default_value_t = 60.0)]
    pub highs_time_limit: f64,
    /// Write every decision as free MPS to DIR/jobs-K-instance-I.mps (DIR is created).
    #[arg(long, value_name = "DIR")]
    pub mps_dir: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

#[derive(Args)]
pub struct SimBenchArgs {
    /// Traces to time (default: HPC2N, CEA-Curie and RICC from the shared traces directory).
    #[arg(long = "trace")]
    pub traces: Vec<PathBuf>,
    /// Policies to time (default: all).
    #[arg(long = "policy")]
    pub policies: Vec<String>,
    /// Timed repetitions per measurement (the minimum and median are reported).
    #[arg(long, default_value_t = 5)]
    pub repeat: usize,
    /// Also time the naive reference simulator (rescans the queue at every pass)
    /// with FCFS and EASY on traces with at most this many jobs.
    #[arg(long, default_value_t = 1_000_000)]
    pub naive_max_jobs: usize,
    /// ... and with conservative backfilling (quadratic in the queue length per
    /// pass) on traces with at most this many jobs.
    #[arg(long, default_value_t = 60_000)]
    pub naive_conservative_max_jobs: usize,
    /// Use only the first N jobs of each trace (N >= 1; without it, all).
    #[arg(long, value_parser = at_least_one)]
    pub max_jobs: Option<usize>,
    /// Also time every trace and policy on the nodes of this cluster file (the
    /// node-level engine: jobs get cores on nodes), as a ratio to the pool run.
    #[arg(long)]
    pub cluster: Option<PathBuf>,
    /// Also time every trace and policy ordered by multifactor priority with
    /// Fair Tree fair share (each trace group an account), as a ratio to
    /// submission order.
    #[arg(long)]
    pub fairshare: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

#[derive(Subcommand)]
pub enum WorkloadCommand {
    /// Generate a synthetic workload as SWF.
    Generate(GenerateArgs),
    /// Read a trace and print its header and job counts.
    Info(InfoArgs),
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Model {
    /// Lublin & Feitelson (2003), rigid parallel jobs.
    Lublin,
}

#[derive(Args)]
pub struct GenerateArgs {
    /// Workload model.
    #[arg(long, value_enum, default_value = "lublin")]
    pub model: Model,
    /// Machine size in processors.
    #[arg(long, default_value_t = 256)]
    pub procs: u32,
    /// Number of jobs.
    #[arg(long, default_value_t = 10_000)]
    pub jobs: usize,
    /// Seed of the model's random stream: the same seed gives the same workload.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Multiply every inter-arrival time (below 1 raises the load).
    #[arg(long, default_value_t = 1.0)]
    pub arrival_factor: f64,
    /// Output file (default: stdout).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

#[derive(Args)]
pub struct InfoArgs {
    /// SWF trace to read (.swf or .swf.gz). A bare file name not in the current directory is looked up in $TESSERA_TRACES.
    #[arg(long)]
    pub trace: PathBuf,
    /// Skip malformed lines (counted and reported by reason) instead of failing.
    #[arg(long)]
    pub lenient: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

#[derive(Subcommand)]
pub enum ClusterCommand {
    /// Validate a cluster file and print its node types and partitions.
    Show(ShowArgs),
    /// Apply a changed cluster file to the running controller (operators), as
    /// scontrol reconfigure: nodes added, removed or changed, running jobs kept.
    Reconfigure(crate::live_args::ReconfigureArgs),
    /// Change the running controller's power budget, in watts (operators;
    /// policy parm): a lower budget brings caps down before anything new starts.
    SetBudget(crate::live_args::SetBudgetArgs),
}

#[derive(Args)]
pub struct ShowArgs {
    /// Cluster file (default: the embedded default cluster).
    #[arg(long)]
    pub cluster: Option<PathBuf>,
}

#[derive(Subcommand)]
pub enum ExperimentCommand {
    /// Node sets on a heterogeneous cluster: no node sets, ONEOF:PROCSPEED,
    /// tolerance 0.5, and tolerance 0.5 with MINLOSS, at one or more loads.
    Nodesets(NodesetsArgs),
    /// The PARM paper's large-scale experiment: sets of consecutive jobs at
    /// several arrival rates, the power-unaware baseline vs PARM noSE and wSE, the
    /// α trade-off, and naive overprovisioning (docs/power.md).
    Parm(ParmExperimentArgs),
    /// What PARM's speedup is made of: EASY with exact runtimes and with the
    /// optimizer's sizes, the optimizer without power, naive overprovisioning and
    /// PARM, over several power-profile seeds, and a sweep over A and σ.
    ParmAttribution(ParmAttributionArgs),
    /// The PARM paper's 38-node testbed experiment (SetL, SetH) in simulation.
    ParmTestbed(ParmTestbedArgs),
}

#[derive(Args)]
pub struct ParmExperimentArgs {
    /// SWF trace (default: ALCF-Theta-2022 from the shared traces directory).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Power-budgeted cluster file (default: examples/clusters/theta-overprovisioned.toml).
    #[arg(long)]
    pub cluster: Option<PathBuf>,
    /// Jobs per set.
    #[arg(long, default_value_t = 1000)]
    pub jobs: usize,
    /// First job (1-based position in the trace) of each set, repeatable [default:
    /// the paper's starts 1, 10500 and 27000 of Intrepid's 68,936 jobs, scaled to
    /// the trace's length].
    #[arg(long = "set-start")]
    pub set_starts: Vec<usize>,
    /// Arrival-time scale factors γ (repeatable).
    #[arg(long = "gamma", default_values_t = vec![0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2])]
    pub gammas: Vec<f64>,
    /// PARM variants compared with the baseline (repeatable).
    #[arg(long = "variant", default_values_t = vec!["noSE".to_string(), "wSE".to_string()])]
    pub variants: Vec<String>,
    /// α of the speedup table (the paper does not say which it used).
    #[arg(long, default_value_t = 1.0)]
    pub table_alpha: f64,
    /// α values of the fairness trade-off curve (each variant, first set, --curve-gamma).
    #[arg(long = "alpha", default_values_t = vec![0.0, 0.28, 0.98, 1.28, 1.48, 2.0, 3.0])]
    pub alphas: Vec<f64>,
    /// CPU caps of the naive-overprovisioning comparison (first set, --curve-gamma).
    #[arg(long = "naive-cap", default_values_t = vec![30.0, 33.0, 36.0, 44.0, 50.0, 60.0])]
    pub naive_caps: Vec<f64>,
    /// γ of the α curve and the naive comparison.
    #[arg(long, default_value_t = 0.5)]
    pub curve_gamma: f64,
    /// Solver: structured or milp.
    #[arg(long, default_value = "structured")]
    pub solver: String,
    /// Branch-and-bound node limit of the MILP solver.
    #[arg(long, default_value_t = 20_000)]
    pub milp_node_limit: u64,
    /// Wall-clock limit of each MILP decision (seconds).
    #[arg(long)]
    pub milp_time_limit: Option<f64>,
    /// Seed of the power-profile rule.
    #[arg(long, default_value_t = 1)]
    pub power_seed: u64,
    /// wSE discounts resizes by their cost (see `sim run --amortize-resizes`).
    #[arg(long)]
    pub amortize_resizes: bool,
    /// PARM's decision rule: paper or starts-first (see `sim run --parm-rule`).
    #[arg(long, default_value = "paper")]
    pub parm_rule: String,
    /// Do not add each decision's solve time to completion times (the paper
    /// does, and so does the experiment by default).
    #[arg(long)]
    pub no_solve_time: bool,
    /// Simulations run at once [default: the number of CPUs].
    #[arg(long)]
    pub threads: Option<usize>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

#[derive(Args)]
pub struct ParmAttributionArgs {
    /// SWF trace (default: ALCF-Theta-2022 from the shared traces directory).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Power-budgeted cluster file (default: examples/clusters/theta-overprovisioned.toml).
    #[arg(long)]
    pub cluster: Option<PathBuf>,
    /// Jobs per set.
    #[arg(long, default_value_t = 1000)]
    pub jobs: usize,
    /// First job (1-based) of each set, repeatable [default: as `experiment parm`].
    #[arg(long = "set-start")]
    pub set_starts: Vec<usize>,
    /// Arrival-time scale factors γ (repeatable).
    #[arg(long = "gamma", default_values_t = vec![0.8, 0.5, 0.2])]
    pub gammas: Vec<f64>,
    /// Power-profile seeds 1..=N: every figure is a mean over them with a 95% interval.
    #[arg(long, default_value_t = 5)]
    pub seeds: u64,
    /// α of every optimizer run (the paper's text implies 1: the weight
    /// multiplies a job's speedup by its completion time).
    #[arg(long, default_value_t = 1.0)]
    pub alpha: f64,
    /// PARM variants (repeatable).
    #[arg(long = "variant", default_values_t = vec!["noMM".to_string(), "noSE".to_string(), "wSE".to_string()])]
    pub variants: Vec<String>,
    /// CPU cap of naive overprovisioning [default: the lowest cap level, every node powered].
    #[arg(long)]
    pub naive_cap: Option<f64>,
    /// Solver: structured or milp.
    #[arg(long, default_value = "structured")]
    pub solver: String,
    /// Do not add each decision's solve time to completion times.
    #[arg(long)]
    pub no_solve_time: bool,
    /// Ranges of A / n_max for the sensitivity sweep (repeatable; none: no sweep).
    #[arg(long = "sweep-parallelism", default_values_t = vec!["0.25,0.5".to_string(), "0.5,2".to_string(), "2,4".to_string()])]
    pub sweep_parallelism: Vec<String>,
    /// Ranges of σ for the sensitivity sweep (repeatable).
    #[arg(long = "sweep-sigma", default_values_t = vec!["0,0.2".to_string(), "0,1".to_string(), "0.8,1".to_string()])]
    pub sweep_sigma: Vec<String>,
    /// Seeds of each sweep cell (0: no sweep).
    #[arg(long, default_value_t = 3)]
    pub sweep_seeds: u64,
    /// γ of the sweep (set 1).
    #[arg(long, default_value_t = 0.5)]
    pub sweep_gamma: f64,
    /// Simulations run at once [default: the number of CPUs].
    #[arg(long)]
    pub threads: Option<usize>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

/// The sizes the testbed's SLURM baseline runs the jobs at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BaselineSize {
    Min,
    Max,
}

#[derive(Args)]
pub struct ParmTestbedArgs {
    /// Seeds 1..=N of the job sets drawn: every figure is a mean over them with a 95% interval.
    #[arg(long, default_value_t = 20)]
    pub seeds: u64,
    /// α of PARM's weights (the paper's text implies 1).
    #[arg(long, default_value_t = 1.0)]
    pub alpha: f64,
    /// PARM's decision rule: paper or starts-first.
    #[arg(long, default_value = "paper")]
    pub parm_rule: String,
    /// A job's maximum size over its minimum (the paper does not give its jobs'
    /// node ranges; n_max = min(28, round(n_min × this))).
    #[arg(long, default_value_t = 3.0)]
    pub n_max_factor: f64,
    /// The sizes the SLURM baseline runs the jobs at: min (n_min, as noMM) or max
    /// (n_max, the largest PARM may give them).
    #[arg(long, value_enum, default_value = "min")]
    pub baseline_size: BaselineSize,
    /// An expanding job waits for its new nodes to boot (Eq. 21, as in the paper's
    /// large-scale simulation; its testbed's Charm++ runtime did not boot nodes).
    #[arg(long)]
    pub expand_boots: bool,
    /// Do not add each decision's solve time to completion times (the paper does).
    #[arg(long)]
    pub no_solve_time: bool,
    /// Simulations run at once [default: the number of CPUs].
    #[arg(long)]
    pub threads: Option<usize>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

#[derive(Args)]
pub struct NodesetsArgs {
    /// SWF trace (default: SDSC-BLUE-2000 from the shared traces directory).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Cluster file (default: examples/clusters/sdsc-blue-3gen.toml).
    #[arg(long)]
    pub cluster: Option<PathBuf>,
    /// Scheduling policy.
    #[arg(long, default_value = "easy", value_parser = policy)]
    pub policy: String,
    /// Inter-arrival scale factors to run (repeatable; < 1 raises the load).
    #[arg(long = "arrival-scale", default_values_t = vec![1.0, 0.5])]
    pub arrival_scales: Vec<f64>,
    /// Replay only the first N jobs (N >= 1; without it, all).
    #[arg(long, value_parser = at_least_one)]
    pub max_jobs: Option<usize>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

/// Where the accounting store is and which run to read.
#[derive(Args, Clone)]
pub struct DbArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Run to read (default: the newest complete run).
    #[arg(long)]
    pub run: Option<i64>,
}

/// Where the accounting store is.
#[derive(Args, Clone)]
pub struct StoreArgs {
    /// Accounting store (default: $TESSERA_DB; else the live store of --state-dir;
    /// else ./tessera.db; else ./tessera-state's live store, if there is one).
    #[arg(long, env = "TESSERA_DB")]
    pub db: Option<PathBuf>,
    /// A controller's state directory: read its live accounting store
    /// (DIR/accounting.db).
    #[arg(long, env = "TESSERA_STATE_DIR")]
    pub state_dir: Option<PathBuf>,
}

#[derive(Args)]
pub struct AcctArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Fields to print, comma-separated (sacct names: JobID, JobName, User, Group,
    /// Account, Partition, AllocCPUS, AllocNodes, NodeList, State, ExitCode, Submit,
    /// Start, End, Elapsed, ElapsedRaw, CPUTime, CPUTimeRAW, Timelimit, ReqCPUS,
    /// ReqMem; and Factor, NormElapsed, CoreHours, NormCoreHours, HS06Hours, HS06PerCore, ConsumedEnergy, ConsumedEnergyRaw).
    #[arg(long = "format", short = 'o', default_value = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode", value_parser = acct_fields)]
    pub fields: String,
    /// Parsable: `|` between fields and at the end of each line.
    #[arg(short = 'p', long)]
    pub parsable: bool,
    /// Parsable2: `|` between fields, none at the end.
    #[arg(short = 'P', long)]
    pub parsable2: bool,
    /// Jobs only, not their steps (sacct -X).
    #[arg(short = 'X', long)]
    pub allocations: bool,
    /// Only these users (comma-separated).
    #[arg(short = 'u', long)]
    pub user: Option<String>,
    /// Only these accounts (comma-separated).
    #[arg(short = 'A', long)]
    pub account: Option<String>,
    /// Only these states (COMPLETED|CD, FAILED|F, CANCELLED|CA, TIMEOUT|TO, NODE_FAIL|NF).
    #[arg(short = 's', long, value_parser = acct_states)]
    pub state: Option<String>,
    /// Only jobs running at or after this time (YYYY-MM-DD[THH:MM:SS] UTC, or Unix seconds).
    #[arg(short = 'S', long)]
    pub starttime: Option<String>,
    /// Only jobs running at or before this time.
    #[arg(short = 'E', long)]
    pub endtime: Option<String>,
}

#[derive(Subcommand)]
pub enum AcctCommand {
    /// Export APEL records (individual jobs, summaries, normalised summaries, sync).
    Apel(ApelArgs),
    /// List the runs the store holds: id, kind, state, jobs, when recorded, label.
    Runs(StoreArgs),
    /// Remove abandoned runs (simulation recordings cut short, older than
    /// --min-age), or the simulation runs named with --run, and shrink the file.
    Prune(PruneArgs),
}

#[derive(Args)]
pub struct PruneArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Remove these simulation runs, finished or not (repeat or comma-separate);
    /// without it, every abandoned run goes.
    #[arg(long, value_delimiter = ',')]
    pub run: Vec<i64>,
    /// An unfinished simulation run counts as abandoned once its recording began
    /// this long ago (a run being written now is younger): seconds, or with a
    /// unit s, m, h or d.
    #[arg(long, default_value = "1h", value_parser = duration_s)]
    pub min_age: i64,
    /// Say what would go, remove nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum ApelKind {
    Individual,
    Summary,
    Normalised,
    Sync,
}

#[derive(Args)]
pub struct ApelArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Record type: individual jobs, per-month summaries, normalised summaries or sync records.
    #[arg(long = "type", value_enum, default_value = "individual")]
    pub kind: ApelKind,
    /// Message version: individual 0.3|0.4, summary 0.2|0.4, normalised 0.3|0.4, sync 0.1.
    #[arg(long)]
    pub version: Option<String>,
    /// SubmitHost (default: the site name with `-ce`).
    #[arg(long)]
    pub submit_host: Option<String>,
    /// Write to a file (default: stdout).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ReportFormat {
    Table,
    Json,
    Csv,
}

#[derive(Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ReportFormat,
}

#[derive(Subcommand)]
pub enum ReportCommand {
    /// Allocated over available core-hours, per node type, partition and in total;
    /// normalized by each node's own factor (capacity delivered; `report usage`
    /// normalizes a job by its slowest node's, docs/accounting.md).
    Utilization(ReportArgs),
    /// Usage roll-up: raw and normalized wall, CPU and core hours, HS06-hours; a
    /// job normalized by its slowest node's factor, the pace it ran at.
    Usage {
        #[command(flatten)]
        args: ReportArgs,
        /// user, group, account, partition, nodetype or month.
        #[arg(long, default_value = "user", value_parser = parsed_as::<tessera_accounting::usage::By>)]
        by: String,
    },
    /// True overhead in canonical units: unit-hours, histograms, flagged intervals.
    Overhead {
        #[command(flatten)]
        args: ReportArgs,
        /// Flagged intervals to list in table and CSV output (JSON lists all).
        #[arg(long, default_value_t = 20)]
        top: usize,
    },
    /// A self-contained HTML report of a run, with charts (opens with no network).
    Html {
        #[command(flatten)]
        db: DbArgs,
        /// Where to write it.
        #[arg(long, short, default_value = "report.html")]
        output: PathBuf,
        #[command(flatten)]
        prices: PriceArgs,
    },
    /// Fair billing: per job and per account, rates per resource.
    Bill {
        #[command(flatten)]
        args: ReportArgs,
        #[command(flatten)]
        prices: PriceArgs,
    },
}

#[derive(Args, Clone, Copy)]
pub struct PriceArgs {
    /// Price of one core-hour (a finite amount >= 0, in the site's currency).
    #[arg(long, default_value_t = 0.0, value_parser = price)]
    pub price_core_hour: f64,
    /// Price of one GB-hour of memory (a finite amount >= 0).
    #[arg(long, default_value_t = 0.0, value_parser = price)]
    pub price_gb_hour: f64,
    /// Price of one GPU-hour (a finite amount >= 0).
    #[arg(long, default_value_t = 0.0, value_parser = price)]
    pub price_gpu_hour: f64,
    /// Price of one kWh of the jobs' energy (ConsumedEnergy; a finite amount >= 0).
    #[arg(long, default_value_t = 0.0, value_parser = price)]
    pub price_kwh: f64,
}

impl PriceArgs {
    pub fn prices(&self) -> tessera_accounting::billing::Prices {
        tessera_accounting::billing::Prices { core_hour: self.price_core_hour, gb_hour: self.price_gb_hour, gpu_hour: self.price_gpu_hour, kwh: self.price_kwh }
    }
}

#[cfg(test)]
mod tests {
    /// Every flag and argument of every command says what it is (`--help`).
    #[test]
    fn every_flag_has_help_text() {
        use clap::CommandFactory;
        fn walk(c: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for a in c.get_arguments() {
                let id = a.get_id().as_str();
                if id == "help" || id == "version" {
                    continue;
                }
                if a.get_help().is_none() && a.get_long_help().is_none() {
                    missing.push(format!("{path} --{}", a.get_long().unwrap_or(id)));
                }
            }
            for s in c.get_subcommands() {
                walk(s, &format!("{path} {}", s.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&super::Cli::command(), "tessera", &mut missing);
        assert!(missing.is_empty(), "{} flags without help:\n{}", missing.len(), missing.join("\n"));
    }
}
