//! Trace transforms: take a window of jobs, scale the arrival process.

use crate::bounds::{whole_seconds, MAX_TIME};
use crate::swf::SwfRecord;

/// Keep the first `n` records (in file order).
pub fn first_jobs(records: &mut Vec<SwfRecord>, n: usize) {
    records.truncate(n);
}

/// Why arrivals could not be scaled.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ScaleError {
    #[error("expected a factor > 0, found {0}")]
    Factor(f64),
    #[error("job {job} (submitted at {submit} s) would be submitted at {scaled:e} s: expected at most 2^42 = {MAX_TIME} s")]
    BeyondRange { job: i64, submit: i64, scaled: f64 },
    #[error("job {job}: its {field} of {value} s would become {scaled:e} s: expected at most 2^42 = {MAX_TIME} s")]
    TimeBeyondRange { job: i64, field: &'static str, value: i64, scaled: f64 },
}

/// Scale inter-arrival times by `gamma` (< 1 packs arrivals closer, raising the
/// load): submit' = first + round((submit − first) × gamma), where `first` is the
/// earliest submit time. Negative (unknown) submit times are left alone.
///
/// `gamma` must be finite and > 0, and every scaled submit time must stay within
/// 2^42 s ([`crate::bounds`]); otherwise nothing is changed and the error names the
/// first job that would leave the range.
pub fn scale_arrivals(records: &mut [SwfRecord], gamma: f64) -> Result<(), ScaleError> {
    if !(gamma.is_finite() && gamma > 0.0) {
        return Err(ScaleError::Factor(gamma));
    }
    let Some(first) = records.iter().map(|r| r.submit_time).filter(|&t| t >= 0).min() else { return Ok(()) };
    let offset = |t: i64| (t - first) as f64 * gamma;
    let scaled = |t: i64| whole_seconds(offset(t)).and_then(|d| first.checked_add(d)).filter(|&s| s <= MAX_TIME);
    if let Some(r) = records.iter().find(|r| r.submit_time >= 0 && scaled(r.submit_time).is_none()) {
        return Err(ScaleError::BeyondRange { job: r.job_number, submit: r.submit_time, scaled: first as f64 + offset(r.submit_time) });
    }
    for r in records.iter_mut().filter(|r| r.submit_time >= 0) {
        r.submit_time = scaled(r.submit_time).expect("checked above");
    }
    Ok(())
}

/// A trace shrunk as the thesis's `runworkload` does: each job's submission
/// offset (from the first), runtime and requested time multiplied by a
/// percentage. Percentages are finite and > 0.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shrink {
    pub submit_pct: f64,
    pub runtime_pct: f64,
    pub estimate_pct: f64,
}

impl Shrink {
    pub fn uniform(pct: f64) -> Shrink {
        Shrink { submit_pct: pct, runtime_pct: pct, estimate_pct: pct }
    }

    /// Apply it: submissions as [`scale_arrivals`]; runtimes (field 4) and
    /// requested times (field 9) rounded to whole seconds, a positive time
    /// staying at least 1 s (a job that ran, or a limit, does not become
    /// nothing); unknown (negative) fields are left alone. Nothing changes on
    /// an error.
    pub fn apply(&self, records: &mut [SwfRecord]) -> Result<(), ScaleError> {
        for p in [self.submit_pct, self.runtime_pct, self.estimate_pct] {
            if !(p.is_finite() && p > 0.0) {
                return Err(ScaleError::Factor(p));
            }
        }
        let time = |r: &SwfRecord, field: &'static str, t: i64, pct: f64| -> Result<i64, ScaleError> {
            if t <= 0 {
                return Ok(t);
            }
            let scaled = t as f64 * pct / 100.0;
            whole_seconds(scaled).map(|s| s.max(1)).filter(|&s| s <= MAX_TIME).ok_or(ScaleError::TimeBeyondRange { job: r.job_number, field, value: t, scaled })
        };
        // every shrunk time first, so that nothing changes on an error
        let times = records
            .iter()
            .map(|r| Ok((time(r, "runtime", r.run_time, self.runtime_pct)?, time(r, "requested time", r.requested_time, self.estimate_pct)?)))
            .collect::<Result<Vec<_>, ScaleError>>()?;
        scale_arrivals(records, self.submit_pct / 100.0)?;
        for (r, (run, req)) in records.iter_mut().zip(times) {
            r.run_time = run;
            r.requested_time = req;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn submits(times: &[i64]) -> Vec<SwfRecord> {
        times.iter().enumerate().map(|(i, &t)| SwfRecord { submit_time: t, ..SwfRecord::unknown(i as i64 + 1) }).collect()
    }

    #[test]
    fn arrivals_scale_around_the_first() {
        let mut r = submits(&[100, 110, 200, -1]);
        scale_arrivals(&mut r, 0.5).unwrap();
        assert_eq!(r.iter().map(|x| x.submit_time).collect::<Vec<_>>(), vec![100, 105, 150, -1]);
        first_jobs(&mut r, 2);
        assert_eq!(r.len(), 2);
    }

    #[test]
    fn shrinking_multiplies_offsets_runtimes_and_limits_and_keeps_a_second() {
        let mut r: Vec<SwfRecord> = [(100, 3600, 7200), (200, 1, 10), (1100, -1, -1), (300, 0, 0)]
            .iter()
            .enumerate()
            .map(|(i, &(s, run, req))| SwfRecord { submit_time: s, run_time: run, requested_time: req, ..SwfRecord::unknown(i as i64 + 1) })
            .collect();
        Shrink::uniform(10.0).apply(&mut r).unwrap();
        let got: Vec<(i64, i64, i64)> = r.iter().map(|x| (x.submit_time, x.run_time, x.requested_time)).collect();
        assert_eq!(got, vec![(100, 360, 720), (110, 1, 1), (200, -1, -1), (120, 0, 0)]);
        let s = Shrink { submit_pct: 100.0, runtime_pct: 50.0, estimate_pct: 25.0 };
        let mut one = vec![SwfRecord { submit_time: 5, run_time: 100, requested_time: 100, ..SwfRecord::unknown(1) }];
        s.apply(&mut one).unwrap();
        assert_eq!((one[0].submit_time, one[0].run_time, one[0].requested_time), (5, 50, 25));
        assert_eq!(Shrink::uniform(0.0).apply(&mut one), Err(ScaleError::Factor(0.0)));
        let mut big = vec![SwfRecord { submit_time: 0, run_time: 1 << 41, requested_time: 10, ..SwfRecord::unknown(9) }];
        let e = Shrink { submit_pct: 100.0, runtime_pct: 300.0, estimate_pct: 100.0 }.apply(&mut big).unwrap_err();
        assert!(e.to_string().starts_with("job 9: its runtime of 2199023255552 s would become"), "{e}");
        assert_eq!(big[0].run_time, 1 << 41, "an error changes nothing");
    }

    #[test]
    fn scaling_beyond_two_to_the_42_names_the_job_and_changes_nothing() {
        let mut r = submits(&[0, 10, 20]);
        let e = scale_arrivals(&mut r, 1e15).unwrap_err();
        assert_eq!(e, ScaleError::BeyondRange { job: 2, submit: 10, scaled: 1e16 });
        assert_eq!(e.to_string(), "job 2 (submitted at 10 s) would be submitted at 1e16 s: expected at most 2^42 = 4398046511104 s");
        assert_eq!(r, submits(&[0, 10, 20]), "an error leaves the records as they were");
        // the last second that fits, and the first that does not
        let mut r = submits(&[0, 1 << 41]);
        assert!(scale_arrivals(&mut r, 2.0).is_ok());
        assert_eq!(r[1].submit_time, MAX_TIME);
        let mut r = submits(&[1, (1 << 41) + 1]);
        assert!(scale_arrivals(&mut r, 2.0).is_err(), "first + 2^42 is beyond the range");
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(scale_arrivals(&mut submits(&[0, 1]), bad), Err(ScaleError::Factor(_))), "{bad}");
        }
    }
}
