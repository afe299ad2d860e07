//! `tessera workload generate` and `tessera workload info`.

use crate::out::{out, outln};
use crate::cli::{Format, GenerateArgs, InfoArgs, Model};
use anyhow::{Context, Result};
use std::io::Write;
use tessera_workload::lublin::{generate as lublin, LublinParams};
use tessera_workload::swf::SwfWriter;

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

pub fn info(a: InfoArgs) -> Result<()> {
    let info = tessera_studies::trace_info::read(&tessera_workload::traces::resolve(&a.trace)?, a.lenient)?;
    match a.format {
        Format::Json => outln!("{}", serde_json::to_string_pretty(&info)?),
        Format::Table => out!("{info}"),
    }
}
