//! Power-aware runs: the machine, the rule for trace jobs and the scheduler,
//! from a cluster file and a run's [`PowerSpec`] (the `--parm-*` flags).

use crate::spec::PowerSpec;
use anyhow::{bail, Context, Result};
use std::io::Write;
use std::path::Path;
use tessera_core::power::{ParmConfig, Solver};
use tessera_core::{Cluster, PolicyKind};
use tessera_sim::{PowerMode, PowerOutcome, PowerRule, PowerSetup};

/// `--milp-time-limit` in milliseconds. The solver adds it to the clock, so it is
/// bounded (2^42 s, as simulated times are) rather than cast and saturated.
pub fn time_limit_ms(seconds: f64) -> Result<u64> {
    if !(seconds > 0.0 && seconds <= tessera_core::MAX_TIME as f64) {
        bail!("--milp-time-limit {seconds:?}: expected seconds > 0 and at most 2^42 = {}", tessera_core::MAX_TIME);
    }
    Ok((seconds * 1e3).ceil() as u64)
}

/// The solver a name stands for.
pub fn solver(name: &str, node_limit: u64, time_limit_s: Option<f64>) -> Result<Solver> {
    let time_limit_ms = time_limit_s.map(time_limit_ms).transpose()?;
    match name.to_ascii_lowercase().as_str() {
        "structured" if time_limit_ms.is_some() => bail!("--milp-time-limit applies to --solver milp only"),
        "structured" => Ok(Solver::Structured),
        "milp" => Ok(Solver::Milp { node_limit, time_limit_ms }),
        _ => bail!("--solver {name}: expected structured or milp"),
    }
}

/// A `lo,hi` range within (min, max] (or [min, max] when `closed`).
pub fn range(flag: &str, text: &str, min: f64, max: f64, closed: bool, example: &str) -> Result<(f64, f64)> {
    let parsed = text.split_once(',').and_then(|(a, b)| Some((a.trim().parse::<f64>().ok()?, b.trim().parse::<f64>().ok()?)));
    match parsed {
        Some((lo, hi)) if (lo > min || (closed && lo == min)) && lo <= hi && hi <= max => Ok((lo, hi)),
        _ => bail!("{flag} {text}: expected lo,hi with {min} {} lo <= hi <= {max}, e.g. {example}", if closed { "<=" } else { "<" }),
    }
}

/// PARM's own flags, given.
fn parm_flags(a: &PowerSpec) -> bool {
    a.parm_variant.is_some() || a.solver.is_some() || a.milp_node_limit.is_some() || a.milp_time_limit.is_some() || a.alpha.is_some() || a.fse.is_some() || a.amortize_resizes || a.parm_rule.is_some() || a.charge_solve_time
}

/// Any power flag, given (they apply to a power-budgeted cluster only).
pub fn any_power_flag(a: &PowerSpec) -> bool {
    parm_flags(a) || a.cap.is_some() || a.power_seed.is_some() || a.theta.is_some() || a.parallelism.is_some() || a.sigma.is_some() || a.package_base_w.is_some() || a.power_out.is_some() || a.budget_w.is_some()
}

/// The power-aware setup of a run: None when the cluster has no power budget
/// (then no power flag may be given).
pub fn setup(cluster: &Cluster, policy: PolicyKind, a: &PowerSpec) -> Result<Option<PowerSetup>> {
    let parm_flags = parm_flags(a);
    if cluster.power_budget_w.is_none() {
        if policy == PolicyKind::Parm {
            bail!("policy parm needs a cluster file with power_budget_w and a power model (e.g. examples/clusters/theta-overprovisioned.toml); cluster `{}` has none", cluster.name);
        }
        if any_power_flag(a) {
            bail!("power flags need a cluster file with power_budget_w; cluster `{}` has none", cluster.name);
        }
        return Ok(None);
    }
    let info = cluster.power_machine().map_err(anyhow::Error::msg).with_context(|| format!("cluster `{}`", cluster.name))?;
    // a budget that powers no node would skip every job as larger than the machine
    let lowest = info.machine.cap_levels_w.iter().copied().fold(f64::INFINITY, f64::min);
    // (PARM may use its lowest cap; a fixed-cap run its --cap, by default full power)
    let cap = if policy == PolicyKind::Parm { lowest } else { a.cap.unwrap_or(info.cpu_max_w) };
    let node_w = cap + info.machine.node_base_w;
    anyhow::ensure!(
        info.machine.budget_w >= node_w,
        "power budget {} W (cluster `{}`{}) cannot power one busy node: a node draws at least {node_w} W ({cap} W CPU cap + {} W memory and base)",
        info.machine.budget_w,
        cluster.name,
        if a.budget_w.is_some() { ", --budget-w" } else { "" },
        info.machine.node_base_w
    );
    // and the idle nodes draw theirs whatever runs (the reader checked the file's
    // own budget so; this is for --budget-w)
    cluster.check_power_budget(info.machine.budget_w).map_err(|m| {
        anyhow::anyhow!("power budget {} W (cluster `{}`{}): {m}", info.machine.budget_w, cluster.name, if a.budget_w.is_some() { ", --budget-w" } else { "" })
    })?;
    let mut rule = PowerRule::default();
    if let Some(s) = a.power_seed {
        rule.seed = s;
    }
    if let Some(t) = &a.theta {
        rule.theta = range("--theta", t, 0.0, 1.0, false, "0.2,0.6")?;
    }
    if let Some(t) = &a.parallelism {
        rule.parallelism = range("--parallelism", t, 0.0, 1e6, false, "0.5,2")?;
    }
    if let Some(t) = &a.sigma {
        rule.sigma = range("--sigma", t, 0.0, 1.0, true, "0,1")?;
    }
    if let Some(c) = a.package_base_w {
        anyhow::ensure!(c.is_finite() && (0.0..30.0).contains(&c), "--package-base-w {c}: expected watts in [0, 30) (below every application's p_l)");
        rule.package_base_w = c;
    }
    let mode = if policy == PolicyKind::Parm {
        if a.cap.is_some() {
            bail!("--cap fixes every CPU's cap for a queue policy; PARM chooses caps itself");
        }
        let mut cfg = ParmConfig::from_flags(a.parm_variant.as_deref(), a.parm_rule.as_deref(), a.alpha, a.fse).map_err(anyhow::Error::msg)?;
        cfg.solver = solver(a.solver.as_deref().unwrap_or("structured"), a.milp_node_limit.unwrap_or(20_000), a.milp_time_limit)?;
        cfg.amortize_resizes = a.amortize_resizes;
        PowerMode::Parm(cfg)
    } else {
        if parm_flags {
            bail!("--parm-variant, --parm-rule, --solver, --milp-node-limit, --milp-time-limit, --alpha, --fse, --amortize-resizes and --charge-solve-time apply to --policy parm only");
        }
        let cap_w = a.cap.unwrap_or(info.cpu_max_w);
        if !(cap_w > 0.0 && cap_w <= info.cpu_max_w) {
            bail!("--cap {cap_w}: expected watts in (0, {}] (the CPU's maximum)", info.cpu_max_w);
        }
        PowerMode::FixedCap { cap_w }
    };
    Ok(Some(PowerSetup { name: cluster.name.clone(), info, hardware: tessera_sim::PowerNodes::of(cluster), rule, mode, charge_solve_time: a.charge_solve_time }))
}

/// Write the power drawn over time as CSV.
pub fn write_power_csv(path: &Path, p: &PowerOutcome) -> Result<()> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?);
    writeln!(f, "time,power_w,budget_w,busy_nodes")?;
    for s in &p.timeline {
        writeln!(f, "{},{:.3},{:.3},{}", s.t, s.power_w, p.budget_w, s.busy_nodes)?;
    }
    f.flush().with_context(|| format!("writing {}", path.display()))
}

