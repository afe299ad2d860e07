//! The classical scheduling metrics of a live run (`tessera metrics`), from the
//! sleep jobs' log (`tessera replay`) or from an accounting store, computed by
//! the same code as the simulator's summary (`tessera_sim::metrics::Classic`),
//! as the thesis's `calcmets` does from `sigsleep`'s log.

use anyhow::{bail, Result};
use serde::Serialize;
use std::path::PathBuf;
use tessera_accounting::store::Store;
use tessera_sim::metrics::{Classic, Throughput};
use tessera_sim::sleeplog::{read_log, SleepRecord};

/// Where a live run's jobs are: `tessera metrics`'s settings.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// A sleep jobs' log.
    pub log: Option<PathBuf>,
    /// An accounting store.
    pub db: Option<PathBuf>,
    /// A controller's state directory (its live accounting store).
    pub state_dir: Option<PathBuf>,
    /// Run of the store (default: the latest).
    pub run: Option<i64>,
    /// Processors of the machine, for utilization.
    pub capacity: Option<u64>,
}

/// The metrics of a run.
#[derive(Serialize, Debug)]
pub struct Report {
    pub source: String,
    pub capacity: Option<u64>,
    #[serde(flatten)]
    pub metrics: Classic,
    pub throughput: Throughput,
}

/// The metrics of the jobs `a` names.
pub fn compute(a: &Options) -> Result<Report> {
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
    Ok(Report { source, capacity, metrics: m, throughput })
}

impl std::fmt::Display for Report {
    /// The metrics as a table, one line each, and the rate of starts.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{}{}", self.source, self.capacity.map_or_else(|| " (utilization needs --capacity)".to_string(), |c| format!(" ({c} processors)")))?;
        write!(f, "{}", crate::replay::metrics_table(&self.metrics))?;
        let t = &self.throughput;
        writeln!(f, "  starts per second: {:.2} from the first start to the last, {:.1} in the busiest {} s ({} starts)", t.mean_starts_per_s, t.peak_starts_per_s, Throughput::WINDOW_S, t.starts)
    }
}
