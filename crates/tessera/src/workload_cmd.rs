//! `tessera workload generate` and `tessera workload info`.

use crate::out::outln;
use crate::cli::{Format, GenerateArgs, InfoArgs, Model};
use anyhow::{Context, Result};
use std::io::Write;
use tessera_sim::workload::prepare;
use tessera_workload::lublin::{generate as lublin, LublinParams};
use tessera_workload::swf::{SwfReader, SwfWriter};

pub fn generate(a: GenerateArgs) -> Result<()> {
    anyhow::ensure!(a.procs >= 1, "--procs {}: expected at least 1 processor", a.procs);
    anyhow::ensure!(a.arrival_factor.is_finite() && a.arrival_factor > 0.0, "--arrival-factor {}: expected a number > 0", a.arrival_factor);
    let (header, records) = match a.model {
        Model::Lublin => {
            let mut p = LublinParams::new(a.procs, a.jobs, a.seed);
            p.arrival_factor = a.arrival_factor;
            lublin(&p).with_context(|| format!("--jobs {} --arrival-factor {:?}", a.jobs, a.arrival_factor))?
        }
    };
    let out: Box<dyn Write> = match &a.output {
        Some(p) => Box::new(std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?),
        None => Box::new(std::io::stdout().lock()),
    };
    let written = (|| -> std::io::Result<()> {
        let mut w = SwfWriter::new(std::io::BufWriter::new(out));
        w.write_header(&header)?;
        for r in &records {
            w.write_record(r)?;
        }
        w.into_inner().flush()
    })();
    match &a.output {
        None => crate::out::checked(written),
        Some(p) => written.with_context(|| format!("writing {}", p.display())),
    }
}

#[derive(serde::Serialize)]
struct Info {
    trace: String,
    records: usize,
    malformed_lines_skipped: u64,
    version: Option<String>,
    computer: Option<String>,
    installation: Option<String>,
    max_nodes: Option<u64>,
    max_procs: Option<u64>,
    unix_start_time: Option<i64>,
    time_zone_string: Option<String>,
    first_submit: Option<i64>,
    last_submit: Option<i64>,
    jobs_simulatable: usize,
    jobs_skipped: std::collections::BTreeMap<String, u64>,
}

pub fn info(mut a: InfoArgs) -> Result<()> {
    a.trace = tessera_workload::traces::resolve(&a.trace)?;
    let (h, records, report) = SwfReader::read_file(&a.trace, a.lenient)?;
    let size = h.machine_size().and_then(|s| u32::try_from(s).ok()).unwrap_or(u32::MAX);
    let w = prepare(&records, size);
    let info = Info {
        trace: a.trace.display().to_string(),
        records: records.len(),
        malformed_lines_skipped: report.skipped,
        version: h.version.clone(),
        computer: h.computer.clone(),
        installation: h.installation.clone(),
        max_nodes: h.max_nodes,
        max_procs: h.max_procs,
        unix_start_time: h.unix_start_time,
        time_zone_string: h.time_zone_string.clone(),
        first_submit: records.iter().map(|r| r.submit_time).min(),
        last_submit: records.iter().map(|r| r.submit_time).max(),
        jobs_simulatable: w.jobs.len(),
        jobs_skipped: w.skipped.iter().map(|(k, v)| (k.key().to_string(), *v)).collect(),
    };
    match a.format {
        Format::Json => outln!("{}", serde_json::to_string_pretty(&info)?)?,
        Format::Table => {
            let v = serde_json::to_value(&info)?;
            for (k, val) in v.as_object().unwrap() {
                outln!("{k:<24} {}", if val.is_string() { val.as_str().unwrap().to_string() } else { val.to_string() })?;
            }
            if report.skipped > 0 {
                outln!("{report}")?;
            }
        }
    }
    Ok(())
}
