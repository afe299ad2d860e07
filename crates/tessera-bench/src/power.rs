//! `tessera power bench`: one PARM decision timed with three solvers (Tessera's
//! structured solver, microlp's branch and bound, HiGHS), on decisions built from
//! a trace as the engine builds them; optionally every decision written as MPS.
//!
//! The decisions come from [`decision`], which the HiGHS cross-check test
//! (`tests/it/power.rs`) uses too, so the test checks the very decisions the
//! benchmark times. HiGHS is in a build only with the cargo feature `highs`
//! ([`crate::highs_mip`]); without it the benchmark says how to build it in.

use tessera_studies::parm::{THETA, THETA_PATH, THETA_TRACE};
use tessera_studies::power::time_limit_ms;
use tessera_studies::run::{cluster_or_embedded, trace_or_shared};
use anyhow::{Context, Result};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use tessera_core::power::{knapsack, ParmConfig, ParmVariant, PowerMachine, Problem, Solver, Status};
use tessera_sim::{PowerMode, PowerRule, PowerSetup};

/// The trace's jobs as PARM sees them: the usable jobs and their PASS models.
pub fn workload(records: &[tessera_workload::swf::SwfRecord], info: &tessera_core::PowerSetupInfo, cluster: &str) -> tessera_sim::Workload {
    let setup = PowerSetup { name: cluster.to_string(), info: info.clone(), hardware: Default::default(), rule: PowerRule::default(), mode: PowerMode::Parm(ParmConfig::new(ParmVariant::WSE)), charge_solve_time: false };
    tessera_sim::prepare_power(records, std::sync::Arc::new(setup))
}

/// The first job (index into `w.jobs`) of instance `inst` of `instances` decisions
/// of `k` jobs: spread from the trace's start to its end.
pub fn first_job(usable: usize, k: usize, inst: usize, instances: usize) -> usize {
    (usable - k) * inst / (instances - 1).max(1)
}

/// One benchmark decision: the `k` jobs from `first` submitted at once to a PARM
/// engine (structured solver); the decision at t = 0 starts some of them; the one
/// returned is the next, f_se later, where running jobs may resize (wSE). Returns
/// the problem and the running jobs' current choices (the incumbent).
pub fn decision(w: &tessera_sim::Workload, machine: &PowerMachine, variant: ParmVariant, first: usize, k: usize) -> Result<(Problem, Vec<Option<u32>>)> {
    anyhow::ensure!(k >= 1 && first + k <= w.jobs.len(), "{k} jobs from job {}: the trace has {} usable jobs", first + 1, w.jobs.len());
    let mut cfg = ParmConfig::new(variant);
    cfg.solver = Solver::Structured;
    let mut e = tessera_core::Engine::parm(machine.clone(), cfg.clone());
    let mut out = Vec::new();
    for i in first..first + k {
        let spec = tessera_core::JobSpec { power: Some(w.power_jobs[i]), ..tessera_sim::spec_of(&w.jobs[i]) };
        e.handle(0, tessera_core::Input::submit(spec), &mut out);
    }
    e.handle(0, tessera_core::Input::Pass, &mut out);
    anyhow::ensure!(!out.iter().any(|x| matches!(x, tessera_core::Effect::Rejected { .. })), "the engine rejected a job of the benchmark: {out:?}");
    Ok(e.decision_problem(cfg.fse.max(1)).expect("a PARM engine"))
}

#[derive(Clone, Debug, serde::Serialize)]
struct BenchRow {
    jobs: usize,
    instance: usize,
    first_job: usize,
    running: usize,
    items: usize,
    structured_ms_min: f64,
    structured_ms_median: f64,
    structured_objective: f64,
    structured_optimal: bool,
    milp_s: f64,
    milp_optimal: bool,
    /// (MILP − structured) / MILP objective: > 0 when the MILP found better, < 0
    /// when it stopped at its limit with a worse answer.
    gap_to_milp: f64,
    /// (Lagrangian bound − structured) / bound: the structured answer's proven gap.
    gap_to_bound: f64,
    highs_s: f64,
    highs_status: String,
    highs_optimal: bool,
    highs_objective: f64,
    /// (HiGHS − structured) / HiGHS objective, as `gap_to_milp`.
    gap_to_highs: f64,
    /// The MPS file of the decision, when `--mps-dir` was given.
    mps: Option<PathBuf>,
}

/// The MPS file of instance `inst` (from 0) of the decisions of `k` jobs.
fn mps_name(k: usize, inst: usize) -> String {
    format!("jobs-{k}-instance-{}.mps", inst + 1)
}

/// `--mps-dir`: created; refused, before anything is solved, when a file the run
/// would write is one of its inputs.
fn mps_dir(dir: &Path, jobs: &[usize], instances: usize, inputs: &[(&str, &Path)]) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("--mps-dir {}: creating it", dir.display()))?;
    let files: Vec<PathBuf> = jobs.iter().flat_map(|&k| (0..instances).map(move |inst| dir.join(mps_name(k, inst)))).collect();
    let outputs: Vec<(&str, &Path)> = files.iter().map(|f| ("--mps-dir", f.as_path())).collect();
    tessera_studies::files::check(inputs, &outputs)?;
    Ok(dir.to_path_buf())
}

/// `tessera power bench`'s settings (see its `--help`).
#[derive(Clone, Debug)]
pub struct Options {
    pub trace: Option<PathBuf>,
    pub cluster: Option<PathBuf>,
    pub jobs: Vec<usize>,
    pub instances: usize,
    pub repeat: usize,
    pub variant: String,
    pub milp_node_limit: u64,
    pub milp_time_limit: f64,
    pub highs_time_limit: f64,
    pub mps_dir: Option<PathBuf>,
}

/// Time the decisions; the report as a Markdown table, or as JSON (one row per
/// decision). Progress goes to standard error.
pub fn run(a: &Options, json: bool) -> Result<String> {
    crate::highs_mip::require("tessera power bench")?;
    let mut report = String::new();
    let trace = trace_or_shared(&a.trace, THETA_TRACE)?;
    let (_, cluster) = cluster_or_embedded(&a.cluster, THETA_PATH, THETA)?;
    let info = cluster.power_machine().map_err(anyhow::Error::msg).with_context(|| format!("cluster `{}`", cluster.name))?;
    let variant: ParmVariant = a.variant.parse().map_err(anyhow::Error::msg)?;
    anyhow::ensure!(a.repeat >= 1 && a.instances >= 1, "--repeat and --instances must be >= 1");
    let time_limit = time_limit_ms(a.milp_time_limit)?;
    anyhow::ensure!(a.highs_time_limit > 0.0 && a.highs_time_limit.is_finite(), "--highs-time-limit {}: expected seconds > 0", a.highs_time_limit);
    let inputs: Vec<(&str, &Path)> = [Some(("trace", trace.as_path())), a.cluster.as_deref().map(|c| ("cluster file", c))].into_iter().flatten().collect();
    let mps = a.mps_dir.as_deref().map(|d| mps_dir(d, &a.jobs, a.instances, &inputs)).transpose()?;
    let scratch = tempfile::tempdir().context("a temporary directory for the MPS files")?;
    let (_, records, _) = tessera_workload::swf::SwfReader::read_file(&trace, false)?;
    let w = workload(&records, &info, &cluster.name);
    let mut rows = Vec::new();
    for &k in &a.jobs {
        anyhow::ensure!(k >= 1 && k <= w.jobs.len(), "--jobs {k}: the trace has {} usable jobs", w.jobs.len());
        for inst in 0..a.instances {
            let first = first_job(w.jobs.len(), k, inst, a.instances);
            let (problem, incumbent) = decision(&w, &info.machine, variant, first, k)?;
            let running = problem.groups.iter().filter(|g| g.forced).count();
            let items = problem.groups.iter().map(|g| g.items.len()).sum();
            let mut times = Vec::with_capacity(a.repeat);
            let mut s = problem.solve(Solver::Structured, Some(&incumbent));
            for _ in 0..a.repeat {
                let t = std::time::Instant::now();
                s = std::hint::black_box(problem.solve(Solver::Structured, Some(&incumbent)));
                times.push(t.elapsed().as_secs_f64() * 1e3);
            }
            times.sort_by(f64::total_cmp);
            // the MILP cold, falling back to the running jobs' current configurations
            // (feasible), so that its objective is its own search's
            let current = knapsack::Solution { objective: problem.value(&incumbent), choice: incumbent.clone(), bound: None, status: Status::Feasible };
            let t = std::time::Instant::now();
            let m = knapsack::milp(&problem, a.milp_node_limit, Some(time_limit), &current, false);
            let milp_s = t.elapsed().as_secs_f64();
            // HiGHS from the MPS file, cold
            let path = mps.as_deref().unwrap_or(scratch.path()).join(mps_name(k, inst));
            let name = format!("tessera-parm-{variant}-jobs-{k}-first-{}", first + 1);
            let h = crate::highs_mip::solve(&problem, &name, &path, Some(a.highs_time_limit))?;
            anyhow::ensure!(problem.usage(&h.choice).2, "{}: HiGHS's answer breaks a limit of the problem", path.display());
            anyhow::ensure!((h.highs_objective - h.objective).abs() <= 1e-9 * h.objective.abs().max(1.0), "{}: HiGHS's objective {} is not its choice's value {}", path.display(), h.highs_objective, h.objective);
            let bound = s.bound.unwrap_or(f64::NAN);
            let row = BenchRow {
                jobs: k,
                instance: inst + 1,
                first_job: first + 1,
                running,
                items,
                structured_ms_min: times[0],
                structured_ms_median: times[times.len() / 2],
                structured_objective: s.objective,
                structured_optimal: s.status == Status::Optimal,
                milp_s,
                milp_optimal: m.status == Status::Optimal,
                gap_to_milp: (m.objective - s.objective) / m.objective,
                gap_to_bound: (bound - s.objective) / bound,
                highs_s: h.solve_s,
                highs_status: h.status.clone(),
                highs_optimal: h.optimal,
                highs_objective: h.objective,
                gap_to_highs: (h.objective - s.objective) / h.objective,
                mps: mps.is_some().then_some(path),
            };
            eprintln!("{k} jobs, instance {}: structured {:.2} ms, MILP {:.2} s, HiGHS {:.2} s ({})", inst + 1, row.structured_ms_min, row.milp_s, row.highs_s, row.highs_status);
            rows.push(row);
        }
    }
    if json {
        return Ok(format!("{}\n", serde_json::to_string_pretty(&rows)?));
    }
    writeln!(report, 
        "PARM decision time ({variant}; {}; cluster {}: {} nodes, budget {:.0} W; structured: min of {} runs; MILP: microlp cold, node limit {}, time limit {} s; HiGHS: cold from the MPS file, 1 thread, gap 0, time limit {} s; structured vs MILP / HiGHS > 0 when structured is better)",
        trace.display(),
        cluster.name,
        info.machine.nodes,
        info.machine.budget_w,
        a.repeat,
        a.milp_node_limit,
        a.milp_time_limit,
        a.highs_time_limit
    )?;
    writeln!(report)?;
    writeln!(report, "| jobs | instance (first job) | running | items | structured ms (min / median) | MILP s | MILP status | MILP / structured time | structured vs MILP | structured vs bound | HiGHS s | HiGHS status | HiGHS / structured time | structured vs HiGHS |")?;
    writeln!(report, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")?;
    for r in &rows {
        writeln!(report, 
            "| {} | {} ({}) | {} | {} | {:.2} / {:.2} | {:.3} | {} | {:.0}× | {:+.4}% | {:.4}% | {:.3} | {} | {:.0}× | {:+.4}% |",
            r.jobs,
            r.instance,
            r.first_job,
            r.running,
            r.items,
            r.structured_ms_min,
            r.structured_ms_median,
            r.milp_s,
            if r.milp_optimal { "optimal" } else { "limit" },
            r.milp_s * 1e3 / r.structured_ms_min,
            -100.0 * r.gap_to_milp + 0.0,
            100.0 * r.gap_to_bound + 0.0,
            r.highs_s,
            if r.highs_optimal { "optimal".to_string() } else { r.highs_status.to_lowercase() },
            r.highs_s * 1e3 / r.structured_ms_min,
            -100.0 * r.gap_to_highs + 0.0,
        )?;
    }
    if let Some(dir) = &mps {
        writeln!(report)?;
        writeln!(report, "{} decisions written as MPS to {}", rows.len(), dir.display())?;
    }
    Ok(report)
}
