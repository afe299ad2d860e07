//! `tessera import …`: the arguments and what each command does (the binary
//! only dispatches here).

use crate::conf::{self, ImportError, Place};
use crate::factors::Factors;
use crate::site;
use std::path::PathBuf;

#[derive(Debug, clap::Subcommand)]
pub enum ImportCommand {
    /// A slurm.conf (with its Include files) as a Tessera cluster file: NodeName
    /// and PartitionName lines become node types and partitions; every setting
    /// it cannot represent is listed with its file and line.
    SlurmConf(SlurmConfArgs),
    /// A Slurm job history (sacct -P -a -D --format=…, header line included)
    /// on the site's cluster file: a workload for the simulator (-o, SWF)
    /// and records in an accounting store (--db), steps folded into their job.
    Sacct(SacctArgs),
}

#[derive(Debug, clap::Args)]
pub struct SacctArgs {
    /// sacct's output: `sacct -P -a -D -S START -E END --format=` the fields
    /// docs/slurm.md lists (tessera_slurm::sacct::FORMAT), header included.
    pub file: PathBuf,
    /// The cluster the jobs ran on: its slurm.conf imported with `tessera import slurm-conf`.
    #[arg(long, value_name = "FILE")]
    pub cluster: PathBuf,
    /// Record the jobs in this accounting store (SQLite, created if missing), as
    /// one run `tessera acct`, `tessera report` and APEL export read.
    #[arg(long, value_name = "STORE")]
    pub db: Option<PathBuf>,
    /// Write the jobs as a workload for `tessera sim run --trace` (SWF).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Site name of the run, APEL's Site (default: the cluster's name).
    #[arg(long)]
    pub site: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct SlurmConfArgs {
    /// The slurm.conf to read (Include files are found in its directory unless absolute).
    pub conf: PathBuf,
    /// Benchmarks (HEP-SPEC06 per core) by feature, NodeName or node name: a
    /// TOML file with a [benchmarks] table, and optionally [reference]
    /// hs06_per_core (docs/slurm.md). Without it, nodes get no benchmark.
    #[arg(long, value_name = "FILE")]
    pub factors: Option<PathBuf>,
    /// Write the cluster file here (default: standard output).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

fn io_err(file: &str, what: &str, e: impl std::fmt::Display) -> ImportError {
    ImportError::new(&Place { file: file.to_string(), line: 0 }, "", format!("cannot {what}: {e}"))
}

/// Run an import command. Returns what goes to standard output; the list of
/// settings left out goes to `report` (standard error in the binary).
pub fn run(cmd: ImportCommand, report: &mut dyn std::io::Write) -> Result<String, ImportError> {
    match cmd {
        ImportCommand::SlurmConf(a) => slurm_conf(a, report),
        ImportCommand::Sacct(a) => sacct(a, report),
    }
}

fn sacct(a: SacctArgs, report: &mut dyn std::io::Write) -> Result<String, ImportError> {
    use tessera_accounting::store::{RunInfo, RunKind, Store};
    if a.db.is_none() && a.output.is_none() {
        return Err(io_err(&a.file.display().to_string(), "import it", "nothing to write: give --db STORE, -o WORKLOAD.swf, or both"));
    }
    let name = a.file.display().to_string();
    let text = std::fs::read_to_string(&a.file).map_err(|e| io_err(&name, "read it", e))?;
    let cname = a.cluster.display().to_string();
    let ctext = std::fs::read_to_string(&a.cluster).map_err(|e| io_err(&cname, "read it", e))?;
    let cluster = tessera_core::cluster::Cluster::from_toml(&ctext, &cname).map_err(|e| io_err(&cname, "read it", e))?;
    let h = crate::sacct::read(&text, &name)?;
    let mut out = String::new();
    let arrays = h.jobs.iter().filter(|j| j.array.is_some()).count();
    let het = h.jobs.iter().filter(|j| j.het.is_some()).count();
    let _ = writeln!(
        report,
        "{name}: {} rows: {} jobs ({arrays} array tasks, {het} heterogeneous components), {} steps folded into their jobs, {} earlier runs of requeued jobs folded, {} rows of jobs not finished left out",
        h.rows,
        h.jobs.len(),
        h.steps,
        h.requeued_runs,
        h.unfinished
    );
    // every node is checked before anything is written
    let (epoch, records) = crate::history::records(&h, &cluster, &name)?;
    if let Some(p) = &a.output {
        let pname = p.display().to_string();
        let (header, swf) = crate::history::swf(&h, &cluster, &name);
        let write = || -> std::io::Result<()> {
            let mut w = tessera_workload::SwfWriter::new(std::io::BufWriter::new(std::fs::File::create(p)?));
            for l in &header {
                w.write_comment(l)?;
            }
            for r in &swf {
                w.write_record(r)?;
            }
            Ok(())
        };
        write().map_err(|e| io_err(&pname, "write it", e))?;
        out.push_str(&format!("wrote {pname}: {} jobs\n", swf.len()));
    }
    if let Some(p) = &a.db {
        let pname = p.display().to_string();
        let mut store = Store::open(p).map_err(|e| io_err(&pname, "open it", e))?;
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
        let run = RunInfo { kind: RunKind::Imported, label: name.clone(), site: a.site.clone().unwrap_or_else(|| if cluster.name.is_empty() { "slurm".to_string() } else { cluster.name.clone() }), cluster: cluster.name.clone(), policy: "slurm".into(), epoch_offset: epoch, recorded_at: now };
        let n = records.len();
        let id = store.record_run(&run, &tessera_accounting::store::NodeRecord::from_cluster(&cluster), records).map_err(|e| io_err(&pname, "record the jobs", e))?;
        out.push_str(&format!("recorded {n} jobs in {pname} as run {id}\n"));
    }
    Ok(out)
}

fn slurm_conf(a: SlurmConfArgs, report: &mut dyn std::io::Write) -> Result<String, ImportError> {
    let conf_name = a.conf.display().to_string();
    let load = |p: &str| std::fs::read_to_string(p).map_err(|e| e.to_string());
    let lines = conf::read(&conf_name, &load)?;
    let factors = match &a.factors {
        None => None,
        Some(p) => {
            let name = p.display().to_string();
            let text = std::fs::read_to_string(p).map_err(|e| io_err(&name, "read it", e))?;
            Some(Factors::from_toml(&text, &name)?)
        }
    };
    let out_name = a.output.as_ref().map_or_else(|| "(standard output)".to_string(), |p| p.display().to_string());
    let imported = site::import(&lines, factors.as_ref(), &out_name)?;
    let c = &imported.cluster;
    let summary = format!(
        "{}: {} nodes ({} cores) in {} node types, {} partitions; {} settings not represented",
        conf_name,
        c.nodes.len(),
        c.nodes.iter().map(|n| n.cores as u64).sum::<u64>(),
        c.node_types.len(),
        c.partitions.len(),
        imported.notes.len()
    );
    let _ = writeln!(report, "{summary}");
    let _ = write!(report, "{}", site::report(&imported.notes));
    match &a.output {
        None => Ok(imported.toml),
        Some(p) => {
            std::fs::write(p, &imported.toml).map_err(|e| io_err(&out_name, "write it", e))?;
            Ok(format!("wrote {out_name}\n"))
        }
    }
}
