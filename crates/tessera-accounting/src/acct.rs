//! Job listing, sacct-like: fields by Slurm name, filters by user, account, state
//! and time window.

use crate::store::{Store, StoreError};
use rusqlite::params;
use std::collections::BTreeMap;
use tessera_core::hostlist;

/// One job as listed.
#[derive(Debug, Clone, PartialEq)]
pub struct AcctJob {
    pub job_id: i64,
    pub name: String,
    pub user: String,
    pub group: String,
    pub account: String,
    pub partition: String,
    pub submit: i64,
    pub start: i64,
    pub end: i64,
    pub state: String,
    pub exit_code: i64,
    /// The signal that ended it, or 0.
    pub signal: i64,
    /// Why it ended, when known beyond its state (a launch that failed).
    pub reason: String,
    /// (array job, task) of an array task: JobID `7_3`.
    pub array: Option<(i64, i64)>,
    pub req_procs: i64,
    pub req_mem_mb: i64,
    pub time_limit: i64,
    pub alloc_cores: i64,
    pub alloc_nodes: i64,
    pub node_list: String,
    pub factor: f64,
    /// Seconds charged: end − start − suspended.
    pub wall_raw_s: i64,
    /// Seconds suspended between start and end (not charged).
    pub suspended_s: i64,
    pub wall_norm_s: f64,
    pub cpu_raw_s: f64,
    pub cpu_norm_s: f64,
    pub core_hours: f64,
    pub norm_core_hours: f64,
    pub hs06_hours: Option<f64>,
    pub hs06_per_core: Option<f64>,
    /// Energy its nodes drew (J), when the power-aware scheduler measured or
    /// modelled it.
    pub energy_j: Option<f64>,
    /// Seconds to add to turn run times into Unix times.
    pub epoch_offset: i64,
    /// The peak memory its cgroups counted, KiB (confined live jobs).
    pub max_rss_kb: Option<i64>,
    /// Tasks (a step's; a job's requested processors otherwise).
    pub ntasks: i64,
    /// A step's row: `batch`, or the step's number (JobID `12.batch`, `12.0`).
    pub step: Option<String>,
    /// The job's steps, as rows of their own (when the filter asks for them).
    pub steps: Vec<AcctJob>,
}

/// Filters; times are Unix seconds, states Slurm names or abbreviations.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub users: Vec<String>,
    pub accounts: Vec<String>,
    /// Load each job's steps too.
    pub steps: bool,
    pub states: Vec<String>,
    /// Jobs that ended at or after this time.
    pub start_time: Option<i64>,
    /// Jobs that started at or before this time.
    pub end_time: Option<i64>,
}

/// Slurm state name for a name or abbreviation (`CD`, `F`, `CA`, `TO`).
pub fn state_name(s: &str) -> Option<&'static str> {
    Some(match s.to_ascii_uppercase().as_str() {
        "CD" | "COMPLETED" => "COMPLETED",
        "F" | "FAILED" => "FAILED",
        "CA" | "CANCELLED" => "CANCELLED",
        "TO" | "TIMEOUT" => "TIMEOUT",
        "NF" | "NODE_FAIL" => "NODE_FAIL",
        "OOM" | "OUT_OF_MEMORY" => "OUT_OF_MEMORY",
        _ => return None,
    })
}

pub fn jobs(store: &Store, run: i64, f: &Filter) -> Result<Vec<AcctJob>, StoreError> {
    let e = |source| StoreError::Sqlite { path: store.path().to_string(), source };
    let c = store.connection();
    let offset: i64 = c.query_row("SELECT epoch_offset FROM runs WHERE id = ?1", params![run], |r| r.get(0)).map_err(e)?;
    // node lists
    let mut names: BTreeMap<i64, String> = BTreeMap::new();
    {
        let mut q = c.prepare("SELECT node_id, name FROM nodes WHERE run_id = ?1").map_err(e)?;
        let rows = q.query_map(params![run], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))).map_err(e)?;
        for r in rows {
            let (k, v) = r.map_err(e)?;
            names.insert(k, v);
        }
    }
    let mut q = c
        .prepare(
            "SELECT j.id, j.job_id, j.name, j.user, j.grp, j.account, j.partition, j.submit_time, j.start_time, j.end_time, j.state, j.exit_code, j.req_procs, \
             j.req_mem_mb, j.time_limit, j.alloc_cores, j.alloc_nodes, j.factor, j.wall_raw_s, j.wall_norm_s, j.cpu_raw_s, j.cpu_norm_s, j.core_hours, \
             j.norm_core_hours, j.hs06_hours, j.hs06_per_core, (SELECT group_concat(node_id) FROM allocations a WHERE a.job = j.id), j.suspended_s, \
             j.signal, j.reason, j.array_job, j.array_task, j.energy_j, j.max_rss_kb \
             FROM jobs j WHERE j.run_id = ?1 ORDER BY j.id",
        )
        .map_err(e)?;
    let states: Vec<&str> = f.states.iter().filter_map(|s| state_name(s)).collect();
    let mut out = Vec::new();
    let mut rows = q.query(params![run]).map_err(e)?;
    while let Some(r) = rows.next().map_err(e)? {
        let user: String = r.get(3).map_err(e)?;
        let account: String = r.get(5).map_err(e)?;
        let state: String = r.get(10).map_err(e)?;
        let start: i64 = r.get(8).map_err(e)?;
        let end: i64 = r.get(9).map_err(e)?;
        if (!f.users.is_empty() && !f.users.contains(&user))
            || (!f.accounts.is_empty() && !f.accounts.contains(&account))
            || (!states.is_empty() && !states.contains(&state.as_str()))
            || f.start_time.is_some_and(|t| end + offset < t)
            || f.end_time.is_some_and(|t| start + offset > t)
        {
            continue;
        }
        let node_ids: Option<String> = r.get(26).map_err(e)?;
        let node_names: Vec<&str> = node_ids
            .iter()
            .flat_map(|s| s.split(','))
            .filter_map(|x| x.parse::<i64>().ok())
            .filter_map(|id| names.get(&id).map(|n| n.as_str()))
            .collect();
        let mut job = AcctJob {
            job_id: r.get(1).map_err(e)?,
            name: r.get(2).map_err(e)?,
            user,
            group: r.get(4).map_err(e)?,
            account,
            partition: r.get(6).map_err(e)?,
            submit: r.get(7).map_err(e)?,
            start,
            end,
            state,
            exit_code: r.get(11).map_err(e)?,
            signal: r.get(28).map_err(e)?,
            reason: r.get(29).map_err(e)?,
            array: match (r.get::<_, Option<i64>>(30).map_err(e)?, r.get::<_, Option<i64>>(31).map_err(e)?) {
                (Some(a), Some(t)) => Some((a, t)),
                _ => None,
            },
            req_procs: r.get(12).map_err(e)?,
            req_mem_mb: r.get(13).map_err(e)?,
            time_limit: r.get(14).map_err(e)?,
            alloc_cores: r.get(15).map_err(e)?,
            alloc_nodes: r.get(16).map_err(e)?,
            node_list: hostlist::compress(&node_names),
            factor: r.get(17).map_err(e)?,
            wall_raw_s: r.get(18).map_err(e)?,
            suspended_s: r.get(27).map_err(e)?,
            wall_norm_s: r.get(19).map_err(e)?,
            cpu_raw_s: r.get(20).map_err(e)?,
            cpu_norm_s: r.get(21).map_err(e)?,
            core_hours: r.get(22).map_err(e)?,
            norm_core_hours: r.get(23).map_err(e)?,
            hs06_hours: r.get(24).map_err(e)?,
            hs06_per_core: r.get(25).map_err(e)?,
            energy_j: r.get(32).map_err(e)?,
            epoch_offset: offset,
            max_rss_kb: r.get(33).map_err(e)?,
            ntasks: r.get(12).map_err(e)?,
            step: None,
            steps: Vec::new(),
        };
        if f.steps {
            job.steps = steps(store, r.get(0).map_err(e)?, &job)?;
        }
        out.push(job);
    }
    Ok(out)
}

/// Jobs, each followed by its steps' rows (as sacct lists them).
pub fn with_steps(jobs: Vec<AcctJob>) -> Vec<AcctJob> {
    let mut out = Vec::with_capacity(jobs.len());
    for mut j in jobs {
        let steps = std::mem::take(&mut j.steps);
        out.push(j);
        out.extend(steps);
    }
    out
}

/// A job's steps, the batch step first, then by number: each a row like its
/// job's, with the step's own nodes, tasks, times, state, exit and counters.
fn steps(store: &Store, id: i64, job: &AcctJob) -> Result<Vec<AcctJob>, StoreError> {
    let e = |source| StoreError::Sqlite { path: store.path().to_string(), source };
    let mut q = store
        .connection()
        .prepare_cached("SELECT step, name, node_list, ntasks, start_time, end_time, state, exit_code, signal, cpu_s, max_rss_kb FROM steps WHERE job = ?1 ORDER BY step <> 'batch', CAST(step AS INTEGER)")
        .map_err(e)?;
    let mut rows = q.query(params![id]).map_err(e)?;
    let mut out = Vec::new();
    while let Some(r) = rows.next().map_err(e)? {
        let (start, end): (i64, i64) = (r.get(4).map_err(e)?, r.get(5).map_err(e)?);
        let node_list: String = r.get(2).map_err(e)?;
        let nodes = hostlist::expand(&node_list).map_or(0, |n| n.len() as i64);
        let cpu: Option<f64> = r.get(9).map_err(e)?;
        out.push(AcctJob {
            step: Some(r.get(0).map_err(e)?),
            name: r.get(1).map_err(e)?,
            node_list,
            alloc_nodes: nodes,
            ntasks: r.get(3).map_err(e)?,
            start,
            end,
            wall_raw_s: end - start,
            suspended_s: 0,
            state: r.get(6).map_err(e)?,
            exit_code: r.get(7).map_err(e)?,
            signal: r.get(8).map_err(e)?,
            cpu_raw_s: cpu.unwrap_or(0.0),
            max_rss_kb: r.get(10).map_err(e)?,
            reason: String::new(),
            // the job's own figures, not the step's
            energy_j: None,
            hs06_hours: None,
            steps: Vec::new(),
            ..job.clone()
        });
    }
    Ok(out)
}

/// CPU seconds as sacct prints TotalCPU: `MM:SS.mmm` under an hour, then
/// `HH:MM:SS` and `D-HH:MM:SS`.
pub fn total_cpu(secs: f64) -> String {
    let ms = (secs.max(0.0) * 1000.0).round() as i64;
    let s = ms / 1000;
    if s >= 3600 {
        duration(s)
    } else {
        format!("{:02}:{:02}.{:03}", s / 60, s % 60, ms % 1000)
    }
}

/// KiB as sacct prints MaxRSS: `K` below a MiB, else the largest binary
/// unit with two decimals (`65.52M`, `1.50G`).
pub fn kib(k: i64) -> String {
    let mut x = k.max(0) as f64;
    let mut unit = 0;
    while x >= 1024.0 && unit < 3 {
        x /= 1024.0;
        unit += 1;
    }
    match unit {
        0 => format!("{k}K"),
        u => format!("{x:.2}{}", ["K", "M", "G", "T"][u]),
    }
}

pub use crate::civil::datetime;
use crate::civil::days_from_civil;

/// Parse `YYYY-MM-DD[THH:MM[:SS]]` (UTC; years 0 to 9999) or Unix seconds. A date
/// whose seconds would overflow is `None`, like any other malformed one.
pub fn parse_time(s: &str) -> Option<i64> {
    if let Ok(x) = s.parse::<i64>() {
        return Some(x);
    }
    let (date, time) = s.split_once('T').unwrap_or((s, "00:00:00"));
    let d: Vec<i64> = date.split('-').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    let t: Vec<i64> = time.split(':').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    if d.len() != 3 || t.is_empty() || t.len() > 3 || !(0..=9999).contains(&d[0]) || !(1..=12).contains(&d[1]) || !(1..=31).contains(&d[2]) {
        return None;
    }
    let secs = t[0].checked_mul(3600)?.checked_add(t.get(1).unwrap_or(&0).checked_mul(60)?)?.checked_add(*t.get(2).unwrap_or(&0))?;
    (days_from_civil(d[0], d[1], d[2]) * 86400).checked_add(secs)
}

/// Joules as sacct prints ConsumedEnergy: up to three significant digits
/// after scaling by powers of 1000 (`950`, `12.35K`, `3.10M`).
pub fn energy(j: f64) -> String {
    let mut x = j.max(0.0);
    let mut unit = 0;
    while x >= 1000.0 && unit < 4 {
        x /= 1000.0;
        unit += 1;
    }
    match unit {
        0 => format!("{x:.0}"),
        u => format!("{x:.2}{}", ["", "K", "M", "G", "T"][u]),
    }
}

/// `[D-]HH:MM:SS`, as sacct prints durations.
pub fn duration(secs: i64) -> String {
    let (d, r) = (secs / 86400, secs % 86400);
    let hms = format!("{:02}:{:02}:{:02}", r / 3600, r % 3600 / 60, r % 60);
    if d > 0 {
        format!("{d}-{hms}")
    } else {
        hms
    }
}

/// The sacct fields Tessera knows, with their column widths.
pub const FIELDS: &[(&str, usize)] = &[
    ("JobID", 12),
    ("JobIDRaw", 12),
    ("JobName", 10),
    ("User", 9),
    ("Group", 9),
    ("Account", 10),
    ("Partition", 10),
    ("AllocCPUS", 10),
    ("AllocNodes", 10),
    ("NodeList", 16),
    ("State", 10),
    ("ExitCode", 8),
    ("Reason", 20),
    ("Submit", 19),
    ("Start", 19),
    ("End", 19),
    ("Elapsed", 10),
    ("ElapsedRaw", 10),
    ("Suspended", 10),
    ("CPUTime", 10),
    ("CPUTimeRAW", 10),
    ("Timelimit", 10),
    ("ReqCPUS", 8),
    ("ReqMem", 10),
    ("Factor", 8),
    ("NormElapsed", 11),
    ("CoreHours", 10),
    ("NormCoreHours", 13),
    ("HS06Hours", 10),
    ("HS06PerCore", 11),
    ("ConsumedEnergy", 14),
    ("ConsumedEnergyRaw", 17),
    ("TotalCPU", 10),
    ("MaxRSS", 10),
    ("NTasks", 8),
];

/// The canonical name of a field (case-insensitive), or None.
pub fn field_name(s: &str) -> Option<&'static str> {
    FIELDS.iter().find(|f| f.0.eq_ignore_ascii_case(s.trim())).map(|f| f.0)
}

impl AcctJob {
    pub fn field(&self, name: &str) -> String {
        let t = |x: i64| datetime(x + self.epoch_offset);
        match name {
            "JobID" => {
                let id = self.array.map_or_else(|| self.job_id.to_string(), |(a, t)| format!("{a}_{t}"));
                self.step.as_ref().map_or(id.clone(), |s| format!("{id}.{s}"))
            }
            "JobIDRaw" => self.step.as_ref().map_or(self.job_id.to_string(), |s| format!("{}.{s}", self.job_id)),
            "JobName" => self.name.clone(),
            "User" => self.user.clone(),
            "Group" => self.group.clone(),
            "Account" => self.account.clone(),
            "Partition" => self.partition.clone(),
            "AllocCPUS" => self.alloc_cores.to_string(),
            "AllocNodes" => self.alloc_nodes.to_string(),
            "NodeList" => self.node_list.clone(),
            "State" => self.state.clone(),
            "ExitCode" => format!("{}:{}", self.exit_code, self.signal),
            "Reason" => self.reason.clone(),
            "Submit" => t(self.submit),
            "Start" => t(self.start),
            "End" => t(self.end),
            "Elapsed" => duration(self.wall_raw_s),
            "ElapsedRaw" => self.wall_raw_s.to_string(),
            "Suspended" => duration(self.suspended_s),
            "CPUTime" => duration(self.wall_raw_s * self.alloc_cores),
            "CPUTimeRAW" => (self.wall_raw_s * self.alloc_cores).to_string(),
            "Timelimit" => duration(self.time_limit),
            "ReqCPUS" => self.req_procs.to_string(),
            "ReqMem" => if self.req_mem_mb > 0 { format!("{}M", self.req_mem_mb) } else { "0".into() },
            "Factor" => format!("{}", self.factor),
            "NormElapsed" => format!("{:.0}", self.wall_norm_s),
            "CoreHours" => format!("{:.2}", self.core_hours),
            "NormCoreHours" => format!("{:.2}", self.norm_core_hours),
            "HS06Hours" => self.hs06_hours.map_or(String::new(), |h| format!("{h:.2}")),
            "HS06PerCore" => self.hs06_per_core.map_or(String::new(), |h| format!("{h:.2}")),
            // joules, with sacct's unit suffixes (K, M, G, T: powers of 1000)
            "ConsumedEnergy" => self.energy_j.map_or(String::new(), energy),
            "ConsumedEnergyRaw" => self.energy_j.map_or(String::new(), |j| format!("{:.0}", j)),
            "TotalCPU" => total_cpu(self.cpu_raw_s),
            "MaxRSS" => self.max_rss_kb.map_or(String::new(), kib),
            "NTasks" => self.ntasks.to_string(),
            _ => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_durations() {
        assert_eq!(datetime(0), "1970-01-01T00:00:00");
        assert_eq!(datetime(1027839845), "2002-07-28T07:04:05");
        assert_eq!(parse_time("2002-07-28T07:04:05"), Some(1027839845));
        assert_eq!(parse_time("2002-07-28"), Some(1027814400));
        assert_eq!(parse_time("1027839845"), Some(1027839845));
        assert_eq!(parse_time("2002-13-01"), None);
        // values whose seconds would overflow are malformed, not wrapped
        assert_eq!(parse_time("9223372036854775807-01-01"), None);
        assert_eq!(parse_time("10000-01-01"), None);
        assert_eq!(parse_time("2002-07-28T9223372036854775807:00"), None);
        assert_eq!(parse_time("2002-07-28T00:00:9223372036854775807"), None);
        assert_eq!(duration(93784), "1-02:03:04");
        assert_eq!(duration(59), "00:00:59");
        assert_eq!(state_name("to"), Some("TIMEOUT"));
        assert_eq!(energy(950.4), "950");
        assert_eq!(energy(12_345.0), "12.35K");
        assert_eq!(energy(3_100_000.0), "3.10M");
        assert_eq!(total_cpu(1.2344), "00:01.234");
        assert_eq!(total_cpu(3725.0), "01:02:05");
        assert_eq!(kib(812), "812K");
        assert_eq!(kib(67_092), "65.52M");
    }
}
