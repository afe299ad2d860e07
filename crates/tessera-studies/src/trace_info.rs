//! What a trace holds (`tessera workload info`): its header, its records, and
//! how many of its jobs a simulation would replay (the simulator's own job
//! semantics, on a machine of the size the header gives).

use anyhow::Result;
use std::collections::BTreeMap;
use std::path::Path;
use tessera_sim::workload::prepare;
use tessera_workload::swf::SwfReader;

/// A trace's header and counts.
#[derive(serde::Serialize, Debug)]
pub struct TraceInfo {
    pub trace: String,
    pub records: usize,
    pub malformed_lines_skipped: u64,
    pub version: Option<String>,
    pub computer: Option<String>,
    pub installation: Option<String>,
    pub max_nodes: Option<u64>,
    pub max_procs: Option<u64>,
    pub unix_start_time: Option<i64>,
    pub time_zone_string: Option<String>,
    pub first_submit: Option<i64>,
    pub last_submit: Option<i64>,
    pub jobs_simulatable: usize,
    pub jobs_skipped: BTreeMap<String, u64>,
    /// With `lenient`, what the reader skipped, by reason (when it skipped any).
    #[serde(skip)]
    pub skipped_lines: Option<String>,
}

/// Read the trace at `path` (with `lenient`, malformed lines are skipped and counted).
pub fn read(path: &Path, lenient: bool) -> Result<TraceInfo> {
    let (h, records, report) = SwfReader::read_file(path, lenient)?;
    let size = h.machine_size().and_then(|s| u32::try_from(s).ok()).unwrap_or(u32::MAX);
    let w = prepare(&records, size);
    Ok(TraceInfo {
        trace: path.display().to_string(),
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
        skipped_lines: (report.skipped > 0).then(|| report.to_string()),
    })
}

impl std::fmt::Display for TraceInfo {
    /// One `key value` line per field, as the JSON names them, then what was skipped.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = serde_json::to_value(self).map_err(|_| std::fmt::Error)?;
        for (k, val) in v.as_object().expect("an object") {
            writeln!(f, "{k:<24} {}", if val.is_string() { val.as_str().unwrap().to_string() } else { val.to_string() })?;
        }
        if let Some(s) = &self.skipped_lines {
            writeln!(f, "{s}")?;
        }
        Ok(())
    }
}
