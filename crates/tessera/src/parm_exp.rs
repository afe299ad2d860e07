//! What PARM's speedups are made of (`tessera experiment parm-attribution`) and
//! the paper's 38-node testbed experiment in simulation (`tessera experiment
//! parm-testbed`). Both run every scheme on the same jobs, over several seeds of
//! the rule that invents what a trace does not record, and report means with 95%
//! intervals (docs/power.md).

use crate::out::{out, outln};
use crate::experiment_cmd::{cluster_or_embedded, trace_or_shared};
use crate::study_cmd::parallel;
use anyhow::{Context, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::sync::Arc;
use tessera_core::power::{AppProfile, DecisionRule, Downey, ParmConfig, ParmVariant, PowerJob, PowerMachine, Solver, PRESETS};
use tessera_core::{PolicyKind, PowerSetupInfo};
use tessera_report::Table;
use tessera_sim::{Machine, PowerMode, PowerRule, PowerSetup, Workload};
use tessera_workload::jobs::TraceJob;

/// How one run schedules a power-aware workload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scheme {
    /// EASY at full power on the nodes the budget powers, every job at its
    /// trace size, with the users' estimates (`exact: false`, the paper's SLURM
    /// baseline) or the exact runtimes.
    Easy { exact: bool },
    /// EASY at full power on the nodes the budget powers, every job at a size
    /// given per job (its runtime at that size from its PASS model), exact runtimes.
    EasySized,
    /// EASY with every CPU at this cap on as many nodes as the budget powers.
    Naive(f64),
    /// PARM's optimizer. `power: false` is the same optimizer on the machine the
    /// budget powers at full power (no overprovisioning, every CPU at its
    /// maximum): power awareness taken away, everything else kept.
    Optimizer { variant: ParmVariant, alpha: f64, rule: DecisionRule, power: bool },
}

impl Scheme {
    pub fn label(&self) -> String {
        match self {
            Scheme::Easy { exact: false } => "EASY".into(),
            Scheme::Easy { exact: true } => "EASY exact".into(),
            Scheme::EasySized => "EASY sized".into(),
            Scheme::Naive(c) => format!("naive {c} W"),
            Scheme::Optimizer { variant, alpha, rule, power } => {
                format!("{} {variant} α={alpha}{}", if *power { "PARM" } else { "optimizer" }, if *rule == DecisionRule::Paper { String::new() } else { format!(" {rule}") })
            }
        }
    }
}

/// Knobs shared by every optimizer run of an experiment.
#[derive(Clone, Copy, Debug)]
pub struct Knobs {
    pub solver: Solver,
    pub amortize_resizes: bool,
    pub charge_solve_time: bool,
    /// An expanding job waits for its new nodes to boot (Eq. 21).
    pub expand_boots: bool,
}

/// What one run measured.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RunOut {
    pub scheme: String,
    pub jobs: usize,
    pub nodes: u32,
    pub avg_completion_min: f64,
    pub max_completion_min: f64,
    pub avg_wait_min: f64,
    pub budget_w: f64,
    pub max_power_w: f64,
    pub energy_kwh: f64,
    pub decisions: u64,
    pub resizes: u64,
    pub unproven: u64,
    pub max_decision_s: f64,
    pub sim_wall_s: f64,
    /// Mean nodes busy from the first arrival to the last end.
    pub mean_busy_nodes: f64,
    /// Nodes every job started on.
    #[serde(skip)]
    pub start_nodes: Vec<u32>,
}

/// The machine the budget powers at full power: the optimizer without power.
fn unconstrained(info: &PowerSetupInfo) -> PowerSetupInfo {
    let full = info.machine.node_base_w + info.cpu_max_w;
    let nodes = ((info.machine.budget_w / full).floor() as u64).min(info.machine.nodes as u64) as u32;
    PowerSetupInfo { machine: PowerMachine { nodes, cap_levels_w: vec![info.cpu_max_w], ..info.machine.clone() }, ..info.clone() }
}

/// `base` (a workload prepared for PARM on `info`) as `scheme` runs it; `sizes`
/// gives every job's size for [`Scheme::EasySized`].
pub fn derive(base: &Workload, scheme: Scheme, sizes: Option<&[u32]>, k: Knobs) -> Workload {
    let Machine::Power(setup) = &base.machine else { panic!("a power-aware workload") };
    let info = &setup.info;
    let cpu_max = info.cpu_max_w;
    let mut w = base.clone();
    let (info, mode) = match scheme {
        Scheme::Easy { .. } | Scheme::EasySized => (info.clone(), PowerMode::FixedCap { cap_w: cpu_max }),
        Scheme::Naive(cap_w) => (info.clone(), PowerMode::FixedCap { cap_w }),
        Scheme::Optimizer { variant, alpha, rule, power } => {
            let mut cfg = ParmConfig::new(variant);
            cfg.alpha = alpha;
            cfg.rule = rule;
            cfg.solver = k.solver;
            cfg.amortize_resizes = k.amortize_resizes;
            cfg.expand_boots = k.expand_boots;
            (if power { info.clone() } else { unconstrained(info) }, PowerMode::Parm(cfg))
        }
    };
    let setup = PowerSetup { name: setup.name.clone(), info, hardware: setup.hardware.clone(), rule: setup.rule.clone(), mode, charge_solve_time: k.charge_solve_time };
    for (i, (j, pj)) in w.jobs.iter_mut().zip(&base.power_jobs).enumerate() {
        match scheme {
            Scheme::Easy { exact } => {
                if exact {
                    j.estimate = j.runtime;
                }
            }
            Scheme::EasySized => {
                let n = sizes.expect("sizes for EASY sized")[i];
                j.procs = n;
                j.runtime = (pj.time(n, cpu_max) - 1e-9).ceil().max(1.0) as i64;
                j.estimate = j.runtime;
            }
            Scheme::Naive(cap) => {
                let s = pj.app.slowdown(cap) / pj.app.slowdown(cpu_max);
                j.runtime = tessera_sim::stretch(j.runtime, s);
                j.estimate = tessera_sim::stretch(j.estimate, s);
            }
            Scheme::Optimizer { .. } => {}
        }
    }
    w.capacity = setup.nodes();
    w.machine = Machine::Power(Arc::new(setup));
    w
}

/// Run `scheme` on `base`.
pub fn run(base: &Workload, scheme: Scheme, sizes: Option<&[u32]>, k: Knobs) -> RunOut {
    let w = derive(base, scheme, sizes, k);
    let policy = if matches!(scheme, Scheme::Optimizer { .. }) { PolicyKind::Parm } else { PolicyKind::Easy };
    let t = std::time::Instant::now();
    let o = tessera_sim::simulate(&w, policy);
    let wall = t.elapsed().as_secs_f64();
    let s = tessera_sim::Summary::compute("", &w, &o);
    let p = o.power.as_ref().expect("power-aware runs report power");
    let d = p.parm.unwrap_or_default();
    let max_completion = w.jobs.iter().enumerate().map(|(i, j)| o.end[i] - j.submit).max().unwrap_or(0);
    RunOut {
        scheme: scheme.label(),
        jobs: w.jobs.len(),
        nodes: w.capacity,
        avg_completion_min: s.mean_response / 60.0,
        max_completion_min: max_completion as f64 / 60.0,
        avg_wait_min: s.mean_wait / 60.0,
        budget_w: p.budget_w,
        max_power_w: p.max_power_w,
        energy_kwh: p.energy_j / 3.6e6,
        decisions: d.decisions,
        resizes: d.resizes,
        unproven: d.unproven,
        max_decision_s: p.max_decision_wall_s,
        sim_wall_s: wall,
        mean_busy_nodes: {
            let tl = &p.timeline;
            let area: f64 = tl.windows(2).map(|x| (x[1].t - x[0].t) as f64 * x[0].busy_nodes as f64).sum();
            let first = w.jobs.first().map_or(0, |j| j.submit);
            area / (tl.last().map_or(first, |x| x.t) - first).max(1) as f64
        },
        start_nodes: p.start_nodes.clone(),
    }
}

/// The two-sided 95% quantile of Student's t with `df` degrees of freedom
/// (standard tables; 1.96 beyond 30).
fn t95(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    if df == 0 {
        f64::NAN
    } else {
        T.get(df - 1).copied().unwrap_or(1.96)
    }
}

/// Mean and half-width of the 95% interval (t distribution; NaN width for one value).
pub fn mean_ci(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 {
        return (mean, f64::NAN);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, t95(xs.len() - 1) * (var / n).sqrt())
}

/// "3.42× ± 0.10" (a ratio's mean and 95% half-width).
fn ratio_cell(xs: &[f64]) -> String {
    let (m, h) = mean_ci(xs);
    if h.is_nan() {
        format!("{m:.2}×")
    } else {
        format!("{m:.2}× ± {h:.2}")
    }
}

/// Minutes' mean and 95% half-width.
fn minutes_cell(xs: &[f64]) -> String {
    let (m, h) = mean_ci(xs);
    if h.is_nan() {
        format!("{m:.1}")
    } else {
        format!("{m:.1} ± {h:.1}")
    }
}

/// One run of an experiment: a workload (by key) and a scheme.
#[derive(Clone, Debug)]
struct Job<K> {
    key: K,
    scheme: Scheme,
}

/// Run every scheme on every workload; [`Scheme::EasySized`] runs second, on the
/// sizes its `sized_from` scheme started the same workload's jobs at.
fn run_all<K: Clone + Ord + Send + Sync + std::fmt::Debug>(
    workloads: &BTreeMap<K, Workload>,
    schemes: &[Scheme],
    sized_from: Option<Sizes>,
    k: Knobs,
    threads: usize,
    what: &str,
) -> Result<BTreeMap<(K, String), RunOut>> {
    let first: Vec<Job<K>> = workloads.keys().flat_map(|key| schemes.iter().filter(|s| **s != Scheme::EasySized).map(move |&scheme| Job { key: key.clone(), scheme })).collect();
    // the slowest first: PARM before the queue policies
    let mut first = first;
    first.sort_by_key(|j| !matches!(j.scheme, Scheme::Optimizer { power: true, .. }));
    let outs = parallel(&first, threads, what, |j| run(&workloads[&j.key], j.scheme, None, k));
    let mut done: BTreeMap<(K, String), RunOut> = BTreeMap::new();
    for (j, o) in first.iter().zip(outs) {
        anyhow::ensure!(o.max_power_w <= o.budget_w * (1.0 + 1e-9), "{:?} {}: power {} W over the budget {} W", j.key, o.scheme, o.max_power_w, o.budget_w);
        done.insert((j.key.clone(), j.scheme.label()), o);
    }
    if schemes.contains(&Scheme::EasySized) {
        let from = sized_from.expect("EASY sized needs the sizes it runs the jobs at");
        let second: Vec<Job<K>> = workloads.keys().map(|key| Job { key: key.clone(), scheme: Scheme::EasySized }).collect();
        let outs = parallel(&second, threads, what, |j| {
            let w = &workloads[&j.key];
            let sizes: Vec<u32> = match from {
                Sizes::Like(s) => done[&(j.key.clone(), s.label())].start_nodes.clone(),
                Sizes::Largest => w.power_jobs.iter().map(|p| p.n_max).collect(),
            };
            run(w, j.scheme, Some(&sizes), k)
        });
        for (j, o) in second.iter().zip(outs) {
            done.insert((j.key.clone(), j.scheme.label()), o);
        }
    }
    Ok(done)
}

/// The sizes [`Scheme::EasySized`] runs the jobs at.
#[derive(Clone, Copy, Debug)]
enum Sizes {
    /// The sizes this scheme started the same jobs at.
    Like(Scheme),
    /// Every job at its largest size, n_max.
    Largest,
}

fn threads(t: Option<usize>) -> usize {
    t.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |p| p.get())).max(1)
}

/// `tessera experiment parm-attribution`.
pub fn attribution(a: crate::cli::ParmAttributionArgs) -> Result<()> {
    let trace = trace_or_shared(&a.trace, crate::power_cmd::THETA_TRACE)?;
    let (cluster_label, cluster) = cluster_or_embedded(&a.cluster, crate::power_cmd::THETA_PATH, crate::power_cmd::THETA)?;
    let info = cluster.power_machine().map_err(anyhow::Error::msg).with_context(|| cluster_label.clone())?;
    anyhow::ensure!(a.seeds >= 2, "--seeds {}: an interval needs at least 2 seeds", a.seeds);
    anyhow::ensure!(a.alpha.is_finite() && a.alpha >= 0.0, "--alpha {}: expected a number >= 0", a.alpha);
    let variants: Vec<ParmVariant> = a.variants.iter().map(|v| v.parse().map_err(anyhow::Error::msg)).collect::<Result<_>>()?;
    let naive_cap = a.naive_cap.unwrap_or(info.machine.cap_levels_w[0]);
    anyhow::ensure!(naive_cap > 0.0 && naive_cap <= info.cpu_max_w, "--naive-cap {naive_cap}: expected watts in (0, {}]", info.cpu_max_w);
    let k = Knobs { solver: crate::power_cmd::solver(&a.solver, 20_000, None)?, amortize_resizes: false, charge_solve_time: !a.no_solve_time, expand_boots: true };
    let (_, records, _) = tessera_workload::swf::SwfReader::read_file(&trace, false)?;
    let (starts, sets) = crate::power_cmd::sets(&records, &a.set_starts, a.jobs)?;
    let threads = threads(a.threads);
    let t0 = std::time::Instant::now();

    // every scheme, both rules, on every (set, γ, seed)
    let opt = |variant, rule, power| Scheme::Optimizer { variant, alpha: a.alpha, rule, power };
    let mut schemes = vec![Scheme::Easy { exact: false }, Scheme::Easy { exact: true }, Scheme::EasySized, Scheme::Naive(naive_cap)];
    for rule in [DecisionRule::Paper, DecisionRule::StartsFirst] {
        for power in [false, true] {
            schemes.extend(variants.iter().map(|&v| opt(v, rule, power)));
        }
    }
    let sized_from = opt(ParmVariant::NoSE, DecisionRule::Paper, false);
    if !variants.contains(&ParmVariant::NoSE) {
        schemes.push(sized_from);
    }
    let seeds: Vec<u64> = (1..=a.seeds).collect();
    let mut workloads = BTreeMap::new();
    for (set, recs) in sets.iter().enumerate() {
        for &gamma in &a.gammas {
            let scaled = crate::power_cmd::scale(recs, gamma, set, &trace)?;
            for &seed in &seeds {
                let rule = PowerRule { seed, ..PowerRule::default() };
                let w = base_workload(&scaled, &info, &cluster.name, rule);
                w.check_time_range(&format!("set {} at γ = {gamma}", set + 1))?;
                workloads.insert((set, gamma.to_bits(), seed), w);
            }
        }
    }
    let done = run_all(&workloads, &schemes, Some(Sizes::Like(sized_from)), k, threads, "attribution runs")?;
    let get = |set: usize, gamma: f64, seed: u64, s: Scheme| &done[&((set, gamma.to_bits(), seed), s.label())];
    // the speedup of `s` over `over`, per seed
    let ratios = |set: usize, gamma: f64, over: Scheme, s: Scheme| -> Vec<f64> { seeds.iter().map(|&seed| get(set, gamma, seed, over).avg_completion_min / get(set, gamma, seed, s).avg_completion_min).collect() };

    // the sweep over the invented job parameters (A, σ), set 1 at --sweep-gamma
    let ranges = |flag: &str, v: &[String], min: f64, max: f64, closed: bool| -> Result<Vec<(f64, f64)>> { v.iter().map(|t| crate::power_cmd::range(flag, t, min, max, closed, "0.5,2")).collect() };
    let par = ranges("--sweep-parallelism", &a.sweep_parallelism, 0.0, 1e6, false)?;
    let sig = ranges("--sweep-sigma", &a.sweep_sigma, 0.0, 1.0, true)?;
    let sweep_seeds: Vec<u64> = (1..=a.sweep_seeds).collect();
    let sweep_schemes: Vec<Scheme> = vec![Scheme::Easy { exact: false }, opt(ParmVariant::NoSE, DecisionRule::Paper, false), opt(ParmVariant::NoSE, DecisionRule::Paper, true), opt(ParmVariant::NoSE, DecisionRule::StartsFirst, false), opt(ParmVariant::NoSE, DecisionRule::StartsFirst, true)];
    let mut sweep_w = BTreeMap::new();
    if !par.is_empty() && !sig.is_empty() && a.sweep_seeds > 0 {
        let scaled = crate::power_cmd::scale(sets[0], a.sweep_gamma, 0, &trace)?;
        for (pi, &p) in par.iter().enumerate() {
            for (si, &s) in sig.iter().enumerate() {
                for &seed in &sweep_seeds {
                    let rule = PowerRule { seed, parallelism: p, sigma: s, ..PowerRule::default() };
                    sweep_w.insert((pi, si, seed), base_workload(&scaled, &info, &cluster.name, rule));
                }
            }
        }
    }
    let sweep = run_all(&sweep_w, &sweep_schemes, None, k, threads, "sweep runs")?;
    let wall = t0.elapsed().as_secs_f64();

    if a.format == crate::cli::Format::Json {
        let rows: Vec<serde_json::Value> = done
            .iter()
            .map(|(((set, g, seed), _), o)| serde_json::json!({"set": set + 1, "gamma": f64::from_bits(*g), "seed": seed, "run": o}))
            .chain(sweep.iter().map(|(((pi, si, seed), _), o)| serde_json::json!({"sweep": {"parallelism": par[*pi], "sigma": sig[*si]}, "set": 1, "gamma": a.sweep_gamma, "seed": seed, "run": o})))
            .collect();
        outln!("{}", serde_json::to_string_pretty(&rows)?)?;
        return Ok(());
    }
    let base = Scheme::Easy { exact: false };
    let n_un = unconstrained(&info).machine.nodes;
    outln!("trace: {}  ({} jobs; sets of {} jobs starting at {:?})", trace.display(), records.len(), a.jobs, starts)?;
    outln!("cluster: {cluster_label}: {} nodes, budget {:.0} W, caps {:?} W; at full power the budget powers {n_un} nodes", info.machine.nodes, info.machine.budget_w, info.machine.cap_levels_w)?;
    outln!(
        "α = {}; power-profile seeds 1..={}; solve time {}; {} simulations in {wall:.0} s on {threads} thread(s)",
        a.alpha,
        a.seeds,
        if k.charge_solve_time { "added to completion times" } else { "not charged" },
        done.len() + sweep.len()
    )?;
    outln!()?;
    outln!("Speedup in average completion time over EASY with user estimates (mean over seeds ± 95% interval), paper's decision rule:")?;
    outln!()?;
    let mut head = vec!["set".to_string(), "γ".into(), "EASY (min)".into(), "EASY exact".into(), "EASY sized".into(), format!("naive {naive_cap} W")];
    head.extend(variants.iter().map(|v| format!("optimizer {v}")));
    head.extend(variants.iter().map(|v| format!("PARM {v}")));
    let mut t = Table::new(&[] as &[&str]);
    t.header = head;
    for set in 0..sets.len() {
        for &gamma in &a.gammas {
            let mins: Vec<f64> = seeds.iter().map(|&s| get(set, gamma, s, base).avg_completion_min).collect();
            let mut row = vec![format!("{} ({})", set + 1, starts[set]), gamma.to_string(), minutes_cell(&mins)];
            for s in [Scheme::Easy { exact: true }, Scheme::EasySized, Scheme::Naive(naive_cap)] {
                row.push(ratio_cell(&ratios(set, gamma, base, s)));
            }
            for power in [false, true] {
                row.extend(variants.iter().map(|&v| ratio_cell(&ratios(set, gamma, base, opt(v, DecisionRule::Paper, power)))));
            }
            t.row(row);
        }
    }
    out!("{}", t.markdown())?;
    outln!()?;
    outln!("The same with Tessera's starts-first rule:")?;
    outln!()?;
    let mut t = Table::new(&["set", "γ"]);
    for power in [false, true] {
        t.header.extend(variants.iter().map(|v| format!("{} {v}", if power { "PARM" } else { "optimizer" })));
    }
    for set in 0..sets.len() {
        for &gamma in &a.gammas {
            let mut row = vec![format!("{} ({})", set + 1, starts[set]), gamma.to_string()];
            for power in [false, true] {
                row.extend(variants.iter().map(|&v| ratio_cell(&ratios(set, gamma, base, opt(v, DecisionRule::StartsFirst, power)))));
            }
            t.row(row);
        }
    }
    out!("{}", t.markdown())?;
    outln!()?;
    outln!("What power awareness itself adds: PARM's speedup over the same optimizer without power (> 1: power awareness helps):")?;
    outln!()?;
    let mut t = Table::new(&["set", "γ"]);
    for rule in [DecisionRule::Paper, DecisionRule::StartsFirst] {
        t.header.extend(variants.iter().map(|v| format!("{rule} {v}")));
    }
    let mut worst: BTreeMap<String, f64> = BTreeMap::new();
    for set in 0..sets.len() {
        for &gamma in &a.gammas {
            let mut row = vec![format!("{} ({})", set + 1, starts[set]), gamma.to_string()];
            for rule in [DecisionRule::Paper, DecisionRule::StartsFirst] {
                for &v in &variants {
                    let r = ratios(set, gamma, opt(v, rule, false), opt(v, rule, true));
                    let m = mean_ci(&r).0;
                    let e = worst.entry(format!("{rule} {v}")).or_insert(f64::INFINITY);
                    *e = e.min(m);
                    row.push(ratio_cell(&r));
                }
            }
            t.row(row);
        }
    }
    out!("{}", t.markdown())?;
    outln!()?;
    outln!("Lowest mean per column: {}", worst.iter().map(|(k, v)| format!("{k} {v:.2}×")).collect::<Vec<_>>().join(", "))?;
    if !sweep.is_empty() {
        outln!()?;
        outln!("Sensitivity to the invented job parameters (set 1, γ = {}, noSE, seeds 1..={}): A = n_max · U[range], σ ~ U[range]; speedups over EASY and power awareness's part:", a.sweep_gamma, a.sweep_seeds)?;
        outln!()?;
        let mut t = Table::new(&["A / n_max", "σ", "optimizer", "PARM (paper)", "power part (paper)", "optimizer (starts-first)", "PARM (starts-first)", "power part (starts-first)"]);
        for (pi, p) in par.iter().enumerate() {
            for (si, s) in sig.iter().enumerate() {
                let r = |over: Scheme, x: Scheme| -> Vec<f64> { sweep_seeds.iter().map(|&seed| sweep[&((pi, si, seed), over.label())].avg_completion_min / sweep[&((pi, si, seed), x.label())].avg_completion_min).collect() };
                let mut row = vec![format!("[{}, {}]", p.0, p.1), format!("[{}, {}]", s.0, s.1)];
                for rule in [DecisionRule::Paper, DecisionRule::StartsFirst] {
                    let (o, pa) = (opt(ParmVariant::NoSE, rule, false), opt(ParmVariant::NoSE, rule, true));
                    row.push(ratio_cell(&r(base, o)));
                    row.push(ratio_cell(&r(base, pa)));
                    row.push(ratio_cell(&r(o, pa)));
                }
                t.row(row);
            }
        }
        out!("{}", t.markdown())?;
    }
    let worst_power = done.values().chain(sweep.values()).map(|r| r.max_power_w / r.budget_w).fold(0.0, f64::max);
    let unproven: u64 = done.values().chain(sweep.values()).map(|r| r.unproven).sum();
    let decisions: u64 = done.values().chain(sweep.values()).map(|r| r.decisions).sum();
    outln!()?;
    outln!("Every run stayed within its budget (highest draw {:.2}% of it); {unproven} of {decisions} decisions not proven within 0.1% of the optimum.", 100.0 * worst_power)?;
    Ok(())
}

/// A trace set prepared for PARM on `info` with the power rule `rule`.
fn base_workload(recs: &[tessera_workload::swf::SwfRecord], info: &PowerSetupInfo, name: &str, rule: PowerRule) -> Workload {
    let setup = PowerSetup { name: name.to_string(), info: info.clone(), hardware: Default::default(), rule, mode: PowerMode::Parm(ParmConfig::new(ParmVariant::WSE)), charge_solve_time: false };
    tessera_sim::prepare_power(recs, Arc::new(setup))
}

/// The paper's testbed (§VI-B, VI-D, VI-E): 38 nodes, a 3,300 W budget, CPU caps
/// {30, 32, 34, 39, 45, 55} W, memory capped at 18 W, 38 W base, 60 W CPU maximum.
pub fn testbed_machine() -> PowerSetupInfo {
    PowerSetupInfo {
        machine: PowerMachine { nodes: 38, budget_w: 3300.0, node_base_w: 18.0 + 38.0, idle_w: 0.0, cap_levels_w: vec![30.0, 32.0, 34.0, 39.0, 45.0, 55.0] },
        cpu_max_w: 60.0,
        cores_per_node: 1,
    }
}

/// The paper's two job mixes (§VI-E): SetH as stated (3 LeanMD, 3 Wave2D, 2
/// Lulesh, 1 Jacobi2D, 1 AMR: mean β 0.269); SetL's mix is not listed, only its
/// mean β of 0.1: 7 Jacobi2D and 3 Wave2D (mean β 0.104) is the ten-job mix of
/// the five applications closest to it.
pub fn testbed_mix(set: &str) -> Option<Vec<&'static str>> {
    let counts: &[(&str, usize)] = match set {
        "SetL" => &[("Jacobi2D", 7), ("Wave2D", 3)],
        "SetH" => &[("LeanMD", 3), ("Wave2D", 3), ("Lulesh", 2), ("Jacobi2D", 1), ("AMR", 1)],
        _ => return None,
    };
    Some(counts.iter().flat_map(|&(n, c)| std::iter::repeat_n(n, c)).collect())
}

/// How the testbed's jobs are drawn (docs/power.md, "The paper's 38-node experiment").
#[derive(Clone, Copy, Debug)]
pub struct TestbedRule {
    /// Runtime at the baseline's configuration (n_min nodes, full power): U[lo, hi] s.
    pub runtime_s: (f64, f64),
    /// Mean gap between arrivals (s), exponential.
    pub mean_gap_s: f64,
    /// n_min ~ U{lo..=hi}.
    pub n_min: (u32, u32),
    /// n_max = min(the baseline's nodes, round(n_min · this)).
    pub max_over_min: f64,
}

impl Default for TestbedRule {
    fn default() -> Self {
        TestbedRule { runtime_s: (600.0, 6600.0), mean_gap_s: 900.0, n_min: (4, 12), max_over_min: 3.0 }
    }
}

/// One draw of a testbed job set: the mix's jobs in a random order, arrivals,
/// sizes, runtimes and Downey parameters from `seed` (A and σ as the trace rule
/// draws them).
pub fn testbed_workload(mix: &[&str], seed: u64, tr: TestbedRule, info: &PowerSetupInfo) -> Workload {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut order: Vec<&str> = mix.to_vec();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.gen_range(0..=i));
    }
    let pr = PowerRule::default();
    let mut t = 0.0f64;
    let mut jobs = Vec::new();
    let mut power_jobs = Vec::new();
    for (k, name) in order.iter().enumerate() {
        if k > 0 {
            t += -tr.mean_gap_s * (1.0 - rng.gen::<f64>()).ln();
        }
        let app = AppProfile { c: pr.package_base_w, ..*PRESETS.iter().find(|p| p.name == *name).expect("a preset") };
        let n_min = rng.gen_range(tr.n_min.0..=tr.n_min.1);
        // at most the baseline's machine: the paper's SLURM runs every job on the
        // nodes PARM may run it on at most, on the 28 nodes the budget powers
        let n_max = ((n_min as f64 * tr.max_over_min).round() as u32).clamp(n_min, unconstrained(info).machine.nodes);
        let a = n_max as f64 * rng.gen_range(pr.parallelism.0..pr.parallelism.1);
        let sigma = rng.gen_range(pr.sigma.0..pr.sigma.1);
        let runtime = rng.gen_range(tr.runtime_s.0..tr.runtime_s.1).round();
        let scaling = Downey { a: a.max(1.0), sigma };
        let t1 = runtime / (scaling.fraction(n_min as f64) * app.slowdown(info.cpu_max_w));
        power_jobs.push(PowerJob { app, scaling, t1, n_min, n_max, mem_mb: n_max as f64 * pr.mem_per_node_mb });
        jobs.push(TraceJob { id: k as i64 + 1, submit: t.round() as i64, procs: n_max, estimate: runtime as i64, runtime: runtime as i64, mem_per_proc_mb: 0, queue: -1, preceding: -1, think: -1 });
    }
    let setup = PowerSetup { name: "parm-testbed".into(), info: info.clone(), hardware: Default::default(), rule: pr, mode: PowerMode::Parm(ParmConfig::new(ParmVariant::WSE)), charge_solve_time: false };
    Workload { record_index: (0..jobs.len() as u32).collect(), jobs, skipped: BTreeMap::new(), capacity: info.machine.nodes, machine: Machine::Power(Arc::new(setup)), power_jobs }
}

/// `tessera experiment parm-testbed`.
pub fn testbed(a: crate::cli::ParmTestbedArgs) -> Result<()> {
    let info = testbed_machine();
    anyhow::ensure!(a.seeds >= 2, "--seeds {}: an interval needs at least 2 seeds", a.seeds);
    anyhow::ensure!(a.alpha.is_finite() && a.alpha >= 0.0, "--alpha {}: expected a number >= 0", a.alpha);
    let rule: DecisionRule = a.parm_rule.parse().map_err(anyhow::Error::msg).context("--parm-rule")?;
    // the paper's testbed expanded jobs with Charm++'s malleability, which keeps
    // processes on every node a job may use: no boot (§VII-A)
    let k = Knobs { solver: Solver::Structured, amortize_resizes: false, charge_solve_time: !a.no_solve_time, expand_boots: a.expand_boots };
    anyhow::ensure!(a.n_max_factor.is_finite() && a.n_max_factor >= 1.0, "--n-max-factor {}: expected a number >= 1", a.n_max_factor);
    let tr = TestbedRule { max_over_min: a.n_max_factor, ..TestbedRule::default() };
    let sets = ["SetL", "SetH"];
    let seeds: Vec<u64> = (1..=a.seeds).collect();
    let mut workloads = BTreeMap::new();
    for (i, set) in sets.iter().enumerate() {
        let mix = testbed_mix(set).expect("a known set");
        for &seed in &seeds {
            // the same draw for both sets but for the applications
            workloads.insert((i, seed), testbed_workload(&mix, seed, tr, &info));
        }
    }
    // the paper's baseline: SLURM (FIFO + backfilling) on the 28 nodes the budget
    // powers at full power, every job at its minimum size (noMM's, which runs
    // every job on n_min nodes) or at its maximum
    let variants = [ParmVariant::NoMM, ParmVariant::NoSE, ParmVariant::WSE];
    let mut schemes = vec![Scheme::EasySized];
    schemes.extend(variants.iter().map(|&variant| Scheme::Optimizer { variant, alpha: a.alpha, rule, power: true }));
    let sizes = match a.baseline_size {
        crate::cli::BaselineSize::Min => Sizes::Like(schemes[1]),
        crate::cli::BaselineSize::Max => Sizes::Largest,
    };
    let done = run_all(&workloads, &schemes, Some(sizes), k, threads(a.threads), "testbed runs")?;
    let get = |i: usize, seed: u64, s: Scheme| &done[&((i, seed), s.label())];
    for ((i, seed), w) in &workloads {
        anyhow::ensure!(w.power_jobs.iter().zip(&get(*i, *seed, schemes[1]).start_nodes).all(|(p, &n)| p.n_min == n), "{}: noMM ran a job on more than its minimum", sets[*i]);
    }
    if a.format == crate::cli::Format::Json {
        let rows: Vec<serde_json::Value> = done.iter().map(|(((i, seed), _), o)| serde_json::json!({"set": sets[*i], "seed": seed, "run": o})).collect();
        outln!("{}", serde_json::to_string_pretty(&rows)?)?;
        return Ok(());
    }
    let m = &info.machine;
    outln!(
        "The PARM paper's testbed in simulation: {} nodes, budget {:.0} W, CPU caps {:?} W (+ {} W memory and base per busy node); the baseline (EASY, jobs at their {} sizes, full power, exact runtimes) on {} nodes",
        m.nodes,
        m.budget_w,
        m.cap_levels_w,
        m.node_base_w,
        if a.baseline_size == crate::cli::BaselineSize::Max { "maximum" } else { "minimum" },
        unconstrained(&info).machine.nodes
    )?;
    outln!(
        "10 jobs per set; runtimes at n_min nodes and full power U[{}, {}] s, arrivals {} s apart on average, n_min U{{{}..{}}}, n_max = min({}, round({} n_min)); α = {}, rule {rule}; solve time {}; expanding jobs {}; seeds 1..={}",
        tr.runtime_s.0,
        tr.runtime_s.1,
        tr.mean_gap_s,
        tr.n_min.0,
        tr.n_min.1,
        unconstrained(&info).machine.nodes,
        tr.max_over_min,
        a.alpha,
        if k.charge_solve_time { "added to completion times" } else { "not charged" },
        if k.expand_boots { "boot their new nodes (Eq. 21)" } else { "boot nothing (Charm++)" },
        a.seeds
    )?;
    outln!()?;
    let mut t = Table::new(&["set", "baseline (min)", "noMM (min)", "noSE (min)", "wSE (min)", "noMM speedup", "noSE speedup", "wSE speedup", "noSE over noMM", "wSE over noMM", "wSE mean nodes", "noSE mean nodes"]);
    for (i, set) in sets.iter().enumerate() {
        let col = |s: Scheme| -> Vec<f64> { seeds.iter().map(|&seed| get(i, seed, s).avg_completion_min).collect() };
        let ratio = |over: Scheme, s: Scheme| -> Vec<f64> { seeds.iter().map(|&seed| get(i, seed, over).avg_completion_min / get(i, seed, s).avg_completion_min).collect() };
        // improvement over noMM as the paper gives it: 1 - t / t_noMM
        let better = |s: Scheme| -> String {
            let xs: Vec<f64> = seeds.iter().map(|&seed| 100.0 * (1.0 - get(i, seed, s).avg_completion_min / get(i, seed, schemes[1]).avg_completion_min)).collect();
            let (mm, h) = mean_ci(&xs);
            format!("{mm:.1}% ± {h:.1}")
        };
        let nodes = |s: Scheme| -> Vec<f64> { seeds.iter().map(|&seed| get(i, seed, s).mean_busy_nodes).collect() };
        t.row(vec![
            set.to_string(),
            minutes_cell(&col(Scheme::EasySized)),
            minutes_cell(&col(schemes[1])),
            minutes_cell(&col(schemes[2])),
            minutes_cell(&col(schemes[3])),
            ratio_cell(&ratio(Scheme::EasySized, schemes[1])),
            ratio_cell(&ratio(Scheme::EasySized, schemes[2])),
            ratio_cell(&ratio(Scheme::EasySized, schemes[3])),
            better(schemes[2]),
            better(schemes[3]),
            minutes_cell(&nodes(schemes[3])),
            minutes_cell(&nodes(schemes[2])),
        ]);
    }
    out!("{}", t.markdown())?;
    let order: Vec<String> = sets
        .iter()
        .enumerate()
        .map(|(i, set)| {
            let mean = |s: Scheme| seeds.iter().map(|&seed| get(i, seed, s).avg_completion_min).sum::<f64>() / seeds.len() as f64;
            let (nomm, nose, wse) = (mean(schemes[1]), mean(schemes[2]), mean(schemes[3]));
            format!("{set}: noMM {nomm:.1} {} noSE {nose:.1} {} wSE {wse:.1} min", if nose < nomm { ">" } else { "<=" }, if wse < nose { ">" } else { "<=" })
        })
        .collect();
    outln!()?;
    outln!("Average completion times (lower is better): {}", order.join("; "))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_of_known_values() {
        // mean 2, sd 1, n 4: half-width t(3) · 1 / 2
        let (m, h) = mean_ci(&[1.0, 2.0, 2.0, 3.0]);
        assert_eq!(m, 2.0);
        let sd = (2.0f64 / 3.0).sqrt();
        assert!((h - 3.182 * sd / 2.0).abs() < 1e-12);
        assert!(mean_ci(&[5.0]).1.is_nan());
    }

    #[test]
    fn testbed_mixes_have_the_papers_mean_beta() {
        let beta = |set: &str| {
            let mix = testbed_mix(set).unwrap();
            mix.iter().map(|n| PRESETS.iter().find(|p| p.name == *n).unwrap().beta).sum::<f64>() / mix.len() as f64
        };
        assert!((beta("SetH") - 0.269).abs() < 1e-9, "SetH as the paper lists it");
        assert!((beta("SetL") - 0.104).abs() < 1e-9);
        assert_eq!(testbed_mix("SetH").unwrap().len(), 10);
        assert!(testbed_mix("SetX").is_none());
    }

    #[test]
    fn testbed_machine_is_the_papers() {
        let m = testbed_machine();
        // 3300 / 116 = 28.4: the power-unaware baseline's 28 nodes
        assert_eq!(unconstrained(&m).machine.nodes, 28);
        // every node at the lowest cap fits the budget: 38 × 86 = 3268 W
        assert!(38.0 * (30.0 + m.machine.node_base_w) <= m.machine.budget_w);
    }
}
