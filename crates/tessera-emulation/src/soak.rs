//! `tessera soak`: the live system at a steady rate for a long time. Start a
//! controller and agents on this machine, submit short real jobs (`/bin/true`)
//! at a fixed rate, sample the controller's and each agent's resident memory,
//! and check at the end that memory stayed flat after the warm-up and that
//! every job completed and is accounted once.

use crate::client::runtime;
use crate::loadtest::{metrics, opt, rss_kib};
use crate::local::Guard;
use anyhow::{anyhow, bail, Context, Result};
use hyper::Method;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tessera_proto::api::{SubmitReply, SubmitRequest};
use tessera_proto::client::{Client, Target};

/// `tessera soak`'s settings (see its `--help`).
#[derive(Clone, Debug)]
pub struct Options {
    /// Jobs per minute.
    pub rate: u64,
    /// Seconds of submissions.
    pub duration: i64,
    /// Memory must stay flat from this second on.
    pub flat_from: i64,
    /// Seconds between memory samples.
    pub sample_every: i64,
    /// Growth allowed after `flat_from`, as a fraction (on top of 2 MiB).
    pub tolerance: f64,
    pub agents: usize,
    pub cluster: Option<PathBuf>,
    pub policy: String,
    pub dir: PathBuf,
}

/// One daemon's memory over the run.
#[derive(Serialize, Debug)]
pub struct Memory {
    pub daemon: String,
    pub rss_at_flat_from_kib: u64,
    pub rss_max_after_kib: u64,
    pub rss_last_kib: u64,
    /// Least-squares slope of the samples from --flat-from on, KiB per minute.
    pub slope_kib_per_min: f64,
    pub flat: bool,
}

#[derive(Serialize, Debug)]
pub struct Soak {
    pub rate_per_min: u64,
    pub seconds: f64,
    pub submitted: usize,
    /// Submissions behind their planned instant by more than a second, at most.
    pub late_max_s: f64,
    pub completed: usize,
    pub lost: usize,
    pub duplicates: usize,
    pub memory: Vec<Memory>,
    pub samples_csv: PathBuf,
    pub passed: bool,
    /// The run's directory.
    #[serde(skip)]
    pub dir: PathBuf,
}

/// Submit at the steady rate to a local cluster (the `tessera` binary `bin`),
/// sample memory, check; what was found, also written to `DIR/soak.json`
/// ([`Soak::check`] says whether it passed).
pub fn run(a: &Options, bin: &Path) -> Result<Soak> {
    if a.duration < 1 || a.sample_every < 1 || a.flat_from >= a.duration {
        bail!("--duration {} s, --flat-from {} s, --sample-every {} s: expected a duration of at least 1 s, samples at least 1 s apart, and --flat-from before the end", a.duration, a.flat_from, a.sample_every);
    }
    if !(a.tolerance.is_finite() && a.tolerance >= 0.0) {
        bail!("--tolerance {}: expected a fraction >= 0", a.tolerance);
    }
    std::fs::create_dir_all(&a.dir).with_context(|| format!("creating {}", a.dir.display()))?;
    let dir = a.dir.canonicalize()?;
    let state = dir.join("state");
    if state.join("state.db").exists() {
        bail!("{} holds an earlier run's controller state: give another --dir", state.display());
    }
    std::fs::create_dir_all(&state)?;
    let local = Guard::start(bin, &state, &a.cluster, a.agents, "127.0.0.1:0".parse()?, &a.policy, &[])?;
    let rt = runtime()?;
    let target = Target::Unix(local.ep.socket.clone());
    let mut client = Client::new(target.clone(), None);
    let mut probe = Client::new(target, None);
    let env: BTreeMap<String, String> = std::env::var("PATH").map(|p| BTreeMap::from([("PATH".to_string(), p)])).unwrap_or_default();
    let req = SubmitRequest {
        script: "#!/bin/sh\ntrue\n".into(),
        options: vec![opt("-n", "1"), opt("-t", "10"), opt("-J", "soak"), opt("-o", "/dev/null")],
        workdir: dir.display().to_string(),
        env,
        ..Default::default()
    };
    let mut pids: Vec<(String, u32)> = vec![("controller".into(), local.controller.id())];
    pids.extend(local.agents.iter().enumerate().map(|(k, c)| (format!("agent{}", k + 1), c.id())));

    let samples_csv = dir.join("samples.csv");
    let mut csv = std::io::BufWriter::new(std::fs::File::create(&samples_csv).with_context(|| format!("creating {}", samples_csv.display()))?);
    writeln!(csv, "t_s,submitted,finished,queued_or_running,{}", pids.iter().map(|(n, _)| format!("{n}_rss_kib")).collect::<Vec<_>>().join(","))?;
    let mut samples: Vec<(f64, Vec<u64>)> = Vec::new();
    let gap = Duration::from_secs_f64(60.0 / a.rate as f64);
    let n = (a.duration as u64 * a.rate / 60) as usize;
    let mut ids = Vec::with_capacity(n);
    let mut late_max = 0.0f64;
    let t0 = Instant::now();
    let mut next_sample = 0.0;
    let sample = |probe: &mut Client, ids: &Vec<u64>, csv: &mut std::io::BufWriter<std::fs::File>, samples: &mut Vec<(f64, Vec<u64>)>| -> Result<()> {
        let t = t0.elapsed().as_secs_f64();
        let m = rt.block_on(metrics(probe))?;
        let rss = pids.iter().map(|(_, p)| rss_kib(*p)).collect::<Result<Vec<_>>>()?;
        let finished = m.get("tessera_finished_total").copied().unwrap_or(0.0) as u64;
        writeln!(csv, "{t:.1},{},{finished},{},{}", ids.len(), ids.len() as u64 - finished.min(ids.len() as u64), rss.iter().map(u64::to_string).collect::<Vec<_>>().join(","))?;
        csv.flush()?;
        samples.push((t, rss));
        Ok(())
    };
    for k in 0..n {
        let due = t0 + gap * k as u32;
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        } else {
            late_max = late_max.max((now - due).as_secs_f64());
        }
        let r: SubmitReply = rt.block_on(client.call(Method::POST, "/v1/jobs", Some(&req))).map_err(|e| anyhow!("submitting job {}: {e}", k + 1))?;
        ids.extend(r.jobs);
        if t0.elapsed().as_secs_f64() >= next_sample {
            sample(&mut probe, &ids, &mut csv, &mut samples)?;
            next_sample += a.sample_every as f64;
        }
    }
    // the last jobs end within seconds
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let m = rt.block_on(metrics(&mut probe))?;
        if m.get("tessera_finished_total").copied().unwrap_or(0.0) as usize >= ids.len() {
            break;
        }
        if Instant::now() > deadline {
            bail!("jobs still queued or running 120 s after the last submission (state in {})", state.display());
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    sample(&mut probe, &ids, &mut csv, &mut samples)?;
    let seconds = t0.elapsed().as_secs_f64();

    // every job accounted once, completed
    let store = tessera_accounting::store::Store::open(&state.join("accounting.db"))?;
    let run = store.resolve_run(None)?;
    let recs = tessera_accounting::acct::jobs(&store, run, &Default::default())?;
    let mut seen: BTreeMap<u64, (usize, bool)> = BTreeMap::new();
    for r in &recs {
        let e = seen.entry(r.job_id as u64).or_default();
        e.0 += 1;
        e.1 = r.state == "COMPLETED" && r.exit_code == 0;
    }
    let lost = ids.iter().filter(|id| !seen.contains_key(id)).count();
    let duplicates = seen.values().filter(|e| e.0 > 1).count();
    let completed = ids.iter().filter(|id| seen.get(id).is_some_and(|e| e.1)).count();
    drop(local);

    let memory = pids
        .iter()
        .enumerate()
        .map(|(d, (name, _))| {
            let after: Vec<(f64, f64)> = samples.iter().filter(|(t, _)| *t >= a.flat_from as f64).map(|(t, r)| (*t / 60.0, r[d] as f64)).collect();
            let at = after.first().map_or(0, |s| s.1 as u64);
            let max = after.iter().map(|s| s.1 as u64).max().unwrap_or(0);
            let last = samples.last().map_or(0, |s| s.1[d]);
            Memory {
                daemon: name.clone(),
                rss_at_flat_from_kib: at,
                rss_max_after_kib: max,
                rss_last_kib: last,
                slope_kib_per_min: slope(&after),
                flat: max as f64 <= at as f64 * (1.0 + a.tolerance) + 2048.0,
            }
        })
        .collect::<Vec<_>>();
    let passed = lost == 0 && duplicates == 0 && completed == ids.len() && memory.iter().all(|m| m.flat);
    let s = Soak { rate_per_min: a.rate, seconds, submitted: ids.len(), late_max_s: late_max, completed, lost, duplicates, memory, samples_csv, passed, dir: dir.clone() };
    std::fs::write(dir.join("soak.json"), serde_json::to_vec_pretty(&s)?)?;
    Ok(s)
}

impl Soak {
    /// An error unless the run passed.
    pub fn check(&self) -> Result<()> {
        let s = self;
        if !s.passed {
            bail!("soak: {} lost, {} accounted twice, {} of {} completed, memory flat: {:?} (see {})", s.lost, s.duplicates, s.completed, s.submitted, s.memory.iter().map(|m| (&m.daemon, m.flat)).collect::<Vec<_>>(), s.dir.display());
        }
        Ok(())
    }
}

impl std::fmt::Display for Soak {
    /// The run as a report: jobs, and each daemon's memory.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self;
        writeln!(f, "Soak: {} jobs at {}/min over {:.0} s (submissions late by at most {:.2} s); samples in {}", s.submitted, s.rate_per_min, s.seconds, s.late_max_s, s.samples_csv.display())?;
        writeln!(f, "  completed and accounted once: {}; lost: {}; accounted twice: {}", s.completed, s.lost, s.duplicates)?;
        writeln!(f, "  {:<12} {:>14} {:>14} {:>12} {:>14}  flat", "daemon", "RSS at start", "max after", "last", "slope")?;
        for m in &s.memory {
            writeln!(f, "  {:<12} {:>10} KiB {:>10} KiB {:>8} KiB {:>7.1} KiB/min  {}", m.daemon, m.rss_at_flat_from_kib, m.rss_max_after_kib, m.rss_last_kib, m.slope_kib_per_min, if m.flat { "yes" } else { "NO" })?;
        }
        writeln!(f, "  {}", if s.passed { "PASSED" } else { "FAILED" })
    }
}

/// Least-squares slope of (x, y) points (0 for fewer than two).
fn slope(p: &[(f64, f64)]) -> f64 {
    let n = p.len() as f64;
    if p.len() < 2 {
        return 0.0;
    }
    let (mx, my) = (p.iter().map(|q| q.0).sum::<f64>() / n, p.iter().map(|q| q.1).sum::<f64>() / n);
    let sxx: f64 = p.iter().map(|q| (q.0 - mx).powi(2)).sum();
    let sxy: f64 = p.iter().map(|q| (q.0 - mx) * (q.1 - my)).sum();
    if sxx == 0.0 {
        0.0
    } else {
        sxy / sxx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slope_of_a_line_and_of_too_few_points() {
        assert_eq!(slope(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]), 2.0);
        assert_eq!(slope(&[(1.0, 7.0)]), 0.0);
        assert_eq!(slope(&[(1.0, 7.0), (1.0, 9.0)]), 0.0);
    }
}
