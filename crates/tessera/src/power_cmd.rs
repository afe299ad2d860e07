//! Power-aware runs from the command line: the machine, the rule for trace jobs
//! and the scheduler, from a cluster file and the `--parm-*` flags.

use crate::out::{out, outln};
use tessera_report::Table;
use crate::cli::PowerArgs;
use crate::experiment_cmd::{cluster_or_embedded, trace_or_shared};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use crate::parm_exp::{Knobs, RunOut, Scheme};
use tessera_core::power::{DecisionRule, ParmConfig, ParmVariant, Solver};
use tessera_core::{Cluster, PolicyKind};
use tessera_sim::{PowerMode, PowerOutcome, PowerRule, PowerSetup};

/// `--milp-time-limit` in milliseconds. The solver adds it to the clock, so it is
/// bounded (2^42 s, as simulated times are) rather than cast and saturated.
pub(crate) fn time_limit_ms(seconds: f64) -> Result<u64> {
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

/// The power-aware setup of a run: None when the cluster has no power budget
/// (then no power flag may be given).
/// PARM's own flags, given.
fn parm_flags(a: &PowerArgs) -> bool {
    a.parm_variant.is_some() || a.solver.is_some() || a.milp_node_limit.is_some() || a.milp_time_limit.is_some() || a.alpha.is_some() || a.fse.is_some() || a.amortize_resizes || a.parm_rule.is_some() || a.charge_solve_time
}

/// Any power flag, given (they apply to a power-budgeted cluster only).
pub fn any_power_flag(a: &PowerArgs) -> bool {
    parm_flags(a) || a.cap.is_some() || a.power_seed.is_some() || a.theta.is_some() || a.parallelism.is_some() || a.sigma.is_some() || a.package_base_w.is_some() || a.power_out.is_some() || a.budget_w.is_some()
}

pub fn setup(cluster: &Cluster, policy: PolicyKind, a: &PowerArgs) -> Result<Option<PowerSetup>> {
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
        let variant: ParmVariant = a.parm_variant.as_deref().unwrap_or("wSE").parse().map_err(anyhow::Error::msg)?;
        let mut cfg = ParmConfig::new(variant);
        cfg.solver = solver(a.solver.as_deref().unwrap_or("structured"), a.milp_node_limit.unwrap_or(20_000), a.milp_time_limit)?;
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
        cfg.amortize_resizes = a.amortize_resizes;
        // Tessera's scheduler decides by starts-first: the attribution
        // (docs/power.md) finds the paper's rule losing to the same optimizer
        // without power; `--parm-rule paper` reproduces the paper
        cfg.rule = match &a.parm_rule {
            Some(r) => r.parse().map_err(anyhow::Error::msg).context("--parm-rule")?,
            None => DecisionRule::StartsFirst,
        };
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

/// The experiment's and the bench's default cluster, embedded, and its trace.
pub const THETA: &str = include_str!("../../../examples/clusters/theta-overprovisioned.toml");
pub const THETA_PATH: &str = "examples/clusters/theta-overprovisioned.toml";
pub const THETA_TRACE: &str = "ALCF-Theta-2022-cqsimplus.swf.gz";

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

pub fn experiment(a: crate::cli::ParmExperimentArgs) -> Result<()> {
    let trace = trace_or_shared(&a.trace, THETA_TRACE)?;
    let (cluster_label, cluster) = cluster_or_embedded(&a.cluster, THETA_PATH, THETA)?;
    let info = cluster.power_machine().map_err(anyhow::Error::msg).with_context(|| cluster_label.clone())?;
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
    let outs = crate::study_cmd::parallel(&order, threads, "PARM runs", |&i| {
        let c = cases[i];
        crate::parm_exp::run(&prepared[&(c.set, c.gamma.to_bits())], c.scheme, None, knobs)
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
    if a.format == crate::cli::Format::Json {
        outln!("{}", serde_json::to_string_pretty(&rows)?)?;
        return Ok(());
    }
    outln!("trace: {}  ({} jobs; sets of {} jobs starting at {:?})", trace.display(), n, a.jobs, starts)?;
    let base_nodes = rows.iter().find(|r| r.run.scheme == baseline.label()).map_or(0, |r| r.run.nodes);
    outln!("cluster: {cluster_label}: {} nodes, budget {:.0} W; the baseline powers {base_nodes} of them at full power", info.machine.nodes, info.machine.budget_w)?;
    let amortized = if a.amortize_resizes { "; wSE resizes amortized" } else { "" };
    let charged = if knobs.charge_solve_time { "solve time added to completion times" } else { "solve time not charged" };
    outln!("solver: {solver}; decision rule {decision_rule}; power-profile seed {}{amortized}; {charged}; wall time {:.1} s on {threads} thread(s)", a.power_seed, t0.elapsed().as_secs_f64())?;
    outln!()?;
    outln!("Average completion time (minutes) and speedup over the baseline (α = {}):", a.table_alpha)?;
    outln!()?;
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
    out!("{}", t.markdown())?;
    outln!()?;
    let base = find(0, a.curve_gamma, baseline).unwrap();
    outln!(
        "Fairness trade-off, set 1, γ = {}: average and maximum completion time (minutes); baseline {:.1} / {:.1}:",
        a.curve_gamma, base.avg_completion_min, base.max_completion_min
    )?;
    outln!()?;
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
    out!("{}", t.markdown())?;
    outln!()?;
    outln!("Naive overprovisioning (EASY, every CPU at one cap), set 1, γ = {}: PARM's speedup over it (α = {}):", a.curve_gamma, a.table_alpha)?;
    outln!()?;
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
    out!("{}", t.markdown())?;
    let worst = rows.iter().map(|r| r.run.max_power_w / r.run.budget_w).fold(0.0, f64::max);
    let slowest = rows.iter().map(|r| r.run.max_decision_s).fold(0.0, f64::max);
    outln!()?;
    outln!("Every run stayed within the budget (highest draw {:.2}% of it); longest PARM decision {:.1} ms.", 100.0 * worst, slowest * 1e3)?;
    Ok(())
}
