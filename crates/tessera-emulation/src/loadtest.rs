//! `tessera loadtest`: the live system under load on this machine, over
//! loopback, bounded in count and time.
//!
//! A controller and agents emulating a cluster (the embedded default unless
//! `--cluster`) start in a fresh directory. One short sleeping job per core
//! fills the cluster; then `--clients` concurrent clients, each on its own
//! connection to the controller's Unix socket, submit `--jobs` real short jobs
//! (`/bin/true` through `#!/bin/sh`), each acknowledged only once durable. With
//! the whole load queued the test reads the controller's memory and times
//! `--passes` scheduling passes; then it cancels the fillers and the jobs run.
//! It checks that every job ran once and is accounted once (COMPLETED, exit 0,
//! its output file written), and compares submissions against a controller
//! without group commit (one transaction per submission) in the same run.
//! The directory it creates is an ext4 top directory (see [`top_directory`]).

use crate::local::Guard;
use anyhow::{anyhow, bail, Context, Result};
use hyper::Method;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tessera_proto::api::{OptionArg, SubmitReply, SubmitRequest};
use tessera_proto::client::{Client, Target};
use tessera_bench::measure::{proc_status_kib, quantiles};

/// `tessera loadtest`'s settings (see its `--help`).
#[derive(Clone, Debug)]
pub struct Options {
    pub jobs: usize,
    pub clients: usize,
    pub agents: usize,
    pub cluster: Option<PathBuf>,
    pub policy: String,
    pub passes: usize,
    /// Held jobs for the group-commit comparison (0: none).
    pub compare_jobs: usize,
    /// Seconds before giving up.
    pub timeout: u64,
    /// Default: a fresh temporary directory, removed after a clean run.
    pub dir: Option<PathBuf>,
}

#[derive(Serialize, Debug)]
pub struct Report {
    pub machine: String,
    pub cluster: String,
    pub nodes: usize,
    pub cores: u32,
    pub agents: usize,
    pub clients: usize,
    pub policy: String,
    /// The load test's directory is an ext4 top directory (see `top_directory`).
    pub top_directory: bool,
    pub submit: Rate,
    pub queued: Queued,
    pub run: Run,
    pub check: Check,
    pub compare: Option<Compare>,
    /// Where the state is.
    #[serde(skip)]
    pub dir: PathBuf,
}

/// Acknowledged submissions.
#[derive(Serialize, Debug)]
pub struct Rate {
    pub jobs: usize,
    pub seconds: f64,
    pub per_s: f64,
    pub latency_p50_ms: f64,
    pub latency_p99_ms: f64,
    pub latency_max_ms: f64,
}

/// The controller with the whole load queued.
#[derive(Serialize, Debug)]
pub struct Queued {
    pub jobs: usize,
    pub rss_before_kib: u64,
    pub rss_after_kib: u64,
    pub bytes_per_job: f64,
    /// Environment carried by each job (the submitter's, as sbatch --export=ALL).
    pub env_bytes_per_job: usize,
    pub passes: usize,
    pub pass_p50_ms: f64,
    pub pass_p99_ms: f64,
    pub pass_max_ms: f64,
    pub commit_p50_ms: f64,
}

#[derive(Serialize, Debug)]
pub struct Run {
    /// From the fillers' cancellation to the last job accounted.
    pub seconds: f64,
    /// Starts the controller sent, per second of the run's starting span.
    pub starts_per_s: f64,
    /// Real processes that ran to their end, per second, over the whole seconds
    /// between the first and the last end (shepherds' clocks): all of them,
    /// the median second and the slowest second.
    pub ends_per_s: f64,
    pub ends_per_s_median: f64,
    pub ends_per_s_min: f64,
    pub whole_seconds: usize,
}

#[derive(Serialize, Debug)]
pub struct Check {
    pub submitted: usize,
    pub completed: usize,
    pub fillers_cancelled: usize,
    pub output_files: usize,
    pub lost: usize,
    pub duplicates: usize,
    pub still_queued: usize,
}

#[derive(Serialize, Debug)]
pub struct Compare {
    pub jobs: usize,
    pub group_commit: Rate,
    pub one_transaction_each: Rate,
    pub ratio: f64,
}

/// Run the load test on a local cluster (the `tessera` binary `bin`); the
/// report ([`Report::check`] says whether every job ran once).
pub fn run(a: &Options, bin: &Path) -> Result<Report> {
    if a.jobs == 0 || a.clients == 0 {
        bail!("--jobs and --clients: expected at least 1");
    }
    let (dir, temporary) = match &a.dir {
        Some(d) => (d.clone(), false),
        None => (std::env::temp_dir().join(format!("tessera-loadtest-{}", std::process::id())), true),
    };
    let created = !dir.exists();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = dir.canonicalize()?;
    let top = created && top_directory(&dir);
    let r = measure(a, bin, &dir).map(|r| Report { top_directory: top, dir: dir.clone(), ..r });
    let clean = r.as_ref().is_ok_and(|r| r.check.lost + r.check.duplicates == 0 && r.check.completed == r.check.submitted);
    if temporary && clean {
        let _ = std::fs::remove_dir_all(&dir);
    }
    r
}

impl Report {
    /// An error if a job was lost, failed or accounted twice.
    pub fn check(&self) -> Result<()> {
        let c = &self.check;
        if c.lost + c.duplicates + c.still_queued > 0 || c.completed != c.submitted || c.output_files != c.submitted {
            bail!("jobs were lost, failed or accounted twice (see the check above; state kept in {})", self.dir.display());
        }
        Ok(())
    }
}

/// Mark a directory the load test created as an ext4 top directory (`chattr
/// +T`), so that the Orlov allocator places its subdirectories, and with them
/// the jobs' output files, in a part of the inode table chosen afresh rather
/// than beside the inodes an earlier run (or any mass deletion) just freed. On
/// ext4 without a journal every file creation skips over the inodes of its
/// group freed in the last minutes (`recently_deleted` in fs/ext4/ialloc.c),
/// one inode table lookup each: right after another run's clean-up, creating
/// the outputs costs more than starting the jobs, and the run would measure
/// its predecessor's clean-up. Orlov starts its search for a top directory's
/// subdirectory at a group hashed from the subdirectory's name, so the test
/// names its directories after its pid. Returns whether the file system took
/// the flag.
fn top_directory(dir: &Path) -> bool {
    const FS_TOPDIR_FL: libc::c_int = 0x0002_0000;
    let Ok(f) = std::fs::File::open(dir) else { return false };
    let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
    let mut flags: libc::c_int = 0;
    // SAFETY: the inode flags ioctls read and write one int.
    unsafe { libc::ioctl(fd, libc::FS_IOC_GETFLAGS, &mut flags) == 0 && libc::ioctl(fd, libc::FS_IOC_SETFLAGS, &(flags | FS_TOPDIR_FL)) == 0 }
}

fn measure(a: &Options, bin: &Path, dir: &Path) -> Result<Report> {
    let deadline = Instant::now() + Duration::from_secs(a.timeout);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    // names of this run's own: see `top_directory`
    let state = dir.join(format!("state-{}", std::process::id()));
    std::fs::create_dir_all(&state)?;
    let local = Guard::start(bin, &state, &a.cluster, a.agents, "127.0.0.1:0".parse()?, &a.policy, &[])?;
    let cores: u32 = local.cluster.nodes.iter().map(|n| n.cores).sum();
    let target = Target::Unix(local.ep.socket.clone());
    let out = dir.join(format!("out-{}", std::process::id()));
    std::fs::create_dir_all(&out)?;
    let env: BTreeMap<String, String> = std::env::vars().filter(|(k, _)| !k.starts_with("TESSERA_TOKEN")).collect();
    let env_bytes = env.iter().map(|(k, v)| k.len() + v.len() + 2).sum();
    let job = |script: &str, name: &str| SubmitRequest {
        script: script.to_string(),
        options: vec![opt("-n", "1"), opt("-t", "10"), opt("-J", name)],
        workdir: out.display().to_string(),
        env: env.clone(),
        script_name: None,
        idempotency_key: None,
    };

    // fill every core, so the load queues behind running jobs
    let filler = job("#!/bin/sh\nexec sleep 3600\n", "filler");
    let (fillers, _) = rt.block_on(submit_all(&target, a.clients, cores as usize, &filler))?;
    let mut client = Client::new(target.clone(), None);
    wait(deadline, "the fillers to run", || {
        let m = rt.block_on(metrics(&mut client))?;
        Ok(m.get("tessera_running_jobs").copied().unwrap_or(0.0) as usize >= fillers.len())
    })?;
    let pid = local.controller.id();
    let rss_before = rss_kib(pid)?;

    // the load: acknowledged only once durable
    let load = job("#!/bin/sh\ntrue\n", "load");
    let (ids, submit) = rt.block_on(submit_all(&target, a.clients, a.jobs, &load))?;
    let rss_after = rss_kib(pid)?;

    // passes with the whole load queued: a hold and a release of one queued job
    // are one batch each, each ending with a pass over the queue
    let probe = *ids.last().expect("jobs submitted");
    let (mut pass, mut commit) = (Vec::new(), Vec::new());
    for k in 0..a.passes * 2 {
        let op = if k % 2 == 0 { "hold" } else { "release" };
        rt.block_on(client.call::<(), serde_json::Value>(Method::POST, &format!("/v1/jobs/{probe}/{op}"), None)).map_err(|e| anyhow!("{op} job {probe}: {e}"))?;
        let m = rt.block_on(metrics(&mut client))?;
        pass.push(m.get("tessera_pass_seconds_last").copied().unwrap_or(0.0) * 1e3);
        commit.push(m.get("tessera_commit_seconds_last").copied().unwrap_or(0.0) * 1e3);
    }
    let passes = pass.len();
    let (pass_p50_ms, pass_p99_ms, pass_max_ms) = quantiles(pass);
    let queued = Queued {
        jobs: ids.len(),
        rss_before_kib: rss_before,
        rss_after_kib: rss_after,
        bytes_per_job: (rss_after as f64 - rss_before as f64) * 1024.0 / ids.len() as f64,
        env_bytes_per_job: env_bytes,
        passes,
        pass_p50_ms,
        pass_p99_ms,
        pass_max_ms,
        commit_p50_ms: quantiles(commit).0,
    };

    // run: cancel the fillers, the load starts as cores free up
    let m0 = rt.block_on(metrics(&mut client))?;
    let started0 = m0.get("tessera_starts_total").copied().unwrap_or(0.0);
    let finished0 = m0.get("tessera_finished_total").copied().unwrap_or(0.0);
    let t0 = Instant::now();
    rt.block_on(cancel_all(&target, a.clients, &fillers))?;
    let mut all_started = None;
    wait(deadline, "every job to end", || {
        let m = rt.block_on(metrics(&mut client))?;
        let started = m.get("tessera_starts_total").copied().unwrap_or(0.0) - started0;
        if all_started.is_none() && started as usize >= ids.len() {
            all_started = Some(t0.elapsed());
        }
        Ok((m.get("tessera_finished_total").copied().unwrap_or(0.0) - finished0) as usize >= ids.len() + fillers.len())
    })?;
    let seconds = t0.elapsed().as_secs_f64();
    let jobs_left: Vec<serde_json::Value> = rt.block_on(client.call::<(), _>(Method::GET, "/v1/jobs", None)).map_err(|e| anyhow!("listing jobs: {e}"))?;
    let still_queued = jobs_left.iter().filter(|j| !matches!(j["state"].as_str(), Some("COMPLETED" | "CANCELLED" | "FAILED" | "TIMEOUT" | "NODE_FAIL"))).count();

    // every job accounted once: COMPLETED with exit 0 (the fillers CANCELLED)
    let store = tessera_accounting::store::Store::open(&state.join("accounting.db"))?;
    let run_id = store.resolve_run(None)?;
    let recs = tessera_accounting::acct::jobs(&store, run_id, &Default::default())?;
    let mut seen: BTreeMap<u64, usize> = BTreeMap::new();
    let mut ends: BTreeMap<i64, usize> = BTreeMap::new();
    let mut completed = 0;
    let want: std::collections::BTreeSet<u64> = ids.iter().copied().collect();
    let filler_ids: std::collections::BTreeSet<u64> = fillers.iter().copied().collect();
    let mut fillers_cancelled = 0;
    for r in &recs {
        let id = r.job_id as u64;
        *seen.entry(id).or_default() += 1;
        if want.contains(&id) && r.state == "COMPLETED" && r.exit_code == 0 {
            completed += 1;
            *ends.entry(r.end).or_default() += 1;
        }
        if filler_ids.contains(&id) && r.state == "CANCELLED" {
            fillers_cancelled += 1;
        }
    }
    let duplicates = seen.values().filter(|&&n| n > 1).count();
    let lost = want.iter().filter(|id| !seen.contains_key(id)).count();
    let output_files = ids.iter().filter(|id| out.join(format!("tessera-{id}.out")).exists()).count();
    let (ends_all, median, min, whole) = per_second(&ends);
    let run = Run {
        seconds,
        starts_per_s: ids.len() as f64 / all_started.unwrap_or(t0.elapsed()).as_secs_f64(),
        ends_per_s: ends_all,
        ends_per_s_median: median,
        ends_per_s_min: min,
        whole_seconds: whole,
    };
    let check = Check { submitted: ids.len(), completed, fillers_cancelled, output_files, lost, duplicates, still_queued };
    let (nodes, cluster_name) = (local.cluster.nodes.len(), local.cluster.name.clone());
    drop(local);

    let compare = if a.compare_jobs > 0 {
        let rate = |name: &str, extra: &[String]| -> Result<Rate> {
            let d = dir.join(name);
            std::fs::create_dir_all(&d)?;
            let l = Guard::start(bin, &d, &a.cluster, a.agents, "127.0.0.1:0".parse()?, &a.policy, extra)?;
            let t = Target::Unix(l.ep.socket.clone());
            // held, so that only the submissions are measured
            let mut held = load.clone();
            held.options.push(opt("--hold", ""));
            let (_, r) = rt.block_on(submit_all(&t, a.clients, a.compare_jobs, &held))?;
            Ok(r)
        };
        let group = rate("group", &[])?;
        let single = rate("single", &["--max-batch".into(), "1".into()])?;
        Some(Compare { jobs: a.compare_jobs, ratio: group.per_s / single.per_s, group_commit: group, one_transaction_each: single })
    } else {
        None
    };
    Ok(Report { machine: machine(), cluster: cluster_name, nodes, cores, agents: a.agents, clients: a.clients, policy: a.policy.clone(), top_directory: false, submit, queued, run, check, compare, dir: dir.to_path_buf() })
}

pub(crate) fn opt(o: &str, v: &str) -> OptionArg {
    OptionArg { option: o.into(), value: v.into() }
}

/// Submit `n` copies of `req` from `clients` concurrent clients; the job ids
/// in submission order per client, and the acknowledged rate.
async fn submit_all(target: &Target, clients: usize, n: usize, req: &SubmitRequest) -> Result<(Vec<u64>, Rate)> {
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let share = n / clients + usize::from(c < n % clients);
        let (target, req) = (target.clone(), req.clone());
        tasks.push(tokio::spawn(async move {
            let mut client = Client::new(target, None);
            let mut out = Vec::with_capacity(share);
            for _ in 0..share {
                let t = Instant::now();
                let r: SubmitReply = client.call(Method::POST, "/v1/jobs", Some(&req)).await.map_err(|e| anyhow!("submitting: {e}"))?;
                out.push((r.jobs[0], t.elapsed().as_secs_f64() * 1e3));
            }
            Ok::<_, anyhow::Error>(out)
        }));
    }
    let mut ids = Vec::with_capacity(n);
    let mut lat = Vec::with_capacity(n);
    for t in tasks {
        for (id, ms) in t.await?? {
            ids.push(id);
            lat.push(ms);
        }
    }
    let seconds = t0.elapsed().as_secs_f64();
    let (latency_p50_ms, latency_p99_ms, latency_max_ms) = quantiles(lat);
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.len() != n {
        bail!("{n} submissions acknowledged with {} distinct job ids", sorted.len());
    }
    Ok((ids, Rate { jobs: n, seconds, per_s: n as f64 / seconds, latency_p50_ms, latency_p99_ms, latency_max_ms }))
}

async fn cancel_all(target: &Target, clients: usize, ids: &[u64]) -> Result<()> {
    let mut tasks = Vec::new();
    for c in 0..clients {
        let mine: Vec<u64> = ids.iter().copied().skip(c).step_by(clients).collect();
        let target = target.clone();
        tasks.push(tokio::spawn(async move {
            let mut client = Client::new(target, None);
            for id in mine {
                client.call::<(), serde_json::Value>(Method::POST, &format!("/v1/jobs/{id}/cancel"), None).await.map_err(|e| anyhow!("cancelling job {id}: {e}"))?;
            }
            Ok::<_, anyhow::Error>(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(())
}

/// The controller's metrics, by name (unlabelled series only).
pub(crate) async fn metrics(client: &mut Client) -> Result<BTreeMap<String, f64>> {
    let (status, body) = client.raw(Method::GET, "/metrics", None).await.map_err(|e| anyhow!("reading /metrics: {e:?}"))?;
    if !status.is_success() {
        bail!("/metrics: HTTP {status}");
    }
    Ok(String::from_utf8_lossy(&body)
        .lines()
        .filter(|l| !l.starts_with('#') && !l.contains('{'))
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect())
}

fn wait(deadline: Instant, what: &str, mut done: impl FnMut() -> Result<bool>) -> Result<()> {
    loop {
        if done()? {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("timed out waiting for {what} (--timeout)");
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

pub(crate) fn rss_kib(pid: u32) -> Result<u64> {
    proc_status_kib(&pid.to_string(), "VmRSS").ok_or_else(|| anyhow!("/proc/{pid}/status: no VmRSS (is the controller running?)"))
}

/// Ends per second: over the whole seconds strictly between the first and the
/// last (which are partial), their mean, median and minimum, and how many there
/// were; with fewer than three seconds, all the ends over the span.
fn per_second(ends: &BTreeMap<i64, usize>) -> (f64, f64, f64, usize) {
    let (Some((&first, _)), Some((&last, _))) = (ends.first_key_value(), ends.last_key_value()) else { return (0.0, 0.0, 0.0, 0) };
    if last - first < 2 {
        let n: usize = ends.values().sum();
        let r = n as f64 / (last - first + 1) as f64;
        return (r, r, r, 0);
    }
    let v: Vec<f64> = (first + 1..last).map(|s| ends.get(&s).copied().unwrap_or(0) as f64).collect();
    let (mean, n, min) = (v.iter().sum::<f64>() / v.len() as f64, v.len(), v.iter().copied().fold(f64::INFINITY, f64::min));
    (mean, quantiles(v).0, min, n)
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|t| t.lines().find_map(|l| l.strip_prefix("model name").map(|m| m.trim_start_matches([' ', '\t', ':']).to_string()))).unwrap_or_else(|| "unknown CPU".into());
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (_, mem, _) = tessera_agent::agent::detect();
    format!("{n} × {cpu}, {:.0} GiB", mem as f64 / 1024.0)
}

impl std::fmt::Display for Report {
    /// The load test as a report: submissions, the queued controller, the run,
    /// the check, group commit.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = self;
        writeln!(f, "Load test on {}: cluster {} ({} nodes, {} cores), {} agents, {} clients, policy {}", r.machine, r.cluster, r.nodes, r.cores, r.agents, r.clients, r.policy)?;
        if r.top_directory {
            writeln!(f, "  (job outputs in a fresh part of the inode table: the test's directory is an ext4 top directory)")?;
        }
        let s = &r.submit;
        writeln!(f, 
            "  submissions   {} acknowledged durable in {:.2} s: {:.0}/s (latency p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms)",
            s.jobs, s.seconds, s.per_s, s.latency_p50_ms, s.latency_p99_ms, s.latency_max_ms
        )?;
        let q = &r.queued;
        writeln!(f, 
            "  queued        {} jobs: controller RSS {} → {} KiB, {:.0} bytes per queued job ({} of them its environment)",
            q.jobs, q.rss_before_kib, q.rss_after_kib, q.bytes_per_job, q.env_bytes_per_job
        )?;
        writeln!(f, "  pass          with {} queued, {} passes: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms (journal commit p50 {:.3} ms)", q.jobs, q.passes, q.pass_p50_ms, q.pass_p99_ms, q.pass_max_ms, q.commit_p50_ms)?;
        let u = &r.run;
        writeln!(f, 
            "  run           {} jobs in {:.2} s: starts {:.0}/s; real processes ended {:.0}/s (median second {:.0}, slowest {:.0}, over {} whole seconds)",
            r.check.submitted, u.seconds, u.starts_per_s, u.ends_per_s, u.ends_per_s_median, u.ends_per_s_min, u.whole_seconds
        )?;
        let c = &r.check;
        writeln!(f, 
            "  check         {} submitted, {} COMPLETED with exit 0, {} output files, {} fillers cancelled; lost {}, accounted twice {}, still queued {}",
            c.submitted, c.completed, c.output_files, c.fillers_cancelled, c.lost, c.duplicates, c.still_queued
        )?;
        if let Some(x) = &r.compare {
            writeln!(f, 
                "  group commit  {} submissions: {:.0}/s with group commit, {:.0}/s with one transaction each: {:.1}×",
                x.jobs, x.group_commit.per_s, x.one_transaction_each.per_s, x.ratio
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first and last seconds are partial: only the whole ones between count.
    #[test]
    fn ends_per_second_over_the_whole_seconds() {
        let ends: BTreeMap<i64, usize> = [(10, 1), (11, 4), (12, 6), (14, 2), (15, 9)].into();
        // seconds 11 to 14: 4, 6, 0 and 2 ends
        assert_eq!(per_second(&ends), (3.0, 4.0, 0.0, 4));
        let short: BTreeMap<i64, usize> = [(10, 3), (11, 5)].into();
        assert_eq!(per_second(&short), (4.0, 4.0, 4.0, 0));
        assert_eq!(per_second(&BTreeMap::new()), (0.0, 0.0, 0.0, 0));
    }
}
