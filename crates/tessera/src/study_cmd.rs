//! `tessera sim compare` and `tessera sim sweep`: many simulations at once
//! (`tessera_studies::compare`, `tessera_studies::sweep`), each variant or case
//! a `RunSpec` run as `sim run` runs it.

use crate::cli::{CompareArgs, Format, SimRunArgs, SweepArgs, SweepCommand};
use crate::out::{out, outln};
use anyhow::{bail, Context, Result};
use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches, Parser};
use tessera_studies::files::write_report;
use tessera_studies::parallel::cores;
use tessera_studies::{compare, sweep};

/// The flags of `sim run`, as given after `--` to `sim compare`.
#[derive(Parser)]
#[command(name = "sim run", no_binary_name = true)]
struct RunFlags {
    #[command(flatten)]
    run: SimRunArgs,
}

pub fn compare(a: CompareArgs) -> Result<()> {
    let policies: Vec<&str> = a.policy.split(',').map(str::trim).filter(|p| !p.is_empty()).collect();
    if policies.is_empty() {
        bail!("--policy: name at least one policy (fcfs, easy, conservative, parm)");
    }
    // the flags every variant shares; the comparison names the policy of each,
    // and its trace and cluster when it gives them
    let bad = |e: clap::Error| anyhow::anyhow!("`sim run {}`: {}", a.flags.join(" "), e.to_string().trim_end());
    let m = RunFlags::command().try_get_matches_from(&a.flags).map_err(bad)?;
    for (id, own) in [("policy", true), ("trace", a.trace.is_some()), ("cluster", !a.cluster.is_empty()), ("priority", a.priority.is_some())] {
        if own && m.value_source(id) == Some(ValueSource::CommandLine) {
            bail!("`sim run {}`: --{id} is given to sim compare itself; give it once, before `--`", a.flags.join(" "));
        }
    }
    let mut base = crate::sim_cmd::spec_of(&RunFlags::from_arg_matches(&m).map_err(bad)?.run);
    base.trace = a.trace.clone().or(base.trace);
    let priorities: Vec<&str> = a.priority.as_deref().map(|p| p.split(',').map(str::trim).filter(|p| !p.is_empty()).collect()).unwrap_or_default();
    let variants = compare::variants_with(&base, &policies, &priorities, &a.cluster)?;
    let (label, variants) = compare::run(&variants, a.threads.unwrap_or_else(cores))?;
    write_report(&a.report, &tessera_report::study::compare_page(&label, &variants))?;
    let t = tessera_report::study::difference_table(&variants);
    match a.format {
        Format::Table => out!("{}", t.text())?,
        Format::Json => outln!("{}", serde_json::to_string_pretty(&serde_json::json!({ "trace": label, "header": t.header, "rows": t.rows }))?)?,
    }
    Ok(())
}

pub fn sweep(a: SweepArgs) -> Result<()> {
    if let Some(SweepCommand::Merge { parts, out, sweep, report }) = a.merge {
        return sweep::merge(&parts, &out, sweep.as_deref(), report.as_deref());
    }
    let file = a.file.context("name a sweep file (tessera sim sweep FILE.toml), or `merge` slices")?;
    let s = sweep::load(&file)?;
    if a.out == file {
        bail!("--out {}: that is the sweep file", a.out.display());
    }
    let (i, n) = a.shard.as_deref().map(sweep::shard).transpose()?.unwrap_or((0, 1));
    let mine: Vec<&sweep::Case> = s.cases.iter().filter(|c| c.index % n == i).collect();
    // every case's run is built before anything runs
    let specs = sweep::specs(&file, &mine)?;
    if a.list {
        for c in &mine {
            outln!("{}\ttessera sim run {}", c.index, c.command())?;
        }
        return Ok(());
    }
    let what = format!("sweep cases (shard {i}/{n} of {} cases)", s.cases.len());
    let t = sweep::run(&file, s.header, &specs, a.threads.unwrap_or_else(cores), &what)?;
    sweep::write_results(&t, &a.out, a.report.as_deref(), &file.display().to_string())
}
