//! Measuring: quantiles of timings, the best and median of repeated runs, and
//! a process's memory from `/proc`.

use std::time::Instant;

/// Median, 99th percentile and maximum.
pub fn quantiles(mut v: Vec<f64>) -> (f64, f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    v.sort_by(f64::total_cmp);
    let p99 = v[(v.len() * 99).div_ceil(100) - 1];
    (v[v.len() / 2], p99, v[v.len() - 1])
}

/// `f` run `repeat` times (at least once): the fastest and the median time in
/// seconds, and the last result.
pub fn time_min_median<T>(repeat: usize, mut f: impl FnMut() -> T) -> (f64, f64, T) {
    let mut times = Vec::with_capacity(repeat);
    let mut last = None;
    for _ in 0..repeat.max(1) {
        let t = Instant::now();
        let out = f();
        times.push(t.elapsed().as_secs_f64());
        last = Some(out);
    }
    times.sort_by(f64::total_cmp);
    (times[0], times[times.len() / 2], last.unwrap())
}

/// A field of `/proc/PROC/status` (VmRSS, VmHWM) in KiB, PROC a pid or `self`;
/// None where there is none.
pub fn proc_status_kib(proc: &str, field: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{proc}/status")).ok()?;
    s.lines().find_map(|l| {
        l.strip_prefix(field)?
            .strip_prefix(':')?
            .trim()
            .strip_suffix("kB")?
            .trim()
            .parse()
            .ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_a_hundred_and_of_none() {
        let v: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(quantiles(v), (51.0, 99.0, 100.0));
        assert_eq!(quantiles(Vec::new()), (0.0, 0.0, 0.0));
        assert!(proc_status_kib("self", "VmRSS").is_some_and(|k| k > 0));
        assert_eq!(proc_status_kib("self", "NoSuchField"), None);
    }
}
