//! Per-job outputs: a CSV table and an SWF file with the simulated waits.

use crate::run::SimOutcome;
use crate::workload::Workload;
use std::io::{self, Write};
use tessera_workload::swf::{SwfHeader, SwfRecord, SwfWriter};

/// One row per simulated job, in queue order:
/// `job_id,submit,start,end,procs,estimate,wait,killed` (integer seconds).
pub fn write_jobs_csv<W: Write>(out: W, w: &Workload, o: &SimOutcome) -> io::Result<()> {
    let mut out = io::BufWriter::new(out);
    writeln!(out, "job_id,submit,start,end,procs,estimate,wait,killed")?;
    for (i, j) in w.jobs.iter().enumerate() {
        writeln!(
            out,
            "{},{},{},{},{},{},{},{}",
            j.id,
            j.submit,
            o.start[i],
            o.end[i],
            j.procs,
            j.estimate,
            o.start[i] - j.submit,
            u8::from(j.runtime > j.estimate)
        )?;
    }
    out.flush()
}

/// The input records of the simulated jobs, in queue order, with field 3 (wait)
/// and field 4 (run time) replaced by the simulated values and field 5 by the
/// processors allocated. The input header is kept and a note added.
pub fn write_swf<W: Write>(
    out: W,
    header: &SwfHeader,
    note: &str,
    records: &[SwfRecord],
    w: &Workload,
    o: &SimOutcome,
) -> io::Result<()> {
    let mut writer = SwfWriter::new(io::BufWriter::new(out));
    writer.write_header(header)?;
    writer.write_comment(&format!("Note: {note}"))?;
    for (i, j) in w.jobs.iter().enumerate() {
        let mut r = records[w.record_index[i] as usize];
        r.wait_time = o.start[i] - j.submit;
        r.run_time = o.end[i] - o.start[i];
        r.allocated_procs = j.procs as i64;
        writer.write_record(&r)?;
    }
    writer.into_inner().flush()
}
