//! What PARM's speedups are made of (`tessera experiment parm-attribution`):
//! every scheme on the same jobs (EASY with estimates, with exact runtimes and at
//! the optimizer's sizes, naive overprovisioning, the optimizer without power and
//! PARM, under both decision rules), over several seeds of the rule that invents
//! what a trace does not record, with 95% intervals; and a sweep over the
//! invented job parameters (docs/power.md).

use crate::parm::{theta_or_given, base_workload, mean_ci, minutes_cell, ratio_cell, run_all, threads, unconstrained, Scheme, Sizes, Knobs};
use anyhow::Result;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::PathBuf;
use tessera_core::power::{DecisionRule, ParmVariant};
use tessera_report::Table;
use tessera_sim::PowerRule;

/// `tessera experiment parm-attribution`'s settings (see its `--help`).
#[derive(Clone, Debug)]
pub struct Options {
    pub trace: Option<PathBuf>,
    pub cluster: Option<PathBuf>,
    pub jobs: usize,
    pub set_starts: Vec<usize>,
    pub gammas: Vec<f64>,
    pub seeds: u64,
    pub alpha: f64,
    pub variants: Vec<String>,
    pub naive_cap: Option<f64>,
    pub solver: String,
    pub no_solve_time: bool,
    pub sweep_parallelism: Vec<String>,
    pub sweep_sigma: Vec<String>,
    pub sweep_seeds: u64,
    pub sweep_gamma: f64,
    pub threads: Option<usize>,
}

/// Run the attribution; its report as Markdown tables, or as JSON (every run).
pub fn run(a: &Options, json: bool) -> Result<String> {
    let mut w = String::new();
    let (trace, cluster_label, cluster, info) = theta_or_given(&a.trace, &a.cluster)?;
    anyhow::ensure!(a.seeds >= 2, "--seeds {}: an interval needs at least 2 seeds", a.seeds);
    anyhow::ensure!(a.alpha.is_finite() && a.alpha >= 0.0, "--alpha {}: expected a number >= 0", a.alpha);
    let variants: Vec<ParmVariant> = a.variants.iter().map(|v| v.parse().map_err(anyhow::Error::msg)).collect::<Result<_>>()?;
    let naive_cap = a.naive_cap.unwrap_or(info.machine.cap_levels_w[0]);
    anyhow::ensure!(naive_cap > 0.0 && naive_cap <= info.cpu_max_w, "--naive-cap {naive_cap}: expected watts in (0, {}]", info.cpu_max_w);
    let k = Knobs { solver: crate::power::solver(&a.solver, 20_000, None)?, amortize_resizes: false, charge_solve_time: !a.no_solve_time, expand_boots: true };
    let (_, records, _) = tessera_workload::swf::SwfReader::read_file(&trace, false)?;
    let (starts, sets) = crate::parm::sets(&records, &a.set_starts, a.jobs)?;
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
            let scaled = crate::parm::scale(recs, gamma, set, &trace)?;
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
    let ranges = |flag: &str, v: &[String], min: f64, max: f64, closed: bool| -> Result<Vec<(f64, f64)>> { v.iter().map(|t| crate::power::range(flag, t, min, max, closed, "0.5,2")).collect() };
    let par = ranges("--sweep-parallelism", &a.sweep_parallelism, 0.0, 1e6, false)?;
    let sig = ranges("--sweep-sigma", &a.sweep_sigma, 0.0, 1.0, true)?;
    let sweep_seeds: Vec<u64> = (1..=a.sweep_seeds).collect();
    let sweep_schemes: Vec<Scheme> = vec![Scheme::Easy { exact: false }, opt(ParmVariant::NoSE, DecisionRule::Paper, false), opt(ParmVariant::NoSE, DecisionRule::Paper, true), opt(ParmVariant::NoSE, DecisionRule::StartsFirst, false), opt(ParmVariant::NoSE, DecisionRule::StartsFirst, true)];
    let mut sweep_w = BTreeMap::new();
    if !par.is_empty() && !sig.is_empty() && a.sweep_seeds > 0 {
        let scaled = crate::parm::scale(sets[0], a.sweep_gamma, 0, &trace)?;
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

    if json {
        let rows: Vec<serde_json::Value> = done
            .iter()
            .map(|(((set, g, seed), _), o)| serde_json::json!({"set": set + 1, "gamma": f64::from_bits(*g), "seed": seed, "run": o}))
            .chain(sweep.iter().map(|(((pi, si, seed), _), o)| serde_json::json!({"sweep": {"parallelism": par[*pi], "sigma": sig[*si]}, "set": 1, "gamma": a.sweep_gamma, "seed": seed, "run": o})))
            .collect();
        return Ok(format!("{}\n", serde_json::to_string_pretty(&rows)?));
    }
    let base = Scheme::Easy { exact: false };
    let n_un = unconstrained(&info).machine.nodes;
    writeln!(w, "trace: {}  ({} jobs; sets of {} jobs starting at {:?})", trace.display(), records.len(), a.jobs, starts)?;
    writeln!(w, "cluster: {cluster_label}: {} nodes, budget {:.0} W, caps {:?} W; at full power the budget powers {n_un} nodes", info.machine.nodes, info.machine.budget_w, info.machine.cap_levels_w)?;
    writeln!(w, 
        "α = {}; power-profile seeds 1..={}; solve time {}; {} simulations in {wall:.0} s on {threads} thread(s)",
        a.alpha,
        a.seeds,
        if k.charge_solve_time { "added to completion times" } else { "not charged" },
        done.len() + sweep.len()
    )?;
    writeln!(w)?;
    writeln!(w, "Speedup in average completion time over EASY with user estimates (mean over seeds ± 95% interval), paper's decision rule:")?;
    writeln!(w)?;
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
    write!(w, "{}", t.markdown())?;
    writeln!(w)?;
    writeln!(w, "The same with Tessera's starts-first rule:")?;
    writeln!(w)?;
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
    write!(w, "{}", t.markdown())?;
    writeln!(w)?;
    writeln!(w, "What power awareness itself adds: PARM's speedup over the same optimizer without power (> 1: power awareness helps):")?;
    writeln!(w)?;
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
    write!(w, "{}", t.markdown())?;
    writeln!(w)?;
    writeln!(w, "Lowest mean per column: {}", worst.iter().map(|(k, v)| format!("{k} {v:.2}×")).collect::<Vec<_>>().join(", "))?;
    if !sweep.is_empty() {
        writeln!(w)?;
        writeln!(w, "Sensitivity to the invented job parameters (set 1, γ = {}, noSE, seeds 1..={}): A = n_max · U[range], σ ~ U[range]; speedups over EASY and power awareness's part:", a.sweep_gamma, a.sweep_seeds)?;
        writeln!(w)?;
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
        write!(w, "{}", t.markdown())?;
    }
    let worst_power = done.values().chain(sweep.values()).map(|r| r.max_power_w / r.budget_w).fold(0.0, f64::max);
    let unproven: u64 = done.values().chain(sweep.values()).map(|r| r.unproven).sum();
    let decisions: u64 = done.values().chain(sweep.values()).map(|r| r.decisions).sum();
    writeln!(w)?;
    writeln!(w, "Every run stayed within its budget (highest draw {:.2}% of it); {unproven} of {decisions} decisions not proven within 0.1% of the optimum.", 100.0 * worst_power)?;
    Ok(w)
}
