//! `tessera sim compare` and `tessera sim sweep`: many simulations at once, a
//! worker per core, with a progress bar. Every variant is a `tessera sim run`
//! (its flags parsed by the same definitions), so a comparison or a sweep case
//! gives exactly what that run gives alone.

use crate::out::{out, outln};
use crate::cli::{Format, SimRunArgs};
use crate::sim_cmd::{execute, Executed};
use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use tessera_report::study::{compare_page, difference_table, SweepTable, Variant, SWEEP_METRICS};

/// The flags of one `sim run`, parsed as the command line would be.
#[derive(Parser)]
#[command(name = "sim run", no_binary_name = true)]
struct RunFlags {
    #[command(flatten)]
    run: SimRunArgs,
}

fn run_args(flags: &[String]) -> Result<SimRunArgs> {
    RunFlags::try_parse_from(flags).map(|f| f.run).map_err(|e| anyhow::anyhow!("`sim run {}`: {}", flags.join(" "), e.to_string().trim_end()))
}

/// `f` on every item, a worker per core (at most `threads`), the heaviest
/// first as given; a progress bar on standard error while it runs.
pub fn parallel<T: Sync, R: Send>(items: &[T], threads: usize, what: &str, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let bar = ProgressBar::new(items.len() as u64);
    bar.set_style(ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} {msg}").expect("template").progress_chars("=> "));
    let workers = threads.max(1).min(items.len().max(1));
    bar.set_message(format!("{what} on {workers} threads"));
    let next = AtomicUsize::new(0);
    let done: Vec<(usize, R)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                let (next, bar, f) = (&next, &bar, &f);
                s.spawn(move || {
                    let mut out = Vec::new();
                    loop {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(k) else { break };
                        out.push((k, f(item)));
                        bar.inc(1);
                    }
                    out
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("a simulation thread panicked")).collect()
    });
    bar.finish_and_clear();
    eprintln!("{} {what} on {workers} threads in {:.1} s", items.len(), bar.elapsed().as_secs_f64());
    let mut slots: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    for (k, r) in done {
        slots[k] = Some(r);
    }
    slots.into_iter().map(|r| r.expect("every item ran")).collect()
}

pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[derive(Args)]
pub struct CompareArgs {
    /// SWF trace (default: the embedded default workload and cluster).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Policies to compare, comma-separated.
    #[arg(long, default_value = "easy,conservative", value_parser = crate::cli::policies)]
    pub policy: String,
    /// Cluster files to compare (repeatable); each runs every policy.
    #[arg(long)]
    pub cluster: Vec<PathBuf>,
    /// Further `sim run` flags for every variant (e.g. `--max-jobs 5000`), after `--`.
    #[arg(last = true)]
    pub flags: Vec<String>,
    /// Where to write the report.
    #[arg(long, default_value = "compare.html")]
    pub report: PathBuf,
    /// Worker threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

fn variant_of(e: &Executed, name: String) -> Variant {
    Variant { name, jobs: tessera_sim::metrics::job_times(&e.w, &e.outcome), capacity: e.w.capacity as f64 }
}

pub fn compare(a: CompareArgs) -> Result<()> {
    let policies: Vec<&str> = a.policy.split(',').map(str::trim).filter(|p| !p.is_empty()).collect();
    if policies.is_empty() {
        bail!("--policy: name at least one policy (fcfs, easy, conservative, parm)");
    }
    let clusters: Vec<Option<&PathBuf>> = if a.cluster.is_empty() { vec![None] } else { a.cluster.iter().map(Some).collect() };
    let mut cases: Vec<(String, SimRunArgs)> = Vec::new();
    for c in &clusters {
        for p in &policies {
            let mut flags: Vec<String> = vec!["--policy".into(), p.to_string()];
            if let Some(t) = &a.trace {
                flags.extend(["--trace".into(), t.display().to_string()]);
            }
            if let Some(c) = c {
                flags.extend(["--cluster".into(), c.display().to_string()]);
            }
            flags.extend(a.flags.iter().cloned());
            let name = match c {
                Some(c) if clusters.len() > 1 => format!("{p} on {}", c.file_stem().and_then(|s| s.to_str()).unwrap_or("?")),
                _ => p.to_string(),
            };
            cases.push((name, run_args(&flags)?));
        }
    }
    let results = parallel(&cases, a.threads.unwrap_or_else(cores), "simulations", |(name, args)| execute(args).map(|e| (variant_of(&e, name.clone()), e.label)));
    let mut variants = Vec::new();
    let mut label = String::new();
    for (r, (name, _)) in results.into_iter().zip(&cases) {
        let (v, l) = r.with_context(|| format!("variant {name}"))?;
        label = l;
        variants.push(v);
    }
    let page = compare_page(&label, &variants);
    crate::acct_cmd::write_report(&a.report, &page)?;
    let t = difference_table(&variants);
    match a.format {
        Format::Table => out!("{}", t.text())?,
        Format::Json => outln!("{}", serde_json::to_string_pretty(&serde_json::json!({ "trace": label, "header": t.header, "rows": t.rows }))?)?,
    }
    Ok(())
}

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SweepArgs {
    #[command(subcommand)]
    pub merge: Option<SweepCommand>,
    /// The sweep file (TOML; see docs/sweeps.md).
    pub file: Option<PathBuf>,
    /// Run only slice I of N (cases whose index modulo N is I; 0 <= I < N), e.g.
    /// `--shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT`.
    #[arg(long)]
    pub shard: Option<String>,
    /// The results, one CSV row per case.
    #[arg(long, short, default_value = "sweep.csv")]
    pub out: PathBuf,
    /// Also write an HTML report of the results.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Worker threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// List the cases and exit.
    #[arg(long)]
    pub list: bool,
}

#[derive(Subcommand)]
pub enum SweepCommand {
    /// Join the slices of a sharded sweep into one CSV (in case order).
    Merge {
        /// The slices' CSV files.
        #[arg(required = true)]
        parts: Vec<PathBuf>,
        /// Where to write the merged results (CSV).
        #[arg(long, short, default_value = "sweep.csv")]
        out: PathBuf,
        /// The sweep file: check that every case is there exactly once.
        #[arg(long)]
        sweep: Option<PathBuf>,
        /// Also write an HTML report of the merged results.
        #[arg(long)]
        report: Option<PathBuf>,
    },
}

/// A sweep file: the cartesian product of traces × clusters × policies × every
/// parameter's values, each case a `sim run` with those flags plus `fixed`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepFile {
    traces: Vec<String>,
    #[serde(default)]
    clusters: Vec<String>,
    policies: Vec<String>,
    #[serde(default)]
    fixed: BTreeMap<String, toml::Value>,
    #[serde(default)]
    parameters: BTreeMap<String, Vec<toml::Value>>,
}

/// A case: its identity columns (trace, cluster, policy, parameters) and flags.
struct Case {
    index: usize,
    identity: Vec<String>,
    flags: Vec<String>,
}

/// A sweep parameter's flag: `sim run`'s flag name, with `_` or `-`; `gamma`
/// is the arrival scale γ and `budget` the power budget in watts.
fn flag_of(name: &str) -> String {
    match name {
        "gamma" => "--arrival-scale".into(),
        "budget" => "--budget-w".into(),
        n => format!("--{}", n.replace('_', "-")),
    }
}

fn value_text(v: &toml::Value) -> Result<String> {
    Ok(match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        other => bail!("expected a string, number or boolean, found {other}"),
    })
}

fn load_sweep(path: &Path) -> Result<(Vec<String>, Vec<Case>)> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading sweep file {}", path.display()))?;
    let f: SweepFile = toml::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.to_string().trim_end()))?;
    let here = path.parent().unwrap_or(Path::new("."));
    let at = |s: &str| -> String {
        let p = Path::new(s);
        if p.is_absolute() {
            s.to_string()
        } else {
            here.join(p).display().to_string()
        }
    };
    if f.traces.is_empty() || f.policies.is_empty() {
        bail!("{}: `traces` and `policies` each need at least one entry", path.display());
    }
    // (as written in the file, the path to run)
    let traces: Vec<(String, Option<String>)> = f
        .traces
        .iter()
        .map(|t| {
            let path = if t == "default" {
                None
            } else {
                // beside the sweep file, else a bare name in $TESSERA_TRACES
                Some(tessera_workload::traces::resolve_at(here, Path::new(t)).with_context(|| format!("{}: traces", path.display()))?.display().to_string())
            };
            Ok((t.clone(), path))
        })
        .collect::<Result<_>>()?;
    let clusters: Vec<(String, Option<String>)> = if f.clusters.is_empty() { vec![(String::new(), None)] } else { f.clusters.iter().map(|c| (c.clone(), Some(at(c)))).collect() };
    let mut fixed = Vec::new();
    for (k, v) in &f.fixed {
        fixed.push(flag_of(k));
        fixed.push(value_text(v).with_context(|| format!("{}: fixed.{k}", path.display()))?);
    }
    let params: Vec<(&String, Vec<String>)> =
        f.parameters.iter().map(|(k, vs)| Ok((k, vs.iter().map(value_text).collect::<Result<Vec<_>>>().with_context(|| format!("{}: parameters.{k}", path.display()))?))).collect::<Result<_>>()?;
    if let Some((k, _)) = params.iter().find(|(_, v)| v.is_empty()) {
        bail!("{}: parameters.{k} has no values", path.display());
    }
    let mut header: Vec<String> = ["case", "trace", "cluster", "policy"].map(String::from).to_vec();
    header.extend(params.iter().map(|(k, _)| k.to_string()));
    header.extend(SWEEP_METRICS.iter().map(|m| m.to_string()));
    let combos: usize = params.iter().map(|(_, v)| v.len()).product();
    let mut cases = Vec::new();
    for (t_name, t) in &traces {
        for (c_name, c) in &clusters {
            for p in &f.policies {
                for k in 0..combos {
                    let mut flags = vec!["--policy".to_string(), p.clone()];
                    if let Some(t) = t {
                        flags.extend(["--trace".into(), t.clone()]);
                    }
                    if let Some(c) = c {
                        flags.extend(["--cluster".into(), c.clone()]);
                    }
                    flags.extend(fixed.iter().cloned());
                    let mut identity = vec![t_name.clone(), c_name.clone(), p.clone()];
                    // mixed radix: the last parameter varies fastest
                    let mut rest = k;
                    let mut chosen = vec![String::new(); params.len()];
                    for (i, (_, vs)) in params.iter().enumerate().rev() {
                        chosen[i] = vs[rest % vs.len()].clone();
                        rest /= vs.len();
                    }
                    for ((name, _), v) in params.iter().zip(&chosen) {
                        flags.extend([flag_of(name), v.clone()]);
                    }
                    identity.extend(chosen);
                    cases.push(Case { index: cases.len(), identity, flags });
                }
            }
        }
    }
    Ok((header, cases))
}

fn shard(s: &str) -> Result<(usize, usize)> {
    let bad = || anyhow::anyhow!("--shard {s}: expected I/N with 0 <= I < N, e.g. 0/4");
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let (i, n): (usize, usize) = (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
    if n == 0 || i >= n {
        return Err(bad());
    }
    Ok((i, n))
}

fn num(x: f64) -> String {
    format!("{x}")
}

fn row_of(case: &Case, e: &Executed) -> Vec<String> {
    let s = &e.summary;
    let mut r = vec![case.index.to_string()];
    r.extend(case.identity.iter().cloned());
    r.extend([
        s.jobs_simulated.to_string(),
        num(s.mean_wait),
        num(s.median_wait),
        num(s.p95_wait),
        num(s.mean_response),
        num(s.mean_slowdown),
        num(s.mean_bounded_slowdown),
        num(s.area_weighted_slowdown),
        num(s.utilization),
        s.makespan.to_string(),
        s.energy_j.map_or(String::new(), |j| num(j / 3.6e6)),
        s.max_power_w.map_or(String::new(), num),
    ]);
    r
}

fn write_results(t: &SweepTable, out: &Path, report: Option<&Path>, title: &str) -> Result<()> {
    std::fs::write(out, t.csv()).with_context(|| format!("writing {}", out.display()))?;
    eprintln!("results: {} ({} cases)", out.display(), t.rows.len());
    if let Some(r) = report {
        crate::acct_cmd::write_report(r, &t.page(title))?;
    }
    Ok(())
}

pub fn sweep(a: SweepArgs) -> Result<()> {
    if let Some(SweepCommand::Merge { parts, out, sweep, report }) = a.merge {
        return merge(&parts, &out, sweep.as_deref(), report.as_deref());
    }
    let file = a.file.context("name a sweep file (tessera sim sweep FILE.toml), or `merge` slices")?;
    let (header, cases) = load_sweep(&file)?;
    if a.out == file {
        bail!("--out {}: that is the sweep file", a.out.display());
    }
    let (i, n) = a.shard.as_deref().map(shard).transpose()?.unwrap_or((0, 1));
    let mine: Vec<&Case> = cases.iter().filter(|c| c.index % n == i).collect();
    // every case's flags must parse before anything runs
    let parsed: Vec<(&Case, SimRunArgs)> = mine.iter().map(|c| Ok((*c, run_args(&c.flags).with_context(|| format!("{}: case {}", file.display(), c.index))?))).collect::<Result<_>>()?;
    if a.list {
        for c in &mine {
            outln!("{}\ttessera sim run {}", c.index, c.flags.join(" "))?;
        }
        return Ok(());
    }
    let results = parallel(&parsed, a.threads.unwrap_or_else(cores), &format!("sweep cases (shard {i}/{n} of {} cases)", cases.len()), |(c, args)| execute(args).map(|e| row_of(c, &e)));
    let mut rows = Vec::new();
    for (r, (c, _)) in results.into_iter().zip(&parsed) {
        rows.push(r.with_context(|| format!("{}: case {} (sim run {})", file.display(), c.index, c.flags.join(" ")))?);
    }
    write_results(&SweepTable { header, rows }, &a.out, a.report.as_deref(), &file.display().to_string())
}

fn merge(parts: &[PathBuf], out: &Path, sweep: Option<&Path>, report: Option<&Path>) -> Result<()> {
    let mut header: Option<Vec<String>> = None;
    let mut rows: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for p in parts {
        if p == out {
            bail!("--out {}: that is one of the slices", out.display());
        }
        let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
        let mut lines = text.lines();
        let h: Vec<String> = split_csv(lines.next().with_context(|| format!("{}: empty, expected a sweep's CSV", p.display()))?);
        if h.first().map(String::as_str) != Some("case") {
            bail!("{}:1: expected a sweep's CSV header starting with `case`", p.display());
        }
        match &header {
            Some(x) if *x != h => bail!("{}:1: the header differs from {}'s", p.display(), parts[0].display()),
            _ => header = Some(h.clone()),
        }
        for (ln, line) in lines.enumerate() {
            let r = split_csv(line);
            if r.len() != h.len() {
                bail!("{}:{}: {} fields, expected {}", p.display(), ln + 2, r.len(), h.len());
            }
            let k: usize = r[0].parse().map_err(|_| anyhow::anyhow!("{}:{}: field `case`: expected a case number, found `{}`", p.display(), ln + 2, r[0]))?;
            if rows.insert(k, r).is_some() {
                bail!("{}:{}: case {k} is in more than one slice", p.display(), ln + 2);
            }
        }
    }
    let header = header.expect("at least one part");
    if let Some(s) = sweep {
        let (_, cases) = load_sweep(s)?;
        let missing: Vec<usize> = (0..cases.len()).filter(|k| !rows.contains_key(k)).collect();
        if !missing.is_empty() {
            bail!("{} of {} cases are missing (first: {:?}); run their shards", missing.len(), cases.len(), &missing[..missing.len().min(10)]);
        }
        if let Some(k) = rows.keys().find(|&&k| k >= cases.len()) {
            bail!("case {k} is not a case of {} ({} cases)", s.display(), cases.len());
        }
    }
    write_results(&SweepTable { header, rows: rows.into_values().collect() }, out, report, &format!("{} slices merged", parts.len()))
}

/// Fields of one CSV line (RFC 4180 quoting).
fn split_csv(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let (mut quoted, mut chars) = (false, line.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                out.last_mut().unwrap().push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(String::new()),
            (c, _) => out.last_mut().unwrap().push(c),
        }
    }
    out
}
