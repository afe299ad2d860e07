//! The PARM paper's large-scale experiment (`tessera experiment parm`): sets of
//! consecutive jobs of a trace at several arrival rates, the power-unaware
//! baseline against PARM noSE and wSE, the α trade-off, and naive
//! overprovisioning (docs/power.md).

use crate::parm::{theta_or_given, scale, sets, Knobs, RunOut, Scheme};
use crate::power::solver;
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::PathBuf;
use tessera_core::power::{DecisionRule, ParmConfig, ParmVariant};
use tessera_report::Table;
use tessera_sim::{PowerMode, PowerRule, PowerSetup};

#[derive(Clone, Debug, serde::Serialize)]
struct Row {
    set: usize,
    first_job: usize,
    gamma: f64,
    #[serde(flatten)]
    run: RunOut,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Case {
    set: usize,
    gamma: f64,
    scheme: Scheme,
}

/// `tessera experiment parm`'s settings (see its `--help`).
#[derive(Clone, Debug)]
pub struct Options {
    pub trace: Option<PathBuf>,
    pub cluster: Option<PathBuf>,
    pub jobs: usize,
    pub set_starts: Vec<usize>,
    pub gammas: Vec<f64>,
    pub variants: Vec<String>,
    pub table_alpha: f64,
    pub alphas: Vec<f64>,
    pub naive_caps: Vec<f64>,
    pub curve_gamma: f64,
    pub solver: String,
    pub milp_node_limit: u64,
    pub milp_time_limit: Option<f64>,
    pub power_seed: u64,
    pub amortize_resizes: bool,
    pub parm_rule: String,
    pub no_solve_time: bool,
    pub threads: Option<usize>,
}

/// Run the paper's experiment; its report as Markdown tables, or as JSON (every run).
pub fn run(a: &Options, json: bool) -> Result<String> {
    let mut w = String::new();
    let (trace, cluster_label, cluster, info) = theta_or_given(&a.trace, &a.cluster)?;
    let solver = solver(&a.solver, a.milp_node_limit, a.milp_time_limit)?;
    let rule = PowerRule { seed: a.power_seed, ..PowerRule::default() };
    let variants: Vec<ParmVariant> = a.variants.iter().map(|v| v.parse().map_err(anyhow::Error::msg)).collect::<Result<_>>()?;
    let decision_rule: DecisionRule = a.parm_rule.parse().map_err(anyhow::Error::msg).context("--parm-rule")?;
    for &al in a.alphas.iter().chain([&a.table_alpha]) {
        anyhow::ensure!(al.is_finite() && al >= 0.0, "--alpha {al}: expected a number >= 0");
    }
    let knobs = Knobs { solver, amortize_resizes: a.amortize_resizes, charge_solve_time: !a.no_solve_time, expand_boots: true };
    let (_, records, _) = tessera_workload::swf::SwfReader::read_file(&trace, false)?;
    let n = records.len();
    let (starts, sets) = sets(&records, &a.set_starts, a.jobs)?;
    let parm = |v: ParmVariant, alpha: f64| Scheme::Optimizer { variant: v, alpha, rule: decision_rule, power: true };
    let baseline = Scheme::Easy { exact: false };
    let mut cases: Vec<Case> = Vec::new();
    let mut add = |c: Case| {
        if !cases.contains(&c) {
            cases.push(c);
        }
    };
    for set in 0..sets.len() {
        for &gamma in &a.gammas {
            add(Case { set, gamma, scheme: baseline });
            for &v in &variants {
                add(Case { set, gamma, scheme: parm(v, a.table_alpha) });
            }
        }
    }
    for &v in &variants {
        for &alpha in a.alphas.iter().chain([&a.table_alpha]) {
            add(Case { set: 0, gamma: a.curve_gamma, scheme: parm(v, alpha) });
        }
    }
    add(Case { set: 0, gamma: a.curve_gamma, scheme: baseline });
    for &cap in &a.naive_caps {
        anyhow::ensure!(cap > 0.0 && cap <= info.cpu_max_w, "--naive-cap {cap}: expected watts in (0, {}]", info.cpu_max_w);
        add(Case { set: 0, gamma: a.curve_gamma, scheme: Scheme::Naive(cap) });
    }
    // every set at every γ it runs at, prepared once, here, where an error can stop the run
    let mut prepared: BTreeMap<(usize, u64), tessera_sim::Workload> = BTreeMap::new();
    for c in &cases {
        if let std::collections::btree_map::Entry::Vacant(v) = prepared.entry((c.set, c.gamma.to_bits())) {
            let recs = scale(sets[c.set], c.gamma, c.set, &trace)?;
            let setup = PowerSetup { name: cluster.name.clone(), info: info.clone(), hardware: tessera_sim::PowerNodes::of(&cluster), rule: rule.clone(), mode: PowerMode::Parm(ParmConfig::new(ParmVariant::WSE)), charge_solve_time: false };
            let w = tessera_sim::prepare_power(&recs, std::sync::Arc::new(setup));
            w.check_time_range(&format!("set {} at γ = {}", c.set + 1, c.gamma))?;
            v.insert(w);
        }
    }
    // the slowest runs (PARM at high load) first
    let mut order: Vec<usize> = (0..cases.len()).collect();
    order.sort_by(|&x, &y| {
        let key = |c: &Case| (matches!(c.scheme, Scheme::Optimizer { .. }), -c.gamma);
        key(&cases[y]).partial_cmp(&key(&cases[x])).unwrap()
    });
    let threads = a.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |p| p.get())).max(1);
    let t0 = std::time::Instant::now();
    let outs = crate::parallel::parallel(&order, threads, "PARM runs", |&i| {
        let c = cases[i];
        crate::parm::run(&prepared[&(c.set, c.gamma.to_bits())], c.scheme, None, knobs)
    });
    let mut by_case: Vec<Option<RunOut>> = (0..cases.len()).map(|_| None).collect();
    for (&i, o) in order.iter().zip(outs) {
        by_case[i] = Some(o);
    }
    let rows: Vec<Row> = cases.iter().zip(by_case).map(|(c, o)| Row { set: c.set + 1, first_job: starts[c.set], gamma: c.gamma, run: o.expect("every case ran") }).collect();
    for r in &rows {
        anyhow::ensure!(r.run.max_power_w <= r.run.budget_w * (1.0 + 1e-9), "set {} γ={} {}: power {} W over the budget {} W", r.set, r.gamma, r.run.scheme, r.run.max_power_w, r.run.budget_w);
    }
    let find = |set: usize, gamma: f64, scheme: Scheme| rows.iter().zip(&cases).find(|(_, c)| c.set == set && c.gamma == gamma && c.scheme == scheme).map(|(r, _)| &r.run);
    if json {
        return Ok(format!("{}\n", serde_json::to_string_pretty(&rows)?));
    }
    writeln!(w, "trace: {}  ({} jobs; sets of {} jobs starting at {:?})", trace.display(), n, a.jobs, starts)?;
    let base_nodes = rows.iter().find(|r| r.run.scheme == baseline.label()).map_or(0, |r| r.run.nodes);
    writeln!(w, "cluster: {cluster_label}: {} nodes, budget {:.0} W; the baseline powers {base_nodes} of them at full power", info.machine.nodes, info.machine.budget_w)?;
    let amortized = if a.amortize_resizes { "; wSE resizes amortized" } else { "" };
    let charged = if knobs.charge_solve_time { "solve time added to completion times" } else { "solve time not charged" };
    writeln!(w, "solver: {solver}; decision rule {decision_rule}; power-profile seed {}{amortized}; {charged}; wall time {:.1} s on {threads} thread(s)", a.power_seed, t0.elapsed().as_secs_f64())?;
    writeln!(w)?;
    writeln!(w, "Average completion time (minutes) and speedup over the baseline (α = {}):", a.table_alpha)?;
    writeln!(w)?;
    let mut t = Table::new(&["set", "γ", "baseline"]);
    for v in &variants {
        t.header.extend([v.to_string(), "speedup".into()]);
    }
    for set in 0..sets.len() {
        for &gamma in &a.gammas {
            let base = find(set, gamma, baseline).unwrap();
            let mut row = vec![format!("{} ({})", set + 1, starts[set]), gamma.to_string(), format!("{:.1}", base.avg_completion_min)];
            for &v in &variants {
                let r = find(set, gamma, parm(v, a.table_alpha)).unwrap();
                row.extend([format!("{:.1}", r.avg_completion_min), format!("{:.2}×", base.avg_completion_min / r.avg_completion_min)]);
            }
            t.row(row);
        }
    }
    write!(w, "{}", t.markdown())?;
    writeln!(w)?;
    let base = find(0, a.curve_gamma, baseline).unwrap();
    writeln!(w, 
        "Fairness trade-off, set 1, γ = {}: average and maximum completion time (minutes); baseline {:.1} / {:.1}:",
        a.curve_gamma, base.avg_completion_min, base.max_completion_min
    )?;
    writeln!(w)?;
    let mut t = Table::new(&["α"]);
    for v in &variants {
        t.header.extend([format!("{v} average"), format!("{v} maximum")]);
    }
    let mut alphas: Vec<f64> = a.alphas.iter().chain([&a.table_alpha]).copied().collect();
    alphas.sort_by(f64::total_cmp);
    alphas.dedup();
    for &alpha in &alphas {
        let mut row = vec![alpha.to_string()];
        for &v in &variants {
            let r = find(0, a.curve_gamma, parm(v, alpha)).unwrap();
            row.extend([format!("{:.1}", r.avg_completion_min), format!("{:.1}", r.max_completion_min)]);
        }
        t.row(row);
    }
    write!(w, "{}", t.markdown())?;
    writeln!(w)?;
    writeln!(w, "Naive overprovisioning (EASY, every CPU at one cap), set 1, γ = {}: PARM's speedup over it (α = {}):", a.curve_gamma, a.table_alpha)?;
    writeln!(w)?;
    let mut t = Table::new(&["CPU cap (W)", "nodes", "average completion (min)"]);
    for v in &variants {
        t.header.push(format!("{v} speedup"));
    }
    for &cap in &a.naive_caps {
        let r = find(0, a.curve_gamma, Scheme::Naive(cap)).unwrap();
        let mut row = vec![cap.to_string(), r.nodes.to_string(), format!("{:.1}", r.avg_completion_min)];
        for &v in &variants {
            let p = find(0, a.curve_gamma, parm(v, a.table_alpha)).unwrap();
            row.push(format!("{:.2}×", r.avg_completion_min / p.avg_completion_min));
        }
        t.row(row);
    }
    write!(w, "{}", t.markdown())?;
    let worst = rows.iter().map(|r| r.run.max_power_w / r.run.budget_w).fold(0.0, f64::max);
    let slowest = rows.iter().map(|r| r.run.max_decision_s).fold(0.0, f64::max);
    writeln!(w)?;
    writeln!(w, "Every run stayed within the budget (highest draw {:.2}% of it); longest PARM decision {:.1} ms.", 100.0 * worst, slowest * 1e3)?;
    Ok(w)
}
