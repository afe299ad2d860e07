//! `tessera acct` (sacct-like listing, APEL export) and `tessera report`.

use crate::cli::{AcctArgs, ApelArgs, DbArgs, ReportCommand, ReportFormat};
use anyhow::{bail, Context, Result};
use std::fmt::Write as _;
use tessera_accounting::acct::{self, field_name, parse_time, state_name, Filter, FIELDS};
use tessera_accounting::apel::{self, Message, Reporter};
use tessera_accounting::billing::{bill, Prices};
use tessera_accounting::overhead::overhead;
use tessera_accounting::store::Store;
use tessera_accounting::usage::{usage, utilization, By};

fn open(db: &DbArgs) -> Result<(Store, i64)> {
    let path = match (&db.db, &db.state_dir) {
        (Some(p), _) => p.clone(),
        (None, Some(d)) => d.join("accounting.db"),
        (None, None) => "tessera.db".into(),
    };
    if !path.exists() {
        bail!("{}: no accounting store (record a run with `tessera sim run --db {}`, or name a controller's --state-dir)", path.display(), path.display());
    }
    let store = Store::open(&path)?;
    let run = store.resolve_run(db.run)?;
    Ok((store, run))
}

fn list(v: &Option<String>) -> Vec<String> {
    v.iter().flat_map(|s| s.split(',')).map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect()
}

pub fn list_jobs(a: AcctArgs) -> Result<()> {
    let fields: Vec<&'static str> = a
        .fields
        .split(',')
        .map(|f| {
            field_name(f).with_context(|| {
                format!("--format: unknown field `{}`; known: {}", f.trim(), FIELDS.iter().map(|f| f.0).collect::<Vec<_>>().join(", "))
            })
        })
        .collect::<Result<_>>()?;
    let states = list(&a.state);
    if let Some(bad) = states.iter().find(|s| state_name(s).is_none()) {
        bail!("--state: unknown state `{bad}`; known: COMPLETED (CD), FAILED (F), CANCELLED (CA), TIMEOUT (TO)");
    }
    let time = |v: &Option<String>, flag: &str| -> Result<Option<i64>> {
        v.as_deref().map(|s| parse_time(s).with_context(|| format!("{flag} {s}: expected YYYY-MM-DD[THH:MM[:SS]] (UTC) or Unix seconds"))).transpose()
    };
    let filter = Filter { users: list(&a.user), accounts: list(&a.account), states, start_time: time(&a.starttime, "--starttime")?, end_time: time(&a.endtime, "--endtime")? };
    let (store, run) = open(&a.db)?;
    let jobs = acct::jobs(&store, run, &filter)?;
    let mut out = String::new();
    if a.parsable || a.parsable2 {
        let end = if a.parsable { "|" } else { "" };
        let _ = writeln!(out, "{}{end}", fields.join("|"));
        for j in &jobs {
            let _ = writeln!(out, "{}{end}", fields.iter().map(|f| j.field(f)).collect::<Vec<_>>().join("|"));
        }
    } else {
        let width = |f: &str| FIELDS.iter().find(|x| x.0 == f).map_or(10, |x| x.1);
        let _ = writeln!(out, "{}", fields.iter().map(|f| format!("{:>w$}", f, w = width(f))).collect::<Vec<_>>().join(" "));
        let _ = writeln!(out, "{}", fields.iter().map(|f| "-".repeat(width(f))).collect::<Vec<_>>().join(" "));
        for j in &jobs {
            let cells: Vec<String> = fields
                .iter()
                .map(|f| {
                    let w = width(f);
                    let v = j.field(f);
                    // sacct truncates long values and marks them with '+'
                    let v = if v.chars().count() > w { format!("{}+", v.chars().take(w - 1).collect::<String>()) } else { v };
                    format!("{v:>w$}")
                })
                .collect();
            let _ = writeln!(out, "{}", cells.join(" "));
        }
    }
    print!("{out}");
    Ok(())
}

pub fn apel_export(a: ApelArgs) -> Result<()> {
    let kind = Message::from_kind(&format!("{:?}", a.kind).to_ascii_lowercase(), a.version.as_deref()).map_err(anyhow::Error::msg)?;
    let (store, run) = open(&a.db)?;
    let (site, cluster): (String, String) = store.connection().query_row("SELECT site, cluster FROM runs WHERE id = ?1", [run], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let who = Reporter { submit_host: a.submit_host.clone().unwrap_or_else(|| format!("{site}-ce")), site, machine: cluster };
    let msg = apel::export(&store, run, kind, &who)?;
    apel::validate(&msg).map_err(|e| anyhow::anyhow!("internal error: the APEL message fails validation: {e}"))?;
    match &a.output {
        Some(p) => std::fs::write(p, &msg).with_context(|| format!("writing {}", p.display()))?,
        None => print!("{msg}"),
    }
    Ok(())
}

fn csv_escape(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Print rows as a table or CSV (JSON is printed by the caller).
fn table(format: ReportFormat, header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    if format == ReportFormat::Csv {
        let _ = writeln!(out, "{}", header.join(","));
        for r in rows {
            let _ = writeln!(out, "{}", r.iter().map(|c| csv_escape(c)).collect::<Vec<_>>().join(","));
        }
        return out;
    }
    let widths: Vec<usize> = (0..header.len()).map(|i| rows.iter().map(|r| r[i].len()).chain([header[i].len()]).max().unwrap_or(0)).collect();
    let line = |cells: &[String]| cells.iter().zip(&widths).enumerate().map(|(i, (c, w))| if i == 0 { format!("{c:<w$}") } else { format!("{c:>w$}") }).collect::<Vec<_>>().join("  ");
    let _ = writeln!(out, "{}", line(&header.iter().map(|s| s.to_string()).collect::<Vec<_>>()));
    let _ = writeln!(out, "{}", widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("  "));
    for r in rows {
        let _ = writeln!(out, "{}", line(r));
    }
    out
}

fn f2(x: f64) -> String {
    format!("{x:.2}")
}

fn pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{:.1}%", 100.0 * v))
}

pub fn report(cmd: ReportCommand) -> Result<()> {
    match cmd {
        ReportCommand::Utilization(a) => {
            let (store, run) = open(&a.db)?;
            let (from, to, rows) = utilization(&store, run)?;
            if a.format == ReportFormat::Json {
                println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "run": run, "from": from, "to": to, "rows": rows }))?);
                return Ok(());
            }
            let cells: Vec<Vec<String>> = rows
                .iter()
                .map(|r| vec![r.key.clone(), r.nodes.to_string(), f2(r.capacity_core_hours), f2(r.allocated_core_hours), f2(r.idle_core_hours), pct(Some(r.utilization)), f2(r.allocated_norm_core_hours)])
                .collect();
            print!("{}", table(a.format, &["scope", "nodes", "capacity_core_h", "allocated_core_h", "idle_core_h", "utilization", "allocated_norm_core_h"], &cells));
        }
        ReportCommand::Usage { args: a, by } => {
            let by: By = by.parse().map_err(anyhow::Error::msg)?;
            let (store, run) = open(&a.db)?;
            let rows = usage(&store, run, by)?;
            if a.format == ReportFormat::Json {
                println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "run": run, "rows": rows }))?);
                return Ok(());
            }
            let cells: Vec<Vec<String>> = rows
                .iter()
                .map(|r| vec![r.key.clone(), r.jobs.to_string(), f2(r.wall_hours), f2(r.norm_wall_hours), f2(r.cpu_hours), f2(r.norm_cpu_hours), f2(r.core_hours), f2(r.norm_core_hours), f2(r.hs06_hours)])
                .collect();
            print!("{}", table(a.format, &["key", "jobs", "wall_h", "norm_wall_h", "cpu_h", "norm_cpu_h", "core_h", "norm_core_h", "hs06_h"], &cells));
        }
        ReportCommand::Overhead { args: a, top } => {
            let (store, run) = open(&a.db)?;
            let r = overhead(&store, run)?;
            if a.format == ReportFormat::Json {
                println!("{}", serde_json::to_string_pretty(&r)?);
                return Ok(());
            }
            if a.format == ReportFormat::Table {
                println!("canonical units: {}", r.canonical_units.iter().map(|(p, u)| format!("{p}: {u}")).collect::<Vec<_>>().join("; "));
                println!("true overhead: {:.2} canonical-unit-hours; flagged: {} intervals, {:.2} h", r.canonical_unit_hours.total, r.flagged_intervals.len(), r.flagged_hours);
                println!();
            }
            let cells: Vec<Vec<String>> = r
                .canonical_unit_hours
                .by_node
                .iter()
                .map(|(n, h)| {
                    let hist = &r.histogram[n];
                    vec![n.clone(), f2(*h), hist.iter().map(|(k, v)| format!("{k}:{v:.1}h")).collect::<Vec<_>>().join(" ")]
                })
                .collect();
            print!("{}", table(a.format, &["node", "unit_hours", "histogram (units:hours)"], &cells));
            if a.format == ReportFormat::Table && !r.flagged_intervals.is_empty() {
                println!();
                let mut flagged = r.flagged_intervals.clone();
                flagged.sort_by_key(|f| std::cmp::Reverse(f.to - f.from));
                let cells: Vec<Vec<String>> = flagged
                    .iter()
                    .take(top)
                    .map(|f| vec![f.node.clone(), f.from.to_string(), f.to.to_string(), f.units.to_string(), f.waiting_job.to_string(), f.job_units.to_string()])
                    .collect();
                println!("longest flagged intervals (a node with k units idle while a job needing <= k waited):");
                print!("{}", table(a.format, &["node", "from", "to", "units", "waiting_job", "job_units"], &cells));
            }
        }
        ReportCommand::Bill { args: a, price_core_hour, price_gb_hour, price_gpu_hour } => {
            let (store, run) = open(&a.db)?;
            let r = bill(&store, run, Prices { core_hour: price_core_hour, gb_hour: price_gb_hour, gpu_hour: price_gpu_hour })?;
            if a.format == ReportFormat::Json {
                println!("{}", serde_json::to_string_pretty(&r)?);
                return Ok(());
            }
            let cells: Vec<Vec<String>> = r
                .accounts
                .iter()
                .map(|(k, b)| {
                    vec![
                        k.clone(),
                        f2(b.allocated.core_hours),
                        f2(b.billed.core_hours),
                        pct(b.rates.cpu),
                        f2(b.allocated.memory_gb_hours),
                        f2(b.billed.memory_gb_hours),
                        pct(b.rates.memory),
                        f2(b.billed.gpu_hours),
                        f2(b.hs06_hours),
                        f2(b.cost),
                    ]
                })
                .collect();
            print!(
                "{}",
                table(a.format, &["account", "alloc_core_h", "billed_core_h", "cpu_rate", "alloc_gb_h", "billed_gb_h", "mem_rate", "billed_gpu_h", "billed_hs06_h", "cost"], &cells)
            );
            if a.format == ReportFormat::Table {
                println!(
                    "\nprovider loss (true overhead, idle and unallocated resources): {:.2} core-h, {:.2} GB-h, {:.2} GPU-h of {:.2} core-h, {:.2} GB-h, {:.2} GPU-h",
                    r.provider_loss.core_hours, r.provider_loss.memory_gb_hours, r.provider_loss.gpu_hours, r.capacity.core_hours, r.capacity.memory_gb_hours, r.capacity.gpu_hours
                );
            }
        }
    }
    Ok(())
}

