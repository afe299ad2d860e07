//! `tessera sim bench-stream`: millions of resampled trace jobs through the
//! engine in memory that follows the live jobs, not the history (the engine
//! driven directly: [`crate::driver`]).

use crate::driver::{shapes, trace_path, Driver, Shape};
use crate::measure::proc_status_kib;
use anyhow::{ensure, Context, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cmp::Reverse;
use std::fmt::Write;
use std::path::PathBuf;
use std::time::Instant;
use tessera_core::{Engine, PolicyKind, Time};

/// `tessera sim bench-stream`'s settings (see its `--help`).
#[derive(Clone, Debug)]
pub struct Options {
    pub trace: Option<PathBuf>,
    pub jobs: u64,
    pub capacity: u32,
    pub queued: usize,
    pub policy: PolicyKind,
    pub seed: u64,
}

#[derive(serde::Serialize)]
struct RssSample {
    done: f64,
    jobs: u64,
    rss_kib: Option<u64>,
}

#[derive(serde::Serialize)]
struct StreamReport {
    trace: String,
    mix_jobs: usize,
    capacity: u32,
    policy: &'static str,
    queued: usize,
    jobs: u64,
    passes: u64,
    simulated_s: Time,
    wall_s: f64,
    jobs_per_s: f64,
    rss: Vec<RssSample>,
    peak_rss_kib: Option<u64>,
    slots: usize,
}

/// `tessera sim bench-stream`: `--jobs` jobs through the engine in memory that
/// follows the live jobs, not the history.
///
/// The generator resamples (seeded, uniformly) the jobs of a trace: processors
/// (cut to `--capacity`), estimate and runtime (cut at the estimate). It is a
/// closed system: whenever the queue holds fewer than `--queued` jobs, new ones
/// arrive, so the machine is always loaded and the live jobs are bounded by
/// construction. The driver is the simulator's loop: at each instant, every
/// completion due, then the arrivals, then a pass; the clock then moves to the
/// next actual end. It keeps only the live jobs (their runtimes and ends); the
/// finished jobs' records are dropped. Peak RSS is the process's VmHWM; VmRSS is
/// sampled when 10%, 50% and 100% of the jobs have finished.
pub fn run(a: &Options, json: bool) -> Result<String> {
    ensure!(
        a.capacity > 0 && a.queued > 0 && a.jobs > 0,
        "--capacity, --queued and --jobs must be at least 1"
    );
    let policy = a.policy;
    let path = trace_path(&a.trace)?;
    let mix: Vec<Shape> = shapes(&path, 0, a.capacity)
        .and_then(|s| s.collect())
        .with_context(|| format!("reading {}", path.display()))?;
    ensure!(!mix.is_empty(), "{}: no usable job", path.display());
    let mut d = Driver::new(Engine::new(policy, a.capacity)?);
    let mut rng = ChaCha8Rng::seed_from_u64(a.seed);
    let marks = [a.jobs.div_ceil(10), a.jobs.div_ceil(2), a.jobs];
    let (mut rss, mut submitted, mut passes, mut now) = (Vec::new(), 0u64, 0u64, 0 as Time);
    let t = Instant::now();
    loop {
        while d.engine.queued() < a.queued && submitted < a.jobs {
            d.submit(now, mix[rng.gen_range(0..mix.len())])?;
            submitted += 1;
        }
        d.pass(now)?;
        passes += 1;
        let Some(&Reverse((end, _))) = d.ends.peek() else {
            break;
        };
        now = end;
        while let Some(&Reverse((end, id))) = d.ends.peek() {
            if end > now {
                break;
            }
            d.ends.pop();
            d.complete(now, id)?;
            if rss.len() < marks.len() && d.finished >= marks[rss.len()] {
                let done = d.finished as f64 / a.jobs as f64;
                rss.push(RssSample {
                    done,
                    jobs: d.finished,
                    rss_kib: proc_status_kib("self", "VmRSS"),
                });
            }
        }
    }
    let wall_s = t.elapsed().as_secs_f64();
    ensure!(
        d.finished == a.jobs && d.engine.jobs() == 0,
        "{} of {} jobs finished; {} left in the engine",
        d.finished,
        a.jobs,
        d.engine.jobs()
    );
    let r = StreamReport {
        trace: path.display().to_string(),
        mix_jobs: mix.len(),
        capacity: a.capacity,
        policy: policy.name(),
        queued: a.queued,
        jobs: a.jobs,
        passes,
        simulated_s: now,
        wall_s,
        jobs_per_s: a.jobs as f64 / wall_s,
        rss,
        peak_rss_kib: proc_status_kib("self", "VmHWM"),
        slots: d.engine.slots(),
    };
    let mut w = String::new();
    match json {
        true => writeln!(w, "{}", serde_json::to_string_pretty(&r)?)?,
        false => {
            let mib = |k: Option<u64>| {
                k.map_or("-".to_string(), |k| format!("{:.1} MiB", k as f64 / 1024.0))
            };
            writeln!(w, 
                "{} jobs resampled from {} ({} jobs), seed {}",
                r.jobs, r.trace, r.mix_jobs, a.seed
            )?;
            writeln!(w, 
                "pool of {} cores, {}, {} jobs kept queued",
                r.capacity, r.policy, r.queued
            )?;
            writeln!(w, 
                "wall {:.2} s: {:.0} jobs/s, {} passes, {} s simulated",
                r.wall_s, r.jobs_per_s, r.passes, r.simulated_s
            )?;
            let at: Vec<String> = r
                .rss
                .iter()
                .map(|s| format!("{:.0}% {}", 100.0 * s.done, mib(s.rss_kib)))
                .collect();
            writeln!(w, 
                "RSS: {}; peak (VmHWM) {}",
                at.join(", "),
                mib(r.peak_rss_kib)
            )?;
            writeln!(w, 
                "live jobs: at most {} (engine slots) of {} jobs",
                r.slots, r.jobs
            )?;
        }
    }
    Ok(w)
}
