//! `tessera sleep-job`: a job that only sleeps, but knows when it was suspended.
//!
//! Emulating a large cluster means running thousands of jobs at once on a
//! small machine, so each job sleeps instead of computing. A plain `sleep` does
//! not notice a suspension (its timer keeps running while it is stopped), so
//! a suspended job would end early. This one follows the thesis's `sigsleep`:
//! on SIGTSTP it records the instant and stops itself; on SIGCONT it records
//! the instant and sleeps only the time that remained. When it ends (its
//! runtime slept, or SIGTERM/SIGINT/SIGHUP) it appends one JSON line to the log
//! ([`tessera_sim::sleeplog::SleepRecord`]).
//!
//! The runtime counts from the start the controller recorded for the job
//! (`$TESSERA_START_TIME`), not from the process's own start: a trace's runtime
//! is what its scheduler measured from start to end, so an emulated job should
//! end when the scheduler's start plus its runtime (plus its suspensions) has
//! passed. Counting from the process's start (`--count-from process`, the
//! thesis's way) lengthens every job by its launch latency, and along a chain of
//! jobs each started by the previous one's end those latencies add up (see
//! docs/emulation.md). The log's `start` is the process's own start either way.
//!
//! Suspensions likewise count as the controller made them. The agent writes the
//! controller's instant of each suspension and resumption to the job's
//! suspension record (`$TESSERA_SUSPENSIONS`) before it signals the job, and the
//! job ends at the scheduler's start plus its runtime plus the time that record
//! held it suspended, re-reading the record at every signal. A suspension that
//! reaches the job before it has started to count (the agent signals a process
//! still starting, or one whose SIGTSTP the kernel discards), or that it sees
//! late, is counted all the same, as the engine counts it, to the second. Only
//! without a record (a job run by hand, `--count-from process`) does it count
//! the suspensions it sees, from SIGTSTP to SIGCONT.
//!
//! The signals are blocked and taken with `sigtimedwait`, so no handler runs
//! asynchronously; the remaining time is counted on the monotonic clock and the
//! instants on the wall clock. The line is written with one `write` on a file
//! opened `O_APPEND` under an exclusive `flock`, so lines from thousands of jobs
//! appending to one log never interleave.

use anyhow::{bail, Context, Result};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tessera_proto::unix_now_f64 as wall;
use tessera_agent::suspensions;
use tessera_sim::sleeplog::{Configuration, SleepRecord, Suspension};

/// What the runtime counts from (see the module's documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountFrom {
    /// The start the controller recorded (`$TESSERA_START_TIME`; this process's
    /// own start when unset).
    Scheduler,
    /// This process's start, as the thesis's sigsleep.
    Process,
}

/// One sleep job: `tessera sleep-job`'s settings.
#[derive(Clone, Debug)]
pub struct SleepJob {
    /// The job's id in the workload (written to the log).
    pub id: u64,
    /// Seconds to sleep, suspended time excluded.
    pub runtime: f64,
    /// Log to append the job's line to (created if missing).
    pub log: PathBuf,
    /// Submission instant to record (default `$TESSERA_SUBMIT_TIME`, else the start).
    pub submit: Option<f64>,
    /// Cores to record (default `$TESSERA_NTASKS` or `$SLURM_NTASKS`, else 1).
    pub cores: Option<u32>,
    pub count_from: CountFrom,
    /// Follow the power-aware scheduler's model (see [`run_work`]).
    pub work: bool,
}

fn env_number<T: std::str::FromStr>(keys: &[&str]) -> Result<Option<T>> {
    for k in keys {
        if let Ok(v) = std::env::var(k) {
            return match v.trim().parse() {
                Ok(x) => Ok(Some(x)),
                Err(_) => bail!("${k} is {:?}: expected a number", v.chars().take(40).collect::<String>()),
            };
        }
    }
    Ok(None)
}

/// How the sleep ended.
enum End {
    Slept,
    Signal(libc::c_int),
}

/// Sleep as the job, then append its line to the log (and, ended by a signal,
/// end by that signal).
pub fn run(a: &SleepJob) -> Result<()> {
    let start = wall();
    if !(a.runtime.is_finite() && a.runtime >= 0.0 && a.runtime < 1e12) {
        bail!("--runtime {}: expected a number of seconds, at least 0", a.runtime);
    }
    let submit = match a.submit {
        Some(s) if s.is_finite() => s,
        Some(s) => bail!("--submit {s}: expected Unix seconds"),
        None => env_number::<f64>(&["TESSERA_SUBMIT_TIME"])?.unwrap_or(start),
    };
    let cores = match a.cores {
        Some(c) => c,
        None => env_number::<u32>(&["TESSERA_NTASKS", "SLURM_NTASKS"])?.unwrap_or(1),
    };
    // open the log first: a job that cannot write its line says so at once
    let log = std::fs::OpenOptions::new().append(true).create(true).open(&a.log).with_context(|| format!("opening the log {}", a.log.display()))?;
    if a.work {
        return run_work(a, &log, submit, start, cores);
    }

    let set = block(&[libc::SIGTSTP, libc::SIGCONT, libc::SIGTERM, libc::SIGINT, libc::SIGHUP]);
    let sched_start = match a.count_from {
        CountFrom::Scheduler => env_number::<f64>(&["TESSERA_START_TIME"])?,
        CountFrom::Process => None,
    };
    let record = std::env::var_os(suspensions::ENV).map(PathBuf::from).filter(|_| sched_start.is_some());
    let mut observed = Vec::new();
    let end_by = match (sched_start, &record) {
        // the scheduler's clock throughout: the job ends its runtime plus the
        // time the controller kept it suspended after the controller started it
        (Some(s0), Some(rec)) => loop {
            let (held, open) = suspensions::held(&suspensions::read(rec).map_err(anyhow::Error::msg)?);
            let wait = if open { Some(Duration::from_secs(1)) } else { None };
            let left = s0 + a.runtime + held - wall();
            if !open && left <= 0.0 {
                break End::Slept;
            }
            match wait_signal(&set, wait.unwrap_or_else(|| Duration::from_secs_f64(left.max(0.0))))? {
                None | Some(libc::SIGCONT) => {}
                Some(libc::SIGTSTP) => observed.push(stop_self()),
                Some(s) => break End::Signal(s),
            }
        },
        _ => {
            // the scheduler's start is a whole second at or before this
            // process's start; time already gone since it counts as run
            let since = sched_start.map_or(0.0, |s| (start - s).clamp(0.0, a.runtime));
            let mut remaining = Duration::from_secs_f64(a.runtime - since);
            loop {
                if remaining.is_zero() {
                    break End::Slept;
                }
                let t = Instant::now();
                let sig = wait_signal(&set, remaining)?;
                remaining = remaining.saturating_sub(t.elapsed());
                match sig {
                    None => break End::Slept,
                    Some(libc::SIGTSTP) => observed.push(stop_self()),
                    Some(libc::SIGCONT) => {} // continued from a stop it was not told of
                    Some(s) => break End::Signal(s),
                }
            }
        }
    };
    // the suspensions as the scheduler made them, when it recorded them
    let suspensions = match &record {
        Some(rec) => suspensions::read(rec).map_err(anyhow::Error::msg)?.into_iter().map(|(suspend, resume)| Suspension { suspend, resume: resume.unwrap_or_else(wall) }).collect(),
        None => observed,
    };
    // a wall clock stepped back, or a submitter's clock ahead of this node's,
    // must not make a record that reads as ending before it started
    let end = wall().max(start);
    // a job the scheduler suspended before its process could start (its
    // launch and suspension reached the node together) started, as far as
    // anyone could tell, when it was suspended
    let start = suspensions.first().map_or(start, |x: &Suspension| start.min(x.suspend));
    let rec = SleepRecord { id: a.id, submit: submit.min(start), start, end, runtime: a.runtime, cores, suspensions, configs: Vec::new() };
    append(&log, &rec).with_context(|| format!("appending to the log {}", a.log.display()))?;
    end_as(end_by, &set);
    Ok(())
}

/// Block `signals` (taken with [`wait_signal`] instead); the set blocked.
fn block(signals: &[libc::c_int]) -> libc::sigset_t {
    // SAFETY: plain signal-mask calls on a local set; this process has one thread.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in signals {
            libc::sigaddset(&mut set, s);
        }
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

/// A job ended by a signal ends as the signal would have ended it, so that it
/// is accounted as such.
fn end_as(end_by: End, set: &libc::sigset_t) {
    if let End::Signal(s) = end_by {
        // SAFETY: restore the default action and unblock it; the process ends.
        unsafe {
            libc::signal(s, libc::SIG_DFL);
            libc::sigprocmask(libc::SIG_UNBLOCK, set, std::ptr::null_mut());
            libc::raise(s);
        }
    }
}

/// Wait up to `d` for one of the blocked signals in `set`: None when the time
/// ran out (an EINTR from a signal outside the set is a wake-up too).
fn wait_signal(set: &libc::sigset_t, d: Duration) -> Result<Option<libc::c_int>> {
    let ts = libc::timespec { tv_sec: d.as_secs() as libc::time_t, tv_nsec: d.subsec_nanos() as libc::c_long };
    // SAFETY: waits for one of the blocked signals; `set` and `ts` outlive the call.
    let sig = unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &ts) };
    if sig >= 0 {
        return Ok(Some(sig));
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(None),
        _ => Err(std::io::Error::last_os_error()).context("waiting for a signal"),
    }
}

/// Stop this process until SIGCONT (SIGSTOP cannot be caught or blocked; the
/// SIGCONT continues it even while blocked, and stays pending for the next
/// wait, where it is ignored); the interval, on the wall clock.
fn stop_self() -> Suspension {
    let suspend = wall();
    // SAFETY: raising a signal at this process.
    unsafe { libc::raise(libc::SIGSTOP) };
    Suspension { suspend, resume: wall() }
}

/// One line, one `write`, under an exclusive lock of the whole file.
fn append(log: &std::fs::File, rec: &SleepRecord) -> Result<()> {
    let mut line = serde_json::to_vec(rec)?;
    line.push(b'\n');
    let fd = log.as_raw_fd();
    // SAFETY: flock on an open descriptor owned by `log`.
    while unsafe { libc::flock(fd, libc::LOCK_EX) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e).context("locking");
        }
    }
    let r = (&*log).write_all(&line);
    // SAFETY: as above.
    unsafe { libc::flock(fd, libc::LOCK_UN) };
    r.context("writing")
}

/// `--work`: the job of a power-aware scheduler. Its run follows the
/// scheduler's model of it (the PASS model, docs/power.md): it ends when the
/// model says a job of its work ends in its configuration, which the
/// controller gives at its start (`$TESSERA_POWER_END`, with `$SLURM_NNODES`
/// and `$TESSERA_POWER_CAP_W`) and in each line of its configuration record
/// after a resize or a re-cap (`$TESSERA_CONFIG`: `AT NODES CAP_W NODELIST
/// END`, announced by SIGWINCH). It acknowledges each new configuration at
/// once (a line in `$TESSERA_CONFIG_ACK`) and logs each with its instant. So
/// a resize or a re-cap changes when it ends exactly as the simulator
/// computes it.
fn run_work(a: &SleepJob, log: &std::fs::File, submit: f64, start: f64, cores: u32) -> Result<()> {
    let need = |k: &str| std::env::var(k).map_err(|_| anyhow::anyhow!("--work: ${k} is not set (a job started by the power-aware policy, --policy parm, has it)"));
    let number = |k: &str| -> Result<f64> {
        let v = need(k)?;
        v.trim().parse::<f64>().ok().filter(|x| x.is_finite()).ok_or_else(|| anyhow::anyhow!("--work: ${k} is {:?}: expected a number", v.chars().take(40).collect::<String>()))
    };
    let mut end_at = number("TESSERA_POWER_END")?;
    let config = PathBuf::from(need("TESSERA_CONFIG")?);
    let ack = PathBuf::from(need("TESSERA_CONFIG_ACK")?);
    let s0 = env_number::<f64>(&["TESSERA_START_TIME"])?.unwrap_or(start);
    let mut configs = vec![Configuration { at: s0, nodes: number("SLURM_NNODES")? as u32, cap_w: number("TESSERA_POWER_CAP_W")? }];
    let set = block(&[libc::SIGWINCH, libc::SIGTERM, libc::SIGINT, libc::SIGHUP]);
    let mut seen = 0;
    let end_by = loop {
        // every whole line not read yet (a SIGWINCH before the mask was set
        // is lost, but its line is read at the next one or at the end)
        let text = std::fs::read_to_string(&config).with_context(|| format!("reading the configuration record {}", config.display()))?;
        let whole = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
        let lines: Vec<&str> = whole.lines().collect();
        for line in &lines[seen.min(lines.len())..] {
            let f: Vec<&str> = line.split(' ').collect();
            let bad = || anyhow::anyhow!("{}: {line:?}: expected AT NODES CAP_W NODELIST END", config.display());
            let (at, nodes, cap_w, end) = match f.as_slice() {
                [at, nodes, cap, _, end] => (at.parse::<f64>().map_err(|_| bad())?, nodes.parse::<u32>().map_err(|_| bad())?, cap.parse::<f64>().map_err(|_| bad())?, end.parse::<f64>().map_err(|_| bad())?),
                _ => return Err(bad()),
            };
            configs.push(Configuration { at, nodes, cap_w });
            end_at = end;
        }
        if lines.len() > seen {
            seen = lines.len();
            // it runs in its new configuration: acknowledged
            let mut f = std::fs::OpenOptions::new().append(true).open(&ack).with_context(|| format!("opening {}", ack.display()))?;
            f.write_all(b"ok\n").with_context(|| format!("acknowledging in {}", ack.display()))?;
        }
        let left = end_at - wall();
        if left <= 0.0 {
            break End::Slept;
        }
        match wait_signal(&set, Duration::from_secs_f64(left))? {
            None | Some(libc::SIGWINCH) => {}
            Some(s) => break End::Signal(s),
        }
    };
    let end = wall().max(start);
    let rec = SleepRecord { id: a.id, submit: submit.min(start), start, end, runtime: a.runtime, cores, suspensions: Vec::new(), configs };
    append(log, &rec).with_context(|| format!("appending to the log {}", a.log.display()))?;
    end_as(end_by, &set);
    Ok(())
}
