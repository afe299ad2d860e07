//! `tessera sim bench-pass` and `tessera sim bench-stream`: the engine driven the
//! way a live controller and a long simulation drive it, timed.
//!
//! `sim bench` times whole trace replays, in which most passes see a short queue.
//! A live controller instead runs a pass on every event against a deep queue and
//! a large machine, so it is the cost of *one* pass there that must stay small;
//! and a simulator that streams an endless workload must keep its memory flat.
//! Both benchmarks take job sizes, estimates and runtimes from a real trace
//! (default RICC-2010-2, Parallel Workloads Archive: Feitelson, Tsafrir & Krakov,
//! JPDC 74(10) 2014) and are deterministic for a given seed.

use crate::out::outln;
use crate::cli::Format;
use anyhow::{bail, ensure, Context, Result};
use clap::Args;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;
use tessera_core::{
    Cluster, Effect, Engine, Input, JobId, JobSpec, NodeChange, Outcome, PolicyKind, Time,
};
use tessera_workload::jobs::job_from_record;
use tessera_workload::SwfReader;

const DEFAULT_TRACE: &str = "RICC-2010-2.swf.gz";

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

/// What the benchmarks take from a trace job: its processors (cut to the
/// machine), its estimate, and how long it runs (its runtime, cut at the estimate).
#[derive(Clone, Copy)]
struct Shape {
    procs: u32,
    estimate: Time,
    runtime: Time,
    /// MiB per processor; 0 if unknown.
    mem: u64,
}

fn trace_path(trace: &Option<PathBuf>) -> Result<PathBuf> {
    match trace {
        Some(p) => Ok(tessera_workload::traces::resolve(p)?),
        None => Ok(tessera_workload::traces::shared_dir()
            .context("no --trace given and the shared traces directory was not found (set TESSERA_TRACES)")?
            .join(DEFAULT_TRACE)),
    }
}

/// The trace's usable jobs in file order, from record `skip` on, cut to `cores`.
fn shapes(path: &Path, skip: usize, cores: u32) -> Result<impl Iterator<Item = Result<Shape>>> {
    let reader = SwfReader::open(path)?;
    Ok(reader.skip(skip).filter_map(move |r| match r {
        Err(e) => Some(Err(e.into())),
        Ok(r) => job_from_record(&r).ok().map(|j| {
            Ok(Shape {
                procs: j.procs.min(cores),
                estimate: j.estimate,
                runtime: j.effective_runtime(),
                mem: j.mem_per_proc_mb,
            })
        }),
    }))
}

/// The driver's side: every effect consumed, runtimes kept until jobs start, and
/// running jobs ordered by their actual end. Memory follows the live jobs.
struct Driver {
    engine: Engine,
    out: Vec<Effect>,
    /// Runtimes of queued jobs: what the driver knows and the engine does not.
    runtime: HashMap<JobId, Time>,
    /// Running jobs by actual end (end, id).
    ends: BinaryHeap<Reverse<(Time, u64)>>,
    next_id: u64,
    started: u64,
    finished: u64,
}

impl Driver {
    fn new(engine: Engine) -> Self {
        Driver {
            engine,
            out: Vec::new(),
            runtime: HashMap::new(),
            ends: BinaryHeap::new(),
            next_id: 1,
            started: 0,
            finished: 0,
        }
    }

    fn submit(&mut self, now: Time, s: Shape) -> Result<()> {
        let id = JobId(self.next_id);
        self.next_id += 1;
        self.runtime.insert(id, s.runtime);
        self.handle(
            now,
            Input::submit(JobSpec {
                mem_per_proc_mb: s.mem,
                ..JobSpec::new(id, s.procs, s.estimate)
            }),
        )
    }

    fn complete(&mut self, now: Time, id: u64) -> Result<()> {
        self.handle(
            now,
            Input::Complete {
                job: JobId(id),
                outcome: Outcome::Exited(0),
            },
        )
    }

    /// A pass; returns its duration in seconds.
    fn pass(&mut self, now: Time) -> Result<f64> {
        self.out.clear();
        let t = Instant::now();
        self.engine.handle(now, Input::Pass, &mut self.out);
        let dt = t.elapsed().as_secs_f64();
        self.consume(now)?;
        Ok(dt)
    }

    fn handle(&mut self, now: Time, input: Input) -> Result<()> {
        self.out.clear();
        self.engine.handle(now, input, &mut self.out);
        self.consume(now)
    }

    fn consume(&mut self, now: Time) -> Result<()> {
        for e in self.out.drain(..) {
            match e {
                Effect::Start { job, .. } => {
                    let run = self
                        .runtime
                        .remove(&job)
                        .with_context(|| format!("job {job} started twice"))?;
                    self.ends.push(Reverse((now + run, job.0)));
                    self.started += 1;
                }
                Effect::Finished(_) => self.finished += 1,
                // Runtimes are cut at the estimate and completions are delivered at
                // their instant, so a job is never overdue: a kill can only come at
                // the instant its completion is already due, and every wake-up
                // instant is a completion instant.
                Effect::Kill { .. } | Effect::WakeAt(_) => {}
                Effect::Rejected { input, job, reason } => {
                    bail!("the engine rejected {input} of job {job:?}: {reason}")
                }
                other => bail!("unexpected effect {other:?}"),
            }
        }
        Ok(())
    }

    fn busy(&self) -> f64 {
        1.0 - self.engine.free() as f64 / self.engine.capacity() as f64
    }
}

fn policies(names: &[String]) -> Result<Vec<PolicyKind>> {
    if names.is_empty() {
        return Ok(vec![
            PolicyKind::Fcfs,
            PolicyKind::Easy,
            PolicyKind::Conservative,
        ]);
    }
    Ok(names.iter().map(|p| p.parse()).collect::<Result<_, _>>()?)
}

fn ms(s: f64) -> f64 {
    s * 1e3
}

/// Median, 99th percentile and maximum.
pub fn quantiles(mut v: Vec<f64>) -> (f64, f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    v.sort_by(f64::total_cmp);
    let p99 = v[(v.len() * 99).div_ceil(100) - 1];
    (v[v.len() / 2], p99, v[v.len() - 1])
}

#[derive(serde::Serialize)]
struct PassSetup {
    trace: String,
    nodes: u32,
    cores: u64,
    running_jobs: usize,
    busy: f64,
    queued: usize,
    /// Nodes drained before the setup.
    drained: u32,
    /// MiB of memory per core (0: memory not tracked).
    mem_per_core: u64,
}

#[derive(serde::Serialize)]
struct PassRow {
    policy: &'static str,
    /// The engine without shortcuts (`--reference`).
    reference: bool,
    first_pass_ms: f64,
    first_pass_starts: u64,
    queued_after_first: usize,
    busy_after_first: f64,
    passes: usize,
    median_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    starts_per_pass: f64,
    min_queued: usize,
    busy_end: f64,
    slots: usize,
}

/// `tessera sim bench-pass`: one scheduling pass as a live controller runs it.
///
/// Setup (the same for every policy, seeded): a cluster of `--nodes` nodes of
/// `--cores` cores in one shared partition, `--drained` of them drained.
/// Consecutive jobs of the trace from record `--skip` on that run (runtime > 0)
/// are started until `--busy` of the cores are taken; each is observed part way
/// through its run (a uniform share of its runtime has passed), so the running
/// jobs started at different instants before `now` and their expected ends
/// (start + estimate) and actual ends (start + runtime) are spread over the
/// future. The next `--queued` trace jobs
/// are then submitted at `now` (with `--wide-head`, the first of them asks for
/// that share of the cores). Processor counts are cut to the machine; memory is
/// not tracked.
///
/// The first pass is timed and reported apart: it starts what fits, and the run
/// fails unless it leaves jobs queued (the head must be blocked). A half-busy
/// machine with a deep queue of trace jobs is not a state any of these policies
/// stays in: this first pass fills the free cores (FCFS up to the first job that
/// does not fit, the backfilling policies beyond it), so it is the one pass that
/// sees the half-empty machine. The queue is then topped up to `--queued`, and
/// each of `--passes` steps is what a live controller sees between two passes:
/// the running job that ends first completes (the clock moves to its end), new
/// trace jobs arrive until the queue holds `--queued` again, and the pass runs;
/// only the pass is timed. Jobs a pass starts are completed at their actual end
/// when their turn comes, so the machine stays as busy as the policy keeps it
/// (reported after the first pass and at the end: full, for a deep queue) and the
/// queue stays at `--queued`.
pub fn bench_pass(a: PassBenchArgs) -> Result<()> {
    ensure!(
        a.nodes > 0 && a.cores > 0,
        "--nodes and --cores must be at least 1"
    );
    ensure!(
        (0.0..1.0).contains(&a.busy),
        "--busy is {}: expected a share from 0 to below 1",
        a.busy
    );
    ensure!(a.queued > 0, "--queued must be at least 1");
    ensure!(
        a.drained < a.nodes,
        "--drained is {}: expected fewer than the {} nodes",
        a.drained,
        a.nodes
    );
    ensure!(
        a.wide_head.is_none_or(|s| s > 0.0 && s <= 1.0),
        "--wide-head is {:?}: expected a share above 0 and at most 1",
        a.wide_head
    );
    let path = trace_path(&a.trace)?;
    let node_mem = a
        .mem_per_core
        .checked_mul(a.cores as u64)
        .context("--mem-per-core times --cores overflows")?;
    let memory = if node_mem > 0 {
        format!("memory = \"{node_mem}M\"\n")
    } else {
        String::new()
    };
    let toml = format!(
        "name = \"bench-pass\"\n\n[[nodetype]]\nname = \"n\"\ncount = {}\ncores = {}\n{memory}",
        a.nodes, a.cores
    );
    let cluster = Cluster::from_toml(&toml, "bench-pass cluster")?;
    let capacity = cluster.total_cores();
    let procs_cap = capacity.min(u32::MAX as u64) as u32;
    let mut setup = None;
    let mut rows = Vec::new();
    let variants: &[bool] = if a.reference { &[false, true] } else { &[false] };
    let runs: Vec<(PolicyKind, bool)> = policies(&a.policies)?
        .into_iter()
        .flat_map(|p| variants.iter().map(move |&r| (p, r)))
        .collect();
    for (policy, reference) in runs {
        let mem = |s: Shape| Shape {
            mem: if node_mem == 0 {
                0
            } else if s.mem == 0 {
                a.mem_per_core
            } else {
                s.mem.min(node_mem)
            },
            ..s
        };
        let mut jobs = shapes(&path, a.skip, procs_cap)
            .with_context(|| format!("reading {}", path.display()))?
            .map(move |s| s.map(mem));
        let mut next = || -> Result<Shape> { jobs.next().context("the trace ran out of jobs")? };
        let engine = Engine::with_cluster(policy, &cluster)?;
        let mut d = Driver::new(if reference { engine.without_shortcuts() } else { engine });
        for i in 0..a.drained {
            let node = (i as u64 * a.nodes as u64 / a.drained as u64) as u32;
            d.handle(
                0,
                Input::Node {
                    node,
                    change: NodeChange::Drain,
                    reason: "bench-pass".into(),
                },
            )?;
        }
        // running jobs, each `elapsed` seconds into its run
        let mut rng = ChaCha8Rng::seed_from_u64(a.seed);
        let (mut running, mut cores) = (Vec::new(), 0u64);
        while (cores as f64) < a.busy * capacity as f64 {
            let s = next()?;
            if s.runtime > 0 && cores + s.procs as u64 <= capacity {
                running.push((rng.gen_range(0..s.runtime), s));
                cores += s.procs as u64;
            }
        }
        let mut now: Time = running.iter().map(|r| r.0).max().unwrap_or(0);
        running.sort_by_key(|r| Reverse(r.0));
        for &(elapsed, s) in &running {
            d.submit(now - elapsed, s)?;
            d.pass(now - elapsed)?;
        }
        ensure!(
            d.engine.queued() == 0 && d.started == running.len() as u64,
            "a running job of the setup did not start"
        );
        if let Some(share) = a.wide_head {
            let head = next()?;
            d.submit(
                now,
                Shape {
                    procs: ((share * capacity as f64).ceil() as u32).clamp(1, procs_cap),
                    ..head
                },
            )?;
        }
        while d.engine.queued() < a.queued {
            d.submit(now, next()?)?;
        }
        setup.get_or_insert(PassSetup {
            trace: path.display().to_string(),
            nodes: a.nodes,
            cores: capacity,
            running_jobs: running.len(),
            busy: d.busy(),
            queued: d.engine.queued(),
            drained: a.drained,
            mem_per_core: a.mem_per_core,
        });
        let first = d.pass(now)?;
        let (first_starts, queued_after_first, busy_after_first) = (
            d.started - running.len() as u64,
            d.engine.queued(),
            d.busy(),
        );
        ensure!(
            queued_after_first > 0,
            "{policy}: the first pass started all {} queued jobs, so the head is not blocked: ask for more --queued jobs or a larger --busy share",
            a.queued
        );
        let (mut times, mut min_queued, started_before) =
            (Vec::with_capacity(a.passes), usize::MAX, d.started);
        for _ in 0..a.passes {
            let Reverse((end, id)) = d.ends.pop().context("no job is running")?;
            now = now.max(end);
            d.complete(now, id)?;
            while d.engine.queued() < a.queued {
                d.submit(now, next()?)?;
            }
            min_queued = min_queued.min(d.engine.queued());
            times.push(d.pass(now)?);
        }
        let (median, p99, max) = quantiles(times);
        rows.push(PassRow {
            policy: policy.name(),
            reference,
            first_pass_ms: ms(first),
            first_pass_starts: first_starts,
            queued_after_first,
            busy_after_first,
            passes: a.passes,
            median_ms: ms(median),
            p99_ms: ms(p99),
            max_ms: ms(max),
            starts_per_pass: (d.started - started_before) as f64 / a.passes.max(1) as f64,
            min_queued: if a.passes == 0 {
                queued_after_first
            } else {
                min_queued
            },
            busy_end: d.busy(),
            slots: d.engine.slots(),
        });
    }
    let setup = setup.context("no policy given")?;
    let ratio = |k: fn(&PassRow) -> f64| {
        let of = |p: &str| rows.iter().find(|r| r.policy == p && !r.reference).map(k);
        of("conservative").zip(of("easy")).map(|(c, e)| c / e)
    };
    let (ratio_median, ratio_p99) = (ratio(|r| r.median_ms), ratio(|r| r.p99_ms));
    match a.format {
        Format::Json => {
            let v = serde_json::json!({ "setup": setup, "policies": rows, "conservative_over_easy": { "median": ratio_median, "p99": ratio_p99 } });
            outln!("{}", serde_json::to_string_pretty(&v)?)?;
        }
        Format::Table => {
            outln!(
                "cluster: {} nodes x {} cores = {} cores, one shared partition",
                a.nodes, a.cores, setup.cores
            )?;
            outln!(
                "jobs: {} from record {}, seed {}",
                setup.trace, a.skip, a.seed
            )?;
            let memory = if setup.mem_per_core > 0 {
                format!("{} MiB per core", setup.mem_per_core)
            } else {
                "memory not tracked".to_string()
            };
            outln!(
                "setup: {} running jobs on {:.1}% of the cores, {} queued; {} of {} nodes drained; {memory}",
                setup.running_jobs,
                100.0 * setup.busy,
                setup.queued,
                setup.drained,
                setup.nodes
            )?;
            outln!()?;
            outln!(
                "{:<13} {:>11} {:>7} {:>7} | {:>6} {:>9} {:>9} {:>9} {:>8} {:>7} {:>6}",
                "policy",
                "first pass",
                "starts",
                "busy",
                "passes",
                "median",
                "p99",
                "max",
                "starts/p",
                "queue",
                "busy"
            )?;
            for r in &rows {
                let name = if r.reference { format!("{} (ref)", r.policy) } else { r.policy.to_string() };
                outln!(
                    "{:<13} {:>8.3} ms {:>7} {:>6.1}% | {:>6} {:>6.3} ms {:>6.3} ms {:>6.3} ms {:>8.2} {:>7} {:>5.1}%",
                    name, r.first_pass_ms, r.first_pass_starts, 100.0 * r.busy_after_first, r.passes, r.median_ms, r.p99_ms, r.max_ms,
                    r.starts_per_pass, r.min_queued, 100.0 * r.busy_end
                )?;
            }
            if let (Some(m), Some(p)) = (ratio_median, ratio_p99) {
                outln!("\nconservative / EASY: median {m:.1}x, p99 {p:.1}x")?;
            }
            for r in rows.iter().filter(|r| r.reference) {
                if let Some(f) = rows.iter().find(|f| f.policy == r.policy && !f.reference) {
                    outln!(
                        "{}: reference / engine: median {:.1}x, p99 {:.1}x (same starts: {})",
                        r.policy,
                        r.median_ms / f.median_ms,
                        r.p99_ms / f.p99_ms,
                        if r.starts_per_pass == f.starts_per_pass && r.first_pass_starts == f.first_pass_starts { "yes" } else { "NO" }
                    )?;
                }
            }
        }
    }
    Ok(())
}

/// A field of `/proc/PROC/status` (VmRSS, VmHWM) in KiB, PROC a pid or `self`;
/// None where there is none.
pub fn proc_status_kib(proc: &str, field: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{proc}/status")).ok()?;
    s.lines().find_map(|l| {
        l.strip_prefix(field)?
            .strip_prefix(':')?
            .trim()
            .strip_suffix("kB")?
            .trim()
            .parse()
            .ok()
    })
}

#[derive(serde::Serialize)]
struct RssSample {
    done: f64,
    jobs: u64,
    rss_kib: Option<u64>,
}

#[derive(serde::Serialize)]
struct StreamReport {
    trace: String,
    mix_jobs: usize,
    capacity: u32,
    policy: &'static str,
    queued: usize,
    jobs: u64,
    passes: u64,
    simulated_s: Time,
    wall_s: f64,
    jobs_per_s: f64,
    rss: Vec<RssSample>,
    peak_rss_kib: Option<u64>,
    slots: usize,
}

/// `tessera sim bench-stream`: `--jobs` jobs through the engine in memory that
/// follows the live jobs, not the history.
///
/// The generator resamples (seeded, uniformly) the jobs of a trace: processors
/// (cut to `--capacity`), estimate and runtime (cut at the estimate). It is a
/// closed system: whenever the queue holds fewer than `--queued` jobs, new ones
/// arrive, so the machine is always loaded and the live jobs are bounded by
/// construction. The driver is the simulator's loop: at each instant, every
/// completion due, then the arrivals, then a pass; the clock then moves to the
/// next actual end. It keeps only the live jobs (their runtimes and ends); the
/// finished jobs' records are dropped. Peak RSS is the process's VmHWM; VmRSS is
/// sampled when 10%, 50% and 100% of the jobs have finished.
pub fn bench_stream(a: StreamBenchArgs) -> Result<()> {
    ensure!(
        a.capacity > 0 && a.queued > 0 && a.jobs > 0,
        "--capacity, --queued and --jobs must be at least 1"
    );
    let policy: PolicyKind = a.policy.parse()?;
    let path = trace_path(&a.trace)?;
    let mix: Vec<Shape> = shapes(&path, 0, a.capacity)
        .and_then(|s| s.collect())
        .with_context(|| format!("reading {}", path.display()))?;
    ensure!(!mix.is_empty(), "{}: no usable job", path.display());
    let mut d = Driver::new(Engine::new(policy, a.capacity)?);
    let mut rng = ChaCha8Rng::seed_from_u64(a.seed);
    let marks = [a.jobs.div_ceil(10), a.jobs.div_ceil(2), a.jobs];
    let (mut rss, mut submitted, mut passes, mut now) = (Vec::new(), 0u64, 0u64, 0 as Time);
    let t = Instant::now();
    loop {
        while d.engine.queued() < a.queued && submitted < a.jobs {
            d.submit(now, mix[rng.gen_range(0..mix.len())])?;
            submitted += 1;
        }
        d.pass(now)?;
        passes += 1;
        let Some(&Reverse((end, _))) = d.ends.peek() else {
            break;
        };
        now = end;
        while let Some(&Reverse((end, id))) = d.ends.peek() {
            if end > now {
                break;
            }
            d.ends.pop();
            d.complete(now, id)?;
            if rss.len() < marks.len() && d.finished >= marks[rss.len()] {
                let done = d.finished as f64 / a.jobs as f64;
                rss.push(RssSample {
                    done,
                    jobs: d.finished,
                    rss_kib: proc_status_kib("self", "VmRSS"),
                });
            }
        }
    }
    let wall_s = t.elapsed().as_secs_f64();
    ensure!(
        d.finished == a.jobs && d.engine.jobs() == 0,
        "{} of {} jobs finished; {} left in the engine",
        d.finished,
        a.jobs,
        d.engine.jobs()
    );
    let r = StreamReport {
        trace: path.display().to_string(),
        mix_jobs: mix.len(),
        capacity: a.capacity,
        policy: policy.name(),
        queued: a.queued,
        jobs: a.jobs,
        passes,
        simulated_s: now,
        wall_s,
        jobs_per_s: a.jobs as f64 / wall_s,
        rss,
        peak_rss_kib: proc_status_kib("self", "VmHWM"),
        slots: d.engine.slots(),
    };
    match a.format {
        Format::Json => outln!("{}", serde_json::to_string_pretty(&r)?)?,
        Format::Table => {
            let mib = |k: Option<u64>| {
                k.map_or("-".to_string(), |k| format!("{:.1} MiB", k as f64 / 1024.0))
            };
            outln!(
                "{} jobs resampled from {} ({} jobs), seed {}",
                r.jobs, r.trace, r.mix_jobs, a.seed
            )?;
            outln!(
                "pool of {} cores, {}, {} jobs kept queued",
                r.capacity, r.policy, r.queued
            )?;
            outln!(
                "wall {:.2} s: {:.0} jobs/s, {} passes, {} s simulated",
                r.wall_s, r.jobs_per_s, r.passes, r.simulated_s
            )?;
            let at: Vec<String> = r
                .rss
                .iter()
                .map(|s| format!("{:.0}% {}", 100.0 * s.done, mib(s.rss_kib)))
                .collect();
            outln!(
                "RSS: {}; peak (VmHWM) {}",
                at.join(", "),
                mib(r.peak_rss_kib)
            )?;
            outln!(
                "live jobs: at most {} (engine slots) of {} jobs",
                r.slots, r.jobs
            )?;
        }
    }
    Ok(())
}
