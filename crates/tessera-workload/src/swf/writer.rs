//! SWF writer: header comment lines verbatim, then one record per line.

use super::header::SwfHeader;
use super::record::SwfRecord;
use std::io::{self, Write};

pub struct SwfWriter<W: Write> {
    out: W,
}

impl<W: Write> SwfWriter<W> {
    pub fn new(out: W) -> Self {
        SwfWriter { out }
    }

    /// Write the header's comment lines as they were read (each starting with `;`).
    pub fn write_header(&mut self, header: &SwfHeader) -> io::Result<()> {
        for line in &header.lines {
            if line.starts_with(';') {
                writeln!(self.out, "{line}")?;
            } else {
                writeln!(self.out, "; {line}")?;
            }
        }
        Ok(())
    }

    /// A `; text` line; control characters in `text` are escaped
    /// (`tessera_core::quote::text`), so a comment cannot end its line and add a
    /// record or a header field.
    pub fn write_comment(&mut self, text: &str) -> io::Result<()> {
        writeln!(self.out, "; {}", tessera_core::quote::text(text))
    }

    pub fn write_record(&mut self, r: &SwfRecord) -> io::Result<()> {
        writeln!(
            self.out,
            "{} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {}",
            r.job_number,
            r.submit_time,
            r.wait_time,
            r.run_time,
            r.allocated_procs,
            Dec(r.avg_cpu_time),
            Dec(r.used_memory),
            r.requested_procs,
            r.requested_time,
            r.requested_memory,
            r.status,
            r.user_id,
            r.group_id,
            r.executable,
            r.queue,
            r.partition,
            r.preceding_job,
            r.think_time
        )
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

/// A decimal field: integers without a fraction, others in the shortest form that
/// reads back to the same value.
struct Dec(f64);

impl std::fmt::Display for Dec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.fract() == 0.0 && self.0.abs() < 1e15 {
            write!(f, "{}", self.0 as i64)
        } else {
            write!(f, "{}", self.0)
        }
    }
}
