//! `tessera metrics`: the classical scheduling metrics of a live run, from the
//! sleep jobs' log (`tessera replay`) or from an accounting store, computed by
//! the same code as the simulator's summary (`tessera_sim::metrics::Classic`),
//! as the thesis's `calcmets` does from `sigsleep`'s log.

use crate::out::{out, outln};
use crate::live_args::ListFormat;
use anyhow::{bail, Result};
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;
use tessera_accounting::store::Store;
use tessera_sim::metrics::{Classic, Throughput};
use tessera_sim::sleeplog::{read_log, SleepRecord};

#[derive(Args, Debug)]
pub struct MetricsArgs {
    /// A sleep jobs' log (JSON lines, as `tessera sleep-job` writes).
    #[arg(long, conflicts_with_all = ["db", "state_dir"])]
    pub log: Option<PathBuf>,
    /// An accounting store (a simulation's --db, or a controller's accounting.db).
    #[arg(long, conflicts_with = "state_dir")]
    pub db: Option<PathBuf>,
    /// A controller's state directory: its live accounting store.
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// Run of the store (default: the latest).
    #[arg(long)]
    pub run: Option<i64>,
    /// Processors of the machine, for utilization (a store knows its nodes; a
    /// log does not).
    #[arg(long)]
    pub capacity: Option<u64>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ListFormat,
}

#[derive(Serialize)]
struct Report {
    source: String,
    capacity: Option<u64>,
    #[serde(flatten)]
    metrics: Classic,
    throughput: Throughput,
}

pub fn metrics(a: MetricsArgs) -> Result<()> {
    // a power-budgeted run's nodes and power samples: its utilization is its
    // nodes busy as sampled (as the summary of sim run and the report count it)
    let (source, times, capacity, sampled) = if let Some(log) = &a.log {
        if a.run.is_some() {
            bail!("--run applies to an accounting store (--db, --state-dir), not to --log");
        }
        let recs = read_log(log)?;
        (log.display().to_string(), recs.iter().map(SleepRecord::times).collect::<Vec<_>>(), a.capacity, None)
    } else {
        let path = match (&a.db, &a.state_dir) {
            (Some(db), _) => db.clone(),
            (None, Some(dir)) => dir.join("accounting.db"),
            (None, None) => bail!("give the jobs: --log FILE (sleep jobs), --db FILE or --state-dir DIR (accounting store)"),
        };
        if !path.is_file() {
            bail!("{}: no accounting store there", path.display());
        }
        let store = Store::open(&path)?;
        let run = store.resolve_run(a.run)?;
        let times = tessera_report::run::job_times(&store, run)?;
        let (nodes, cores) = tessera_report::run::cores(&store, run)?;
        let power = store.power(run)?;
        let sampled = (a.capacity.is_none() && !power.is_empty()).then_some((power, nodes));
        (format!("{} run {run}", path.display()), times, a.capacity.or((cores > 0).then_some(cores)), sampled)
    };
    let mut m = Classic::compute(&times, capacity.map(|c| c as f64));
    if let Some((power, nodes)) = &sampled {
        m.utilization = Some(tessera_report::run::sampled_utilization(power, &m, *nodes));
    }
    let throughput = Throughput::compute(&times);
    match a.format {
        ListFormat::Json => outln!("{}", serde_json::to_string_pretty(&Report { source, capacity, metrics: m, throughput })?)?,
        ListFormat::Table => {
            outln!("{source}{}", capacity.map_or_else(|| " (utilization needs --capacity)".to_string(), |c| format!(" ({c} processors)")))?;
            out!("{}", crate::replay_cmd::metrics_table(&m))?;
            let t = &throughput;
            outln!("  starts per second: {:.2} from the first start to the last, {:.1} in the busiest {} s ({} starts)", t.mean_starts_per_s, t.peak_starts_per_s, Throughput::WINDOW_S, t.starts)?;
        }
    }
    Ok(())
}
