//! `tessera acct` (sacct-like listing, APEL export) and `tessera report`.

use crate::out::{out, outln};
use crate::cli::{AcctArgs, ApelArgs, DbArgs, PruneArgs, ReportCommand, ReportFormat, StoreArgs};
use anyhow::{bail, Context, Result};
use tessera_accounting::acct::{self, field_name, parse_time, state_name, Filter, FIELDS};
use tessera_accounting::apel::{self, Message, Reporter};
use tessera_accounting::billing::bill;
use tessera_accounting::overhead::overhead;
use tessera_accounting::store::Store;
use tessera_accounting::usage::{usage, utilization, By};
use tessera_report::acct::{bill_text, listing, overhead_text, usage_table, utilization_table, Listing};
use tessera_report::run::RunData;
use tessera_report::{Table, TableFormat};

/// The store `db` names: `--db`, else the live store of `--state-dir`, else
/// `./tessera.db` if it exists, else the live store of `./tessera-state` (the
/// state directory `tessera up`, `queue` and `nodes` default to) if that
/// exists, else `./tessera.db`.
fn store_path(db: &StoreArgs) -> std::path::PathBuf {
    match (&db.db, &db.state_dir) {
        (Some(p), _) => p.clone(),
        (None, Some(d)) => d.join("accounting.db"),
        (None, None) => {
            let live = std::path::Path::new("tessera-state").join("accounting.db");
            if !std::path::Path::new("tessera.db").exists() && live.exists() {
                live
            } else {
                "tessera.db".into()
            }
        }
    }
}

/// The store, which must exist already (reading never creates one).
fn existing(db: &StoreArgs) -> Result<Store> {
    let path = store_path(db);
    if !path.exists() {
        bail!("{}: no accounting store (record a run with `tessera sim run --db {}`, or name a controller's --state-dir)", path.display(), path.display());
    }
    Ok(Store::open(&path)?)
}

pub fn open(db: &DbArgs) -> Result<(Store, i64)> {
    let path = store_path(&db.store);
    let store = existing(&db.store)?;
    let run = store.resolve_run(db.run)?;
    // a recording cut short (a crash or kill during `--db`): every report says so
    let (kind, complete): (String, bool) = store.connection().query_row("SELECT kind, complete FROM runs WHERE id = ?1", [run], |r| Ok((r.get(0)?, r.get(1)?)))?;
    if !complete && kind != "live" {
        eprintln!("warning: run {run} of {} is unfinished (its recording was cut short); what follows covers the jobs written", path.display());
    }
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
        bail!("--state: unknown state `{bad}`; known: COMPLETED (CD), FAILED (F), CANCELLED (CA), TIMEOUT (TO), NODE_FAIL (NF), OUT_OF_MEMORY (OOM)");
    }
    let time = |v: &Option<String>, flag: &str| -> Result<Option<i64>> {
        v.as_deref().map(|s| parse_time(s).with_context(|| format!("{flag} {s}: expected YYYY-MM-DD[THH:MM[:SS]] (UTC) or Unix seconds"))).transpose()
    };
    let filter = Filter { users: list(&a.user), accounts: list(&a.account), states, start_time: time(&a.starttime, "--starttime")?, end_time: time(&a.endtime, "--endtime")?, steps: !a.allocations };
    if let (Some(s), Some(e)) = (filter.start_time, filter.end_time) {
        if s > e {
            bail!(
                "--starttime {} is later than --endtime {}: no job can end after the first and start before the second; expected --starttime at or before --endtime",
                a.starttime.as_deref().unwrap_or_default(),
                a.endtime.as_deref().unwrap_or_default()
            );
        }
    }
    let (store, run) = open(&a.db)?;
    // each job's steps listed under it, as sacct (but with -X)
    let jobs = acct::with_steps(acct::jobs(&store, run, &filter)?);
    let how = if a.parsable {
        Listing::Parsable
    } else if a.parsable2 {
        Listing::Parsable2
    } else {
        Listing::Columns
    };
    out!("{}", listing(&jobs, &fields, how))?;
    Ok(())
}

pub fn apel_export(a: ApelArgs) -> Result<()> {
    let kind = Message::from_kind(&format!("{:?}", a.kind).to_ascii_lowercase(), a.version.as_deref()).map_err(anyhow::Error::msg)?;
    if let Some(o) = &a.output {
        tessera_studies::files::check(&[("accounting store", &store_path(&a.db.store))], &[("--output", o)])?;
    }
    let (store, run) = open(&a.db)?;
    let (site, cluster): (String, String) = store.connection().query_row("SELECT site, cluster FROM runs WHERE id = ?1", [run], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let who = Reporter { submit_host: a.submit_host.clone().unwrap_or_else(|| format!("{site}-ce")), site, machine: cluster };
    let msg = apel::export(&store, run, kind, &who)?;
    apel::validate(&msg).map_err(|e| anyhow::anyhow!("internal error: the APEL message fails validation: {e}"))?;
    match &a.output {
        Some(p) => std::fs::write(p, &msg).with_context(|| format!("writing {}", p.display()))?,
        None => out!("{msg}")?,
    }
    Ok(())
}

fn table_format(f: ReportFormat) -> TableFormat {
    if f == ReportFormat::Csv {
        TableFormat::Csv
    } else {
        TableFormat::Text
    }
}

fn json(v: &impl serde::Serialize) -> Result<()> {
    outln!("{}", serde_json::to_string_pretty(v)?)?;
    Ok(())
}

pub fn report(cmd: ReportCommand) -> Result<()> {
    match cmd {
        ReportCommand::Utilization(a) => {
            let (store, run) = open(&a.db)?;
            let (from, to, rows) = utilization(&store, run)?;
            if a.format == ReportFormat::Json {
                return json(&serde_json::json!({ "run": run, "from": from, "to": to, "rows": rows }));
            }
            caption(&store, run, a.format)?;
            out!("{}", utilization_table(&rows).render(table_format(a.format)))?;
        }
        ReportCommand::Usage { args: a, by } => {
            let by: By = by.parse().map_err(anyhow::Error::msg)?;
            let (store, run) = open(&a.db)?;
            let rows = usage(&store, run, by)?;
            if a.format == ReportFormat::Json {
                return json(&serde_json::json!({ "run": run, "rows": rows }));
            }
            caption(&store, run, a.format)?;
            out!("{}", usage_table(&rows).render(table_format(a.format)))?;
        }
        ReportCommand::Overhead { args: a, top } => {
            let (store, run) = open(&a.db)?;
            let r = overhead(&store, run)?;
            if a.format == ReportFormat::Json {
                return json(&r);
            }
            caption(&store, run, a.format)?;
            out!("{}", overhead_text(&r, table_format(a.format), top))?;
        }
        ReportCommand::Bill { args: a, prices } => {
            let (store, run) = open(&a.db)?;
            let r = bill(&store, run, prices.prices())?;
            if a.format == ReportFormat::Json {
                return json(&r);
            }
            caption(&store, run, a.format)?;
            out!("{}", bill_text(&r, table_format(a.format)))?;
        }
        ReportCommand::Html { db, output, prices } => {
            tessera_studies::files::check(&[("accounting store", &store_path(&db.store))], &[("--output", &output)])?;
            let (store, run) = open(&db)?;
            let data = RunData::load(&store, run, prices.prices())?;
            tessera_studies::files::write_report(&output, &data.page())?;
        }
    }
    Ok(())
}

/// A text report's first line: which run of which store it covers (CSV and JSON
/// stay data only; JSON carries the run id).
fn caption(store: &Store, run: i64, format: ReportFormat) -> Result<()> {
    if format != ReportFormat::Table {
        return Ok(());
    }
    let (label, policy, site): (String, String, String) = store.connection().query_row("SELECT label, policy, site FROM runs WHERE id = ?1", [run], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    let q = tessera_core::quote::text;
    outln!("run {run} of {}: {} (site {}, policy {})\n", q(store.path()), q(&label), q(&site), q(&policy))?;
    Ok(())
}

pub fn runs(a: StoreArgs) -> Result<()> {
    let store = existing(&a)?;
    let mut t = Table::new(&["id", "kind", "state", "jobs", "recorded", "policy", "label"]);
    for r in store.runs()? {
        let state = if r.complete { "complete" } else if r.kind == "live" { "live" } else { "unfinished" };
        t.row(vec![r.id.to_string(), r.kind, state.into(), r.jobs.to_string(), tessera_accounting::civil::datetime(r.recorded_at), r.policy, r.label]);
    }
    out!("{}", t.text())?;
    Ok(())
}

pub fn prune(a: PruneArgs) -> Result<()> {
    let mut store = existing(&a.store)?;
    let path = store.path().to_string();
    let runs = store.runs()?;
    let now = tessera_proto::unix_now();
    let mut gone = Vec::new();
    if a.run.is_empty() {
        gone.extend(runs.iter().filter(|r| r.kind == "simulation" && !r.complete && now - r.recorded_at >= a.min_age));
    } else {
        for id in &a.run {
            let Some(r) = runs.iter().find(|r| r.id == *id) else { bail!("--run {id}: {path} has no run {id}") };
            if r.kind == "live" {
                bail!("--run {id}: run {id} of {path} is a live controller's accounting; prune removes simulation runs only");
            }
            gone.push(r);
        }
    }
    let verb = if a.dry_run { "would remove" } else { "removed" };
    for r in &gone {
        let state = if r.complete { "complete" } else { "unfinished" };
        outln!("{verb} run {} ({state} simulation of {} jobs, recorded {}): {}", r.id, r.jobs, tessera_accounting::civil::datetime(r.recorded_at), tessera_core::quote::text(&r.label))?;
    }
    // the store and its write-ahead log
    let size = || ["", "-wal"].iter().map(|x| std::fs::metadata(format!("{path}{x}")).map_or(0, |m| m.len())).sum::<u64>();
    let before = size();
    if !a.dry_run && !gone.is_empty() {
        store.remove_runs(&gone.iter().map(|r| r.id).collect::<Vec<_>>())?;
    }
    let after = size();
    if a.dry_run {
        outln!("{path}: would remove {} of {} runs", gone.len(), runs.len())?;
    } else {
        outln!("{path}: removed {} of {} runs; {before} -> {after} bytes", gone.len(), runs.len())?;
    }
    Ok(())
}
