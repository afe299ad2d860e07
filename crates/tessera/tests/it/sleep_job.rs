//! `tessera sleep-job`: suspended and resumed by signals it records its
//! suspension and sleeps only the time that remained; thousands appending to
//! one log never interleave or lose a line.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tessera_sim::sleeplog::read_log;

fn sleep_job(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tessera"));
    c.arg("sleep-job").args(args).env_remove("TESSERA_START_TIME").env_remove("TESSERA_SUBMIT_TIME").env_remove("TESSERA_NTASKS").stdin(Stdio::null());
    c
}

fn signal(pid: u32, s: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), s).unwrap();
}

fn state(pid: u32) -> char {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    s[s.rfind(')').unwrap() + 2..].chars().next().unwrap()
}

#[test]
fn a_suspended_sleep_job_records_the_suspension_and_sleeps_only_what_remained() {
    use nix::sys::signal::Signal::*;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sleep.log");
    let t0 = Instant::now();
    let mut child = sleep_job(&["--id", "42", "--runtime", "2", "--log", log.to_str().unwrap(), "--submit", "1000", "--cores", "4"]).spawn().unwrap();
    let pid = child.id();
    std::thread::sleep(Duration::from_millis(500));
    signal(pid, SIGTSTP);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(state(pid), 'T', "SIGTSTP stops the job");
    std::thread::sleep(Duration::from_millis(1200)); // suspended ~1.5 s in all
    signal(pid, SIGCONT);
    std::thread::sleep(Duration::from_millis(300));
    signal(pid, SIGTSTP); // a second suspension, ~0.5 s
    std::thread::sleep(Duration::from_millis(500));
    signal(pid, SIGCONT);
    let status = child.wait().unwrap();
    let took = t0.elapsed().as_secs_f64();
    assert!(status.success(), "{status:?}");
    // 2 s of sleep plus ~2 s suspended: it did not end early (plain sleep would at 2 s)
    assert!(took > 3.8 && took < 5.0, "took {took} s");
    let recs = read_log(&log).unwrap();
    assert_eq!(recs.len(), 1);
    let r = &recs[0];
    assert_eq!((r.id, r.cores, r.runtime, r.submit), (42, 4, 2.0, 1000.0));
    assert_eq!(r.suspensions.len(), 2, "{r:?}");
    let s0 = &r.suspensions[0];
    assert!((s0.suspend - r.start - 0.5).abs() < 0.15, "first suspension 0.5 s after the start: {r:?}");
    assert!((s0.resume - s0.suspend - 1.5).abs() < 0.15, "suspended ~1.5 s: {r:?}");
    assert!((r.suspended() - 2.0).abs() < 0.2, "{r:?}");
    let ran = r.end - r.start - r.suspended();
    assert!((ran - 2.0).abs() < 0.1, "ran its runtime, suspended time excluded: {ran} s");
    // the log line has exactly the documented keys
    let line: serde_json::Value = serde_json::from_str(std::fs::read_to_string(&log).unwrap().trim()).unwrap();
    let keys: Vec<&str> = line.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    assert_eq!(keys, ["cores", "end", "id", "runtime", "start", "submit", "suspensions"]);
}

#[test]
fn a_terminated_sleep_job_logs_its_end_and_dies_of_the_signal() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sleep.log");
    let mut child = sleep_job(&["--id", "7", "--runtime", "30", "--log", log.to_str().unwrap()]).env("TESSERA_NTASKS", "3").spawn().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    signal(child.id(), nix::sys::signal::Signal::SIGTERM);
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    let r = &read_log(&log).unwrap()[0];
    assert_eq!((r.id, r.cores), (7, 3), "cores from $TESSERA_NTASKS");
    assert!(r.end - r.start < 1.0 && r.submit == r.start, "{r:?}");
}

#[test]
fn the_runtime_counts_from_the_schedulers_start() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sleep.log");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    // the controller started it 1 s ago: 1 of its 1.5 s are gone
    let t0 = Instant::now();
    let st = sleep_job(&["--id", "1", "--runtime", "1.5", "--log", log.to_str().unwrap()]).env("TESSERA_START_TIME", format!("{}", now - 1.0)).status().unwrap();
    assert!(st.success());
    let took = t0.elapsed().as_secs_f64();
    assert!(took < 1.0, "slept only what remained: {took} s");
    let t0 = Instant::now();
    let st = sleep_job(&["--id", "2", "--runtime", "1.5", "--log", log.to_str().unwrap(), "--count-from", "process"]).env("TESSERA_START_TIME", format!("{}", now - 1.0)).status().unwrap();
    assert!(st.success());
    assert!(t0.elapsed().as_secs_f64() >= 1.5, "--count-from process sleeps the whole runtime");
}

#[test]
fn thousands_of_sleep_jobs_append_whole_lines() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sleep.log");
    let n = 1000;
    let mut children = Vec::new();
    for id in 0..n {
        // all end within the same few milliseconds
        children.push(sleep_job(&["--id", &id.to_string(), "--runtime", "1", "--log", log.to_str().unwrap(), "--cores", "1"]).spawn().unwrap());
    }
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let recs = read_log(&log).unwrap(); // fails on a torn or merged line
    assert_eq!(recs.len(), n);
    let mut ids: Vec<u64> = recs.iter().map(|r| r.id).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..n as u64).collect::<Vec<_>>());
}

/// The short form of the digital-twin check (docs/emulation.md): a replay of
/// 40 SDSC-SP2 jobs shrunk to 0.05% through a local controller and agents,
/// against the simulation of the same workload.
#[test]
fn a_short_twin_run_replays_every_job_and_starts_them_when_the_simulator_does() {
    let Some(dir) = tessera_workload::traces::shared_dir_or_skip("a_short_twin_run") else { return };
    let trace = dir.join("SDSC-SP2-1998-4.2-cln.swf.gz");
    let cluster = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/clusters/sdsc-sp2.toml");
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["twin", "--trace", trace.to_str().unwrap(), "--max-jobs", "40", "--shrink", "0.05", "--cluster", cluster, "--format", "json", "--dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let t: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let jobs = t["jobs"].as_u64().unwrap();
    assert!(jobs >= 35, "{t}");
    assert_eq!(t["live"]["jobs"].as_u64(), Some(jobs), "every job has its line in the log");
    assert!(t["start_abs_median"].as_f64().unwrap() < 1.0, "{t}");
    let csv = std::fs::read_to_string(tmp.path().join("twin.csv")).unwrap();
    assert_eq!(csv.lines().count() as u64, jobs + 1);
}
