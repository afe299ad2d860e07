//! `tessera metrics`: the classical scheduling metrics of a live run, from the
//! sleep jobs' log (`tessera replay`) or from an accounting store, computed by
//! the same code as the simulator's summary (`tessera_sim::metrics::Classic`),
//! as the thesis's `calcmets` does from `sigsleep`'s log.

use crate::live_args::ListFormat;
use anyhow::{bail, Context, Result};
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;
use tessera_accounting::store::Store;
use tessera_sim::metrics::{Classic, JobTimes, Throughput};
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
    let (source, times, capacity) = if let Some(log) = &a.log {
        if a.run.is_some() {
            bail!("--run applies to an accounting store (--db, --state-dir), not to --log");
        }
        let recs = read_log(log)?;
        (log.display().to_string(), recs.iter().map(SleepRecord::times).collect::<Vec<_>>(), a.capacity)
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
        let jobs = tessera_accounting::acct::jobs(&store, run, &Default::default())?;
        let cores: Option<i64> = store.connection().query_row("SELECT SUM(cores) FROM nodes WHERE run_id = ?1", [run], |r| r.get(0)).context("reading the run's nodes")?;
        // jobs that held cores: a job cancelled while it waited never ran
        let times = jobs
            .iter()
            .filter(|j| j.alloc_cores > 0 && j.end >= j.start)
            .map(|j| {
                // wall_raw_s is what ran: end − start − suspended
                JobTimes { submit: j.submit as f64, start: j.start as f64, end: j.end as f64, suspended: j.suspended_s as f64, procs: j.req_procs as f64, held: (j.alloc_cores * j.wall_raw_s) as f64 }
            })
            .collect();
        (format!("{} run {run}", path.display()), times, a.capacity.or(cores.map(|c| c as u64)))
    };
    let m = Classic::compute(&times, capacity.map(|c| c as f64));
    let throughput = Throughput::compute(&times);
    match a.format {
        ListFormat::Json => println!("{}", serde_json::to_string_pretty(&Report { source, capacity, metrics: m, throughput })?),
        ListFormat::Table => {
            println!("{source}{}", capacity.map_or_else(|| " (utilization needs --capacity)".to_string(), |c| format!(" ({c} processors)")));
            print!("{}", crate::replay_cmd::metrics_table(&m));
            let t = &throughput;
            println!("  starts per second: {:.2} from the first start to the last, {:.1} in the busiest {} s ({} starts)", t.mean_starts_per_s, t.peak_starts_per_s, Throughput::WINDOW_S, t.starts);
        }
    }
    Ok(())
}
