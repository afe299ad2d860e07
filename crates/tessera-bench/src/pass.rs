//! `tessera sim bench-pass`: one scheduling pass timed as a live controller runs
//! it (the engine driven directly: [`crate::driver`]).
//!
//! `sim bench` times whole trace replays, in which most passes see a short queue.
//! A live controller instead runs a pass on every event against a deep queue and
//! a large machine, so it is the cost of *one* pass there that must stay small;
//! and a simulator that streams an endless workload must keep its memory flat.
//! Both benchmarks take job sizes, estimates and runtimes from a real trace
//! (default RICC-2010-2, Parallel Workloads Archive: Feitelson, Tsafrir & Krakov,
//! JPDC 74(10) 2014) and are deterministic for a given seed.

use crate::driver::{policies, shapes, trace_path, Driver, Shape};
use crate::measure::quantiles;
use anyhow::{ensure, Context, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cmp::Reverse;
use std::fmt::Write;
use std::path::PathBuf;
use tessera_core::{Cluster, Engine, Input, NodeChange, PolicyKind, Time};

fn ms(s: f64) -> f64 {
    s * 1e3
}

/// `tessera sim bench-pass`'s settings (see its `--help`).
#[derive(Clone, Debug)]
pub struct Options {
    pub trace: Option<PathBuf>,
    pub skip: usize,
    pub nodes: u32,
    pub cores: u32,
    pub busy: f64,
    pub queued: usize,
    pub wide_head: Option<f64>,
    pub drained: u32,
    pub mem_per_core: u64,
    pub passes: usize,
    pub policies: Vec<String>,
    pub seed: u64,
    pub reference: bool,
    /// Multifactor priority and Fair Tree, every trace group an account.
    pub fairshare: bool,
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
    /// Queue order: submission, or multifactor priority with Fair Tree.
    order: &'static str,
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
    /// Seconds of the engine's clock the timed passes spanned (with
    /// `--fairshare`, a priority calculation every 300 s of it).
    span_s: Time,
}

/// `tessera sim bench-pass`: one scheduling pass as a live controller runs it.
///
/// Setup (the same for every policy, seeded): a cluster of `--nodes` nodes of
/// `--cores` cores in one shared partition, `--drained` of them drained; with
/// `--fairshare`, multifactor priority and Fair Tree (Tessera's defaults: a
/// 5-minute calculation period, a 7-day half-life), every trace group an
/// account and each user an association under it.
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
pub fn run(a: &Options, json: bool) -> Result<String> {
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
    // with fair share, the trace's (group, user) pairs: each an association
    let pairs: Option<Vec<(i64, i64)>> = match a.fairshare {
        true => {
            let mut v = shapes(&path, 0, procs_cap)?.map(|s| s.map(|s| (s.group as i64, s.user as i64))).collect::<Result<Vec<_>>>()?;
            v.sort_unstable();
            v.dedup();
            Some(v)
        }
        false => None,
    };
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
        let engine = if reference { engine.without_shortcuts() } else { engine };
        let mut d = match &pairs {
            Some(p) => Driver::fairshare(engine, &cluster, p.iter().copied())?,
            None => Driver::new(engine),
        };
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
            order: if a.fairshare { "multifactor priority, Fair Tree (every trace group an account)" } else { "submission" },
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
        let (mut times, mut min_queued, started_before, began) =
            (Vec::with_capacity(a.passes), usize::MAX, d.started, now);
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
            span_s: now - began,
        });
    }
    let setup = setup.context("no policy given")?;
    let ratio = |k: fn(&PassRow) -> f64| {
        let of = |p: &str| rows.iter().find(|r| r.policy == p && !r.reference).map(k);
        of("conservative").zip(of("easy")).map(|(c, e)| c / e)
    };
    let (ratio_median, ratio_p99) = (ratio(|r| r.median_ms), ratio(|r| r.p99_ms));
    let mut w = String::new();
    match json {
        true => {
            let v = serde_json::json!({ "setup": setup, "policies": rows, "conservative_over_easy": { "median": ratio_median, "p99": ratio_p99 } });
            writeln!(w, "{}", serde_json::to_string_pretty(&v)?)?;
        }
        false => {
            writeln!(w, 
                "cluster: {} nodes x {} cores = {} cores, one shared partition",
                a.nodes, a.cores, setup.cores
            )?;
            writeln!(w, 
                "jobs: {} from record {}, seed {}",
                setup.trace, a.skip, a.seed
            )?;
            let memory = if setup.mem_per_core > 0 {
                format!("{} MiB per core", setup.mem_per_core)
            } else {
                "memory not tracked".to_string()
            };
            writeln!(w, 
                "setup: {} running jobs on {:.1}% of the cores, {} queued; {} of {} nodes drained; {memory}; queue order: {}",
                setup.running_jobs,
                100.0 * setup.busy,
                setup.queued,
                setup.drained,
                setup.nodes,
                setup.order
            )?;
            writeln!(w)?;
            writeln!(w, 
                "{:<13} {:>11} {:>7} {:>7} | {:>6} {:>9} {:>9} {:>9} {:>8} {:>7} {:>6} {:>8}",
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
                "busy",
                "span"
            )?;
            for r in &rows {
                let name = if r.reference { format!("{} (ref)", r.policy) } else { r.policy.to_string() };
                writeln!(w, 
                    "{:<13} {:>8.3} ms {:>7} {:>6.1}% | {:>6} {:>6.3} ms {:>6.3} ms {:>6.3} ms {:>8.2} {:>7} {:>5.1}% {:>6} s",
                    name, r.first_pass_ms, r.first_pass_starts, 100.0 * r.busy_after_first, r.passes, r.median_ms, r.p99_ms, r.max_ms,
                    r.starts_per_pass, r.min_queued, 100.0 * r.busy_end, r.span_s
                )?;
            }
            if let (Some(m), Some(p)) = (ratio_median, ratio_p99) {
                writeln!(w, "\nconservative / EASY: median {m:.1}x, p99 {p:.1}x")?;
            }
            for r in rows.iter().filter(|r| r.reference) {
                if let Some(f) = rows.iter().find(|f| f.policy == r.policy && !f.reference) {
                    writeln!(w, 
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
    Ok(w)
}
