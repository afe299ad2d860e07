//! What the charts plot, from jobs' times: busy processors and queue length
//! over time (time-weighted means over equal spans), distributions (CDF) and
//! means by job size.

use tessera_sim::metrics::JobTimes;

/// Spans of a time series.
pub const SPANS: usize = 240;
/// Points of a CDF.
pub const CDF_POINTS: usize = 200;

/// How times are shown: seconds since `origin`, in `unit` seconds named `name`.
#[derive(Clone, Debug, PartialEq)]
pub struct TimeAxis {
    pub origin: f64,
    pub unit: f64,
    pub name: &'static str,
}

impl TimeAxis {
    /// Minutes, hours or days, whichever suits a span of `span` seconds.
    pub fn fit(origin: f64, span: f64) -> TimeAxis {
        let (unit, name) = if span <= 2.0 * 3600.0 {
            (60.0, "min")
        } else if span <= 4.0 * 86400.0 {
            (3600.0, "h")
        } else {
            (86400.0, "days")
        };
        TimeAxis { origin, unit, name }
    }
    pub fn x(&self, t: f64) -> f64 {
        (t - self.origin) / self.unit
    }
    pub fn label(&self) -> String {
        format!("time since the first submission ({})", self.name)
    }
}

/// The time-weighted mean of a sum of rates over `SPANS` equal spans of
/// [from, to): `events` are (instant, change of the rate).
pub fn spans(mut events: Vec<(f64, f64)>, from: f64, to: f64) -> Vec<(f64, f64)> {
    if to <= from {
        return Vec::new();
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0));
    let width = (to - from) / SPANS as f64;
    let mut out = Vec::with_capacity(SPANS);
    let (mut k, mut rate, mut t) = (0, 0f64, from);
    for i in 0..SPANS {
        let end = if i + 1 == SPANS { to } else { from + (i + 1) as f64 * width };
        let mut area = 0f64;
        loop {
            while k < events.len() && events[k].0 <= t {
                rate += events[k].1;
                k += 1;
            }
            let next = events.get(k).map_or(end, |e| e.0.min(end));
            area += rate * (next - t);
            t = next;
            if t >= end {
                break;
            }
        }
        out.push((from + i as f64 * width, area / (end - (from + i as f64 * width))));
    }
    out
}

/// Processors busy over time (each job's held processor-seconds spread over its
/// run) and jobs waiting over time.
pub fn busy_and_queue(jobs: &[JobTimes]) -> (Vec<(f64, f64)>, Vec<(f64, f64)>) {
    let from = jobs.iter().map(|j| j.submit).fold(f64::INFINITY, f64::min);
    let to = jobs.iter().map(|j| j.end).fold(f64::NEG_INFINITY, f64::max);
    let mut busy = Vec::with_capacity(jobs.len() * 2);
    let mut queue = Vec::with_capacity(jobs.len() * 2);
    for j in jobs {
        let span = j.end - j.start;
        if span > 0.0 && j.held > 0.0 {
            let rate = j.held / span;
            busy.push((j.start, rate));
            busy.push((j.end, -rate));
        }
        if j.start > j.submit {
            queue.push((j.submit, 1.0));
            queue.push((j.start, -1.0));
        }
    }
    (spans(busy, from, to), spans(queue, from, to))
}

/// The empirical CDF of `values` at up to [`CDF_POINTS`] points: (value,
/// fraction of values at or below it).
pub fn cdf(mut values: Vec<f64>) -> Vec<(f64, f64)> {
    values.retain(|v| v.is_finite());
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        return Vec::new();
    }
    let step = n.div_ceil(CDF_POINTS).max(1);
    let mut out: Vec<(f64, f64)> = (0..n).step_by(step).map(|i| (values[i], (i + 1) as f64 / n as f64)).collect();
    if out.last().map(|p| p.1) != Some(1.0) {
        out.push((values[n - 1], 1.0));
    }
    out
}

/// Job size classes: 1, 2, 3–4, 5–8, … processors.
pub fn size_class(procs: f64) -> u32 {
    let p = procs.max(1.0).ceil() as u64;
    64 - (p - 1).leading_zeros()
}

pub fn size_class_name(c: u32) -> String {
    match c {
        0 => "1".into(),
        1 => "2".into(),
        c => format!("{}-{}", (1u64 << (c - 1)) + 1, 1u64 << c),
    }
}

/// Per size class present: (name, jobs, mean wait, mean bounded slowdown).
pub fn by_size(jobs: &[JobTimes]) -> Vec<(String, u64, f64, f64)> {
    let mut acc: std::collections::BTreeMap<u32, (u64, f64, f64)> = Default::default();
    for j in jobs {
        let e = acc.entry(size_class(j.procs)).or_default();
        e.0 += 1;
        e.1 += j.wait();
        e.2 += j.bounded_slowdown();
    }
    acc.into_iter().map(|(c, (n, w, b))| (size_class_name(c), n, w / n as f64, b / n as f64)).collect()
}
