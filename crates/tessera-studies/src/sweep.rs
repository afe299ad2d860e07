//! `tessera sim sweep`: a sweep file (TOML: traces × clusters × policies ×
//! parameters) made into cases, each a typed [`RunSpec`] run as `sim run` runs
//! it ([`crate::run::execute`]), one CSV row per case; `--shard I/N` runs a
//! slice and [`merge`] joins slices. See docs/reports.md.

use crate::parallel::parallel;
use crate::run::{execute, Executed};
use crate::spec::RunSpec;
use anyhow::{bail, Context, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tessera_core::PolicyKind;
use tessera_report::study::{SweepTable, SWEEP_METRICS};

/// A sweep file: the cartesian product of traces × clusters × policies × every
/// parameter's values, each case a `sim run` with those flags plus `fixed`
/// (the raw form: [`load`] makes [`Case`]s of it, and [`Case::spec`] their runs).
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

/// A case: its identity columns (trace, cluster, policy, parameters) and the
/// `sim run` flags it sets, with their values ([`RunSpec::set`]).
pub struct Case {
    pub index: usize,
    pub identity: Vec<String>,
    pub flags: Vec<(String, String)>,
}

impl Case {
    /// The run the case describes.
    pub fn spec(&self) -> Result<RunSpec> {
        let mut spec = RunSpec::new(PolicyKind::Easy);
        for (flag, value) in &self.flags {
            spec.set(flag, value)?;
        }
        spec.check()?;
        Ok(spec)
    }

    /// Its flags as a `sim run` command line would give them.
    pub fn command(&self) -> String {
        self.flags.iter().flat_map(|(f, v)| [f.as_str(), v.as_str()]).collect::<Vec<_>>().join(" ")
    }
}

/// A sweep: its CSV's header and its cases, in case order.
pub struct Sweep {
    pub header: Vec<String>,
    pub cases: Vec<Case>,
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

/// Read a sweep file (names in it are relative to its directory; a bare trace
/// name not there is looked up in $TESSERA_TRACES).
pub fn load(path: &Path) -> Result<Sweep> {
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
        fixed.push((flag_of(k), value_text(v).with_context(|| format!("{}: fixed.{k}", path.display()))?));
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
                    let mut flags = vec![("--policy".to_string(), p.clone())];
                    if let Some(t) = t {
                        flags.push(("--trace".into(), t.clone()));
                    }
                    if let Some(c) = c {
                        flags.push(("--cluster".into(), c.clone()));
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
                        flags.push((flag_of(name), v.clone()));
                    }
                    identity.extend(chosen);
                    cases.push(Case { index: cases.len(), identity, flags });
                }
            }
        }
    }
    Ok(Sweep { header, cases })
}

pub fn shard(s: &str) -> Result<(usize, usize)> {
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

pub fn write_results(t: &SweepTable, out: &Path, report: Option<&Path>, title: &str) -> Result<()> {
    std::fs::write(out, t.csv()).with_context(|| format!("writing {}", out.display()))?;
    eprintln!("results: {} ({} cases)", out.display(), t.rows.len());
    if let Some(r) = report {
        crate::files::write_report(r, &t.page(title))?;
    }
    Ok(())
}

/// The runs of `cases` of the sweep `file`, every one built before any runs (a
/// case that cannot be built is an error naming the file and the case).
pub fn specs<'c>(file: &Path, cases: &[&'c Case]) -> Result<Vec<(&'c Case, RunSpec)>> {
    cases.iter().map(|c| Ok((*c, c.spec().with_context(|| format!("{}: case {}", file.display(), c.index))?))).collect()
}

/// Run the cases of the sweep `file`, a worker per core (at most `threads`);
/// their rows under `header`.
pub fn run(file: &Path, header: Vec<String>, cases: &[(&Case, RunSpec)], threads: usize, what: &str) -> Result<SweepTable> {
    let results = parallel(cases, threads, what, |(c, spec)| execute(spec).map(|e| row_of(c, &e)));
    let mut rows = Vec::new();
    for (r, (c, _)) in results.into_iter().zip(cases) {
        rows.push(r.with_context(|| format!("{}: case {} (sim run {})", file.display(), c.index, c.command()))?);
    }
    Ok(SweepTable { header, rows })
}

/// Join the slices of a sharded sweep (their CSV files) into one CSV in case
/// order; with `sweep`, check that every case of that file is there once.
pub fn merge(parts: &[PathBuf], out: &Path, sweep: Option<&Path>, report: Option<&Path>) -> Result<()> {
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
        let cases = load(s)?.cases;
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
