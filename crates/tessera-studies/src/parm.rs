//! What the PARM experiments share: the Theta trace and cluster they default
//! to, the sets of jobs they take from a trace, the schemes they compare (the
//! paper's SLURM baseline, naive overprovisioning, the optimizer with and
//! without power) run on the same jobs, and means with 95% intervals over
//! seeds. The experiments themselves: [`crate::parm_paper`] (the paper's
//! large-scale experiment), [`crate::attribution`] (what PARM's speedups are
//! made of) and [`crate::testbed`] (the paper's 38-node testbed); docs/power.md.

use crate::parallel::parallel;
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use tessera_core::power::{DecisionRule, ParmConfig, ParmVariant, PowerMachine, Solver};
use tessera_core::{PolicyKind, PowerSetupInfo};
use tessera_sim::{Machine, PowerMode, PowerRule, PowerSetup, Workload};

/// The experiment's and the bench's default cluster, embedded, and its trace.
pub const THETA: &str = include_str!("../../../examples/clusters/theta-overprovisioned.toml");
pub const THETA_PATH: &str = "examples/clusters/theta-overprovisioned.toml";
pub const THETA_TRACE: &str = "ALCF-Theta-2022-cqsimplus.swf.gz";

/// The experiment's sets: `jobs` consecutive records from each start (1-based;
/// default the paper's starts 1, 10500 and 27000 of Intrepid's 68,936 jobs,
/// scaled to the trace's length).
pub fn sets<'r>(records: &'r [tessera_workload::swf::SwfRecord], set_starts: &[usize], jobs: usize) -> Result<(Vec<usize>, Vec<&'r [tessera_workload::swf::SwfRecord]>)> {
    let n = records.len();
    let starts: Vec<usize> = if set_starts.is_empty() {
        [0.0, 10499.0, 26999.0].iter().map(|f: &f64| (f * n as f64 / 68936.0).round() as usize + 1).collect()
    } else {
        set_starts.to_vec()
    };
    for &s in &starts {
        anyhow::ensure!(s >= 1 && s <= n, "--set-start {s}: the trace has {n} jobs");
    }
    let sets = starts.iter().map(|&s| &records[s - 1..(s - 1).saturating_add(jobs).min(n)]).collect();
    Ok((starts, sets))
}

/// A set's records with arrival times scaled by γ.
pub fn scale(recs: &[tessera_workload::swf::SwfRecord], gamma: f64, set: usize, trace: &Path) -> Result<Vec<tessera_workload::swf::SwfRecord>> {
    let mut recs = recs.to_vec();
    tessera_workload::transform::scale_arrivals(&mut recs, gamma).with_context(|| format!("--gamma {gamma:?} on set {} of {}", set + 1, trace.display()))?;
    Ok(recs)
}


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
pub fn unconstrained(info: &PowerSetupInfo) -> PowerSetupInfo {
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
pub fn ratio_cell(xs: &[f64]) -> String {
    let (m, h) = mean_ci(xs);
    if h.is_nan() {
        format!("{m:.2}×")
    } else {
        format!("{m:.2}× ± {h:.2}")
    }
}

/// Minutes' mean and 95% half-width.
pub fn minutes_cell(xs: &[f64]) -> String {
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
pub fn run_all<K: Clone + Ord + Send + Sync + std::fmt::Debug>(
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
pub enum Sizes {
    /// The sizes this scheme started the same jobs at.
    Like(Scheme),
    /// Every job at its largest size, n_max.
    Largest,
}

pub fn threads(t: Option<usize>) -> usize {
    t.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |p| p.get())).max(1)
}

/// A trace set prepared for PARM on `info` with the power rule `rule`.
pub fn base_workload(recs: &[tessera_workload::swf::SwfRecord], info: &PowerSetupInfo, name: &str, rule: PowerRule) -> Workload {
    let setup = PowerSetup { name: name.to_string(), info: info.clone(), hardware: Default::default(), rule, mode: PowerMode::Parm(ParmConfig::new(ParmVariant::WSE)), charge_solve_time: false };
    tessera_sim::prepare_power(recs, Arc::new(setup))
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

}

/// The trace and the power-aware cluster of a PARM experiment: those given,
/// else the Theta trace and the embedded overprovisioned Theta (the cluster's
/// label, the cluster, its power machine).
pub fn theta_or_given(
    trace: &Option<std::path::PathBuf>,
    cluster: &Option<std::path::PathBuf>,
) -> anyhow::Result<(std::path::PathBuf, String, tessera_core::Cluster, tessera_core::PowerSetupInfo)> {
    use anyhow::Context;
    let trace = crate::run::trace_or_shared(trace, THETA_TRACE)?;
    let (label, cluster) = crate::run::cluster_or_embedded(cluster, THETA_PATH, THETA)?;
    let info = cluster.power_machine().map_err(anyhow::Error::msg).with_context(|| label.clone())?;
    Ok((trace, label, cluster, info))
}
