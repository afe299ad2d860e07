//! Per-job outputs: a CSV table and an SWF file with the simulated waits.

use crate::run::SimOutcome;
use crate::workload::{Machine, Workload};
use tessera_core::{hostlist, quote};
use std::io::{self, Write};
use tessera_workload::swf::{SwfHeader, SwfRecord, SwfWriter};

/// One row per simulated job, in queue order:
/// `job_id,submit,start,end,procs,estimate,wait,killed,factor,raw_s,normalized_s,nodes`
/// (integer seconds; `factor` is the pace of the job's slowest node, `raw_s` the
/// seconds it ran, `normalized_s` = raw × factor in reference seconds, `nodes` the
/// hostlist it ran on, in double quotes, empty without a cluster). Names are
/// CSV cells as `tessera_core::quote::csv` writes them (RFC 4180, control
/// characters escaped), so a node or profile name cannot add a row or a column.
///
/// Power-aware runs size jobs in nodes (`procs` is the trace size in nodes) and
/// add `app,n_min,start_nodes,node_s,energy_j`: the job's application profile,
/// its minimum size, the nodes it started on, the node-seconds it held (nodes can
/// change while a malleable job runs) and the energy its nodes drew (J).
pub fn write_jobs_csv<W: Write>(out: W, w: &Workload, o: &SimOutcome) -> io::Result<()> {
    let mut out = io::BufWriter::new(out);
    let power = o.power.as_ref().filter(|_| !w.power_jobs.is_empty());
    write!(out, "job_id,submit,start,end,procs,estimate,wait,killed,factor,raw_s,normalized_s,nodes")?;
    writeln!(out, "{}", if power.is_some() { ",app,n_min,start_nodes,node_s,energy_j" } else { "" })?;
    for (i, j) in w.jobs.iter().enumerate() {
        let raw = o.end[i] - o.start[i];
        let f = o.factor_of(i);
        let nodes = match (&w.machine, o.alloc.get(i)) {
            (Machine::Cluster { cluster, .. }, Some(parts)) => {
                let names: Vec<&str> = parts.map(|p| cluster.nodes[p.node as usize].name.as_str()).collect();
                quote::csv_quoted(&hostlist::compress(&names))
            }
            _ => String::new(),
        };
        write!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{}",
            j.id,
            j.submit,
            o.start[i],
            o.end[i],
            j.procs,
            j.estimate,
            o.start[i] - j.submit,
            u8::from(j.runtime > j.estimate),
            f,
            raw,
            (raw as f64 * f).round() as i64,
            nodes
        )?;
        if let Some(p) = power {
            let pj = &w.power_jobs[i];
            write!(out, ",{},{},{},{:.0},{:.0}", quote::csv(&pj.app.name), pj.n_min, p.start_nodes[i], p.job_node_s[i], p.job_energy_j[i])?;
        }
        writeln!(out)?;
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
        r.allocated_procs = match (&w.machine, &o.power) {
            (Machine::Power(s), Some(p)) => p.start_nodes[i] as i64 * s.info.cores_per_node as i64,
            _ => j.procs as i64,
        };
        writer.write_record(&r)?;
    }
    writer.into_inner().flush()
}
