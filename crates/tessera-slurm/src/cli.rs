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
    }
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
