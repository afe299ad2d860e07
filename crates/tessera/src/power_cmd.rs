//! Power-aware runs from the command line: the machine, the rule for trace jobs
//! and the scheduler, from a cluster file and the `--parm-*` flags.

use crate::cli::PowerArgs;
use anyhow::{bail, Context, Result};
use std::io::Write;
use std::path::Path;
use tessera_core::power::{ParmConfig, ParmVariant, Solver};
use tessera_core::{Cluster, PolicyKind};
use tessera_sim::{PowerMode, PowerOutcome, PowerRule, PowerSetup};

/// The solver a name stands for.
pub fn solver(name: &str, node_limit: u64) -> Result<Solver> {
    match name.to_ascii_lowercase().as_str() {
        "structured" => Ok(Solver::Structured),
        "milp" => Ok(Solver::Milp { node_limit }),
        _ => bail!("--solver {name}: expected structured or milp"),
    }
}

/// A `lo,hi` range of fractions.
fn range(flag: &str, text: &str) -> Result<(f64, f64)> {
    let parsed = text.split_once(',').and_then(|(a, b)| Some((a.trim().parse::<f64>().ok()?, b.trim().parse::<f64>().ok()?)));
    match parsed {
        Some((lo, hi)) if lo > 0.0 && lo <= hi && hi <= 1.0 => Ok((lo, hi)),
        _ => bail!("{flag} {text}: expected lo,hi with 0 < lo <= hi <= 1, e.g. 0.2,0.6"),
    }
}

/// The power-aware setup of a run: None when the cluster has no power budget
/// (then no power flag may be given).
pub fn setup(cluster: &Cluster, policy: PolicyKind, a: &PowerArgs) -> Result<Option<PowerSetup>> {
    let parm_flags = a.parm_variant.is_some() || a.solver.is_some() || a.milp_node_limit.is_some() || a.alpha.is_some() || a.fse.is_some();
    if cluster.power_budget_w.is_none() {
        if policy == PolicyKind::Parm {
            bail!("policy parm needs a cluster file with power_budget_w and a power model (e.g. examples/clusters/theta-overprovisioned.toml); cluster `{}` has none", cluster.name);
        }
        if parm_flags || a.cap.is_some() || a.power_seed.is_some() || a.theta.is_some() || a.power_out.is_some() {
            bail!("power flags need a cluster file with power_budget_w; cluster `{}` has none", cluster.name);
        }
        return Ok(None);
    }
    let info = cluster.power_machine().map_err(anyhow::Error::msg).with_context(|| format!("cluster `{}`", cluster.name))?;
    let mut rule = PowerRule::default();
    if let Some(s) = a.power_seed {
        rule.seed = s;
    }
    if let Some(t) = &a.theta {
        rule.theta = range("--theta", t)?;
    }
    let mode = if policy == PolicyKind::Parm {
        if a.cap.is_some() {
            bail!("--cap fixes every CPU's cap for a queue policy; PARM chooses caps itself");
        }
        let variant: ParmVariant = a.parm_variant.as_deref().unwrap_or("wSE").parse().map_err(anyhow::Error::msg)?;
        let mut cfg = ParmConfig::new(variant);
        cfg.solver = solver(a.solver.as_deref().unwrap_or("structured"), a.milp_node_limit.unwrap_or(20_000))?;
        if let Some(al) = a.alpha {
            if !(al.is_finite() && al >= 0.0) {
                bail!("--alpha {al}: expected a number >= 0");
            }
            cfg.alpha = al;
        }
        if let Some(f) = a.fse {
            if f < 0 {
                bail!("--fse {f}: expected seconds >= 0");
            }
            cfg.fse = f;
        }
        PowerMode::Parm(cfg)
    } else {
        if parm_flags {
            bail!("--parm-variant, --solver, --milp-node-limit, --alpha and --fse apply to --policy parm only");
        }
        let cap_w = a.cap.unwrap_or(info.cpu_max_w);
        if !(cap_w > 0.0 && cap_w <= info.cpu_max_w) {
            bail!("--cap {cap_w}: expected watts in (0, {}] (the CPU's maximum)", info.cpu_max_w);
        }
        PowerMode::FixedCap { cap_w }
    };
    Ok(Some(PowerSetup { name: cluster.name.clone(), info, rule, mode }))
}

/// Write the power drawn over time as CSV.
pub fn write_power_csv(path: &Path, p: &PowerOutcome) -> Result<()> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?);
    writeln!(f, "time,power_w,budget_w,busy_nodes")?;
    for &(t, w, busy) in &p.timeline {
        writeln!(f, "{t},{w:.3},{:.3},{busy}", p.budget_w)?;
    }
    f.flush().with_context(|| format!("writing {}", path.display()))
}
