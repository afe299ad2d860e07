//! A job's suspension record: the controller's instant (whole Unix seconds, the
//! engine's clock) of each suspension and resumption of the run, one line each
//! (`S T`, `R T`), written by the agent before it signals the job. The job
//! finds it in `$TESSERA_SUSPENSIONS` ([`ENV`]); an emulated job (`tessera
//! sleep-job`) counts its run time by it, so that it is suspended exactly as
//! long as the scheduler kept it so.

use std::io::Write;
use std::path::Path;

/// The variable naming the record.
pub const ENV: &str = "TESSERA_SUSPENSIONS";

/// A line of the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    Suspend,
    Resume,
}

/// Append one mark at `at` to the record at `path`.
pub fn append(path: &Path, mark: Mark, at: i64) -> std::io::Result<()> {
    let what = match mark {
        Mark::Suspend => 'S',
        Mark::Resume => 'R',
    };
    std::fs::OpenOptions::new().append(true).open(path)?.write_all(format!("{what} {at}\n").as_bytes())
}

/// The record's intervals [suspended, resumed) in Unix seconds, the last
/// open while the job is suspended; only whole lines count (the agent may be
/// writing the next one). An error names the file, the line and what was
/// expected.
pub fn read(path: &Path) -> Result<Vec<(f64, Option<f64>)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("reading the suspension record {}: {e}", path.display()))?;
    let whole = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
    let mut v: Vec<(f64, Option<f64>)> = Vec::new();
    for (k, line) in whole.lines().enumerate() {
        let bad = || format!("{}:{}: {line:?}: expected `S SECONDS` after a resumption or `R SECONDS` after a suspension", path.display(), k + 1);
        let (what, t) = line.split_once(' ').ok_or_else(bad)?;
        let t: f64 = t.trim().parse().map_err(|_| bad())?;
        match (what, v.last_mut()) {
            ("S", None | Some((_, Some(_)))) => v.push((t, None)),
            ("R", Some((s, r @ None))) => *r = Some(t.max(*s)),
            _ => return Err(bad()),
        }
    }
    Ok(v)
}

/// Seconds the closed intervals held the job suspended, and whether it is
/// suspended now. No interval counts for more than a year, so that a record
/// of nonsense cannot make a job sleep for ages.
pub fn held(intervals: &[(f64, Option<f64>)]) -> (f64, bool) {
    let s = intervals.iter().filter_map(|&(s, r)| r.map(|r| (r - s).min(365.0 * 86_400.0))).sum();
    (s, intervals.last().is_some_and(|(_, r)| r.is_none()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_as_its_intervals_and_a_bad_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("1.susp");
        std::fs::write(&p, "").unwrap();
        for (m, t) in [(Mark::Suspend, 10), (Mark::Resume, 13), (Mark::Suspend, 20)] {
            append(&p, m, t).unwrap();
        }
        let v = read(&p).unwrap();
        assert_eq!(v, [(10.0, Some(13.0)), (20.0, None)]);
        assert_eq!(held(&v), (3.0, true));
        // a line being written is not read yet
        std::fs::write(&p, "S 10\nR 1").unwrap();
        assert_eq!(read(&p).unwrap(), [(10.0, None)]);
        std::fs::write(&p, "S 10\nS 11\n").unwrap();
        let e = read(&p).unwrap_err();
        assert!(e.contains("1.susp:2") && e.contains("expected"), "{e}");
    }
}
