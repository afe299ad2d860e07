//! Trace transforms: take a window of jobs, scale the arrival process.

use crate::swf::SwfRecord;

/// Keep the first `n` records (in file order).
pub fn first_jobs(records: &mut Vec<SwfRecord>, n: usize) {
    records.truncate(n);
}

/// Scale inter-arrival times by `gamma` (< 1 packs arrivals closer, raising the
/// load): submit' = first + round((submit − first) × gamma), where `first` is the
/// earliest submit time. Negative (unknown) submit times are left alone.
pub fn scale_arrivals(records: &mut [SwfRecord], gamma: f64) {
    let Some(first) = records.iter().map(|r| r.submit_time).filter(|&t| t >= 0).min() else { return };
    for r in records.iter_mut().filter(|r| r.submit_time >= 0) {
        r.submit_time = first + ((r.submit_time - first) as f64 * gamma).round() as i64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrivals_scale_around_the_first() {
        let mut r: Vec<SwfRecord> = [100, 110, 200, -1].iter().map(|&t| SwfRecord { submit_time: t, ..SwfRecord::unknown(1) }).collect();
        scale_arrivals(&mut r, 0.5);
        assert_eq!(r.iter().map(|x| x.submit_time).collect::<Vec<_>>(), vec![100, 105, 150, -1]);
        first_jobs(&mut r, 2);
        assert_eq!(r.len(), 2);
    }
}
