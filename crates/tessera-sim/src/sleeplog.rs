//! The log of `tessera sleep-job`: one JSON line per job, appended when the job
//! ends, with the instants it was submitted, started and ended and every
//! suspension (Unix seconds with fractions). The live counterpart of the
//! simulator's job list: `tessera metrics --log` reads it into [`JobTimes`] and
//! computes the same metrics as the simulator's summary.
//!
//! The format follows the thesis's `sigsleep`/`calcmets` pair (the job records
//! its own start, end and suspension periods; metrics are computed from the
//! log afterwards), written as JSON lines instead of binary structs.

use crate::metrics::JobTimes;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

/// One suspension: when the job was stopped and when it was continued.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suspension {
    pub suspend: f64,
    pub resume: f64,
}

/// One configuration a power-aware scheduler gave the job: from when (the
/// scheduler's instant), on how many nodes, at which CPU cap.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Configuration {
    pub at: f64,
    pub nodes: u32,
    pub cap_w: f64,
}

/// One line of the log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SleepRecord {
    /// The job's id in the workload (the trace's job number for a replay).
    pub id: u64,
    pub submit: f64,
    pub start: f64,
    pub end: f64,
    /// Seconds the job was asked to run (suspended time excluded).
    pub runtime: f64,
    pub cores: u32,
    pub suspensions: Vec<Suspension>,
    /// Its configurations, under a power-aware scheduler (`sleep-job --work`):
    /// the one it started in, then each it was told of.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configs: Vec<Configuration>,
}

impl SleepRecord {
    /// Seconds suspended.
    pub fn suspended(&self) -> f64 {
        self.suspensions.iter().map(|s| s.resume - s.suspend).sum()
    }

    pub fn times(&self) -> JobTimes {
        let suspended = self.suspended();
        let cores = f64::from(self.cores);
        JobTimes { submit: self.submit, start: self.start, end: self.end, suspended, procs: cores, held: cores * (self.end - self.start - suspended) }
    }

    /// Whether the instants are consistent: finite, submit ≤ start ≤ end, each
    /// suspension inside the run and after the previous one.
    pub fn check(&self) -> Result<(), String> {
        let all = [self.submit, self.start, self.end, self.runtime];
        if let Some(x) = all.iter().chain(self.suspensions.iter().flat_map(|s| [&s.suspend, &s.resume])).find(|x| !x.is_finite()) {
            return Err(format!("a time is not a finite number ({x})"));
        }
        if self.runtime < 0.0 {
            return Err(format!("runtime {} is negative", self.runtime));
        }
        if self.start < self.submit {
            return Err(format!("start {} is before submit {}", self.start, self.submit));
        }
        if self.end < self.start {
            return Err(format!("end {} is before start {}", self.end, self.start));
        }
        let mut at = self.start;
        for (k, s) in self.suspensions.iter().enumerate() {
            if s.suspend < at || s.resume < s.suspend || s.resume > self.end {
                return Err(format!(
                    "suspension {} ({} to {}) is not inside the run ({} to {}) after the previous one",
                    k + 1,
                    s.suspend,
                    s.resume,
                    self.start,
                    self.end
                ));
            }
            at = s.resume;
        }
        Ok(())
    }
}

/// Why a log could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}:{line}: expected a JSON object with id, submit, start, end, runtime, cores and suspensions: {what} (line begins {prefix:?})")]
    Syntax { path: String, line: usize, what: String, prefix: String },
    #[error("{path}:{line}: job {id}: {what}")]
    Inconsistent { path: String, line: usize, id: u64, what: String },
    #[error("{path}:{line}: job {id} is also on line {first}: a log holds one run of each job (was the log reused for a second replay, or the job requeued?)")]
    Duplicate { path: String, line: usize, id: u64, first: usize },
}

/// At most this many characters of a bad line are quoted in an error.
const QUOTE: usize = 80;

/// Read a whole log, in file order. Blank lines are skipped; anything else
/// that is not a consistent record is an error naming its line.
pub fn read_log(path: &Path) -> Result<Vec<SleepRecord>, LogError> {
    let name = path.display().to_string();
    let io = |source| LogError::Io { path: name.clone(), source };
    let f = std::fs::File::open(path).map_err(io)?;
    parse_log(std::io::BufReader::new(f), &name)
}

/// [`read_log`] over any reader; `name` names it in errors.
pub fn parse_log(r: impl BufRead, name: &str) -> Result<Vec<SleepRecord>, LogError> {
    let mut out = Vec::new();
    let mut seen: BTreeMap<u64, usize> = BTreeMap::new();
    for (i, line) in r.split(b'\n').enumerate() {
        let n = i + 1;
        let line = line.map_err(|source| LogError::Io { path: name.to_string(), source })?;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let rec: SleepRecord = serde_json::from_slice(&line).map_err(|e| LogError::Syntax {
            path: name.to_string(),
            line: n,
            what: e.to_string(),
            prefix: String::from_utf8_lossy(&line[..line.len().min(QUOTE)]).into_owned(),
        })?;
        rec.check().map_err(|what| LogError::Inconsistent { path: name.to_string(), line: n, id: rec.id, what })?;
        if let Some(&first) = seen.get(&rec.id) {
            return Err(LogError::Duplicate { path: name.to_string(), line: n, id: rec.id, first });
        }
        seen.insert(rec.id, n);
        out.push(rec);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<SleepRecord>, LogError> {
        parse_log(text.as_bytes(), "log.jsonl")
    }

    #[test]
    fn a_record_with_a_suspension_reads_back_and_counts_it() {
        let log = r#"{"id":7,"submit":100.5,"start":101.0,"end":131.0,"runtime":20,"cores":4,"suspensions":[{"suspend":105.0,"resume":115.0}]}"#;
        let v = parse(&format!("{log}\n\n")).unwrap();
        assert_eq!(v.len(), 1);
        let t = v[0].times();
        assert_eq!((t.wait(), t.suspended, t.run(), t.response()), (0.5, 10.0, 20.0, 30.5));
        assert_eq!(t.held, 80.0);
    }

    #[test]
    fn bad_lines_are_named() {
        let e = parse("{\"id\":1}\n").unwrap_err().to_string();
        assert!(e.starts_with("log.jsonl:1: expected a JSON object"), "{e}");
        let e = parse(&format!("{}\n", "x".repeat(10_000))).unwrap_err().to_string();
        assert!(e.len() < 400, "a long line is quoted only in part: {e}");
        let rec = |id: u64, s: f64| format!(r#"{{"id":{id},"submit":0,"start":{s},"end":10,"runtime":10,"cores":1,"suspensions":[]}}"#);
        let e = parse(&format!("{}\n{}\n", rec(1, 0.0), rec(1, 0.0))).unwrap_err().to_string();
        assert_eq!(e, "log.jsonl:2: job 1 is also on line 1: a log holds one run of each job (was the log reused for a second replay, or the job requeued?)");
        let e = parse(&format!("{}\n", rec(2, 11.0))).unwrap_err().to_string();
        assert_eq!(e, "log.jsonl:1: job 2: end 10 is before start 11");
        let bad = r#"{"id":3,"submit":0,"start":1,"end":10,"runtime":5,"cores":1,"suspensions":[{"suspend":5,"resume":12}]}"#;
        assert!(parse(bad).unwrap_err().to_string().contains("suspension 1 (5 to 12) is not inside the run (1 to 10)"));
    }
}
